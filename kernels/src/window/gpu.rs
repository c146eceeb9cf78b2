//! The `window` kernel's GPU host side: the chunk's values, draws and level offsets
//! uploaded, then `h + 1` `level` dispatches (in order, one per level: wgpu orders the
//! storage writes between dispatches) and one `sums` dispatch, in one submission; the sums
//! read back, straight from the mapped buffer into the caller's slices. Every dispatch's
//! parameters sit in one uniform buffer (dynamic offsets), every buffer comes from the
//! kernel's pool, and a wait is on one submission, never on all. Buffers stay within the 128 MiB binding cap for chunks of up to 2^23 steps
//! (the caller's chunks are 2^21); dispatches use a 2-D grid within 65,535 workgroups per
//! dimension.

use super::running::{RunningChunk, RunningTops, check_sums};
use super::spec::WindowChunk;
use crate::error::KernelError;
use crate::gpu::stream::{Stage, scatter_into, timed};
use crate::gpu::{
    BufferPool, GpuContext, Output, build_pipelines, dispatch_at, read_pod_after, read_with_after,
    storage_entry, uniform_dynamic_entry,
};
use std::sync::{Arc, OnceLock};

/// The WGSL source.
pub(crate) const WINDOW_WGSL: &str = include_str!("../../../shaders/window.wgsl");

/// Invocations per workgroup (the shader's `@workgroup_size`).
const WG: u64 = 64;
/// Most steps in one chunk (nodes and releases: 16 bytes a step each, within the cap).
pub const MAX_STEPS: usize = 1 << 23;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    len: u32,
    h: u32,
    w: u32,
    k: u32,
    out_from: u32,
    outs: u32,
    gx: u32,
    pad: u32,
    nseg: u32,
    segs_at: u32,
    pairs_at: u32,
    weighted: u32,
}

/// The shader's entry points, in the order of [`Pipes::entry`].
const ENTRIES: [&str; 8] = [
    "level",
    "sums",
    "running_level",
    "running_sums",
    "exp_level_mul",
    "exp_sums_init",
    "exp_sums_mul",
    "exp_sums_add",
];

/// One of [`ENTRIES`].
#[derive(Clone, Copy)]
enum Entry {
    Level,
    Sums,
    RunningLevel,
    RunningSums,
    ExpLevelMul,
    ExpSumsInit,
    ExpSumsMul,
    ExpSumsAdd,
}

/// The process's pipelines (the device is process-wide).
struct Pipes {
    layout: wgpu::BindGroupLayout,
    pipes: Vec<wgpu::ComputePipeline>,
}

impl Pipes {
    fn entry(&self, e: Entry) -> &wgpu::ComputePipeline {
        &self.pipes[e as usize]
    }
}
static PIPES: OnceLock<Result<Arc<Pipes>, KernelError>> = OnceLock::new();
/// The process's device against the CPU twins ([`super::probe`]), run once.
static PROBED: OnceLock<Result<(), KernelError>> = OnceLock::new();

/// Window sums on a GPU with 64-bit floats.
#[derive(Clone)]
pub struct GpuWindow {
    ctx: GpuContext,
    pipes: Arc<Pipes>,
    /// The window sums' per-chunk buffers, reused from chunk to chunk of a stream.
    pool: BufferPool,
}

impl std::fmt::Debug for GpuWindow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GpuWindow({})", self.ctx.describe())
    }
}

/// Workgroups `(x, y)` covering `n` invocations of [`WG`].
fn grid(n: u64) -> (u32, u32) {
    crate::gpu::grid(n, WG)
}

impl GpuWindow {
    /// The kernel on `ctx`; an error when the device has no 64-bit floats.
    pub fn new(ctx: GpuContext) -> Result<Self, KernelError> {
        if !ctx.has_f64() {
            return Err(KernelError::Device(format!(
                "{} has no 64-bit floats (SHADER_F64): the window sums stay on the CPU",
                ctx.describe()
            )));
        }
        let pipes = PIPES
            .get_or_init(|| {
                let mut entries = vec![uniform_dynamic_entry(0)];
                entries.extend((1..=4).map(|b| storage_entry(b, true)));
                entries.extend((5..=7).map(|b| storage_entry(b, false)));
                let (layout, pipes) =
                    build_pipelines(&ctx, "window", WINDOW_WGSL, &entries, &ENTRIES)?;
                if pipes.len() != ENTRIES.len() {
                    return Err(KernelError::Validation("window: missing pipelines".into()));
                }
                Ok(Arc::new(Pipes { layout, pipes }))
            })
            .clone()?;
        let gpu = Self {
            ctx,
            pipes,
            pool: BufferPool::default(),
        };
        PROBED.get_or_init(|| gpu.probe()).clone()?;
        Ok(gpu)
    }

