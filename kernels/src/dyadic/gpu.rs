//! The `dyadic` kernel's GPU host side: the law's tables uploaded once per law, then per
//! range of counters one dispatch per 2^22 counters (32 MiB of output, within the binding
//! cap; one invocation per keystream block of four counters, workgroups of 64 on a 2-D grid
//! within 65,535 per dimension), the draws read back as `i64`. The keys travel in a uniform
//! buffer of the process's own device and are dropped with it.

use super::tables::{DyadicTables, MAX_DIGITS, SLOW};
use crate::chacha::ChaCha20;
use crate::error::KernelError;
use crate::gpu::{
    GpuContext, MAX_WG, Output, build_pipelines, dispatch, read_pod, storage_entry, uniform_entry,
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

/// The one pipeline of the process (the device is process-wide: [`GpuContext::shared`]).
type Pipe = (wgpu::BindGroupLayout, wgpu::ComputePipeline);
static PIPE: OnceLock<Result<Arc<Pipe>, KernelError>> = OnceLock::new();

fn pipeline(ctx: &GpuContext) -> Result<Arc<Pipe>, KernelError> {
    PIPE.get_or_init(|| {
        let entries = [
            uniform_entry(0),
            storage_entry(1, true),
            storage_entry(2, false),
            storage_entry(3, false),
        ];
        let (layout, mut pipes) = build_pipelines(ctx, "dyadic", DYADIC_WGSL, &entries, &["draw"])?;
        let pipe = pipes
            .pop()
            .ok_or_else(|| KernelError::Validation("dyadic: no pipeline".into()))?;
        Ok(Arc::new((layout, pipe)))
    })
    .clone()
}

/// Draws of one law's counters on the GPU, bit for bit [`cpu::fill`](super::cpu::fill).
#[derive(Clone)]
pub struct GpuDyadic {
    ctx: GpuContext,
    pipe: Arc<Pipe>,
    tables: Arc<wgpu::Buffer>,
    /// Rows 5 (digit count in `.w`), 6 (M) and 7.. (digits) of the parameters.
    law: [[u32; 4]; PARAM_ROWS],
}

impl std::fmt::Debug for GpuDyadic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GpuDyadic({})", self.ctx.describe())
    }
}

