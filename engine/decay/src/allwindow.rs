//! Window sums for several window sizes at once from one tree.

use super::model::{CalibrationReport, DecayedSum, ModelParams, Public, check_bound, window_truth};
use super::noise::KeyedNoise;
use super::tree::{
    Forest, Held, Pool, Releases, interval_sum, segment_steps, segment_walk, segments,
};
use kinsey_core::{Error, Result, check_epsilon};
use kinsey_kernels::window::blocks::{Blocks, draw_index};
use rayon::prelude::*;

/// Riemann zeta `sum_{n >= 1} n^-s` for `s > 1` (partial sum plus Euler-Maclaurin tail).
pub fn zeta(s: f64) -> f64 {
    // The tail correction leaves an error of order n^(-s-3): below 1e-11 for s > 1.
    let n = 1_000u32;
    let partial: f64 = (1..=n).map(|k| f64::from(k).powf(-s)).sum();
    let nf = f64::from(n);
    partial + nf.powf(1.0 - s) / (s - 1.0) - 0.5 * nf.powf(-s) + s / 12.0 * nf.powf(-s - 1.0)
}

/// Window sums for several window sizes at once from one tree: level `k` (0-based) gets
/// `eps_k = eps / (zeta(delta) (k + 1)^delta)`, so the levels together spend at most
/// `sum_k eps_k = eps` however many levels and windows are used. Each `x_i` lies in one node
/// per level (L1 sensitivity `B` per level), so level `k`'s counters get `Lap(B / eps_k)`. A
/// window of size `W` uses the nodes of levels `<= ceil(log2 W)` covering it.
#[derive(Debug, Clone)]
pub struct AllWindowSum {
    pub(super) windows: Vec<u64>,
    pub(super) hs: Vec<u32>,
    pub(super) h: u32,
    pub(super) delta: f64,
    pub(super) levels: Vec<KeyedNoise>,
    /// Every sum of releases the bulk path forms is exact (the levels' grids are powers of
    /// two, all multiples of the finest, and the largest sum is within `2^51` of it), so
    /// bulk may add them in another order than online and still agree bit for bit.
    pub(super) exact_sums: bool,
    pub(super) bound: f64,
    pub(super) epsilon: f64,
    pub(super) forest: Forest,
    pub(super) rel: Releases,
    pub(super) t: u64,
    pub(super) next_id: u64,
    /// Chunked stream: the steps kept from earlier chunks.
    pub(super) held: Held,
    /// Per-thread buffers of the bulk path, kept between chunks.
    scratch: Pool<Scratch>,
}

impl AllWindowSum {
    /// Windows `windows` from one tree; `delta > 1` spreads the budget over the levels as `1 /
    /// (zeta(delta) (k + 1)^delta)`.
    pub fn new(
        windows: &[u64],
        epsilon: f64,
        bound: f64,
        delta: f64,
        key: [u8; 32],
    ) -> Result<Self> {
        check_epsilon("epsilon", epsilon)?;
        check_bound(bound)?;
        if windows.is_empty() || windows.contains(&0) {
            return Err(Error::param(
                "windows",
                "list one or more window sizes, each >= 1 step",
            ));
        }
        if !(delta > 1.0 && delta.is_finite()) {
            return Err(Error::param(
                "delta",
                format!("the level exponent must be > 1, got {delta}"),
            ));
        }
        let hs: Vec<u32> = windows
            .iter()
            .map(|w| w.next_power_of_two().trailing_zeros())
            .collect();
        let h = hs.iter().copied().max().unwrap_or(0);
        let z = zeta(delta);
        let levels = (0..=h)
            .map(|k| {
                let eps_k = epsilon / (z * f64::from(k + 1).powf(delta));
                KeyedNoise::new_exact(
                    key,
                    5,
                    bound,
                    1,
                    eps_k,
                    (1u64 << h) as f64 * bound,
                    4 * (h + 1),
                )
            })
            .collect::<Result<Vec<_>>>()?;
        let finest = levels
            .iter()
            .map(KeyedNoise::gamma)
            .fold(f64::INFINITY, f64::min);
        let worst = levels
            .iter()
            .map(|n| n.worst_sum((1u64 << h) as f64 * bound, 4 * (h + 1)))
            .fold(0.0, f64::max);
        let exact_sums = worst <= 2f64.powi(51) * finest;
        Ok(Self {
            windows: windows.to_vec(),
            hs,
            h,
            delta,
            levels,
            exact_sums,
            bound,
            epsilon,
            forest: Forest::new(h, 1.0),
            rel: Releases::new(h),
            t: 0,
            next_id: 0,
            held: Held::default(),
            scratch: Pool::default(),
        })
    }