    /// Both twins on the inputs of [`super::probe`]: an error naming the first value where
    /// the device's bits differ from the CPU's (subnormals flushed, another rounding).
    fn probe(&self) -> Result<(), KernelError> {
        use super::probe::{running_cases, same_bits, window_cases};
        use super::running::{running_levels, running_sums};
        let differs = |e: String| {
            KernelError::Unfaithful(format!(
                "{}'s 64-bit floats on {e}; the window sums stay on the CPU",
                self.ctx.describe()
            ))
        };
        for case in window_cases() {
            let c = case.chunk();
            let want = super::cpu::window_sums(&c)?;
            same_bits(case.what, &self.sums(&c)?, &want).map_err(differs)?;
        }
        for case in running_cases() {
            let c = case.chunk();
            let (tops, rel) = running_levels(&c, &case.z)?;
            let want = running_sums(&c, &rel, &case.starts)?;
            let lv = self.running_levels_host(&c, &case.z)?;
            same_bits(case.what, &lv.tops.tops, &tops.tops).map_err(differs)?;
            same_bits(case.what, &lv.tops.ends, &tops.ends).map_err(differs)?;
            let got = self.running_sums(&c, &lv, &case.starts)?;
            same_bits(case.what, &got, &want).map_err(differs)?;
        }
        Ok(())
    }

    /// The device, in words.
    pub fn describe(&self) -> String {
        self.ctx.describe()
    }

    /// The window sums of steps `c.out_from ..` of the chunk (as [`cpu::window_sums`](super::cpu::window_sums)).
    pub fn sums(&self, c: &WindowChunk<'_>) -> Result<Vec<f64>, KernelError> {
        c.check()?;
        let z = self
            .ctx
            .upload("z", bytemuck::cast_slice(c.z), wgpu::BufferUsages::STORAGE);
        self.run(c, &z)
    }

    /// [`sums`](Self::sums) with the draws already on the device (`c.z` is not read): the
    /// noise never leaves the GPU.
    pub fn sums_device(
        &self,
        c: &WindowChunk<'_>,
        z: &crate::dyadic::gpu::DeviceDraws,
    ) -> Result<Vec<f64>, KernelError> {
        self.finish(self.submit_device(c, z)?)
    }

    /// [`sums_device`](Self::sums_device) submitted and not waited for: the caller reads the
    /// sums with [`finish`](Self::finish) later, so that its work on the previous chunk's
    /// sums (and the next chunk's draws) overlaps this chunk's passes on the device.
    pub fn submit_device(
        &self,
        c: &WindowChunk<'_>,
        z: &crate::dyadic::gpu::DeviceDraws,
    ) -> Result<PendingSums, KernelError> {
        c.check_with(z.count)?;
        timed(Stage::Submit, || self.submit_run(c, &z.buf, Some(z)))
    }

    /// The sums of a [`submit_device`](Self::submit_device)ed chunk, once the device has
    /// them; its buffers go back to the kernel's pool.
    pub fn finish(&self, p: PendingSums) -> Result<Vec<f64>, KernelError> {
        let n = p.0.as_ref().map_or(0, |s| (s.out_bytes / 8) as usize);
        let mut out = vec![0.0; n];
        self.finish_into(p, vec![&mut out[..]])?;
        Ok(out)
    }

    /// [`finish`](Self::finish) copying the sums from the mapped buffer straight into
    /// `dsts`, laid end to end, on every core.
    pub fn finish_into(&self, p: PendingSums, dsts: Vec<&mut [f64]>) -> Result<(), KernelError> {
        let Some(Submitted {
            index,
            out,
            out_bytes,
            bufs,
        }) = p.0
        else {
            return Ok(());
        };
        let read = timed(Stage::ReadWait, || {
            read_with_after::<f64, _>(&self.ctx, &out.read, out_bytes, Some(index), |sums| {
                timed(Stage::CopyOut, || scatter_into(sums, dsts));
            })
        });
        self.pool.give(bufs.into_iter().chain([out.gpu, out.read]));
        read
    }

