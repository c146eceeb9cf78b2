//! What one chunk of a window tree is.

use crate::KernelError;

/// One chunk: steps `from .. from + xs.len()` (`from` a multiple of `2^h`), their values,
/// the noise draws of the nodes completing in it (in completion order: at each step the
/// levels that close, bottom up), and the steps whose window sums are wanted,
/// `out_from .. from + xs.len()`.
#[derive(Debug, Clone, Copy)]
pub struct WindowChunk<'a> {
    /// Top level of the tree (blocks of `2^h` steps).
    pub h: u32,
    /// Window length `W <= 2^h`.
    pub w: u64,
    /// The release grid (a power of two).
    pub gamma: f64,
    /// The chunk's first step.
    pub from: u64,
    /// The first step whose window sum is wanted (its window starts in the chunk).
    pub out_from: u64,
    /// The values.
    pub xs: &'a [f64],
    /// The nodes' draws.
    pub z: &'a [i64],
}

impl WindowChunk<'_> {
    /// Nodes completing in the chunk: `sum_k len >> k`.
    pub fn nodes(&self) -> usize {
        (0..=self.h.min(63)).map(|k| self.xs.len() >> k).sum()
    }

    /// Offsets of each level's nodes in a flat array (level `k` at `offs[k]`).
    pub(crate) fn offsets(&self) -> Vec<u32> {
        let mut offs = Vec::with_capacity(self.h as usize + 2);
        let mut o = 0usize;
        for k in 0..=self.h.min(63) {
            offs.push(o as u32);
            o += self.xs.len() >> k;
        }
        offs.push(o as u32);
        offs
    }

    /// Checks the shape: `from` on a block boundary, `W <= 2^h`, one draw per node, the
    /// first wanted window inside the chunk, and sizes that fit 32-bit indices.
    pub fn check(&self) -> Result<(), KernelError> {
        self.check_with(self.z.len())
    }

    /// [`check`](Self::check) with `draws` draws (held elsewhere: on the device).
    pub(crate) fn check_with(&self, draws: usize) -> Result<(), KernelError> {
        let bad = |m: String| Err(KernelError::Input(format!("window chunk: {m}")));
        let len = self.xs.len() as u64;
        if self.h > 40 || self.w == 0 || self.w > 1 << self.h {
            return bad(format!("W = {} with h = {}", self.w, self.h));
        }
        if !self.from.is_multiple_of(1 << self.h) {
            return bad(format!(
                "first step {} is not a multiple of 2^{}",
                self.from, self.h
            ));
        }
        if len >= 1 << 30 {
            return bad(format!("{len} steps (below 2^30)"));
        }
        if draws != self.nodes() {
            return bad(format!("{draws} draws for {} nodes", self.nodes()));
        }
        let end = self.from + len;
        if self.out_from < self.from || self.out_from > end {
            return bad(format!("outputs from {} outside the chunk", self.out_from));
        }
        if self.out_from < end && (self.out_from + 1).saturating_sub(self.w) < self.from {
            return bad(format!(
                "the window of step {} starts before the chunk",
                self.out_from
            ));
        }
        if !(self.gamma > 0.0 && self.gamma.is_finite() && self.gamma.log2().fract() == 0.0) {
            return bad(format!("grid {} is not a power of two", self.gamma));
        }
        Ok(())
    }
}
