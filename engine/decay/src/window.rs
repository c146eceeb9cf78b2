//! The sliding-window sum of the last `W` steps (seed 004, Theorem 1).

use super::model::{CalibrationReport, DecayedSum, ModelParams, Public, check_bound, window_truth};
use super::noise::KeyedNoise;
use super::tree::{
    Forest, Held, Pool, Releases, first_id, interval_sum, rebuild_from, segment_steps,
    segment_walk, segments,
};
use kinsey_core::{Error, Result, check_epsilon};
use kinsey_kernels::dyadic::gpu::PendingDraws;
use kinsey_kernels::window::blocks::Blocks;
use kinsey_kernels::window::{
    WindowChunk,
    gpu::{GpuWindow, MAX_STEPS, PendingSums},
};
use rayon::prelude::*;

/// Output pieces of one GPU group: each piece's first step and its outputs.
type Group<'a> = Vec<(u64, &'a mut [f64])>;

/// One group of segments of a GPU pass: its outputs, its first output step `lo`, the steps
/// `from .. hi` its trees rebuild, its draws' counters and whether its sums run on the
/// device.
struct Plan<'a> {
    group: Group<'a>,
    lo: u64,
    from: u64,
    hi: u64,
    first: u64,
    count: usize,
    on_device: bool,
}

/// The sliding-window sum of the last `W` steps.
#[derive(Debug, Clone)]
pub struct WindowSum {
    pub(super) w: u64,
    pub(super) h: u32,
    pub(super) noise: KeyedNoise,
    /// Every sum of releases is exact (bulk may reorder additions).
    pub(super) exact_sums: bool,
    pub(super) bound: f64,
    pub(super) epsilon: f64,
    pub(super) forest: Forest,
    pub(super) rel: Releases,
    pub(super) t: u64,
    pub(super) next_id: u64,
    /// Chunked stream: the steps kept from earlier chunks.
    pub(super) held: Held,
    /// The window sums on the GPU too (when the noise is, and the device has f64).
    pub(super) sums_gpu: Option<GpuWindow>,
    /// Per-thread buffers of the bulk path, kept between chunks.
    scratch: Pool<Scratch>,
}

impl WindowSum {
    /// The sum of the last `w` steps.
    pub fn new(w: u64, epsilon: f64, bound: f64, key: [u8; 32]) -> Result<Self> {
        Self::with_stream(w, epsilon, bound, key, 0)
    }

    /// An instance with its own noise stream (several instances under one key).
    pub(crate) fn with_stream(
        w: u64,
        epsilon: f64,
        bound: f64,
        key: [u8; 32],
        stream: u64,
    ) -> Result<Self> {
        check_epsilon("epsilon", epsilon)?;
        check_bound(bound)?;
        if w < 1 {
            return Err(Error::param("window", "the window must be >= 1 step"));
        }
        let h = w.next_power_of_two().trailing_zeros();
        // Every release is a grid multiple and every sum the bulk path forms (at most 4(h + 1)
        // releases, each at most W' B plus noise) is exact, so online and bulk may add the
        // same nodes in different orders and still agree bit for bit.
        let exact = KeyedNoise::new_exact(
            key,
            stream,
            f64::from(h + 1) * bound,
            h + 1,
            epsilon,
            (1u64 << h) as f64 * bound,
            4 * (h + 1),
        )?;
        let fine = KeyedNoise::new(key, stream, f64::from(h + 1) * bound, h + 1, epsilon)?;
        // Exact sums need a grid within 2^52 of the largest sum; when the noise is so much
        // larger than the sensitivity that this grid would inflate the scale, keep the fine
        // grid and let bulk add the nodes in the online order instead.
        let exact_sums = exact.scale() <= fine.scale() * (1.0 + 1e-6);
        let noise = if exact_sums { exact } else { fine };
        Ok(Self {
            w,
            h,
            noise,
            exact_sums,
            bound,
            epsilon,
            forest: Forest::new(h, 1.0),
            rel: Releases::new(h),
            t: 0,
            next_id: 0,
            held: Held::default(),
            scratch: Pool::default(),
            sums_gpu: None,
        })
    }

