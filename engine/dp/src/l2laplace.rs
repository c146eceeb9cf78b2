//! The L2-Laplace vector mechanism ("multivariate Laplace" of Chaudhuri & Monteleoni 2008):
//! density proportional to `exp(-||eta||_2 / s)` on R^d, with `s = Delta2 / eps`, published
//! on an integer grid (the aggregate's units of `2^-32 / K`).
//!
//! Privacy map: for two outputs centred at `w` and `w'` with `||w - w'||_2 <= Delta2`, the
//! density ratio is `exp((||y - w'|| - ||y - w||) / s) <= exp(||w - w'|| / s) <= exp(eps)`
//! (triangle inequality), so the release is eps-DP for L2 sensitivity `Delta2`; rounding
//! `f + Z` to the grid when `f` is on it is post-processing: `f + round(Z)`.
//!
//! # The sampler ([`GridL2Laplace`]) and its stated gap
//!
//! In polar form `Z = S R U` (`S` the scale in grid units): `R ~ Gamma(d, 1)` is a sum of d
//! exponentials and `U = G / ||G||` a normalised vector of d standard normals. Every random
//! quantity is drawn from uniform bits by integer arithmetic, to `P = 512` fractional bits:
//!
//! * each exponential as its exact cell on the grid `2^-P` (a geometric integer part, CKS's
//!   `Bern(e^-1)`; the fraction's cell `J` uniform below `2^P`, kept with probability
//!   `exp(-J / 2^P)`): the law of the cell is exactly that of the continuous exponential's;
//! * each normal as a point of the grid `2^-P` with mass proportional to `exp(-x^2 / 2)`
//!   (Karney 2016's decomposition `x = k + f`: `k` geometric of ratio `e^-1/2` kept with
//!   `e^-k(k-1)/2`, `f` uniform on the grid kept with `e^-f(2k+f)/2`, every Bernoulli
//!   exact), whose total variation from the continuous normal's cells is at most `2^-P`;
//! * then `N_i = round(S R G_i / ||G||)` exactly, in big integers (no float).
//!
//! Coupled with the ideal `Z` (each exponential within `2^-(P+1)` of its value, each normal
//! within `2^-P`), `N` equals the ideal `round(Z)` except when `||G|| < 2^-100`
//! (probability `<= 2^-201` for `d >= 2`), `R > 2 ln 2 (d + 201)` (`<= 2^-201`), a normal
//! falls in the total-variation gap (`<= d 2^-P`), or some coordinate of `Z` lies within
//! the coupling error `eta` of a rounding boundary: with the marginal of a coordinate
//! symmetric, unimodal and of density at most `1/S` (`d >= 2`), at most `2 d rho (S + 1)`
//! with `rho = d 2^-(P+1) + R_max sqrt(d) 2^(100 - P)`. The sum `delta_1` ([`gap`]) bounds
//! the total variation between the sampler's output and the ideal mechanism's, so the
//! release is `(eps, delta_1 (1 + e^eps))`-DP; `delta_1` is about `2^-200` for every
//! accepted dimension and scale, and it is stated in the guarantee. At `d = 1` the
//! aggregate uses the exact discrete Laplace instead (pure eps-DP).
//!
//! What it replaced: an f64 sampler (`s (E_1 + ... + E_d)` from 53-bit uniforms, f64
//! normals) rounded to the grid. Its outputs have about 50 significant bits, while the grid
//! is finer than that far out in the tail: the gap was not bounded, and at `d = 1` it was
//! Mironov's lattice (audit 2, item 4).

use super::exact::{
    BitReader, RandomBits, bernoulli_exp_minus_one, bernoulli_exp_minus_unit,
    bernoulli_exp_minus_with,
};
use kinsey_core::{Error, Result, check_epsilon};
use num_bigint::BigUint;
use serde::Serialize;

/// Fractional bits of every exponential and normal the sampler draws.
pub const FRACTION_BITS: u32 = 512;

