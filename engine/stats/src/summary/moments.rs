//! Sum, mean and variance on an exact integer grid, noised by the exact discrete Laplace.
//!
//! Each clamped value `x` becomes `k = round(x / g)` on a public grid `g = 2^s` chosen from
//! the bounds only (at least [`SUM_GRID_BITS`] or [`VARIANCE_GRID_BITS`] bits below the
//! sensitivity), so every sum below is an exact integer and its sensitivity an exact
//! integer too: rounding is applied per row, before the sum, to values within the bounds,
//! so the rounded rows stay within `[round(lo / g), round(hi / g)]` and the sensitivity is
//! computed on those integers. Rounding moves each row by at most `g / 2` (stated in the
//! report). Centring by the public `c = round((lo + hi) / 2 / g)` keeps the unbounded
//! mean's and variance's sensitivities at half the range.
//!
//! Privacy maps (proofs beside each function): a discrete Laplace with parameter `t` on an
//! integer query of L1 sensitivity `D` is `D / t`-DP;
//! [`DiscreteLaplace::for_sensitivity_precise`] picks `t >= D / epsilon` checked in
//! integers, at most `1 + 2^-35` times `D / epsilon`. Shares of epsilon are rounded down, so they
//! add up to at most the epsilon asked for (sequential composition).

use super::spec::{Estimate, Part, Released, Statistic, SummaryQuery};
use kinsey_core::{Error, Result};
use kinsey_dp::exact::DiscreteLaplace;
use kinsey_dp::{Neighbours, NoiseRng};

/// Bits of grid below the sensitivity for sums and means (the rounding of a row is at most
/// `2^-33` of the range).
pub const SUM_GRID_BITS: i32 = 32;
/// Bits of grid below the range for the variance, whose squared grid values must stay
/// below the exact sampler's `2^50` sensitivity limit.
pub const VARIANCE_GRID_BITS: i32 = 24;
/// Bits of release grid below the variance's sensitivity.
const VARIANCE_RELEASE_BITS: i32 = 30;

/// A public power-of-two grid `2^shift`.
#[derive(Debug, Clone, Copy)]
struct Grid {
    shift: i32,
}

impl Grid {
    /// The grid `bits` bits below `span`.
    fn below(span: f64, bits: i32) -> Self {
        Self {
            shift: span.log2().floor() as i32 - bits,
        }
    }
    fn step(self) -> f64 {
        f64::from(self.shift).exp2()
    }
    /// `round(x / g)`, ties to even; the scaling by a power of two is exact.
    fn index(self, x: f64) -> i128 {
        (x * f64::from(-self.shift).exp2()).round_ties_even() as i128
    }
}

/// `epsilon / parts`, rounded down so that the parts add up to at most `epsilon`.
pub(crate) fn share(epsilon: f64, parts: usize) -> f64 {
    if parts.is_power_of_two() {
        epsilon / parts as f64
    } else {
        (epsilon / parts as f64).next_down()
    }
}

/// An exact integer query noised: `(value + Z, the law)`.
fn noisy(
    value: i128,
    sensitivity: i128,
    epsilon: f64,
    rng: &mut NoiseRng,
) -> Result<(i128, DiscreteLaplace)> {
    let sens = u64::try_from(sensitivity)
        .map_err(|_| Error::Numerical(format!("integer sensitivity {sensitivity} out of range")))?;
    let law = DiscreteLaplace::for_sensitivity_precise(sens, epsilon)?;
    Ok((value + law.sample_wide(rng), law))
}

fn part(quantity: &str, epsilon: f64, sensitivity: f64, grid: f64, law: &DiscreteLaplace) -> Part {
    Part {
        quantity: quantity.into(),
        epsilon,
        sensitivity,
        grid,
        noise_std: Some(law.std_dev() * grid),
    }
}

/// The exact integer sums a sum's, mean's or variance's release needs, accumulated a block
/// of values at a time: each clamped value on the statistic's public grid, minus the public
/// centre (0 for a sum or a mean with n public). Integer sums do not depend on the order
/// or the blocks, so a release from blocks is the release from the whole column, bit for
/// bit.
#[derive(Debug, Clone)]
pub struct MomentSums {
    lo: f64,
    hi: f64,
    grid: Grid,
    centre: i128,
    n: u128,
    s1: i128,
    s2: u128,
}