    /// `blocks` in one pooled uniform buffer at the adapter's offset alignment: the buffer
    /// and the stride between blocks.
    fn params(&self, blocks: &[Params]) -> (wgpu::Buffer, u32) {
        let ctx = &self.ctx;
        let (bytes, stride) = ctx.params(blocks);
        let buf = self.pool.upload(
            &ctx.device,
            &ctx.queue,
            "window params",
            &bytes,
            wgpu::BufferUsages::UNIFORM,
        );
        (buf, stride)
    }

    /// One bind group over `params` (block at a dynamic offset) and `buffers`.
    fn bind(&self, params: &wgpu::Buffer, buffers: &[&wgpu::Buffer]) -> wgpu::BindGroup {
        self.ctx.bind_params(
            "window",
            &self.pipes.layout,
            (params, size_of::<Params>() as u64),
            buffers,
        )
    }

    fn run(&self, c: &WindowChunk<'_>, z: &wgpu::Buffer) -> Result<Vec<f64>, KernelError> {
        self.finish(self.submit_run(c, z, None)?)
    }

    /// The chunk's passes in one submission, headed by the patch of `draws` (whose buffer
    /// is `z`) when they have one pending.
    fn submit_run(
        &self,
        c: &WindowChunk<'_>,
        z: &wgpu::Buffer,
        draws: Option<&crate::dyadic::gpu::DeviceDraws>,
    ) -> Result<PendingSums, KernelError> {
        if c.xs.len() > MAX_STEPS {
            return Err(KernelError::Input(format!(
                "window chunk of {} steps (at most {MAX_STEPS} on the GPU)",
                c.xs.len()
            )));
        }
        let outs = (c.from + c.xs.len() as u64 - c.out_from) as u32;
        if outs == 0 {
            return Ok(PendingSums(None));
        }
        let (ctx, pool) = (&self.ctx, &self.pool);
        let (dev, queue) = (&ctx.device, &ctx.queue);
        let st = wgpu::BufferUsages::STORAGE;
        let offs = c.offsets();
        let nodes = c.nodes().max(1) as u64;
        let grid_consts = [c.gamma, 1.0 / c.gamma];
        let inputs = [
            pool.upload(dev, queue, "grid", bytemuck::cast_slice(&grid_consts), st),
            pool.upload_par(dev, queue, "xs", bytemuck::cast_slice(c.xs), st),
            pool.upload(dev, queue, "offs", bytemuck::cast_slice(&offs), st),
        ];
        let val = pool.take(dev, "val", 8 * nodes, st);
        let rel = pool.take(dev, "rel", 8 * nodes, st);
        let out_bytes = 8 * u64::from(outs);
        let out = Output {
            gpu: pool.take(
                dev,
                "window sums",
                out_bytes,
                st | wgpu::BufferUsages::COPY_SRC,
            ),
            read: pool.take(dev, "window sums", out_bytes, wgpu::BufferUsages::MAP_READ),
        };
        let base = Params {
            len: c.xs.len() as u32,
            h: c.h,
            w: c.w.min(u64::from(u32::MAX)) as u32,
            k: 0,
            out_from: (c.out_from - c.from) as u32,
            outs,
            gx: 0,
            pad: 0,
            nseg: 0,
            segs_at: 0,
            pairs_at: 0,
            weighted: 0,
        };
        let mut blocks = Vec::new();
        for k in 0..=c.h {
            let n = (c.xs.len() >> k) as u64;
            if n > 0 {
                let (gx, gy) = grid(n);
                blocks.push((Params { k, gx, ..base }, Entry::Level, (gx, gy)));
            }
        }
        let (gx, gy) = grid(u64::from(outs));
        blocks.push((Params { gx, ..base }, Entry::Sums, (gx, gy)));
        let (params, stride) = self.params(&blocks.iter().map(|b| b.0).collect::<Vec<_>>());
        let index = ctx.submit("window", |enc| {
            if let Some(d) = draws {
                d.record_patch(enc);
            }
            let [g, x, o] = &inputs;
            let bind = self.bind(&params, &[g, x, z, o, &val, &rel, &out.gpu]);
            for (i, (_, e, wg)) in blocks.iter().enumerate() {
                dispatch_at(enc, self.pipes.entry(*e), &bind, *wg, i as u32 * stride);
            }
            enc.copy_buffer_to_buffer(&out.gpu, 0, &out.read, 0, Some(out_bytes));
        })?;
        let [g, x, o] = inputs;
        Ok(PendingSums(Some(Submitted {
            index,
            out,
            out_bytes,
            bufs: vec![g, x, o, val, rel, params],
        })))
    }
}

