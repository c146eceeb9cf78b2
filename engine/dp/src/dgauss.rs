//! The exact discrete Gaussian, table-driven: `P(Z = z)` proportional to
//! `exp(-z^2 / (2 sigma^2))` on all of Z, with `1 / (2 sigma^2) = A / 2^frac` exactly (a
//! dyadic rational just below the asked one, so the variance parameter is at most `2^-45`
//! relative above it), in about one 64-bit word and 9 ns a draw.
//!
//! # The law, by rejection from a table
//!
//! The magnitude `m = |z|` is proposed from `N` blocks of width `2^s` covering
//! `[0, T)`, `T = N 2^s >= 10 sigma`, plus a tail `[T, inf)` and a "restart" category; a
//! fair sign comes with it, `(-, 0)` rejected so that zero is not counted twice.
//!
//! * Block `h` (first value `m_h = h 2^s`) is proposed with integer weight
//!   `w_h >= kappa exp(-x(m_h))`, `x(m) = A m^2 / 2^frac`, the value inside it uniform; the
//!   weights (with the tail's and the restart's) sum to exactly `2^c 2^16`, so an alias
//!   table of `2^c` columns with 16-bit integer thresholds samples them exactly from
//!   `c + 16` uniform bits (`c = 12`; the ceilings waste below `2^-13` of the proposals).
//!   The value `m` is kept with probability
//!   `kappa exp(-x(m)) / w_h <= 1`.
//! * The tail proposes `m = T + j`, `j` geometric with ratio `exp(-lambda)`,
//!   `lambda = 2 A T / 2^frac` (an exact dyadic), and keeps it with probability
//!   `exp(-A j^2 / 2^frac) kappa exp(-x(T)) / (2^s w_T (1 - exp(-lambda))) <= 1`, which its
//!   weight `w_T` makes at most one: `x(T + j) = x(T) + lambda j + A j^2 / 2^frac`.
//!
//! Every proposal then has probability proportional to `exp(-x(m))`: the law is exactly
//! the discrete Gaussian. `kappa` is an integer chosen so that the weights fill the table,
//! every `w_h` a certified ceiling (from [`crate::certified`] enclosures of `exp(-x(m_h))`).
//!
//! # Every Bernoulli exactly
//!
//! A keep decision is `U < p` for a uniform real `U` whose first bits (18 or more) are the
//! first word's lowest, below the column, coin, sign and offset; more words follow when
//! they are needed. With `delta = x(m) - x(m_h)` and `r_h = kappa e^-x(m_h) / w_h`
//! (certified per block), the fast path decides from `r_h - delta <= p <= r_h` (all but
//! about `delta` of the keeps), then from `p` enclosed in 1.63 fixed point
//! ([`crate::certified::ExpTable`]: `e^-delta` from tables, about `2^-35` wide), then with a
//! second word of `U`. Otherwise, and for the tail, the decision is
//! [`crate::certified::LazyUniform::below`]:
//! `U`'s further bits against big-integer enclosures of `p` at growing precision. No float
//! decides anything; floats only guess where the geometric's search starts.
//!
//! Statistical distance from the ideal law: an open comparison after 4,096 bits (less
//! than `2^-4000` per comparison) counts as a rejection, and a magnitude above `2^63 - 1`
//! (beyond `2^23 sigma`, probability below `exp(-2^45)`) saturates. Both are below
//! `2^-3000` per draw, stated here, and negligible against any delta a release reports.
//!
//! What it replaced: Canonne, Kamath & Steinke's Algorithm 3 (discrete Laplace proposal,
//! `Bern(exp(-gamma))` by von Neumann's series on 256-bit rationals), exact as well but
//! about 100 ns and two words a draw at the sigmas in use, where this takes about 9 ns and
//! one word (`cargo test --release -p kinsey-dp -- --ignored --nocapture speed`).

