//! Shared helpers for kinsey's criterion benches and throughput runners.

/// Rows from the planted logistic model used by every benchmark (seed 1, stream 1), so
/// `kinsey bench train` and the criterion benches time the same data.
pub fn bench_rows(n: usize, d: usize) -> kinsey_data::Dataset {
    kinsey_data::synth::generate(n, d, 16.0, 1, 1, "bench".into())
}
