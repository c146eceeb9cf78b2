//! The SuLQ algorithms of seed 003 over a table's columns, as `kinsey sulq` releases them:
//! [`Kmeans`], [`Pca`], [`Perceptron`], [`Stat`] and [`Implication`]. Each takes an
//! [`Input`] and [`Options`] (the budget, diagnostics, a ledger), charges the ledger before
//! any noise, and returns a run whose [`SulqOutput::write`] writes its files.
//!
//! ```no_run
//! use kinsey::sulq::{Input, Kmeans, Options};
//! use kinsey::prelude::*;
//!
//! let mut input = Input::new("table.parquet");
//! input.columns = vec!["age:0:100".into(), "income:0:200000".into()];
//! let run = Kmeans {
//!     input,
//!     k: 3,
//!     iterations: 5,
//!     device: DevicePref::Cpu,
//!     memory_limit: None,
//!     options: Options::new(1.0, 1e-6, Neighbours::Bounded),
//! }
//! .run()?;
//! println!("{:?}", run.output.run.result.centers_original);
//! run.output.write("out".as_ref(), |_| Ok(()))?;
//! # Ok::<(), kinsey::Error>(())
//! ```

mod analyses;
mod common;
mod of_source;
mod perceptron;
mod tests_of_tables;

pub use analyses::{Kmeans, KmeansRun, Pca, PcaRun};
pub use common::{Budget, Input, Options, SulqOutput, Written};
pub use kinsey_stats::sulq::GaussianCalibration;
pub use kinsey_stats::sulq::release::{OneTable, SulqRelease, TwoTables};
pub use of_source::{check_kmeans, kmeans_release, pca_release};
pub use perceptron::{Perceptron, PerceptronRun};
pub use tests_of_tables::{Implication, ImplicationRun, Stat, StatRun, read_event};

#[cfg(test)]
mod tests;