use crate::certified::{ExpTable, LazyUniform, exp_minus_enclosure, shr_ceil};
use crate::exact::RandomBits;
use kinsey_core::{Error, Result};
use num_bigint::BigUint;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Alias columns: `2^COL_BITS`.
const COL_BITS: u32 = 12;
/// Bits of an alias threshold.
const COIN_BITS: u32 = 16;
/// Bits of the first word below the column, coin and sign: the offset in a block, then
/// the first bits of the keep decision's uniform.
const LOW_BITS: u32 = 64 - COL_BITS - COIN_BITS - 1;
/// Largest offset read from the first word (leaving at least 18 bits of the uniform).
const OFFSET_IN_WORD: u32 = 17;
/// The blocks cover `[0, COVER sigma)`: the tail's mass is below `exp(-50)`.
const COVER: f64 = 10.0;
/// Fixed-point bits of the enclosures the tables are built from.
const BUILD_PREC: u32 = 224;

/// The discrete Gaussian with variance parameter at least the `sigma^2` asked for.
#[derive(Clone)]
pub struct DiscreteGaussian {
    law: Arc<Law>,
}

impl std::fmt::Debug for DiscreteGaussian {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let l = &self.law;
        write!(
            f,
            "DiscreteGaussian(sigma^2 = 2^{} / {}, {} blocks of 2^{})",
            l.frac - 1,
            l.a,
            l.blocks,
            l.s
        )
    }
}

impl PartialEq for DiscreteGaussian {
    fn eq(&self, other: &Self) -> bool {
        self.law.key() == other.law.key()
    }
}

/// The sampler's tables for one sigma.
#[derive(Debug)]
struct Law {
    /// `1 / (2 sigma^2) = a / 2^frac`.
    a: u64,
    frac: u32,
    /// Block width `2^s` and count.
    s: u32,
    blocks: usize,
    /// Alias columns: a column keeps itself when the coin is below `thr`, else goes to
    /// `alias`; with the keep factor of the block it keeps (one cache line holds four).
    cols: Vec<Col>,
    /// Category weights: blocks, then the tail, then the restart.
    weight: Vec<u64>,
    kappa: u64,
    /// `floor(kappa e^-x(m_h) / w_h 2^63)` is `cols[h].r_lo`, exact to `r_err` units.
    r_err: u64,
    table: &'static ExpTable,
    /// The fast path may decide (tests turn it off to check the slow path alone).
    fast: bool,
}

/// One alias column, and the keep factor of the block of the same index.
#[derive(Debug, Clone, Copy, Default)]
struct Col {
    thr: u32,
    alias: u16,
    r_lo: u64,
}

type Key = (u64, u32, u32, usize);
type Cache = HashMap<(Key, bool), Arc<Law>>;

fn poisoned() -> Error {
    Error::Numerical("the discrete Gaussian's table cache was poisoned by a panic".into())
}

impl DiscreteGaussian {
    /// Largest sigma accepted, in integer steps.
    pub const MAX_SIGMA: f64 = 1_099_511_627_776.0; // 2^40

    /// The discrete Gaussian with variance parameter at least `sigma^2` (`sigma` in
    /// integer steps, `1e-3 <= sigma <= 2^40`). Its tables are built once per parameter
    /// in a process (a few milliseconds) and shared.
    pub fn new(sigma: f64) -> Result<Self> {
        Self::with_cover(sigma, COVER, true)
    }

    fn with_cover(sigma: f64, cover: f64, fast: bool) -> Result<Self> {
        if !(sigma.is_finite() && (1e-3..=Self::MAX_SIGMA).contains(&sigma)) {
            return Err(Error::param(
                "sigma",
                format!("discrete Gaussian sigma {sigma:e} outside 1e-3 ..= 2^40 grid steps"),
            ));
        }
        let key = Law::key_for(sigma, cover);
        static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
        let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
        if let Some(law) = cache.lock().map_err(|_| poisoned())?.get(&(key, fast)) {
            return Ok(Self { law: law.clone() });
        }
        let law = Arc::new(Law::build(key, fast)?);
        cache
            .lock()
            .map_err(|_| poisoned())?
            .insert((key, fast), law.clone());
        Ok(Self { law })
    }

    /// The variance parameter `sigma^2 = 2^(frac - 1) / A` actually sampled (at least the
    /// one asked for; the law's variance approaches it from below).
    pub fn variance(&self) -> f64 {
        (f64::from(self.law.frac) - 1.0).exp2() / self.law.a as f64
    }

