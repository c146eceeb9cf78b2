//! The dyadic discrete Laplace: a two-sided geometric law whose probabilities are exact
//! dyadic rationals, sampled exactly from 128 random bits by two table lookups (no loop,
//! no logarithm, no float) in all but a few draws in ten thousand.
//!
//! Law. `Z = S X` with a fair sign `S` and `(S, X) = (-, 0)` rejected (so `0` is not
//! counted twice), and `X = M G + R`:
//! * `G` geometric with ratio exactly 1/2 (`P(G = g) = 2^-(g+1)`: trailing zeros of
//!   uniform bits);
//! * `R` in `[0, M)`, `M = m 2^s` with `m < 2^12`, written in digits of at most 12 bits
//!   (`s` bits in the low digits, `m` values in the top one); the digits are independent,
//!   digit `D` at bit position `p` has `P(D = d) = c_d / 2^P` with integers `c_d`
//!   proportional (up to rounding to `P = 52` or `64` bits) to `2^(-d 2^p / M)`.
//!
//! Without rounding this is the discrete Laplace with `q = 2^(-1/M)` (a geometric's digits
//! are independent and its blocks of `M` halve). With it, the law is still exactly known:
//! `P(X = x) = 2^-(g+1) prod_i c^(i)_(d_i) / 2^(P_i)`, and so is its privacy map.
//!
//! Privacy map. Shifting an integer query by one unit changes the log-probability of any
//! output by at most `L = max_x |ln P(X = x) - ln P(X = x + 1)|`, which is a carry through
//! the digits: `sum_(i<j) ln(c^(i)_max / c^(i)_0) + ln(c^(j)_d / c^(j)_(d+1))`, or
//! `sum_i ln(c^(i)_max / c^(i)_0) + ln 2` into `G`. [`DyadicLaplace::per_unit`] is this
//! maximum, computed in f64 from exact integer differences plus a bound on its rounding
//! error, so the mechanism on integer queries of L1 sensitivity `d` is `(d L)`-DP. The
//! calibration picks the largest `M` (12 significant bits) with `d L <= epsilon`: the scale
//! is at most `2^-11` above the continuous Laplace's `d / epsilon`.
//!
//! Randomness. Word 0: bit 0 the sign, bits 1-11 the trailing zeros for `G` (all zero,
//! probability 2^-11: `G` continues on the extension source), bits 12-63 the second-lowest
//! digit (52 bits); word 1: the lowest digit (64 bits). More digits (`M >= 2^24`) read one
//! extra word each; a long `G` and a rejected draw read the caller's extension source.

use crate::exact::RandomBits;
use kinsey_core::{Error, Result};
use kinsey_kernels::dyadic::{DigitTable, DyadicTables, LOW_BITS};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

fn poisoned() -> Error {
    Error::Numerical("the dyadic sampler's table cache was poisoned by a panic".into())
}

/// Bits per digit (4,096-entry tables: 40 KiB each, in L2).
pub const DIGIT_BITS: u32 = 12;
/// `M` is capped here so the privacy map's rounding stays below 2^-10 of it.
const MAX_M: u64 = 1 << 40;
/// The most extra words a law of [`DyadicLaplace::for_sensitivity`] needs (`M < 2^41`: at
/// most three low digits and the top one). Callers give every counter this many, whatever
/// its law, so that counters of different laws under one key never share a word.
pub const MAX_EXTRA_WORDS: usize = kinsey_kernels::dyadic::EXTRA_WORDS;

/// One digit of `R`: its probabilities (its draw is a [`DigitTable`] of the law's
/// [`DyadicTables`], in `kinsey_kernels`, which the GPU path evaluates too).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Digit {
    /// Bit position in `R`.
    pos: u32,
    /// Precision `P`: masses sum to `2^P`.
    prec: u32,
    /// `c_d`, one per value.
    mass: Vec<u64>,
}

