//! Private decayed sums of a series under continual observation (seed 004): the window,
//! all-window, exponential, polynomial and running sums, over values in memory
//! ([`DecayedSumBuilder::over_values`]), a file's column ([`DecayedSumBuilder::over_file`])
//! or, as `kinsey decay` runs them, from a file to a release on disk
//! ([`DecayedSumBuilder::write_file`]: a column streamed in chunks in bounded memory, or
//! events bucketed into steps of time).

mod advice;
mod builder;
mod file;

pub use advice::{USEFUL_STD_FRACTION, usefulness};
pub use builder::{
    Bound, DecayOutput, DecayedSum, DecayedSumBuilder, Events, OutOfBound, steps_are_bits,
};
pub use file::{DecayFiles, DecayWritten, EvaluationChart, ReleaseChart};
pub use kinsey_decay::evaluate::ColumnError;
pub use kinsey_decay::{DecayRelease, ModelParams};