    /// One draw.
    pub fn sample<R: RandomBits + ?Sized>(&self, src: &mut R) -> i64 {
        let l = &*self.law;
        loop {
            let w0 = src.next_u64();
            let col = (w0 >> (64 - COL_BITS)) as usize;
            let coin = ((w0 >> (LOW_BITS + 1)) & ((1 << COIN_BITS) - 1)) as u32;
            let negative = (w0 >> LOW_BITS) & 1 == 1;
            let c = l.cols[col];
            // Half the columns split between two categories at random: no branch to
            // mispredict.
            let cat = std::hint::select_unpredictable(coin < c.thr, col, usize::from(c.alias));
            if cat < l.blocks {
                // The offset below the sign, then the uniform's first bits (the offset
                // from a word of its own for blocks wider than 2^17).
                let mask = (1u64 << l.s) - 1;
                let low = w0 & ((1 << LOW_BITS) - 1);
                let (offset, u, ub) = if l.s <= OFFSET_IN_WORD {
                    let ub = LOW_BITS - l.s;
                    ((low >> ub) & mask, low & ((1 << ub) - 1), ub)
                } else {
                    (src.next_u64() & mask, low, LOW_BITS)
                };
                let m = ((cat as u64) << l.s) + offset;
                if negative && m == 0 {
                    continue;
                }
                if l.keep_block(cat, offset, (u, ub), src) {
                    return signed(m, negative);
                }
            } else if cat == l.blocks
                && let Some(m) = l.tail(src)
            {
                return signed(m, negative);
            }
        }
    }
}

impl DiscreteGaussian {
    /// The draws one word decides on the fast path: `out[i]` is what [`sample`](Self::sample)
    /// returns from a source whose first word is `words[i]` when that word alone keeps a
    /// proposal by the linear bounds (all but a few in a thousand at the sigmas in use),
    /// else [`UNDECIDED`] (the caller then samples it in full from the same word). Two
    /// passes over the batch: the alias categories first, without a branch, so that the
    /// columns' loads overlap; then the keep decisions.
    pub fn sample_words(&self, words: &[u64], out: &mut [i64]) {
        let l = &*self.law;
        let out = &mut out[..words.len()];
        if !l.fast || l.s > OFFSET_IN_WORD {
            out.fill(UNDECIDED);
            return;
        }
        for (o, &w0) in out.iter_mut().zip(words) {
            let col = (w0 >> (64 - COL_BITS)) as usize;
            let coin = ((w0 >> (LOW_BITS + 1)) & ((1 << COIN_BITS) - 1)) as u32;
            let c = l.cols[col];
            *o = std::hint::select_unpredictable(coin < c.thr, col, usize::from(c.alias)) as i64;
        }
        let (mask, ub) = ((1u64 << l.s) - 1, LOW_BITS - l.s);
        for (o, &w0) in out.iter_mut().zip(words) {
            let cat = *o as usize;
            *o = UNDECIDED;
            if cat >= l.blocks {
                continue;
            }
            let negative = (w0 >> LOW_BITS) & 1 == 1;
            let low = w0 & ((1 << LOW_BITS) - 1);
            let (offset, u) = ((low >> ub) & mask, low & ((1 << ub) - 1));
            let m = ((cat as u64) << l.s) + offset;
            if negative && m == 0 {
                continue;
            }
            if let (_, Some(true)) = l.keep_linear(cat, offset, (u, ub)) {
                *o = signed(m, negative);
            }
        }
    }
}

/// [`DiscreteGaussian::sample_words`]' mark of a draw its word did not decide (no draw is
/// `i64::MIN`: magnitudes saturate at `i64::MAX`).
pub const UNDECIDED: i64 = i64::MIN;

/// `U < p` from `U`'s first `ub <= 63` bits `u` and `lo <= p 2^63 <= hi`, when they decide.
#[inline]
fn decide(u: u64, ub: u32, lo: u64, hi: u64) -> Option<bool> {
    // u < 2^ub: both ends fit 64 bits (the upper one is at most 2^63).
    let sh = 63 - ub;
    let (u_lo, u_hi) = (u << sh, (u + 1) << sh);
    if u_hi <= lo {
        Some(true)
    } else if u_lo >= hi {
        Some(false)
    } else {
        None
    }
}

