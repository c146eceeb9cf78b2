//! # kinsey: statistics with secrecy
//!
//! The library behind the `kinsey` command. Several parties (hospitals, banks, agencies)
//! train one differentially private classifier without revealing their data, their sizes
//! or their models ([`classifier`]); one curator publishes DP histograms, summary
//! statistics and trees ([`stats`]), the SuLQ analyses ([`sulq`]) and private decayed sums
//! of long series ([`decay`]); the exact samplers and the accountant underneath are [`dp`].
//!
//! Every entry point returns a typed release: the values, their guarantee (epsilon, delta,
//! neighbours, sensitivity, mechanism) and public parameters, nothing computed from exact
//! data. Figures computed from exact data are diagnostics, returned only when asked and
//! written in files marked NOT PRIVATE. A seed replays one release of the same data only.
//!
//! ```no_run
//! use kinsey::prelude::*;
//!
//! let trained = Job::builder()
//!     .parquet_parties(["a.parquet", "b.parquet", "c.parquet"], "label")
//!     .epsilon(1.0)
//!     .backend(Backend::paillier(2048))
//!     .build()?
//!     .run()?;
//! println!("{}", trained.release().guarantee.short());
//! trained.write("kinsey-out")?;
//! # Ok::<(), kinsey::Error>(())
//! ```
//!
//! ## Features
//! | feature | what it adds | builds |
//! |---|---|---|
//! | (none) | [`dp`]: exact samplers, the accountant, release types | rand, statrs, faer |
//! | `parquet` | [`data`]: Parquet and CSV tables | arrow, parquet |
//! | `classifier` | [`classifier`] with the plaintext reference and the mock backend | rustls |
//! | `paillier` | the Paillier + DGK backend | GMP (rug) |
//! | `tfhe` | the TFHE backend | tfhe-rs |
//! | `stats` | [`stats`], [`sulq`], [`decay`]: histograms, trees, SuLQ, decayed sums | wgpu |
//! | `gpu` | GPU twins of the heavy loops | wgpu |
//! | `bench` | [`bench`]: the measurements of `kinsey bench` and `kinsey experiment` | |
//!
//! All but `bench` are on by default. `default-features = false` builds the samplers alone: neither
//! wgpu, arrow, parquet, GMP nor TFHE.

#![warn(rustdoc::broken_intra_doc_links)]

pub use kinsey_core::{Error, ErrorKind, Result};
pub use kinsey_dp as dp;
pub use kinsey_kernels::DevicePref;

/// A builder's epsilon: required, and in the accepted range.
#[cfg(any(feature = "classifier", feature = "stats"))]
pub(crate) fn required_epsilon(epsilon: Option<f64>) -> Result<f64> {
    let e =
        epsilon.ok_or_else(|| Error::param("epsilon", "the privacy parameter must be given"))?;
    kinsey_core::check_epsilon("epsilon", e)?;
    Ok(e)
}

/// The measurements behind `kinsey bench` and `kinsey experiment` (feature `bench`): each
/// returns its figures, the CLI prints them.
#[cfg(feature = "bench")]
pub use kinsey_bench as bench;
#[cfg(feature = "classifier")]
pub mod classifier;
#[cfg(all(feature = "classifier", feature = "stats"))]
pub mod cluster;
#[cfg(feature = "classifier")]
pub mod config;
#[cfg(feature = "parquet")]
pub mod data;
#[cfg(feature = "stats")]
pub mod decay;
pub mod guarantee;
#[cfg(feature = "parquet")]
pub mod ledger;
#[cfg(feature = "classifier")]
pub mod network;
#[cfg(all(feature = "classifier", feature = "stats"))]
pub mod predict;
pub mod prelude;
#[cfg(feature = "stats")]
pub mod stats;
#[cfg(feature = "stats")]
pub mod sulq;
#[cfg(feature = "stats")]
mod summary;
#[cfg(feature = "stats")]
mod tree;
