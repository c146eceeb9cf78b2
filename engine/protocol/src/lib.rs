//! The secure 3-stage aggregation protocol of seeds 000/001 (`../shared/docs/protocol.md`):
//! K party roles and the curator role, each in its own thread, every message serialized to
//! bytes and sent through a [`transport::Transport`]. The crypto is behind
//! `kinsey_backend::AdditiveHe` (and its `SecureComparison`), so switching the backend in
//! the config changes nothing here.
//!
//! Integers and ranges (all checked before anything is sent):
//! * sizes `n_j < 2^32`, `K <= 256`; Stage 1 compares the distinct keys `n_j K + j` (smallest
//!   size, ties to the lowest index, as the plaintext reference does; equal sizes are not
//!   revealed as ties), `< 2^40`;
//! * `a_j` uniform below `2^(40 + sigma)`, the curator's masks `r` below `2^(80 + sigma)`,
//!   sigma = 40 statistical bits;
//! * fixed point `2^-32` for the models (the reference aggregator's) and `2^-32 / K` for the
//!   noise (`aggregate::encode_noise`, so no residue of the published sum is noise-free):
//!   `|eta| K 2^32 < 2^80`, Stage 3's mask `s` below `2^(80 + sigma)`;
//! * re-sharing and publication in Z_(2^128): the published shares are uniform apart from
//!   their sum, which is the signed sum `sum_j W_j + N` (models at 2^-32, noise at
//!   2^-32 / K).
//!
//! One deviation from a literal reading of protocol.md, step 1.2: `b_j` does not go from
//! `P_j` straight to the curator (the sender would reveal `pi1(j)` to it, and with `pi2` the
//! curator would then know who is smallest). It travels encrypted under the curator's key
//! `zeta` to `P_pi1(j)`, which re-randomises it and forwards it as position `pi1(j)`.
//! In Stage 1 the curator also re-randomises `xi(a + r)` before sending it, or a party could
//! recognise its own ciphertext and learn part of `pi2`.

mod curator;
pub mod faults;
pub mod inputs;
mod messages;
mod meter;
mod params;
mod party;
mod play;
pub mod registry;
pub mod report;
mod reshare;
mod role;
mod rounds;
mod runner;
pub mod session;
pub mod transport;
mod wire;

#[cfg(test)]
mod tests;

pub use faults::{Fault, FaultKind, Leak};
pub use params::{KEY_BITS, MAX_PARTIES, NOISE_BITS, NOISE_OFFSET, SIGMA, SIZE_BITS};
pub use report::{ParticipantReport, ProtocolReport, SecureOutcome, StageReport};
pub use runner::{ProtocolConfig, SecureAggregator};
