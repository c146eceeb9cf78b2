//! The measurements behind `kinsey bench` and `kinsey experiment`: training throughput
//! ([`train`]), decayed sums on a generated stream ([`decay`]), Paillier rates and GPU
//! crossovers ([`protocol`], [`crossover`]), each backend operation ([`ops`]), the protocol
//! end to end in process and over TLS ([`protocol`]), SuLQ fit times ([`sulq`]), and the
//! seeds' experiments ([`figure2`], [`mechanisms`]); and the table of figures of a
//! `benches/gpu-figures.sh` run ([`figures`]). Each returns its figures; printing,
//! tables and charts are the caller's. The figures in BENCHMARKS.md come from here.

pub mod crossover;
pub mod decay;
pub mod figure2;
pub mod figures;
pub mod mechanisms;
pub mod ops;
pub mod protocol;
pub mod train;

/// SuLQ k-means and PCA fit times on a matrix in `[0, 1]^d` (`kinsey bench sulq`).
pub use kinsey_stats::sulq::bench as sulq;
