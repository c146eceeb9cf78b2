//! The CPU twin of `shaders/passes.wgsl`: the same IEEE operations in the same order. The
//! same bits wherever the device rounds WGSL's `fma` once (as hardware's fused multiply-add
//! does); within an ulp per operation where it may round twice (lavapipe). One thread; what the device's passes are checked against, not the CPU's
//! fast path (that is [`crate::logistic::cpu::CpuLogistic`]).

use super::layout::{Block, CHUNK, RED_GROUP, layout};
use crate::error::KernelError;
use crate::logistic::LossSums;
use crate::rows::Rows;

/// ln 2 in two parts (Cody and Waite; fdlibm's split): `k * LN2_HI` is exact for k < 2^11.
pub const LN2_HI: f64 = 0.6931471803691238;
/// The rest of ln 2.
pub const LN2_LO: f64 = 1.9082149292705877e-10;
/// 1 / ln 2.
pub const INV_LN2: f64 = std::f64::consts::LOG2_E;
/// Below this `exp_neg` returns 0.
pub const EXP_FLOOR: f64 = -707.0;
/// `1 / k!` for k = 0..13, the Taylor coefficients of `exp`.
pub const EXP_C: [f64; 14] = [
    1.0,
    1.0,
    0.5,
    0.16666666666666666,
    0.041666666666666664,
    0.008333333333333333,
    0.001388888888888889,
    0.0001984126984126984,
    2.48015873015873e-05,
    2.7557319223985893e-06,
    2.755731922398589e-07,
    2.505210838544172e-08,
    2.08767569878681e-09,
    1.6059043836821613e-10,
];
/// `1 / (2n + 1)` for n = 0..16, the series of `atanh`.
pub const LOG_C: [f64; 17] = [
    1.0,
    0.3333333333333333,
    0.2,
    0.14285714285714285,
    0.1111111111111111,
    0.09090909090909091,
    0.07692307692307693,
    0.06666666666666667,
    0.058823529411764705,
    0.05263157894736842,
    0.047619047619047616,
    0.043478260869565216,
    0.04,
    0.037037037037037035,
    0.034482758620689655,
    0.03225806451612903,
    0.030303030303030304,
];

/// WGSL's `fma`, rounded once. WGSL lets a device round `fma` twice (its accuracy is
/// inherited from `a * b + c`), and lavapipe does at its compiler's choice (LLVM's
/// `fmuladd`), so a device's result may differ from the twin's by an ulp per operation.
#[inline]
fn fma(a: f64, b: f64, c: f64) -> f64 {
    a.mul_add(b, c)
}

/// The first guess of [`recip`]: `24/17 - 8/17 q`.
pub const RCP_A: f64 = 1.411764705882353;
/// See [`RCP_A`].
pub const RCP_B: f64 = 0.47058823529411764;

/// `1 / q` for `1 <= q <= 2`, the shader's `recip`: no division (drivers may lower an f64
/// division to a reciprocal and a product, lavapipe does), a linear first guess and five
/// Newton steps of fused multiply-adds; within an ulp.
pub fn recip(q: f64) -> f64 {
    let mut r = fma(-RCP_B, q, RCP_A);
    for _ in 0..5 {
        r = fma(r, fma(-q, r, 1.0), r);
    }
    r
}

/// `exp(a)` for `a <= 0`, the shader's `exp_neg`: `a = -k ln2 + r`, `|r| <= ln2 / 2`, the
/// Taylor series of `exp(r)` to `r^13` by Horner with fused multiply-adds, times `2^-k`
/// (exact: the result stays normal above [`EXP_FLOOR`], below which it is 0).
pub fn exp_neg(a: f64) -> f64 {
    if a < EXP_FLOOR {
        return 0.0;
    }
    let k = fma(-a, INV_LN2, 0.5) as i32;
    let kf = k as f64;
    let r = fma(kf, LN2_LO, fma(kf, LN2_HI, a));
    let p = EXP_C
        .iter()
        .rev()
        .skip(1)
        .fold(EXP_C[13], |p, &c| fma(p, r, c));
    p * f64::from_bits(((1023 - k) as u64) << 52)
}

/// `log(1 + e)` for `0 <= e <= 1`, the shader's `log1p_small`: `2 atanh(s)` with
/// `s = e / (2 + e)` (as `(e/2) recip(1 + e/2)`), its series to `s^33`.
pub fn log1p_small(e: f64) -> f64 {
    let h = 0.5 * e;
    let s = h * recip(1.0 + h);
    let s2 = s * s;
    let q = LOG_C
        .iter()
        .rev()
        .skip(1)
        .fold(LOG_C[16], |q, &c| fma(q, s2, c));
    2.0 * s * q
}