    pub(crate) fn calibration(&self) -> CalibrationReport {
        CalibrationReport {
            model: format!("window (W = {}, blocks of {})", self.w, 1u64 << self.h),
            epsilon: self.epsilon,
            bound: self.bound,
            levels: self.h + 1,
            sensitivity: f64::from(self.h + 1) * self.bound,
            counter_scale: self.noise.scale(),
            counter_std: self.noise.std_dev(),
            rho: None,
        }
    }

    /// Standard deviation of the estimate at step `j` (sum of the independent counters used).
    pub(crate) fn std_at(&self, j: u64) -> f64 {
        let l = (j + 1).saturating_sub(self.w);
        let nodes = interval_sum(l, j, self.h, |_, _| 1.0);
        nodes.sqrt() * self.noise.std_dev()
    }

    /// Online: one step in, the estimate of the window ending here out.
    pub(crate) fn advance(&mut self, x: f64) -> f64 {
        let t = self.t;
        let (noise, rel, next_id) = (&self.noise, &mut self.rel, &mut self.next_id);
        self.forest.step(t, x, |k, m, v| {
            rel.push(k, m, noise.release(v, noise.z(*next_id)));
            *next_id += 1;
        });
        let l = (t + 1).saturating_sub(self.w);
        let out = interval_sum(l, t, self.h, |k, m| self.rel.get(k, m));
        self.t += 1;
        self.rel.prune(self.t.saturating_sub(self.w));
        out
    }

    /// Bulk: the estimates for a whole series, in parallel over segments of whole blocks.
    /// Same key, same numbers as `push`, bit for bit.
    pub(crate) fn bulk_series(&self, xs: &[f64]) -> Result<Vec<f64>> {
        let mut out = vec![0.0; xs.len()];
        self.bulk_offset(xs, 0, 0, &mut out)?;
        Ok(out)
    }

    /// The next chunk of a stream processed in bulk into `out` (one estimate per step of
    /// the chunk): memory is the chunk plus two blocks ([`Held`]).
    fn stream_chunk(&mut self, chunk: &[f64], out: &mut [f64]) -> Result<()> {
        let mut held = std::mem::take(&mut self.held);
        let r = held.chunk(1 << self.h, chunk, |xs, base, from, at| {
            self.bulk_offset(xs, base, from, &mut out[at])
        });
        self.held = held;
        r
    }

    /// `xs[i]` is step `base + i` (`base` a multiple of the block); the estimates for steps
    /// `out_from .. base + xs.len()` into `out`.
    fn bulk_offset(&self, xs: &[f64], base: u64, out_from: u64, out: &mut [f64]) -> Result<()> {
        let seg = segment_steps(self.h, out.len() as u64);
        let end = base + xs.len() as u64;
        if out.len() as u64 != end - out_from {
            return Err(Error::Numerical(format!(
                "window: {} outputs for steps {out_from}..{end}",
                out.len()
            )));
        }
        let pieces: Vec<(u64, &mut [f64])> = segments(out_from, seg, vec![out])
            .into_iter()
            .filter_map(|(at, mut c)| c.pop().map(|c| (at, c)))
            .collect();
        if self.noise.gpu().is_none() {
            pieces.into_par_iter().try_for_each_init(
                || self.scratch.lend(),
                |sc, (start, dst)| {
                    self.segment(xs, base, (start, start + dst.len() as u64), dst, sc, None)
                },
            )?;
            return Ok(());
        }
        // GPU: the noise of up to GPU_STEPS steps' segments in one pass on the device, then
        // those segments' sums on the device too, or in parallel on the CPU.
        let per_group = (GPU_STEPS / seg).max(1) as usize;
        let mut plans = Vec::new();
        let mut pieces = pieces.into_iter().peekable();
        while pieces.peek().is_some() {
            let group: Group<'_> = pieces.by_ref().take(per_group).collect();
            let (lo, hi) = match (group.first(), group.last()) {
                (Some(f), Some(l)) => (f.0, l.0 + l.1.len() as u64),
                _ => break,
            };
            let from = rebuild_from(self.h, lo, base);
            let first = first_id(from, self.h);
            let count = (first_id(hi, self.h) - first) as usize;
            let on_device = self.sums_gpu.is_some() && (hi - from) as usize <= MAX_STEPS;
            plans.push(Plan {
                group,
                lo,
                from,
                hi,
                first,
                count,
                on_device,
            });
        }
        self.groups_gpu(xs, base, plans)
    }

