//! Reproductions of the seeds' experiments.

pub mod figure2;