/// `||G|| >= 2^-G0_BITS` outside a bad event of probability at most `2^-(2 G0_BITS + 1)`.
const G0_BITS: i32 = 100;

/// `-log2` of each bad event's probability (`||G|| < 2^-100`, `R > R_max`).
const TAIL_BITS: f64 = 201.0;

/// Calibrated L2-Laplace mechanism.
#[derive(Debug, Clone, Serialize)]
pub struct L2LaplaceMechanism {
    /// Stated L2 sensitivity.
    pub sensitivity: f64,
    /// Privacy parameter.
    pub epsilon: f64,
    /// Dimension.
    pub dim: usize,
}

impl L2LaplaceMechanism {
    /// The mechanism for an L2 sensitivity, epsilon and dimension.
    pub fn new(sensitivity: f64, epsilon: f64, dim: usize) -> Result<Self> {
        check_epsilon("epsilon", epsilon)?;
        if !(sensitivity.is_finite() && sensitivity > 0.0) {
            return Err(Error::param(
                "sensitivity",
                format!("must be finite and > 0, got {sensitivity}"),
            ));
        }
        if dim == 0 {
            return Err(Error::param("dim", "must be >= 1"));
        }
        Ok(Self {
            sensitivity,
            epsilon,
            dim,
        })
    }

    /// Scale `s = Delta2 / eps`.
    pub fn scale(&self) -> f64 {
        self.sensitivity / self.epsilon
    }

    /// Privacy map: eps for an L2 input distance.
    pub fn privacy_map(&self, d_in: f64) -> f64 {
        d_in / self.scale()
    }

    /// Expected noise norm `d * s`.
    pub fn expected_norm(&self) -> f64 {
        self.dim as f64 * self.scale()
    }
}

/// The largest norm `R` of the unit-scale vector outside a bad event of probability
/// `2^-201`: `2 ln 2 (d + 201)` (Chernoff: `P(Gamma(d, 1) > t) <= 2^d e^(-t/2)`).
pub fn norm_bound(dim: usize) -> f64 {
    2.0 * std::f64::consts::LN_2 * (dim as f64 + TAIL_BITS)
}

/// `delta_1`: a bound on the total variation between [`GridL2Laplace`]'s output and the
/// ideal `round(Z)` for dimension `dim >= 2` and any scale up to `max_scale` grid units (a
/// public bound). The mechanism is then `(eps, delta_1 (1 + e^eps))`-DP.
pub fn gap(dim: usize, max_scale: f64) -> f64 {
    let d = dim as f64;
    let p = f64::from(FRACTION_BITS);
    let tails = 2.0 * (-TAIL_BITS).exp2();
    let normals = d * (-p).exp2();
    let rho =
        d * (-(p + 1.0)).exp2() + norm_bound(dim) * d.sqrt() * (f64::from(G0_BITS) - p).exp2();
    tails + normals + 2.0 * d * rho * (max_scale + 1.0)
}

/// The L2-Laplace vector of scale `S` grid units in dimension `d >= 2`, drawn as integers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GridL2Laplace {
    dim: usize,
    /// `S = mantissa 2^exponent`, exactly.
    mantissa: u64,
    exponent: i32,
}

impl GridL2Laplace {
    /// The vector for `dim >= 2` and a finite scale `> 0` in grid units (read exactly).
    pub fn new(dim: usize, scale: f64) -> Result<Self> {
        if dim < 2 {
            return Err(Error::param(
                "dim",
                "the L2-Laplace vector needs d >= 2 (at d = 1 it is the Laplace law: use the \
                 exact discrete Laplace)",
            ));
        }
        if !(scale.is_finite() && scale > 0.0 && scale < 2f64.powi(100)) {
            return Err(Error::param(
                "scale",
                format!("must be finite, > 0 and < 2^100 grid units, got {scale:e}"),
            ));
        }
        let raw = scale.to_bits();
        let exp = ((raw >> 52) & 0x7ff) as i32;
        let (mantissa, exponent) = if exp == 0 {
            (raw & ((1 << 52) - 1), -1074)
        } else {
            ((raw & ((1 << 52) - 1)) | (1 << 52), exp - 1075)
        };
        Ok(Self {
            dim,
            mantissa,
            exponent,
        })
    }