impl MomentSums {
    /// Empty sums for `q` (a sum, mean or variance).
    pub fn new(q: &SummaryQuery) -> Self {
        let (grid, centred) = match (&q.statistic, q.neighbours) {
            (Statistic::Sum, Neighbours::Unbounded) => (
                Grid::below(q.lo.abs().max(q.hi.abs()), SUM_GRID_BITS),
                false,
            ),
            (Statistic::Variance, _) => (Grid::below(q.hi - q.lo, VARIANCE_GRID_BITS), true),
            (Statistic::Mean, Neighbours::Unbounded) => {
                (Grid::below(q.hi - q.lo, SUM_GRID_BITS), true)
            }
            _ => (Grid::below(q.hi - q.lo, SUM_GRID_BITS), false),
        };
        let centre = if centred {
            grid.index((q.lo + q.hi) / 2.0)
        } else {
            0
        };
        Self {
            lo: q.lo,
            hi: q.hi,
            grid,
            centre,
            n: 0,
            s1: 0,
            s2: 0,
        }
    }

    /// Add a block of values (finite: the readers refuse the others).
    pub fn add(&mut self, values: &[f64]) {
        for &x in values {
            let j = self.grid.index(x.clamp(self.lo, self.hi)) - self.centre;
            self.n += 1;
            self.s1 += j;
            self.s2 += j.unsigned_abs() * j.unsigned_abs();
        }
    }

    /// Values added.
    pub fn rows(&self) -> usize {
        self.n as usize
    }

    /// The exact integer sums: rows, sum of grid indices, sum of their squares.
    pub fn parts(&self) -> (u128, i128, u128) {
        (self.n, self.s1, self.s2)
    }

    /// Add sums of the same query accumulated elsewhere ([`parts`](Self::parts)).
    pub fn add_parts(&mut self, (n, s1, s2): (u128, i128, u128)) {
        self.n += n;
        self.s1 += s1;
        self.s2 += s2;
    }

    /// The centred grid indices of the bounds.
    fn range(&self) -> (i128, i128) {
        (
            self.grid.index(self.lo) - self.centre,
            self.grid.index(self.hi) - self.centre,
        )
    }
}

/// The release of a sum, mean or variance.
pub(crate) fn release(
    q: &SummaryQuery,
    values: &MomentSums,
    rng: &mut NoiseRng,
) -> Result<Released> {
    let n = values.rows();
    match (&q.statistic, q.neighbours) {
        (Statistic::Sum, nb) => sum(q, nb, values, rng),
        (Statistic::Mean, Neighbours::Bounded) => {
            need_rows(n, 1, "mean")?;
            mean_bounded(q, values, rng)
        }
        (Statistic::Mean, Neighbours::Unbounded) => mean_unbounded(q, values, rng),
        (Statistic::Variance, Neighbours::Bounded) => {
            need_rows(n, 2, "variance")?;
            variance_bounded(q, values, rng)
        }
        (Statistic::Variance, Neighbours::Unbounded) => variance_unbounded(q, values, rng),
        (Statistic::Quantiles(_), _) => Err(Error::Numerical("quantiles are not a moment".into())),
    }
}

/// Under bounded neighbours n is public, so a refusal on it reveals nothing.
fn need_rows(n: usize, least: usize, what: &str) -> Result<()> {
    if n < least {
        return Err(Error::param(
            "input",
            format!(
                "a {what} needs at least {least} row(s); the input has {n} (public under bounded \
             neighbours)"
            ),
        ));
    }
    Ok(())
}

fn rounding_note(g: f64) -> String {
    format!(
        "each clamped value is rounded to a multiple of the public grid {g:e} before the \
         sum (at most {:e} per row), so that sums and sensitivities are exact integers",
        g / 2.0
    )
}

/// Sum. Bounded: replacing a row moves the integer sum by at most `khi - klo`. Unbounded:
/// adding or removing one moves it by at most `max(|klo|, |khi|)`.
fn sum(
    q: &SummaryQuery,
    nb: Neighbours,
    values: &MomentSums,
    rng: &mut NoiseRng,
) -> Result<Released> {
    let g = values.grid;
    let (klo, khi) = values.range();
    let sens = match nb {
        Neighbours::Bounded => khi - klo,
        Neighbours::Unbounded => klo.abs().max(khi.abs()),
    };
    let (noisy_s, law) = noisy(values.s1, sens, q.epsilon, rng)?;
    let mut value = noisy_s as f64 * g.step();
    if nb == Neighbours::Bounded {
        let n = values.rows() as f64;
        value = value.clamp(n * q.lo, n * q.hi);
    }
    let sensitivity = sens as f64 * g.step();
    Ok(Released {
        estimates: vec![Estimate {
            name: "sum".into(),
            value,
            noise_std: Some(law.std_dev() * g.step()),
        }],
        parts: vec![part(
            "sum of clamped values",
            q.epsilon,
            sensitivity,
            g.step(),
            &law,
        )],
        mechanism: format!(
            "exact discrete Laplace (t = {:.6e} grid steps) on the integer sum of the \
             clamped values on the grid {:e}",
            law.t(),
            g.step()
        ),
        sensitivity: match nb {
            Neighbours::Bounded => format!("hi - lo = {sensitivity}"),
            Neighbours::Unbounded => format!("max(|lo|, |hi|) = {sensitivity}"),
        },
        sensitivity_value: Some(sensitivity),
        notes: vec![rounding_note(g.step())],
    })
}