impl Digit {
    /// `values` values at bit `pos` of `R`, for the block length `m_total`.
    fn new(values: u32, pos: u32, m_total: u64, prec: u32) -> Self {
        let w: Vec<f64> = (0..values)
            .map(|d| (-(f64::from(d) * (pos as f64).exp2()) / m_total as f64).exp2())
            .collect();
        let total: f64 = w.iter().sum();
        let full = 1u128 << prec;
        // Rounded down (with a margin for the float products), then the remainder handed
        // out evenly and from the largest mass down: the masses stay non-increasing.
        let mut mass: Vec<u64> = w
            .iter()
            .map(|x| ((x / total) * full as f64 * (1.0 - 1e-12)).floor() as u64)
            .collect();
        let short = full - mass.iter().map(|&c| u128::from(c)).sum::<u128>();
        let (each, extra) = (short / u128::from(values), short % u128::from(values));
        for (i, c) in mass.iter_mut().enumerate() {
            *c += (each + u128::from((i as u128) < extra)) as u64;
        }
        Self { pos, prec, mass }
    }

    /// The digit's alias table: `2^slot_bits >= values` slots of mass `2^(P - slot_bits)`
    /// each, per slot `alias << (P - slot_bits) | threshold` (draws whose low
    /// `P - slot_bits` bits are below the threshold give the slot's own value, the rest its
    /// alias: one load per draw).
    fn table(&self) -> DigitTable {
        let (pos, prec) = (self.pos, self.prec);
        let slot_bits = 32 - (self.values() as u32 - 1).leading_zeros();
        let low = prec - slot_bits;
        let (thr, alias) = alias_table(&self.mass, slot_bits, prec);
        let table = thr
            .iter()
            .zip(&alias)
            .enumerate()
            .map(|(slot, (&t, &a))| {
                // A full slot (threshold 2^low) is stored as threshold 2^low - 1 with itself
                // as alias: the same value for every draw, and the threshold fits.
                let (t, a) = if t >> low != 0 {
                    (t - 1, slot as u64)
                } else {
                    (t, u64::from(a))
                };
                (a << low) | t
            })
            .collect();
        DigitTable {
            pos,
            prec,
            slot_bits,
            table,
        }
    }

    fn values(&self) -> usize {
        self.mass.len()
    }

    /// `ln(c_a / c_b)` from the exact difference (relative error a few 2^-53).
    fn ln_ratio(&self, a: usize, b: usize) -> f64 {
        let (x, y) = (self.mass[a] as i128, self.mass[b] as i128);
        ((x - y) as f64 / y as f64).ln_1p()
    }
}

/// Vose's alias table in integers: `2^slot_bits` slots of mass `2^(prec - slot_bits)`
/// carrying exactly the masses `mass` (which sum to `2^prec`).
fn alias_table(mass: &[u64], slot_bits: u32, prec: u32) -> (Vec<u64>, Vec<u16>) {
    let slots = 1usize << slot_bits;
    let cap = 1u128 << (prec - slot_bits);
    let mut work: Vec<u128> = (0..slots)
        .map(|i| mass.get(i).map_or(0, |&c| u128::from(c)))
        .collect();
    let mut thr = vec![cap as u64; slots];
    let mut alias: Vec<u16> = (0..slots as u16).collect();
    let (mut small, mut large): (Vec<usize>, Vec<usize>) = (0..slots).partition(|&i| work[i] < cap);
    while let (Some(&s), Some(&l)) = (small.last(), large.last()) {
        small.pop();
        thr[s] = work[s] as u64;
        alias[s] = l as u16;
        work[l] -= cap - work[s];
        if work[l] < cap {
            large.pop();
            small.push(l);
        }
    }
    (thr, alias)
}

/// The dyadic discrete Laplace law (module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct DyadicLaplace {
    /// Block length `M = m 2^s`.
    m: u64,
    /// Digits of `R`, lowest first.
    digits: Vec<Digit>,
    /// Their alias tables (the same order) and `M`: what a draw reads.
    tables: DyadicTables,
    /// Privacy loss bound per unit shift.
    per_unit: f64,
    /// `P(X = 0)`.
    p_zero_x: f64,
    std: f64,
}

impl DyadicLaplace {
    /// The law with block length `m_top 2^s` (`1 <= m_top < 2^12`; tests).
    #[cfg(test)]
    fn with_block(m_top: u64, s: u32) -> Self {
        Self::from_digits(m_top << s, Self::digits_of(m_top, s))
    }

