//! kinsey: differentially private statistics with secrecy.
//!
//! Code map (see ARCHITECTURE.md for the invariants):
//! * [`data`]: Parquet/LIBSVM ingest, synthetic parties, splits, all-or-nothing output.
//! * [`dp`]: CSPRNG, mechanisms with privacy maps, accountant, statistical tests.
//! * [`logreg`]: the objective (written once) and the Newton solver.
//! * [`aggregate`]: calibration and the aggregate classifier (plaintext reference aggregator).
//! * [`crypto`]: the registry of compiled-in crypto backends.
//! * [`protocol`]: the secure 3-stage aggregation protocol, its transport and audits.
//! * [`pipeline`]: the end-to-end job and its report.
//! * [`experiment`]: Figure 2 of seed 001.
//! * [`toolbox`]: DP histograms and decision trees (seed 002).
//! * [`sulq`]: SuLQ queries, k-means, PCA/SVD, perceptron, STAT, implication (seed 003).
//! * [`decay`]: decayed sums under continual observation (seed 004).
//! * [`config`]: TOML configuration.

pub mod aggregate;
pub mod bench_crypto;
pub mod cli_support;
pub mod config;
pub mod crypto;
pub mod data;
pub mod decay;
pub mod dp;
pub mod error;
pub mod experiment;
#[cfg(feature = "paillier")]
pub mod keyfiles;
pub mod logreg;
pub mod pipeline;
pub mod plot;
pub mod protocol;
pub mod release;
pub mod sulq;
pub mod testdata;
pub mod toolbox;

pub use error::{Error, Result};
