//! Learning: the L2-regularised logistic objective and its solver ([`logreg`]), the noise
//! calibration and the [`aggregate::Aggregator`] interface with its plaintext reference
//! ([`aggregate`]), and the end-to-end job ([`pipeline`]) that fits each party's model and
//! hands the models to whichever aggregator the caller chose (plaintext or the secure
//! protocol of `kinsey-protocol`).

pub mod aggregate;
pub mod bounded;
pub mod formula;
pub mod logreg;
pub mod model_file;
pub mod passes;
pub mod pipeline;
pub mod publish;
pub mod remote;
mod report;
pub mod seeding;
pub mod sparse_job;
pub mod spill;
