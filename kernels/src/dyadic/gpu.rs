//! The `dyadic` kernel's GPU host side: the law's tables uploaded once per law, then per
//! range of counters one dispatch per 2^22 counters (32 MiB of output, within the binding
//! cap; one invocation per keystream block of four counters, workgroups of 64 on a 2-D grid
//! within 65,535 per dimension), the draws read back as `i64`, or left on the device for
//! the next kernel ([`GpuDyadic::submit_device`]): then only the list of the rare slow
//! draws comes back, and the host's finished draws go up in one buffer, written by one
//! small `patch_draws` dispatch. Buffers come from a pool (a stream of groups allocates once).
//! The keys travel in a uniform buffer of the process's own device.

use super::tables::{DyadicTables, MAX_DIGITS, SLOW};
use crate::chacha::ChaCha20;
use crate::error::KernelError;
use crate::gpu::stream::{self, Stage, timed};
use crate::gpu::{
    BufferPool, GpuContext, MAX_WG, Output, build_pipelines, dispatch, storage_entry, uniform_entry,
};
use std::sync::{Arc, OnceLock};

/// The WGSL source.
pub(crate) const DYADIC_WGSL: &str = include_str!("../../../shaders/dyadic.wgsl");

/// Invocations per workgroup (the shader's `@workgroup_size`).
const WG: u64 = 64;
/// Counters per dispatch (32 MiB of output) when they are read back.
const MAX_COUNTERS: usize = 1 << 22;
/// Most counters left on the device at once (128 MiB: the binding cap).
pub const MAX_DEVICE_COUNTERS: usize = 1 << 24;
/// Rows of the uniform parameter block (`Params.v`).
const PARAM_ROWS: usize = 8 + MAX_DIGITS;

/// The process's pipelines, `draw` and `patch` (the device is process-wide:
/// [`GpuContext::shared`]).
struct Pipes {
    layout: wgpu::BindGroupLayout,
    draw: wgpu::ComputePipeline,
    patch: wgpu::ComputePipeline,
}
static PIPES: OnceLock<Result<Arc<Pipes>, KernelError>> = OnceLock::new();

fn pipelines(ctx: &GpuContext) -> Result<Arc<Pipes>, KernelError> {
    PIPES
        .get_or_init(|| {
            let entries = [
                uniform_entry(0),
                storage_entry(1, true),
                storage_entry(2, false),
                storage_entry(3, false),
            ];
            let (layout, pipes) = build_pipelines(
                ctx,
                "dyadic",
                DYADIC_WGSL,
                &entries,
                &["draw", "patch_draws"],
            )?;
            let [draw, patch]: [wgpu::ComputePipeline; 2] = pipes
                .try_into()
                .map_err(|_| KernelError::Validation("dyadic: missing pipelines".into()))?;
            Ok(Arc::new(Pipes {
                layout,
                draw,
                patch,
            }))
        })
        .clone()
}

/// Draws of one law's counters on the GPU, bit for bit [`cpu::fill`](super::cpu::fill).
#[derive(Clone)]
pub struct GpuDyadic {
    ctx: GpuContext,
    pipes: Arc<Pipes>,
    tables: Arc<wgpu::Buffer>,
    /// Rows 5 (digit count in `.w`), 6 (M) and 7.. (digits) of the parameters.
    law: [[u32; 4]; PARAM_ROWS],
    /// Draws, slow lists and parameters, reused from group to group.
    pool: BufferPool,
}

impl std::fmt::Debug for GpuDyadic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GpuDyadic({})", self.ctx.describe())
    }
}

/// Usage of the draws' buffer: written by `draw` and `patch`, read by the next kernel,
/// copied back for [`GpuDyadic::read_device`].
const Z_USAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE.union(wgpu::BufferUsages::COPY_SRC);

