//! The k-ary window trees' steps: one at a time with `O(1)` optimal estimates
//! ([`KarySum::step_window`]), and whole blocks a level at a time, in parallel segments
//! ([`KarySum::window_blocks`]), the same operations in the same order.

use super::{KarySum, Kind};
use kinsey_core::{Error, Result};

/// Blocks per parallel segment of a window sum, at least (each segment first rebuilds the
/// block before it: one block more of work per segment).
const SEGMENT_BLOCKS: u64 = if cfg!(test) { 2 } else { 8 };

/// Largest block whose window sums run in parallel segments (each thread holds a copy of
/// the state: two blocks of nodes).
const PARALLEL_BLOCK: u64 = 1 << 20;

impl KarySum {
    /// Window trees: step `t` with value `x`; the estimate.
    ///
    /// A window `[s, t]` is the current block's prefix (its roots, summed in `total`) less
    /// the block's leaves before `s`, or the prefix plus the previous block's leaves from
    /// `s` on. Either way its left end lies in a complete top-level node (`k^top <= W`), so
    /// the optimal estimate of that part is a difference of two running sums of the leaves'
    /// top-down estimates ([`fill_leaves`](Self::fill_leaves)): `O(1)` a step, where a walk
    /// down the levels was `O(levels)`.
    pub(super) fn step_window(&mut self, x: f64, w: u64) -> Result<f64> {
        let (k, top, block) = (self.k, self.levels as usize - 1, self.level_len[0]);
        let (b, p) = self.split(self.t, block);
        let cur = (b & 1) as usize;
        self.ensure_blocks(cur);
        if p == 0 {
            self.open.iter_mut().for_each(|v| *v = 0.0);
            self.kids.iter_mut().for_each(|v| *v = 0.0);
            self.total = 0.0;
        }
        let (mut v, mut idx) = (x, p);
        for li in 0..=top {
            // The node's index at its level, over the whole stream.
            let m = b * self.level_len[li] + idx;
            let noisy = self.release(v, li, m)?;
            let (parent, digit) = self.split(idx, k);
            let i = idx as usize;
            // The node's optimal estimate from its subtree (its children just completed,
            // their estimates summed in `kids` in order).
            let z = match &self.best {
                Some(best) if li > 0 => best.combine(li, noisy, self.kids[li]),
                _ => noisy,
            };
            self.kids[li] = 0.0;
            self.blocks[cur][li][i] = z;
            // The block's prefix: this node, or (when it completes its parent) the parent
            // in its children's place.
            if li == top {
                self.open[li] += z;
                self.total += z;
                self.fill_leaves(cur, i);
                break;
            }
            self.kids[li + 1] += z;
            self.acc[li + 1] += v;
            if digit != k - 1 {
                self.open[li] += z;
                self.total += z;
                break;
            }
            self.total -= self.open[li];
            self.open[li] = 0.0;
            v = self.acc[li + 1];
            self.acc[li + 1] = 0.0;
            idx = parent;
        }
        let start = (self.t + 1).saturating_sub(w);
        let here = b * block;
        Ok(if start == here {
            self.total
        } else if start > here {
            self.total - self.leaves[cur][(start - here) as usize]
        } else {
            let prev = &self.leaves[1 - cur];
            let a = (start + block - here) as usize;
            (prev[block as usize] - prev[a]) + self.total
        })
    }

    /// The node estimates and leaf sums of the block of parity `cur`, allocated at its
    /// first use (choosing an arity builds every candidate, most never stepped).
    fn ensure_blocks(&mut self, cur: usize) {
        if self.blocks[cur].is_empty() {
            self.blocks[cur] = self
                .level_len
                .iter()
                .map(|&n| vec![0.0; n as usize])
                .collect();
            self.leaves[cur] = vec![0.0; self.level_len[0] as usize + 1];
        }
    }

    /// `(v / d, v % d)` for `d` a power of the arity: by shifts when the arity is a power of
    /// two.
    #[inline]
    fn split(&self, v: u64, d: u64) -> (u64, u64) {
        if self.k.is_power_of_two() {
            (v >> d.trailing_zeros(), v & (d - 1))
        } else {
            (v / d, v % d)
        }
    }

