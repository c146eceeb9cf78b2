//! The `window` kernel's fast CPU path, one block of `2^h` steps at a time: every level's
//! node values and releases in flat arrays (a node's noise draw found by a formula, not a
//! walk of the forest), then per step its window from prefix and suffix sums of the
//! releases. Everything one block touches (about 6 `2^h` doubles) stays in the core's
//! cache. The same numbers as [`window_sums`](super::cpu::window_sums) bit for bit: the
//! node values are the same additions; with exact sums (every release a grid multiple
//! and every sum of releases the bulk path forms exact) any order of adding releases
//! gives the same bits, and without them each window adds its nodes left to right.

use crate::KernelError;

/// Nodes of levels `0..=h` completing in the first `n` steps of a block (`n <= 2^h`).
pub fn block_nodes(n: usize, h: u32) -> usize {
    (0..=h.min(63)).map(|k| n >> k).sum()
}

/// The position of node (level `k`, index `m`) of a block in the block's completion order
/// (at each step the levels that close, bottom up): it completes at step
/// `t = (m + 1) 2^k - 1`, after the `sum_j t >> j = 2t - popcount(t)` nodes of earlier
/// steps and the `k` below it, and `popcount(t) = popcount(m) + k`.
#[inline(always)]
pub fn draw_index(k: u32, m: usize) -> usize {
    ((m + 1) << (k + 1)) - 2 - m.count_ones() as usize
}

/// Per-thread state of the fast path: the current block's levels, the previous block's
/// suffix sums (exact sums) or releases (otherwise), reused from block to block.
#[derive(Debug, Clone)]
pub struct Blocks {
    h: u32,
    /// The longest window (the outputs of [`block`](Self::block)).
    w: usize,
    /// Per level, its release grid and the grid's inverse.
    grids: Vec<(f64, f64)>,
    exact: bool,
    /// Start of level `k` in `val` and `rel` (`h + 2` entries).
    offs: Vec<usize>,
    /// Node values of levels `1..` (level 0 is the input), at `offs[k] - offs[1]`.
    val: Vec<f64>,
    rel: Vec<f64>,
    rel_prev: Vec<f64>,
    pre: Vec<f64>,
    suf: Vec<f64>,
    suf_prev: Vec<f64>,
    /// The step the held previous block starts at.
    prev: Option<u64>,
}

impl Blocks {
    /// Blocks of `2^h` steps, windows of `w <= 2^h` steps, releases on the grid `gamma` (a
    /// power of two); `exact`: every sum of releases is exact (the caller's calibration
    /// guarantees it), so prefix and suffix sums may stand in for left-to-right sums.
    pub fn new(h: u32, w: u64, gamma: f64, exact: bool) -> Result<Self, KernelError> {
        Self::with_grids(h, w, &vec![gamma; h.min(40) as usize + 1], exact)
    }

    /// [`new`](Self::new) with a grid per level `0..=h` (`gammas[k]`, powers of two): the
    /// all-window sums give each level its own share of the budget. Windows of any length
    /// up to `w` ([`block_windows`](Self::block_windows)).
    pub fn with_grids(h: u32, w: u64, gammas: &[f64], exact: bool) -> Result<Self, KernelError> {
        if h > 40 || w == 0 || w > 1 << h {
            return Err(KernelError::Input(format!(
                "window blocks: W = {w} with h = {h} (h at most 40, 1 <= W <= 2^h)"
            )));
        }
        if gammas.len() != h as usize + 1 {
            return Err(KernelError::Input(format!(
                "window blocks: {} grids for levels 0..={h}",
                gammas.len()
            )));
        }
        if let Some(g) = gammas
            .iter()
            .find(|g| !(**g > 0.0 && g.is_finite() && g.log2().fract() == 0.0))
        {
            return Err(KernelError::Input(format!(
                "window blocks: grid {g} is not a power of two"
            )));
        }
        let b = 1usize << h;
        let mut offs = Vec::with_capacity(h as usize + 2);
        let mut o = 0;
        for k in 0..=h {
            offs.push(o);
            o += b >> k;
        }
        offs.push(o);
        Ok(Self {
            h,
            w: w as usize,
            grids: gammas.iter().map(|&g| (g, 1.0 / g)).collect(),
            exact,
            val: vec![0.0; o - b],
            rel: vec![0.0; o],
            rel_prev: if exact { Vec::new() } else { vec![0.0; o] },
            pre: vec![0.0; b],
            suf: if exact { vec![0.0; b] } else { Vec::new() },
            suf_prev: if exact { vec![0.0; b] } else { Vec::new() },
            offs,
            prev: None,
        })
    }