impl GpuDyadic {
    /// The law `tables` on `ctx` (checked, then uploaded once).
    pub fn new(ctx: GpuContext, tables: &DyadicTables) -> Result<Self, KernelError> {
        tables.check()?;
        let pipes = pipelines(&ctx)?;
        let mut law = [[0u32; 4]; PARAM_ROWS];
        law[5][3] = tables.digits.len() as u32;
        law[6][0] = tables.m as u32;
        law[6][1] = (tables.m >> 32) as u32;
        let mut flat: Vec<u64> = Vec::new();
        for (i, d) in tables.digits.iter().enumerate() {
            law[7 + i] = [d.pos, d.prec, d.slot_bits, flat.len() as u32];
            flat.extend_from_slice(&d.table);
        }
        if flat.is_empty() {
            // A law of M = 1 has no digit; bindings may not be empty.
            flat.push(0);
        }
        let tables = ctx.upload(
            "dyadic tables",
            bytemuck::cast_slice(&flat),
            wgpu::BufferUsages::STORAGE,
        );
        Ok(Self {
            ctx,
            pipes,
            tables: Arc::new(tables),
            law,
            pool: BufferPool::default(),
        })
    }

    /// The device, in words.
    pub fn describe(&self) -> String {
        self.ctx.describe()
    }

    /// The device (for kernels that continue on it).
    pub fn context(&self) -> &GpuContext {
        &self.ctx
    }

    /// The draws of counters `first .. first + out.len()`, [`SLOW`] where the
    /// table path cannot finish one (as [`cpu::fill`](super::cpu::fill)).
    pub fn fill(
        &self,
        keystream: &ChaCha20,
        wide: &ChaCha20,
        first: u64,
        out: &mut [i64],
    ) -> Result<(), KernelError> {
        for (c, chunk) in out.chunks_mut(MAX_COUNTERS).enumerate() {
            if chunk.is_empty() {
                continue;
            }
            let at = first + (c * MAX_COUNTERS) as u64;
            let p = self.run(keystream, wide, at, chunk.len(), 0)?;
            let draws = self.read(&p.z, chunk.len(), None)?;
            chunk.copy_from_slice(&draws);
            self.pool.give([p.z, p.list.gpu, p.list.read, p.params]);
        }
        Ok(())
    }

    /// The draws of counters `first .. first + count` left on the device (for a kernel that
    /// continues there), with the indices of the [`SLOW`] ones, sorted; the caller
    /// finishes those and [`patch`](Self::patch)es them in. At most [`MAX_DEVICE_COUNTERS`].
    /// [`submit_device`](Self::submit_device) then [`slow`](Self::slow), waited for here.
    pub fn fill_device(
        &self,
        keystream: &ChaCha20,
        wide: &ChaCha20,
        first: u64,
        count: usize,
    ) -> Result<DeviceDraws, KernelError> {
        let p = self.submit_device(keystream, wide, first, count)?;
        let slow = self.slow(&p)?;
        Ok(self.draws(p, slow))
    }

    /// The draws of counters `first .. first + count` submitted and not waited for, so
    /// that the device makes them while the host finishes the previous group: read their
    /// slow list with [`slow`](Self::slow). At most [`MAX_DEVICE_COUNTERS`].
    pub fn submit_device(
        &self,
        keystream: &ChaCha20,
        wide: &ChaCha20,
        first: u64,
        count: usize,
    ) -> Result<PendingDraws, KernelError> {
        if count == 0 || count > MAX_DEVICE_COUNTERS {
            return Err(KernelError::Input(format!(
                "dyadic: {count} counters on the device (1 ..= {MAX_DEVICE_COUNTERS})"
            )));
        }
        // Room for eight times the expected share of slow draws (about 1 in 2,000 for the
        // laws of the decayed sums; more for laws with a tiny block, which then read
        // everything back).
        let room = count / 256 + 1024;
        timed(Stage::DrawsSubmit, || {
            self.run(keystream, wide, first, count, room)
        })
    }

