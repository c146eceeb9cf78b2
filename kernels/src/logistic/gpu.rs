//! The logistic kernel's GPU host side through wgpu (Vulkan, Metal, DX12; GL on request).
//! Runs on real GPUs and on Mesa's lavapipe (a Vulkan driver on the CPU), which is how CI tests it.
//!
//! Data stay resident on the device, split into blocks so that no storage binding exceeds
//! 128 MiB and no dispatch exceeds 65535 workgroups per dimension. Each `eval` uploads `w`
//! (f32), runs the passes of `shaders/logistic.wgsl` per block (margins and gradient in one
//! read of the rows, the Hessian, then the reductions of the chunks' partial sums on the
//! device), reads back a (sum, correction) pair per entry and group of up to
//! [`RED_GROUP`] chunks and adds them in f64. The pipelines are built once per kernel.

use super::kernel::{LogisticKernel, LossSums};
use crate::error::KernelError;
use crate::gpu::{
    GpuContext, MAX_WG, Output, build_pipelines, grid, read_pod, storage_entry, uniform_entry,
};
use crate::rows::Rows;

/// The WGSL source, validated at pipeline creation (and by naga in the crate's tests).
pub(crate) const LOGISTIC_WGSL: &str = include_str!("../../../shaders/logistic.wgsl");

/// Rows per gradient partial (the shader's workgroup arrays hold this many).
const GRAD_CHUNK: u32 = 256;
const MIN_HESS_CHUNK: u32 = 1024;
/// Partial sums one reduction invocation adds (well under lavapipe's loop budget).
const RED_GROUP: u32 = 1024;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rows: u32,
    d: u32,
    grad_chunk: u32,
    hess_chunk: u32,
    grad_chunks: u32,
    hess_chunks: u32,
    red_group: u32,
    pad: u32,
}

/// One block of rows resident on the device, with its bind group and reduced sums.
struct Block {
    grad_chunks: u32,
    hess_chunks: u32,
    bind: wgpu::BindGroup,
    /// (sum, correction) per gradient entry and group of chunks.
    gred: Output,
    /// (sum, correction) per Hessian entry and group of chunks.
    hred: Output,
}

/// The passes of `shaders/logistic.wgsl` and their bind-group layout.
struct Pipelines {
    layout: wgpu::BindGroupLayout,
    margins_gradient: wgpu::ComputePipeline,
    hessian: wgpu::ComputePipeline,
    reduce_grad: wgpu::ComputePipeline,
    reduce_hess: wgpu::ComputePipeline,
}

/// `groups` pairs of (sum, correction) for each of `len` entries, added in f64 into `acc`.
fn add_pairs(acc: &mut [f64], pairs: &[f32], len: usize) {
    for group in pairs.chunks_exact(2 * len) {
        for (a, p) in acc.iter_mut().zip(group.chunks_exact(2)) {
            *a += p[0] as f64 + p[1] as f64;
        }
    }
}

impl Pipelines {
    fn new(ctx: &GpuContext) -> Result<Self, KernelError> {
        let (layout, pipes) = build_pipelines(
            ctx,
            "logistic.wgsl",
            LOGISTIC_WGSL,
            &[
                uniform_entry(0),
                storage_entry(1, true),
                storage_entry(2, true),
                storage_entry(3, true),
                storage_entry(4, false),
                storage_entry(5, false),
                storage_entry(6, false),
                storage_entry(7, false),
                storage_entry(8, false),
            ],
            &["margins_gradient", "hessian", "reduce_grad", "reduce_hess"],
        )?;
        let [margins_gradient, hessian, reduce_grad, reduce_hess]: [wgpu::ComputePipeline; 4] =
            pipes
                .try_into()
                .map_err(|_| KernelError::Validation("expected four logistic pipelines".into()))?;
        Ok(Self {
            layout,
            margins_gradient,
            hessian,
            reduce_grad,
            reduce_hess,
        })
    }
}

/// GPU logistic kernel: data resident on the device.
pub struct GpuLogistic {
    ctx: GpuContext,
    pipes: Pipelines,
    n: usize,
    d: usize,
    w_buf: wgpu::Buffer,
    blocks: Vec<Block>,
}

impl std::fmt::Debug for GpuLogistic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "GpuLogistic({}, n = {}, d = {})",
            self.ctx.describe(),
            self.n,
            self.d
        )
    }
}

/// How many rows go in one block (resident buffer set) for dimension d under a binding cap.
pub(crate) fn block_rows(d: usize, cap: u64) -> Result<usize, KernelError> {
    let by_x = cap / (d as u64 * 4);
    let by_stats = cap / 16;
    let by_dispatch = MAX_WG * GRAD_CHUNK as u64; // gradient chunks per block <= 65535
    let rows = by_x.min(by_stats).min(by_dispatch) / MIN_HESS_CHUNK as u64 * MIN_HESS_CHUNK as u64;
    if rows == 0 {
        return Err(KernelError::Input(format!(
            "dimension {d} is too large for one GPU storage binding ({cap} bytes)"
        )));
    }
    Ok(rows as usize)
}

