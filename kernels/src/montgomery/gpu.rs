//! The `montgomery` kernel's GPU host side: one shader build per modulus size (the WGSL's
//! `WORDS` constant), each operation a program of micro-operations (loads, Montgomery
//! multiplications in steps of the outer loop, selects, copies, a store) recorded into one
//! command buffer, one dispatch per micro-operation with its parameters at a dynamic
//! uniform offset. The program depends only on public sizes. Batches are split so that no
//! storage binding exceeds the device's cap and no dispatch exceeds 65535 workgroups per
//! dimension.

use super::numbers::{FixedTable, Modulus};
use crate::error::KernelError;
use crate::gpu::{GpuContext, MAX_WG, build_pipelines, read_pod, storage_entry};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The WGSL source; `WORDS` is replaced per modulus size.
pub(crate) const MONTGOMERY_WGSL: &str = include_str!("../../../shaders/montgomery.wgsl");

/// Threads per workgroup (the shader's `@workgroup_size`).
const WG: u32 = 64;
/// Most items in one dispatch.
const MAX_ITEMS: usize = 1 << 14;
/// Loop iterations one invocation may run: llvmpipe (lavapipe) stops an invocation's loops
/// after 65,535 iterations in all, so every micro-operation stays below this.
const LOOP_BUDGET: usize = 60_000;

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

/// The shader's micro-operations.
#[derive(Debug, Clone, Copy)]
#[repr(u32)]
enum Op {
    MmSteps = 1,
    RedcSteps = 4,
    Copy = 5,
    LoadA = 6,
    LoadB = 7,
    LoadConst = 8,
    LoadOne = 9,
    SelA = 10,
    SelTb = 11,
    Store = 12,
}

/// A program: micro-operations with their two arguments.
struct Program {
    dig: u32,
    ops: Vec<(Op, u32, u32)>,
}

impl Program {
    fn new(words: usize) -> Self {
        Self {
            dig: 2 * words as u32,
            ops: Vec::new(),
        }
    }

    // Register offsets, as in the shader.
    fn x(&self) -> u32 {
        0
    }
    fn y(&self) -> u32 {
        self.dig
    }
    fn z(&self) -> u32 {
        2 * self.dig
    }
    fn b(&self) -> u32 {
        4 * self.dig + 2
    }
    fn tb(&self, d: u32) -> u32 {
        5 * self.dig + 2 + d * self.dig
    }

    fn op(&mut self, op: Op, a0: u32, a1: u32) {
        self.ops.push((op, a0, a1));
    }

    /// Outer iterations per step: each costs about `2 dig` inner iterations.
    fn step(&self) -> u32 {
        ((LOOP_BUDGET / (2 * self.dig as usize + 2)) as u32).clamp(1, self.dig)
    }

    /// The outer loop of `op` in steps; flags 1: square (Y = X first), 2: X = Z after.
    fn steps(&mut self, op: Op, flags: u32) {
        let step = self.step();
        let mut i = 0;
        while i < self.dig {
            let end = (i + step).min(self.dig);
            self.op(op, i, end | (flags << 16));
            i = end;
        }
    }

    /// Z = X Y R^-1 mod m.
    fn montmul(&mut self) {
        self.steps(Op::MmSteps, 0);
    }

    /// X = X Y R^-1 mod m.
    fn montmul_x(&mut self) {
        self.steps(Op::MmSteps, 2);
    }

    /// X = X^2 R^-1 mod m.
    fn square_x(&mut self) {
        self.steps(Op::MmSteps, 3);
    }

    /// Z = (X + Y R) R^-1 mod m.
    fn redc_wide(&mut self) {
        self.steps(Op::RedcSteps, 0);
    }

    fn copy(&mut self, dst: u32, src: u32) {
        self.op(Op::Copy, dst, src);
    }

    /// Y = R^2 mod m.
    fn y_r2(&mut self) {
        let (y, dig) = (self.y(), self.dig);
        self.op(Op::LoadConst, y, dig);
    }

    /// `a_i b_i mod m`.
    fn modmul(words: usize) -> Self {
        let mut p = Self::new(words);
        let (x, y) = (p.x(), p.y());
        p.op(Op::LoadA, x, 0);
        p.op(Op::LoadB, y, 0);
        p.montmul_x();
        p.y_r2();
        p.montmul();
        p.op(Op::Store, 0, 0);
        p
    }