    /// The indices of `p`'s [`SLOW`] draws, sorted, once its own submission has finished
    /// (later work keeps running).
    pub fn slow(&self, p: &PendingDraws) -> Result<Vec<u32>, KernelError> {
        let (count, room) = (p.count, p.room);
        let listed = timed(Stage::DrawsWait, || {
            crate::gpu::read_with_after::<u32, _>(
                &self.ctx,
                &p.list.read,
                p.list.read.size(),
                Some(p.index.clone()),
                |list| {
                    let n = list.first().copied().unwrap_or(0) as usize;
                    (n <= room).then(|| list[1..=n].to_vec())
                },
            )
        })?;
        let mut slow: Vec<u32> = match listed {
            Some(s) => s,
            None => {
                let all = self.read(&p.z, count, None)?;
                (0..count as u32)
                    .filter(|&i| all[i as usize] == SLOW)
                    .collect()
            }
        };
        slow.sort_unstable();
        if slow.iter().any(|&i| i as usize >= count) {
            return Err(KernelError::Map("dyadic: a slow index out of range".into()));
        }
        Ok(slow)
    }

    /// `p`'s draws with their slow list, to be [`patch`](Self::patch)ed.
    pub fn draws(&self, p: PendingDraws, slow: Vec<u32>) -> DeviceDraws {
        self.pool.give([p.list.gpu, p.list.read, p.params]);
        DeviceDraws {
            buf: p.z,
            count: p.count,
            slow,
            pool: Some(self.pool.clone()),
            patch: std::sync::Mutex::default(),
        }
    }

    /// Writes the caller's finished draws for `d.slow` (same order) into `d`: one upload
    /// of (index, value) pairs and one `patch_draws` dispatch (the serial way: one 8-byte upload
    /// per draw).
    pub fn patch(&self, d: &DeviceDraws, fixed: &[i64]) -> Result<(), KernelError> {
        if fixed.len() != d.slow.len() {
            return Err(KernelError::Input(format!(
                "dyadic: {} draws for {} slow counters",
                fixed.len(),
                d.slow.len()
            )));
        }
        if fixed.is_empty() {
            return Ok(());
        }
        timed(Stage::Patch, || {
            if stream::serial() {
                for (&i, v) in d.slow.iter().zip(fixed) {
                    self.ctx
                        .queue
                        .write_buffer(&d.buf, 8 * u64::from(i), bytemuck::bytes_of(v));
                }
                return Ok(());
            }
            self.patch_dispatch(d, fixed)
        })
    }

    /// One upload of the pairs; the dispatch writing them is recorded at the head of the
    /// next submission that reads the draws ([`DeviceDraws::record_patch`]): no
    /// submission of its own.
    fn patch_dispatch(&self, d: &DeviceDraws, fixed: &[i64]) -> Result<(), KernelError> {
        let ctx = &self.ctx;
        let (dev, queue) = (&ctx.device, &ctx.queue);
        let pairs: Vec<[u32; 2]> = d
            .slow
            .iter()
            .zip(fixed)
            .flat_map(|(&i, &v)| [[i, 0], [v as u32, ((v as u64) >> 32) as u32]])
            .collect();
        let n = fixed.len() as u64;
        let groups = n.div_ceil(WG);
        let gx = groups.min(MAX_WG);
        let mut p = self.law;
        p[6][3] = gx as u32;
        p[11][1] = n as u32;
        let params = self.pool.upload(
            dev,
            queue,
            "dyadic patch params",
            bytemuck::cast_slice(&p),
            wgpu::BufferUsages::UNIFORM,
        );
        let list = self.pool.upload(
            dev,
            queue,
            "dyadic patch",
            bytemuck::cast_slice(&pairs),
            wgpu::BufferUsages::STORAGE,
        );
        let spare = self
            .pool
            .take(dev, "dyadic spare", 4, wgpu::BufferUsages::STORAGE);
        let bind = ctx.bind(
            "dyadic patch",
            &self.pipes.layout,
            &[&params, &list, &d.buf, &spare],
        );
        let mut state = d
            .patch
            .lock()
            .map_err(|_| KernelError::Map("dyadic: a patch panicked".into()))?;
        if state.work.is_some() {
            return Err(KernelError::Input(
                "dyadic: these draws were patched already".into(),
            ));
        }
        state.work = Some(PatchWork {
            pipes: self.pipes.clone(),
            bind,
            grid: (gx as u32, groups.div_ceil(gx) as u32),
        });
        state.bufs.extend([params, list, spare]);
        Ok(())
    }

