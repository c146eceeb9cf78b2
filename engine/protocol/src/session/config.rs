//! What a participant needs to join a session's mesh, and the tamper test hook.

use super::frame::Limits;
use super::roster::Session;
use super::tls::Identity;
use crate::transport::{Peer, Stage};
use kinsey_core::{Error, Result};
use std::time::Duration;

/// A test hook: how a participant corrupts its first protocol message of a stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tamper {
    /// Valid framing, scrambled body.
    Garbage,
    /// A frame cut short, then the connection closed.
    Truncated,
    /// A length over the stage's limit.
    Oversized,
    /// The same frame sent twice.
    Replay,
    /// Another session's id.
    WrongSession,
}

impl std::str::FromStr for Tamper {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "garbage" => Tamper::Garbage,
            "truncated" => Tamper::Truncated,
            "oversized" => Tamper::Oversized,
            "replay" => Tamper::Replay,
            "wrong-session" => Tamper::WrongSession,
            o => {
                return Err(Error::param(
                    "tamper",
                    format!("'{o}' is not garbage, truncated, oversized, replay or wrong-session"),
                ));
            }
        })
    }
}

/// Called when this participant enters a protocol stage (1 to 3: every participant starts
/// in the setup stage, which is not entered), on the protocol's thread, before the stage's
/// first message: what it does (log, report progress, or in the CLI's hidden
/// test hook hold the process there so a test can kill it) is the caller's; the library
/// neither prints nor waits.
#[derive(Clone)]
pub struct StageHook(pub std::sync::Arc<dyn Fn(Peer, Stage) + Send + Sync>);

impl std::fmt::Debug for StageHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StageHook")
    }
}
/// A mesh's test hooks: none by default, and nothing but the tests that show every peer
/// refusing a corrupted frame sets one (rustls's `dangerous()` idea: the name says it).
#[derive(Debug, Clone, Copy, Default)]
pub struct MeshHooks {
    pub(crate) tamper: Option<(Tamper, Stage)>,
}

impl MeshHooks {
    /// DANGEROUS, for tests: corrupt the first frame this participant sends in `stage`.
    pub fn dangerous_tamper(kind: Tamper, stage: Stage) -> Self {
        Self {
            tamper: Some((kind, stage)),
        }
    }
}

/// Everything a participant needs to join the mesh.
#[derive(Debug)]
pub struct MeshConfig {
    /// Who this participant is.
    pub me: Peer,
    /// The checked roster.
    pub session: Session,
    /// Its TLS material.
    pub identity: Identity,
    /// The shared parameters, canonical `name = value` lines (hashed in the hello).
    pub params: String,
    /// How long to wait for every peer to connect.
    pub connect_window: Duration,
    /// How long any one receive may wait.
    pub timeout: Duration,
    /// Frame limits per stage.
    pub limits: Limits,
    /// Test hooks: none unless set through [`MeshHooks::dangerous_tamper`].
    pub hooks: MeshHooks,
    /// Called on entering each stage.
    pub on_stage: Option<StageHook>,
}
