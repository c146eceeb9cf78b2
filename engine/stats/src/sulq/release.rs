//! A SuLQ run's outputs, typed and split where they are made: [`SulqRun::split`] routes the
//! exact row count, clipping counts, test accuracy and evaluation to the NOT PRIVATE
//! [`SulqDiagnostics`], and everything else to the [`SulqRelease`]. No caller moves fields
//! between the two by name.

use super::QueryRecord;
use kinsey_dp::{Neighbours, RngRecord};
use serde::Serialize;
use std::path::PathBuf;

/// The public description of a run over one table.
#[derive(Debug, Clone, Serialize)]
pub struct OneTable {
    /// The table, as the caller named it.
    pub input: PathBuf,
    /// Where the heavy loop ran (k-means), when it matters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// The columns read, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<String>,
    /// A test table, when one was given (its accuracy is a diagnostic).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test: Option<PathBuf>,
    /// Every query answered, in order.
    pub ledger: Vec<QueryRecord>,
}

/// The public description of the implication test over two tables.
#[derive(Debug, Clone, Serialize)]
pub struct TwoTables {
    /// Database A (holds alpha).
    pub a: PathBuf,
    /// Database B (holds beta).
    pub b: PathBuf,
    /// alpha, as the user wrote it.
    pub alpha: String,
    /// beta, as the user wrote it.
    pub beta: String,
    /// A's queries.
    pub ledger_a: Vec<QueryRecord>,
    /// B's queries.
    pub ledger_b: Vec<QueryRecord>,
}

/// What a SuLQ run publishes: its kind, public description, result and noise record; the
/// row count only where it is public (bounded neighbours).
#[derive(Debug, Clone, Serialize)]
pub struct SulqRelease<A, R> {
    /// The report's kind (`kinsey.sulq_kmeans.v1`, ...).
    pub kind: &'static str,
    /// The run's public description.
    #[serde(flatten)]
    pub about: A,
    /// Rows (public under bounded neighbours only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows: Option<usize>,
    /// The noisy result with its guarantee.
    pub result: R,
    /// How the noise generator was keyed.
    pub rng: RngRecord,
}

/// What a SuLQ run computed from the exact data (NOT PRIVATE; written only when asked).
#[derive(Debug, Clone, Default, Serialize)]
pub struct SulqDiagnostics {
    /// Per column: values clipped into the declared box.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clipped: Option<Vec<usize>>,
    /// Exact figures to compare the release with.
    pub evaluation: Option<serde_json::Value>,
    /// Rows, where they are private (unbounded neighbours).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows: Option<usize>,
    /// Accuracy on the test table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_accuracy: Option<f64>,
}

/// Everything a SuLQ run produced, before the split.
#[derive(Debug, Clone)]
pub struct SulqRun<A, R> {
    /// The report's kind.
    pub kind: &'static str,
    /// The run's public description.
    pub about: A,
    /// The neighbour definition of the guarantee (decides where `rows` goes).
    pub neighbours: Neighbours,
    /// Rows read (`None`: the run states no row count).
    pub rows: Option<usize>,
    /// The noisy result.
    pub result: R,
    /// The noise record.
    pub rng: RngRecord,
    /// Per-column clipping counts (NOT PRIVATE).
    pub clipped: Option<Vec<usize>>,
    /// Exact evaluation figures (NOT PRIVATE).
    pub evaluation: Option<serde_json::Value>,
    /// Test accuracy (NOT PRIVATE).
    pub test_accuracy: Option<f64>,
}

impl<A, R> SulqRun<A, R> {
    /// The release and the diagnostics.
    pub fn split(self) -> (SulqRelease<A, R>, SulqDiagnostics) {
        let public_rows = self.neighbours.n_is_public();
        let release = SulqRelease {
            kind: self.kind,
            about: self.about,
            rows: self.rows.filter(|_| public_rows),
            result: self.result,
            rng: self.rng,
        };
        let diagnostics = SulqDiagnostics {
            clipped: self.clipped,
            evaluation: self.evaluation,
            rows: self.rows.filter(|_| !public_rows),
            test_accuracy: self.test_accuracy,
        };
        (release, diagnostics)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(neighbours: Neighbours) -> SulqRun<OneTable, f64> {
        SulqRun {
            kind: "kinsey.sulq_test.v1",
            about: OneTable {
                input: "t.csv".into(),
                device: None,
                columns: vec!["x".into()],
                test: None,
                ledger: Vec::new(),
            },
            neighbours,
            rows: Some(123_457),
            result: 0.5,
            rng: RngRecord::of(kinsey_dp::rng::SeedSource::Os),
            clipped: Some(vec![98_765]),
            evaluation: Some(serde_json::json!({"exact": 0.4321})),
            test_accuracy: Some(0.8765),
        }
    }

    #[test]
    fn exact_figures_never_reach_the_release() {
        for nb in [Neighbours::Bounded, Neighbours::Unbounded] {
            let (rel, diag) = run(nb).split();
            let text = serde_json::to_string(&rel).expect("json");
            for secret in [
                "98765",
                "0.4321",
                "0.8765",
                "clipped",
                "evaluation",
                "test_acc",
            ] {
                assert!(!text.contains(secret), "{secret} in {text}");
            }
            let rows_public = nb == Neighbours::Bounded;
            assert_eq!(text.contains("123457"), rows_public, "{text}");
            assert_eq!(diag.rows.is_some(), !rows_public);
            let d = serde_json::to_string(&diag).expect("json");
            assert!(d.contains("98765") && d.contains("0.8765"), "{d}");
        }
    }
}