    /// Every draw of `d`, read back (tests, and the rare batch with many slow draws).
    pub fn read_device(&self, d: &DeviceDraws) -> Result<Vec<i64>, KernelError> {
        self.read(&d.buf, d.count, Some(d))
    }

    /// The `count` draws in `z` (patched first if they are `d`'s), through a mappable
    /// buffer made for the purpose (most batches never come back: the next kernel reads
    /// them on the device).
    fn read(
        &self,
        z: &wgpu::Buffer,
        count: usize,
        d: Option<&DeviceDraws>,
    ) -> Result<Vec<i64>, KernelError> {
        let ctx = &self.ctx;
        let out = Output {
            gpu: z.clone(),
            read: ctx.buffer(
                "dyadic draws",
                8 * count as u64,
                wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            ),
        };
        let index = ctx.submit("dyadic read", |enc| {
            if let Some(d) = d {
                d.record_patch(enc);
            }
            enc.copy_buffer_to_buffer(&out.gpu, 0, &out.read, 0, Some(8 * count as u64));
        })?;
        crate::gpu::read_pod_after::<i64>(ctx, &out.read, 8 * count as u64, Some(index))
    }

    /// One dispatch: the draws into a pooled device buffer, the slow indices into a list
    /// with `room` entries (cleared first, copied back, count first).
    fn run(
        &self,
        keystream: &ChaCha20,
        wide: &ChaCha20,
        first: u64,
        count: usize,
        room: usize,
    ) -> Result<PendingDraws, KernelError> {
        let ctx = &self.ctx;
        let (dev, queue) = (&ctx.device, &ctx.queue);
        let (key, stream) = keystream.state_words();
        let (wide_key, wide_stream) = wide.state_words();
        if wide_stream != stream {
            return Err(KernelError::Input(
                "dyadic: the wide keystream must have the counters' stream".into(),
            ));
        }
        let n = count as u64;
        let blocks = ((first % 4) + n).div_ceil(4);
        let groups = blocks.div_ceil(WG);
        let gx = groups.min(MAX_WG);
        let gy = groups.div_ceil(gx);
        let mut p = self.law;
        p[0].copy_from_slice(&key[..4]);
        p[1].copy_from_slice(&key[4..]);
        p[2].copy_from_slice(&wide_key[..4]);
        p[3].copy_from_slice(&wide_key[4..]);
        let fb = first / 4;
        p[4] = [stream[0], stream[1], fb as u32, (fb >> 32) as u32];
        p[5][..3].copy_from_slice(&[first as u32, (first >> 32) as u32, n as u32]);
        p[6][2] = blocks as u32;
        p[6][3] = gx as u32;
        p[11][0] = room as u32;
        let params = self.pool.upload(
            dev,
            queue,
            "dyadic params",
            bytemuck::cast_slice(&p),
            wgpu::BufferUsages::UNIFORM,
        );
        let z = self.pool.take(dev, "dyadic draws", 8 * n, Z_USAGE);
        let list_bytes = 4 * (room as u64 + 1);
        let list = Output {
            gpu: self.pool.take(
                dev,
                "dyadic slow",
                list_bytes,
                wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            ),
            read: self
                .pool
                .take(dev, "dyadic slow", list_bytes, wgpu::BufferUsages::MAP_READ),
        };
        let index = ctx.submit("dyadic", |enc| {
            enc.clear_buffer(&list.gpu, 0, Some(4));
            let bind = ctx.bind(
                "dyadic",
                &self.pipes.layout,
                &[&params, &self.tables, &z, &list.gpu],
            );
            dispatch(enc, &self.pipes.draw, &bind, (gx as u32, gy as u32));
            if room > 0 {
                enc.copy_buffer_to_buffer(&list.gpu, 0, &list.read, 0, Some(list_bytes));
            }
        })?;
        Ok(PendingDraws {
            z,
            list,
            params,
            index,
            first,
            count,
            room,
        })
    }
}