/// Mean with n public: the bounded sum divided by n.
fn mean_bounded(q: &SummaryQuery, values: &MomentSums, rng: &mut NoiseRng) -> Result<Released> {
    let mut r = sum(q, Neighbours::Bounded, values, rng)?;
    let n = values.rows() as f64;
    let est = &mut r.estimates[0];
    est.name = "mean".into();
    est.value = (est.value / n).clamp(q.lo, q.hi);
    est.noise_std = est.noise_std.map(|s| s / n);
    let sens = r.sensitivity_value.unwrap_or(f64::NAN) / n;
    r.mechanism = format!("{}, divided by the public n = {n}", r.mechanism);
    r.sensitivity = format!("(hi - lo) / n = {sens:e}");
    r.sensitivity_value = Some(sens);
    Ok(r)
}

/// Mean with n private: a noisy count and a noisy centred sum (epsilon / 2 each; adding
/// or removing a row moves the count by 1 and the centred sum by at most `max |j|`).
fn mean_unbounded(q: &SummaryQuery, values: &MomentSums, rng: &mut NoiseRng) -> Result<Released> {
    let (g, c) = (values.grid, values.centre);
    let (jlo, jhi) = values.range();
    let e = share(q.epsilon, 2);
    let (noisy_n, law_n) = noisy(values.n as i128, 1, e, rng)?;
    let sens = jlo.abs().max(jhi.abs());
    let (noisy_s, law_s) = noisy(values.s1, sens, e, rng)?;
    let count = (noisy_n as f64).max(1.0);
    let value = ((c as f64 + noisy_s as f64 / count) * g.step()).clamp(q.lo, q.hi);
    let sensitivity = sens as f64 * g.step();
    Ok(Released {
        estimates: vec![Estimate {
            name: "mean".into(),
            value,
            noise_std: None,
        }],
        parts: vec![
            part("count", e, 1.0, 1.0, &law_n),
            part(
                "sum of clamped values minus the centre",
                e,
                sensitivity,
                g.step(),
                &law_s,
            ),
        ],
        mechanism: format!(
            "exact discrete Laplace on the count and on the centred integer sum (grid {:e}, \
             centre {}), epsilon / 2 each; mean = centre + sum / max(count, 1), clamped to \
             the bounds",
            g.step(),
            c as f64 * g.step()
        ),
        sensitivity: format!("count 1; centred sum (hi - lo) / 2 = {sensitivity}"),
        sensitivity_value: None,
        notes: vec![rounding_note(g.step())],
    })
}

/// `round(num / den)` for `num >= 0`, `den > 0`, times `2^-a` (`a <= 0`) or divided by
/// `2^a` (`a > 0`), without overflow: the quotient and remainder are scaled separately.
fn scaled_ratio(num: u128, den: u128, a: i32) -> Result<i128> {
    let overflow = || Error::Numerical("variance: the exact integer grid overflowed".into());
    let (den, up) = if a > 0 {
        (
            den.checked_shl(a as u32)
                .filter(|d| d >> a == den)
                .ok_or_else(overflow)?,
            0,
        )
    } else {
        (den, (-a) as u32)
    };
    let (whole, rest) = (num / den, num % den);
    let whole = whole
        .checked_shl(up)
        .filter(|w| w >> up == whole)
        .ok_or_else(overflow)?;
    let rest = rest
        .checked_shl(up)
        .filter(|r| r >> up == rest)
        .ok_or_else(overflow)?;
    let rounded = whole + (rest + den / 2) / den;
    i128::try_from(rounded).map_err(|_| overflow())
}

