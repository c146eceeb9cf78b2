//! The dyadic forest every tree mechanism shares: nodes completing at each step, the
//! released values kept per level, and the canonical decomposition of an interval.
//! Node (level `k`, index `m`) covers steps `[m 2^k, (m + 1) 2^k - 1]`; nodes are numbered
//! in the order they complete (at each step, the levels that close, bottom up), which is
//! also their noise id.

/// The nodes completing at one step, bottom up, with their true values.
#[derive(Debug, Clone)]
pub(super) struct Forest {
    /// Highest level (nodes above are not formed).
    pub(super) h: u32,
    /// True value of the left child waiting for its sibling, per level.
    pub(super) pending: Vec<f64>,
    /// Weight of a left child when merged with its right sibling, per child level.
    pub(super) left_weight: Vec<f64>,
}

impl Forest {
    pub(super) fn new(h: u32, alpha: f64) -> Self {
        let mut left_weight = Vec::with_capacity(h as usize + 1);
        let mut a = alpha;
        for _ in 0..=h {
            left_weight.push(a); // alpha^(2^k): the right sibling of a level-k node has 2^k steps
            a *= a;
        }
        Self {
            h,
            pending: vec![0.0; h as usize + 1],
            left_weight,
        }
    }

    /// Step `t` with value `x`: calls `emit(k, m, true value)` for every node that completes.
    #[inline]
    pub(super) fn step(&mut self, t: u64, x: f64, emit: impl FnMut(u32, u64, f64)) {
        self.step_from(0, t, x, emit);
    }

    /// The part of step `t` from level `k0` up, given the level-`k0` node completing at `t`
    /// (its true value `x`): what `step` does once it reaches that level.
    #[inline]
    pub(super) fn step_from(
        &mut self,
        k0: u32,
        t: u64,
        x: f64,
        mut emit: impl FnMut(u32, u64, f64),
    ) {
        let mut v = x;
        let mut k = k0;
        loop {
            let m = t >> k;
            emit(k, m, v);
            if k == self.h {
                break;
            }
            if m & 1 == 0 {
                self.pending[k as usize] = v;
                break;
            }
            let w = self.left_weight[k as usize];
            v = if w == 1.0 {
                self.pending[k as usize] + v
            } else {
                w * self.pending[k as usize] + v
            };
            k += 1;
        }
    }
}

/// The noise id of the first node completing at step `t` (the GPU passes number nodes the
/// same way).
pub(super) use kinsey_kernels::window::running::first_id;

/// The outputs of steps `out_from ..` (each column one slice of equal length) cut into
/// segments aligned to `seg` in step numbers (the first may start late), for the bulk
/// paths to run in parallel: per segment its first step and its slice of every column.
pub(super) fn segments(
    out_from: u64,
    seg: u64,
    cols: Vec<&mut [f64]>,
) -> Vec<(u64, Vec<&mut [f64]>)> {
    let len = cols.first().map_or(0, |c| c.len());
    let mut rest = cols;
    let mut pieces = Vec::new();
    let mut at = out_from;
    let mut left = len;
    while left > 0 {
        let n = ((((at / seg) + 1) * seg - at) as usize).min(left);
        let mut heads = Vec::with_capacity(rest.len());
        for r in &mut rest {
            let (h, t) = std::mem::take(r).split_at_mut(n);
            heads.push(h);
            *r = t;
        }
        pieces.push((at, heads));
        at += n as u64;
        left -= n;
    }
    pieces
}

/// Steps of one parallel segment for blocks of `2^h` steps, when `len` output steps are
/// to be cut: at least 2^15 and four blocks, since a segment also rebuilds the block before
/// its first (a segment of one block would compute every block twice: 1.3e7 steps/s at
/// W = 2^20 against 8e7 at 1024). When that leaves a thread idle (a chunk of a few long
/// blocks), a share per thread in whole blocks, down to two blocks: three blocks of work for
/// two of output on each thread beat five for four on one.
pub(super) fn segment_steps(h: u32, len: u64) -> u64 {
    let block = 1u64 << h;
    let full = (4 * block).max(1 << 15);
    let threads = rayon::current_num_threads().max(1) as u64;
    if len >= full.saturating_mul(threads) {
        return full;
    }
    let share = len.div_ceil(threads).div_ceil(block).saturating_mul(block);
    share.clamp((2 * block).min(full), full)
}