/// Rows per Hessian partial: at least `MIN_HESS_CHUNK`, more if the partials would exceed the cap.
pub(crate) fn hess_chunk(rows: usize, d: usize, cap: u64) -> u32 {
    let per_chunk = (d * d * 4) as u64;
    let max_chunks = (cap / per_chunk).clamp(1, MAX_WG);
    let need = (rows as u64).div_ceil(max_chunks);
    let c = need.max(MIN_HESS_CHUNK as u64).div_ceil(16) * 16;
    c as u32
}

impl GpuLogistic {
    /// Upload the rows to the process's GPU device.
    pub fn new(rows: Rows<'_>) -> Result<Self, KernelError> {
        Self::with_context(GpuContext::shared()?, rows)
    }

    /// Upload the rows to an already opened device.
    pub(crate) fn with_context(ctx: GpuContext, rows: Rows<'_>) -> Result<Self, KernelError> {
        let Rows { x, y, n, d } = rows;
        if n == 0 {
            return Err(KernelError::Input("no rows".into()));
        }
        let pipes = Pipelines::new(&ctx)?;
        let cap = ctx.binding_cap();
        let per_block = block_rows(d, cap)?;
        if (d * d * 4) as u64 > cap {
            return Err(KernelError::Input(format!(
                "a {d} x {d} Hessian does not fit one GPU storage binding"
            )));
        }
        let w_buf = ctx.buffer(
            "w",
            (d * 4) as u64,
            wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        );
        let upload_block = |start: usize| {
            let m = per_block.min(n - start);
            let hc = hess_chunk(m, d, cap);
            let grad_chunks = (m as u32).div_ceil(GRAD_CHUNK);
            let hess_chunks = (m as u32).div_ceil(hc);
            let p = Params {
                rows: m as u32,
                d: d as u32,
                grad_chunk: GRAD_CHUNK,
                hess_chunk: hc,
                grad_chunks,
                hess_chunks,
                red_group: RED_GROUP,
                pad: 0,
            };
            let params = ctx.upload(
                "params",
                bytemuck::bytes_of(&p),
                wgpu::BufferUsages::UNIFORM,
            );
            let xb = ctx.upload(
                "x",
                bytemuck::cast_slice(&x[start * d..(start + m) * d]),
                wgpu::BufferUsages::STORAGE,
            );
            let yb = ctx.upload(
                "y",
                bytemuck::cast_slice(&y[start..start + m]),
                wgpu::BufferUsages::STORAGE,
            );
            let stats = ctx.buffer("stats", m as u64 * 16, wgpu::BufferUsages::STORAGE);
            let st = wgpu::BufferUsages::STORAGE;
            let gpart = ctx.buffer("gpart", grad_chunks as u64 * (d as u64 + 1) * 4, st);
            let hpart = ctx.buffer("hpart", hess_chunks as u64 * (d * d) as u64 * 4, st);
            let groups = |chunks: u32| chunks.div_ceil(RED_GROUP) as u64;
            let gred = ctx.output("gred", groups(grad_chunks) * (d as u64 + 1) * 8);
            let hred = ctx.output("hred", groups(hess_chunks) * (d * d) as u64 * 8);
            let bind = ctx.bind(
                "logistic block",
                &pipes.layout,
                &[
                    &params, &xb, &yb, &w_buf, &stats, &gpart, &hpart, &gred.gpu, &hred.gpu,
                ],
            );
            Block {
                grad_chunks,
                hess_chunks,
                bind,
                gred,
                hred,
            }
        };
        let blocks = ctx.scoped(
            wgpu::ErrorFilter::OutOfMemory,
            || {
                (0..n)
                    .step_by(per_block)
                    .map(upload_block)
                    .collect::<Vec<_>>()
            },
            |e| KernelError::Device(format!("uploading {n} x {d} rows: {e}")),
        )?;
        Ok(Self {
            ctx,
            pipes,
            n,
            d,
            w_buf,
            blocks,
        })
    }

    /// The device in use.
    pub fn context(&self) -> &GpuContext {
        &self.ctx
    }
}

impl LogisticKernel for GpuLogistic {
    fn describe(&self) -> String {
        format!("gpu: {}", self.ctx.describe())
    }

    fn is_gpu(&self) -> bool {
        true
    }

    fn shape(&self) -> (usize, usize) {
        (self.n, self.d)
    }

