//! SuLQ k-means and PCA of any column source (a file, or a table in memory) with the
//! release only: what Python's `kinsey.sulq` returns. The files, charts and NOT PRIVATE
//! diagnostics of `kinsey sulq` are [`super::Kmeans`]'s and [`super::Pca`]'s.

use super::common::Budget;
use crate::DevicePref;
use kinsey_core::Result;
use kinsey_data::memory::ColumnSource;
use kinsey_stats::sulq::kmeans::{self, KmeansConfig, KmeansResult};
use kinsey_stats::sulq::pca::{PcaConfig, PcaResult};
use kinsey_stats::sulq::query::{self, Columns};
use kinsey_stats::sulq::release::{OneTable, SulqRelease};

/// The columns read: `NAME` (already in range) or `NAME:LO:HI` (public bounds); empty:
/// every numeric column. `clip` clips values outside the range instead of refusing them.
fn columns(specs: &[String], clip: bool) -> Columns {
    Columns {
        specs: specs.to_vec(),
        clip,
    }
}

/// Refuse a k-means configuration before anything is charged or read.
pub fn check_kmeans(k: usize, iterations: usize) -> Result<()> {
    kmeans::check_config(&KmeansConfig {
        k,
        iters: iterations,
    })
}

/// The release of SuLQ k-means over `source`'s columns: `k` centres, `iterations` rounds,
/// the assignment step on `device`. Charge the ledger first.
pub fn kmeans_release(
    source: &dyn ColumnSource,
    specs: &[String],
    clip: bool,
    (k, iterations): (usize, usize),
    budget: &Budget,
    device: DevicePref,
) -> Result<SulqRelease<OneTable, KmeansResult>> {
    let cfg = KmeansConfig {
        k,
        iters: iterations,
    };
    let (a, _) = query::kmeans(budget, source, &columns(specs, clip), &cfg, device)?;
    Ok(a.run.split().0)
}

/// The release of SuLQ PCA (`center`) or SVD over `source`'s columns: `components`
/// components. Charge the ledger first.
pub fn pca_release(
    source: &dyn ColumnSource,
    specs: &[String],
    clip: bool,
    (components, center): (usize, bool),
    budget: &Budget,
) -> Result<SulqRelease<OneTable, PcaResult>> {
    let cfg = PcaConfig { components, center };
    let a = query::pca(budget, source, &columns(specs, clip), &cfg)?;
    Ok(a.run.split().0)
}