/// Draws submitted by [`GpuDyadic::submit_device`] whose slow list is not read yet.
#[derive(Debug)]
pub struct PendingDraws {
    z: wgpu::Buffer,
    list: Output,
    params: wgpu::Buffer,
    index: wgpu::SubmissionIndex,
    first: u64,
    count: usize,
    room: usize,
}

impl PendingDraws {
    /// The first counter's id.
    pub fn first(&self) -> u64 {
        self.first
    }

    /// How many counters.
    pub fn count(&self) -> usize {
        self.count
    }
}

/// Draws left on the device by [`GpuDyadic::fill_device`]; the buffer goes back to the
/// kernel's pool when they are dropped (work already submitted that reads it runs first).
#[derive(Debug)]
pub struct DeviceDraws {
    /// The draws (i64, little-endian), bound by the next kernel.
    pub(crate) buf: wgpu::Buffer,
    /// How many.
    pub count: usize,
    /// Indices of the [`SLOW`] draws, sorted.
    pub slow: Vec<u32>,
    pool: Option<BufferPool>,
    /// The patch of the slow draws, uploaded and waiting for the next submission that
    /// reads the draws, and the buffers it uses.
    patch: std::sync::Mutex<PatchState>,
}

/// See [`DeviceDraws::patch`].
#[derive(Default)]
struct PatchState {
    work: Option<PatchWork>,
    bufs: Vec<wgpu::Buffer>,
}

impl std::fmt::Debug for PatchState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PatchState(pending: {})", self.work.is_some())
    }
}

/// The `patch_draws` dispatch, ready to record.
struct PatchWork {
    pipes: Arc<Pipes>,
    bind: wgpu::BindGroup,
    grid: (u32, u32),
}

impl DeviceDraws {
    /// Records the pending patch of the slow draws (if any) into `enc`: every kernel that
    /// reads the draws calls this first, in the same submission.
    pub(crate) fn record_patch(&self, enc: &mut wgpu::CommandEncoder) {
        let work = self.patch.lock().ok().and_then(|mut s| s.work.take());
        if let Some(w) = work {
            dispatch(enc, &w.pipes.patch, &w.bind, w.grid);
        }
    }
}