    /// Forgets the previous block (the next block starts a new run).
    pub fn reset(&mut self) {
        self.prev = None;
    }

    /// The block starting at step `sb` (a multiple of `2^h`): its values `xs` (`2^h` of
    /// them, fewer only for the last block of a series), the draws `z` of its nodes in
    /// completion order ([`block_nodes`] of them), and the window sums of its steps
    /// `o_from..xs.len()` into `out`. A window reaching into the previous block needs that
    /// block to have been the previous call.
    pub fn block(
        &mut self,
        sb: u64,
        xs: &[f64],
        z: &[i64],
        o_from: usize,
        out: &mut [f64],
    ) -> Result<(), KernelError> {
        let w = self.w as u64;
        self.block_windows(sb, xs, z, o_from, &mut [(w, out)])
    }

    /// [`block`](Self::block) for several windows at once (each at most the `w` of
    /// [`with_grids`](Self::with_grids)): the levels and their sums once, then each
    /// window's sums of steps `o_from..` into its slice.
    pub fn block_windows(
        &mut self,
        sb: u64,
        xs: &[f64],
        z: &[i64],
        o_from: usize,
        outs: &mut [(u64, &mut [f64])],
    ) -> Result<(), KernelError> {
        let (b, n) = (1usize << self.h, xs.len());
        let bad = |m: String| Err(KernelError::Input(format!("window block at {sb}: {m}")));
        if !sb.is_multiple_of(b as u64) || n == 0 || n > b {
            return bad(format!("{n} steps in blocks of {b}"));
        }
        let bad_out = outs.iter().find(|(w, out)| {
            *w == 0 || *w > self.w as u64 || out.len() != n.saturating_sub(o_from)
        });
        if z.len() != block_nodes(n, self.h) || o_from > n || bad_out.is_some() {
            return bad(format!(
                "{} draws, outputs {o_from}.. into {:?} (want {} draws, {} outputs, windows \
                 1..={})",
                z.len(),
                outs.iter().map(|(w, o)| (*w, o.len())).collect::<Vec<_>>(),
                block_nodes(n, self.h),
                n.saturating_sub(o_from),
                self.w
            ));
        }
        let longest = outs.iter().map(|(w, _)| *w as usize).max().unwrap_or(1);
        let reaches_back = sb > 0 && o_from + 1 < longest;
        if reaches_back && self.prev != sb.checked_sub(b as u64) {
            return bad("the previous block was not computed first".into());
        }
        self.levels(xs, z);
        if self.exact {
            self.prefix_suffix(n);
        }
        if o_from < n {
            for (w, out) in outs.iter_mut() {
                if self.exact && n == b {
                    self.windows_exact(sb, o_from, out, *w as usize);
                } else {
                    self.windows_left_to_right(sb, o_from, out, *w as usize);
                }
            }
        }
        if n == b {
            if self.exact {
                std::mem::swap(&mut self.suf, &mut self.suf_prev);
            } else {
                std::mem::swap(&mut self.rel, &mut self.rel_prev);
            }
            self.prev = Some(sb);
        } else {
            self.prev = None;
        }
        Ok(())
    }