/// (loss, gradient coefficient, Hessian weight) at margin `z` with label `y`, the shader's
/// `row_terms` (the formulas of [`crate::logistic::row_terms`] with the functions above).
pub fn row_terms(z: f64, y: f64) -> (f64, f64, f64) {
    let t = -y * z;
    let e = exp_neg(-t.abs());
    let loss = t.max(0.0) + log1p_small(e);
    let rq = recip(1.0 + e);
    let s = if t >= 0.0 { rq } else { e * rq };
    (loss, -y * s, s * (1.0 - s))
}

/// The sums of the device's passes over `rows` at `w`, computed as the device computes
/// them with storage bindings of at most `cap` bytes (the device's binding cap).
pub fn sums(rows: Rows<'_>, w: &[f64], hessian: bool, cap: u64) -> Result<LossSums, KernelError> {
    let Rows { x, y, n, d } = rows;
    if w.len() != d {
        return Err(KernelError::Input(format!(
            "w has {} entries, data has {d} columns",
            w.len()
        )));
    }
    let mut grad = vec![0.0f64; d + 1];
    let mut hess = hessian.then(|| vec![0.0f64; d * d]);
    for b in layout(n, d, cap)? {
        let xb = &x[b.start * d..(b.start + b.rows) * d];
        let yb = &y[b.start..b.start + b.rows];
        let (gpart, dws) = gradient_partials(xb, yb, w, d);
        add_groups(&mut grad, &gpart, d + 1);
        if let Some(h) = hess.as_mut() {
            add_groups(h, &hessian_partials(xb, &dws, d, &b), d * d);
        }
    }
    let loss = grad[d];
    grad.truncate(d);
    Ok(LossSums {
        loss,
        grad,
        hess: hess.map(|h| mirror_upper(h, d)),
    })
}

/// Pass `margins_gradient`: per chunk, the `d + 1` partial sums (the gradient, then the
/// loss), and every row's Hessian weight.
fn gradient_partials(x: &[f32], y: &[f32], w: &[f64], d: usize) -> (Vec<f64>, Vec<f64>) {
    let mut parts = Vec::with_capacity(y.len().div_ceil(CHUNK) * (d + 1));
    let mut dws = Vec::with_capacity(y.len());
    for (xc, yc) in x.chunks(CHUNK * d).zip(y.chunks(CHUNK)) {
        let mut coef = Vec::with_capacity(yc.len());
        let mut loss = Vec::with_capacity(yc.len());
        for (row, &yi) in xc.chunks_exact(d).zip(yc) {
            let z = row
                .iter()
                .zip(w)
                .fold(0.0f64, |z, (&xv, &wv)| fma(xv as f64, wv, z));
            let (l, c, dw) = row_terms(z, yi as f64);
            dws.push(dw);
            coef.push(c);
            loss.push(l);
        }
        for j in 0..d {
            let col = xc.chunks_exact(d).map(|row| row[j] as f64);
            parts.push(coef.iter().zip(col).fold(0.0, |s, (&c, xv)| fma(c, xv, s)));
        }
        parts.push(loss.iter().fold(0.0, |s, &l| s + l));
    }
    (parts, dws)
}

/// Pass `hessian`: per chunk of `b.hess_chunk` rows, the upper triangle of `X^T D X`
/// summed over the chunk's rows in order (the lower triangle left at zero, as the device
/// leaves it).
fn hessian_partials(x: &[f32], dws: &[f64], d: usize, b: &Block) -> Vec<f64> {
    let mut parts = vec![0.0f64; b.hess_chunks() * d * d];
    for (c, part) in parts.chunks_exact_mut(d * d).enumerate() {
        let rows = c * b.hess_chunk..((c + 1) * b.hess_chunk).min(b.rows);
        for i in rows {
            let row = &x[i * d..(i + 1) * d];
            for j in 0..d {
                let a = row[j] as f64 * dws[i];
                for k in j..d {
                    part[j * d + k] = fma(a, row[k] as f64, part[j * d + k]);
                }
            }
        }
    }
    parts
}

/// Passes `reduce_*`, then the host: per group of [`RED_GROUP`] partials their sum in
/// order, the groups added into `acc` in order.
fn add_groups(acc: &mut [f64], parts: &[f64], len: usize) {
    for group in parts.chunks(RED_GROUP * len) {
        for (l, a) in acc.iter_mut().enumerate() {
            *a += group.chunks_exact(len).fold(0.0, |s, p| s + p[l]);
        }
    }
}