/// The first step a bulk segment starting at `start` rebuilds: the windows can reach back
/// into the previous block of `2^h` steps, so that block too (not before `base`).
pub(super) fn rebuild_from(h: u32, start: u64, base: u64) -> u64 {
    let block = 1u64 << h;
    ((start / block) * block).saturating_sub(block).max(base)
}

/// One block of a segment's walk ([`segment_walk`]): the ranges its caller slices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct BlockPart {
    /// The block's first step (a multiple of the block).
    pub(super) first: u64,
    /// Its steps in the caller's values (`xs[i]` is step `base + i`).
    pub(super) xs: std::ops::Range<usize>,
    /// Its nodes among its group's draws, in completion order.
    pub(super) z: std::ops::Range<usize>,
    /// Its outputs in the segment's (step `start` first): its last steps' (all from
    /// `start` on); empty for a block before `start`.
    pub(super) out: std::ops::Range<usize>,
}

impl BlockPart {
    /// Its first step with an output, from the block's start.
    pub(super) fn out_from(&self) -> usize {
        self.xs.len() - self.out.len()
    }
}

/// A group of consecutive blocks whose noise is drawn in one call: its counters are
/// `first_id .. first_id + count` (numbered in completion order, so a group's are
/// consecutive), split among `parts`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct BlockGroup {
    pub(super) first_id: u64,
    pub(super) count: usize,
    pub(super) parts: Vec<BlockPart>,
}

/// The blocks of `2^h` steps a bulk segment with outputs `start .. stop` walks, from the
/// block before `start`'s (all a window reaches back to; not before `base`, the first step
/// of the caller's values), in groups of at least 2^10 steps: a small block's few counters
/// per draw call would pay for a whole batch of keystream (eight ChaCha20 blocks) and its
/// buffers each time. The walk window sums and all-window sums share.
pub(super) fn segment_walk(h: u32, base: u64, start: u64, stop: u64) -> Vec<BlockGroup> {
    let block = 1u64 << h;
    let group = block.max(1 << 10);
    let mut sb = rebuild_from(h, start, base);
    let mut groups = Vec::new();
    while sb < stop {
        let g_end = (sb + group).min(stop);
        let first = first_id(sb, h);
        let count = (first_id(g_end, h) - first) as usize;
        let (mut parts, mut at_z) = (Vec::new(), 0);
        while sb < g_end {
            let n = (g_end - sb).min(block);
            let end = sb + n;
            let nodes = kinsey_kernels::window::blocks::block_nodes(n as usize, h);
            let x0 = (sb - base) as usize;
            parts.push(BlockPart {
                first: sb,
                xs: x0..x0 + n as usize,
                z: at_z..at_z + nodes,
                out: (sb.max(start) - start) as usize..(end.max(start) - start) as usize,
            });
            at_z += nodes;
            sb = end;
        }
        groups.push(BlockGroup {
            first_id: first,
            count,
            parts,
        });
    }
    groups
}

/// Per-thread buffers kept from segment to segment and chunk to chunk of one instance:
/// each parallel split borrows one ([`Pool::lend`]) and gives it back when done. (rayon's
/// `try_for_each_init` makes a fresh value per split, and a long window's buffers, about
/// 64 MiB at W = 2^20, then cost their page faults again on every chunk.) The pool holds at
/// most as many as ran at once; a clone starts empty.
pub(super) struct Pool<T>(std::sync::Mutex<Vec<T>>);

impl<T> Default for Pool<T> {
    fn default() -> Self {
        Self(std::sync::Mutex::new(Vec::new()))
    }
}

impl<T> Clone for Pool<T> {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl<T> std::fmt::Debug for Pool<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pool")
    }
}

