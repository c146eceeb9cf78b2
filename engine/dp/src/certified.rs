//! Certified enclosures of `e^x` and `e^-x` for dyadic `x`, in big-integer fixed point, and
//! the exact comparison of a lazily drawn uniform real with a number known through such
//! enclosures.
//!
//! * [`exp_enclosure`]: `lo <= e^x 2^f <= hi` for `x = num / 2^frac >= 0`. The argument is
//!   halved `r` times to `y = x / 2^r < 1/2`, the Taylor series of `e^y` is summed twice
//!   (every term rounded down for `lo`, up for `hi`, the tail after the last term bounded by
//!   that term since the ratio is below 1/2), then squared `r` times with the same rounding
//!   directions, in `f + 2 r + 24` working bits.
//! * [`exp_minus_enclosure`]: `e^-x 2^prec` as the reciprocal of the above (`[0, 1]` once
//!   `x >= prec`, where `e^-x < 2^-prec`).
//! * [`ExpTable`]: the fast path, `e^-x` in 1.63 fixed point from five table lookups and
//!   four 64-bit products for an `x` read to 36 fractional bits, with a proved error bound:
//!   an interval about `2^-36` wide relative, certified like the rest.
//! * [`LazyUniform`]: a uniform real `U` in [0, 1) whose bits are drawn as a comparison
//!   needs them; [`LazyUniform::below`] decides `U < p` exactly from enclosures of `p` at
//!   growing precision. `p` is irrational in every use (a nonzero rational times `e^-x` for
//!   a dyadic `x > 0`: Lindemann) or the enclosure is exact, so each round leaves the
//!   comparison open with probability at most a few `2^-prec`, and it ends with
//!   probability 1. A comparison still open at [`MAX_BITS`] bits (probability below
//!   `2^-4000`) is decided as "not below": a distance stated where it is used.

use crate::exact::RandomBits;
use num_bigint::BigUint;
use std::sync::OnceLock;

/// Bits of `U` after which an open comparison is decided as "not below".
pub const MAX_BITS: u32 = 4096;

fn one_at(bits: u32) -> BigUint {
    BigUint::from(1u32) << bits
}

/// `ceil(v / 2^k)`.
pub(crate) fn shr_ceil(v: &BigUint, k: u32) -> BigUint {
    let q = v >> k;
    if (&q << k) == *v { q } else { q + 1u32 }
}

/// `[lo, hi]` with `lo <= e^x 2^f <= hi`, `x = num / 2^frac`.
pub fn exp_enclosure(num: &BigUint, frac: u32, f: u32) -> (BigUint, BigUint) {
    // x < 2^int_bits; y = x / 2^r < 1/2.
    let int_bits = num.bits() as i64 - i64::from(frac);
    let r = (int_bits + 1).max(0) as u32;
    let g = f + 2 * r + 24;
    let shift = frac + r;
    let (y_lo, exact) = if g >= shift {
        (num << (g - shift), true)
    } else {
        let y = num >> (shift - g);
        let exact = (&y << (shift - g)) == *num;
        (y, exact)
    };
    let y_hi = if exact { y_lo.clone() } else { &y_lo + 1u32 };
    let one = one_at(g);
    let (mut t_lo, mut t_hi) = (one.clone(), one.clone());
    let (mut s_lo, mut s_hi) = (one.clone(), one.clone());
    let mut n: u32 = 0;
    loop {
        n += 1;
        let den = BigUint::from(n) << g;
        t_lo = &t_lo * &y_lo / &den;
        t_hi = (&t_hi * &y_hi + &den - 1u32) / &den;
        s_lo += &t_lo;
        s_hi += &t_hi;
        // Terms shrink by y / (n + 1) < 1/2: the tail after term n is below term n.
        if t_hi <= BigUint::from(1u32) {
            s_hi += &t_hi;
            break;
        }
    }
    for _ in 0..r {
        s_lo = (&s_lo * &s_lo) >> g;
        s_hi = shr_ceil(&(&s_hi * &s_hi), g);
    }
    (s_lo >> (g - f), shr_ceil(&s_hi, g - f))
}

/// `[lo, hi]` with `lo <= e^-x 2^prec <= hi`, `x = num / 2^frac >= 0`.
pub fn exp_minus_enclosure(num: &BigUint, frac: u32, prec: u32) -> (BigUint, BigUint) {
    if num.bits() == 0 {
        let one = one_at(prec);
        return (one.clone(), one);
    }
    // x >= prec: e^-x < 2^-prec (ln 2 < 1).
    if (num >> frac) >= BigUint::from(prec) {
        return (BigUint::ZERO, BigUint::from(1u32));
    }
    let f = prec + 8;
    let (e_lo, e_hi) = exp_enclosure(num, frac, f);
    let top = one_at(prec + f);
    let lo = &top / &e_hi;
    let hi = (&top + &e_lo - 1u32) / &e_lo;
    (lo, hi)
}

