//! GPU k-means step: rows resident on the device in blocks (each binding <= 128 MiB, each
//! dispatch <= 65535 workgroups per dimension), `shaders/kmeans.wgsl` assigns each row to
//! its nearest centre, the host reads the assignments back and adds sizes and coordinate
//! sums in f64 (rayon). The CPU twin is [`crate::kmeans::cpu::kmeans_sums`].

use super::sums::{KmeansKernel, KmeansSums, accumulate};
use crate::error::KernelError;
use crate::gpu::{
    GpuContext, MAX_WG, Output, build_pipelines, dispatch, grid_256, read_pod, storage_entry,
    uniform_entry,
};

/// The WGSL source.
pub(crate) const KMEANS_WGSL: &str = include_str!("../../../shaders/kmeans.wgsl");

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rows: u32,
    d: u32,
    k: u32,
    pad: u32,
}

/// One block of rows resident on the device, with its outputs.
struct Block {
    start: usize,
    rows: u32,
    x: wgpu::Buffer,
    assign: Output,
    dist: Output,
}

/// Rows resident on a GPU, ready for k-means steps.
pub struct GpuKmeans<'a> {
    ctx: GpuContext,
    x: &'a [f32],
    d: usize,
    layout: wgpu::BindGroupLayout,
    pipeline: wgpu::ComputePipeline,
    blocks: Vec<Block>,
}

impl std::fmt::Debug for GpuKmeans<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GpuKmeans({}, d = {})", self.ctx.describe(), self.d)
    }
}

impl<'a> GpuKmeans<'a> {
    /// Upload row-major `x` (`d` columns) to the device of `ctx`.
    pub fn new(ctx: GpuContext, x: &'a [f32], d: usize) -> Result<Self, KernelError> {
        if d == 0 || x.is_empty() || !x.len().is_multiple_of(d) {
            return Err(KernelError::Input(format!(
                "{} values are not whole rows of {d} columns",
                x.len()
            )));
        }
        let n = x.len() / d;
        let cap = ctx.binding_cap();
        let per_block = ((cap / (d as u64 * 4)).min(MAX_WG * 256) as usize).max(1);
        let (layout, mut pipes) = build_pipelines(
            &ctx,
            "kmeans.wgsl",
            KMEANS_WGSL,
            &[
                uniform_entry(0),
                storage_entry(1, true),
                storage_entry(2, true),
                storage_entry(3, false),
                storage_entry(4, false),
            ],
            &["assign_rows"],
        )?;
        let pipeline = pipes
            .pop()
            .ok_or_else(|| KernelError::Validation("no k-means pipeline".into()))?;
        let blocks = ctx.scoped(
            wgpu::ErrorFilter::OutOfMemory,
            || {
                (0..n)
                    .step_by(per_block)
                    .map(|start| {
                        let m = per_block.min(n - start);
                        let rows = bytemuck::cast_slice(&x[start * d..(start + m) * d]);
                        Block {
                            start,
                            rows: m as u32,
                            x: ctx.upload("x", rows, wgpu::BufferUsages::STORAGE),
                            assign: ctx.output("assign", m as u64 * 4),
                            dist: ctx.output("dist", m as u64 * 4),
                        }
                    })
                    .collect::<Vec<_>>()
            },
            |e| KernelError::Device(format!("uploading {n} x {d} rows: {e}")),
        )?;
        Ok(Self {
            ctx,
            x,
            d,
            layout,
            pipeline,
            blocks,
        })
    }

