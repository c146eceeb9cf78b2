//! Reproductions of the seeds' experiments.

pub(crate) mod figure2;