impl<T: Default> Pool<T> {
    /// A value from the pool (or a fresh one), back in the pool when the loan is dropped.
    pub(super) fn lend(&self) -> Lent<'_, T> {
        let value = self
            .0
            .lock()
            .ok()
            .and_then(|mut v| v.pop())
            .unwrap_or_default();
        Lent { pool: self, value }
    }

    /// Frees what the pool holds (an owner of many instances run one after another keeps
    /// only the running one's buffers).
    pub(super) fn clear(&self) {
        if let Ok(mut v) = self.0.lock() {
            *v = Vec::new();
        }
    }
}

/// A value borrowed from a [`Pool`].
pub(super) struct Lent<'a, T: Default> {
    pool: &'a Pool<T>,
    value: T,
}

impl<T: Default> std::ops::Deref for Lent<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T: Default> std::ops::DerefMut for Lent<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.value
    }
}

impl<T: Default> Drop for Lent<'_, T> {
    fn drop(&mut self) {
        if let Ok(mut pool) = self.pool.0.lock() {
            pool.push(std::mem::take(&mut self.value));
        }
    }
}

/// The steps a stream run chunk by chunk in bulk keeps between chunks: from a block before
/// the last block boundary on, what a window of at most a block reaches back to. Memory is
/// the chunk plus two blocks, whatever the stream's length.
#[derive(Debug, Clone, Default)]
pub(super) struct Held {
    /// The kept steps; `steps[0]` is step `base`, a multiple of the block.
    steps: Vec<f64>,
    base: u64,
}

impl Held {
    /// Steps seen so far (the step the next chunk starts at).
    pub(super) fn next_step(&self) -> u64 {
        self.base + self.steps.len() as u64
    }

    /// Back to step 0.
    pub(super) fn clear(&mut self) {
        self.steps.clear();
        self.base = 0;
    }

    /// The next chunk of `block`-step blocks: `run(xs, base, out_from, outs)` computes the
    /// estimates of steps `out_from .. base + xs.len()` (`xs[i]` is step `base + i`, `base`
    /// a block boundary) into the chunk's outputs `outs`. The chunk is not copied: the
    /// held steps and the chunk's first steps, up to the first block boundary a block past
    /// the chunk's start, are one call; the rest of the chunk (from a block before that
    /// boundary, for the windows reaching back) the other.
    pub(super) fn chunk(
        &mut self,
        block: u64,
        chunk: &[f64],
        mut run: impl FnMut(&[f64], u64, u64, std::ops::Range<usize>) -> kinsey_core::Result<()>,
    ) -> kinsey_core::Result<()> {
        let start = self.next_step();
        let end = start + chunk.len() as u64;
        let b1 = (start + block).div_ceil(block) * block;
        let split = b1.min(end);
        let k = (split - start) as usize;
        self.steps.extend_from_slice(&chunk[..k]);
        run(&self.steps, self.base, start, 0..k)?;
        // Keep from a block before the last block boundary.
        let keep = (end / block).saturating_sub(1) * block;
        if split < end {
            let base = b1 - block;
            run(&chunk[(base - start) as usize..], base, b1, k..chunk.len())?;
            self.steps.clear();
            self.steps
                .extend_from_slice(&chunk[(keep - start) as usize..]);
        } else {
            self.steps.drain(..(keep - self.base) as usize);
        }
        self.base = keep;
        Ok(())
    }
}

/// Released values of the recent nodes, per level.
#[derive(Debug, Clone, Default)]
pub(super) struct Releases {
    /// Per level: index of the first kept node, and the kept values.
    pub(super) levels: Vec<(u64, std::collections::VecDeque<f64>)>,
}

impl Releases {
    pub(super) fn new(h: u32) -> Self {
        Self {
            levels: (0..=h)
                .map(|_| (0, std::collections::VecDeque::new()))
                .collect(),
        }
    }

    pub(super) fn push(&mut self, k: u32, m: u64, v: f64) {
        let (base, q) = &mut self.levels[k as usize];
        if q.is_empty() {
            *base = m;
        }
        debug_assert_eq!(*base + q.len() as u64, m);
        q.push_back(v);
    }

    #[inline]
    pub(super) fn get(&self, k: u32, m: u64) -> f64 {
        let (base, q) = &self.levels[k as usize];
        q[(m - base) as usize]
    }