#[inline]
fn signed(m: u64, negative: bool) -> i64 {
    let m = m.min(i64::MAX as u64) as i64;
    if negative { -m } else { m }
}

impl Law {
    /// `(A, frac, s, N)` for `sigma`: the blocks cover `cover sigma`, and `A` has as many
    /// bits (at most 53) as keep `A o (2 m_h + o) < 2^128` and `frac <= 127`.
    fn key_for(sigma: f64, cover: f64) -> Key {
        let max_blocks = (1usize << COL_BITS) - 2;
        let t = (cover * sigma).ceil().max(1.0);
        let s = if t <= max_blocks as f64 {
            0
        } else {
            (t / max_blocks as f64).log2().ceil() as u32
        };
        let blocks = ((t / f64::from(s).exp2()).ceil() as usize).clamp(1, max_blocks);
        let inv = 1.0 / (2.0 * sigma * sigma);
        let k = inv.log2().floor() as i32; // inv in [2^k, 2^(k+1))
        let a_bits = 53i32.min(127 - 2 * s as i32 - COL_BITS as i32).min(128 + k);
        let frac = (a_bits - 1 - k).max(0) as u32;
        // inv 2^frac in [2^(a_bits - 1), 2^a_bits); the margin covers inv's two roundings.
        let a = (inv * f64::from(frac).exp2() * (1.0 - 2f64.powi(-50))).floor() as u64;
        (a.max(1), frac, s, blocks)
    }

    fn key(&self) -> Key {
        (self.a, self.frac, self.s, self.blocks)
    }

    /// `A m^2` and `frac`: the exponent `x(m)`.
    fn x(&self, m: &BigUint) -> BigUint {
        BigUint::from(self.a) * m * m
    }

    fn build((a, frac, s, blocks): Key, fast: bool) -> Result<Self> {
        let prec = BUILD_PREC;
        let big_a = BigUint::from(a);
        // Enclosures of e^-x(m_h) by a certified recurrence: e^-x(m_(h+1)) = e^-x(m_h) c d^h,
        // c = e^-(A 2^2s / 2^frac), d = c^2 (every product rounded outwards).
        let step = &big_a << (2 * s);
        let (c_lo, c_hi) = exp_minus_enclosure(&step, frac, prec);
        let (d_lo, d_hi) = exp_minus_enclosure(&(&step << 1u32), frac, prec);
        let one = BigUint::from(1u32) << prec;
        let (mut e_lo, mut e_hi) = (one.clone(), one.clone());
        let (mut p_lo, mut p_hi) = (one.clone(), one.clone()); // d^h
        let mut enc = Vec::with_capacity(blocks);
        for _ in 0..blocks {
            enc.push((e_lo.clone(), e_hi.clone()));
            e_lo = (((&e_lo * &c_lo) >> prec) * &p_lo) >> prec;
            e_hi = ceil_mul(&ceil_mul(&e_hi, &c_hi, prec), &p_hi, prec);
            p_lo = (&p_lo * &d_lo) >> prec;
            p_hi = ceil_mul(&p_hi, &d_hi, prec);
        }
        // The tail: e^-x(T) <= t_hi 2^-prec, 1 - e^-lambda >= (2^prec - l_hi) 2^-prec.
        let big_t = BigUint::from(blocks as u64) << s;
        let (_, t_hi) = exp_minus_enclosure(&(&big_a * &big_t * &big_t), frac, prec);
        let (_, l_hi) = exp_minus_enclosure(&((&big_a * &big_t) << 1u32), frac, prec);
        let gap = &one - &l_hi;
        if gap.bits() == 0 {
            return Err(Error::Numerical(
                "discrete Gaussian: the tail's ratio rounds to one".into(),
            ));
        }
        // tail mass term, in units of 2^-prec: t_hi / (2^s (1 - e^-lambda)).
        let tail_den = &gap << s;
        let tail_term = (&t_hi * &one + &tail_den - 1u32) / &tail_den;
        let total: BigUint = enc.iter().map(|(_, hi)| hi).sum::<BigUint>() + &tail_term;
        let cols = 1usize << COL_BITS;
        let full = (cols as u64) << COIN_BITS;
        let room = BigUint::from(full - blocks as u64 - 2) << prec;
        let kappa = to_u64(&(room / &total))?;
        let kap = BigUint::from(kappa);
        let ceil_scaled = |v: &BigUint| to_u64(&shr_ceil(&(&kap * v), prec));
        let mut weight = Vec::with_capacity(blocks + 2);
        for (_, hi) in &enc {
            weight.push(ceil_scaled(hi)?.max(1));
        }
        let w_tail = to_u64(&((&kap * &t_hi + &tail_den - 1u32) / &tail_den))?.max(1);
        weight.push(w_tail);
        let used: u64 = weight.iter().sum();
        let restart = full.checked_sub(used).ok_or_else(|| {
            Error::Numerical("discrete Gaussian: the weights overfill the table".into())
        })?;
        weight.push(restart);
        // r_h = kappa e^-x(m_h) / w_h in 1.63 fixed point.
        let mut r_lo = Vec::with_capacity(blocks);
        let mut r_err = 0u64;
        for ((lo, hi), &w) in enc.iter().zip(&weight) {
            let den = BigUint::from(w) << (prec - 63);
            let r0 = to_u64(&(&kap * lo / &den))?;
            let r1 = to_u64(&((&kap * hi + &den - 1u32) / &den))?;
            r_lo.push(r0);
            r_err = r_err.max(r1 - r0);
        }
        let (thr, alias) = alias_table(&weight, cols)?;
        let cols = (0..cols)
            .map(|i| Col {
                thr: thr[i],
                alias: alias[i],
                r_lo: r_lo.get(i).copied().unwrap_or(0),
            })
            .collect();
        Ok(Self {
            a,
            frac,
            s,
            blocks,
            cols,
            weight,
            kappa,
            r_err,
            table: ExpTable::get(),
            fast,
        })
    }

