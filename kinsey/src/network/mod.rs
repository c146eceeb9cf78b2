//! The aggregate classifier across machines: each participant a separate process over
//! mutually authenticated TLS 1.3, as `kinsey party` and `kinsey curator` run them. A
//! [`Participant`] (the roster, its name, TLS files, the job's public [`SessionJob`])
//! [`join`](Participant::join)s a session; a party then
//! [`run_party`](Joined::run_party)s on its own data, the curator
//! [`run_curator`](Joined::run_curator)s and publishes. [`TrialSession`] makes the PKI and
//! roster of a trial on one machine.
//!
//! What leaves a party is the protocol's messages only: their number, sizes and
//! destinations are a public function of K, d and the key size.

pub mod config;
mod curator;
mod participant;
mod party;
mod trial;

pub use curator::CuratorOutcome;
pub use kinsey_learn::pipeline::check_parties;
pub use kinsey_protocol::MAX_PARTIES;
pub use kinsey_protocol::session::Tamper;
pub use kinsey_protocol::transport::{Peer, Stage};
pub use participant::{Joined, Participant, Role, SessionJob};
pub use party::{PartyData, PartyOutcome};
pub use trial::{TrialMember, TrialSession};