    /// One vector (grid units). Its coordinates are below `2^127` in magnitude whenever the
    /// scale is below `2^100` and `R` below its bound (the caller checks its own capacity).
    pub fn sample<R: RandomBits + ?Sized>(&self, src: &mut R) -> Vec<i128> {
        let mut bits = BitReader::new(src);
        let p = FRACTION_BITS;
        // R 2^(P+1): sum of the exponentials' cell midpoints.
        let r: BigUint = (0..self.dim).map(|_| exp_cell(&mut bits)).sum();
        let (g, q) = loop {
            let g: Vec<(bool, BigUint)> = (0..self.dim).map(|_| normal_point(&mut bits)).collect();
            let q: BigUint = g.iter().map(|(_, m)| m * m).sum();
            if q.bits() > 0 {
                break (g, q);
            }
        };
        // x_i = S R G_i / ||G|| = mantissa 2^exponent (r / 2^(P+1)) g_i / sqrt(q).
        let a = &r * BigUint::from(self.mantissa);
        let t = i64::from(self.exponent) - i64::from(p + 1);
        // |x_i|^2 = x2 / den with the power of two on whichever side keeps it integral
        // (`den` is the same for every coordinate).
        let den = if t >= 0 { q } else { q << (-2 * t) as usize };
        g.iter()
            .map(|(neg, m)| {
                let num = &a * m;
                let x2 = if t >= 0 {
                    (&num * &num) << (2 * t) as usize
                } else {
                    &num * &num
                };
                // floor(|x|), then up by one when |x| >= floor + 1/2: 4 x^2 >= (2m + 1)^2.
                let fl = (&x2 / &den).sqrt();
                let odd = (&fl << 1usize) + 1u32;
                let up = (&x2 << 2usize) >= &odd * &odd * &den;
                let mag = if up { fl + 1u32 } else { fl };
                let v = i128::try_from(&mag).unwrap_or(i128::MAX);
                if *neg { -v } else { v }
            })
            .collect()
    }
}

/// `n` uniform bits as a big integer.
fn uniform_big<R: RandomBits + ?Sized>(bits: &mut BitReader<'_, R>, n: u32) -> BigUint {
    let mut digits: Vec<u32> = (0..n / 32).map(|_| bits.bits(32) as u32).collect();
    digits.reverse(); // first drawn = most significant
    BigUint::new(digits)
}

/// `width <= 64` bits of `digits` (little-endian 64-bit words) from bit `lo`.
fn extract(digits: &[u64], lo: u64, width: u32) -> u64 {
    let w = (lo / 64) as usize;
    let s = (lo % 64) as u32;
    let a = digits.get(w).copied().unwrap_or(0) >> s;
    let b = if s == 0 {
        0
    } else {
        digits.get(w + 1).copied().unwrap_or(0) << (64 - s)
    };
    let v = a | b;
    if width == 64 {
        v
    } else {
        v & ((1u64 << width) - 1)
    }
}

/// Is a lazily drawn uniform `V` in `[0, 1)` below `num / 2^k` (`num < 2^k`)?
fn below_big<R: RandomBits + ?Sized>(bits: &mut BitReader<'_, R>, num: &BigUint, k: u64) -> bool {
    let digits = num.to_u64_digits();
    let mut rem = k;
    while rem > 0 {
        let c = rem.min(64) as u32;
        let t = extract(&digits, rem - u64::from(c), c);
        match bits.compare_bits(t, c) {
            std::cmp::Ordering::Less => return true,
            std::cmp::Ordering::Greater => return false,
            std::cmp::Ordering::Equal => rem -= u64::from(c),
        }
    }
    false
}

/// `Bern(exp(-num / 2^k))` for `num < 2^k`.
fn bern_exp_minus_big<R: RandomBits + ?Sized>(
    bits: &mut BitReader<'_, R>,
    num: &BigUint,
    k: u64,
) -> bool {
    bernoulli_exp_minus_with(bits, |b| below_big(b, num, k))
}

