//! What the driver tells every executor of a remote party: how its rows are read
//! ([`Plan`]) and what each job computes per row group ([`Work`]).

use kinsey_data::RowTransform;
use kinsey_data::parquet_io::ColumnSpec;
use serde::{Deserialize, Serialize};

/// Rows per group: the kernel's reduction groups and the digest's are the same.
pub const GROUP_ROWS: usize = kinsey_kernels::logistic::cpu::GROUP_ROWS;
const _: () = assert!(GROUP_ROWS == kinsey_data::digest::GROUP_ROWS);

/// How every executor reads and prepares the party's rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The party's name (errors name it).
    pub name: String,
    /// The label and the features, by name (resolved on the driver from the schema).
    pub columns: ColumnSpec,
    /// The features, in order.
    pub features: Vec<String>,
    /// The row transform.
    pub transform: RowTransform,
    /// The intercept's constant, if any.
    pub intercept: Option<f64>,
    /// The party's rows.
    pub rows: usize,
}

/// What a job computes for each group of rows (its payload, little-endian).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "work", rename_all = "snake_case")]
pub enum Work {
    /// The group's digest of its rows as read (32 bytes, when `digest`), then how many of
    /// its rows the transform changed (`u64`).
    Prepare {
        /// Whether to digest (seeded runs only).
        digest: bool,
    },
    /// The loss, the gradient and, with `hessian`, the Hessian's lower triangle (`f64`s)
    /// of the transformed rows at `w`.
    Sums {
        /// The point.
        w: Vec<f64>,
        /// Whether to sum the Hessian.
        hessian: bool,
    },
    /// The transformed rows among `rows` (increasing): each its position (`u64`), values
    /// (`f32`s) and label (`f32`).
    Gather {
        /// Positions of the rows.
        rows: Vec<u64>,
    },
    /// How many transformed rows `sign(w.x)` misclassifies (`u64`).
    Misclassified {
        /// The model.
        w: Vec<f64>,
    },
}

/// One job's instructions to every executor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// How the rows are read and prepared.
    pub plan: Plan,
    /// What is computed.
    pub work: Work,
}