/// Variance with n public (OpenDP's construction, in exact integers): the sum of squared
/// deviations `SS`; replacing a row moves it by at most `D^2 (n - 1) / n` with `D` the
/// integer range (`|(a - m)^2 - (b - m)^2| <= D^2` for `a`, `b` and the others' mean `m`
/// within the range), so `SS / (n - 1)` moves by at most `D^2 / n`. It is released on a
/// grid `h` of `2^30` steps below that: `K = round(n SS / (n (n - 1) h))` moves by at most
/// `ceil(D^2 / (n h)) + 1`, the integer sensitivity of its discrete Laplace.
fn variance_bounded(q: &SummaryQuery, values: &MomentSums, rng: &mut NoiseRng) -> Result<Released> {
    let g = values.grid;
    let (jlo, jhi) = values.range();
    let n = values.n;
    let overflow = || {
        Error::param(
            "input",
            format!("a variance of {n} rows overflows the exact integer grid"),
        )
    };
    let (s1, s2) = (values.s1, values.s2);
    // n SS = n s2 - s1^2 >= 0 (Cauchy-Schwarz), exact.
    let nss = n
        .checked_mul(s2)
        .and_then(|a| a.checked_sub(s1.unsigned_abs().checked_mul(s1.unsigned_abs())?))
        .ok_or_else(overflow)?;
    let nn = n.checked_mul(n - 1).ok_or_else(overflow)?;
    let d2 = ((jhi - jlo) as u128).pow(2);
    let a = (d2 as f64 / n as f64).log2().floor() as i32 - VARIANCE_RELEASE_BITS;
    let k = scaled_ratio(nss, nn, a)?;
    // ceil(D^2 / (n h)) + 1, in integers.
    let sens_k = {
        let (num, den) = if a >= 0 {
            (d2, n << a)
        } else {
            (d2 << (-a) as u32, n)
        };
        num.div_ceil(den) + 1
    } as i128;
    let (noisy_k, law) = noisy(k, sens_k, q.epsilon, rng)?;
    let unit = f64::from(a).exp2() * g.step() * g.step();
    let nf = n as f64;
    let top = (q.hi - q.lo).powi(2) / 4.0 * nf / (nf - 1.0);
    let sensitivity = d2 as f64 * g.step() * g.step() / nf;
    Ok(Released {
        estimates: vec![Estimate {
            name: "variance".into(),
            value: (noisy_k as f64 * unit).clamp(0.0, top),
            noise_std: Some(law.std_dev() * unit),
        }],
        parts: vec![part(
            "sample variance (n - 1 denominator)",
            q.epsilon,
            sensitivity,
            unit,
            &law,
        )],
        mechanism: format!(
            "exact discrete Laplace on the integer sample variance (values on the grid {:e}, \
             released on the grid {unit:e}), clamped to [0, (hi - lo)^2 n / (4 (n - 1))]",
            g.step()
        ),
        sensitivity: format!("(hi - lo)^2 / n = {sensitivity:e}"),
        sensitivity_value: Some(sensitivity),
        notes: vec![rounding_note(g.step())],
    })
}

/// Variance with n private: count, centred sum and centred sum of squares, epsilon / 3
/// each (add/remove sensitivities 1, `max |j|` and `max j^2`); post-processed to
/// `(S2 / N - (S1 / N)^2) N / (N - 1)` with `N = max(noisy count, 2)`, clamped.
fn variance_unbounded(
    q: &SummaryQuery,
    values: &MomentSums,
    rng: &mut NoiseRng,
) -> Result<Released> {
    let g = values.grid;
    let (jlo, jhi) = values.range();
    let e = share(q.epsilon, 3);
    let m = jlo.abs().max(jhi.abs());
    let s2 = i128::try_from(values.s2)
        .map_err(|_| Error::Numerical("variance: the exact integer grid overflowed".into()))?;
    let (noisy_n, law_n) = noisy(values.n as i128, 1, e, rng)?;
    let (noisy_s1, law_1) = noisy(values.s1, m, e, rng)?;
    let (noisy_s2, law_2) = noisy(s2, m * m, e, rng)?;
    let count = (noisy_n as f64).max(2.0);
    let mean = noisy_s1 as f64 / count;
    let var = (noisy_s2 as f64 / count - mean * mean) * count / (count - 1.0);
    let step2 = g.step() * g.step();
    let top = (m * m) as f64 * count / (count - 1.0);
    let (s1, s2) = (m as f64 * g.step(), (m * m) as f64 * step2);
    Ok(Released {
        estimates: vec![Estimate {
            name: "variance".into(),
            value: var.clamp(0.0, top) * step2,
            noise_std: None,
        }],
        parts: vec![
            part("count", e, 1.0, 1.0, &law_n),
            part("sum of centred values", e, s1, g.step(), &law_1),
            part("sum of squared centred values", e, s2, step2, &law_2),
        ],
        mechanism: format!(
            "exact discrete Laplace on the count, the centred sum and the centred sum of \
             squares (grid {:e}), epsilon / 3 each; variance = (S2 / N - (S1 / N)^2) N / (N - 1) \
             with N = max(count, 2), clamped",
            g.step()
        ),
        sensitivity: format!("count 1; centred sum {s1}; centred sum of squares {s2}"),
        sensitivity_value: None,
        notes: vec![rounding_note(g.step())],
    })
}
