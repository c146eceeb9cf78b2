//! The k-means step on the CPU (rayon, f32 distances as the shader computes them).

use super::sums::{KmeansKernel, KmeansSums, accumulate, accumulate_into, nearest};
use crate::error::KernelError;

/// Rows borrowed for k-means steps on the CPU.
#[derive(Debug, Clone, Copy)]
pub struct CpuKmeans<'a> {
    /// Row-major rows.
    pub x: &'a [f32],
    /// Columns.
    pub d: usize,
}

impl KmeansKernel for CpuKmeans<'_> {
    fn describe(&self) -> String {
        format!("cpu (rayon, {} threads)", rayon::current_num_threads())
    }

    fn sums(&self, centers: &[f64]) -> Result<KmeansSums, KernelError> {
        kmeans_sums(self.x, self.d, centers)
    }
}

/// Assign every row to its nearest centre and sum sizes and coordinates per centre.
pub fn kmeans_sums(x: &[f32], d: usize, centers: &[f64]) -> Result<KmeansSums, KernelError> {
    let k = whole_centres(x, d, centers)?;
    let c32: Vec<f32> = centers.iter().map(|&v| v as f32).collect();
    Ok(accumulate(x, d, k, |_, row| nearest(row, &c32, d)))
}

/// [`kmeans_sums`] of rows that continue what `acc` holds (sums of `acc.counts.len()`
/// centres): rows given a multiple of [`crate::rows::BLOCK_ROWS`] at a time (the last
/// piece any length) sum to the bits of [`kmeans_sums`] over all of them.
pub fn kmeans_sums_into(
    acc: &mut KmeansSums,
    x: &[f32],
    d: usize,
    centers: &[f64],
) -> Result<(), KernelError> {
    let k = whole_centres(x, d, centers)?;
    if acc.counts.len() != k || acc.sums.len() != k * d {
        return Err(KernelError::Input(format!(
            "the running sums hold {} centres, {k} given",
            acc.counts.len()
        )));
    }
    let c32: Vec<f32> = centers.iter().map(|&v| v as f32).collect();
    accumulate_into(acc, x, d, 0, |_, row| nearest(row, &c32, d));
    Ok(())
}

/// The number of centres, after checking that `x` and `centers` hold whole rows of `d`.
fn whole_centres(x: &[f32], d: usize, centers: &[f64]) -> Result<usize, KernelError> {
    crate::rows::whole_rows(x, d)?;
    if centers.is_empty() || !centers.len().is_multiple_of(d) {
        return Err(KernelError::Input(format!(
            "{} centre values are not whole centres of {d} columns",
            centers.len()
        )));
    }
    Ok(centers.len() / d)
}