/// An exponential's cell on the grid `2^-P`, as its midpoint times `2^(P+1)`.
fn exp_cell<R: RandomBits + ?Sized>(bits: &mut BitReader<'_, R>) -> BigUint {
    let p = FRACTION_BITS;
    let mut v: u64 = 0;
    while bernoulli_exp_minus_one(bits) {
        v += 1;
    }
    let j = loop {
        let j = uniform_big(bits, p);
        if bern_exp_minus_big(bits, &j, u64::from(p)) {
            break j;
        }
    };
    (((BigUint::from(v) << p as usize) + j) << 1usize) + 1u32
}

/// A normal on the grid `2^-P` with mass proportional to `exp(-x^2 / 2)`: (negative, |x| 2^P).
fn normal_point<R: RandomBits + ?Sized>(bits: &mut BitReader<'_, R>) -> (bool, BigUint) {
    let p = FRACTION_BITS as usize;
    'draw: loop {
        // k with mass e^(-k/2), kept with e^(-k(k-1)/2): mass e^(-k^2/2).
        let mut k: u64 = 0;
        while bernoulli_exp_minus_unit(bits, 1, 2) {
            k += 1;
        }
        let keep = k.saturating_mul(k.saturating_sub(1));
        if !(0..keep).all(|_| bernoulli_exp_minus_unit(bits, 1, 2)) {
            continue;
        }
        // f = J / 2^P, kept with e^(-f (2k + f) / 2) = e^(-J (k 2^(P+1) + J) / 2^(2P+1)).
        let j = uniform_big(bits, FRACTION_BITS);
        let x = &j * ((BigUint::from(k) << (p + 1)) + &j);
        let whole = &x >> (2 * p + 1);
        let frac = &x - (&whole << (2 * p + 1));
        let units = u64::try_from(&whole).unwrap_or(u64::MAX);
        for _ in 0..units {
            if !bernoulli_exp_minus_one(bits) {
                continue 'draw;
            }
        }
        if !bern_exp_minus_big(bits, &frac, 2 * p as u64 + 1) {
            continue;
        }
        let neg = bits.bit();
        if neg && k == 0 && j.bits() == 0 {
            continue; // -0: zero is drawn once, as +0
        }
        return (neg, (BigUint::from(k) << p) + j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoiseRng;
    use crate::stattest::{ALPHA, chi_square_test, gamma_cdf, ks_test, normal_cdf};

    fn norms(dim: usize, scale: f64, n: usize, seed: u64) -> Vec<f64> {
        let g = GridL2Laplace::new(dim, scale).expect("valid");
        let mut rng = NoiseRng::from_seed_quiet(seed);
        (0..n)
            .map(|_| {
                let v = g.sample(&mut rng);
                v.iter()
                    .map(|&x| (x as f64) * (x as f64))
                    .sum::<f64>()
                    .sqrt()
            })
            .collect()
    }

    /// The norm is Gamma(d, S) (KS at alpha = 1e-6), and the same test rejects a scale 30%
    /// too small (power check).
    #[test]
    fn norm_is_gamma_d_s_and_power_check() {
        let s = 1e9;
        for dim in [2usize, 5, 40] {
            let mut v = norms(dim, s, 6000, dim as u64);
            let (_, p) = ks_test(&mut v, |x| gamma_cdf(x, dim as f64, s));
            assert!(p > ALPHA, "dim {dim}: p = {p}");
            let mut v = norms(dim, 0.7 * s, 6000, 100 + dim as u64);
            let (_, p) = ks_test(&mut v, |x| gamma_cdf(x, dim as f64, s));
            assert!(p < ALPHA, "dim {dim}: power, p = {p}");
        }
    }

    /// Direction: for d = 3, `u_1` is uniform on [-1, 1] (Archimedes); for d = 60,
    /// `sqrt(d) u_1` is close to N(0, 1).
    #[test]
    fn direction_is_uniform() {
        let g = GridL2Laplace::new(3, 1e12).expect("valid");
        let mut rng = NoiseRng::from_seed_quiet(9);
        let mut first: Vec<f64> = (0..20_000)
            .map(|_| {
                let v: Vec<f64> = g.sample(&mut rng).iter().map(|&x| x as f64).collect();
                v[0] / v.iter().map(|x| x * x).sum::<f64>().sqrt()
            })
            .collect();
        let (_, p) = ks_test(&mut first, |x| ((x + 1.0) / 2.0).clamp(0.0, 1.0));
        assert!(p > ALPHA, "p = {p}");
        let d = 60;
        let g = GridL2Laplace::new(d, 1e12).expect("valid");
        let mut scaled: Vec<f64> = (0..3000)
            .map(|_| {
                let v: Vec<f64> = g.sample(&mut rng).iter().map(|&x| x as f64).collect();
                (d as f64).sqrt() * v[7] / v.iter().map(|x| x * x).sum::<f64>().sqrt()
            })
            .collect();
        let (_, p) = ks_test(&mut scaled, |x| normal_cdf(x, 1.0));
        assert!(p > 1e-4, "p = {p}");
    }

    /// On a coarse grid (scale 3 units) the output is the rounded continuous vector: the
    /// law of the first coordinate matches the ideal's cell masses (computed by numerical
    /// integration of the d = 2 marginal) in a chi-square test.
    #[test]
    fn small_scales_round_like_the_continuous_law() {
        let (dim, s, n) = (2usize, 3.0, 40_000usize);
        let g = GridL2Laplace::new(dim, s).expect("valid");
        let mut rng = NoiseRng::from_seed_quiet(4);
        let mut counts = vec![0u64; 41];
        for _ in 0..n {
            let x = g.sample(&mut rng)[0].clamp(-20, 20);
            counts[(x + 20) as usize] += 1;
        }
        // Marginal density of the 2-d L2-Laplace: f(x) = (1 / (2 pi s^2)) int exp(-r / s) dy.
        let f = |x: f64| -> f64 {
            let steps = 4000;
            let h = 60.0 * s / steps as f64;
            (0..steps)
                .map(|i| {
                    let y = (i as f64 + 0.5) * h;
                    2.0 * h * (-(x * x + y * y).sqrt() / s).exp()
                })
                .sum::<f64>()
                / (2.0 * std::f64::consts::PI * s * s)
        };
        let mass = |k: i64| -> f64 {
            let m = 40;
            (0..m)
                .map(|i| f(k as f64 - 0.5 + (i as f64 + 0.5) / m as f64) / m as f64)
                .sum()
        };
        let mut expected: Vec<f64> = (-20..=20).map(|k| n as f64 * mass(k)).collect();
        let inner: f64 = expected[1..40].iter().sum();
        expected[0] = (n as f64 - inner) / 2.0;
        expected[40] = expected[0];
        let (_, p) = chi_square_test(&counts, &expected);
        assert!(p > ALPHA, "p = {p}, {counts:?}");
    }

    #[test]
    fn the_gap_is_negligible_for_every_accepted_size() {
        for d in [2usize, 123, 1000, 1 << 20] {
            let g = gap(d, 2f64.powi(80));
            assert!(g > 0.0 && g < 2f64.powi(-190), "d = {d}: {g:e}");
        }
        assert!(GridL2Laplace::new(1, 1.0).is_err());
        assert!(GridL2Laplace::new(3, f64::NAN).is_err());
    }

    #[test]
    fn privacy_map_and_lemma2_mean() {
        let m = L2LaplaceMechanism::new(0.2, 0.4, 10).expect("valid");
        assert!((m.privacy_map(0.2) - 0.4).abs() < 1e-15);
        assert!((m.expected_norm() - 5.0).abs() < 1e-12);
        assert!(L2LaplaceMechanism::new(0.2, -1.0, 10).is_err());
        assert!(L2LaplaceMechanism::new(0.2, 1.0, 0).is_err());
    }
}