    /// The digits' masses of the block `M = m_top 2^s`, lowest first (what the privacy map
    /// needs; the alias tables are built only for the block chosen).
    fn digits_of(m_top: u64, s: u32) -> Vec<Digit> {
        let m = m_top << s;
        let mut digits = Vec::new();
        let mut pos = 0;
        while pos < s {
            let width = (s - pos).min(DIGIT_BITS);
            digits.push((1u32 << width, pos));
            pos += width;
        }
        if m_top > 1 {
            digits.push((m_top as u32, s));
        }
        digits
            .into_iter()
            .enumerate()
            .map(|(i, (v, p))| Digit::new(v, p, m, if i == 1 { 64 - LOW_BITS } else { 64 }))
            .collect()
    }

    /// The law of block `m` with these digits: tables, privacy map, moments.
    fn from_digits(m: u64, digits: Vec<Digit>) -> Self {
        let tables = digits.iter().map(Digit::table).collect();
        let per_unit = privacy_per_unit(&digits);
        let p_zero_x = 0.5
            * digits
                .iter()
                .map(|d| d.mass[0] as f64 / (d.prec as f64).exp2())
                .product::<f64>();
        let mut law = Self {
            m,
            digits,
            tables: DyadicTables { m, digits: tables },
            per_unit,
            p_zero_x,
            std: 0.0,
        };
        law.std = law.variance().sqrt();
        law
    }

    /// The largest block (least noise) whose privacy map on integer queries of L1
    /// sensitivity `integer_sensitivity` is at most `epsilon`.
    pub fn for_sensitivity(integer_sensitivity: u64, epsilon: f64) -> Result<Self> {
        crate::exact::check_law_inputs(integer_sensitivity, epsilon)?;
        let d = integer_sensitivity as f64;
        let ideal = d * std::f64::consts::LN_2 / epsilon;
        if ideal >= MAX_M as f64 {
            return Err(Error::param(
                "epsilon",
                format!(
                    "noise parameter {:e} (sensitivity {integer_sensitivity} / epsilon \
                     {epsilon:e}) is above what the dyadic sampler supports (2^40 / ln 2)",
                    d / epsilon
                ),
            ));
        }
        // The smallest M = m 2^s (12 significant bits) at or above the ideal d ln 2 / eps,
        // raised until the exact map meets epsilon (M = 1, q = 1/2, is the least noise this
        // family has: then d ln 2 < eps already).
        let m0 = (ideal.ceil() as u64).max(1);
        let s = (64 - m0.leading_zeros()).saturating_sub(DIGIT_BITS);
        let (mut m_top, mut s) = (m0.div_ceil(1 << s), s);
        loop {
            if m_top == 1 << DIGIT_BITS {
                (m_top, s) = (1 << (DIGIT_BITS - 1), s + 1);
            }
            let digits = Self::digits_of(m_top, s);
            if d * privacy_per_unit(&digits) <= epsilon {
                return Ok(Self::from_digits(m_top << s, digits));
            }
            m_top += 1;
        }
    }

    /// [`for_sensitivity`](Self::for_sensitivity), shared: the tables (up to 200 KiB,
    /// about a millisecond to build) depend only on the public `(sensitivity, epsilon)`, so
    /// a process keeps the last 256 it built (tests and audits build thousands of
    /// mechanisms with the same parameters).
    pub fn shared(integer_sensitivity: u64, epsilon: f64) -> Result<Arc<Self>> {
        type Cache = Mutex<HashMap<(u64, u64), Arc<DyadicLaplace>>>;
        static CACHE: OnceLock<Cache> = OnceLock::new();
        let cache = CACHE.get_or_init(Default::default);
        let k = (integer_sensitivity, epsilon.to_bits());
        if let Some(law) = cache.lock().map_err(|_| poisoned())?.get(&k) {
            return Ok(law.clone());
        }
        let law = Arc::new(Self::for_sensitivity(integer_sensitivity, epsilon)?);
        let mut c = cache.lock().map_err(|_| poisoned())?;
        if c.len() >= 256 {
            c.clear();
        }
        c.insert(k, law.clone());
        Ok(law)
    }

    /// Privacy loss per unit shift `L` (the mechanism is `d L`-DP for sensitivity `d`).
    pub fn per_unit(&self) -> f64 {
        self.per_unit
    }

