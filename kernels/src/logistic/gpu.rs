//! The logistic kernel's GPU host side through wgpu (Vulkan, Metal, DX12; GL on request). Runs on real GPUs and on
//! Mesa's lavapipe (a Vulkan driver on the CPU), which is how CI tests it.
//!
//! Data stay resident on the device, split into blocks so that no storage binding exceeds
//! 128 MiB and no dispatch exceeds 65535 workgroups per dimension. Each `eval` uploads `w`
//! (f32), runs the three passes of `shaders/logistic.wgsl` per block, reads the per-chunk
//! partial sums back and adds them in f64. The pipelines are built once per kernel.

use super::kernel::{LogisticKernel, LossSums};
use crate::error::KernelError;
use crate::gpu::{GpuContext, MAX_WG, build_pipelines, read_pod, storage_entry, uniform_entry};
use crate::rows::Rows;
use wgpu::util::DeviceExt;

/// The WGSL source, validated at pipeline creation (and by `shader_validates` in tests).
pub(crate) const LOGISTIC_WGSL: &str = include_str!("../../../shaders/logistic.wgsl");

const GRAD_CHUNK: u32 = 256;
const MIN_HESS_CHUNK: u32 = 1024;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rows: u32,
    d: u32,
    grad_chunk: u32,
    hess_chunk: u32,
}

struct Block {
    rows: u32,
    grad_chunks: u32,
    hess_chunks: u32,
    bind: wgpu::BindGroup,
    gpart: wgpu::Buffer,
    hpart: wgpu::Buffer,
    gread: wgpu::Buffer,
    hread: wgpu::Buffer,
}

/// The three passes of `shaders/logistic.wgsl` and their bind-group layout.
struct Pipelines {
    layout: wgpu::BindGroupLayout,
    margins: wgpu::ComputePipeline,
    gradient: wgpu::ComputePipeline,
    hessian: wgpu::ComputePipeline,
}