/// The full symmetric matrix from its upper triangle.
pub(crate) fn mirror_upper(mut h: Vec<f64>, d: usize) -> Vec<f64> {
    for j in 0..d {
        for k in 0..j {
            h[j * d + k] = h[k * d + j];
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logistic::LogisticKernel;
    use crate::logistic::cpu::CpuLogistic;

    #[test]
    fn the_software_functions_are_accurate() {
        let mut worst = (0.0f64, 0.0f64);
        for i in 0..200_000 {
            let a = -(i as f64) * 0.0035;
            let (got, want) = (exp_neg(a), a.exp());
            if want > 1e-300 {
                worst.0 = worst.0.max(((got - want) / want).abs());
            }
            let e = i as f64 / 200_000.0;
            let (got, want) = (log1p_small(e), e.ln_1p());
            if want > 0.0 {
                worst.1 = worst.1.max(((got - want) / want).abs());
            }
        }
        // exp within an ulp; log1p within about two (1 + e/2 and the quotient round).
        assert!(
            worst.0 < 3e-16 && worst.1 < 6e-16,
            "relative errors {worst:?}"
        );
        assert_eq!(exp_neg(0.0), 1.0);
        assert_eq!(exp_neg(-708.0), 0.0);
        assert!(exp_neg(-706.9) > 0.0 && exp_neg(-706.9).is_normal());
        assert_eq!(log1p_small(0.0), 0.0);
        for i in 0..=100_000 {
            let q = 1.0 + i as f64 / 100_000.0;
            assert!((recip(q) - 1.0 / q).abs() <= f64::EPSILON / q, "1 / {q}");
        }
    }

    #[test]
    fn the_shader_carries_the_twins_constants() {
        let src = include_str!("../../../shaders/passes.wgsl");
        let constant = |name: &str| -> f64 {
            let line = src
                .lines()
                .find(|l| l.starts_with(&format!("const {name}: f64 = ")))
                .unwrap_or_else(|| panic!("no const {name} in passes.wgsl"));
            let v = line
                .rsplit("= ")
                .next()
                .expect("value")
                .trim_end_matches(';');
            v.parse().unwrap_or_else(|_| panic!("{name}: '{v}'"))
        };
        for (i, c) in EXP_C.iter().enumerate() {
            assert_eq!(
                constant(&format!("EXP{i}")).to_bits(),
                c.to_bits(),
                "EXP{i}"
            );
        }
        for (i, c) in LOG_C.iter().enumerate() {
            assert_eq!(
                constant(&format!("LOG{i}")).to_bits(),
                c.to_bits(),
                "LOG{i}"
            );
        }
        for (name, c) in [
            ("LN2_HI", LN2_HI),
            ("LN2_LO", LN2_LO),
            ("INV_LN2", INV_LN2),
            ("EXP_FLOOR", EXP_FLOOR),
            ("RCP_A", RCP_A),
            ("RCP_B", RCP_B),
        ] {
            assert_eq!(constant(name).to_bits(), c.to_bits(), "{name}");
        }
    }

    /// The twin agrees with the CPU path's sums (libm, faer's order) to 1e-13 relative,
    /// blocks and reduction groups included.
    #[test]
    fn the_twin_agrees_with_the_cpu_path() {
        let (n, d) = (3001, 17);
        let x: Vec<f32> = crate::test_rows(n, d, 5).iter().map(|v| v - 0.5).collect();
        let y: Vec<f32> = (0..n)
            .map(|i| if i % 3 == 0 { 1.0 } else { -1.0 })
            .collect();
        let w: Vec<f64> = (0..d).map(|j| (j as f64 - 8.0) * 0.7).collect();
        let rows = Rows::new(&x, &y, d).expect("shape");
        let want = CpuLogistic::new(rows).eval(&w, true).expect("cpu");
        for cap in [128u64 << 20, 96 << 10] {
            let got = sums(rows, &w, true, cap).expect("twin");
            let rel = |a: f64, b: f64| (a - b).abs() / b.abs().max(1e-300);
            assert!(rel(got.loss, want.loss) < 1e-13, "loss");
            for (a, b) in got.grad.iter().zip(&want.grad) {
                assert!((a - b).abs() < 1e-12 * want.loss, "grad {a} vs {b}");
            }
            let (gh, wh) = (got.hess.expect("hess"), want.hess.as_deref().expect("hess"));
            for (a, b) in gh.iter().zip(wh) {
                assert!((a - b).abs() < 1e-12 * n as f64, "hess {a} vs {b}");
            }
        }
        assert!(layout(n, d, 96 << 10).expect("blocks").len() > 1);
    }
}