    /// Keep `m = m_h + offset` of block `h`: `U < kappa e^-x(m) / w_h`, `U`'s first `ub`
    /// bits `u`, the rest read from `src` as needed.
    #[inline(always)]
    fn keep_block<R: RandomBits + ?Sized>(
        &self,
        h: usize,
        offset: u64,
        (u, ub): (u64, u32),
        src: &mut R,
    ) -> bool {
        if self.fast {
            let (delta, keep) = self.keep_linear(h, offset, (u, ub));
            if let Some(keep) = keep {
                return keep;
            }
            return self.keep_block_exp(h, offset, delta, (u, ub), src);
        }
        let full = (u128::from(u) << 64) | u128::from(src.next_u64());
        self.keep_block_slow(h, offset, full, ub + 64, src)
    }

    /// `delta = x(m) - x(m_h)` (units `2^-frac`) and the keep decision of the linear bounds,
    /// when they decide.
    #[inline(always)]
    fn keep_linear(&self, h: usize, offset: u64, (u, ub): (u64, u32)) -> (u128, Option<bool>) {
        // x(m) - x(m_h) = A o (2 m_h + o) / 2^frac, below 2^128 by the choice of A;
        // o (2 m_h + o) < 2^(2 s + 13) fits 64 bits for s <= 25 (sigma below 2^33).
        let m_h = (h as u64) << self.s;
        let delta = match offset.checked_mul(2 * m_h + offset) {
            Some(q) => u128::from(self.a) * u128::from(q),
            None => u128::from(self.a) * u128::from(offset) * u128::from(2 * m_h + offset),
        };
        let r = self.cols[h].r_lo;
        // r_h - delta <= r_h (1 - delta) <= p <= r_h: decides all but about delta of the
        // keeps (delta is below 0.01 for all but the outer blocks at the sigmas in use).
        let d_hi = if self.frac >= 63 {
            (delta >> (self.frac - 63)) + 1
        } else {
            delta.checked_shl(63 - self.frac).unwrap_or(u128::MAX)
        };
        let lin_lo = r.saturating_sub(u64::try_from(d_hi).unwrap_or(u64::MAX));
        let r_hi = r + self.r_err + 1;
        (delta, decide(u, ub, lin_lo, r_hi))
    }