    /// Node values (children added left + right) and releases: levels 0 to 2 four steps
    /// at a time (a group's seven draws are consecutive in completion order), then the
    /// rest level by level.
    fn levels(&mut self, xs: &[f64], z: &[i64]) {
        let grids = &self.grids;
        let at_level = |k: usize| {
            let (g, inv) = grids[k];
            move |v: f64, z: i64| g * ((v * inv).round() + z as f64)
        };
        let n = xs.len();
        let quads = if self.h >= 2 { n / 4 } else { 0 };
        if quads > 0 {
            let (release, release1, release2) = (at_level(0), at_level(1), at_level(2));
            let (o1, o2) = (self.offs[1], self.offs[2]);
            let (rel0, rest) = self.rel.split_at_mut(o1);
            let (rel1, rel2) = rest.split_at_mut(o2 - o1);
            let (val1, val2) = self.val.split_at_mut(o2 - o1);
            for (q, ((((x, r0), (r1, v1)), r2), v2)) in xs
                .chunks_exact(4)
                .zip(rel0.chunks_exact_mut(4))
                .zip(rel1.chunks_exact_mut(2).zip(val1.chunks_exact_mut(2)))
                .zip(rel2.iter_mut())
                .zip(val2.iter_mut())
                .enumerate()
            {
                // Steps 4q .. 4q + 3 close, in order: (0, 4q); (0, 4q + 1), (1, 2q);
                // (0, 4q + 2); (0, 4q + 3), (1, 2q + 1), (2, q).
                let at = draw_index(0, 4 * q);
                let zq = &z[at..at + 7];
                let (a, c) = (x[0] + x[1], x[2] + x[3]);
                *v2 = a + c;
                r0[0] = release(x[0], zq[0]);
                r0[1] = release(x[1], zq[1]);
                r0[2] = release(x[2], zq[3]);
                r0[3] = release(x[3], zq[4]);
                v1[0] = a;
                v1[1] = c;
                r1[0] = release1(a, zq[2]);
                r1[1] = release1(c, zq[5]);
                *r2 = release2(*v2, zq[6]);
            }
        }
        let release = at_level(0);
        for (m, (r, &x)) in self.rel[..n].iter_mut().zip(xs).enumerate().skip(4 * quads) {
            *r = release(x, z[draw_index(0, m)]);
        }
        let base = self.offs[1];
        for k in 1..=self.h {
            let len = n >> k;
            let done = if k <= 2 { quads << (2 - k) } else { 0 };
            if len == 0 {
                break;
            }
            let (o, ob) = (self.offs[k as usize], self.offs[k as usize - 1]);
            let (lower, upper) = self.val.split_at_mut(o - base);
            let below: &[f64] = if k == 1 { xs } else { &lower[ob - base..] };
            let vals = &mut upper[..len];
            let release = at_level(k as usize);
            let rels = &mut self.rel[o..o + len];
            for (m, ((v, r), pair)) in vals
                .iter_mut()
                .zip(rels.iter_mut())
                .zip(below.chunks_exact(2))
                .enumerate()
                .skip(done)
            {
                *v = pair[0] + pair[1];
                *r = release(*v, z[draw_index(k, m)]);
            }
        }
    }

    /// Prefix sums `pre[o]` (the released nodes of `[0, o]`) over the block's first `n`
    /// steps, and suffix sums `suf[o]` (of `[o, 2^h - 1]`) when the block is whole.
    ///
    /// `pre[o]` is `pre[o - s] + node` for the node of level `k = tz(o + 1)` ending at `o`
    /// (`s = 2^k`), and `o - s + 1` has more trailing zeros than `o + 1`: computed level by
    /// level from the top, no sum waits for the one just before it (step by step, every
    /// other sum waited on the previous one's store and addition).
    fn prefix_suffix(&mut self, n: usize) {
        let (rel, offs) = (&self.rel, &self.offs);
        let pre = &mut self.pre;
        for k in (0..=self.h as usize).rev() {
            let s = 1usize << k;
            let nodes = &rel[offs[k]..offs[k] + (n >> k)];
            let Some(&first) = nodes.first() else {
                continue;
            };
            pre[s - 1] = first;
            // Node j = 2 (i + 1) ends at o = (j + 1) s - 1; the sum before it ends at
            // j s - 1 = o - s: the first entry of chunk i of 2s entries from 2s - 1.
            if let Some(tail) = pre.get_mut(2 * s - 1..n) {
                for (c, &node) in tail.chunks_mut(2 * s).zip(nodes.iter().skip(2).step_by(2)) {
                    c[s] = c[0] + node;
                }
            }
        }
        let b = 1usize << self.h;
        if n < b {
            return;
        }
        let suf = &mut self.suf;
        suf[0] = rel[offs[self.h as usize]];
        // suf[o] = node + suf[o + s] for the node i (odd) of level k starting at o = i s,
        // the last node alone: chunk i' of 2s entries from s starts at o = (2 i' + 1) s.
        for k in (0..self.h as usize).rev() {
            let s = 1usize << k;
            let nodes = &rel[offs[k]..offs[k] + (b >> k)];
            suf[b - s] = nodes[(b >> k) - 1];
            for (c, &node) in suf[s..b - s]
                .chunks_exact_mut(2 * s)
                .zip(nodes.iter().skip(1).step_by(2))
            {
                c[0] = node + c[s];
            }
        }
    }

