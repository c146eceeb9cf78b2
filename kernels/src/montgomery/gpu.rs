//! The `montgomery` kernel's GPU host side: one shader build per modulus size (the WGSL's
//! `WORDS` constant) with two programs, picked per operation in one place
//! ([`super::fused::shape`]): on hardware the fused entry points (one invocation per whole
//! operation, working values in private memory) for products and fixed-base powers, and
//! the micro-operation programs for variable-base powers (`fused_pow` lost an NVIDIA
//! H100's device); on a software rasteriser, where llvmpipe
//! stops an invocation after 65,535 loop iterations, the micro-operation programs of
//! [`super::steps`] unless the fused one fits that budget.
//!
//! What stays on the device: a modulus's constants (`m`, `R^2`) per [`Modulus`], a
//! fixed-base table with its initial accumulator per [`FixedTable`], uploaded on first use
//! and kept with them; the batch buffers come from a pool and go back to it once read.
//! Batches are split so that no storage binding exceeds the device's cap and no dispatch
//! exceeds 65535 workgroups per dimension, and pipelined: the next chunk is uploaded and
//! submitted before the current one is read back.

use super::fused::{self, Kind, Shape};
#[path = "limbs_gpu.rs"]
mod limbs_gpu;
use super::numbers::{FixedTable, Modulus};
use super::steps::{Program, regs};
use crate::error::KernelError;
use crate::gpu::{BufferPool, GpuContext, build_pipelines, grid, read_pod_after, storage_entry};
pub(crate) use limbs_gpu::build as limbs_build;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// The WGSL source; `WORDS` is replaced per modulus size.
pub(crate) const MONTGOMERY_WGSL: &str = include_str!("../../../shaders/montgomery.wgsl");

/// Threads per workgroup (the shader's `@workgroup_size`).
const WG: u32 = 64;
/// Most items in one dispatch of the micro-operation programs.
const MAX_ITEMS_STEPS: usize = 1 << 14;
/// Most items in one dispatch of a fused program (its working values are per resident
/// thread, not per item, so only inputs and outputs grow with the batch).
const MAX_ITEMS_FUSED: usize = 1 << 16;
/// Chunks submitted and not yet read back.
const IN_FLIGHT: usize = 2;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    items: u32,
    exp_words: u32,
    exp_stride: u32,
    n0inv: u32,
    in_words: u32,
    op: u32,
    a0: u32,
    a1: u32,
}

/// Words -> 16-bit digits, one per word (the shader's constants).
fn digits(words: &[u32]) -> Vec<u32> {
    words.iter().flat_map(|&w| [w & 0xffff, w >> 16]).collect()
}

/// The shader for moduli of `words` words.
pub(crate) fn source(words: usize) -> String {
    MONTGOMERY_WGSL.replacen(
        "const WORDS: u32 = 128u;",
        &format!("const WORDS: u32 = {words}u;"),
        1,
    )
}

/// One entry point built for one modulus size (built when first needed: a software
/// rasteriser compiles a fused program, with its large private arrays, only for the sizes
/// it runs it at).
struct Pipeline {
    layout: wgpu::BindGroupLayout,
    pipe: wgpu::ComputePipeline,
}

/// The shader's entry point for an operation's shape and kind.
fn entry_point(shape: Shape, kind: Kind) -> &'static str {
    match (shape, kind) {
        (Shape::Steps, _) => "step",
        // The limbs program has its own pipelines (`limbs_gpu.rs`); `operation` never asks.
        (Shape::Fused | Shape::Limbs, Kind::Mul) => "fused_mul",
        (Shape::Fused | Shape::Limbs, Kind::FixedPow { .. }) => "fused_fixed_pow",
        (Shape::Fused | Shape::Limbs, Kind::Pow { .. }) => "fused_pow",
    }
}

