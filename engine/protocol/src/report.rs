//! What a run reports: per-stage time, operations and traffic, and the outcome.

use crate::transport::View;

use kinsey_backend::BackendInfo;
use serde::Serialize;
use std::collections::BTreeMap;

/// Timing and traffic of one stage.
#[derive(Debug, Clone, Serialize)]
pub struct StageReport {
    /// The stage's name.
    pub stage: String,
    /// Wall-clock seconds of the stage (the latest participant's end).
    pub wall_seconds: f64,
    /// Time inside the crypto backend, summed over participants.
    pub crypto_seconds: f64,
    /// Homomorphic operations by kind, counted per element.
    pub operations: BTreeMap<String, u64>,
    /// Bytes sent in the stage, all participants together.
    pub bytes: usize,
    /// Sequential message rounds (the longest chain of messages each sent after the
    /// previous arrived); known when every participant's view was measured.
    pub rounds: Option<usize>,
}

/// Traffic of one participant.
#[derive(Debug, Clone, Serialize)]
pub struct ParticipantReport {
    /// The participant.
    pub participant: String,
    /// Bytes it sent.
    pub bytes_sent: usize,
    /// Bytes it received.
    pub bytes_received: usize,
    /// Messages it sent.
    pub messages_sent: usize,
    /// Seconds inside the crypto backend.
    pub crypto_seconds: f64,
}

/// What the protocol reports.
#[derive(Debug, Clone, Serialize)]
pub struct ProtocolReport {
    /// The backend and its key size.
    pub backend: BackendInfo,
    /// The comparison protocol.
    pub comparison: String,
    /// The transport.
    pub transport: String,
    /// Number of parties K.
    pub parties: usize,
    /// Dimension d.
    pub dim: usize,
    /// Fixed-point bits of the models.
    pub fixed_point_bits: u32,
    /// Statistical security of the masks, in bits.
    pub sigma: u32,
    /// Wall-clock seconds of the whole protocol.
    pub wall_seconds: f64,
    /// Bytes sent by the participants measured.
    pub total_bytes: usize,
    /// Homomorphic operations, counted per element.
    pub homomorphic_operations: u64,
    /// Programmable bootstraps of the run, every participant of this process together
    /// (backends that bootstrap: TFHE).
    pub bootstraps: Option<u64>,
    /// Per stage.
    pub stages: Vec<StageReport>,
    /// Per participant.
    pub participants: Vec<ParticipantReport>,
}

/// The result of a run.
#[derive(Debug, Clone)]
pub struct SecureOutcome {
    /// `sum_j w_j + K eta_smallest` in fixed point: what the published shares add up to.
    pub sum: Vec<i128>,
    /// The published classifier, `sum / (K 2^32)`.
    pub w: Vec<f64>,
    /// Time, operations and traffic.
    pub report: ProtocolReport,
    /// Every participant's view (bytes only with `record_views`).
    pub views: Vec<View>,
}