    /// Windows of a whole block from prefix and suffix sums (exact sums only). A window
    /// inside the block splits at the highest bit `p` where its ends differ: the right part
    /// is a difference of prefix sums, the left a difference of suffix sums, or one node of
    /// level `p` when it is exactly that node.
    fn windows_exact(&self, sb: u64, o_from: usize, out: &mut [f64], w: usize) {
        let b = 1usize << self.h;
        let (pre, suf, sufp) = (&self.pre, &self.suf, &self.suf_prev);
        // Steps o + 1 < w reach into the previous block (its suffix sum plus this block's
        // prefix sum), one loop with no branch per step (all of them when W = 2^h).
        let reach = (w - 1).max(o_from);
        let (back, inside) = out.split_at_mut(reach - o_from);
        let pre_back = &pre[o_from..reach];
        if back.is_empty() {
            // No output reaches back (the previous block may not be held).
        } else if sb == 0 {
            back.copy_from_slice(pre_back);
        } else {
            let suf_back = &sufp[b + o_from + 1 - w..b + reach + 1 - w];
            for ((d, &p), &s) in back.iter_mut().zip(pre_back).zip(suf_back) {
                *d = s + p;
            }
        }
        for (d, o) in inside.iter_mut().zip(reach..) {
            *d = if o + 1 == w {
                pre[o]
            } else {
                // lo >= 1 and lo < co <= o + 1: pre[co - 1] exists; co = 2^h only at the
                // block's last step.
                let lo = o + 1 - w;
                let p = (lo ^ (o + 1)).ilog2();
                let co = ((o + 1) >> p) << p;
                let right = pre[o] - pre[co - 1];
                let left = if lo == co - (1 << p) {
                    // The left part is one node of level p, and the block's suffix from
                    // `lo` (aligned to more than 2^p) starts with a larger one: only when
                    // W <= 2^(h-1) (the all-window sums' shorter windows).
                    self.rel[self.offs[p as usize] + (lo >> p)]
                } else {
                    suf[lo] - if co < b { suf[co] } else { 0.0 }
                };
                left + right
            };
        }
    }

