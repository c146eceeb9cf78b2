//! What a run reports: per-stage time, operations and traffic, and the outcome.

use crate::transport::View;

use kinsey_backend::BackendInfo;
use serde::Serialize;
use std::collections::BTreeMap;

/// Timing and traffic of one stage.
#[derive(Debug, Clone, Serialize)]
pub struct StageReport {
    pub stage: String,
    pub wall_seconds: f64,
    /// Time inside the crypto backend, summed over participants.
    pub crypto_seconds: f64,
    /// Homomorphic operations by kind, counted per element.
    pub operations: BTreeMap<String, u64>,
    pub bytes: usize,
}

/// Traffic of one participant.
#[derive(Debug, Clone, Serialize)]
pub struct ParticipantReport {
    pub participant: String,
    pub bytes_sent: usize,
    pub bytes_received: usize,
    pub messages_sent: usize,
    pub crypto_seconds: f64,
}

/// What the protocol reports.
#[derive(Debug, Clone, Serialize)]
pub struct ProtocolReport {
    pub backend: BackendInfo,
    pub comparison: String,
    pub transport: String,
    pub parties: usize,
    pub dim: usize,
    pub fixed_point_bits: u32,
    pub sigma: u32,
    pub wall_seconds: f64,
    pub total_bytes: usize,
    pub homomorphic_operations: u64,
    pub stages: Vec<StageReport>,
    pub participants: Vec<ParticipantReport>,
}

impl ProtocolReport {
    /// One line per stage: wall time, crypto time, traffic and operation counts.
    pub fn stage_lines(&self, indent: &str) -> String {
        self.stages
            .iter()
            .map(|st| {
                format!(
                    "{indent}{:<40} {:>8.3} s wall {:>8.3} s crypto {:>10.1} KiB  {:?}\n",
                    st.stage,
                    st.wall_seconds,
                    st.crypto_seconds,
                    st.bytes as f64 / 1024.0,
                    st.operations
                )
            })
            .collect()
    }
}

/// The result of a run.
#[derive(Debug, Clone)]
pub struct SecureOutcome {
    /// `sum_j w_j + K eta_smallest` in fixed point: what the published shares add up to.
    pub sum: Vec<i128>,
    /// The published classifier, `sum / (K 2^32)`.
    pub w: Vec<f64>,
    pub report: ProtocolReport,
    /// Every participant's view (bytes only with `record_views`).
    pub views: Vec<View>,
}