    /// Nearest centre and squared distance of every row (the shader's output).
    pub(crate) fn assign(&self, centers: &[f64]) -> Result<(Vec<u32>, Vec<f32>), KernelError> {
        let d = self.d;
        if centers.is_empty() || !centers.len().is_multiple_of(d) {
            return Err(KernelError::Input(format!(
                "{} centre values are not whole centres of {d} columns",
                centers.len()
            )));
        }
        let k = centers.len() / d;
        let ctx = &self.ctx;
        let c32: Vec<f32> = centers.iter().map(|&v| v as f32).collect();
        let cbuf = ctx.upload(
            "centers",
            bytemuck::cast_slice(&c32),
            wgpu::BufferUsages::STORAGE,
        );
        ctx.submit("kmeans", |enc| {
            for b in &self.blocks {
                let p = Params {
                    rows: b.rows,
                    d: d as u32,
                    k: k as u32,
                    pad: 0,
                };
                let params = ctx.upload(
                    "params",
                    bytemuck::bytes_of(&p),
                    wgpu::BufferUsages::UNIFORM,
                );
                let bind = ctx.bind(
                    "kmeans block",
                    &self.layout,
                    &[&params, &b.x, &cbuf, &b.assign.gpu, &b.dist.gpu],
                );
                dispatch(enc, &self.pipeline, &bind, grid_256(b.rows));
                b.assign.copy_back(enc);
                b.dist.copy_back(enc);
            }
        })?;
        let mut assign = Vec::with_capacity(self.x.len() / d);
        let mut dist = Vec::with_capacity(self.x.len() / d);
        for b in &self.blocks {
            debug_assert_eq!(assign.len(), b.start);
            assign.extend(read_pod::<u32>(ctx, &b.assign.read)?);
            dist.extend(read_pod::<f32>(ctx, &b.dist.read)?);
        }
        if let Some(&bad) = assign.iter().find(|&&j| j as usize >= k) {
            return Err(KernelError::Validation(format!(
                "centre index {bad} out of range"
            )));
        }
        Ok((assign, dist))
    }
}

impl KmeansKernel for GpuKmeans<'_> {
    /// One Lloyd step's sums: assignments on the GPU, f64 sums on the host.
    fn sums(&self, centers: &[f64]) -> Result<KmeansSums, KernelError> {
        let (assign, dist) = self.assign(centers)?;
        Ok(accumulate(
            self.x,
            self.d,
            centers.len() / self.d,
            |i, _| (assign[i] as usize, dist[i]),
        ))
    }

    fn describe(&self) -> String {
        format!("gpu: {}", self.ctx.describe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmeans::cpu::kmeans_sums;
    use crate::kmeans::nearest;
    use rand::{Rng, SeedableRng};

    /// GPU assignments equal the CPU twin's (a near-tie may flip under a fused
    /// multiply-add: allowed only where the two distances agree to 1e-5), and the sums
    /// agree. Fails, not skips, without an adapter (CI installs lavapipe).
    #[test]
    fn gpu_assignments_match_cpu() {
        let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for &(n, d, k) in &[(20_000usize, 50usize, 8usize), (3_001, 3, 5)] {
            let x: Vec<f32> = (0..n * d).map(|_| r.random::<f32>()).collect();
            let centers: Vec<f64> = (0..k * d).map(|_| r.random::<f64>()).collect();
            let ctx =
                GpuContext::shared().expect("a GPU adapter (lavapipe in CI) must be available");
            let g = GpuKmeans::new(ctx, &x, d).expect("upload");
            let (assign, dist) = g.assign(&centers).expect("gpu");
            let c32: Vec<f32> = centers.iter().map(|&v| v as f32).collect();
            let mut flips = 0;
            for i in 0..n {
                let (j, dj) = nearest(&x[i * d..(i + 1) * d], &c32, d);
                assert!(
                    (dist[i] - dj).abs() <= 1e-5 * dj.max(1.0),
                    "row {i}: {} vs {dj}",
                    dist[i]
                );
                if assign[i] as usize != j {
                    flips += 1;
                }
            }
            assert!(
                flips * 1000 <= n,
                "{flips} of {n} rows assigned differently"
            );
            let cpu = kmeans_sums(&x, d, &centers).expect("cpu");
            let gpu = g.sums(&centers).expect("gpu");
            assert!((gpu.inertia - cpu.inertia).abs() <= 1e-5 * cpu.inertia);
            let diff: f64 = gpu
                .counts
                .iter()
                .zip(&cpu.counts)
                .map(|(a, b)| (a - b).abs())
                .sum();
            assert!(diff <= 2.0 * flips as f64);
        }
    }
}