    /// The keep decision the linear bounds left open: from the table's enclosure of
    /// `e^-delta`, then with one more word of `U`, then from big integers.
    #[inline(never)]
    fn keep_block_exp<R: RandomBits + ?Sized>(
        &self,
        h: usize,
        offset: u64,
        delta: u128,
        (u, ub): (u64, u32),
        src: &mut R,
    ) -> bool {
        let r = self.cols[h].r_lo;
        let (e_lo, e_hi) = self.table.exp_minus(delta, self.frac);
        let p_lo = ((u128::from(e_lo) * u128::from(r)) >> 63) as u64;
        let p_hi = ((u128::from(e_hi) * u128::from(r + self.r_err)) >> 63) as u64 + 1;
        if let Some(keep) = decide(u, ub, p_lo, p_hi) {
            return keep;
        }
        let full = (u128::from(u) << 64) | u128::from(src.next_u64());
        let bits = ub + 64;
        if let Some(keep) = decide((full >> (bits - 63)) as u64, 63, p_lo, p_hi) {
            return keep;
        }
        self.keep_block_slow(h, offset, full, bits, src)
    }

    /// The keep decision from big-integer enclosures, `U`'s first `bits` bits `prefix`.
    #[cold]
    #[inline(never)]
    fn keep_block_slow<R: RandomBits + ?Sized>(
        &self,
        h: usize,
        offset: u64,
        prefix: u128,
        bits: u32,
        src: &mut R,
    ) -> bool {
        let m = (BigUint::from(h as u64) << self.s) + offset;
        let x = self.x(&m);
        let w = BigUint::from(self.weight[h]);
        let kap = BigUint::from(self.kappa);
        let extra = (64 - self.kappa.leading_zeros())
            .saturating_sub(64 - self.weight[h].leading_zeros())
            + 4;
        LazyUniform::from_prefix(BigUint::from(prefix), bits).below(src, |prec| {
            let (lo, hi) = exp_minus_enclosure(&x, self.frac, prec + extra);
            let den = &w << extra;
            (&kap * lo / &den, (&kap * hi + &den - 1u32) / &den)
        })
    }

    /// A tail proposal: `T + j` if kept.
    fn tail<R: RandomBits + ?Sized>(&self, src: &mut R) -> Option<u64> {
        let big_a = BigUint::from(self.a);
        let big_t = BigUint::from(self.blocks as u64) << self.s;
        let lambda = (&big_a * &big_t) << 1u32;
        let mut ug = LazyUniform::new(src.next_u64());
        let j = geometric(&mut ug, src, &lambda, self.frac);
        let x_t = self.x(&big_t);
        let kap = BigUint::from(self.kappa);
        let w_t = BigUint::from(self.weight[self.blocks]);
        let jj = BigUint::from(j);
        let x_j = &big_a * &jj * &jj;
        // Amplification of the enclosures' errors: kappa / (2^s w_T (1 - e^-lambda)) is
        // below 2^(bits(kappa) + frac + 2 - bits(lambda)).
        let extra = 64 - self.kappa.leading_zeros()
            + (i64::from(self.frac) + 2 - lambda.bits() as i64).max(0) as u32
            + 16;
        let keep = LazyUniform::new(src.next_u64()).below(src, |prec| {
            let q = prec + extra;
            let (e1_lo, e1_hi) = exp_minus_enclosure(&x_j, self.frac, q);
            let (e2_lo, e2_hi) = exp_minus_enclosure(&x_t, self.frac, q);
            let (e3_lo, e3_hi) = exp_minus_enclosure(&lambda, self.frac, q);
            let one = BigUint::from(1u32) << q;
            // p 2^prec = e1 e2 kappa 2^prec / (2^(q + s) w_T dd), with e1, e2, and
            // dd = 2^q (1 - e^-lambda) in [one - e3_hi, one - e3_lo], all in units of 2^-q.
            let num = |e1: &BigUint, e2: &BigUint| e1 * e2 * (&kap << prec);
            let scale = &w_t << (self.s + q);
            let lo = num(&e1_lo, &e2_lo) / (&scale * (&one - &e3_lo));
            let dd_lo = &one - &e3_hi;
            let hi = if dd_lo.bits() == 0 {
                BigUint::from(1u32) << prec
            } else {
                let den = &scale * dd_lo;
                (num(&e1_hi, &e2_hi) + &den - 1u32) / den
            };
            (lo, hi)
        });
        keep.then(|| ((self.blocks as u64) << self.s).saturating_add(j))
    }
}