    /// The window sizes, in output-column order.
    pub fn windows(&self) -> &[u64] {
        &self.windows
    }

    pub(crate) fn calibration(&self) -> CalibrationReport {
        CalibrationReport {
            model: format!(
                "all windows (W = {:?}, delta = {}, levels 0..={})",
                self.windows, self.delta, self.h
            ),
            epsilon: self.epsilon,
            bound: self.bound,
            levels: self.h + 1,
            sensitivity: self.bound,
            counter_scale: self.levels[0].scale(),
            counter_std: self.levels[0].std_dev(),
            rho: None,
        }
    }

    /// Standard deviation of window `i`'s estimate at step `j`.
    pub(crate) fn std_at(&self, i: usize, j: u64) -> f64 {
        let l = (j + 1).saturating_sub(self.windows[i]);
        interval_sum(l, j, self.hs[i], |k, _| {
            self.levels[k as usize].std_dev().powi(2)
        })
        .sqrt()
    }

    /// Online: one step in, one estimate per window into `out`.
    pub(crate) fn advance(&mut self, x: f64, out: &mut [f64]) {
        let t = self.t;
        let (levels, rel, next_id) = (&self.levels, &mut self.rel, &mut self.next_id);
        self.forest.step(t, x, |k, m, v| {
            let n = &levels[k as usize];
            rel.push(k, m, n.release(v, n.z(*next_id)));
            *next_id += 1;
        });
        for ((o, &w), &h) in out.iter_mut().zip(&self.windows).zip(&self.hs) {
            let l = (t + 1).saturating_sub(w);
            *o = interval_sum(l, t, h, |k, m| self.rel.get(k, m));
        }
        self.t += 1;
        let wmax = self.windows.iter().copied().max().unwrap_or(1);
        self.rel.prune(self.t.saturating_sub(wmax));
    }

    /// Bulk: per window, all estimates; parallel over segments; same numbers as `push`.
    pub(crate) fn bulk_series(&self, xs: &[f64]) -> Result<Vec<Vec<f64>>> {
        let mut out = vec![vec![0.0; xs.len()]; self.windows.len()];
        self.bulk_offset(xs, 0, 0, out.iter_mut().map(Vec::as_mut_slice).collect())?;
        Ok(out)
    }

    /// `xs[i]` is step `base + i` (`base` a multiple of the block); per window, the
    /// estimates of steps `out_from .. base + xs.len()` into `out` (one column per window,
    /// each of that length), in parallel over segments ([`segment_steps`]).
    fn bulk_offset(
        &self,
        xs: &[f64],
        base: u64,
        out_from: u64,
        out: Vec<&mut [f64]>,
    ) -> Result<()> {
        let len = out.first().map_or(0, |c| c.len()) as u64;
        let seg = segment_steps(self.h, len);
        segments(out_from, seg, out)
            .into_par_iter()
            .try_for_each_init(
                || self.scratch.lend(),
                |sc, (start, mut cols)| self.segment(xs, base, start, &mut cols, sc),
            )
    }

