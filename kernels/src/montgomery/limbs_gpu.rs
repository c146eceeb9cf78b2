//! The host side of the `limbs` program ([`super::limbs`]): products and fixed-base powers
//! on 32-bit limbs with 64-bit products, for devices opened with `SHADER_INT64`. One
//! pipeline pair per modulus size, built on first use; a batch split into chunks of at most
//! [`MAX_ITEMS`] items within the binding cap, two chunks in flight; a fixed-base power's
//! windows split over dispatches of [`limbs::windows_per_dispatch`] windows in one
//! submission, the accumulators on the device between them.

use super::{GpuMontgomery, Pending, Pipeline};
use crate::error::KernelError;
use crate::gpu::bounded::BoundedWgsl;
use crate::gpu::{build_bounded_pipelines, grid, storage_entry, uniform_dynamic_entry};
use crate::montgomery::limbs;
use crate::montgomery::numbers::{FixedTable, Modulus};
use std::collections::VecDeque;
use std::sync::Arc;

/// Most items in one chunk.
const MAX_ITEMS: usize = 1 << 16;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    items: u32,
    exp_words: u32,
    n0inv: u32,
    win_from: u32,
    win_to: u32,
    windows: u32,
    gx: u32,
    wide: u32,
    exp_stride: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

impl Params {
    /// The block of an operation on moduli with `n0inv` (items and grid set per chunk).
    fn new(n0inv: u32) -> Self {
        Self {
            n0inv,
            ..bytemuck::Zeroable::zeroed()
        }
    }
}

/// The entry points of the generated shader.
const ENTRIES: [&str; 4] = [
    "limbs_mul",
    "limbs_fixed_pow",
    "limbs_pow_setup",
    "limbs_pow",
];

/// A chunk's inputs: the operands (`a` item-major, or the table resident on the device),
/// the right operands or factors, the exponents, and the item count.
struct LimbsChunk<'a> {
    a: Option<&'a [u32]>,
    b: &'a [u32],
    exps: &'a [u32],
    items: usize,
}

/// The limbs program for moduli of `words` limbs compiled without loop counters
/// ([`BoundedWgsl`]): its layout and one pipeline per entry of [`ENTRIES`] (also what
/// `bench gpu-probe` times).
pub(crate) fn build(
    ctx: &crate::gpu::GpuContext,
    words: usize,
) -> Result<(wgpu::BindGroupLayout, Vec<wgpu::ComputePipeline>), KernelError> {
    let mut entries = vec![uniform_dynamic_entry(0)];
    entries.extend((1..=4).map(|b| storage_entry(b, true)));
    entries.extend((5..=6).map(|b| storage_entry(b, false)));
    // Straight-line limb arithmetic whose few loops provably end: no loop counters.
    let src = BoundedWgsl::new(limbs::source(words))?;
    build_bounded_pipelines(ctx, "montgomery limbs", &src, &entries, &ENTRIES)
}

impl GpuMontgomery {
    /// The `limbs` pipeline `entry` for moduli of `words` limbs.
    pub(super) fn limbs_pipeline(
        &self,
        words: usize,
        entry: &'static str,
    ) -> Result<Arc<Pipeline>, KernelError> {
        let mut map = self
            .pipes
            .lock()
            .map_err(|_| KernelError::Device("pipeline cache poisoned".into()))?;
        if let Some(p) = map.get(&(words, entry)) {
            return Ok(p.clone());
        }
        let (layout, pipes) = build(&self.ctx, words)?;
        let mut wanted = None;
        for (name, pipe) in ENTRIES.iter().zip(pipes) {
            let p = Arc::new(Pipeline {
                layout: layout.clone(),
                pipe,
            });
            if *name == entry {
                wanted = Some(p.clone());
            }
            map.insert((words, name), p);
        }
        wanted.ok_or_else(|| KernelError::Validation(format!("no montgomery pipeline {entry}")))
    }

    /// Items per chunk for moduli of `words` limbs: every binding within the cap.
    fn limbs_chunk(&self, words: usize, exp_words: usize) -> usize {
        let cap = self.ctx.binding_cap() as usize / 4;
        (cap / words.max(exp_words).max(1)).clamp(1, MAX_ITEMS)
    }