impl GpuDyadic {
    /// The law `tables` on `ctx` (checked, then uploaded once).
    pub fn new(ctx: GpuContext, tables: &DyadicTables) -> Result<Self, KernelError> {
        tables.check()?;
        let pipe = pipeline(&ctx)?;
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
            pipe,
            tables: Arc::new(tables),
            law,
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
            let (z, _) = self.run(keystream, wide, at, chunk.len(), 0)?;
            let draws = self.read(&z, chunk.len())?;
            chunk.copy_from_slice(&draws);
        }
        Ok(())
    }

    /// The draws of counters `first .. first + count` left on the device (for a kernel that
    /// continues there), with the indices of the [`SLOW`] ones, sorted; the caller
    /// finishes those and [`patch`](Self::patch)es them in. At most [`MAX_DEVICE_COUNTERS`].
    pub fn fill_device(
        &self,
        keystream: &ChaCha20,
        wide: &ChaCha20,
        first: u64,
        count: usize,
    ) -> Result<DeviceDraws, KernelError> {
        if count == 0 || count > MAX_DEVICE_COUNTERS {
            return Err(KernelError::Input(format!(
                "dyadic: {count} counters on the device (1 ..= {MAX_DEVICE_COUNTERS})"
            )));
        }
        // Room for eight times the expected share of slow draws (about 1 in 2,000 for the
        // laws of the decayed sums; more for laws with a tiny block, which then read
        // everything back).
        let room = count / 256 + 1024;
        let (z, list) = self.run(keystream, wide, first, count, room)?;
        let list = read_pod::<u32>(&self.ctx, &list.read)?;
        let n = list.first().copied().unwrap_or(0) as usize;
        let mut slow: Vec<u32> = if n <= room {
            list[1..=n].to_vec()
        } else {
            let all = self.read(&z, count)?;
            (0..count as u32)
                .filter(|&i| all[i as usize] == SLOW)
                .collect()
        };
        slow.sort_unstable();
        if slow.iter().any(|&i| i as usize >= count) {
            return Err(KernelError::Map("dyadic: a slow index out of range".into()));
        }
        Ok(DeviceDraws {
            buf: z,
            count,
            slow,
        })
    }

    /// Writes the caller's finished draws for `d.slow` (same order) into `d`.
    pub fn patch(&self, d: &DeviceDraws, fixed: &[i64]) -> Result<(), KernelError> {
        if fixed.len() != d.slow.len() {
            return Err(KernelError::Input(format!(
                "dyadic: {} draws for {} slow counters",
                fixed.len(),
                d.slow.len()
            )));
        }
        for (&i, v) in d.slow.iter().zip(fixed) {
            self.ctx
                .queue
                .write_buffer(&d.buf, 8 * u64::from(i), bytemuck::bytes_of(v));
        }
        Ok(())
    }

    /// Every draw of `d`, read back (tests, and the rare batch with many slow draws).
    pub fn read_device(&self, d: &DeviceDraws) -> Result<Vec<i64>, KernelError> {
        self.read(&d.buf, d.count)
    }

    /// The `count` draws in `z`, through a mappable buffer made for the purpose (most
    /// batches never come back: the next kernel reads them on the device).
    fn read(&self, z: &wgpu::Buffer, count: usize) -> Result<Vec<i64>, KernelError> {
        let ctx = &self.ctx;
        let out = Output {
            gpu: z.clone(),
            read: ctx.buffer(
                "dyadic draws",
                8 * count as u64,
                wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            ),
        };
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("dyadic read"),
            });
        out.copy_back(&mut enc);
        ctx.queue.submit([enc.finish()]);
        read_pod::<i64>(ctx, &out.read)
    }

    /// One dispatch: the draws into a device buffer (and its read-back twin), the slow
    /// indices into a list with `room` entries (copied back, count first).
    fn run(
        &self,
        keystream: &ChaCha20,
        wide: &ChaCha20,
        first: u64,
        count: usize,
        room: usize,
    ) -> Result<(wgpu::Buffer, Output), KernelError> {
        let ctx = &self.ctx;
        let (key, stream) = keystream.state_words();
        let (wide_key, wide_stream) = wide.state_words();
        if wide_stream != stream {
            return Err(KernelError::Input(
                "dyadic: the wide keystream must have the counters' stream".into(),
            ));
        }
        let count = count as u64;
        let blocks = ((first % 4) + count).div_ceil(4);
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
        p[5][..3].copy_from_slice(&[first as u32, (first >> 32) as u32, count as u32]);
        p[6][2] = blocks as u32;
        p[6][3] = gx as u32;
        p[11][0] = room as u32;
        let params = ctx.upload(
            "dyadic params",
            bytemuck::cast_slice(&p),
            wgpu::BufferUsages::UNIFORM,
        );
        let z = ctx.buffer(
            "dyadic draws",
            8 * count,
            wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
        );
        let zeros = vec![0u32; room + 1];
        let list = Output {
            gpu: ctx.upload(
                "dyadic slow",
                bytemuck::cast_slice(&zeros),
                wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            ),
            read: ctx.buffer(
                "dyadic slow",
                4 * (room as u64 + 1),
                wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            ),
        };
        ctx.submit("dyadic", |enc| {
            let bind = ctx.bind(
                "dyadic",
                &self.pipe.0,
                &[&params, &self.tables, &z, &list.gpu],
            );
            dispatch(enc, &self.pipe.1, &bind, (gx as u32, gy as u32));
            if room > 0 {
                list.copy_back(enc);
            }
        })?;
        Ok((z, list))
    }
}

/// Draws left on the device by [`GpuDyadic::fill_device`].
#[derive(Debug)]
pub struct DeviceDraws {
    /// The draws (i64, little-endian), bound by the next kernel.
    pub(crate) buf: wgpu::Buffer,
    /// How many.
    pub count: usize,
    /// Indices of the [`SLOW`] draws, sorted.
    pub slow: Vec<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dyadic::cpu;
    use crate::dyadic::tables::SLOW;
    use crate::dyadic::tables::random_tables;

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