    /// The equivalent Laplace scale `1 / L`, in integer steps.
    pub fn t(&self) -> f64 {
        1.0 / self.per_unit
    }

    /// Standard deviation of `Z`.
    pub fn std_dev(&self) -> f64 {
        self.std
    }

    /// The block length `M`.
    pub fn block(&self) -> u64 {
        self.m
    }

    /// `Var(Z) = E[X^2] / (1 - P(X = 0) / 2)`, from the exact digit laws.
    fn variance(&self) -> f64 {
        let (mut mean_r, mut var_r) = (0.0, 0.0);
        for d in &self.digits {
            let scale = (d.pos as f64).exp2();
            let total = (d.prec as f64).exp2();
            let (mut e1, mut e2) = (0.0, 0.0);
            for (v, &c) in d.mass.iter().enumerate() {
                let p = c as f64 / total;
                e1 += p * v as f64;
                e2 += p * (v as f64).powi(2);
            }
            mean_r += scale * e1;
            var_r += scale * scale * (e2 - e1 * e1);
        }
        let m = self.m as f64;
        // G: mean 1, second moment 3.
        let ex2 = 3.0 * m * m + 2.0 * m * mean_r + var_r + mean_r * mean_r;
        ex2 / (1.0 - self.p_zero_x / 2.0)
    }

    /// `P(Z = z)`, from the tables (tests and audits).
    pub fn pmf(&self, z: i64) -> f64 {
        let x = z.unsigned_abs();
        let (g, r) = (x / self.m, x % self.m);
        let mut p = (-(g as f64) - 1.0).exp2();
        for d in &self.digits {
            let v = (r >> d.pos) % d.values() as u64;
            p *= d.mass[v as usize] as f64 / (d.prec as f64).exp2();
        }
        // Each sign with probability 1/2, and (-, 0) rejected.
        p / 2.0 / (1.0 - self.p_zero_x / 2.0)
    }

    /// The alias tables a draw reads (the `dyadic` kernel's input: its CPU and GPU paths
    /// finish all but the rare draws [`sample`](Self::sample) completes from more bits).
    pub fn tables(&self) -> &DyadicTables {
        &self.tables
    }

    /// Digits beyond the two the counter's words carry (`M >= 2^24`): each needs one more
    /// 64-bit word per draw, the `extra` of [`sample`](Self::sample).
    pub fn extra_words(&self) -> usize {
        self.digits.len().saturating_sub(2)
    }

    /// One draw from the counter's two words and its [`extra_words`](Self::extra_words)
    /// `extra` words, then `more` for the rare draws they do not cover (a `G` past 11, a
    /// rejected `(-, 0)`: about 1 in 2,000).
    #[inline]
    pub fn sample<R: RandomBits + ?Sized>(
        &self,
        words: [u64; 2],
        extra: &[u64],
        more: &mut R,
    ) -> i64 {
        // The common case first, straight-line: G and the sign from word 0's low bits, the
        // digits from the words, no rejection (the table path the GPU also runs).
        match self.tables.fast(words, extra) {
            Some(z) => z,
            None => self.sample_slow(words, extra, more),
        }
    }

    /// [`sample`](Self::sample) in full: more digits, a long `G`, a rejected draw.
    #[cold]
    fn sample_slow<R: RandomBits + ?Sized>(
        &self,
        words: [u64; 2],
        extra: &[u64],
        more: &mut R,
    ) -> i64 {
        let mut retry = false;
        let mut w = words;
        loop {
            let negative = w[0] & 1 == 1;
            let gbits = (w[0] >> 1) & ((1 << (LOW_BITS - 1)) - 1);
            let g = if gbits != 0 {
                u64::from(gbits.trailing_zeros())
            } else {
                u64::from(LOW_BITS - 1) + geometric_tail(more)
            };
            let mut r = 0u64;
            for (i, d) in self.tables.digits.iter().enumerate() {
                let word = match i {
                    0 => w[1],
                    1 => w[0] >> LOW_BITS,
                    _ if retry => more.next_u64(),
                    _ => extra[i - 2],
                };
                r += d.draw(word) << d.pos;
            }
            let x = u128::from(g) * u128::from(self.m) + u128::from(r);
            if negative && x == 0 {
                w = [more.next_u64(), more.next_u64()];
                retry = true;
                continue;
            }
            // |X| >= 2^63 needs G >= 2^23: probability below 2^-(2^23). Saturate.
            let x = i64::try_from(x).unwrap_or(i64::MAX);
            return if negative { -x } else { x };
        }
    }
}

