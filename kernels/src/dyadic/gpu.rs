//! The `dyadic` kernel's GPU host side: the law's tables uploaded once per law, then per
//! range of counters one dispatch per 2^22 counters (32 MiB of output, within the binding
//! cap; one invocation per keystream block of four counters, workgroups of 64 on a 2-D grid
//! within 65,535 per dimension), the draws read back as `i64`. The keys travel in a uniform
//! buffer of the process's own device and are dropped with it.

use super::tables::{DyadicTables, MAX_DIGITS};
use crate::chacha::ChaCha20;
use crate::error::KernelError;
use crate::gpu::{GpuContext, MAX_WG, build_pipelines, read_pod, storage_entry, uniform_entry};
use std::sync::{Arc, OnceLock};

/// The WGSL source.
pub(crate) const DYADIC_WGSL: &str = include_str!("../../../shaders/dyadic.wgsl");

/// Invocations per workgroup (the shader's `@workgroup_size`).
const WG: u64 = 64;
/// Counters per dispatch (32 MiB of output).
const MAX_COUNTERS: usize = 1 << 22;
/// Rows of the uniform parameter block (`Params.v`).
const PARAM_ROWS: usize = 7 + MAX_DIGITS;

/// The one pipeline of the process (the device is process-wide: [`GpuContext::shared`]).
type Pipe = (wgpu::BindGroupLayout, wgpu::ComputePipeline);
static PIPE: OnceLock<Result<Arc<Pipe>, KernelError>> = OnceLock::new();

fn pipeline(ctx: &GpuContext) -> Result<Arc<Pipe>, KernelError> {
    PIPE.get_or_init(|| {
        let entries = [
            uniform_entry(0),
            storage_entry(1, true),
            storage_entry(2, false),
        ];
        let (layout, mut pipes) =
            build_pipelines(&ctx.device, "dyadic", DYADIC_WGSL, &entries, &["draw"])?;
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
            self.dispatch(keystream, wide, first + (c * MAX_COUNTERS) as u64, chunk)?;
        }
        Ok(())
    }

    fn dispatch(
        &self,
        keystream: &ChaCha20,
        wide: &ChaCha20,
        first: u64,
        out: &mut [i64],
    ) -> Result<(), KernelError> {
        if out.is_empty() {
            return Ok(());
        }
        let ctx = &self.ctx;
        let (key, stream) = keystream.state_words();
        let (wide_key, wide_stream) = wide.state_words();
        if wide_stream != stream {
            return Err(KernelError::Input(
                "dyadic: the wide keystream must have the counters' stream".into(),
            ));
        }
        let count = out.len() as u64;
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
        let params = ctx.upload(
            "dyadic params",
            bytemuck::cast_slice(&p),
            wgpu::BufferUsages::UNIFORM,
        );
        let output = ctx.output("dyadic draws", 8 * count);
        ctx.scoped(
            wgpu::ErrorFilter::Validation,
            || {
                let mut enc = ctx
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("dyadic"),
                    });
                let bind = ctx.bind(
                    "dyadic",
                    &self.pipe.0,
                    &[&params, &self.tables, &output.gpu],
                );
                {
                    let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                        label: Some("draw"),
                        timestamp_writes: None,
                    });
                    pass.set_pipeline(&self.pipe.1);
                    pass.set_bind_group(0, &bind, &[]);
                    pass.dispatch_workgroups(gx as u32, gy as u32, 1);
                }
                output.copy_back(&mut enc);
                ctx.queue.submit([enc.finish()]);
            },
            KernelError::Validation,
        )?;
        let draws = read_pod::<i64>(&ctx.device, &output.read)?;
        if draws.len() != out.len() {
            return Err(KernelError::Map(format!(
                "dyadic: {} draws read back for {} counters",
                draws.len(),
                out.len()
            )));
        }
        out.copy_from_slice(&draws);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dyadic::cpu;
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
            assert!(want.contains(&crate::dyadic::tables::SLOW) || n < 5000);
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
