//! Parties as separate processes: the session roster, TLS 1.3 with mutual authentication by
//! roster, framed messages with per-stage limits, the connection mesh, and one participant's
//! run over it (`kinsey party`, `kinsey curator`). The security model is in
//! `docs/protocol-deployment.md`.

mod config;
mod connect;
mod frame;
mod link;
pub mod local;
mod mesh;
pub mod pki;
pub mod roster;
mod run;
pub mod tls;

pub use config::{MeshConfig, MeshHooks, StageHook, Tamper};
pub use frame::Limits;
pub use mesh::{LinkTraffic, Mesh};
pub use roster::{Member, PROTOCOL_VERSION, Roster, Session};
pub use run::{Binding, DrawNoise, ParticipantOutcome, Seat, run_participant};

#[cfg(test)]
mod tests;