    /// Per window, the estimates of steps `start .. start + out[i].len()` into `out[i]`
    /// (`xs[j]` is step `base + j`), block by block with the `window` kernel's fast path
    /// (a grid per level, every window of the block at once) from the block before
    /// `start`'s, all a window reaches back to. The noise of groups of blocks of at least
    /// 2^10 steps at a time: their keystream in one pass, each node's draw under its
    /// level's law.
    fn segment(
        &self,
        xs: &[f64],
        base: u64,
        start: u64,
        out: &mut [&mut [f64]],
        sc: &mut Scratch,
    ) -> Result<()> {
        let stop = start + out.first().map_or(0, |c| c.len()) as u64;
        let h = self.h;
        let blocks = match &mut sc.blocks {
            Some(b) => b,
            None => {
                let gammas: Vec<f64> = self.levels.iter().map(KeyedNoise::gamma).collect();
                let longest = self.windows.iter().copied().max().unwrap_or(1);
                sc.blocks
                    .insert(Blocks::with_grids(h, longest, &gammas, self.exact_sums)?)
            }
        };
        blocks.reset();
        for g in segment_walk(h, base, start, stop) {
            sc.words.resize(g.count, [0; 2]);
            sc.z.resize(g.count, 0);
            self.levels[0].words(g.first_id, &mut sc.words);
            for p in g.parts {
                let (words, z) = (&sc.words[p.z.clone()], &mut sc.z[p.z.clone()]);
                let first = g.first_id + p.z.start as u64;
                let n = p.xs.len();
                // Per level, its nodes' words side by side for the table draws in bulk.
                for (k, noise) in (0..=h).zip(&self.levels) {
                    let count = n >> k;
                    sc.lw.clear();
                    sc.lw.extend((0..count).map(|m| words[draw_index(k, m)]));
                    sc.lz.resize(count, 0);
                    noise.draw_gathered(&sc.lw, |m| first + draw_index(k, m) as u64, &mut sc.lz);
                    for (m, &d) in sc.lz.iter().enumerate() {
                        z[draw_index(k, m)] = d;
                    }
                }
                let mut outs: Vec<(u64, &mut [f64])> = self
                    .windows
                    .iter()
                    .zip(out.iter_mut())
                    .map(|(&w, col)| (w, &mut col[p.out.clone()]))
                    .collect();
                let out_from = p.out_from();
                blocks.block_windows(p.first, &xs[p.xs], z, out_from, &mut outs)?;
            }
        }
        Ok(())
    }
}

/// Per-thread buffers reused across segments.
#[derive(Default)]
struct Scratch {
    words: Vec<[u64; 2]>,
    z: Vec<i64>,
    /// One level's words and draws.
    lw: Vec<[u64; 2]>,
    lz: Vec<i64>,
    blocks: Option<Blocks>,
}

/// `allwindow`: needs `--windows`; the level exponent is 2.
pub(crate) fn build(p: &ModelParams, c: &Public) -> Result<Box<dyn DecayedSum>> {
    let windows = p.need("allwindow", "windows", &p.windows)?;
    Ok(Box::new(AllWindowSum::new(
        &windows, c.epsilon, c.bound, 2.0, c.key,
    )?))
}

impl DecayedSum for AllWindowSum {
    fn calibration(&self) -> CalibrationReport {
        AllWindowSum::calibration(self)
    }

    fn columns(&self) -> Vec<String> {
        self.windows.iter().map(|w| format!("window_{w}")).collect()
    }

    fn noise_std(&self, column: usize, j: u64) -> f64 {
        self.std_at(column, j)
    }

    fn push(&mut self, x: f64, out: &mut [f64]) -> Result<()> {
        if self.held.next_step() > 0 {
            return Err(Error::param(
                "push",
                "this all-window sum was fed by chunks (stream); keep streaming",
            ));
        }
        self.advance(x, out);
        Ok(())
    }

    fn bulk(&self, xs: &[f64]) -> Result<Vec<Vec<f64>>> {
        self.bulk_series(xs)
    }

    /// The same numbers as `push`, each chunk in bulk (memory: the chunk and two blocks).
    fn stream_into(&mut self, chunk: &[f64], out: &mut Vec<Vec<f64>>) -> Result<()> {
        if self.t > 0 {
            // Fed online before: continue online (the same numbers).
            return super::model::push_each(self, chunk, out);
        }
        out.resize_with(self.windows.len(), Vec::new);
        for c in out.iter_mut() {
            c.clear();
            c.resize(chunk.len(), 0.0);
        }
        let mut held = std::mem::take(&mut self.held);
        let r = held.chunk(1 << self.h, chunk, |xs, base, from, at| {
            let cols = out.iter_mut().map(|c| &mut c[at.clone()]).collect();
            self.bulk_offset(xs, base, from, cols)
        });
        self.held = held;
        r
    }

    fn truth(&self, xs: &[f64]) -> Vec<Vec<f64>> {
        self.windows.iter().map(|&w| window_truth(xs, w)).collect()
    }

    fn fresh(&self) -> Box<dyn DecayedSum> {
        let mut m = self.clone();
        m.forest = Forest::new(self.h, 1.0);
        m.rel = Releases::new(self.h);
        m.t = 0;
        m.next_id = 0;
        m.held.clear();
        Box::new(m)
    }
}