/// A chunk's window sums submitted to the device ([`GpuWindow::submit_device`]), read by
/// [`GpuWindow::finish`]: the submission, the sums' buffers and their size, the buffers
/// to give back (none for a chunk without outputs).
#[derive(Debug)]
pub struct PendingSums(Option<Submitted>);

/// What [`PendingSums`] holds of a submitted chunk.
#[derive(Debug)]
struct Submitted {
    index: wgpu::SubmissionIndex,
    out: Output,
    out_bytes: u64,
    bufs: Vec<wgpu::Buffer>,
}

/// A chunk's level passes done on the device ([`GpuWindow::running_levels`]): its
/// buffers, kept for the sums pass, and what the host needs in between.
pub struct DeviceLevels {
    xs: wgpu::Buffer,
    z: wgpu::Buffer,
    index: wgpu::Buffer,
    val: wgpu::Buffer,
    rel: wgpu::Buffer,
    /// Nodes (and releases) of the chunk (the pooled buffers may be larger).
    nodes: usize,
    /// The level-`l` nodes and the last segment's latest left releases.
    pub tops: RunningTops,
    /// Where the buffers go back when the levels are dropped (work already submitted
    /// that reads them runs first).
    pool: Option<BufferPool>,
}

impl Drop for DeviceLevels {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            pool.give([
                self.xs.clone(),
                self.index.clone(),
                self.val.clone(),
                self.rel.clone(),
            ]);
        }
    }
}

impl std::fmt::Debug for DeviceLevels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceLevels({} releases on the device)", self.nodes)
    }
}

impl GpuWindow {
    /// The running-sum level passes of chunk `c` with its draws on the device (as
    /// [`running_levels`](super::running::running_levels)).
    pub fn running_levels(
        &self,
        c: &RunningChunk<'_>,
        z: &crate::dyadic::gpu::DeviceDraws,
    ) -> Result<DeviceLevels, KernelError> {
        c.check(z.count)?;
        self.running_levels_in(c, z.buf.clone(), Some(z))
    }

    /// [`running_levels`](Self::running_levels) with the draws uploaded from `z`.
    pub fn running_levels_host(
        &self,
        c: &RunningChunk<'_>,
        z: &[i64],
    ) -> Result<DeviceLevels, KernelError> {
        c.check(z.len())?;
        let buf = self
            .ctx
            .upload("z", bytemuck::cast_slice(z), wgpu::BufferUsages::STORAGE);
        self.running_levels_in(c, buf, None)
    }