    /// `b_i init prod_w table[w][digit]`.
    fn fixed_pow(words: usize, windows: u32) -> Self {
        let mut p = Self::new(words);
        let (x, y, dig) = (p.x(), p.y(), p.dig);
        p.op(Op::LoadConst, x, 2 * dig);
        for w in 0..windows {
            p.op(Op::SelA, w, 0);
            p.montmul_x();
        }
        p.op(Op::LoadB, y, 0);
        p.montmul();
        p.op(Op::Store, 0, 0);
        p
    }

    /// `x_i ^ e_i`, the base reduced first when `wide`.
    fn modpow(words: usize, wide: bool, windows: u32) -> Self {
        let mut p = Self::new(words);
        let (x, y, z, b) = (p.x(), p.y(), p.z(), p.b());
        p.op(Op::LoadA, x, 0);
        if wide {
            p.op(Op::LoadA, y, words as u32);
            p.redc_wide();
            p.copy(x, z);
            p.y_r2();
            p.montmul();
            p.copy(x, z);
        }
        p.y_r2();
        p.montmul();
        // Z = base R; table entry d = base^d R, entry 0 = R.
        p.copy(b, z);
        p.op(Op::LoadOne, x, 0);
        p.y_r2();
        p.montmul();
        for d in 0..16 {
            let t = p.tb(d);
            p.copy(t, z);
            p.copy(x, z);
            p.copy(y, b);
            p.montmul();
        }
        let t0 = p.tb(0);
        p.copy(x, t0);
        for w in (0..windows).rev() {
            for _ in 0..4 {
                p.square_x();
            }
            p.op(Op::SelTb, w, 0);
            p.montmul_x();
        }
        p.op(Op::LoadOne, y, 0);
        p.montmul();
        p.op(Op::Store, 0, 0);
        p
    }
}

