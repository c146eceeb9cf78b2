//! The `passes` kernel's GPU host side: the rows resident on the device in the blocks of
//! [`super::layout`], one submission per pass (every block's passes of
//! `shaders/passes.wgsl`), the groups' sums read back and added in f64 in order.

use super::cpu::mirror_upper;
use super::layout::{Block, CHUNK, RED_GROUP, layout};
use crate::error::KernelError;
use crate::gpu::{
    BufferPool, GpuContext, Output, build_pipelines, grid, read_pod, storage_entry, uniform_entry,
};
use crate::logistic::{LogisticKernel, LossSums};
use crate::rows::Rows;

/// The WGSL source, validated at pipeline creation (and by naga in the crate's tests).
pub(crate) const PASSES_WGSL: &str = include_str!("../../../shaders/passes.wgsl");

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rows: u32,
    d: u32,
    chunk: u32,
    chunks: u32,
    hess_chunk: u32,
    hess_chunks: u32,
    red_group: u32,
    pad: u32,
}

/// One block's bind group and its reduced sums.
struct Resident {
    shape: Block,
    bind: wgpu::BindGroup,
    /// The gradient and loss sums per group of chunks.
    gred: Output,
    /// The Hessian sums per group of chunks.
    hred: Output,
}

/// The shader's pipelines and their bind-group layout.
pub(crate) struct Pipelines {
    layout: wgpu::BindGroupLayout,
    margins_gradient: wgpu::ComputePipeline,
    hessian: wgpu::ComputePipeline,
    reduce_grad: wgpu::ComputePipeline,
    reduce_hess: wgpu::ComputePipeline,
}

impl Pipelines {
    /// Compile the shader's four entries.
    pub(crate) fn new(ctx: &GpuContext) -> Result<Self, KernelError> {
        let mut entries = vec![uniform_entry(0)];
        entries.extend((1..=3).map(|b| storage_entry(b, true)));
        entries.extend((4..=8).map(|b| storage_entry(b, false)));
        let (layout, pipes) = build_pipelines(
            ctx,
            "passes.wgsl",
            PASSES_WGSL,
            &entries,
            &["margins_gradient", "hessian", "reduce_grad", "reduce_hess"],
        )?;
        let [margins_gradient, hessian, reduce_grad, reduce_hess]: [wgpu::ComputePipeline; 4] =
            pipes
                .try_into()
                .map_err(|_| KernelError::Validation("expected four passes pipelines".into()))?;
        Ok(Self {
            layout,
            margins_gradient,
            hessian,
            reduce_grad,
            reduce_hess,
        })
    }
}

/// Training's full-data passes on the device, in f64.
pub struct GpuPasses {
    ctx: GpuContext,
    pipes: Pipelines,
    n: usize,
    d: usize,
    w_buf: wgpu::Buffer,
    blocks: Vec<Resident>,
}

impl std::fmt::Debug for GpuPasses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "GpuPasses({}, n = {}, d = {}, {} blocks)",
            self.ctx.describe(),
            self.n,
            self.d,
            self.blocks.len()
        )
    }
}

impl GpuPasses {
    /// Upload the rows to an opened device with 64-bit floats.
    pub fn with_context(ctx: GpuContext, rows: Rows<'_>) -> Result<Self, KernelError> {
        Self::with_cap(ctx, rows, None)
    }