    /// The level passes in one submission, headed by the patch of `draws` (whose buffer
    /// is `z`) when they have one pending.
    fn running_levels_in(
        &self,
        c: &RunningChunk<'_>,
        z: wgpu::Buffer,
        draws: Option<&crate::dyadic::gpu::DeviceDraws>,
    ) -> Result<DeviceLevels, KernelError> {
        if c.xs.len() > MAX_STEPS {
            return Err(KernelError::Input(format!(
                "running chunk of {} steps (at most {MAX_STEPS} on the GPU)",
                c.xs.len()
            )));
        }
        let (ctx, pool) = (&self.ctx, &self.pool);
        let (dev, queue) = (&ctx.device, &ctx.queue);
        let st = wgpu::BufferUsages::STORAGE;
        let index = c.index();
        let nodes = c.nodes() as u64;
        let nseg = c.segments();
        let consts = pool.upload(
            dev,
            queue,
            "grid",
            bytemuck::cast_slice(&consts(c, &[])),
            st,
        );
        let xs = pool.upload_par(dev, queue, "xs", bytemuck::cast_slice(c.xs), st);
        let index_buf = pool.upload(dev, queue, "index", bytemuck::cast_slice(&index), st);
        let val = pool.take(dev, "val", 8 * nodes, st);
        let rel = pool.take(dev, "rel", 8 * nodes, st);
        let tops_bytes = 8 * (nseg + c.l as usize) as u64;
        let out = Output {
            gpu: pool.take(
                dev,
                "running tops",
                tops_bytes,
                st | wgpu::BufferUsages::COPY_SRC,
            ),
            read: pool.take(
                dev,
                "running tops",
                tops_bytes,
                wgpu::BufferUsages::MAP_READ,
            ),
        };
        let base = running_params(c);
        let mut blocks = Vec::new();
        for k in 0..=c.l {
            let wg = grid((c.xs.len() >> k) as u64);
            let p = Params {
                k,
                gx: wg.0,
                ..base
            };
            if base.weighted == 1 && k > 0 {
                blocks.push((p, Entry::ExpLevelMul, wg));
            }
            blocks.push((p, Entry::RunningLevel, wg));
        }
        let (params, stride) = self.params(&blocks.iter().map(|b| b.0).collect::<Vec<_>>());
        let at = ctx.submit("running levels", |enc| {
            if let Some(d) = draws {
                d.record_patch(enc);
            }
            let bind = self.bind(
                &params,
                &[&consts, &xs, &z, &index_buf, &val, &rel, &out.gpu],
            );
            for (i, (_, e, wg)) in blocks.iter().enumerate() {
                dispatch_at(enc, self.pipes.entry(*e), &bind, *wg, i as u32 * stride);
            }
            enc.copy_buffer_to_buffer(&out.gpu, 0, &out.read, 0, Some(tops_bytes));
        })?;
        let mut tops = timed(Stage::ReadWait, || {
            read_pod_after::<f64>(ctx, &out.read, tops_bytes, Some(at))
        })?;
        pool.give([consts, params, out.gpu, out.read]);
        let ends = tops.split_off(nseg);
        Ok(DeviceLevels {
            xs,
            z,
            index: index_buf,
            val,
            rel,
            nodes: nodes as usize,
            tops: RunningTops { tops, ends },
            pool: Some(self.pool.clone()),
        })
    }

    /// The running sums of every step of chunk `c` from its level passes `lv` and one
    /// start pair per segment (as [`running_sums`](super::running::running_sums)).
    pub fn running_sums(
        &self,
        c: &RunningChunk<'_>,
        lv: &DeviceLevels,
        starts: &[[f64; 2]],
    ) -> Result<Vec<f64>, KernelError> {
        let p = self.submit_running_sums(c, lv, starts)?;
        self.finish(p)
    }

    /// [`running_sums`](Self::running_sums) submitted and not waited for: read them with
    /// [`finish_into`](Self::finish_into) once the next chunk's work is submitted. `lv`
    /// may be dropped as soon as this returns.
    pub fn submit_running_sums(
        &self,
        c: &RunningChunk<'_>,
        lv: &DeviceLevels,
        starts: &[[f64; 2]],
    ) -> Result<PendingSums, KernelError> {
        check_sums(c, lv.nodes, starts)?;
        let (ctx, pool) = (&self.ctx, &self.pool);
        let (dev, queue) = (&ctx.device, &ctx.queue);
        let st = wgpu::BufferUsages::STORAGE;
        let consts = pool.upload(
            dev,
            queue,
            "starts",
            bytemuck::cast_slice(&consts(c, starts)),
            st,
        );
        let out_bytes = 8 * c.xs.len() as u64;
        let out = Output {
            gpu: pool.take(
                dev,
                "running sums",
                out_bytes,
                st | wgpu::BufferUsages::COPY_SRC,
            ),
            read: pool.take(dev, "running sums", out_bytes, wgpu::BufferUsages::MAP_READ),
        };
        let wg = grid(c.xs.len() as u64);
        let base = Params {
            gx: wg.0,
            ..running_params(c)
        };
        let mut blocks = Vec::new();
        if base.weighted == 1 {
            blocks.push((base, Entry::ExpSumsInit));
            for k in (0..c.l).rev() {
                blocks.push((Params { k, ..base }, Entry::ExpSumsMul));
                blocks.push((Params { k, ..base }, Entry::ExpSumsAdd));
            }
        } else {
            blocks.push((base, Entry::RunningSums));
        }
        let (params, stride) = self.params(&blocks.iter().map(|b| b.0).collect::<Vec<_>>());
        let index = timed(Stage::Submit, || {
            ctx.submit("running sums", |enc| {
                let bind = self.bind(
                    &params,
                    &[
                        &consts, &lv.xs, &lv.z, &lv.index, &lv.val, &lv.rel, &out.gpu,
                    ],
                );
                for (i, (_, e)) in blocks.iter().enumerate() {
                    dispatch_at(enc, self.pipes.entry(*e), &bind, wg, i as u32 * stride);
                }
                enc.copy_buffer_to_buffer(&out.gpu, 0, &out.read, 0, Some(out_bytes));
            })
        })?;
        Ok(PendingSums(Some(Submitted {
            index,
            out,
            out_bytes,
            bufs: vec![consts, params],
        })))
    }
}