    /// Upload and submit one chunk: one dispatch per block, each of its pipeline (all of
    /// one shader: one layout), in one submission.
    fn limbs_submit(
        &self,
        m: &Modulus,
        c: LimbsChunk<'_>,
        table: Option<&wgpu::Buffer>,
        blocks: &[(Arc<Pipeline>, Params)],
        acc_words: usize,
    ) -> Result<Pending, KernelError> {
        use wgpu::BufferUsages as U;
        let (ctx, pool) = (&self.ctx, &self.pool);
        let (dev, queue) = (&ctx.device, &ctx.queue);
        let w = m.words();
        let (gx, gy) = grid(c.items as u64, u64::from(limbs::WG));
        let params: Vec<Params> = blocks
            .iter()
            .map(|(_, p)| Params {
                items: c.items as u32,
                gx,
                ..*p
            })
            .collect();
        let (uniforms, stride) = ctx.params(&params);
        let Some((first, _)) = blocks.first() else {
            return Err(KernelError::Input(
                "limbs: an operation of no dispatch".into(),
            ));
        };
        // wgpu refuses empty bindings: unused inputs get one word.
        let bytes = |v: &[u32]| -> Vec<u8> {
            if v.is_empty() {
                vec![0u8; 4]
            } else {
                bytemuck::cast_slice(v).to_vec()
            }
        };
        let out_bytes = (c.items * w * 4) as u64;
        // m and R^2 as limbs, uploaded on the first batch of this modulus on this device.
        let k = self.resident(&m.limbs_on_device, "montgomery limbs modulus", || {
            [m.m.as_slice(), &m.r2].concat()
        })?;
        ctx.scoped(
            wgpu::ErrorFilter::OutOfMemory,
            || {
                let u = pool.upload(dev, queue, "limbs params", &uniforms, U::UNIFORM);
                let mut pooled = vec![u.clone()];
                let a = match (c.a, table) {
                    (Some(v), _) => {
                        let b = pool.upload(dev, queue, "limbs a", &bytes(v), U::STORAGE);
                        pooled.push(b.clone());
                        b
                    }
                    (None, Some(t)) => t.clone(),
                    (None, None) => pool.take(dev, "limbs a", 4, U::STORAGE),
                };
                let b = pool.upload(dev, queue, "limbs b", &bytes(c.b), U::STORAGE);
                let e = pool.upload(dev, queue, "limbs exps", &bytes(c.exps), U::STORAGE);
                let acc_bytes = (c.items * acc_words * 4).max(4) as u64;
                let acc = pool.take(dev, "limbs acc", acc_bytes, U::STORAGE);
                let out = pool.take(dev, "limbs out", out_bytes, U::STORAGE | U::COPY_SRC);
                let read = pool.take(dev, "limbs read", out_bytes, U::MAP_READ);
                let size = size_of::<Params>() as u64;
                let bind = ctx.bind_params(
                    "montgomery limbs",
                    &first.layout,
                    (&u, size),
                    &[&k, &a, &b, &e, &acc, &out],
                );
                let mut enc = dev.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("montgomery limbs"),
                });
                for (i, (pipe, _)) in blocks.iter().enumerate() {
                    crate::gpu::dispatch_at(
                        &mut enc,
                        &pipe.pipe,
                        &bind,
                        (gx, gy),
                        i as u32 * stride,
                    );
                }
                enc.copy_buffer_to_buffer(&out, 0, &read, 0, Some(out_bytes));
                let index = queue.submit([enc.finish()]);
                pooled.extend([b, e, acc, out]);
                Pending {
                    index,
                    read,
                    words: c.items * w,
                    pooled,
                }
            },
            |msg| KernelError::Device(format!("out of GPU memory: {msg}")),
        )
    }

    /// Run the chunks, two in flight, results in order.
    fn limbs_run<'c>(
        &self,
        m: &Modulus,
        chunks: impl Iterator<Item = LimbsChunk<'c>>,
        table: Option<&wgpu::Buffer>,
        blocks: &[(Arc<Pipeline>, Params)],
        (total_words, acc_words): (usize, usize),
    ) -> Result<Vec<u32>, KernelError> {
        let mut out = Vec::with_capacity(total_words);
        let mut pending = VecDeque::with_capacity(2);
        for c in chunks {
            pending.push_back(self.limbs_submit(m, c, table, blocks, acc_words)?);
            if pending.len() >= 2
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

    /// `a_i b_i mod m` on the `limbs` program.
    pub(super) fn limbs_mul(
        &self,
        m: &Modulus,
        a: &[u32],
        b: &[u32],
    ) -> Result<Vec<u32>, KernelError> {
        let w = m.words();
        let pipe = self.limbs_pipeline(w, "limbs_mul")?;
        let per = self.limbs_chunk(w, 0);
        let block = Params::new(limbs::n0inv32(m.m[0]));
        let chunks = a
            .chunks(per * w)
            .zip(b.chunks(per * w))
            .map(|(a, b)| LimbsChunk {
                a: Some(a),
                b,
                exps: &[],
                items: a.len() / w,
            });
        self.limbs_run(m, chunks, None, &[(pipe, block)], (a.len(), 0))
    }

    /// Fixed-base power times a factor on the `limbs` program.
    pub(super) fn limbs_fixed_pow(
        &self,
        m: &Modulus,
        table: &FixedTable,
        exps: &[u32],
        exp_words: usize,
        factors: &[u32],
    ) -> Result<Vec<u32>, KernelError> {
        let w = m.words();
        let pipe = self.limbs_pipeline(w, "limbs_fixed_pow")?;
        let entries = self.table_on_device(table)?;
        let per = self.limbs_chunk(w, exp_words);
        let step = self
            .limbs_step
            .unwrap_or_else(|| limbs::windows_per_dispatch(self.ctx.is_software(), w))
            .max(1);
        let windows = table.windows;
        let blocks: Vec<(Arc<Pipeline>, Params)> = (0..windows.div_ceil(step).max(1))
            .map(|k| {
                (
                    pipe.clone(),
                    Params {
                        exp_words: exp_words as u32,
                        win_from: (k * step) as u32,
                        win_to: ((k + 1) * step).min(windows) as u32,
                        windows: windows as u32,
                        ..Params::new(limbs::n0inv32(m.m[0]))
                    },
                )
            })
            .collect();
        let chunks = factors
            .chunks(per * w)
            .zip(exps.chunks(per * exp_words))
            .map(|(f, e)| LimbsChunk {
                a: None,
                b: f,
                exps: e,
                items: f.len() / w,
            });
        let acc = if blocks.len() > 1 { w } else { 0 };
        self.limbs_run(m, chunks, Some(&entries), &blocks, (factors.len(), acc))
    }

    /// Variable-base power on the `limbs` program (`shared`: one exponent for all items).
    pub(super) fn limbs_pow(
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
        let setup = self.limbs_pipeline(w, "limbs_pow_setup")?;
        let pipe = self.limbs_pipeline(w, "limbs_pow")?;
        // The accumulator and 16 powers of the base per item stay on the device.
        let per = self.limbs_chunk(17 * w, exp_words.max(iw));
        let step = self
            .limbs_step
            .unwrap_or_else(|| limbs::pow_windows_per_dispatch(self.ctx.is_software(), w))
            .max(1);
        let windows = exp_words * 8;
        let base = Params {
            exp_words: exp_words as u32,
            windows: windows as u32,
            wide: u32::from(wide),
            exp_stride: if shared { 0 } else { exp_words as u32 },
            ..Params::new(limbs::n0inv32(m.m[0]))
        };
        let blocks: Vec<(Arc<Pipeline>, Params)> = std::iter::once((setup, base))
            .chain((0..windows.div_ceil(step)).map(|k| {
                let p = Params {
                    win_from: (k * step) as u32,
                    win_to: ((k + 1) * step).min(windows) as u32,
                    ..base
                };
                (pipe.clone(), p)
            }))
            .collect();
        let n = bases.len() / iw;
        let chunks = (0..n).step_by(per).map(|start| {
            let items = per.min(n - start);
            LimbsChunk {
                a: Some(&bases[start * iw..(start + items) * iw]),
                b: &[],
                exps: if shared {
                    exps
                } else {
                    &exps[start * exp_words..(start + items) * exp_words]
                },
                items,
            }
        });
        self.limbs_run(m, chunks, None, &blocks, (n * w, 17 * w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::GpuContext;
    use crate::montgomery::fused::{Kind, Shape};
    use crate::montgomery::test_numbers::*;
    use crate::montgomery::{cpu, limbs::cpu as twin};
    use rand::{Rng, SeedableRng};

    /// The limbs program on the device (lavapipe in CI: fails, not skips, without an
    /// adapter or without 64-bit integers) equals its CPU twin and the 16-bit twin word for
    /// word: products, fixed-base powers and variable-base powers (bases of one and two
    /// moduli' limbs, exponents per item and shared) at 1 to 128 limbs (n^2 of a 2048-bit
    /// key), over more than one workgroup, a power's windows in one dispatch and split over
    /// dispatches of 1 and 3 windows (the accumulator and the powers of the base kept on
    /// the device between them), and a batch split into chunks.
    #[test]
    fn limbs_program_matches_both_twins() {
        let ctx = GpuContext::shared().expect("a GPU adapter (lavapipe in CI)");
        assert!(ctx.has_int64(), "{} has no 64-bit integers", ctx.describe());
        let mut g = GpuMontgomery::new(ctx);
        g.limbs_anywhere = true;
        let pow = Kind::Pow {
            wide: true,
            windows: 16,
        };
        assert_eq!(g.shape(64, pow), Shape::Limbs);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(530);
        for (words, n, windows) in [
            (1usize, 70usize, 9usize),
            (8, 130, 16),
            (64, 9, 7),
            (128, 4, 112),
        ] {
            assert_eq!(g.shape(words, Kind::Mul), Shape::Limbs);
            let m = modulus(&mut rng, words);
            let a = below(&mut rng, &m, n);
            let b = below(&mut rng, &m, n);
            let want = cpu::mul(&m, &a, &b);
            assert_eq!(twin::mul(&m, &a, &b), want, "twin, {words} limbs");
            assert_eq!(g.mul(&m, &a, &b).expect("gpu"), want, "mul, {words} limbs");
            let entries = below(&mut rng, &m, 16 * windows);
            let table = FixedTable::new(&m, &entries, &a[..words]).expect("table");
            let exp_words = windows.div_ceil(8);
            let exps: Vec<u32> = (0..n * exp_words).map(|_| rng.random()).collect();
            let want = cpu::fixed_pow(&m, &table, &exps, exp_words, &b);
            for step in [None, Some(1), Some(3)] {
                g.limbs_step = step;
                let got = g.fixed_pow(&m, &table, &exps, exp_words, &b).expect("gpu");
                assert_eq!(
                    got, want,
                    "fixed pow, {words} limbs, {step:?} windows a dispatch"
                );
            }
            let wide: Vec<u32> = a
                .chunks(words)
                .zip(b.chunks(words))
                .flat_map(|(lo, hi)| [lo, hi].concat())
                .collect();
            let exps: Vec<u32> = (0..n * 2).map(|_| rng.random()).collect();
            for (bases, is_wide) in [(&a, false), (&wide, true)] {
                for shared in [false, true] {
                    let e = if shared { &exps[..2] } else { &exps[..] };
                    let want = cpu::pow(&m, bases, is_wide, e, 2, shared);
                    assert_eq!(twin::pow(&m, bases, is_wide, e, 2, shared), want);
                    for step in [None, Some(1), Some(3)] {
                        g.limbs_step = step;
                        let got = g.pow(&m, bases, is_wide, e, 2, shared).expect("gpu");
                        assert_eq!(
                            got, want,
                            "pow, {words} limbs, wide {is_wide}, shared {shared}, {step:?}"
                        );
                    }
                }
            }
            g.limbs_step = None;
        }
        let m = modulus(&mut rng, 2);
        let n = MAX_ITEMS + 37;
        let a = below(&mut rng, &m, n);
        let b = below(&mut rng, &m, n);
        assert_eq!(
            g.mul(&m, &a, &b).expect("gpu"),
            cpu::mul(&m, &a, &b),
            "chunks"
        );
    }
}
