//! What `kinsey party` and `kinsey curator` share: a participant's config file as the
//! facade's [`Participant`], the test hooks, and the stage lines each prints.

use crate::session_config::ParticipantConfig;
use kinsey::network::{Joined, Participant, Peer, Role, Stage};
use kinsey::{Error, Result};
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

/// A stage by its number.
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
    /// The tamper hook and the stage to hold in.
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

/// The tamper hook (kind and stage) and the stage to hold in.
type TestHooks = (Option<(kinsey::network::Tamper, Stage)>, Option<Stage>);

/// Load a participant's config, check it is the role asked for, and join the session: the
/// facade reads the roster and checks K before anything connects.
pub(crate) fn join(path: &Path, role: Role, hooks: &Hooks) -> Result<(ParticipantConfig, Joined)> {
    let cfg = ParticipantConfig::load(path)?;
    let (tamper, hold_at) = hooks.parse()?;
    // Each stage is named on the participant's own terminal as it starts, with the time
    // since the session began (stages and their order are public). The hold hook lives
    // here, not in the library: say where, then park the protocol thread until the test
    // kills the process.
    let t0 = std::time::Instant::now();
    let on_stage = Arc::new(move |me: Peer, stage: Stage| {
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
    });
    let p = Participant {
        on_stage: Some(on_stage),
        tamper,
        ..cfg.participant()?
    };
    // The roster names the role first: a party's config given to `kinsey curator` says so.
    let joined = p.join(role)?;
    if role == Role::Curator && (cfg.data.is_some() || cfg.privacy.is_some()) {
        return Err(Error::param(
            "data",
            "the curator holds no data and draws no noise: remove [data] and [privacy]",
        ));
    }
    Ok((cfg, joined))
}