/// Pipelines built so far, by modulus words and entry point.
type Pipelines = HashMap<(usize, &'static str), Arc<Pipeline>>;

/// Batched modular arithmetic on one GPU.
#[derive(Clone)]
pub struct GpuMontgomery {
    ctx: GpuContext,
    pipes: Arc<Mutex<Pipelines>>,
    pool: BufferPool,
    /// Whether the limbs program may run (the device has 64-bit integers).
    int64: bool,
    /// Windows per dispatch of the limbs program's powers, when a test sets it.
    limbs_step: Option<usize>,
    /// The limbs program at every size, on a software rasteriser too (tests).
    limbs_anywhere: bool,
    /// The cooperative product (`KINSEY_GPU_MONTGOMERY=coop`).
    coop: super::coop::GpuCoop,
}

impl std::fmt::Debug for GpuMontgomery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GpuMontgomery({})", self.ctx.describe())
    }
}

/// Input `a` of a batch: words to upload, or a buffer already on the device.
enum Input<'a> {
    Words(&'a [u32]),
    OnDevice(&'a wgpu::Buffer),
}

/// One chunk of an operation: its inputs and item count.
struct Chunk<'a> {
    a: Input<'a>,
    b: &'a [u32],
    exps: &'a [u32],
    items: usize,
}

/// What every chunk of one operation shares.
struct Operation<'a> {
    m: &'a Modulus,
    kind: Kind,
    shape: Shape,
    pipe: Arc<Pipeline>,
    consts: wgpu::Buffer,
    /// The micro-operation program (`Shape::Steps`).
    program: Option<Program>,
    in_words: usize,
    exp_words: usize,
    shared_exp: bool,
}

/// Words of working registers per item in the storage buffer `work`: none for a fused
/// program (its registers are private), the micro-operation program's otherwise.
fn registers(op: &Operation<'_>) -> usize {
    match (op.shape, op.kind) {
        (Shape::Fused | Shape::Limbs, _) => 0,
        (Shape::Steps, kind) => regs(op.m.words(), matches!(kind, Kind::Pow { .. })),
    }
}

/// A chunk submitted, not yet read back.
struct Pending {
    index: wgpu::SubmissionIndex,
    read: wgpu::Buffer,
    words: usize,
    pooled: Vec<wgpu::Buffer>,
}

impl GpuMontgomery {
    /// On an opened device.
    pub fn new(ctx: GpuContext) -> Self {
        Self {
            int64: ctx.has_int64(),
            coop: super::coop::GpuCoop::new(ctx.clone()),
            ctx,
            pipes: Arc::default(),
            pool: BufferPool::default(),
            limbs_step: None,
            limbs_anywhere: false,
        }
    }

    /// The 16-bit programs only, whatever the device has (their tests on lavapipe).
    #[cfg(test)]
    pub(crate) fn legacy(ctx: GpuContext) -> Self {
        Self {
            int64: false,
            ..Self::new(ctx)
        }
    }

    /// The device.
    pub fn describe(&self) -> String {
        self.ctx.describe()
    }

    /// Whether the device is a software rasteriser.
    pub(crate) fn is_software(&self) -> bool {
        self.ctx.is_software()
    }

    /// The program an operation of `kind` at moduli of `words` words runs on this device.
    pub(crate) fn shape(&self, words: usize, kind: Kind) -> Shape {
        let software = self.ctx.is_software() && !self.limbs_anywhere;
        fused::shape(software, self.int64, words, kind)
    }

    /// Build now the pipelines that products and powers at moduli of `words` words run on
    /// this device (the limbs program's four entries, or the 16-bit program's), so that
    /// the first batch finds them compiled (and the pipeline cache on disk has them).
    pub(crate) fn warm(&self, words: usize) -> Result<(), KernelError> {
        let windows = 8 * words;
        for kind in [
            Kind::Mul,
            Kind::FixedPow { windows },
            Kind::Pow {
                wide: false,
                windows,
            },
        ] {
            match self.shape(words, kind) {
                Shape::Limbs => {
                    self.limbs_pipeline(words, "limbs_mul")?;
                }
                shape => {
                    self.pipeline(words, entry_point(shape, kind))?;
                }
            }
        }
        Ok(())
    }

