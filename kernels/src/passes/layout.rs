//! How the passes split the rows: blocks within the binding cap, chunks of [`CHUNK`] rows
//! per partial sum, reduction groups of [`RED_GROUP`] partials. The one place the device
//! and its twin take these from.

use crate::error::KernelError;

/// Rows per gradient partial (the shader's workgroup arrays hold this many).
pub const CHUNK: usize = 256;
/// Rows per Hessian partial at least (a multiple of the 16-row tiles).
const MIN_HESS_CHUNK: usize = 1024;
/// Partials one reduction invocation adds (well under lavapipe's loop budget).
pub const RED_GROUP: usize = 1024;
/// Workgroups per dispatch dimension.
const MAX_WG: u64 = 65_535;

/// One block of rows: its own storage bindings, its chunks reduced on the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// First row.
    pub start: usize,
    /// Rows in the block.
    pub rows: usize,
    /// Rows per Hessian partial (a multiple of 16).
    pub hess_chunk: usize,
}

impl Block {
    /// Gradient partials.
    pub fn chunks(&self) -> usize {
        self.rows.div_ceil(CHUNK)
    }

    /// Hessian partials.
    pub fn hess_chunks(&self) -> usize {
        self.rows.div_ceil(self.hess_chunk)
    }
}

/// The blocks of `n` rows of `d` columns when no storage binding may exceed `cap` bytes:
/// the rows (f32), the Hessian weights (f64 per row), the gradient partials and the
/// Hessian partials (f64) each fit one binding, and no dispatch exceeds 65,535 workgroups
/// per dimension.
pub fn layout(n: usize, d: usize, cap: u64) -> Result<Vec<Block>, KernelError> {
    let (n64, d64) = (n as u64, d as u64);
    let hess_bytes = d64 * d64 * 8;
    if n == 0 || d == 0 {
        return Err(KernelError::Input(format!("no rows to sum ({n} x {d})")));
    }
    if hess_bytes > cap || (d64 + 1) * 8 > cap {
        return Err(KernelError::Input(format!(
            "a {d} x {d} Hessian in f64 does not fit one GPU storage binding ({cap} bytes)"
        )));
    }
    let by_x = cap / (d64 * 4);
    let by_weights = cap / 8;
    let by_partials = cap / ((d64 + 1) * 8) * CHUNK as u64;
    let by_dispatch = MAX_WG * CHUNK as u64;
    let limit = by_x.min(by_weights).min(by_partials).min(by_dispatch);
    // One block when the rows fit; otherwise blocks of whole Hessian chunks.
    let per = if n64 <= limit {
        n64
    } else {
        limit / MIN_HESS_CHUNK as u64 * MIN_HESS_CHUNK as u64
    };
    if per == 0 {
        return Err(KernelError::Input(format!(
            "dimension {d} is too large for one GPU storage binding ({cap} bytes)"
        )));
    }
    let per = per as usize;
    let max_chunks = (cap / hess_bytes).clamp(1, MAX_WG);
    Ok((0..n)
        .step_by(per)
        .map(|start| {
            let rows = per.min(n - start);
            let need = (rows as u64).div_ceil(max_chunks) as usize;
            Block {
                start,
                rows,
                hess_chunk: need.max(MIN_HESS_CHUNK).div_ceil(16) * 16,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_covers_the_rows_within_the_binding_cap() {
        for &(n, d, cap) in &[
            (10_000usize, 123usize, 128u64 << 20),
            (300_000, 7, 1 << 20),
            (5000, 40, 1 << 18),
            (1, 1, 1 << 10),
        ] {
            let blocks = layout(n, d, cap).expect("fits");
            let mut next = 0;
            for b in &blocks {
                assert_eq!(b.start, next);
                next += b.rows;
                assert!((b.rows * d * 4) as u64 <= cap && (b.rows * 8) as u64 <= cap);
                assert!((b.chunks() * (d + 1) * 8) as u64 <= cap);
                assert!((b.hess_chunks() * d * d * 8) as u64 <= cap);
                assert!(b.hess_chunk.is_multiple_of(16) && b.chunks() as u64 <= MAX_WG);
            }
            assert_eq!(next, n);
        }
        assert!(layout(10, 2000, 1 << 20).is_err());
        assert!(layout(0, 3, 1 << 20).is_err());
    }
}