    /// Windows adding their released nodes left to right (the online order): the maximal
    /// aligned nodes of level `<= h`, first the previous block's, then this block's.
    fn windows_left_to_right(&self, sb: u64, o_from: usize, out: &mut [f64], w: usize) {
        let b = 1usize << self.h;
        let (offs, h) = (&self.offs, self.h);
        let add = |rel: &[f64], mut s: f64, mut at: usize, u: usize| {
            while at <= u {
                let fits = (u - at + 1).ilog2();
                let k = at.trailing_zeros().min(h).min(fits);
                s += rel[offs[k as usize] + (at >> k)];
                at += 1 << k;
            }
            s
        };
        for (d, o) in out.iter_mut().zip(o_from..) {
            *d = if o + 1 >= w || sb == 0 {
                add(&self.rel, 0.0, (o + 1).saturating_sub(w), o)
            } else if self.exact {
                // Partial last block, window from the previous one: its suffix sum.
                add(&self.rel, self.suf_prev[b + o + 1 - w], 0, o)
            } else {
                let s = add(&self.rel_prev, 0.0, b + o + 1 - w, b - 1);
                add(&self.rel, s, 0, o)
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::window::WindowChunk;
    use crate::window::cpu::window_sums;

    /// Draws that, with the values below, keep every sum exact on the grid 1/4.
    fn chunk(len: usize, h: u32, seed: u64) -> (Vec<f64>, Vec<i64>) {
        let mut s = seed;
        let mut next = || {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            s >> 33
        };
        let xs: Vec<f64> = (0..len).map(|_| (next() % 1000) as f64 / 7.0).collect();
        let nodes: usize = (0..=h).map(|k| len >> k).sum();
        let z = (0..nodes).map(|_| (next() % 2001) as i64 - 1000).collect();
        (xs, z)
    }

    /// Block by block, from any first output, exact or left to right, the plain twin's
    /// numbers bit for bit; a series ending inside a block too.
    #[test]
    fn blocks_equal_the_plain_twin() {
        // W <= 2^(h-1) too (windows that are one node below a larger aligned one).
        for (h, w) in [
            (0u32, 1u64),
            (3, 5),
            (3, 8),
            (6, 33),
            (6, 64),
            (10, 1000),
            (4, 1),
            (6, 7),
            (10, 100),
        ] {
            let b = 1usize << h;
            for len in [7 * b, 7 * b + b / 2 + 1] {
                let (xs, z) = chunk(len, h, u64::from(h) * 31 + w);
                let gamma = 0.25;
                let c = WindowChunk {
                    h,
                    w,
                    gamma,
                    from: 0,
                    out_from: 0,
                    xs: &xs,
                    z: &z,
                };
                let want = window_sums(&c).expect("plain");
                for exact in [true, false] {
                    let mut bl = Blocks::new(h, w, gamma, exact).expect("new");
                    let mut got = vec![f64::NAN; len];
                    let mut id = 0;
                    for (i, x) in xs.chunks(b).enumerate() {
                        // The ids of the nodes of block i: the plain twin's order.
                        let cnt = block_nodes(x.len(), h);
                        let sb = i * b;
                        // Start outputs late in the first block (the rebuild block).
                        let o_from = usize::from(i == 0) * (x.len() / 2);
                        let out = &mut got[sb + o_from..sb + x.len()];
                        bl.block(sb as u64, x, &z[id..id + cnt], o_from, out)
                            .expect("block");
                        id += cnt;
                    }
                    // A block computed first whose outputs all stay inside it (no
                    // previous block held): its last step alone.
                    let mut fresh = Blocks::new(h, w, gamma, exact).expect("new");
                    let first = block_nodes(b, h);
                    let mut last = [f64::NAN];
                    fresh
                        .block(
                            b as u64,
                            &xs[b..2 * b],
                            &z[first..2 * first],
                            b - 1,
                            &mut last,
                        )
                        .expect("block");
                    assert_eq!(last[0].to_bits(), want[2 * b - 1].to_bits(), "h {h} W {w}");
                    let skipped = b.min(len) / 2;
                    for (j, (a, e)) in got.iter().zip(&want).enumerate().skip(skipped) {
                        assert_eq!(
                            a.to_bits(),
                            e.to_bits(),
                            "h {h} W {w} exact {exact} step {j}"
                        );
                    }
                }
            }
        }
    }

    /// Several windows at once with a grid per level equal their sums written out from
    /// the definition: node values added left + right, node `(k, m)` released on level
    /// `k`'s grid, each window's maximal aligned nodes added left to right. Exact sums
    /// (grids of 1/4 to 2, small values) and left to right.
    #[test]
    fn several_windows_with_a_grid_per_level() {
        let h = 4u32;
        let b = 1usize << h;
        let len = 5 * b;
        let (xs, z) = chunk(len, h, 77);
        let gammas = [0.25, 0.5, 0.25, 1.0, 2.0];
        // Node values and releases by level, over the whole series.
        let mut val = vec![xs.clone()];
        for k in 1..=h as usize {
            let v: Vec<f64> = val[k - 1].chunks_exact(2).map(|p| p[0] + p[1]).collect();
            val.push(v);
        }
        let mut rel: Vec<Vec<f64>> = val.iter().map(|v| vec![0.0; v.len()]).collect();
        let mut id = 0;
        for t in 0..len {
            for k in 0..=(t + 1).trailing_zeros().min(h) as usize {
                let (m, g) = (t >> k, gammas[k]);
                rel[k][m] = g * ((val[k][m] / g).round() + z[id] as f64);
                id += 1;
            }
        }
        let window = |w: usize, u: usize| {
            let (mut s, mut at) = (0.0, (u + 1).saturating_sub(w));
            while at <= u {
                let k = at.trailing_zeros().min(h).min((u - at + 1).ilog2());
                s += rel[k as usize][at >> k];
                at += 1 << k;
            }
            s
        };
        let ws = [1u64, 3, 7, 16];
        for exact in [true, false] {
            let mut bl = Blocks::with_grids(h, 16, &gammas, exact).expect("grids");
            let mut got = vec![vec![f64::NAN; len]; ws.len()];
            let mut id = 0;
            for (i, x) in xs.chunks(b).enumerate() {
                let cnt = block_nodes(x.len(), h);
                let mut outs: Vec<(u64, &mut [f64])> = ws
                    .iter()
                    .zip(got.iter_mut())
                    .map(|(&w, g)| (w, &mut g[i * b..(i + 1) * b]))
                    .collect();
                bl.block_windows((i * b) as u64, x, &z[id..id + cnt], 0, &mut outs)
                    .expect("block");
                id += cnt;
            }
            for (&w, col) in ws.iter().zip(&got) {
                for (u, v) in col.iter().enumerate() {
                    let want = window(w as usize, u);
                    assert_eq!(v.to_bits(), want.to_bits(), "W {w} exact {exact} step {u}");
                }
            }
        }
        // A window past the longest, a grid that is not a power of two, a grid missing.
        let mut bl = Blocks::with_grids(h, 8, &gammas, true).expect("grids");
        let mut out = vec![0.0; b];
        let e = bl
            .block_windows(
                0,
                &xs[..b],
                &z[..block_nodes(b, h)],
                0,
                &mut [(9, &mut out)],
            )
            .expect_err("W 9 > 8");
        assert!(e.to_string().contains("windows 1..=8"), "{e}");
        assert!(Blocks::with_grids(h, 8, &[0.25, 0.5, 0.3, 1.0, 2.0], true).is_err());
        assert!(Blocks::with_grids(h, 8, &gammas[..4], true).is_err());
    }

    /// The draw index formula is the completion order.
    #[test]
    fn draw_index_is_the_completion_order() {
        let h = 5;
        let mut id = 0;
        for t in 0usize..32 {
            for k in 0..=(t + 1).trailing_zeros().min(h) {
                assert_eq!(draw_index(k, t >> k), id, "node ({k}, {})", t >> k);
                id += 1;
            }
        }
        assert_eq!(id, block_nodes(32, h));
    }

    /// Nanoseconds per step of the block kernel alone, exact sums, `W = 1024` and `1000`
    /// (`cargo test --release -p kinsey-kernels --lib window::blocks::tests::block_speed --
    /// --ignored --nocapture`).
    #[test]
    #[ignore]
    fn block_speed() {
        let h = 10;
        let b = 1usize << h;
        let (xs, z) = chunk(b, h, 5);
        let mut out = vec![0.0; b];
        for w in [1024u64, 1000] {
            let mut bl = Blocks::new(h, w, 0.25, true).expect("new");
            let n = 20_000u64;
            let per =
                |t: std::time::Instant| t.elapsed().as_secs_f64() / (n as f64 * b as f64) * 1e9;
            let t = std::time::Instant::now();
            for i in 0..n {
                bl.block(i * b as u64, &xs, &z, 0, &mut out).expect("block");
            }
            println!("W = {w}: {:.2} ns/step ({})", per(t), out[9]);
            // Its parts: the levels, the prefix/suffix sums, the windows.
            let t = std::time::Instant::now();
            for _ in 0..n {
                bl.levels(&xs, &z);
            }
            let a = per(t);
            let t = std::time::Instant::now();
            for _ in 0..n {
                bl.prefix_suffix(b);
            }
            let c = per(t);
            let t = std::time::Instant::now();
            for i in 0..n {
                bl.windows_exact(i * b as u64, 0, &mut out, w as usize);
            }
            let d = per(t);
            println!(
                "levels {a:.2} prefix/suffix {c:.2} windows {d:.2} ({})",
                out[3]
            );
        }
    }

    /// Bad shapes and a missing previous block are refused, not summed.
    #[test]
    fn bad_blocks_are_refused() {
        assert!(Blocks::new(3, 9, 1.0, true).is_err());
        assert!(Blocks::new(3, 8, 0.3, true).is_err());
        let mut bl = Blocks::new(3, 8, 1.0, true).expect("new");
        let (xs, z) = chunk(8, 3, 1);
        let mut out = vec![0.0; 8];
        assert!(
            bl.block(8, &xs, &z, 0, &mut out).is_err(),
            "no previous block"
        );
        assert!(bl.block(3, &xs, &z, 0, &mut out).is_err(), "misaligned");
        assert!(bl.block(0, &xs, &z[1..], 0, &mut out).is_err(), "draws");
        assert!(bl.block(0, &xs, &z, 0, &mut out).is_ok());
        assert!(bl.block(8, &xs, &z, 0, &mut out).is_ok());
    }
}