/// Trailing zeros of an endless uniform bit string.
#[cold]
fn geometric_tail<R: RandomBits + ?Sized>(more: &mut R) -> u64 {
    let mut count = 0u64;
    loop {
        let v = more.next_u64();
        if v != 0 {
            return count + u64::from(v.trailing_zeros());
        }
        count += 64;
    }
}

/// `L = max_x |ln P(X = x) - ln P(X = x + 1)|` over every carry, plus its rounding bound.
fn privacy_per_unit(digits: &[Digit]) -> f64 {
    let mut worst: f64 = 0.0;
    let mut carry = 0.0; // sum over lower digits of ln(c_max / c_0)
    let mut terms = 0u32;
    for d in digits {
        for v in 0..d.values() - 1 {
            worst = worst.max((carry + d.ln_ratio(v, v + 1)).abs());
        }
        carry += d.ln_ratio(d.values() - 1, 0);
        terms += 1;
    }
    worst = worst.max((carry + std::f64::consts::LN_2).abs());
    // Each of the `terms + 2` summands is below 1 in magnitude with relative error under
    // 4 ulp (ln_1p, the division, the conversion, the addition): bound the total.
    worst + f64::from(terms + 2) * 8.0 * f64::EPSILON
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stattest::{ALPHA, chi_square_test};
    use rand_chacha::ChaCha20Rng;
    use rand_core::{RngCore, SeedableRng};

    struct Src(ChaCha20Rng);
    impl RandomBits for Src {
        fn next_u64(&mut self) -> u64 {
            self.0.next_u64()
        }
    }

    fn draws(law: &DyadicLaplace, n: usize, seed: u64) -> Vec<i64> {
        let mut s = Src(ChaCha20Rng::seed_from_u64(seed));
        (0..n)
            .map(|_| {
                let w = [s.next_u64(), s.next_u64()];
                let extra: Vec<u64> = (0..law.extra_words()).map(|_| s.next_u64()).collect();
                law.sample(w, &extra, &mut s)
            })
            .collect()
    }

    /// Every alias table carries its digit's masses exactly, and the masses sum to 2^P.
    #[test]
    fn alias_tables_are_exact() {
        for (m_top, s) in [
            (5, 0),
            (4095, 0),
            (3000, 7),
            (2049, 12),
            (4095, 20),
            (2, 30),
        ] {
            let law = DyadicLaplace::with_block(m_top, s);
            assert!(law.tables().check().is_ok());
            for (d, t) in law.digits.iter().zip(&law.tables.digits) {
                let cap = 1u128 << (d.prec - t.slot_bits);
                let low = d.prec - t.slot_bits;
                let mut got = vec![0u128; 1 << t.slot_bits];
                for (i, &e) in t.table.iter().enumerate() {
                    let (t, a) = (u128::from(e & ((1 << low) - 1)), (e >> low) as usize);
                    got[i] += t;
                    got[a] += cap - t;
                }
                let want: Vec<u128> = (0..got.len())
                    .map(|i| d.mass.get(i).map_or(0, |&c| u128::from(c)))
                    .collect();
                let bad: Vec<usize> = (0..got.len()).filter(|&i| got[i] != want[i]).collect();
                assert!(
                    bad.is_empty(),
                    "M = {m_top} 2^{s}, digit at {}: slots {bad:?}",
                    d.pos
                );
                assert_eq!(want.iter().sum::<u128>(), 1u128 << d.prec);
                assert!(d.mass.windows(2).all(|w| w[0] >= w[1]), "non-increasing");
            }
        }
    }

    /// The privacy map is the true maximum ratio (checked by enumerating P(X = x) over
    /// three blocks), close to the ideal ln 2 / M, and the calibration meets epsilon.
    #[test]
    fn privacy_map_is_the_maximum_ratio() {
        for (m_top, s) in [(7, 0), (300, 0), (2500, 3), (4095, 13)] {
            let law = DyadicLaplace::with_block(m_top, s);
            let m = law.block();
            // Every carry out of the lowest digit (where the digits' roundings meet), and a
            // sample of the rest, over three blocks.
            let mut worst: f64 = 0.0;
            let step = (m / 5000).max(1);
            let mut x = 0;
            while x < 3 * m {
                let r = (law.pmf(x as i64) / law.pmf(x as i64 + 1)).ln().abs();
                worst = worst.max(r);
                let low = x % 4096;
                x += if !(2..4094).contains(&low) {
                    1
                } else {
                    step.min(4094 - low)
                };
            }
            let ideal = std::f64::consts::LN_2 / m as f64;
            assert!(law.per_unit() >= worst * (1.0 - 1e-9), "{m}: {worst} > map");
            assert!(
                (law.per_unit() / ideal - 1.0).abs() < 1e-4,
                "{m}: far from ln2/M: {} {worst}",
                law.per_unit() / ideal
            );
        }
        for (d, eps) in [
            (1u64, 1.0),
            (65_547, 1.0),
            (65_547, 0.01),
            (3, 2.0),
            (1, 5.0),
        ] {
            let law = DyadicLaplace::for_sensitivity(d, eps).expect("ok");
            assert!(d as f64 * law.per_unit() <= eps, "{d} {eps}");
            // 12 significant bits: at most 2^-11 more noise than d / eps (small blocks are
            // integers: their step is 1 / M).
            if law.block() >= 1 << 11 {
                assert!(d as f64 * law.per_unit() >= eps * (1.0 - 2f64.powi(-10)));
            }
        }
        assert!(DyadicLaplace::for_sensitivity(1 << 40, 1e-3).is_err());
        let largest = DyadicLaplace::for_sensitivity(1 << 40, 1.0).expect("largest block");
        assert!(largest.block() > 1 << 39 && largest.extra_words() == MAX_EXTRA_WORDS);
        assert!(DyadicLaplace::for_sensitivity(1, 0.0).is_err());
    }

    /// Draws follow the tables' law (chi-square over the centre and two tails, including a
    /// second block, where `G` matters); a law with 30% less noise is rejected.
    #[test]
    fn draws_follow_the_law_and_power() {
        let law = DyadicLaplace::with_block(10, 0);
        let z = draws(&law, 300_000, 11);
        let bins = |z: &[i64]| -> Vec<u64> {
            let mut h = vec![0u64; 61];
            for &v in z {
                h[(v.clamp(-30, 30) + 30) as usize] += 1;
            }
            h
        };
        let mut probs: Vec<f64> = (-29..=29).map(|k| law.pmf(k)).collect();
        let tail = (1.0 - probs.iter().sum::<f64>()) / 2.0;
        probs.insert(0, tail);
        probs.push(tail);
        let expected: Vec<f64> = probs.iter().map(|p| p * z.len() as f64).collect();
        let (_, p) = chi_square_test(&bins(&z), &expected);
        assert!(p > ALPHA, "p = {p}");
        let weak = DyadicLaplace::with_block(7, 0);
        let (_, p) = chi_square_test(&bins(&draws(&weak, 300_000, 12)), &expected);
        assert!(p < ALPHA, "30% less noise must be detected, p = {p}");
        // The standard deviation from the tables matches the draws.
        let big = DyadicLaplace::for_sensitivity(65_547, 1.0).expect("ok");
        let z = draws(&big, 200_000, 13);
        let sd = (z.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / z.len() as f64).sqrt();
        assert!(
            (sd / big.std_dev() - 1.0).abs() < 0.02,
            "{sd} vs {}",
            big.std_dev()
        );
        // Three digits (one extra word per draw).
        let wide = DyadicLaplace::for_sensitivity(65_547, 1e-3).expect("ok");
        assert_eq!(wide.extra_words(), 1);
        let z = draws(&wide, 100_000, 14);
        let sd = (z.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / z.len() as f64).sqrt();
        assert!(
            (sd / wide.std_dev() - 1.0).abs() < 0.02,
            "{sd} vs {}",
            wide.std_dev()
        );
        let ideal = 2f64.sqrt() * 65_547.0;
        assert!(
            (big.std_dev() / ideal - 1.0).abs() < 2e-3,
            "close to Laplace's sqrt(2) b: {} {ideal}",
            big.std_dev()
        );
    }
}