/// Digits (16 bits, one per word) of the working set per item: X, Y, Z, T, and for modpow
/// the base and its table of 16 powers.
fn regs(words: usize, pow: bool) -> usize {
    let dig = 2 * words;
    if pow {
        4 * dig + dig + 2 + 16 * dig
    } else {
        3 * dig + dig + 2
    }
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

struct Pipeline {
    layout: wgpu::BindGroupLayout,
    step: wgpu::ComputePipeline,
}

/// Batched modular arithmetic on one GPU.
#[derive(Clone)]
pub struct GpuMontgomery {
    ctx: GpuContext,
    pipes: Arc<Mutex<HashMap<usize, Arc<Pipeline>>>>,
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

/// What one batch binds, beyond the program.
struct Job<'a> {
    consts: &'a [u32],
    a: Input<'a>,
    in_words: usize,
    b: &'a [u32],
    exps: &'a [u32],
    exp_words: usize,
    shared_exp: bool,
    regs: usize,
}

impl GpuMontgomery {
    /// On an opened device.
    pub fn new(ctx: GpuContext) -> Self {
        Self {
            ctx,
            pipes: Arc::default(),
        }
    }

    /// The device.
    pub fn describe(&self) -> String {
        self.ctx.describe()
    }

    fn pipeline(&self, words: usize) -> Result<Arc<Pipeline>, KernelError> {
        let mut map = self
            .pipes
            .lock()
            .map_err(|_| KernelError::Device("pipeline cache poisoned".into()))?;
        if let Some(p) = map.get(&words) {
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
            &self.ctx.device,
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
            &["step"],
        )?;
        let step = pipes
            .into_iter()
            .next()
            .ok_or_else(|| KernelError::Validation("no montgomery pipeline".into()))?;
        let p = Arc::new(Pipeline { layout, step });
        map.insert(words, p.clone());
        Ok(p)
    }

    /// Items per dispatch: every binding within the device's cap.
    fn chunk(&self, per_item_words: usize) -> usize {
        let cap = self.ctx.binding_cap() as usize / 4;
        (cap / per_item_words.max(1)).clamp(1, MAX_ITEMS)
    }

    /// Run `prog` over `items` items; returns `items * words` output words.
    fn run(
        &self,
        words: usize,
        n0inv: u32,
        prog: &Program,
        items: usize,
        job: Job<'_>,
    ) -> Result<Vec<u32>, KernelError> {
        use wgpu::BufferUsages as U;
        let pipe = self.pipeline(words)?;
        let ctx = &self.ctx;
        let align = ctx
            .device
            .limits()
            .min_uniform_buffer_offset_alignment
            .max(32) as usize;
        let mut uniforms = vec![0u8; prog.ops.len() * align];
        for (k, &(op, a0, a1)) in prog.ops.iter().enumerate() {
            let p = Params {
                items: items as u32,
                exp_words: job.exp_words as u32,
                exp_stride: if job.shared_exp {
                    0
                } else {
                    job.exp_words as u32
                },
                n0inv,
                in_words: job.in_words as u32,
                op: op as u32,
                a0,
                a1,
            };
            uniforms[k * align..k * align + std::mem::size_of::<Params>()]
                .copy_from_slice(bytemuck::bytes_of(&p));
        }
        // wgpu refuses empty bindings: unused inputs get one word.
        let nonempty = |v: &[u32]| -> Vec<u8> {
            if v.is_empty() {
                vec![0u8; 4]
            } else {
                bytemuck::cast_slice(v).to_vec()
            }
        };
        let (out, _keep) = ctx.scoped(
            wgpu::ErrorFilter::OutOfMemory,
            || {
                let u = ctx.upload("montgomery params", &uniforms, U::UNIFORM);
                let c = ctx.upload("montgomery consts", &nonempty(job.consts), U::STORAGE);
                let a = match job.a {
                    Input::Words(v) => ctx.upload("montgomery a", &nonempty(v), U::STORAGE),
                    Input::OnDevice(b) => b.clone(),
                };
                let b = ctx.upload("montgomery b", &nonempty(job.b), U::STORAGE);
                let e = ctx.upload("montgomery exps", &nonempty(job.exps), U::STORAGE);
                let out = ctx.output("montgomery out", (items * words * 4) as u64);
                let work = ctx.buffer(
                    "montgomery registers",
                    (items * job.regs * 4) as u64,
                    U::STORAGE,
                );
                let bind = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("montgomery"),
                    layout: &pipe.layout,
                    entries: &[
                        wgpu::BindGroupEntry {
                            binding: 0,
                            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                                buffer: &u,
                                offset: 0,
                                size: wgpu::BufferSize::new(std::mem::size_of::<Params>() as u64),
                            }),
                        },
                        wgpu::BindGroupEntry {
                            binding: 1,
                            resource: c.as_entire_binding(),
                        },
                        wgpu::BindGroupEntry {
                            binding: 2,
                            resource: a.as_entire_binding(),
                        },
                        wgpu::BindGroupEntry {
                            binding: 3,
                            resource: b.as_entire_binding(),
                        },
                        wgpu::BindGroupEntry {
                            binding: 4,
                            resource: e.as_entire_binding(),
                        },
                        wgpu::BindGroupEntry {
                            binding: 5,
                            resource: out.gpu.as_entire_binding(),
                        },
                        wgpu::BindGroupEntry {
                            binding: 6,
                            resource: work.as_entire_binding(),
                        },
                    ],
                });
                let groups = (items as u32).div_ceil(WG);
                let gx = groups.min(MAX_WG as u32).max(1);
                let gy = groups.div_ceil(gx);
                let mut enc = ctx
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("montgomery"),
                    });
                {
                    let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                        label: Some("montgomery"),
                        timestamp_writes: None,
                    });
                    pass.set_pipeline(&pipe.step);
                    for k in 0..prog.ops.len() {
                        pass.set_bind_group(0, &bind, &[(k * align) as u32]);
                        pass.dispatch_workgroups(gx, gy, 1);
                    }
                }
                out.copy_back(&mut enc);
                ctx.queue.submit([enc.finish()]);
                (out, (u, c, a, b, e, work))
            },
            |m| KernelError::Device(format!("out of GPU memory: {m}")),
        )?;
        read_pod::<u32>(&ctx.device, &out.read)
    }

    /// The table's entries on this device: uploaded on first use, then kept with the table.
    fn table_on_device(&self, table: &FixedTable) -> Result<wgpu::Buffer, KernelError> {
        let mut slot = table
            .on_device
            .lock()
            .map_err(|_| KernelError::Device("fixed-base table cache poisoned".into()))?;
        if let Some((dev, buf)) = slot.as_ref()
            && *dev == self.ctx.device
        {
            return Ok(buf.clone());
        }
        let buf = self.ctx.scoped(
            wgpu::ErrorFilter::OutOfMemory,
            || {
                self.ctx.upload(
                    "montgomery fixed-base table",
                    bytemuck::cast_slice(&table.entries),
                    wgpu::BufferUsages::STORAGE,
                )
            },
            |m| KernelError::Device(format!("out of GPU memory for a fixed-base table: {m}")),
        )?;
        *slot = Some((self.ctx.device.clone(), buf.clone()));
        Ok(buf)
    }

    /// `a_i b_i mod m`.
    pub(crate) fn mul(&self, m: &Modulus, a: &[u32], b: &[u32]) -> Result<Vec<u32>, KernelError> {
        let w = m.words();
        let consts = digits(&[m.m.as_slice(), &m.r2].concat());
        let prog = Program::modmul(w);
        let per = self.chunk(regs(w, false));
        let mut out = Vec::with_capacity(a.len());
        for (a, b) in a.chunks(per * w).zip(b.chunks(per * w)) {
            out.extend(self.run(
                w,
                m.n0inv,
                &prog,
                a.len() / w,
                Job {
                    consts: &consts,
                    a: Input::Words(a),
                    in_words: w,
                    b,
                    exps: &[],
                    exp_words: 0,
                    shared_exp: true,
                    regs: regs(w, false),
                },
            )?);
        }
        Ok(out)
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
        if table.entries.len() as u64 * 4 > self.ctx.binding_cap() {
            return Err(KernelError::Input(format!(
                "a fixed-base table of {} bytes exceeds the GPU's storage binding",
                table.entries.len() * 4
            )));
        }
        let consts = digits(&[m.m.as_slice(), &m.r2, &table.init].concat());
        let entries = self.table_on_device(table)?;
        let prog = Program::fixed_pow(w, table.windows as u32);
        let per = self.chunk(regs(w, false).max(exp_words));
        let mut out = Vec::with_capacity(factors.len());
        for (f, e) in factors.chunks(per * w).zip(exps.chunks(per * exp_words)) {
            out.extend(self.run(
                w,
                m.n0inv,
                &prog,
                f.len() / w,
                Job {
                    consts: &consts,
                    a: Input::OnDevice(&entries),
                    in_words: 0,
                    b: f,
                    exps: e,
                    exp_words,
                    shared_exp: false,
                    regs: regs(w, false),
                },
            )?);
        }
        Ok(out)
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
        let consts = digits(&[m.m.as_slice(), &m.r2].concat());
        let prog = Program::modpow(w, wide, (exp_words * 8) as u32);
        let per = self.chunk(regs(w, true).max(iw).max(exp_words));
        let n = bases.len() / iw;
        let mut out = Vec::with_capacity(n * w);
        for start in (0..n).step_by(per) {
            let items = per.min(n - start);
            let e = if shared {
                exps
            } else {
                &exps[start * exp_words..(start + items) * exp_words]
            };
            out.extend(self.run(
                w,
                m.n0inv,
                &prog,
                items,
                Job {
                    consts: &consts,
                    a: Input::Words(&bases[start * iw..(start + items) * iw]),
                    in_words: iw,
                    b: &[],
                    exps: e,
                    exp_words,
                    shared_exp: shared,
                    regs: regs(w, true),
                },
            )?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::montgomery::{BatchArith, MAX_WORDS, cpu};
    use rand::{Rng, SeedableRng};

    /// The GPU (lavapipe in CI: fails, not skips, without an adapter).
    fn gpu() -> BatchArith {
        BatchArith::new(crate::DevicePref::Gpu).expect("a GPU adapter (lavapipe in CI)")
    }

    fn modulus(rng: &mut impl Rng, words: usize) -> Modulus {
        let mut m: Vec<u32> = (0..words).map(|_| rng.random()).collect();
        m[0] |= 1;
        m[words - 1] |= 1 << 31;
        Modulus::new(m).expect("modulus")
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
    fn gpu_and_rng(seed: u64) -> (GpuMontgomery, rand_chacha::ChaCha8Rng) {
        let ctx = GpuContext::shared().expect("a GPU adapter (lavapipe in CI)");
        (
            GpuMontgomery::new(ctx),
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

    /// A batch larger than one dispatch is split and reassembled in order.
    #[test]
    fn batches_are_split_in_order() {
        let (g, mut rng) = gpu_and_rng(21);
        let m = modulus(&mut rng, 4);
        let n = MAX_ITEMS + 37;
        let a = values(&mut rng, &m, n);
        let b = values(&mut rng, &m, n);
        assert_eq!(g.mul(&m, &a, &b).expect("gpu"), cpu::mul(&m, &a, &b));
    }
}