    /// The groups of [`bulk_offset`](Self::bulk_offset) with GPU noise. Where the sums run
    /// on the device too, three groups are in flight: group `i + 1`'s draws are submitted
    /// before group `i`'s slow draws are finished and its sums submitted, and group
    /// `i - 1`'s sums are read (straight into their slices) only then, so the device
    /// always has work queued while the host works. `KINSEY_GPU_PIPELINE=serial` runs one
    /// group at a time (A/B). The draws are a function of their counters only, so the
    /// order changes no bit.
    fn groups_gpu(&self, xs: &[f64], base: u64, plans: Vec<Plan<'_>>) -> Result<()> {
        let ahead_ok = !kinsey_kernels::gpu::stream::serial();
        let mut ahead: Option<PendingDraws> = None;
        let mut pending: Option<(PendingSums, Group<'_>)> = None;
        let mut plans = plans.into_iter().peekable();
        while let Some(plan) = plans.next() {
            let next = plans
                .peek()
                .filter(|p| p.on_device)
                .map(|p| (p.first, p.count));
            let steps = &xs[(plan.from - base) as usize..(plan.hi - base) as usize];
            let Some(g) = self.sums_gpu.as_ref().filter(|_| plan.on_device) else {
                let mut z = vec![0i64; plan.count];
                self.noise.fill(plan.first, &mut z)?;
                let first = plan.first;
                plan.group.into_par_iter().try_for_each_init(
                    || self.scratch.lend(),
                    |sc, (start, dst)| {
                        let stop = start + dst.len() as u64;
                        self.segment(xs, base, (start, stop), dst, sc, Some((first, &z)))
                    },
                )?;
                continue;
            };
            let submitted = match ahead.take() {
                Some(p) => Some(p),
                None => self.noise.submit_draws(plan.first, plan.count)?,
            };
            if let Some((first, count)) = next.filter(|_| ahead_ok) {
                ahead = self.noise.submit_draws(first, count)?;
            }
            let Some(p) = submitted else {
                return Err(Error::Numerical(
                    "window: GPU sums without GPU noise".into(),
                ));
            };
            let z = self.noise.finish_draws(p)?;
            let chunk = WindowChunk {
                h: self.h,
                w: self.w,
                gamma: self.noise.gamma(),
                from: plan.from,
                out_from: plan.lo,
                xs: steps,
                z: &[],
            };
            let sums = g.submit_device(&chunk, &z)?;
            if let Some((p, done)) = pending.replace((sums, plan.group)) {
                g.finish_into(p, done.into_iter().map(|(_, d)| d).collect())?;
            }
        }
        if let (Some((p, done)), Some(g)) = (pending, self.sums_gpu.as_ref()) {
            g.finish_into(p, done.into_iter().map(|(_, d)| d).collect())?;
        }
        Ok(())
    }

    /// Estimates for steps `start..stop` into `dst`, rebuilding the blocks they need (the
    /// fast path of the `window` kernel, block by block); the noise drawn here per block,
    /// or taken from `ahead` (the draws of counters from `ahead.0` on).
    fn segment(
        &self,
        xs: &[f64],
        base: u64,
        (start, stop): (u64, u64),
        dst: &mut [f64],
        sc: &mut Scratch,
        ahead: Option<(u64, &[i64])>,
    ) -> Result<()> {
        let blocks = match &mut sc.blocks {
            Some(b) => b,
            None => sc.blocks.insert(Blocks::new(
                self.h,
                self.w,
                self.noise.gamma(),
                self.exact_sums,
            )?),
        };
        blocks.reset();
        for g in segment_walk(self.h, base, start, stop) {
            let zg = match ahead {
                Some((f0, all)) => &all[(g.first_id - f0) as usize..][..g.count],
                None => {
                    sc.z.resize(g.count, 0);
                    self.noise.fill(g.first_id, &mut sc.z)?;
                    &sc.z[..]
                }
            };
            for p in g.parts {
                let out_from = p.out_from();
                blocks.block(p.first, &xs[p.xs], &zg[p.z], out_from, &mut dst[p.out])?;
            }
        }
        Ok(())
    }
}

/// Steps whose noise the GPU draws in one pass (about 32 MiB of draws; tests use smaller
/// passes so that they cross pass boundaries).
const GPU_STEPS: u64 = if cfg!(test) { 1 << 16 } else { 1 << 21 };

/// Per-thread buffers reused across segments (no page faults per segment).
#[derive(Default)]
struct Scratch {
    z: Vec<i64>,
    blocks: Option<Blocks>,
}

/// `window`: needs `--window`.
pub(crate) fn build(p: &ModelParams, c: &Public) -> Result<Box<dyn DecayedSum>> {
    let w = p.need("window", "window", &p.window)?;
    Ok(Box::new(WindowSum::new(w, c.epsilon, c.bound, c.key)?))
}

impl DecayedSum for WindowSum {
    fn calibration(&self) -> CalibrationReport {
        WindowSum::calibration(self)
    }