    /// The top-down (Honaker) estimates of the leaves of top-level node `r` of the block of
    /// parity `cur`, just completed, added to that block's running sums of leaves: each
    /// child's estimate is its bottom-up one plus an equal share of its parent's residual
    /// (`kary::honaker`), from the node down to its leaves.
    fn fill_leaves(&mut self, cur: usize, r: usize) {
        let (k, top) = (self.k as usize, self.levels as usize - 1);
        let span = self.k.pow(top as u32) as usize;
        let z = &self.blocks[cur];
        let u = &mut self.down;
        u.resize(span, 0.0);
        u[0] = z[top][r];
        // Dividing by a power of two is multiplying by its inverse, bit for bit.
        let (kf, inv, pow2) = (k as f64, 1.0 / k as f64, k.is_power_of_two());
        let mut count = 1usize; // nodes of r's subtree at level l
        for l in (1..=top).rev() {
            let below = &z[l - 1][r * count * k..(r + 1) * count * k];
            // Children are written at j k.. after their parent j is read (j descending).
            for j in (0..count).rev() {
                let kids = &below[j * k..(j + 1) * k];
                let gap = u[j] - kids.iter().sum::<f64>();
                let delta = if pow2 { gap * inv } else { gap / kf };
                for (c, &zc) in kids.iter().enumerate() {
                    u[j * k + c] = zc + delta;
                }
            }
            count *= k;
        }
        let sums = &mut self.leaves[cur][r * span..=(r + 1) * span];
        let mut acc = sums[0];
        for (s, &leaf) in sums[1..].iter_mut().zip(u.iter()) {
            acc += leaf;
            *s = acc;
        }
    }

    /// A window sum's chunk: the steps up to the next block boundary in order, then the
    /// whole blocks in parallel segments, then the rest in order. A segment's state is the
    /// block before it and nothing else (every prefix sum and forming node is back to zero
    /// at a block boundary), so a copy that replays that block computes the same numbers
    /// in the same order as one pass: the bits do not depend on the threads.
    pub(super) fn window_blocks(&mut self, chunk: &[f64], col: &mut [f64]) -> Result<()> {
        use rayon::prelude::*;
        let block = self.block();
        let head = ((block - self.t % block) % block).min(chunk.len() as u64) as usize;
        for (o, &x) in col[..head].iter_mut().zip(&chunk[..head]) {
            *o = self.step(x)?;
        }
        let (rest, rest_out) = (&chunk[head..], &mut col[head..]);
        let blocks = rest.len() as u64 / block;
        let threads = rayon::current_num_threads() as u64;
        let per = blocks.div_ceil(threads.max(1)).max(SEGMENT_BLOCKS);
        let done = if threads > 1 && blocks >= 2 * per.min(blocks) && block <= PARALLEL_BLOCK {
            let seg = (per * block) as usize;
            let whole = (blocks * block) as usize;
            let base = self.t;
            let states: Vec<Result<KarySum>> = rest_out[..whole]
                .par_chunks_mut(seg)
                .enumerate()
                .map(|(i, out)| {
                    let from = i * seg;
                    let mut m = self.clone();
                    if from > 0 {
                        // Replay the block before the segment (its outputs are dropped).
                        m.t = base + from as u64 - block;
                        m.acc.iter_mut().for_each(|v| *v = 0.0);
                        m.run_block(&rest[from - block as usize..from], None)?;
                    }
                    m.run_blocks(&rest[from..from + out.len()], out)?;
                    Ok(m)
                })
                .collect();
            let mut last = None;
            for st in states {
                last = Some(st?);
            }
            if let Some(m) = last {
                *self = m;
            }
            whole
        } else {
            0
        };
        self.run_blocks(&rest[done..], &mut rest_out[done..])
    }

    /// Steps from a block boundary: the whole blocks a block at a time
    /// ([`run_block`](Self::run_block)), the rest one step at a time.
    fn run_blocks(&mut self, xs: &[f64], out: &mut [f64]) -> Result<()> {
        let block = self.level_len[0] as usize;
        let whole = xs.len() / block * block;
        for (x, o) in xs[..whole]
            .chunks_exact(block)
            .zip(out.chunks_exact_mut(block))
        {
            self.run_block(x, Some(o))?;
        }
        for (o, &x) in out[whole..].iter_mut().zip(&xs[whole..]) {
            *o = self.step(x)?;
        }
        Ok(())
    }

