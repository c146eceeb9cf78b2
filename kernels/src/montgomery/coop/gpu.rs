//! The cooperative product's shader (generated per modulus size) and its host side.

use super::cpu::{LANES, items_per_group, neg_inverse};
use crate::error::KernelError;
use crate::gpu::bounded::BoundedWgsl;
use crate::gpu::{
    GpuContext, build_bounded_pipelines, grid, read_pod, storage_entry, uniform_entry,
};
use crate::montgomery::numbers::Modulus;
use std::collections::HashMap;
use std::fmt::Write;
use std::sync::{Arc, Mutex};

/// The programs' WGSL template (valid with `bindings.wgsl` appended, at 4 limbs).
const COOP_WGSL: &str = include_str!("coop.wgsl");

/// The WGSL of `coop_mul` and `coop_fixed_pow` for moduli of `w` words, `ipw` items per
/// workgroup of [`LANES`] lanes each: the template with its sizes set. Every loop has a
/// literal, `const` or `let` bound ([`BoundedWgsl`]).
pub(crate) fn source(w: usize, ipw: usize) -> String {
    let l = LANES;
    let sizes = [
        ("W", w),
        ("W2", 2 * w),
        ("L", l),
        ("CPL", (2 * w).div_ceil(l)),
        ("JPL", w.div_ceil(l)),
        ("IPW", ipw),
        ("IW", ipw * w),
        ("IW2", ipw * 2 * w),
        ("WG", ipw * l),
    ];
    with_sizes(COOP_WGSL, &sizes)
}

/// The subgroup form's WGSL template (valid with `bindings.wgsl` appended, at 8 limbs and
/// 8 lanes).
const SUBGROUP_WGSL: &str = include_str!("subgroup.wgsl");

/// The subgroup form for moduli of `w` words on subgroups of `lanes` lanes: one item per
/// subgroup, workgroups of 64 invocations.
pub(crate) fn subgroup_source(w: usize, lanes: usize) -> String {
    let sizes = [
        ("W", w),
        ("S", lanes),
        ("K", w.div_ceil(lanes)),
        ("IPW", 64 / lanes),
        ("WG", 64),
    ];
    with_sizes(SUBGROUP_WGSL, &sizes)
}

/// `template` with the constants between its `@sizes` markers set to `sizes`.
fn with_sizes(template: &str, sizes: &[(&str, usize)]) -> String {
    let mut block = String::new();
    for (name, v) in sizes {
        let _ = writeln!(block, "const {name}: u32 = {v}u;");
    }
    let (head, rest) = template
        .split_once("// @sizes begin\n")
        .unwrap_or((template, ""));
    let tail = rest.split_once("// @sizes end\n").map_or("", |(_, t)| t);
    format!("{head}// @sizes begin\n{block}// @sizes end\n{tail}\n{BINDINGS_WGSL}")
}

/// The parameters and bindings both templates share (WGSL's declarations may come in any
/// order, so they are appended).
const BINDINGS_WGSL: &str = include_str!("bindings.wgsl");

/// Which form of the cooperative programs runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// One item per subgroup of this many lanes, operands in registers, shuffles.
    Subgroup(usize),
    /// One item per [`LANES`] lanes, operands in workgroup memory, barriers.
    Workgroup,
}