/// The uniforms of the running passes of chunk `c` (`k` and `gx` set per dispatch).
fn running_params(c: &RunningChunk<'_>) -> Params {
    Params {
        len: c.xs.len() as u32,
        h: c.l,
        w: 0,
        k: 0,
        out_from: 0,
        outs: 0,
        gx: 0,
        pad: 0,
        nseg: c.segments() as u32,
        segs_at: c.l + 2,
        pairs_at: c.l + 3,
        weighted: u32::from(c.weighted()),
    }
}

/// The running passes' `grid`: gamma, its inverse, the weights of levels `0..=l`, then the
/// segments' start pairs.
fn consts(c: &RunningChunk<'_>, starts: &[[f64; 2]]) -> Vec<f64> {
    let mut v = vec![c.gamma, 1.0 / c.gamma];
    v.extend(&c.pow[..=c.l as usize]);
    v.extend(starts.iter().flatten());
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::window::cpu::window_sums;
    use crate::window::probe::xorshift;

    /// The GPU's sums equal the CPU twin's bit for bit: windows within and across blocks,
    /// a chunk starting late in the stream, values with fractions, large draws. Fails
    /// without an adapter (CI installs lavapipe, which has 64-bit floats).
    #[test]
    fn gpu_sums_match_cpu() {
        let ctx = GpuContext::shared().expect("a GPU adapter (lavapipe in CI)");
        let gpu = GpuWindow::new(ctx).expect("64-bit floats");
        let mut next = xorshift(0x1234_5678_9abc_def0);
        for (h, w, from, len, out_from) in [
            (0u32, 1u64, 0u64, 100usize, 0u64),
            (3, 5, 0, 1000, 0),
            (10, 1000, 1 << 20, 5000, (1 << 20) + 1024),
            (12, 4096, 0, 20_000, 0),
            (7, 100, 128 * 77, 3000, 128 * 78),
        ] {
            let xs: Vec<f64> = (0..len).map(|_| (next() >> 40) as f64 / 7.0).collect();
            let nodes: usize = (0..=h).map(|k| len >> k).sum();
            let z: Vec<i64> = (0..nodes).map(|_| (next() as i64) >> 22).collect();
            let c = WindowChunk {
                h,
                w,
                gamma: 2f64.powi(-5),
                from,
                out_from,
                xs: &xs,
                z: &z,
            };
            let want = window_sums(&c).expect("cpu");
            let got = gpu.sums(&c).expect("gpu");
            assert_eq!(want.len(), got.len());
            let bad = (0..want.len()).find(|&i| want[i].to_bits() != got[i].to_bits());
            assert!(
                bad.is_none(),
                "h {h} W {w}: step {:?}: gpu {:?} cpu {:?}",
                bad,
                bad.map(|i| got[i]),
                bad.map(|i| want[i])
            );
        }
        // Rounding at its edges: ties (away from zero), just below a half, around 2^24
        // (where lavapipe's f64 round builtin stops working), 2^32 and 2^52.
        let two = |e: i32| 2f64.powi(e);
        let xs = vec![
            0.5,
            1.5,
            2.5,
            0.499_999_999_999_999_94,
            two(24) + 0.5,
            two(24) - 0.5,
            two(32) - 0.5,
            two(32) + 0.5,
            two(52) - 0.5,
            two(52),
            two(53) + 2.0,
            1e300,
            0.0,
            7.0 / 3.0,
        ];
        let z = vec![0i64; xs.len()];
        let c = WindowChunk {
            h: 0,
            w: 1,
            gamma: 1.0,
            from: 0,
            out_from: 0,
            xs: &xs,
            z: &z,
        };
        let got = gpu.sums(&c).expect("gpu");
        let want: Vec<f64> = xs.iter().map(|x| x.round()).collect();
        assert_eq!(got, want);
        assert_eq!(window_sums(&c).expect("cpu"), want);
        // A chunk whose first window starts before it is refused.
        let xs = vec![1.0; 64];
        let z = vec![0i64; 64 + 32 + 16];
        let c = WindowChunk {
            h: 2,
            w: 4,
            gamma: 1.0,
            from: 64,
            out_from: 64,
            xs: &xs[..64],
            z: &z,
        };
        assert!(gpu.sums(&c).is_err() && window_sums(&c).is_err());
    }

    /// The device passes the probe of `GpuWindow::new` (subnormal nodes, releases, weights
    /// and sums; rounding edges; random values), run here again explicitly so that the
    /// test names it. Fails without an adapter.
    #[test]
    fn the_device_computes_f64_as_the_cpu() {
        let ctx = GpuContext::shared().expect("a GPU adapter (lavapipe in CI)");
        let gpu = GpuWindow::new(ctx).expect("64-bit floats, as the CPU's");
        if let Err(e) = gpu.probe() {
            panic!("{e}");
        }
    }

    /// The running-sum passes on the GPU equal their CPU twin bit for bit: chunks late in
    /// the stream (ids offset by the levels above the segments), fractions, large draws,
    /// several segment levels, weights 1 and decayed. Fails without an adapter.
    #[test]
    fn gpu_running_matches_cpu() {
        use crate::window::running::{running_levels, running_sums};
        let ctx = GpuContext::shared().expect("a GPU adapter (lavapipe in CI)");
        let gpu = GpuWindow::new(ctx).expect("64-bit floats");
        let mut next = xorshift(0x0bad_cafe_1234_5678);
        for (l, h, from, segs, alpha) in [
            (1u32, 2u32, 0u64, 3usize, 1.0f64),
            (4, 20, 16 * 1001, 7, 1.0),
            (10, 62, (1u64 << 40) + (1 << 10) * 77, 5, 1.0),
            (12, 18, 0, 3, 1.0),
            (1, 2, 0, 3, 0.5),
            (4, 20, 16 * 1001, 7, 0.999),
            (10, 62, (1u64 << 40) + (1 << 10) * 77, 5, 0.9999),
            (12, 18, 0, 3, 0.3),
        ] {
            let pow: Vec<f64> = (0..=h).map(|k| alpha.powf(2f64.powi(k as i32))).collect();
            let xs: Vec<f64> = (0..segs << l)
                .map(|_| (next() >> 40) as f64 / 7.0 - 1e5)
                .collect();
            let c = RunningChunk {
                l,
                h,
                gamma: 2f64.powi(-5),
                pow: &pow,
                from,
                xs: &xs,
            };
            let z: Vec<i64> = (0..c.draws()).map(|_| (next() as i64) >> 22).collect();
            let (want_tops, rel) = running_levels(&c, &z).expect("cpu levels");
            let lv = gpu.running_levels_host(&c, &z).expect("gpu levels");
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&lv.tops.tops), bits(&want_tops.tops), "l {l}: tops");
            assert_eq!(bits(&lv.tops.ends), bits(&want_tops.ends), "l {l}: ends");
            let starts: Vec<[f64; 2]> = (0..segs)
                .map(|_| [(next() >> 30) as f64 / 3.0, (next() >> 30) as f64 / 5.0])
                .collect();
            let want = running_sums(&c, &rel, &starts).expect("cpu sums");
            let got = gpu.running_sums(&c, &lv, &starts).expect("gpu sums");
            assert_eq!(bits(&got), bits(&want), "l {l} h {h} alpha {alpha}: sums");
        }
    }
}
