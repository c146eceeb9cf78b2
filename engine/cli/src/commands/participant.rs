//! What `kinsey party` and `kinsey curator` share: loading a participant's files, the
//! backend, the job's public parameters and the mesh configuration.

use crate::session_config::ParticipantConfig;
use kinsey_backend::AdditiveHe;
use kinsey_core::{Error, Result};
use kinsey_data::RowTransform;
use kinsey_learn::aggregate::PlaintextAggregator;
use kinsey_learn::logreg::Objective;
use kinsey_learn::pipeline::JobSpec;
use kinsey_protocol::session::tls::Identity;
use kinsey_protocol::session::{Limits, MeshConfig, MeshHooks, Session, StageHook, Tamper};
use kinsey_protocol::transport::{Peer, Stage};
use std::path::Path;
use std::sync::Arc;

/// Hidden test hooks of `kinsey party` and `kinsey curator`.
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct Hooks {
    /// Test hook: corrupt the first message of a stage (KIND:STAGE, KIND one of garbage,
    /// truncated, oversized, replay, wrong-session).
    #[arg(long, hide = true)]
    tamper: Option<String>,
    /// Test hook: stop on entering this stage (1-3) so a test can kill the process there.
    #[arg(long, hide = true)]
    hold_at_stage: Option<u8>,
}

fn stage(v: &str) -> Result<Stage> {
    match v {
        "0" => Ok(Stage::Setup),
        "1" => Ok(Stage::Smallest),
        "2" => Ok(Stage::Noise),
        "3" => Ok(Stage::Shares),
        o => Err(Error::param("stage", format!("'{o}' is not 0, 1, 2 or 3"))),
    }
}

impl Hooks {
    /// The tamper hook (kind and stage) and the stage to hold in.
    fn parse(&self) -> Result<TestHooks> {
        let tamper = match &self.tamper {
            None => None,
            Some(t) => {
                let (kind, st) = t
                    .split_once(':')
                    .ok_or_else(|| Error::param("tamper", "expected KIND:STAGE"))?;
                Some((kind.parse()?, stage(st)?))
            }
        };
        let hold = match self.hold_at_stage {
            // Every participant starts in the setup stage: it is never entered.
            Some(0) => {
                return Err(Error::param(
                    "hold-at-stage",
                    "stage 0 (setup) is where every participant starts: hold in 1, 2 or 3",
                ));
            }
            s => s.map(|s| stage(&s.to_string())).transpose()?,
        };
        Ok((tamper, hold))
    }
}

/// Parsed test hooks: what to tamper with and where, and where to hold.
type TestHooks = (Option<(Tamper, Stage)>, Option<Stage>);

/// A participant ready to connect.
pub(crate) struct Joined {
    pub(crate) cfg: ParticipantConfig,
    pub(crate) me: Peer,
    pub(crate) session: Session,
    pub(crate) backend: Arc<dyn AdditiveHe>,
    pub(crate) spec: JobSpec,
}

/// Load a participant's config, roster and backend, and check its role.
pub(crate) fn join(path: &Path, want_party: bool) -> Result<Joined> {
    let cfg = ParticipantConfig::load(path)?;
    let session = Session::load(&cfg.session.roster)?;
    let me = session.peer(&cfg.session.me)?;
    match (me, want_party) {
        (Peer::Party(_), false) => {
            return Err(Error::param(
                "session.me",
                format!("'{}' is a party: run `kinsey party`", cfg.session.me),
            ));
        }
        (Peer::Curator, true) => {
            return Err(Error::param(
                "session.me",
                "this is the curator's config: run `kinsey curator`",
            ));
        }
        _ => {}
    }
    if !want_party && (cfg.data.is_some() || cfg.privacy.is_some()) {
        return Err(Error::param(
            "data",
            "the curator holds no data and draws no noise: remove [data] and [privacy]",
        ));
    }
    let backend = match cfg.shared.crypto(&cfg.crypto).aggregation()? {
        crate::config::Aggregation::Secure(s) => s.backend().clone(),
        crate::config::Aggregation::Plaintext => {
            return Err(Error::param(
                "shared.backend",
                "a session needs a crypto backend",
            ));
        }
    };
    let data = cfg.shared.data(Default::default(), Default::default());
    let transform: RowTransform = data.transform()?;
    let intercept = data.intercept()?;
    let spec = JobSpec {
        objective: Objective::new(cfg.shared.lambda)?,
        solver: cfg.shared.model().solver(),
        privacy: cfg.shared.privacy().spec(),
        device: cfg.compute.device,
        transform,
        intercept,
        aggregation: Arc::new(PlaintextAggregator),
        allow_two_parties: cfg.shared.allow_two_parties,
    };
    // Every participant checks K before it connects (a public parameter).
    kinsey_learn::pipeline::check_parties(session.parties, spec.allow_two_parties)?;
    Ok(Joined {
        cfg,
        me,
        session,
        backend,
        spec,
    })
}

impl Joined {
    /// The mesh configuration: TLS material, the shared parameters with K and the roster's
    /// digest, timeouts, frame limits and the test hooks.
    pub(crate) fn mesh(&self, hooks: &Hooks) -> Result<MeshConfig> {
        let t = &self.cfg.tls;
        let identity = Identity::load(&t.ca, &t.cert, &t.key)?;
        let mut params = self.cfg.shared.canonical()?;
        params.push_str(&format!("parties = {}\n", self.session.parties));
        params.push_str(&format!("roster = {}\n", self.session.digest));
        let (connect_window, timeout) = self.cfg.durations();
        let (tamper, hold_at) = hooks.parse()?;
        // The hold hook lives here, not in the library: say where, then park the protocol
        // thread until the test kills the process.
        // Each stage is named on the participant's own terminal as it starts, with the time
        // since the session began (stages and their order are public).
        let t0 = std::time::Instant::now();
        let on_stage = Some(StageHook(Arc::new(move |me: Peer, stage: Stage| {
            eprintln!(
                "{me}: {} (at {:.1} s)",
                stage.name(),
                t0.elapsed().as_secs_f64()
            );
            if hold_at == Some(stage) {
                eprintln!("kinsey test hook: {me} holding in {}", stage.name());
                loop {
                    std::thread::park();
                }
            }
        })));
        Ok(MeshConfig {
            me: self.me,
            session: self.session.clone(),
            identity,
            params,
            connect_window,
            timeout,
            limits: Limits::for_backend(
                self.session.parties,
                self.cfg.shared.dim(),
                &self.backend.info(),
            ),
            hooks: tamper.map_or_else(MeshHooks::default, |(kind, stage)| {
                MeshHooks::dangerous_tamper(kind, stage)
            }),
            on_stage,
        })
    }
}