/// The form for a device: subgroups where the adapter has them at one fixed size of 4 to 64
/// lanes (a shader is generated for one size), workgroup memory otherwise or when
/// `KINSEY_GPU_COOP=workgroup` asks for it (an A/B).
pub(crate) fn form_for(ctx: &GpuContext) -> Form {
    let (min, max) = (ctx.info.subgroup_min_size, ctx.info.subgroup_max_size);
    let forced = std::env::var("KINSEY_GPU_COOP").is_ok_and(|v| v == "workgroup");
    if ctx.has_subgroups() && min == max && (4..=64).contains(&min) && !forced {
        Form::Subgroup(min as usize)
    } else {
        Form::Workgroup
    }
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    items: u32,
    gx: u32,
    win_from: u32,
    win_to: u32,
    exp_words: u32,
    last: u32,
    windows: u32,
    exp_stride: u32,
    wide: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

/// The compiled entries for one modulus size.
struct Program {
    layout: wgpu::BindGroupLayout,
    mul: wgpu::ComputePipeline,
    fixed_pow: wgpu::ComputePipeline,
    pow_setup: wgpu::ComputePipeline,
    pow: wgpu::ComputePipeline,
    ipw: usize,
}

/// Loop iterations of one lane in one cooperative product at `w` words (its three column
/// passes, and the carries and subtraction of lane 0): what a software rasteriser's loop
/// budget is counted against.
fn montmul_iterations(w: usize) -> usize {
    let cpl = (2 * w).div_ceil(LANES);
    3 * cpl * (w + 1) + 3 * 2 * w + 2 * w
}

/// Windows of a variable-base power per dispatch (four squarings, the scan and a product
/// each): 8 on hardware, what fits llvmpipe's loop budget on a software rasteriser.
fn pow_windows_per_dispatch(software: bool, w: usize) -> usize {
    if software {
        let per_window = 5 * montmul_iterations(w) + 4 * w.div_ceil(LANES) + 16 * w.div_ceil(LANES);
        (crate::montgomery::steps::LOOP_BUDGET.saturating_sub(montmul_iterations(w) + 4 * w)
            / per_window)
            .max(1)
    } else {
        8
    }
}

/// Whether a variable-base power's set-up dispatch (about 20 products) fits a software
/// rasteriser's loop budget at `w` words (hardware: always).
pub(crate) fn pow_setup_fits(software: bool, w: usize) -> bool {
    !software || 20 * montmul_iterations(w) <= crate::montgomery::steps::LOOP_BUDGET
}

/// Windows of a fixed-base power per dispatch: 16 on hardware (no dispatch long enough to
/// lose a device), what fits llvmpipe's loop budget on a software rasteriser.
fn windows_per_dispatch(software: bool, w: usize) -> usize {
    if software {
        let per_window = montmul_iterations(w) + 16 * w.div_ceil(LANES) + 1;
        (crate::montgomery::steps::LOOP_BUDGET.saturating_sub(montmul_iterations(w) + 4 * w)
            / per_window)
            .max(1)
    } else {
        16
    }
}

/// The cooperative product on one device, its programs built per modulus size.
#[derive(Clone)]
pub(crate) struct GpuCoop {
    ctx: GpuContext,
    programs: Arc<Mutex<HashMap<usize, Arc<Program>>>>,
    /// Windows per dispatch, when a test sets it.
    step: Option<usize>,
    /// Subgroups or workgroup memory.
    form: Form,
}

impl GpuCoop {
    /// On an opened device (it needs 64-bit integers).
    pub(crate) fn new(ctx: GpuContext) -> Self {
        Self {
            form: form_for(&ctx),
            ctx,
            programs: Arc::default(),
            step: None,
        }
    }

    /// The form in use.
    #[cfg(test)]
    fn form(&self) -> Form {
        self.form
    }

    /// With the form `form` (tests: both forms on one device).
    #[cfg(test)]
    fn with_form(self, form: Form) -> Self {
        Self {
            form,
            programs: Arc::default(),
            ..self
        }
    }

    /// With `n` windows per dispatch (tests: many dispatches at small sizes).
    #[cfg(test)]
    fn with_windows_per_dispatch(self, n: usize) -> Self {
        Self {
            step: Some(n),
            ..self
        }
    }

    fn program(&self, w: usize) -> Result<Arc<Program>, KernelError> {
        let mut map = self
            .programs
            .lock()
            .map_err(|_| KernelError::Device("coop programs poisoned".into()))?;
        if let Some(p) = map.get(&w) {
            return Ok(p.clone());
        }
        if !self.ctx.has_int64() {
            return Err(KernelError::Device(format!(
                "{} has no 64-bit integers: no cooperative product",
                self.ctx.describe()
            )));
        }
        let (src, ipw) = match self.form {
            Form::Subgroup(lanes) => (subgroup_source(w, lanes), 64 / lanes),
            Form::Workgroup => {
                let limit = self.ctx.limits.max_compute_workgroup_storage_size as usize;
                let ipw = items_per_group(w, limit);
                if ipw == 0 {
                    return Err(KernelError::Input(format!(
                        "a cooperative product of {w} words needs more than the device's \
                         {limit} bytes of workgroup memory"
                    )));
                }
                (source(w, ipw), ipw)
            }
        };
        let src = BoundedWgsl::new(src)?;
        let mut entries = vec![uniform_entry(0)];
        entries.extend((1..=4).map(|b| storage_entry(b, true)));
        entries.extend((5..=6).map(|b| storage_entry(b, false)));
        let (layout, pipes) = build_bounded_pipelines(
            &self.ctx,
            "montgomery coop",
            &src,
            &entries,
            &["coop_mul", "coop_fixed_pow", "coop_pow_setup", "coop_pow"],
        )?;
        let [mul, fixed_pow, pow_setup, pow]: [wgpu::ComputePipeline; 4] = pipes
            .try_into()
            .map_err(|_| KernelError::Validation("expected four coop pipelines".into()))?;
        let p = Arc::new(Program {
            layout,
            mul,
            fixed_pow,
            pow_setup,
            pow,
            ipw,
        });
        map.insert(w, p.clone());
        Ok(p)
    }

    /// The modulus' constants on the device: m, n', R^2.
    fn consts(&self, m: &Modulus) -> wgpu::Buffer {
        let mut consts = m.value().to_vec();
        consts.extend(neg_inverse(m.value()));
        consts.extend_from_slice(&m.r2);
        let st = wgpu::BufferUsages::STORAGE;
        self.ctx
            .upload("coop consts", bytemuck::cast_slice(&consts), st)
    }

    /// Items per chunk at `w` words (each binding within the cap).
    fn per_chunk(&self, w: usize, exp_words: usize) -> usize {
        (self.ctx.binding_cap() as usize / (4 * w.max(exp_words))).clamp(1, 1 << 20)
    }

    /// One chunk of `items`: `blocks` dispatches of `pipe` in one submission (one
    /// parameter block each, bound with the same buffers), the result read back.
    fn run_chunk(
        &self,
        prog: &Program,
        bufs: [&wgpu::Buffer; 4],
        (items, w_words, acc_words): (usize, usize, usize),
        blocks: &[(&wgpu::ComputePipeline, Params)],
    ) -> Result<Vec<u32>, KernelError> {
        let ctx = &self.ctx;
        let (gx, gy) = grid(items.div_ceil(prog.ipw) as u64, 1);
        let acc = ctx.buffer(
            "coop acc",
            (items * acc_words * 4) as u64,
            wgpu::BufferUsages::STORAGE,
        );
        let res = ctx.output("coop out", (items * w_words * 4) as u64);
        let binds: Vec<wgpu::BindGroup> = blocks
            .iter()
            .map(|(_, p)| {
                let p = Params {
                    items: items as u32,
                    gx,
                    ..*p
                };
                let params = ctx.upload(
                    "coop params",
                    bytemuck::bytes_of(&p),
                    wgpu::BufferUsages::UNIFORM,
                );
                let [c, a, b, e] = bufs;
                ctx.bind("coop", &prog.layout, &[&params, c, a, b, e, &acc, &res.gpu])
            })
            .collect();
        ctx.submit("montgomery coop", |enc| {
            for (bind, (pipe, _)) in binds.iter().zip(blocks) {
                let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("montgomery coop"),
                    timestamp_writes: None,
                });
                pass.set_pipeline(pipe);
                pass.set_bind_group(0, bind, &[]);
                pass.dispatch_workgroups(gx, gy, 1);
            }
            res.copy_back(enc);
        })?;
        read_pod::<u32>(ctx, &res.read)
    }

    /// `a_i b_i mod m` (operands checked by the caller), in chunks within the binding cap.
    pub(crate) fn mul(&self, m: &Modulus, a: &[u32], b: &[u32]) -> Result<Vec<u32>, KernelError> {
        let w = m.words();
        let prog = self.program(w)?;
        let st = wgpu::BufferUsages::STORAGE;
        let cbuf = self.consts(m);
        let none = self.ctx.buffer("coop none", 16, st);
        let per = self.per_chunk(w, 0);
        let mut out = Vec::with_capacity(a.len());
        for (ac, bc) in a.chunks(per * w).zip(b.chunks(per * w)) {
            let abuf = self.ctx.upload("coop a", bytemuck::cast_slice(ac), st);
            let bbuf = self.ctx.upload("coop b", bytemuck::cast_slice(bc), st);
            let block = (&prog.mul, bytemuck::Zeroable::zeroed());
            let bufs = [&cbuf, &abuf, &bbuf, &none];
            out.extend(self.run_chunk(&prog, bufs, (ac.len() / w, w, w), &[block])?);
        }
        Ok(out)
    }

    /// `f_i * init * prod_w table[w][digit w of e_i] mod m` with the table (Montgomery
    /// form, then its init) resident in `table`, of `windows` windows; each chunk's windows
    /// over dispatches of a bounded number (one submission), the accumulators on the device
    /// between them.
    pub(crate) fn fixed_pow(
        &self,
        m: &Modulus,
        table: &wgpu::Buffer,
        windows: usize,
        exps: &[u32],
        exp_words: usize,
        factors: &[u32],
    ) -> Result<Vec<u32>, KernelError> {
        let w = m.words();
        let prog = self.program(w)?;
        let st = wgpu::BufferUsages::STORAGE;
        let cbuf = self.consts(m);
        let step = self
            .step
            .unwrap_or_else(|| windows_per_dispatch(self.ctx.is_software(), w));
        let blocks: Vec<_> = (0..windows)
            .step_by(step)
            .map(|from| {
                let p = Params {
                    win_from: from as u32,
                    win_to: (from + step).min(windows) as u32,
                    exp_words: exp_words as u32,
                    last: u32::from(from + step >= windows),
                    windows: windows as u32,
                    ..bytemuck::Zeroable::zeroed()
                };
                (&prog.fixed_pow, p)
            })
            .collect();
        let per = self.per_chunk(w, exp_words);
        let mut out = Vec::with_capacity(factors.len());
        for (fc, ec) in factors.chunks(per * w).zip(exps.chunks(per * exp_words)) {
            let fbuf = self
                .ctx
                .upload("coop factors", bytemuck::cast_slice(fc), st);
            let ebuf = self.ctx.upload("coop exps", bytemuck::cast_slice(ec), st);
            let bufs = [&cbuf, table, &fbuf, &ebuf];
            out.extend(self.run_chunk(&prog, bufs, (fc.len() / w, w, w), &blocks)?);
        }
        Ok(out)
    }

    /// `x_i ^ e_i mod m` (bases of `2 W` limbs reduced first when `wide`; one exponent for
    /// all when `shared`): a set-up dispatch (the base in Montgomery form and its powers 0
    /// to 15 in device memory), then the windows from the top over dispatches of a bounded
    /// number, in one submission per chunk.
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
        let prog = self.program(w)?;
        let st = wgpu::BufferUsages::STORAGE;
        let cbuf = self.consts(m);
        let none = self.ctx.buffer("coop none", 16, st);
        let windows = 8 * exp_words;
        let step = self
            .step
            .unwrap_or_else(|| pow_windows_per_dispatch(self.ctx.is_software(), w));
        let stride = if shared { 0 } else { exp_words as u32 };
        let base = Params {
            exp_words: exp_words as u32,
            windows: windows as u32,
            exp_stride: stride,
            wide: u32::from(wide),
            ..bytemuck::Zeroable::zeroed()
        };
        let mut blocks = vec![(&prog.pow_setup, base)];
        blocks.extend((0..windows).step_by(step).map(|from| {
            let p = Params {
                win_from: from as u32,
                win_to: (from + step).min(windows) as u32,
                last: u32::from(from + step >= windows),
                ..base
            };
            (&prog.pow, p)
        }));
        let per = self.per_chunk(17 * w, exp_words);
        let n = bases.len() / iw;
        let mut out = Vec::with_capacity(n * w);
        for start in (0..n).step_by(per) {
            let items = per.min(n - start);
            let bbuf = self.ctx.upload(
                "coop bases",
                bytemuck::cast_slice(&bases[start * iw..(start + items) * iw]),
                st,
            );
            let e = if shared {
                exps
            } else {
                &exps[start * exp_words..(start + items) * exp_words]
            };
            let ebuf = self.ctx.upload("coop exps", bytemuck::cast_slice(e), st);
            let bufs = [&cbuf, &bbuf, &none, &ebuf];
            out.extend(self.run_chunk(&prog, bufs, (items, w, 17 * w), &blocks)?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::cpu::cpu_mul;
    use super::*;
    use crate::montgomery::cpu;
    use crate::montgomery::test_numbers::{below, modulus};
    use rand::SeedableRng;

    /// Both forms on the test device: the subgroup form (lavapipe has 8-lane subgroups:
    /// the test fails, not skips, where it has none) and the workgroup-memory form.
    fn forms(ctx: &GpuContext) -> Vec<GpuCoop> {
        let coop = GpuCoop::new(ctx.clone());
        let (min, max) = (ctx.info.subgroup_min_size, ctx.info.subgroup_max_size);
        assert!(
            ctx.has_subgroups() && min == max,
            "{}: subgroups of one size expected (lavapipe has 8 lanes)",
            ctx.describe()
        );
        vec![
            coop.clone().with_form(Form::Subgroup(min as usize)),
            coop.with_form(Form::Workgroup),
        ]
    }

    /// The cooperative product on the device equals its twin and the CPU's product, at
    /// sizes below, at and past the lane count, with a partial last workgroup. Must FAIL
    /// (not skip) without an adapter with 64-bit integers: CI's lavapipe has them.
    #[test]
    fn coop_matches_its_twin_and_the_cpu() {
        let ctx = GpuContext::shared().expect("a GPU adapter (lavapipe in CI) must be available");
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        for coop in forms(&ctx) {
            for (w, n) in [(1usize, 5usize), (7, 9), (16, 4), (33, 7), (64, 6)] {
                let m = modulus(&mut rng, w);
                let a = below(&mut rng, &m, n);
                let b = below(&mut rng, &m, n);
                let got = coop.mul(&m, &a, &b).expect("coop mul");
                let at = format!("{w} words, {:?}", coop.form());
                assert_eq!(got, cpu_mul(&m, &a, &b), "twin at {at}");
                assert_eq!(got, cpu::mul(&m, &a, &b), "CPU at {at}");
            }
        }
    }

    /// Fixed-base powers on the device equal the CPU's, over several dispatches of three
    /// windows (the accumulators on the device between them), a partial last dispatch and a
    /// partial last workgroup.
    #[test]
    fn coop_fixed_powers_match_the_cpu() {
        let ctx = GpuContext::shared().expect("a GPU adapter (lavapipe in CI) must be available");
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(12);
        for (coop, (w, n, windows)) in forms(&ctx).into_iter().flat_map(|c| {
            let c = c.with_windows_per_dispatch(3);
            [(2usize, 5usize, 8usize), (16, 3, 40), (33, 6, 3)].map(|x| (c.clone(), x))
        }) {
            let m = modulus(&mut rng, w);
            let entries = below(&mut rng, &m, 16 * windows);
            let init = below(&mut rng, &m, 1);
            let table = crate::montgomery::FixedTable::new(&m, &entries, &init).expect("table");
            let exp_words = windows.div_ceil(8);
            let exps: Vec<u32> = (0..n * exp_words)
                .map(|_| rand::Rng::random(&mut rng))
                .collect();
            let factors = below(&mut rng, &m, n);
            let resident = [table.entries.as_slice(), &table.init].concat();
            let st = wgpu::BufferUsages::STORAGE;
            let tbuf = ctx.upload("test table", bytemuck::cast_slice(&resident), st);
            let got = coop
                .fixed_pow(&m, &tbuf, windows, &exps, exp_words, &factors)
                .expect("coop fixed pow");
            let want = cpu::fixed_pow(&m, &table, &exps, exp_words, &factors);
            assert_eq!(got, want, "{w} words, {windows} windows, {:?}", coop.form());
        }
        // On a software rasteriser the dispatches stay within its loop budget.
        let budget = crate::montgomery::steps::LOOP_BUDGET;
        for w in [1, 64, 128, 256] {
            let per = windows_per_dispatch(true, w);
            // Per window a product and the table scan; then the factor's product.
            let lane = per * (montmul_iterations(w) + 16 * w.div_ceil(LANES) + 1)
                + montmul_iterations(w)
                + 4 * w;
            assert!(
                lane <= budget || per == 1,
                "{w} words: {lane} iterations a dispatch"
            );
        }
    }

    /// Variable-base powers on the device equal the CPU's: plain and wide bases, one
    /// exponent each or one shared, over several dispatches of two windows.
    #[test]
    fn coop_powers_match_the_cpu() {
        let ctx = GpuContext::shared().expect("a GPU adapter (lavapipe in CI) must be available");
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(13);
        for (coop, (w, n, exp_words)) in forms(&ctx).into_iter().flat_map(|c| {
            let c = c.with_windows_per_dispatch(2);
            [(1usize, 3usize, 1usize), (9, 5, 2), (20, 2, 1)].map(|x| (c.clone(), x))
        }) {
            let m = modulus(&mut rng, w);
            let plain = below(&mut rng, &m, n);
            // Wide bases below m R: the high half below m.
            let wide: Vec<u32> = below(&mut rng, &m, 2 * n)
                .chunks(w)
                .collect::<Vec<_>>()
                .chunks(2)
                .flat_map(|p| [p[0], p[1]].concat())
                .collect();
            let exps: Vec<u32> = (0..n * exp_words)
                .map(|_| rand::Rng::random(&mut rng))
                .collect();
            for (bases, is_wide) in [(&plain, false), (&wide, true)] {
                for shared in [false, true] {
                    let e = if shared {
                        &exps[..exp_words]
                    } else {
                        &exps[..]
                    };
                    let got = coop
                        .pow(&m, bases, is_wide, e, exp_words, shared)
                        .expect("coop pow");
                    let want = cpu::pow(&m, bases, is_wide, e, exp_words, shared);
                    let form = coop.form();
                    assert_eq!(
                        got, want,
                        "{w} words, wide {is_wide}, shared {shared}, {form:?}"
                    );
                }
            }
        }
        assert!(pow_setup_fits(true, 64) && pow_setup_fits(false, 256));
    }

    /// Each template is valid WGSL with the shared bindings, and every size of it too.
    #[test]
    fn the_template_validates() {
        let caps = naga::valid::Capabilities::SHADER_INT64
            | naga::valid::Capabilities::SUBGROUP
            | naga::valid::Capabilities::SUBGROUP_BARRIER;
        for src in [
            format!("{COOP_WGSL}\n{BINDINGS_WGSL}"),
            source(64, 4),
            source(3, 1),
            format!("{SUBGROUP_WGSL}\n{BINDINGS_WGSL}"),
            subgroup_source(128, 32),
            subgroup_source(5, 8),
        ] {
            let module = naga::front::wgsl::parse_str(&src)
                .unwrap_or_else(|e| panic!("{}", e.emit_to_string(&src)));
            naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
                .validate(&module)
                .unwrap_or_else(|e| panic!("coop.wgsl does not validate: {e:?}"));
        }
    }

    #[test]
    fn every_loop_of_the_shader_ends() {
        for (w, ipw) in [(1, 4), (64, 4), (128, 2), (256, 1)] {
            assert!(BoundedWgsl::new(source(w, ipw)).is_ok(), "{w} words");
            assert!(
                BoundedWgsl::new(subgroup_source(w, 32)).is_ok(),
                "{w} words"
            );
        }
    }
}