    fn noise_std(&self, _column: usize, j: u64) -> f64 {
        self.std_at(j)
    }

    fn use_device(&mut self, device: kinsey_kernels::DevicePref) -> Result<Option<String>> {
        self.use_device(device)
    }

    fn push(&mut self, x: f64, out: &mut [f64]) -> Result<()> {
        if self.held.next_step() > 0 {
            return Err(Error::param(
                "push",
                "this window sum was fed by chunks (stream); keep streaming",
            ));
        }
        out[0] = self.advance(x);
        Ok(())
    }

    fn bulk(&self, xs: &[f64]) -> Result<Vec<Vec<f64>>> {
        Ok(vec![self.bulk_series(xs)?])
    }

    fn stream_into(&mut self, chunk: &[f64], out: &mut Vec<Vec<f64>>) -> Result<()> {
        if self.t > 0 {
            // Fed online before: continue online (the same numbers).
            return super::model::push_each(self, chunk, out);
        }
        self.stream_chunk(chunk, super::model::one_column(out, chunk.len()))
    }

    fn truth(&self, xs: &[f64]) -> Vec<Vec<f64>> {
        vec![window_truth(xs, self.w)]
    }

    fn fresh(&self) -> Box<dyn DecayedSum> {
        let mut m = self.clone();
        m.reset();
        Box::new(m)
    }
}

impl WindowSum {
    /// The noise on `device`, and the sums too where the GPU has 64-bit floats; the GPU
    /// used, in words.
    pub(crate) fn use_device(
        &mut self,
        device: kinsey_kernels::DevicePref,
    ) -> Result<Option<String>> {
        let (used, sums) = self.noise.use_device_with_sums(device)?;
        self.sums_gpu = sums;
        Ok(used)
    }

    /// Frees the bulk path's per-thread buffers kept between chunks (polynomial sums run
    /// many instances in turn: each keeping its own would add up).
    pub(crate) fn free_buffers(&self) {
        self.scratch.clear();
    }

    /// Back to step 0 (same key and parameters).
    pub(crate) fn reset(&mut self) {
        self.forest = Forest::new(self.h, 1.0);
        self.rel = Releases::new(self.h);
        self.t = 0;
        self.next_id = 0;
        self.held.clear();
    }
}