    /// Drop nodes that end before step `keep_from`.
    pub(super) fn prune(&mut self, keep_from: u64) {
        for (k, (base, q)) in self.levels.iter_mut().enumerate() {
            let first_needed = keep_from >> k;
            while *base < first_needed && !q.is_empty() {
                q.pop_front();
                *base += 1;
            }
        }
    }
}

/// Sum of the released nodes covering `[l, u]` (maximal aligned nodes of level `<= h`, left
/// to right): the one combination both paths use.
#[inline]
pub(super) fn interval_sum(l: u64, u: u64, h: u32, get: impl Fn(u32, u64) -> f64) -> f64 {
    let mut s = 0.0;
    let mut at = l;
    while at <= u {
        // The largest aligned node starting at `at` that fits in [at, u] and the forest.
        let fits = 63 - (u - at + 1).leading_zeros();
        let k = at.trailing_zeros().min(h).min(fits);
        s += get(k, at >> k);
        at += 1u64 << k;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use kinsey_kernels::window::blocks::block_nodes;

    /// The walk covers every step from the rebuilt block to `stop` once, in order; each
    /// group's parts split its counters exactly; the outputs are `start .. stop`, once each.
    #[test]
    fn the_walk_tiles_steps_counters_and_outputs() {
        for h in [0u32, 3, 10, 12] {
            let block = 1u64 << h;
            for (base, start, stop) in [
                (0, 0, 5000),
                (0, 3 * block, 3 * block + 1),
                (2 * block, 2 * block, 9 * block + 7),
                (0, 7 * block + 5, 40 * block + 3),
            ] {
                let walk = segment_walk(h, base, start, stop);
                let (mut step, mut out) = (rebuild_from(h, start, base), 0);
                let mut id = first_id(step, h);
                for g in &walk {
                    assert_eq!(g.first_id, id, "h {h}: groups' counters consecutive");
                    let mut at_z = 0;
                    for p in &g.parts {
                        assert_eq!(p.first, step);
                        assert_eq!(p.xs.start as u64, step - base);
                        assert_eq!(p.z, at_z..at_z + block_nodes(p.xs.len(), h));
                        assert!(p.xs.len() as u64 <= block && p.first % block == 0);
                        assert_eq!(p.out.start, out, "h {h}: outputs in order");
                        let end = step + p.xs.len() as u64;
                        let with_out = end.saturating_sub(start.max(step));
                        assert_eq!(p.out.len() as u64, with_out);
                        assert_eq!(p.out_from() as u64, start.clamp(step, end) - step);
                        (step, out, at_z) = (end, p.out.end, p.z.end);
                    }
                    assert_eq!(at_z, g.count, "h {h}: a group's parts use its counters");
                    id += g.count as u64;
                }
                assert_eq!((step, out as u64), (stop, stop - start), "h {h}");
                assert_eq!(id, first_id(stop, h));
            }
        }
    }

    /// Segments are whole blocks, never below two (or the full size), and a length that
    /// would leave a thread idle with full segments is cut into one share per thread.
    #[test]
    fn segments_are_whole_blocks_and_keep_every_thread_busy() {
        let threads = rayon::current_num_threads() as u64;
        for h in [0u32, 5, 10, 16, 20] {
            let block = 1u64 << h;
            let full = (4 * block).max(1 << 15);
            for len in [
                1,
                block,
                3 * block,
                4 * block,
                8 * block + 1,
                full * threads,
                1 << 28,
            ] {
                let seg = segment_steps(h, len);
                assert_eq!(seg % block, 0, "h {h}, {len} steps");
                assert!(
                    seg <= full && seg >= (2 * block).min(full),
                    "h {h}, {len}: {seg}"
                );
                if len >= full * threads {
                    assert_eq!(seg, full);
                } else if seg > (2 * block).min(full) {
                    // Every thread gets a segment.
                    assert!(
                        len.div_ceil(seg) >= threads.min(len.div_ceil(block)),
                        "h {h}"
                    );
                }
            }
        }
    }
}