/// The largest `j >= 0` with `U < e^-(lambda j)`, `lambda = num / 2^frac`: a geometric of
/// ratio `e^-lambda`, exactly (a search from a float guess; every step a lazy comparison).
fn geometric<R: RandomBits + ?Sized>(
    u: &mut LazyUniform,
    src: &mut R,
    lambda: &BigUint,
    frac: u32,
) -> u64 {
    let below = |j: u64, u: &mut LazyUniform, src: &mut R| {
        let x = lambda * BigUint::from(j);
        u.below(src, |prec| exp_minus_enclosure(&x, frac, prec))
    };
    let lambda_f = lambda_f64(lambda, frac);
    let guess = (-u.estimate().ln() / lambda_f).clamp(0.0, (1u64 << 62) as f64) as u64;
    // Bracket: below(lo) holds, below(hi) fails.
    let (mut lo, mut hi);
    if guess == 0 || below(guess, u, src) {
        lo = guess;
        let mut step = 1u64;
        loop {
            let c = lo.saturating_add(step);
            if c == u64::MAX || !below(c, u, src) {
                hi = c;
                break;
            }
            lo = c;
            step = step.saturating_mul(2);
        }
    } else {
        hi = guess;
        let mut step = 1u64;
        loop {
            let c = guess.saturating_sub(step);
            if c == 0 || below(c, u, src) {
                lo = c;
                break;
            }
            hi = c;
            step = step.saturating_mul(2);
        }
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if below(mid, u, src) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

fn lambda_f64(lambda: &BigUint, frac: u32) -> f64 {
    let bits = lambda.bits() as i64;
    let keep = (bits - 60).max(0) as u32;
    let top = (lambda >> keep)
        .to_u64_digits()
        .first()
        .copied()
        .unwrap_or(0);
    top as f64 * (f64::from(keep) - f64::from(frac)).exp2()
}

/// `ceil(a b / 2^k)`.
fn ceil_mul(a: &BigUint, b: &BigUint, k: u32) -> BigUint {
    shr_ceil(&(a * b), k)
}

fn to_u64(v: &BigUint) -> Result<u64> {
    let d = v.to_u64_digits();
    match d.len() {
        0 => Ok(0),
        1 => Ok(d[0]),
        _ => Err(Error::Numerical(
            "discrete Gaussian: a table value overflows 64 bits".into(),
        )),
    }
}

/// Vose's alias table on integer weights summing to `cols 2^16` exactly: column `i` keeps
/// itself when a 16-bit coin is below `thr[i]`, else goes to `alias[i]`; category `k` then
/// has probability `weight[k] / (cols 2^16)` exactly.
fn alias_table(weight: &[u64], cols: usize) -> Result<(Vec<u32>, Vec<u16>)> {
    let full = 1u64 << COIN_BITS;
    let mut rem: Vec<u64> = weight.to_vec();
    rem.resize(cols, 0);
    if rem.iter().sum::<u64>() != (cols as u64) << COIN_BITS || weight.len() > cols {
        return Err(Error::Numerical(
            "discrete Gaussian: the alias weights do not fill the table".into(),
        ));
    }
    let mut thr = vec![full as u32; cols];
    let mut alias: Vec<u16> = (0..cols as u16).collect();
    let mut keep_all = vec![true; cols];
    let (mut small, mut large): (Vec<usize>, Vec<usize>) = (0..cols).partition(|&i| rem[i] < full);
    while let (Some(s), Some(&l)) = (small.pop(), large.last()) {
        thr[s] = rem[s] as u32;
        alias[s] = l as u16;
        keep_all[s] = false;
        rem[l] -= full - rem[s];
        if rem[l] < full {
            large.pop();
            small.push(l);
        }
    }
    // What is left has exactly `full` (the sum is invariant): it always keeps itself.
    for i in 0..cols {
        if keep_all[i] {
            thr[i] = full as u32;
            alias[i] = i as u16;
        }
    }
    Ok((thr, alias))
}

#[cfg(test)]
mod tests;