    /// A window tree's whole block `xs` from its first step (`out`: its estimates, `None`
    /// for a segment's replay), a level at a time: every node's release and optimal
    /// estimate, the leaves' running sums, then each step's prefix total and window. The
    /// same operations in the same order as [`step_window`](Self::step_window) (same
    /// bits), without the per-step bookkeeping; one step at a time when the block's draws
    /// are not all drawn.
    fn run_block(&mut self, xs: &[f64], mut out: Option<&mut [f64]>) -> Result<()> {
        let Kind::Window { w } = self.kind else {
            return Err(Error::Numerical("run_block is for window trees".into()));
        };
        let (k, top, block) = (self.k as usize, self.levels as usize - 1, self.level_len[0]);
        let b = self.t / block;
        let drawn = self
            .level_len
            .iter()
            .enumerate()
            .all(|(l, &n)| self.draws[l].slice(b * n, n as usize).is_some());
        #[cfg(test)]
        let drawn = drawn && self.record.is_none() && self.heard.is_none();
        if !drawn || self.best.is_none() || !self.t.is_multiple_of(block) {
            for (i, &x) in xs.iter().enumerate() {
                let e = self.step(x)?;
                if let Some(o) = out.as_deref_mut() {
                    o[i] = e;
                }
            }
            return Ok(());
        }
        let cur = (b & 1) as usize;
        self.ensure_blocks(cur);
        let Some(best) = &self.best else {
            return Ok(());
        };
        let zs = &mut self.blocks[cur];
        // Level 0: the leaves' releases; above, each node's true value (its children's, in
        // order, from zero), its release and its optimal estimate.
        let mut vals = std::mem::take(&mut self.down);
        vals.clear();
        vals.extend_from_slice(xs);
        for (l, &n) in self.level_len.iter().enumerate() {
            let (gamma, inv) = self.noise[l].grid();
            let z = self.draws[l].slice(b * n, n as usize).unwrap_or_default();
            if l == 0 {
                for ((o, &v), &d) in zs[0].iter_mut().zip(xs).zip(z) {
                    *o = ((v * inv).round() + d as f64) * gamma;
                }
                continue;
            }
            let (below, here) = zs.split_at_mut(l);
            let kids = &below[l - 1];
            for (i, (o, &d)) in here[0].iter_mut().zip(z).enumerate() {
                let (mut v, mut ks) = (0.0f64, 0.0f64);
                for c in i * k..(i + 1) * k {
                    v += vals[c];
                    ks += kids[c];
                }
                vals[i] = v;
                let y = ((v * inv).round() + d as f64) * gamma;
                *o = best.combine(l, y, ks);
            }
            vals.truncate(n as usize);
        }
        self.down = vals;
        for r in 0..k {
            self.fill_leaves(cur, r);
        }
        // Each step's prefix total, as step_window keeps it, and its window.
        let (zs, leaves) = (&self.blocks[cur], &self.leaves);
        let (mut total, open) = (0.0f64, &mut self.open);
        open.iter_mut().for_each(|v| *v = 0.0);
        let here = b * block;
        let pow2 = k.is_power_of_two();
        for p in 0..block {
            let (mut li, mut idx) = (0usize, p as usize);
            loop {
                let z = zs[li][idx];
                let (parent, digit) = if pow2 {
                    (idx >> k.trailing_zeros(), idx & (k - 1))
                } else {
                    (idx / k, idx % k)
                };
                if li == top || digit != k - 1 {
                    open[li] += z;
                    total += z;
                    break;
                }
                total -= open[li];
                open[li] = 0.0;
                li += 1;
                idx = parent;
            }
            if let Some(o) = out.as_deref_mut() {
                let t = here + p;
                let start = (t + 1).saturating_sub(w);
                o[p as usize] = if start == here {
                    total
                } else if start > here {
                    total - leaves[cur][(start - here) as usize]
                } else {
                    let prev = &leaves[1 - cur];
                    let a = (start + block - here) as usize;
                    (prev[block as usize] - prev[a]) + total
                };
            }
        }
        self.total = total;
        self.kids.iter_mut().for_each(|v| *v = 0.0);
        self.acc.iter_mut().for_each(|v| *v = 0.0);
        self.t += block;
        Ok(())
    }
}