    fn pipeline(&self, words: usize, entry: &'static str) -> Result<Arc<Pipeline>, KernelError> {
        let mut map = self
            .pipes
            .lock()
            .map_err(|_| KernelError::Device("pipeline cache poisoned".into()))?;
        if let Some(p) = map.get(&(words, entry)) {
            return Ok(p.clone());
        }
        let params = wgpu::BindGroupLayoutEntry {
            binding: 0,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: true,
                min_binding_size: wgpu::BufferSize::new(std::mem::size_of::<Params>() as u64),
            },
            count: None,
        };
        let (layout, pipes) = build_pipelines(
            &self.ctx,
            "montgomery.wgsl",
            &source(words),
            &[
                params,
                storage_entry(1, true),
                storage_entry(2, true),
                storage_entry(3, true),
                storage_entry(4, true),
                storage_entry(5, false),
                storage_entry(6, false),
            ],
            &[entry],
        )?;
        let pipe = pipes
            .into_iter()
            .next()
            .ok_or_else(|| KernelError::Validation(format!("no montgomery pipeline {entry}")))?;
        let p = Arc::new(Pipeline { layout, pipe });
        map.insert((words, entry), p.clone());
        Ok(p)
    }

    /// Items per dispatch: every binding within the device's cap.
    fn chunk(&self, shape: Shape, per_item_words: usize) -> usize {
        let cap = self.ctx.binding_cap() as usize / 4;
        let most = match shape {
            Shape::Fused | Shape::Limbs => MAX_ITEMS_FUSED,
            Shape::Steps => MAX_ITEMS_STEPS,
        };
        (cap / per_item_words.max(1)).clamp(1, most)
    }

    /// A buffer kept in `slot` for this device: uploaded from `words()` on first use.
    fn resident(
        &self,
        slot: &Mutex<Option<(wgpu::Device, wgpu::Buffer)>>,
        what: &str,
        words: impl FnOnce() -> Vec<u32>,
    ) -> Result<wgpu::Buffer, KernelError> {
        let mut slot = slot
            .lock()
            .map_err(|_| KernelError::Device(format!("{what} cache poisoned")))?;
        if let Some((dev, buf)) = slot.as_ref()
            && *dev == self.ctx.device
        {
            return Ok(buf.clone());
        }
        let words = words();
        let buf = self.ctx.scoped(
            wgpu::ErrorFilter::OutOfMemory,
            || {
                self.ctx.upload(
                    what,
                    bytemuck::cast_slice(&words),
                    wgpu::BufferUsages::STORAGE,
                )
            },
            |m| KernelError::Device(format!("out of GPU memory for a {what}: {m}")),
        )?;
        *slot = Some((self.ctx.device.clone(), buf.clone()));
        Ok(buf)
    }

    /// The modulus's constants on this device (digits of `m`, then of `R^2`).
    fn consts_on_device(&self, m: &Modulus) -> Result<wgpu::Buffer, KernelError> {
        self.resident(&m.on_device, "montgomery modulus", || {
            digits(&[m.m.as_slice(), &m.r2].concat())
        })
    }

    /// The table's entries and then its initial accumulator on this device: uploaded on
    /// first use, then kept with the table.
    fn table_on_device(&self, table: &FixedTable) -> Result<wgpu::Buffer, KernelError> {
        self.resident(&table.on_device, "montgomery fixed-base table", || {
            [table.entries.as_slice(), &table.init].concat()
        })
    }

    /// Everything one operation's chunks share.
    fn operation<'a>(
        &self,
        m: &'a Modulus,
        kind: Kind,
        in_words: usize,
        exp_words: usize,
        shared_exp: bool,
    ) -> Result<Operation<'a>, KernelError> {
        let w = m.words();
        let shape = match self.shape(w, kind) {
            // Callers route the limbs program before (`limbs_gpu.rs`).
            Shape::Limbs => fused::shape(self.ctx.is_software(), false, w, kind),
            s => s,
        };
        let program = match (shape, kind) {
            (Shape::Fused | Shape::Limbs, _) => None,
            (Shape::Steps, Kind::Mul) => Some(Program::modmul(w)),
            (Shape::Steps, Kind::FixedPow { windows }) => {
                Some(Program::fixed_pow(w, windows as u32))
            }
            (Shape::Steps, Kind::Pow { wide, windows }) => {
                Some(Program::modpow(w, wide, windows as u32))
            }
        };
        Ok(Operation {
            m,
            kind,
            shape,
            pipe: self.pipeline(w, entry_point(shape, kind))?,
            consts: self.consts_on_device(m)?,
            program,
            in_words,
            exp_words,
            shared_exp,
        })
    }

    /// Items per chunk of `op`.
    fn items_per_chunk(&self, op: &Operation<'_>) -> usize {
        let io = op.in_words.max(op.m.words()).max(op.exp_words);
        self.chunk(op.shape, registers(op).max(io))
    }

    /// The parameter blocks of a chunk of `items`: one for a fused program, one per
    /// micro-operation (at the device's dynamic-offset alignment) for steps.
    fn params(&self, op: &Operation<'_>, items: usize) -> (Vec<u8>, usize) {
        let align = self
            .ctx
            .device
            .limits()
            .min_uniform_buffer_offset_alignment
            .max(32) as usize;
        let base = Params {
            items: items as u32,
            exp_words: op.exp_words as u32,
            exp_stride: if op.shared_exp {
                0
            } else {
                op.exp_words as u32
            },
            n0inv: op.m.n0inv,
            in_words: op.in_words as u32,
            op: 0,
            a0: 0,
            a1: 0,
        };
        let blocks: Vec<Params> = match (&op.program, op.kind) {
            (Some(prog), _) => prog
                .ops
                .iter()
                .map(|&(o, a0, a1)| Params {
                    op: o as u32,
                    a0,
                    a1,
                    ..base
                })
                .collect(),
            (None, Kind::Mul) => vec![base],
            (None, Kind::FixedPow { windows }) => vec![Params {
                a0: windows as u32,
                ..base
            }],
            (None, Kind::Pow { wide, .. }) => vec![Params {
                a1: u32::from(wide),
                ..base
            }],
        };
        let mut bytes = vec![0u8; blocks.len() * align];
        for (k, p) in blocks.iter().enumerate() {
            bytes[k * align..k * align + std::mem::size_of::<Params>()]
                .copy_from_slice(bytemuck::bytes_of(p));
        }
        (bytes, align)
    }

    /// Upload and submit one chunk.
    fn submit(&self, op: &Operation<'_>, c: Chunk<'_>) -> Result<Pending, KernelError> {
        use wgpu::BufferUsages as U;
        let (ctx, pool) = (&self.ctx, &self.pool);
        let (dev, queue) = (&ctx.device, &ctx.queue);
        let w = op.m.words();
        let (uniforms, align) = self.params(op, c.items);
        let steps = op.program.as_ref().map_or(1, |p| p.ops.len());
        // wgpu refuses empty bindings: unused inputs get one word.
        let bytes = |v: &[u32]| -> Vec<u8> {
            if v.is_empty() {
                vec![0u8; 4]
            } else {
                bytemuck::cast_slice(v).to_vec()
            }
        };
        let out_bytes = (c.items * w * 4) as u64;
        let work_bytes = (c.items * registers(op) * 4).max(4) as u64;
        fn binding(n: u32, buf: &wgpu::Buffer) -> wgpu::BindGroupEntry<'_> {
            wgpu::BindGroupEntry {
                binding: n,
                resource: buf.as_entire_binding(),
            }
        }
        ctx.scoped(
            wgpu::ErrorFilter::OutOfMemory,
            || {
                let mut pooled = Vec::with_capacity(7);
                let u = pool.upload(dev, queue, "montgomery params", &uniforms, U::UNIFORM);
                let a = match c.a {
                    Input::Words(v) => {
                        let b = pool.upload(dev, queue, "montgomery a", &bytes(v), U::STORAGE);
                        pooled.push(b.clone());
                        b
                    }
                    Input::OnDevice(b) => b.clone(),
                };
                let b = pool.upload(dev, queue, "montgomery b", &bytes(c.b), U::STORAGE);
                let e = pool.upload(dev, queue, "montgomery exps", &bytes(c.exps), U::STORAGE);
                let out = pool.take(dev, "montgomery out", out_bytes, U::STORAGE | U::COPY_SRC);
                let read = pool.take(dev, "montgomery read", out_bytes, U::MAP_READ);
                let work = pool.take(dev, "montgomery registers", work_bytes, U::STORAGE);
                let bind = dev.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("montgomery"),
                    layout: &op.pipe.layout,
                    entries: &[
                        wgpu::BindGroupEntry {
                            binding: 0,
                            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                                buffer: &u,
                                offset: 0,
                                size: wgpu::BufferSize::new(std::mem::size_of::<Params>() as u64),
                            }),
                        },
                        binding(1, &op.consts),
                        binding(2, &a),
                        binding(3, &b),
                        binding(4, &e),
                        binding(5, &out),
                        binding(6, &work),
                    ],
                });
                let (gx, gy) = grid(c.items as u64, u64::from(WG));
                let mut enc = dev.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("montgomery"),
                });
                {
                    let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                        label: Some("montgomery"),
                        timestamp_writes: None,
                    });
                    pass.set_pipeline(&op.pipe.pipe);
                    for k in 0..steps {
                        pass.set_bind_group(0, &bind, &[(k * align) as u32]);
                        pass.dispatch_workgroups(gx, gy, 1);
                    }
                }
                enc.copy_buffer_to_buffer(&out, 0, &read, 0, Some(out_bytes));
                let index = queue.submit([enc.finish()]);
                pooled.extend([u, b, e, out, work]);
                Pending {
                    index,
                    read,
                    words: c.items * w,
                    pooled,
                }
            },
            |m| KernelError::Device(format!("out of GPU memory: {m}")),
        )
    }

    /// Wait for a chunk, read its results, give its buffers back.
    fn finish(&self, p: Pending) -> Result<Vec<u32>, KernelError> {
        let bytes = (p.words * 4) as u64;
        let out = read_pod_after(&self.ctx, &p.read, bytes, Some(p.index))?;
        self.pool.give(p.pooled.into_iter().chain([p.read]));
        Ok(out)
    }

    /// Run `op` over its chunks, at most [`IN_FLIGHT`] submitted before the oldest is read.
    fn run<'c>(
        &self,
        op: &Operation<'_>,
        chunks: impl Iterator<Item = Chunk<'c>>,
        total_words: usize,
    ) -> Result<Vec<u32>, KernelError> {
        let mut out = Vec::with_capacity(total_words);
        let mut pending = VecDeque::with_capacity(IN_FLIGHT);
        for c in chunks {
            pending.push_back(self.submit(op, c)?);
            if pending.len() >= IN_FLIGHT
                && let Some(p) = pending.pop_front()
            {
                out.extend(self.finish(p)?);
            }
        }
        while let Some(p) = pending.pop_front() {
            out.extend(self.finish(p)?);
        }
        Ok(out)
    }

    /// `a_i b_i mod m`.
    pub(crate) fn mul(&self, m: &Modulus, a: &[u32], b: &[u32]) -> Result<Vec<u32>, KernelError> {
        let w = m.words();
        if self.int64 && fused::coop_products() {
            return self.coop.mul(m, a, b);
        }
        if self.shape(w, Kind::Mul) == Shape::Limbs {
            return self.limbs_mul(m, a, b);
        }
        let op = self.operation(m, Kind::Mul, w, 0, true)?;
        let per = self.items_per_chunk(&op);
        let chunks = a
            .chunks(per * w)
            .zip(b.chunks(per * w))
            .map(|(a, b)| Chunk {
                a: Input::Words(a),
                b,
                exps: &[],
                items: a.len() / w,
            });
        self.run(&op, chunks, a.len())
    }

    /// Fixed-base exponentiation times a factor.
    pub(crate) fn fixed_pow(
        &self,
        m: &Modulus,
        table: &FixedTable,
        exps: &[u32],
        exp_words: usize,
        factors: &[u32],
    ) -> Result<Vec<u32>, KernelError> {
        let w = m.words();
        if (table.entries.len() + table.init.len()) as u64 * 4 > self.ctx.binding_cap() {
            return Err(KernelError::Input(format!(
                "a fixed-base table of {} bytes exceeds the GPU's storage binding",
                table.entries.len() * 4
            )));
        }
        let kind = Kind::FixedPow {
            windows: table.windows,
        };
        if self.int64 && fused::coop_products() {
            let resident = self.table_on_device(table)?;
            return self
                .coop
                .fixed_pow(m, &resident, table.windows, exps, exp_words, factors);
        }
        if self.shape(w, kind) == Shape::Limbs {
            return self.limbs_fixed_pow(m, table, exps, exp_words, factors);
        }
        let entries = self.table_on_device(table)?;
        let op = self.operation(m, kind, 0, exp_words, false)?;
        let per = self.items_per_chunk(&op);
        let chunks = factors
            .chunks(per * w)
            .zip(exps.chunks(per * exp_words))
            .map(|(f, e)| Chunk {
                a: Input::OnDevice(&entries),
                b: f,
                exps: e,
                items: f.len() / w,
            });
        self.run(&op, chunks, factors.len())
    }

    /// Variable-base exponentiation (`shared`: one exponent for all items).
    pub(crate) fn pow(
        &self,
        m: &Modulus,
        bases: &[u32],
        wide: bool,
        exps: &[u32],
        exp_words: usize,
        shared: bool,
    ) -> Result<Vec<u32>, KernelError> {
        let w = m.words();
        let iw = if wide { 2 * w } else { w };
        let kind = Kind::Pow {
            wide,
            windows: exp_words * 8,
        };
        if self.int64
            && fused::coop_products()
            && super::coop::pow_setup_fits(self.ctx.is_software(), w)
        {
            return self.coop.pow(m, bases, wide, exps, exp_words, shared);
        }
        if self.shape(w, kind) == Shape::Limbs {
            return self.limbs_pow(m, bases, wide, exps, exp_words, shared);
        }
        let op = self.operation(m, kind, iw, exp_words, shared)?;
        let per = self.items_per_chunk(&op);
        let n = bases.len() / iw;
        let chunks = (0..n).step_by(per).map(|start| {
            let items = per.min(n - start);
            Chunk {
                a: Input::Words(&bases[start * iw..(start + items) * iw]),
                b: &[],
                exps: if shared {
                    exps
                } else {
                    &exps[start * exp_words..(start + items) * exp_words]
                },
                items,
            }
        });
        self.run(&op, chunks, n * w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::montgomery::fused::{Kind, Shape};
    use crate::montgomery::test_numbers::*;
    use crate::montgomery::{BatchArith, MAX_WORDS, cpu};
    use rand::{Rng, SeedableRng};

    /// The GPU (lavapipe in CI: fails, not skips, without an adapter).
    fn gpu() -> BatchArith {
        BatchArith::new(crate::DevicePref::Gpu).expect("a GPU adapter (lavapipe in CI)")
    }

    /// Random values below m (top word cleared), and 0, 1, m - 1.
    fn values(rng: &mut impl Rng, m: &Modulus, n: usize) -> Vec<u32> {
        let w = m.words();
        let mut out = Vec::new();
        for i in 0..n {
            let mut v: Vec<u32> = match i {
                0 => vec![0; w],
                1 => {
                    let mut v = vec![0; w];
                    v[0] = 1;
                    v
                }
                2 => {
                    let mut v = m.value().to_vec();
                    v[0] -= 1;
                    v
                }
                _ => (0..w).map(|_| rng.random()).collect(),
            };
            if i > 2 {
                v[w - 1] >>= 1;
            }
            out.extend(v);
        }
        out
    }

    /// Products, powers (per-item and shared exponents, wide bases) and fixed-base powers on
    /// the GPU equal the CPU twin's word for word, for the moduli of 2048-, 3072- and
    /// 4096-bit keys' p^2 (64, 96, 128 words) and n^2 of a 2048-bit key (128 words).
    #[test]
    fn gpu_matches_cpu_twin() {
        let g = gpu();
        let c = BatchArith::cpu();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(19);
        for words in [64usize, 96, 128] {
            let m = modulus(&mut rng, words);
            let a = values(&mut rng, &m, 8);
            let b = values(&mut rng, &m, 8);
            assert_eq!(
                g.mul(&m, &a, &b).expect("gpu"),
                c.mul(&m, &a, &b).expect("cpu")
            );
            let exps: Vec<u32> = (0..8 * 2).map(|_| rng.random()).collect();
            assert_eq!(
                g.pow(&m, &a, false, &exps, 2).expect("gpu"),
                c.pow(&m, &a, false, &exps, 2).expect("cpu"),
                "pow, {words} words"
            );
            let wide: Vec<u32> = a
                .chunks(words)
                .zip(b.chunks(words))
                .flat_map(|(lo, hi)| [lo, hi].concat())
                .collect();
            let shared = [rng.random::<u32>(), rng.random::<u32>()];
            assert_eq!(
                g.pow(&m, &wide, true, &shared, 2).expect("gpu"),
                c.pow(&m, &wide, true, &shared, 2).expect("cpu"),
                "wide pow, {words} words"
            );
            let entries = values(&mut rng, &m, 16 * 6);
            let table = FixedTable::new(&m, &entries, &a[3 * words..4 * words]).expect("table");
            assert_eq!(
                g.fixed_pow(&m, &table, &exps[..8], 1, &b).expect("gpu"),
                c.fixed_pow(&m, &table, &exps[..8], 1, &b).expect("cpu"),
                "fixed pow, {words} words"
            );
        }
    }

    /// `n^2` of 3072- and 4096-bit keys (192 words and the largest size, 256): products and
    /// a short fixed-base power equal the twin's.
    #[test]
    fn largest_moduli_run() {
        let g = gpu();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(20);
        for words in [192, MAX_WORDS] {
            let m = modulus(&mut rng, words);
            let a = values(&mut rng, &m, 4);
            let b = values(&mut rng, &m, 4);
            assert_eq!(g.mul(&m, &a, &b).expect("gpu"), cpu::mul(&m, &a, &b));
            let entries = values(&mut rng, &m, 16 * 2);
            let table = FixedTable::new(&m, &entries, &a[3 * words..]).expect("table");
            let exps = [0x5au32, 0xf0, 0, 0xffff_ffff];
            let c = crate::montgomery::BatchArith::cpu();
            assert_eq!(
                g.fixed_pow(&m, &table, &exps, 1, &b).expect("gpu"),
                c.fixed_pow(&m, &table, &exps, 1, &b).expect("cpu"),
                "{words} words"
            );
        }
    }

    /// The kernel on the shared device (lavapipe in CI: fails, not skips, without an
    /// adapter) and a seeded generator.
    /// (The 16-bit programs only: the limbs program has its own tests.)
    fn gpu_and_rng(seed: u64) -> (GpuMontgomery, rand_chacha::ChaCha8Rng) {
        let ctx = GpuContext::shared().expect("a GPU adapter (lavapipe in CI)");
        (
            GpuMontgomery::legacy(ctx),
            rand_chacha::ChaCha8Rng::seed_from_u64(seed),
        )
    }

    /// A fixed-base table goes to the device once: a second batch (and a clone of the
    /// table) binds the same buffer, and the results still equal the twin's.
    #[test]
    fn fixed_base_table_is_uploaded_once() {
        let (g, mut rng) = gpu_and_rng(22);
        let m = modulus(&mut rng, 8);
        let entries = values(&mut rng, &m, 16 * 3);
        let init = values(&mut rng, &m, 4);
        let table = FixedTable::new(&m, &entries, &init[3 * 8..]).expect("table");
        assert!(table.on_device.lock().expect("lock").is_none());
        let first = g.table_on_device(&table).expect("upload");
        let copy = table.clone();
        assert!(
            g.table_on_device(&copy).expect("cached") == first,
            "re-uploaded"
        );
        for round in 0..2 {
            let b = values(&mut rng, &m, 5);
            let exps: Vec<u32> = (0..5).map(|_| rng.random::<u32>() & 0xfff).collect();
            assert_eq!(
                g.fixed_pow(&m, &table, &exps, 1, &b).expect("gpu"),
                cpu::fixed_pow(&m, &table, &exps, 1, &b),
                "round {round}"
            );
        }
        assert!(g.table_on_device(&table).expect("cached") == first);
    }

    /// A batch larger than one dispatch is split, pipelined two chunks deep, and
    /// reassembled in order; the chunk buffers go back to the pool and the next batch
    /// reuses them; the modulus's constants go to the device once.
    #[test]
    fn batches_are_split_in_order_and_buffers_reused() {
        let (g, mut rng) = gpu_and_rng(21);
        let m = modulus(&mut rng, 4);
        assert_eq!(g.shape(4, Kind::Mul), Shape::Fused);
        let n = MAX_ITEMS_FUSED + 37;
        let a = values(&mut rng, &m, n);
        let b = values(&mut rng, &m, n);
        assert_eq!(g.mul(&m, &a, &b).expect("gpu"), cpu::mul(&m, &a, &b));
        let held = g.pool.held();
        assert!(
            held >= 7,
            "the chunks' buffers went back to the pool ({held})"
        );
        let consts = m
            .on_device
            .lock()
            .expect("lock")
            .clone()
            .expect("resident")
            .1;
        assert_eq!(g.mul(&m, &a, &b).expect("gpu"), cpu::mul(&m, &a, &b));
        assert_eq!(
            g.pool.held(),
            held,
            "a second batch of the same shape allocated"
        );
        assert!(
            g.consts_on_device(&m).expect("cached") == consts,
            "re-uploaded"
        );
    }

    /// The fused programs (one invocation per operation, working values in private
    /// memory) on lavapipe at 256-, 384- and 512-bit moduli (on hardware, powers run as
    /// steps), where they fit its loop
    /// budget: products, powers (per-item, shared, wide) and fixed-base powers equal the
    /// CPU twin's word for word, over more than one workgroup.
    #[test]
    fn fused_programs_match_cpu_twin() {
        let (g, mut rng) = gpu_and_rng(23);
        let c = BatchArith::cpu();
        for words in [8usize, 12, 16] {
            let m = modulus(&mut rng, words);
            let a = values(&mut rng, &m, 70);
            let b = values(&mut rng, &m, 70);
            assert_eq!(g.shape(words, Kind::Mul), Shape::Fused);
            assert_eq!(g.mul(&m, &a, &b).expect("gpu"), cpu::mul(&m, &a, &b));
            let entries = values(&mut rng, &m, 16 * 8);
            let table = FixedTable::new(&m, &entries, &a[3 * words..4 * words]).expect("table");
            assert_eq!(g.shape(words, Kind::FixedPow { windows: 8 }), Shape::Fused);
            let exps: Vec<u32> = (0..70).map(|_| rng.random()).collect();
            assert_eq!(
                g.fixed_pow(&m, &table, &exps, 1, &b).expect("gpu"),
                c.fixed_pow(&m, &table, &exps, 1, &b).expect("cpu"),
                "fused fixed pow, {words} words"
            );
            if words > 12 {
                continue;
            }
            for wide in [false, true] {
                let kind = Kind::Pow { wide, windows: 8 };
                // Hardware runs variable-base powers as steps (`fused::shape`).
                let want = if g.ctx.is_software() {
                    Shape::Fused
                } else {
                    Shape::Steps
                };
                assert_eq!(g.shape(words, kind), want, "{kind:?}");
                let bases: Vec<u32> = if wide {
                    a.chunks(words)
                        .zip(b.chunks(words))
                        .flat_map(|(lo, hi)| [lo, hi].concat())
                        .collect()
                } else {
                    a.clone()
                };
                let per_item = g.pow(&m, &bases, wide, &exps, 1, false).expect("gpu");
                assert_eq!(
                    per_item,
                    cpu::pow(&m, &bases, wide, &exps, 1, false),
                    "fused pow, wide {wide}, {words} words"
                );
                let shared = g.pow(&m, &bases, wide, &exps[..1], 1, true).expect("gpu");
                assert_eq!(
                    shared,
                    cpu::pow(&m, &bases, wide, &exps[..1], 1, true),
                    "fused pow, shared exponent, wide {wide}, {words} words"
                );
            }
        }
    }
}