/// `e^-x` in 1.63 fixed point (value `v / 2^63`), fast and certified.
#[derive(Debug)]
pub struct ExpTable {
    /// `e^-n`, `n < INT_LIMIT`.
    int: Vec<u64>,
    /// `e^-(i 2^-(9 (j + 1)))` for digit `j` of the fraction, `i < 512`.
    frac: [Vec<u64>; 4],
}

/// `e^-44 2^63 < 1`: from here on the fast path's value is below one unit.
const INT_LIMIT: u128 = 44;
/// Fraction bits the fast path reads.
const FRAC_BITS: u32 = 36;
const DIGIT: u32 = 9;
/// Each entry is below its value by less than this many units.
pub const ENTRY_ERR: u64 = 2;
/// The product of the five entries is below the true product by at most this many units
/// (every entry and every product rounds down; all factors are at most one).
const PRODUCT_ERR: u64 = 5 * ENTRY_ERR + 4;

impl ExpTable {
    fn build() -> Self {
        let entry = |num: u64, frac: u32| -> u64 {
            let (lo, hi) = exp_minus_enclosure(&BigUint::from(num), frac, 63 + 8);
            let v = &lo >> 8u32;
            debug_assert!(shr_ceil(&hi, 8) - &v <= BigUint::from(ENTRY_ERR));
            v.to_u64_digits().first().copied().unwrap_or(0)
        };
        let int = (0..INT_LIMIT as u64).map(|n| entry(n, 0)).collect();
        let frac = std::array::from_fn(|j| {
            (0..1u64 << DIGIT)
                .map(|i| entry(i, DIGIT * (j as u32 + 1)))
                .collect()
        });
        Self { int, frac }
    }

    /// The process's table (built once, about 2,000 enclosures).
    #[inline]
    pub fn get() -> &'static Self {
        static TABLE: OnceLock<ExpTable> = OnceLock::new();
        TABLE.get_or_init(Self::build)
    }

    /// `(lo, hi)` with `lo <= e^-x 2^63 <= hi`, `x = num / 2^frac`, `frac <= 127`.
    #[inline]
    pub fn exp_minus(&self, num: u128, frac: u32) -> (u64, u64) {
        let n = num >> frac;
        if n >= INT_LIMIT {
            return (0, 1);
        }
        let mask = (1u128 << FRAC_BITS) - 1;
        let (f, rest) = if frac >= FRAC_BITS {
            let low = frac - FRAC_BITS;
            (
                ((num >> low) & mask) as u64,
                num & ((1u128 << low) - 1) != 0,
            )
        } else {
            (((num << (FRAC_BITS - frac)) & mask) as u64, false)
        };
        let d = |j: u32| ((f >> (FRAC_BITS - DIGIT * (j + 1))) & ((1 << DIGIT) - 1)) as usize;
        let mul = |p: u64, t: u64| ((u128::from(p) * u128::from(t)) >> 63) as u64;
        // e^-0 = 1 exactly: the common case skips a product.
        let mut p = if n == 0 {
            self.frac[0][d(0)]
        } else {
            mul(self.int[n as usize], self.frac[0][d(0)])
        };
        for j in 1..4 {
            p = mul(p, self.frac[j as usize][d(j)]);
        }
        // The digits beyond the 36th: e^-eps > 1 - 2^-36.
        let lo = if rest {
            p.saturating_sub((p >> FRAC_BITS) + 1)
        } else {
            p
        };
        (lo, p + PRODUCT_ERR)
    }
}

/// A uniform real `U` in [0, 1), known to its first `bits` bits (`prefix`).
#[derive(Debug, Clone)]
pub struct LazyUniform {
    prefix: BigUint,
    bits: u32,
}

impl LazyUniform {
    /// `U` whose first 64 bits are `word`.
    pub fn new(word: u64) -> Self {
        Self {
            prefix: BigUint::from(word),
            bits: 64,
        }
    }

    /// `U < p`, exactly, for `p` in [0, 1] given by `enclose(prec)`: `[lo, hi]` with
    /// `lo <= p 2^prec <= hi`. More of `U`'s bits are drawn from `src` while the enclosure
    /// and `U`'s interval overlap.
    pub fn below<R: RandomBits + ?Sized>(
        &mut self,
        src: &mut R,
        mut enclose: impl FnMut(u32) -> (BigUint, BigUint),
    ) -> bool {
        loop {
            let (lo, hi) = enclose(self.bits);
            // U in [prefix, prefix + 1) 2^-bits: below lo once prefix + 1 <= lo.
            if self.prefix < lo {
                return true;
            }
            if self.prefix >= hi {
                return false;
            }
            if self.bits >= MAX_BITS {
                return false;
            }
            self.prefix = (&self.prefix << 64u32) | BigUint::from(src.next_u64());
            self.bits += 64;
        }
    }

    /// `U` whose first `bits` bits are `prefix`.
    pub fn from_prefix(prefix: BigUint, bits: u32) -> Self {
        Self { prefix, bits }
    }