impl Drop for DeviceDraws {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            let bufs = self
                .patch
                .get_mut()
                .map(|s| std::mem::take(&mut s.bufs))
                .unwrap_or_default();
            pool.give(bufs.into_iter().chain([self.buf.clone()]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dyadic::cpu;
    use crate::dyadic::tables::SLOW;
    use crate::dyadic::tables::random_tables;

    /// Groups in flight: two groups' draws submitted before either is read, read in
    /// order, patched with one dispatch each, then the pooled buffers reused by a third
    /// (its slow list cleared, not the previous group's): every draw the CPU twin's, and
    /// each patched value where its slow draw was. Fails without an adapter.
    #[test]
    fn groups_in_flight_reuse_the_pool_faithfully() {
        let ctx = GpuContext::shared().expect("a GPU adapter (lavapipe in CI)");
        let (k, wk) = (ChaCha20::new(&[7; 32], 5), ChaCha20::new(&[2; 32], 5));
        let t = random_tables(2, 4095 << 9, 11);
        let gpu = GpuDyadic::new(ctx, &t).expect("tables");
        let n = 30_000;
        let want = |first: u64| {
            let mut w = vec![0i64; n];
            cpu::fill(&k, &wk, &t, first, &mut w);
            w
        };
        let check = |d: &DeviceDraws, first: u64| {
            let w = want(first);
            let slow: Vec<u32> = (0..n as u32).filter(|&i| w[i as usize] == SLOW).collect();
            assert!(!slow.is_empty(), "slow draws at {first}");
            assert_eq!(d.slow, slow, "slow list at {first}");
            let fixed: Vec<i64> = slow.iter().map(|&i| -(i64::from(i)) - 1).collect();
            gpu.patch(d, &fixed).expect("patch");
            let back = gpu.read_device(d).expect("read");
            for i in 0..n {
                let expect = match slow.binary_search(&(i as u32)) {
                    Ok(j) => fixed[j],
                    Err(_) => w[i],
                };
                assert_eq!(back[i], expect, "counter {i} from {first}");
            }
        };
        let a = gpu.submit_device(&k, &wk, 3, n).expect("submit a");
        let b = gpu
            .submit_device(&k, &wk, 3 + n as u64, n)
            .expect("submit b");
        let sa = gpu.slow(&a).expect("slow a");
        let da = gpu.draws(a, sa);
        check(&da, 3);
        let sb = gpu.slow(&b).expect("slow b");
        let db = gpu.draws(b, sb);
        check(&db, 3 + n as u64);
        drop((da, db));
        let c = gpu.fill_device(&k, &wk, 1 << 40, n).expect("reused");
        check(&c, 1 << 40);
    }

    /// The GPU's draws equal the CPU twin's, bit for bit, for laws of one to four digits,
    /// ranges starting at any offset in a block, slow draws included. Fails without an
    /// adapter (CI installs lavapipe).
    #[test]
    fn gpu_draws_match_cpu() {
        let ctx = GpuContext::shared().expect("a GPU adapter (lavapipe in CI)");
        let (k, wk) = (ChaCha20::new(&[9; 32], 77), ChaCha20::new(&[4; 32], 77));
        for (digits, m, first, n) in [
            (0usize, 1u64, 0u64, 1000usize),
            (0, 1, 3, 20_000),
            (1, 7, 5, 4099),
            (2, 4095 << 9, (1 << 33) + 3, 20_000),
            (3, (3000 << 24) + 17, 2, 9_999),
            (4, (1 << 41) - 1, u64::MAX / 8 + 1, 5_000),
        ] {
            let t = random_tables(digits, m, 100 + digits as u64);
            let gpu = GpuDyadic::new(ctx.clone(), &t).expect("tables");
            let mut want = vec![0i64; n];
            cpu::fill(&k, &wk, &t, first, &mut want);
            let mut got = vec![1i64; n];
            gpu.fill(&k, &wk, first, &mut got).expect("gpu fill");
            let bad = (0..n).find(|&i| got[i] != want[i]);
            assert!(
                bad.is_none(),
                "{digits} digits from {first}: counter {:?}: gpu {:?} cpu {:?}",
                bad,
                bad.map(|i| got[i]),
                bad.map(|i| want[i])
            );
            assert!(want.contains(&SLOW) || n < 5000);
            // Left on the device: the same draws, and the slow ones listed (through the
            // list, or read back when there are more than it holds: a quarter of the
            // draws of M = 1 are a rejected -0).
            let d = gpu.fill_device(&k, &wk, first, n).expect("device fill");
            assert_eq!(gpu.read_device(&d).expect("read"), want);
            let slow: Vec<u32> = (0..n as u32)
                .filter(|&i| want[i as usize] == SLOW)
                .collect();
            assert_eq!(d.slow, slow, "{digits} digits");
            let fixed: Vec<i64> = (0..slow.len() as i64).collect();
            gpu.patch(&d, &fixed).expect("patch");
            let back = gpu.read_device(&d).expect("read");
            assert!(
                slow.iter()
                    .zip(&fixed)
                    .all(|(&i, &v)| back[i as usize] == v)
            );
            assert!(want.iter().any(|&z| z < 0) && want.iter().any(|&z| z > 0) || digits == 0);
        }
        // A leaking variant is caught: another key gives other draws.
        let t = random_tables(2, 4095, 5);
        let gpu = GpuDyadic::new(ctx, &t).expect("tables");
        let mut a = vec![0i64; 64];
        let mut b = vec![0i64; 64];
        gpu.fill(&k, &wk, 0, &mut a).expect("fill");
        gpu.fill(&ChaCha20::new(&[8; 32], 77), &wk, 0, &mut b)
            .expect("fill");
        assert_ne!(a, b);
        assert!(
            gpu.fill(&k, &ChaCha20::new(&[4; 32], 78), 0, &mut b)
                .is_err(),
            "mismatched streams"
        );
    }
}