    fn eval(&self, w: &[f64], hessian: bool) -> Result<LossSums, KernelError> {
        let d = self.d;
        if w.len() != d {
            return Err(KernelError::Input(format!(
                "w has {} entries, data has {d} columns",
                w.len()
            )));
        }
        let ctx = &self.ctx;
        let w32: Vec<f32> = w.iter().map(|&v| v as f32).collect();
        ctx.queue
            .write_buffer(&self.w_buf, 0, bytemuck::cast_slice(&w32));
        ctx.submit("logistic", |enc| {
            for b in &self.blocks {
                {
                    let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                        label: Some("logistic"),
                        timestamp_writes: None,
                    });
                    pass.set_bind_group(0, &b.bind, &[]);
                    pass.set_pipeline(&self.pipes.margins_gradient);
                    pass.dispatch_workgroups(b.grad_chunks, 1, 1);
                    pass.set_pipeline(&self.pipes.reduce_grad);
                    let (gx, gy) = grid(d as u64 + 1, 64);
                    pass.dispatch_workgroups(gx, gy, b.grad_chunks.div_ceil(RED_GROUP));
                    if hessian {
                        let tiles = (d as u32).div_ceil(16);
                        pass.set_pipeline(&self.pipes.hessian);
                        pass.dispatch_workgroups(tiles, tiles, b.hess_chunks);
                        pass.set_pipeline(&self.pipes.reduce_hess);
                        let (gx, gy) = grid((d * d) as u64, 64);
                        pass.dispatch_workgroups(gx, gy, b.hess_chunks.div_ceil(RED_GROUP));
                    }
                }
                b.gred.copy_back(enc);
                if hessian {
                    b.hred.copy_back(enc);
                }
            }
        })?;
        let mut sums = vec![0.0f64; d + 1];
        let mut hup = hessian.then(|| vec![0.0f64; d * d]);
        for b in &self.blocks {
            add_pairs(&mut sums, &read_pod::<f32>(ctx, &b.gred.read)?, d + 1);
            if let Some(h) = hup.as_mut() {
                add_pairs(h, &read_pod::<f32>(ctx, &b.hred.read)?, d * d);
            }
        }
        let loss = sums[d];
        sums.truncate(d);
        let grad = sums;
        let hess = hup.map(|mut h| {
            for j in 0..d {
                for k in 0..j {
                    h[j * d + k] = h[k * d + j];
                }
            }
            h
        });
        Ok(LossSums { loss, grad, hess })
    }
}

#[cfg(test)]
mod tests {
    use super::super::cpu::CpuLogistic;
    use super::*;
    use rand::{Rng, SeedableRng};

    fn data(n: usize, d: usize, seed: u64) -> (Vec<f32>, Vec<f32>, Vec<f64>) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let x: Vec<f32> = (0..n * d)
            .map(|_| rng.random_range(-1.0f32..1.0) / (d as f32).sqrt())
            .collect();
        let y: Vec<f32> = (0..n)
            .map(|_| if rng.random_bool(0.4) { 1.0 } else { -1.0 })
            .collect();
        let w: Vec<f64> = (0..d).map(|_| rng.random_range(-2.0..2.0)).collect();
        (x, y, w)
    }

    fn rel(a: &[f64], b: &[f64]) -> f64 {
        let num: f64 = a
            .iter()
            .zip(b)
            .map(|(x, y)| (x - y) * (x - y))
            .sum::<f64>()
            .sqrt();
        let den: f64 = b.iter().map(|y| y * y).sum::<f64>().sqrt();
        num / den.max(1e-300)
    }

    /// GPU vs CPU on the same data, relative 1e-5, the partial sums reduced on the device
    /// (300,000 rows: 1,172 gradient chunks, two reduction groups). Must FAIL (not skip)
    /// without an adapter: CI installs lavapipe so that an adapter always exists there.
    #[test]
    fn gpu_matches_cpu() {
        let ctx = GpuContext::shared().expect("a GPU adapter (lavapipe in CI) must be available");
        eprintln!("adapter: {}", ctx.describe());
        assert!(300_000u32.div_ceil(GRAD_CHUNK) > RED_GROUP);
        for &(n, d) in &[(5000usize, 123usize), (3001, 7), (1500, 40), (300_000, 7)] {
            let (x, y, w) = data(n, d, n as u64);
            let rows = Rows::new(&x, &y, d).expect("shape");
            let cpu = CpuLogistic::new(rows).eval(&w, true).expect("cpu");
            let ctx = GpuContext::shared().expect("adapter");
            let gpu = GpuLogistic::with_context(ctx, rows)
                .expect("upload")
                .eval(&w, true)
                .expect("gpu");
            assert!(
                (gpu.loss - cpu.loss).abs() / cpu.loss < 1e-5,
                "loss {} vs {}",
                gpu.loss,
                cpu.loss
            );
            assert!(
                rel(&gpu.grad, &cpu.grad) < 1e-5,
                "grad rel {}",
                rel(&gpu.grad, &cpu.grad)
            );
            let (gh, ch) = (gpu.hess.expect("hess"), cpu.hess.expect("hess"));
            assert!(rel(&gh, &ch) < 1e-5, "hess rel {}", rel(&gh, &ch));
        }
    }

    #[test]
    fn blocks_split_large_data() {
        // Tiny binding cap forces many blocks and bigger Hessian chunks.
        let d = 123;
        let rows = block_rows(d, 1 << 20).expect("fits");
        assert!(rows * d * 4 <= 1 << 20 && rows.is_multiple_of(1024));
        let hc = hess_chunk(1_000_000, 1000, 128 << 20);
        assert!((1_000_000u64.div_ceil(hc as u64)) * 1000 * 1000 * 4 <= 128 << 20);
        assert!(block_rows(100_000_000, 128 << 20).is_err());
    }
}
