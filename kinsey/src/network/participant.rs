//! A participant of a network session: who it is, its TLS identity, the job's public
//! parameters, and the mesh it joins.

use crate::DevicePref;
use crate::classifier::{
    Objective, PlaintextAggregator, PrivacySpec, SecureAggregator, SolverConfig,
};
use kinsey_core::{Error, Result};
use kinsey_data::RowTransform;
use kinsey_learn::pipeline::JobSpec;
use kinsey_protocol::session::tls::Identity;
use kinsey_protocol::session::{Limits, MeshConfig, MeshHooks, Session, StageHook, Tamper};
use kinsey_protocol::transport::{Peer, Stage};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The job's public parameters, identical at every participant (checked in the TLS
/// handshake through [`params`](Self::params)).
#[derive(Debug, Clone)]
pub struct SessionJob {
    /// The job's name (in the release and the noise keys).
    pub name: String,
    /// The feature columns each party reads.
    pub features: Vec<String>,
    /// The label column.
    pub label: String,
    /// The L2 regulariser lambda.
    pub lambda: f64,
    /// The Newton solver's public parameters.
    pub solver: SolverConfig,
    /// The privacy parameters.
    pub privacy: PrivacySpec,
    /// The release's epsilon (as the model file records it).
    pub epsilon: f64,
    /// The rows' public transform into the unit ball.
    pub transform: RowTransform,
    /// The intercept's public constant, if any.
    pub intercept: Option<f64>,
    /// Whether K = 2 is accepted.
    pub allow_two_parties: bool,
    /// The canonical text of these parameters every participant compares.
    pub params: String,
}

impl SessionJob {
    /// The model's feature names (with `(intercept)` last when there is one).
    pub fn model_features(&self) -> Vec<String> {
        let mut f = self.features.clone();
        if self.intercept.is_some() {
            f.push(kinsey_data::INTERCEPT_FEATURE.into());
        }
        f
    }
}

/// One participant's side of a session: the roster, its own name and TLS files, its time
/// limits, the backend every participant uses, and where it computes.
#[derive(Clone)]
pub struct Participant {
    /// The roster file (identical at every participant).
    pub roster: PathBuf,
    /// This participant's name in the roster.
    pub me: String,
    /// The session CA's certificate.
    pub ca: PathBuf,
    /// This participant's certificate.
    pub cert: PathBuf,
    /// Its private key.
    pub key: PathBuf,
    /// Every participant must connect within this.
    pub connect_window: Duration,
    /// Any one receive may wait this long.
    pub timeout: Duration,
    /// The crypto backend (a shared parameter) on this participant's device.
    pub backend: SecureAggregator,
    /// Where this participant's local fit runs.
    pub device: DevicePref,
    /// The job's public parameters.
    pub job: SessionJob,
    /// Called as each protocol stage starts (stages and their order are public).
    pub on_stage: Option<Arc<dyn Fn(Peer, Stage) + Send + Sync>>,
    /// Tests only: a participant that tampers with its messages at a stage.
    pub tamper: Option<(Tamper, Stage)>,
}

impl std::fmt::Debug for Participant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Participant")
            .field("roster", &self.roster)
            .field("me", &self.me)
            .field("job", &self.job)
            .finish_non_exhaustive()
    }
}

/// Which role a participant expects to hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A party: holds data, trains, draws noise.
    Party,
    /// The curator: holds nothing, publishes.
    Curator,
}

/// A participant that has read the roster and checked its role and the session's K.
#[derive(Debug)]
pub struct Joined {
    pub(super) p: Participant,
    pub(super) me: Peer,
    pub(super) session: Session,
    pub(super) spec: JobSpec,
}

impl Participant {
    /// Read the roster, find this participant in it, check its role and K (a public
    /// parameter, before anything connects).
    pub fn join(self, role: Role) -> Result<Joined> {
        let session = Session::load(&self.roster)?;
        let me = session.peer(&self.me)?;
        match (me, role) {
            (Peer::Party(_), Role::Curator) => {
                return Err(Error::param(
                    "session.me",
                    format!("'{}' is a party: run `kinsey party`", self.me),
                ));
            }
            (Peer::Curator, Role::Party) => {
                return Err(Error::param(
                    "session.me",
                    "this is the curator's config: run `kinsey curator`",
                ));
            }
            _ => {}
        }
        let j = &self.job;
        let spec = JobSpec {
            objective: Objective::new(j.lambda)?,
            solver: j.solver,
            privacy: j.privacy,
            device: self.device,
            transform: j.transform,
            intercept: j.intercept,
            aggregation: Arc::new(PlaintextAggregator),
            allow_two_parties: j.allow_two_parties,
        };
        kinsey_learn::pipeline::check_parties(session.parties, spec.allow_two_parties)?;
        Ok(Joined {
            p: self,
            me,
            session,
            spec,
        })
    }
}

impl Joined {
    /// Who this participant is.
    pub fn me(&self) -> Peer {
        self.me
    }

    /// K, the session's number of parties.
    pub fn parties(&self) -> usize {
        self.session.parties
    }

    /// The model's dimension.
    pub fn dim(&self) -> usize {
        self.p.job.features.len() + usize::from(self.p.job.intercept.is_some())
    }

    /// Where the backend's batches run, in words.
    pub fn backend_device(&self) -> String {
        self.p.backend.backend().device()
    }

    /// The mesh this participant connects: its identity, the parameters every participant
    /// compares (with K and the roster's digest), its limits and hooks.
    pub(super) fn mesh(&self) -> Result<MeshConfig> {
        let identity = Identity::load(&self.p.ca, &self.p.cert, &self.p.key)?;
        let mut params = self.p.job.params.clone();
        params.push_str(&format!("parties = {}\n", self.session.parties));
        params.push_str(&format!("roster = {}\n", self.session.digest));
        let info = self.p.backend.backend().info();
        Ok(MeshConfig {
            me: self.me,
            session: self.session.clone(),
            identity,
            params,
            connect_window: self.p.connect_window,
            timeout: self.p.timeout,
            limits: Limits::for_backend(self.session.parties, self.dim(), &info),
            hooks: self
                .p
                .tamper
                .map_or_else(MeshHooks::default, |(kind, stage)| {
                    MeshHooks::dangerous_tamper(kind, stage)
                }),
            on_stage: self.p.on_stage.clone().map(StageHook),
        })
    }
}