    /// As [`with_context`](Self::with_context), with storage bindings of at most `cap`
    /// bytes when given (tests force many blocks with a small one).
    pub(crate) fn with_cap(
        ctx: GpuContext,
        rows: Rows<'_>,
        cap: Option<u64>,
    ) -> Result<Self, KernelError> {
        let Rows { x, y, n, d } = rows;
        if !ctx.has_f64() {
            return Err(KernelError::Device(format!(
                "{} has no 64-bit floats (SHADER_F64): training's passes stay on the CPU",
                ctx.describe()
            )));
        }
        let cap = cap
            .unwrap_or_else(|| ctx.binding_cap())
            .min(ctx.binding_cap());
        let shapes = layout(n, d, cap)?;
        let pipes = Pipelines::new(&ctx)?;
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
        let w_buf = ctx.buffer("passes w", (d * 8) as u64, usage);
        let st = wgpu::BufferUsages::STORAGE;
        let (dev, queue, staged) = (&ctx.device, &ctx.queue, BufferPool::default());
        let upload = |b: Block| {
            let p = Params {
                rows: b.rows as u32,
                d: d as u32,
                chunk: CHUNK as u32,
                chunks: b.chunks() as u32,
                hess_chunk: b.hess_chunk as u32,
                hess_chunks: b.hess_chunks() as u32,
                red_group: RED_GROUP as u32,
                pad: 0,
            };
            let params = ctx.upload(
                "passes params",
                bytemuck::bytes_of(&p),
                wgpu::BufferUsages::UNIFORM,
            );
            // The rows through wgpu's staging memory filled on every core, then sent
            // and waited for block by block: one block's staging alive at a time, and
            // the upload's time is the transfer's, not the copy into staging's alone.
            let xs = &x[b.start * d..(b.start + b.rows) * d];
            let xb = staged.upload_par(dev, queue, "passes x", bytemuck::cast_slice(xs), st);
            let ys = &y[b.start..b.start + b.rows];
            let yb = staged.upload_par(dev, queue, "passes y", bytemuck::cast_slice(ys), st);
            let dws = ctx.buffer("passes dws", b.rows as u64 * 8, st);
            let gpart = ctx.buffer("passes gpart", (b.chunks() * (d + 1) * 8) as u64, st);
            let hpart = ctx.buffer("passes hpart", (b.hess_chunks() * d * d * 8) as u64, st);
            let groups = |chunks: usize| chunks.div_ceil(RED_GROUP);
            let gred = ctx.output("passes gred", (groups(b.chunks()) * (d + 1) * 8) as u64);
            let hred = ctx.output("passes hred", (groups(b.hess_chunks()) * d * d * 8) as u64);
            let bind = ctx.bind(
                "passes block",
                &pipes.layout,
                &[
                    &params, &xb, &yb, &w_buf, &dws, &gpart, &hpart, &gred.gpu, &hred.gpu,
                ],
            );
            Resident {
                shape: b,
                bind,
                gred,
                hred,
            }
        };
        let blocks = ctx.scoped(
            wgpu::ErrorFilter::OutOfMemory,
            || {
                shapes
                    .into_iter()
                    .map(|b| {
                        let block = upload(b);
                        ctx.wait(ctx.submit("passes upload", |_| {})?)?;
                        Ok(block)
                    })
                    .collect::<Result<Vec<_>, KernelError>>()
            },
            |e| KernelError::Device(format!("uploading {n} x {d} rows: {e}")),
        )??;
        Ok(Self {
            ctx,
            pipes,
            n,
            d,
            w_buf,
            blocks,
        })
    }

    /// Record one block's passes.
    fn record(&self, enc: &mut wgpu::CommandEncoder, b: &Resident, hessian: bool) {
        let d = self.d;
        let (chunks, hess_chunks) = (b.shape.chunks() as u32, b.shape.hess_chunks() as u32);
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("passes"),
                timestamp_writes: None,
            });
            pass.set_bind_group(0, &b.bind, &[]);
            pass.set_pipeline(&self.pipes.margins_gradient);
            pass.dispatch_workgroups(chunks, 1, 1);
            pass.set_pipeline(&self.pipes.reduce_grad);
            let (gx, gy) = grid(d as u64 + 1, 64);
            pass.dispatch_workgroups(gx, gy, chunks.div_ceil(RED_GROUP as u32));
            if hessian {
                let tiles = (d as u32).div_ceil(16);
                pass.set_pipeline(&self.pipes.hessian);
                pass.dispatch_workgroups(tiles, tiles, hess_chunks);
                pass.set_pipeline(&self.pipes.reduce_hess);
                let (gx, gy) = grid((d * d) as u64, 64);
                pass.dispatch_workgroups(gx, gy, hess_chunks.div_ceil(RED_GROUP as u32));
            }
        }
        b.gred.copy_back(enc);
        if hessian {
            b.hred.copy_back(enc);
        }
    }
}

/// Add the groups' sums (`len` values each) into `acc`, in order.
fn add_groups(acc: &mut [f64], groups: &[f64], len: usize) {
    for group in groups.chunks_exact(len) {
        for (a, g) in acc.iter_mut().zip(group) {
            *a += g;
        }
    }
}