impl Pipelines {
    fn new(ctx: &GpuContext) -> Result<Self, KernelError> {
        let (layout, pipes) = build_pipelines(
            &ctx.device,
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
            ],
            &["margins", "gradient", "hessian"],
        )?;
        let [margins, gradient, hessian]: [wgpu::ComputePipeline; 3] = pipes
            .try_into()
            .map_err(|_| KernelError::Validation("expected three logistic pipelines".into()))?;
        Ok(Self {
            layout,
            margins,
            gradient,
            hessian,
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
        let dev = &ctx.device;
        let scope = dev.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let w_buf = dev.create_buffer(&wgpu::BufferDescriptor {
            label: Some("w"),
            size: (d * 4) as u64,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut blocks = Vec::new();
        for start in (0..n).step_by(per_block) {
            let m = per_block.min(n - start);
            let hc = hess_chunk(m, d, cap);
            let p = Params {
                rows: m as u32,
                d: d as u32,
                grad_chunk: GRAD_CHUNK,
                hess_chunk: hc,
            };
            let grad_chunks = (m as u32).div_ceil(GRAD_CHUNK);
            let hess_chunks = (m as u32).div_ceil(hc);
            let init = |label: &str, bytes: &[u8], usage| {
                dev.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some(label),
                    contents: bytes,
                    usage,
                })
            };
            let params = init(
                "params",
                bytemuck::bytes_of(&p),
                wgpu::BufferUsages::UNIFORM,
            );
            let xb = init(
                "x",
                bytemuck::cast_slice(&x[start * d..(start + m) * d]),
                wgpu::BufferUsages::STORAGE,
            );
            let yb = init(
                "y",
                bytemuck::cast_slice(&y[start..start + m]),
                wgpu::BufferUsages::STORAGE,
            );
            let plain = |label: &str, size: u64, usage| {
                dev.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size,
                    usage,
                    mapped_at_creation: false,
                })
            };
            let part = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC;
            let read = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST;
            let gsize = grad_chunks as u64 * (d as u64 + 1) * 4;
            let hsize = hess_chunks as u64 * (d * d) as u64 * 4;
            let stats = plain("stats", m as u64 * 16, wgpu::BufferUsages::STORAGE);
            let gpart = plain("gpart", gsize, part);
            let hpart = plain("hpart", hsize, part);
            let gread = plain("gread", gsize, read);
            let hread = plain("hread", hsize, read);
            let bind = dev.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("logistic block"),
                layout: &pipes.layout,
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: params.as_entire_binding(),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: xb.as_entire_binding(),
                    },
                    wgpu::BindGroupEntry {
                        binding: 2,
                        resource: yb.as_entire_binding(),
                    },
                    wgpu::BindGroupEntry {
                        binding: 3,
                        resource: w_buf.as_entire_binding(),
                    },
                    wgpu::BindGroupEntry {
                        binding: 4,
                        resource: stats.as_entire_binding(),
                    },
                    wgpu::BindGroupEntry {
                        binding: 5,
                        resource: gpart.as_entire_binding(),
                    },
                    wgpu::BindGroupEntry {
                        binding: 6,
                        resource: hpart.as_entire_binding(),
                    },
                ],
            });
            blocks.push(Block {
                rows: m as u32,
                grad_chunks,
                hess_chunks,
                bind,
                gpart,
                hpart,
                gread,
                hread,
            });
        }
        if let Some(err) = pollster::block_on(scope.pop()) {
            return Err(KernelError::Device(format!(
                "uploading {n} x {d} rows: {err}"
            )));
        }
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
        let dev = &self.ctx.device;
        let w32: Vec<f32> = w.iter().map(|&v| v as f32).collect();
        self.ctx
            .queue
            .write_buffer(&self.w_buf, 0, bytemuck::cast_slice(&w32));
        let scope = dev.push_error_scope(wgpu::ErrorFilter::Validation);
        let mut enc = dev.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("logistic"),
        });
        for b in &self.blocks {
            {
                let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("logistic"),
                    timestamp_writes: None,
                });
                pass.set_bind_group(0, &b.bind, &[]);
                pass.set_pipeline(&self.pipes.margins);
                let groups = b.rows.div_ceil(256);
                let gx = groups.min(MAX_WG as u32);
                pass.dispatch_workgroups(gx, groups.div_ceil(gx), 1);
                pass.set_pipeline(&self.pipes.gradient);
                pass.dispatch_workgroups((d as u32 + 1).div_ceil(64), b.grad_chunks, 1);
                if hessian {
                    let tiles = (d as u32).div_ceil(16);
                    pass.set_pipeline(&self.pipes.hessian);
                    pass.dispatch_workgroups(tiles, tiles, b.hess_chunks);
                }
            }
            enc.copy_buffer_to_buffer(&b.gpart, 0, &b.gread, 0, None);
            if hessian {
                enc.copy_buffer_to_buffer(&b.hpart, 0, &b.hread, 0, None);
            }
        }
        self.ctx.queue.submit([enc.finish()]);
        if let Some(err) = pollster::block_on(scope.pop()) {
            return Err(KernelError::Validation(err.to_string()));
        }
        let mut loss = 0.0f64;
        let mut grad = vec![0.0f64; d];
        let mut hup = hessian.then(|| vec![0.0f64; d * d]);
        for b in &self.blocks {
            let g = read_pod::<f32>(dev, &b.gread)?;
            for c in g.chunks_exact(d + 1) {
                for (acc, &v) in grad.iter_mut().zip(&c[..d]) {
                    *acc += v as f64;
                }
                loss += c[d] as f64;
            }
            if let Some(h) = hup.as_mut() {
                let parts = read_pod::<f32>(dev, &b.hread)?;
                for c in parts.chunks_exact(d * d) {
                    for j in 0..d {
                        for k in j..d {
                            h[j * d + k] += c[j * d + k] as f64;
                        }
                    }
                }
            }
        }
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

    /// GPU vs CPU on the same data, relative 1e-5. Must FAIL (not skip) without an adapter:
    /// CI installs lavapipe so that an adapter always exists there.
    #[test]
    fn gpu_matches_cpu() {
        let ctx = GpuContext::shared().expect("a GPU adapter (lavapipe in CI) must be available");
        eprintln!("adapter: {}", ctx.describe());
        for &(n, d) in &[(5000usize, 123usize), (3001, 7), (1500, 40)] {
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