    /// The first 64 bits as a float in (0, 1] scale (an estimate for searches).
    pub fn estimate(&self) -> f64 {
        let top = &self.prefix >> (self.bits - 64);
        let w = top.to_u64_digits().first().copied().unwrap_or(0);
        (w as f64 + 0.5) * 2f64.powi(-64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoiseRng;

    fn to_f64(v: &BigUint, prec: u32) -> f64 {
        let digits = v.to_u64_digits();
        digits
            .iter()
            .enumerate()
            .map(|(i, &d)| d as f64 * 2f64.powi(64 * i as i32 - prec as i32))
            .sum()
    }

    #[test]
    fn enclosures_contain_the_value_and_are_tight() {
        for (num, frac) in [
            (0u64, 0u32),
            (1, 0),
            (1, 1),
            (3, 2),
            (5, 0),
            (123_456_789, 20),
            (40, 0),
            (1, 60),
            (7_000_000, 10),
        ] {
            let x = num as f64 / 2f64.powi(frac as i32);
            let (lo, hi) = exp_minus_enclosure(&BigUint::from(num), frac, 200);
            assert!(lo <= hi);
            let width = &hi - &lo;
            assert!(
                width <= BigUint::from(4u32),
                "{num}/2^{frac}: width {width}"
            );
            let v = (-x).exp();
            let (l, h) = (to_f64(&lo, 200), to_f64(&hi, 200));
            assert!(
                l <= v * (1.0 + 1e-15) && h >= v * (1.0 - 1e-15),
                "{x}: {l} {v} {h}"
            );
            if x < 20.0 {
                let (elo, ehi) = exp_enclosure(&BigUint::from(num), frac, 120);
                let (l, h) = (to_f64(&elo, 120), to_f64(&ehi, 120));
                assert!(l <= x.exp() * (1.0 + 1e-15) && h >= x.exp() * (1.0 - 1e-15));
                // e^x e^-x = 1 within the enclosures.
                let prod_lo = &elo * &lo;
                let prod_hi = &ehi * &hi;
                let one = one_at(320);
                assert!(prod_lo <= one && prod_hi >= one, "{x}");
            }
        }
        // Past prec, the enclosure is [0, 1].
        let (lo, hi) = exp_minus_enclosure(&BigUint::from(300u32), 0, 200);
        assert_eq!((lo, hi), (BigUint::ZERO, BigUint::from(1u32)));
    }

    /// The fast table against the big-integer enclosure at many arguments: both ends hold,
    /// and the interval is about 2^-36 relative wide at most.
    #[test]
    fn the_fast_table_is_certified() {
        let t = ExpTable::get();
        let mut rng = NoiseRng::from_seed_quiet(11);
        for k in 0..3000u32 {
            let frac = [0u32, 9, 36, 40, 70, 101, 127][(k % 7) as usize];
            let top = rng.next_u64() as u128;
            let num = if frac >= 64 {
                (top << (frac - 64 + 1 + (k % 7))) | rng.next_u64() as u128
            } else {
                top >> (58 - frac.min(58))
            };
            let num = num & ((1u128 << (frac + 6).min(127)) - 1);
            let (lo, hi) = t.exp_minus(num, frac);
            let (blo, bhi) = exp_minus_enclosure(&BigUint::from(num), frac, 63 + 40);
            assert!(BigUint::from(lo) << 40u32 <= bhi, "{num}/2^{frac}");
            assert!(BigUint::from(hi) << 40u32 >= blo, "{num}/2^{frac}");
            assert!(
                hi - lo <= (lo >> 35) + 2 * PRODUCT_ERR + 2,
                "{num}/2^{frac}"
            );
        }
        assert_eq!(t.exp_minus(0, 50), (1 << 63, (1 << 63) + PRODUCT_ERR));
        assert_eq!(t.exp_minus(45 << 10, 10), (0, 1));
    }

    /// `U < p` decided lazily has probability p, including when p's first 64 bits equal U's.
    #[test]
    fn lazy_comparisons_have_the_right_probability() {
        let mut rng = NoiseRng::from_seed_quiet(12);
        // p = e^-0.625.
        let x = BigUint::from(5u32);
        let n = 100_000;
        let hits = (0..n)
            .filter(|_| {
                let mut u = LazyUniform::new(rng.next_u64());
                u.below(&mut rng, |prec| exp_minus_enclosure(&x, 3, prec))
            })
            .count();
        let want = (-0.625f64).exp();
        let sd = (want * (1.0 - want) / n as f64).sqrt();
        assert!((hits as f64 / n as f64 - want).abs() < 5.0 * sd, "{hits}");
        // A prefix that agrees with p for 64 bits draws more bits and still decides.
        let (lo, _) = exp_minus_enclosure(&BigUint::from(1u32), 0, 64);
        let w = lo.to_u64_digits()[0];
        let mut u = LazyUniform::new(w);
        let _ = u.below(&mut rng, |prec| {
            exp_minus_enclosure(&BigUint::from(1u32), 0, prec)
        });
        assert!(u.bits > 64);
    }
}
