//! The NOT PRIVATE diagnostics of an aggregate-classifier run, as written to
//! `job.NOT-PRIVATE.diagnostics.json`: per-party figures, the models' objectives and errors,
//! Theorem 4.2's check and the timings (re-exported by `pipeline`).

use crate::aggregate::NoiseCalibration;
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
/// One party's figures (diagnostics).
pub struct PartyReport {
    /// The party's number (1-based).
    pub party: usize,
    /// Where its data came from.
    pub source: String,
    /// Its rows.
    pub rows: usize,
    pub(crate) rows_transformed: usize,
    /// `J(w_j)` at its local model.
    pub objective: f64,
    /// `||grad J(w_j)||` reached.
    pub grad_norm: f64,
    pub(crate) newton_iterations: usize,
    pub(crate) data_passes: usize,
    /// Hessians evaluated.
    pub hessian_evaluations: usize,
    /// Rows in the Hessian subsample.
    pub hessian_rows: usize,
    /// Seconds of local training.
    pub seconds: f64,
    /// Where it ran.
    pub device: String,
    /// Its local model's test error, when a test set was given.
    pub test_error: Option<f64>,
    /// The noise calibrated to its size.
    pub noise: NoiseCalibration,
}

#[derive(Debug, Clone, Serialize)]
/// A model's objective and errors (diagnostics).
pub struct ModelEval {
    /// `dp_aggregate`, `non_private_average` or `non_private_pooled`.
    pub name: String,
    /// J(w) on the pooled training data.
    pub objective: f64,
    /// Excess objective over the pooled optimum w*.
    pub(crate) excess_objective: f64,
    /// Test error, when a test set was given.
    pub test_error: Option<f64>,
    /// Training error (misclassified fraction of the pooled training rows).
    pub train_error: f64,
}

#[derive(Debug, Clone, Serialize)]
/// Theorem 4.2 of seed 001: the distance between the average and the pooled model against its
/// bound.
pub struct Theorem42 {
    /// `||w_hat - w*||` (unperturbed average vs pooled optimum).
    pub distance: f64,
    /// `(K - 1) / (n_(1) lambda)`.
    pub bound: f64,
    /// `distance / bound`.
    pub ratio: f64,
    /// Whether the bound holds.
    pub holds: bool,
}

#[derive(Debug, Clone, Serialize)]
/// Seconds per phase (diagnostics: they depend on the data).
pub struct Timings {
    /// Reading the data.
    pub ingest_s: f64,
    /// Every party's local fit.
    pub local_training_s: f64,
    /// SensitivityDerivation, noise and aggregation.
    pub aggregation_s: f64,
    /// The non-private baselines.
    pub baselines_s: f64,
    /// Evaluating the models.
    pub evaluation_s: f64,
    /// The whole run.
    pub total_s: f64,
}

/// Diagnostics (written only when asked, NOT PRIVATE): every figure computed from the
/// parties' exact data.
#[derive(Debug, Clone, Serialize)]
pub struct Diagnostics {
    /// Every party's rows.
    pub party_sizes: Vec<usize>,
    /// Every party's figures.
    pub parties: Vec<PartyReport>,
    /// The calibration of the noise that was published (it holds n_(1)).
    pub published_noise: NoiseCalibration,
    /// The secure protocol's report (per-stage time, operations, traffic).
    pub protocol: Option<serde_json::Value>,
    /// The secure result equals the plaintext reference with the same noise, bit for bit.
    pub matches_plaintext_reference: Option<bool>,
    /// Where the local fits ran.
    pub compute_device: String,
    /// The published model and both non-private baselines.
    pub models: Vec<ModelEval>,
    /// Theorem 4.2 on this run.
    pub theorem_4_2: Theorem42,
    /// Test rows, when a test set was given.
    pub test_rows: Option<usize>,
    /// The published model's test error.
    pub test_error: Option<f64>,
    /// Seconds per phase.
    pub timings: Timings,
}