impl LogisticKernel for GpuPasses {
    fn describe(&self) -> String {
        format!("gpu f64 passes: {}", self.ctx.describe())
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
        ctx.queue
            .write_buffer(&self.w_buf, 0, bytemuck::cast_slice(w));
        ctx.submit("passes", |enc| {
            for b in &self.blocks {
                self.record(enc, b, hessian);
            }
        })?;
        let mut sums = vec![0.0f64; d + 1];
        let mut hess = hessian.then(|| vec![0.0f64; d * d]);
        for b in &self.blocks {
            add_groups(&mut sums, &read_pod::<f64>(ctx, &b.gred.read)?, d + 1);
            if let Some(h) = hess.as_mut() {
                add_groups(h, &read_pod::<f64>(ctx, &b.hred.read)?, d * d);
            }
        }
        let loss = sums[d];
        sums.truncate(d);
        Ok(LossSums {
            loss,
            grad: sums,
            hess: hess.map(|h| mirror_upper(h, d)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::cpu;
    use super::*;

    /// `got` within `tol * scale[l]` of `want`, entry by entry.
    fn close(got: &[f64], want: &[f64], scale: &[f64], tol: f64, what: &str) {
        for (l, ((a, b), s)) in got.iter().zip(want).zip(scale).enumerate() {
            assert!(
                (a - b).abs() <= tol * s,
                "{what}[{l}]: {a} vs {b} (scale {s})"
            );
        }
    }

    /// The device's sums match the twin's within 1e-12 of the terms' magnitudes (lavapipe
    /// may round fma twice: see `shaders/passes.wgsl`), in one block and in many (a small
    /// binding cap), with two reduction groups, margins large enough to reach exp's floor
    /// and every Hessian tile shape (d not a multiple of 16); the same bits on every run.
    /// A shader with f32 margins or sums misses by 1e-7 and fails. Must FAIL (not skip)
    /// without an adapter with 64-bit floats: CI installs lavapipe, which has them.
    #[test]
    fn gpu_matches_twin() {
        let ctx = GpuContext::shared().expect("a GPU adapter (lavapipe in CI) must be available");
        assert!(ctx.has_f64(), "{} has no SHADER_F64", ctx.describe());
        for &(n, d, cap, scale) in &[
            (3001usize, 17usize, None, 1.0f32),
            (5000, 40, Some(256u64 << 10), 1.0),
            (263_000, 3, None, 1.0),
            (700, 5, None, 400.0),
        ] {
            let x: Vec<f32> = crate::test_rows(n, d, n as u64)
                .iter()
                .map(|v| (v - 0.5) * scale)
                .collect();
            let y: Vec<f32> = (0..n)
                .map(|i| if i % 3 == 0 { 1.0 } else { -1.0 })
                .collect();
            let w: Vec<f64> = (0..d).map(|j| (j as f64 - d as f64 / 2.0) * 0.9).collect();
            let rows = Rows::new(&x, &y, d).expect("shape");
            let gpu = GpuPasses::with_cap(ctx.clone(), rows, cap).expect("upload");
            let cap = cap.unwrap_or_else(|| ctx.binding_cap());
            if n == 263_000 {
                assert!(layout(n, d, cap).expect("layout")[0].chunks() > RED_GROUP);
            }
            // Sums of |terms|: |coef| <= 1, the Hessian weight <= 1/4.
            let col = |j: usize| x.chunks_exact(d).map(|r| r[j].abs() as f64).sum::<f64>();
            let gscale: Vec<f64> = (0..d).map(col).collect();
            let hscale: Vec<f64> = (0..d * d)
                .map(|l| {
                    let (j, k) = (l / d, l % d);
                    x.chunks_exact(d)
                        .map(|r| (r[j] * r[k]).abs() as f64 / 4.0)
                        .sum::<f64>()
                })
                .collect();
            for hessian in [false, true] {
                let got = gpu.eval(&w, hessian).expect("gpu");
                let want = cpu::sums(rows, &w, hessian, cap).expect("twin");
                let at = format!("at {n} x {d}");
                close(
                    &[got.loss],
                    &[want.loss],
                    &[want.loss],
                    1e-12,
                    &format!("loss {at}"),
                );
                close(
                    &got.grad,
                    &want.grad,
                    &gscale,
                    1e-12,
                    &format!("gradient {at}"),
                );
                assert_eq!(got.hess.is_some(), hessian);
                if let (Some(g), Some(h)) = (&got.hess, &want.hess) {
                    close(g, h, &hscale, 1e-12, &format!("Hessian {at}"));
                }
                let again = gpu.eval(&w, hessian).expect("gpu");
                assert_eq!(again, got, "a second run {at} gave other bits");
            }
        }
    }
}
