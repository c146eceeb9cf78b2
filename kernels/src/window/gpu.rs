//! The `window` kernel's GPU host side: the chunk's values, draws and level offsets
//! uploaded, then `h + 1` `level` dispatches (in order, one per level: wgpu orders the
//! storage writes between dispatches) and one `sums` dispatch, in one submission; the sums
//! read back. Buffers stay within the 128 MiB binding cap for chunks of up to 2^23 steps
//! (the caller's chunks are 2^21); dispatches use a 2-D grid within 65,535 workgroups per
//! dimension.

use super::spec::WindowChunk;
use crate::error::KernelError;
use crate::gpu::{
    GpuContext, MAX_WG, build_pipelines, dispatch, read_pod, storage_entry, uniform_entry,
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
}

/// The process's pipelines (the device is process-wide).
struct Pipes {
    layout: wgpu::BindGroupLayout,
    level: wgpu::ComputePipeline,
    sums: wgpu::ComputePipeline,
}
static PIPES: OnceLock<Result<Arc<Pipes>, KernelError>> = OnceLock::new();

/// Window sums on a GPU with 64-bit floats.
#[derive(Clone)]
pub struct GpuWindow {
    ctx: GpuContext,
    pipes: Arc<Pipes>,
}

impl std::fmt::Debug for GpuWindow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GpuWindow({})", self.ctx.describe())
    }
}

/// Workgroups `(x, y)` covering `n` invocations of [`WG`].
fn grid(n: u64) -> (u32, u32) {
    let groups = n.div_ceil(WG).max(1);
    let gx = groups.min(MAX_WG);
    (gx as u32, groups.div_ceil(gx) as u32)
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
                let mut entries = vec![uniform_entry(0)];
                entries.extend((1..=4).map(|b| storage_entry(b, true)));
                entries.extend((5..=7).map(|b| storage_entry(b, false)));
                let (layout, mut p) = build_pipelines(
                    &ctx.device,
                    "window",
                    WINDOW_WGSL,
                    &entries,
                    &["level", "sums"],
                )?;
                let (Some(sums), Some(level)) = (p.pop(), p.pop()) else {
                    return Err(KernelError::Validation("window: missing pipelines".into()));
                };
                Ok(Arc::new(Pipes {
                    layout,
                    level,
                    sums,
                }))
            })
            .clone()?;
        Ok(Self { ctx, pipes })
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
        c.check_with(z.count)?;
        self.run(c, &z.buf)
    }

    fn run(&self, c: &WindowChunk<'_>, z: &wgpu::Buffer) -> Result<Vec<f64>, KernelError> {
        if c.xs.len() > MAX_STEPS {
            return Err(KernelError::Input(format!(
                "window chunk of {} steps (at most {MAX_STEPS} on the GPU)",
                c.xs.len()
            )));
        }
        let outs = (c.from + c.xs.len() as u64 - c.out_from) as u32;
        if outs == 0 {
            return Ok(Vec::new());
        }
        let ctx = &self.ctx;
        let st = wgpu::BufferUsages::STORAGE;
        let offs = c.offsets();
        let nodes = c.nodes().max(1) as u64;
        let inputs = [
            ctx.upload("grid", bytemuck::cast_slice(&[c.gamma, 1.0 / c.gamma]), st),
            ctx.upload("xs", bytemuck::cast_slice(c.xs), st),
            ctx.upload("offs", bytemuck::cast_slice(&offs), st),
        ];
        let val = ctx.buffer("val", 8 * nodes, st);
        let rel = ctx.buffer("rel", 8 * nodes, st);
        let out = ctx.output("window sums", 8 * u64::from(outs));
        let base = Params {
            len: c.xs.len() as u32,
            h: c.h,
            w: c.w.min(u64::from(u32::MAX)) as u32,
            k: 0,
            out_from: (c.out_from - c.from) as u32,
            outs,
            gx: 0,
            pad: 0,
        };
        ctx.submit("window", |enc| {
            let mut pass_with = |p: Params, pipe: &wgpu::ComputePipeline, n: u64| {
                let (gx, gy) = grid(n);
                let params = ctx.upload(
                    "window params",
                    bytemuck::bytes_of(&Params { gx, ..p }),
                    wgpu::BufferUsages::UNIFORM,
                );
                let [g, x, o] = &inputs;
                let bind = ctx.bind(
                    "window",
                    &self.pipes.layout,
                    &[&params, g, x, z, o, &val, &rel, &out.gpu],
                );
                dispatch(enc, pipe, &bind, (gx, gy));
            };
            for k in 0..=c.h {
                let n = (c.xs.len() >> k) as u64;
                if n > 0 {
                    pass_with(Params { k, ..base }, &self.pipes.level, n);
                }
            }
            pass_with(base, &self.pipes.sums, u64::from(outs));
            out.copy_back(enc);
        })?;
        read_pod::<f64>(&ctx.device, &out.read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::window::cpu::window_sums;

    /// The GPU's sums equal the CPU twin's bit for bit: windows within and across blocks,
    /// a chunk starting late in the stream, values with fractions, large draws. Fails
    /// without an adapter (CI installs lavapipe, which has 64-bit floats).
    #[test]
    fn gpu_sums_match_cpu() {
        let ctx = GpuContext::shared().expect("a GPU adapter (lavapipe in CI)");
        let gpu = GpuWindow::new(ctx).expect("64-bit floats");
        let mut state = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
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
}
