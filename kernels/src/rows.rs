//! Borrowed row-major data, as every kernel takes it.

use crate::error::KernelError;
use std::fmt;

/// A borrowed, row-major data set: `x` has `n * d` entries, `y` has `n` labels in {-1, +1}.
#[derive(Clone, Copy)]
pub struct Rows<'a> {
    /// Row-major features, `n * d`.
    pub x: &'a [f32],
    /// Labels in {-1, +1}.
    pub y: &'a [f32],
    /// Rows.
    pub n: usize,
    /// Columns.
    pub d: usize,
}

impl fmt::Debug for Rows<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Rows {{ n: {}, d: {} }}", self.n, self.d)
    }
}

impl<'a> Rows<'a> {
    /// Check shapes.
    pub fn new(x: &'a [f32], y: &'a [f32], d: usize) -> Result<Self, KernelError> {
        if d == 0 {
            return Err(KernelError::Input("dimension must be >= 1".into()));
        }
        if !x.len().is_multiple_of(d) || x.len() / d != y.len() {
            return Err(KernelError::Input(format!(
                "x has {} entries, not {} rows x {} columns",
                x.len(),
                y.len(),
                d
            )));
        }
        Ok(Self {
            x,
            y,
            n: y.len(),
            d,
        })
    }
}

/// Rows per block of the sum kernels: one block is one rayon task and one f32 Gram
/// product; blocks are reduced in a fixed order, so no result depends on the thread count.
pub const BLOCK_ROWS: usize = 4096;

/// The number of rows of a row-major buffer of `d` columns, or why it is not one.
pub(crate) fn whole_rows(x: &[f32], d: usize) -> Result<usize, KernelError> {
    if d == 0 {
        return Err(KernelError::Input("dimension must be >= 1".into()));
    }
    if !x.len().is_multiple_of(d) {
        return Err(KernelError::Input(format!(
            "{} values are not whole rows of {d} columns",
            x.len()
        )));
    }
    Ok(x.len() / d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DevicePref;

    #[test]
    fn rows_shape_is_checked() {
        assert!(Rows::new(&[1.0; 6], &[1.0; 2], 3).is_ok());
        assert!(Rows::new(&[1.0; 6], &[1.0; 3], 3).is_err());
        assert!(Rows::new(&[1.0; 6], &[1.0; 2], 0).is_err());
        assert!("tpu".parse::<DevicePref>().is_err());
    }
}
