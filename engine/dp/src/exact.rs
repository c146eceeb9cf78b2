//! Exact samplers by integer arithmetic: Bernoulli and discrete Laplace (Canonne, Kamath &
//! Steinke, "The Discrete Gaussian for Differential Privacy", NeurIPS 2020, Algorithms 1-2),
//! and the zCDP conversions. No floating-point number enters a draw: every probability is a
//! ratio of integers, and every random decision compares uniform random bits with such a
//! ratio, so the law of every output is exactly the one the privacy proof assumes and the
//! support is all of Z whatever the input. (The discrete Gaussian is
//! [`crate::dgauss::DiscreteGaussian`].)
//!
//! * [`BitReader`] reads a [`RandomBits`] source most significant bit first, and compares a
//!   lazily drawn uniform real `V` in [0, 1) with a dyadic `num / 2^k` one bit at a time
//!   (about two bits per comparison on average, whatever `k`).
//! * [`bernoulli_exp_minus`]: `Bern(exp(-num/den))` for any rational `num/den >= 0`
//!   (von Neumann's series for the fractional part, one `Bern(exp(-1))` per unit).
//! * [`DiscreteLaplace`]: `P(Z = z) = (1 - q)/(1 + q) q^|z|`, `q = exp(-1/t)`, for the
//!   rational `t = 2^k / r` (CKS Algorithm 2): `U` uniform below `2^k` kept with probability
//!   `exp(-U/2^k)`, `V` geometric with ratio `e^-1`, `Y = floor((U + 2^k V)/r)`, a sign, and
//!   `(-, 0)` rejected. A power-of-two numerator makes `U` a plain bit string and its
//!   Bernoulli a dyadic comparison, which is what makes the sampler fast.
//!
//! Statistical distance from the ideal law: zero for the Bernoulli and discrete Laplace
//! samplers (every loop ends with probability 1 and no branch is truncated; a magnitude of
//! 2^63 or more, probability below `exp(-2^13)` at the largest `t` accepted, saturates).

use super::rng::NoiseRng;
use kinsey_core::{Error, Result};

/// A source of independent uniform 64-bit words.
pub trait RandomBits {
    /// The next 64 uniform bits.
    fn next_u64(&mut self) -> u64;
}

impl RandomBits for NoiseRng {
    fn next_u64(&mut self) -> u64 {
        NoiseRng::next_u64(self)
    }
}

/// Reads a [`RandomBits`] source bit by bit (most significant first), wasting none.
#[derive(Debug)]
pub struct BitReader<'a, R: RandomBits + ?Sized> {
    src: &'a mut R,
    /// Unread bits, left-aligned.
    buf: u64,
    left: u32,
}

/// The unread bits a [`BitReader`] held, to resume reading where it stopped (a stream of
/// draws that must read the same bits whatever batches it is cut into).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Unread {
    buf: u64,
    left: u32,
}

impl<'a, R: RandomBits + ?Sized> BitReader<'a, R> {
    /// A reader with an empty buffer.
    pub fn new(src: &'a mut R) -> Self {
        Self::resume(src, Unread::default())
    }

    /// A reader that first reads the bits another one left unread from the same source.
    pub fn resume(src: &'a mut R, unread: Unread) -> Self {
        Self {
            src,
            buf: unread.buf,
            left: unread.left,
        }
    }

    /// The bits not yet read, for [`resume`](Self::resume).
    pub fn unread(&self) -> Unread {
        Unread {
            buf: self.buf,
            left: self.left,
        }
    }

    #[inline]
    fn refill(&mut self) {
        self.buf = self.src.next_u64();
        self.left = 64;
    }

    #[inline]
    fn consume(&mut self, n: u32) {
        self.buf = if n >= 64 { 0 } else { self.buf << n };
        self.left -= n;
    }

    /// `n` uniform bits as an integer, `0 <= n <= 64`.
    #[inline]
    pub fn bits(&mut self, n: u32) -> u64 {
        if n == 0 {
            return 0;
        }
        if self.left >= n {
            let v = self.buf >> (64 - n);
            self.consume(n);
            return v;
        }
        let have = self.left;
        let hi = if have == 0 {
            0
        } else {
            self.buf >> (64 - have)
        };
        self.refill();
        let need = n - have;
        let lo = self.buf >> (64 - need);
        self.consume(need);
        if have == 0 { lo } else { (hi << need) | lo }
    }

    /// `n <= 128` uniform bits.
    #[inline]
    pub(crate) fn bits128(&mut self, n: u32) -> u128 {
        if n <= 64 {
            return u128::from(self.bits(n));
        }
        let hi = u128::from(self.bits(n - 64));
        (hi << 64) | u128::from(self.bits(64))
    }

    /// One fair bit.
    #[inline]
    pub fn bit(&mut self) -> bool {
        self.bits(1) == 1
    }

    /// Compare the next `width <= 64` bits of a lazily drawn `V` with the `width`-bit number
    /// `t`, reading bits only up to the first one where they differ (all `width` when equal).
    #[inline]
    pub(crate) fn compare_bits(&mut self, t: u64, width: u32) -> std::cmp::Ordering {
        let mut rem = width;
        while rem > 0 {
            if self.left == 0 {
                self.refill();
            }
            let c = rem.min(self.left);
            let r = self.buf >> (64 - c);
            let tc = if c == 64 {
                t
            } else {
                (t >> (rem - c)) & ((1u64 << c) - 1)
            };
            if r != tc {
                // The highest differing bit decides; read up to and including it.
                let first = 63 - (r ^ tc).leading_zeros();
                self.consume(c - first);
                return r.cmp(&tc);
            }
            self.consume(c);
            rem -= c;
        }
        std::cmp::Ordering::Equal
    }

    /// Is a uniform real `V` in [0, 1), drawn lazily, below `num / 2^k`? (`k <= 128`.)
    /// Bits are read only up to the first one where `V` and `num / 2^k` differ.
    pub(crate) fn below_dyadic(&mut self, num: u128, k: u32) -> bool {
        if k < 128 && num >> k != 0 {
            return true; // num / 2^k >= 1
        }
        let mut rem = k;
        while rem > 0 {
            let c = rem.min(64);
            let t = (num >> (rem - c)) as u64 & if c == 64 { u64::MAX } else { (1u64 << c) - 1 };
            match self.compare_bits(t, c) {
                std::cmp::Ordering::Less => return true,
                std::cmp::Ordering::Greater => return false,
                std::cmp::Ordering::Equal => rem -= c,
            }
        }
        false // V agrees with num / 2^k on all k bits, so V >= num / 2^k
    }

    /// [`below_dyadic`](Self::below_dyadic) for `num < 2^k`, `k <= 64` (the hot path).
    #[inline]
    pub(crate) fn below_dyadic64(&mut self, num: u64, k: u32) -> bool {
        self.compare_bits(num, k) == std::cmp::Ordering::Less
    }

    /// `Bern(1 / m)` for `m >= 1`: is a lazily drawn `V` below `1/m`? The binary expansion of
    /// `1/m` is produced 64 bits at a time by long division (the first chunk from a table
    /// for small m), so a draw reads about two bits.
    #[inline(always)]
    pub(crate) fn bernoulli_recip(&mut self, m: u64) -> bool {
        if m <= 1 {
            return true;
        }
        // 1/m = 0.t1 t2 ... in base 2^64: t1 = floor(2^64 / m) (exact for m not a power of
        // two; for m = 2^j the expansion is t1 = 2^(64 - j) followed by zeros).
        let t = if (m as usize) < RECIP.len() {
            RECIP[m as usize]
        } else if m.is_power_of_two() {
            1u64 << (64 - m.trailing_zeros())
        } else {
            u64::MAX / m
        };
        match self.compare_bits(t, 64) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Greater => false,
            std::cmp::Ordering::Equal => self.recip_tail(m),
        }
    }

    /// The rest of `Bern(1/m)` once the first 64 bits of `V` equal `t1` (probability 2^-64).
    #[cold]
    fn recip_tail(&mut self, m: u64) -> bool {
        if m.is_power_of_two() {
            return false; // 1/m = t1 exactly, and V >= t1
        }
        let m128 = u128::from(m);
        let mut rem = (u128::from(u64::MAX % m) + 1) % m128;
        loop {
            let wide = rem << 64;
            let t = (wide / m128) as u64;
            rem = wide % m128;
            match self.compare_bits(t, 64) {
                std::cmp::Ordering::Less => return true,
                std::cmp::Ordering::Greater => return false,
                std::cmp::Ordering::Equal => {}
            }
        }
    }

    /// Uniform integer in `[0, n)`, `n >= 1`, by rejection (no modulo bias).
    pub(crate) fn uniform_below(&mut self, n: u128) -> u128 {
        debug_assert!(n >= 1);
        if n <= 1 {
            return 0;
        }
        let k = 128 - (n - 1).leading_zeros();
        loop {
            let x = self.bits128(k);
            if x < n {
                return x;
            }
        }
    }

    /// `Bern(num / den)` for `0 <= num <= den`, `den >= 1`.
    pub(crate) fn bernoulli(&mut self, num: u128, den: u128) -> bool {
        if num >= den {
            return true;
        }
        if den.is_power_of_two() {
            self.below_dyadic(num, den.trailing_zeros())
        } else {
            self.uniform_below(den) < num
        }
    }
}

/// `Bern(exp(-num/den))` for `0 <= num <= den` (von Neumann; CKS Algorithm 1, gamma <= 1).
pub(crate) fn bernoulli_exp_minus_unit<R: RandomBits + ?Sized>(
    bits: &mut BitReader<'_, R>,
    num: u128,
    den: u128,
) -> bool {
    let mut k: u128 = 1;
    // A_k ~ Bern(gamma / k) = Bern(gamma) and Bern(1 / k), independent.
    while bits.bernoulli(1, k) && bits.bernoulli(num, den) {
        k += 1;
    }
    k % 2 == 1
}

/// First 64-bit digit of `1/m` in base `2^64` for small `m` (`floor(2^64 / m)`, and
/// `2^(64 - j)` for `m = 2^j`); entries 0 and 1 are unused.
const RECIP: [u64; 32] = {
    let mut t = [0u64; 32];
    let mut m = 2;
    while m < 32 {
        t[m] = if (m as u64).is_power_of_two() {
            1u64 << (64 - (m as u64).trailing_zeros())
        } else {
            u64::MAX / m as u64
        };
        m += 1;
    }
    t
};

/// `Bern(exp(-gamma))` for `0 <= gamma <= 1` given a `Bern(gamma)` draw (von Neumann; CKS
/// Algorithm 1): `A_j ~ Bern(1 / j) and Bern(gamma)`, independent, until one fails; the
/// parity of the failing index. Every exponential Bernoulli with a dyadic or big-integer
/// gamma is this loop with its own comparison.
#[inline]
pub(crate) fn bernoulli_exp_minus_with<R: RandomBits + ?Sized>(
    bits: &mut BitReader<'_, R>,
    mut gamma: impl FnMut(&mut BitReader<'_, R>) -> bool,
) -> bool {
    let mut j: u64 = 1; // Bern(1/1) = 1
    loop {
        if !(bits.bernoulli_recip(j) && gamma(bits)) {
            return j % 2 == 1;
        }
        j += 1;
    }
}

/// `Bern(exp(-u / 2^k))` for `u < 2^k`, `k <= 64`: von Neumann with dyadic comparisons.
#[inline]
fn bernoulli_exp_minus_dyadic<R: RandomBits + ?Sized>(
    bits: &mut BitReader<'_, R>,
    u: u64,
    k: u32,
) -> bool {
    bernoulli_exp_minus_with(bits, |b| b.below_dyadic64(u, k))
}

/// [`bernoulli_exp_minus_dyadic`] for `u < 2^k`, `k <= 128`.
fn bernoulli_exp_minus_dyadic128<R: RandomBits + ?Sized>(
    bits: &mut BitReader<'_, R>,
    u: u128,
    k: u32,
) -> bool {
    bernoulli_exp_minus_with(bits, |b| b.below_dyadic(u, k))
}

/// `Bern(exp(-1))` (von Neumann with gamma = 1: `A_j = Bern(1 / j)`).
#[inline]
pub(crate) fn bernoulli_exp_minus_one<R: RandomBits + ?Sized>(bits: &mut BitReader<'_, R>) -> bool {
    let mut j: u64 = 2;
    while bits.bernoulli_recip(j) {
        j += 1;
    }
    j % 2 == 1
}

/// `Bern(exp(-num/den))` for any `num / den >= 0`, `den >= 1` (CKS Algorithm 1): one
/// `Bern(exp(-1))` per whole unit (stopping at the first failure, so about 1.6 draws
/// whatever `num / den`), then the fractional part.
pub fn bernoulli_exp_minus<R: RandomBits + ?Sized>(
    bits: &mut BitReader<'_, R>,
    num: u128,
    den: u128,
) -> bool {
    let whole = num / den;
    let mut i: u128 = 0;
    while i < whole {
        if !bernoulli_exp_minus_unit(bits, 1, 1) {
            return false;
        }
        i += 1;
    }
    bernoulli_exp_minus_unit(bits, num % den, den)
}

/// The inputs every integer-noise calibration takes: `epsilon` finite and positive, the
/// integer sensitivity in `1 ..= 2^50`.
pub(crate) fn check_law_inputs(integer_sensitivity: u64, epsilon: f64) -> Result<()> {
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(Error::param(
            "epsilon",
            format!("must be finite and > 0, got {epsilon}"),
        ));
    }
    if integer_sensitivity == 0 || integer_sensitivity >= 1 << 50 {
        return Err(Error::param(
            "sensitivity",
            format!("integer sensitivity {integer_sensitivity} outside 1 ..= 2^50"),
        ));
    }
    Ok(())
}

/// The discrete Laplace law with parameter `t = 2^k / r`:
/// `P(Z = z) = (1 - q)/(1 + q) q^|z|`, `q = exp(-r / 2^k)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiscreteLaplace {
    /// Numerator exponent: `t = 2^k / r`.
    pub k: u32,
    /// Denominator: `t = 2^k / r`.
    pub r: u64,
}

/// Bits of resolution of `r` when `t` is rounded up to the form `2^k / r`: the scale is at
/// most a factor `1 + 2^-12` above the one asked for.
const R_BITS: u32 = 13;

impl DiscreteLaplace {
    /// The smallest `t = 2^k / r` (with `r` of 13 bits) such that `integer_sensitivity / t
    /// <= epsilon` exactly: `epsilon 2^k >= integer_sensitivity * r`, compared without
    /// rounding. The resulting mechanism on integer queries of L1 sensitivity
    /// `integer_sensitivity` is `epsilon`-DP.
    pub fn for_sensitivity(integer_sensitivity: u64, epsilon: f64) -> Result<Self> {
        Self::calibrate(integer_sensitivity, epsilon, 62, R_BITS)
    }

    /// [`for_sensitivity`](Self::for_sensitivity) for scales up to `2^87` (`k <= 100`), for
    /// draws by [`sample_wide`](Self::sample_wide).
    pub fn for_sensitivity_wide(integer_sensitivity: u64, epsilon: f64) -> Result<Self> {
        Self::calibrate(integer_sensitivity, epsilon, 100, R_BITS)
    }

    /// [`for_sensitivity_wide`](Self::for_sensitivity_wide) with `r` of 36 bits: the scale
    /// at most a factor `1 + 2^-35` above `integer_sensitivity / epsilon` (for one-off
    /// releases, where no GPU twin needs a 13-bit `r`), for `t` up to `2^64`.
    pub fn for_sensitivity_precise(integer_sensitivity: u64, epsilon: f64) -> Result<Self> {
        Self::calibrate(integer_sensitivity, epsilon, 100, 36)
    }

    fn calibrate(integer_sensitivity: u64, epsilon: f64, max_k: i64, r_bits: u32) -> Result<Self> {
        check_law_inputs(integer_sensitivity, epsilon)?;
        let t = integer_sensitivity as f64 / epsilon;
        // k with 2^k / t in [2^(r_bits - 1), 2^r_bits).
        let k = t.log2().floor() as i64 + i64::from(r_bits);
        if !(1..=max_k).contains(&k) {
            return Err(Error::param(
                "epsilon",
                format!(
                    "noise parameter t = {t:e} (sensitivity {integer_sensitivity} / epsilon \
                     {epsilon:e}) is outside what the exact sampler supports (2^-{} to 2^{})",
                    r_bits - 1,
                    max_k - i64::from(r_bits)
                ),
            ));
        }
        let k = k as u32;
        let two_k = (k as f64).exp2();
        let mut r = ((two_k / t).floor() as u64).max(1);
        // Exact check: Delta r <= eps 2^k, i.e. Delta r <= floor(eps 2^k), in integers.
        // eps 2^k is exact (a power-of-two scaling); its floor is an integer below 2^120.
        let cap = (epsilon * two_k).floor() as u128;
        let need = |r: u64| u128::from(integer_sensitivity) * u128::from(r);
        while r > 1 && need(r) > cap {
            r -= 1;
        }
        if need(r) > cap {
            return Err(Error::param(
                "epsilon",
                format!("cannot calibrate the discrete Laplace for epsilon {epsilon:e}"),
            ));
        }
        Ok(Self { k, r })
    }

    /// The parameter `t = 2^k / r` (in integer steps).
    pub fn t(&self) -> f64 {
        (self.k as f64).exp2() / self.r as f64
    }

    /// Privacy map: epsilon for integer L1 sensitivity `d`, `d r / 2^k`.
    pub(crate) fn epsilon_for(&self, d: u64) -> f64 {
        d as f64 * self.r as f64 / (self.k as f64).exp2()
    }

    /// Standard deviation `sqrt(2 q) / (1 - q)`.
    pub fn std_dev(&self) -> f64 {
        let q = (-1.0 / self.t()).exp();
        (2.0 * q).sqrt() / (1.0 - q)
    }

    /// One draw.
    #[inline]
    pub fn sample<R: RandomBits + ?Sized>(&self, src: &mut R) -> i64 {
        let mut bits = BitReader::new(src);
        self.sample_bits(&mut bits)
    }

    /// One draw as an `i128`, for any `k <= 100` ([`for_sensitivity_wide`](Self::for_sensitivity_wide));
    /// the same draws as [`sample`](Self::sample) where both apply.
    pub fn sample_wide<R: RandomBits + ?Sized>(&self, src: &mut R) -> i128 {
        let mut bits = BitReader::new(src);
        loop {
            let u = bits.bits128(self.k);
            if !bernoulli_exp_minus_dyadic128(&mut bits, u, self.k) {
                continue;
            }
            let mut v: u128 = 0;
            while bernoulli_exp_minus_one(&mut bits) {
                v += 1;
            }
            // A V past 2^(127 - k) (probability below exp(-2^27)) saturates.
            let y = if v < 1u128 << (127 - self.k) {
                ((v << self.k) | u) / u128::from(self.r)
            } else {
                u128::MAX
            };
            let negative = bits.bit();
            if negative && y == 0 {
                continue;
            }
            let y = i128::try_from(y).unwrap_or(i128::MAX);
            return if negative { -y } else { y };
        }
    }

    /// One draw from a bit reader.
    pub(crate) fn sample_bits<R: RandomBits + ?Sized>(&self, bits: &mut BitReader<'_, R>) -> i64 {
        loop {
            let u = bits.bits(self.k);
            if !bernoulli_exp_minus_dyadic(bits, u, self.k) {
                continue;
            }
            let mut v: u64 = 0;
            while bernoulli_exp_minus_one(bits) {
                v += 1;
            }
            let y = if v < 1u64 << (63 - self.k) {
                ((v << self.k) | u) / self.r
            } else {
                let wide = (u128::from(v) << self.k) | u128::from(u);
                u64::try_from(wide / u128::from(self.r)).unwrap_or(u64::MAX)
            };
            let negative = bits.bit();
            if negative && y == 0 {
                continue;
            }
            // |Y| >= 2^63 has probability below exp(-2^13): saturate rather than wrap.
            let y = i64::try_from(y).unwrap_or(i64::MAX);
            return if negative { -y } else { y };
        }
    }
}

/// The smallest epsilon (to a relative 1e-9, rounded up) at which a rho-zCDP mechanism is
/// (epsilon, delta)-DP by [`zcdp_delta`]: the (epsilon, delta) a zCDP release states.
pub fn zcdp_epsilon(rho: f64, delta: f64) -> Result<f64> {
    if !(rho.is_finite() && rho > 0.0) {
        return Err(Error::param(
            "rho",
            format!("must be finite and > 0, got {rho}"),
        ));
    }
    if !(delta > 0.0 && delta < 1.0) {
        return Err(Error::param(
            "delta",
            format!("must be in (0, 1), got {delta}"),
        ));
    }
    let (mut lo, mut hi) = (0.0f64, rho + 2.0 * (rho * (1.0 / delta).ln()).sqrt() + 1.0);
    while zcdp_delta(rho, hi) > delta {
        hi *= 2.0;
    }
    while hi - lo > 1e-9 * hi {
        let mid = 0.5 * (lo + hi);
        if zcdp_delta(rho, mid) <= delta {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

/// The smallest delta of a rho-zCDP mechanism at `epsilon` (Canonne, Kamath & Steinke 2020,
/// Corollary 13): `inf_{alpha > 1} exp((alpha - 1)(alpha rho - eps)) / (alpha - 1)
/// (1 - 1/alpha)^alpha`, minimised numerically over alpha (any alpha gives a valid bound).
pub fn zcdp_delta(rho: f64, epsilon: f64) -> f64 {
    if rho <= 0.0 {
        return 0.0;
    }
    let f = |alpha: f64| -> f64 {
        ((alpha - 1.0) * (alpha * rho - epsilon) + alpha * (1.0 - 1.0 / alpha).ln()
            - (alpha - 1.0).ln())
        .exp()
    };
    // Golden-section search on log(alpha - 1); the function is unimodal there.
    let (mut lo, mut hi) = (-20.0f64, 20.0f64);
    let g = |x: f64| f(1.0 + x.exp());
    let phi = 0.5 * (5f64.sqrt() - 1.0);
    for _ in 0..200 {
        let m1 = hi - phi * (hi - lo);
        let m2 = lo + phi * (hi - lo);
        if g(m1) < g(m2) {
            hi = m2;
        } else {
            lo = m1;
        }
    }
    g(0.5 * (lo + hi)).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stattest::{ALPHA, chi_square_test};

    /// Counts of draws in [-c, c] plus the two tails.
    fn histogram(draws: &[i64], c: i64) -> Vec<u64> {
        let mut h = vec![0u64; (2 * c + 3) as usize];
        for &z in draws {
            h[(z.clamp(-c - 1, c + 1) + c + 1) as usize] += 1;
        }
        h
    }

    fn expected(pmf: impl Fn(i64) -> f64, c: i64, n: usize) -> Vec<f64> {
        let mut p: Vec<f64> = (-c..=c).map(&pmf).collect();
        let tail = ((1.0 - p.iter().sum::<f64>()) / 2.0).max(0.0);
        p.insert(0, tail);
        p.push(tail);
        p.iter().map(|x| x * n as f64).collect()
    }

    fn laplace_pmf(t: f64) -> impl Fn(i64) -> f64 {
        let q = (-1.0 / t).exp();
        move |z| (1.0 - q) / (1.0 + q) * q.powi(z.unsigned_abs() as i32)
    }

    #[test]
    fn bit_reader_counts_bits_and_compares_dyadics_exactly() {
        let mut rng = NoiseRng::from_seed_quiet(3);
        let mut b = BitReader::new(&mut rng);
        // P(V < 3/8) = 3/8 exactly: 80k draws within 5 sigma.
        let hits = (0..80_000).filter(|_| b.below_dyadic(3, 3)).count() as f64;
        assert!((hits / 80_000.0 - 0.375).abs() < 5.0 * (0.375f64 * 0.625 / 80_000.0).sqrt());
        for _ in 0..1000 {
            assert!(b.uniform_below(7) < 7);
            assert!(b.bits(5) < 32);
        }
        assert!(b.below_dyadic(8, 3), "num/2^k >= 1 is certain");
        assert!(!b.below_dyadic(0, 64), "0 is never above V");
    }

    #[test]
    fn bernoulli_exp_minus_has_the_right_mean() {
        let mut rng = NoiseRng::from_seed_quiet(4);
        let mut b = BitReader::new(&mut rng);
        for (num, den) in [(1u128, 3u128), (5, 2), (0, 1), (7, 7)] {
            let p = (-(num as f64) / den as f64).exp();
            let n = 60_000;
            let hits = (0..n)
                .filter(|_| bernoulli_exp_minus(&mut b, num, den))
                .count();
            let sd = (p * (1.0 - p) / n as f64).sqrt().max(1e-9);
            assert!(
                (hits as f64 / n as f64 - p).abs() < 5.0 * sd + 1e-12,
                "{num}/{den}"
            );
        }
    }

    /// The discrete Laplace fits its law (chi-square, alpha = 1e-6) and the same test rejects
    /// a law whose parameter is 30% too small.
    #[test]
    fn discrete_laplace_fits_and_power_check() {
        let dl = DiscreteLaplace::for_sensitivity(1, 1.0 / 3.0).expect("ok");
        assert!((dl.t() / 3.0 - 1.0).abs() < 2.5e-4 && dl.t() >= 3.0);
        let mut rng = NoiseRng::from_seed_quiet(5);
        let n = 200_000;
        let z: Vec<i64> = (0..n).map(|_| dl.sample(&mut rng)).collect();
        let exp = expected(laplace_pmf(dl.t()), 15, n);
        let (_, p) = chi_square_test(&histogram(&z, 15), &exp);
        assert!(p > ALPHA, "p = {p}");
        let weak = DiscreteLaplace::for_sensitivity(1, 1.0 / (3.0 * 0.7)).expect("ok");
        let z: Vec<i64> = (0..n).map(|_| weak.sample(&mut rng)).collect();
        let (_, p) = chi_square_test(&histogram(&z, 15), &exp);
        assert!(p < ALPHA, "30% less noise must be rejected, p = {p}");
    }

    /// Large parameters (the grids in use put t near 2^20 .. 2^31): mean 0 and the variance
    /// `2q/(1-q)^2`, and the far tail is reached (no truncation at a few dozen scales).
    #[test]
    fn discrete_laplace_large_t_moments_and_tail() {
        let dl = DiscreteLaplace::for_sensitivity(1 << 20, 1.0).expect("ok");
        let mut rng = NoiseRng::from_seed_quiet(6);
        let n = 100_000;
        let z: Vec<f64> = (0..n).map(|_| dl.sample(&mut rng) as f64).collect();
        let mean = z.iter().sum::<f64>() / n as f64;
        let var = z.iter().map(|x| x * x).sum::<f64>() / n as f64;
        let sd = dl.std_dev();
        assert!(mean.abs() < 5.0 * sd / (n as f64).sqrt(), "mean {mean}");
        assert!(
            (var.sqrt() / sd - 1.0).abs() < 0.02,
            "sd {} vs {sd}",
            var.sqrt()
        );
        // Odd and even values both occur far out (no lattice from a float logarithm).
        let far: Vec<i64> = (0..n)
            .map(|_| dl.sample(&mut rng))
            .filter(|z| z.unsigned_abs() as f64 > 8.0 * dl.t())
            .collect();
        assert!(far.iter().any(|z| z % 2 == 0) && far.iter().any(|z| z % 2 != 0));
    }

    #[test]
    fn calibration_is_exact_and_tight() {
        for (d, eps) in [(1u64, 1.0), (1025, 0.1), (3, 7.3), (1 << 30, 1e-3)] {
            let dl = DiscreteLaplace::for_sensitivity(d, eps).expect("ok");
            assert!(dl.epsilon_for(d) <= eps, "{d} {eps}");
            assert!(dl.epsilon_for(d) > eps * (1.0 - 3e-4), "{d} {eps}");
        }
        assert!(DiscreteLaplace::for_sensitivity(1, 0.0).is_err());
        assert!(DiscreteLaplace::for_sensitivity(1, f64::NAN).is_err());
        assert!(DiscreteLaplace::for_sensitivity(1, 1e308).is_err());
        assert!(DiscreteLaplace::for_sensitivity(0, 1.0).is_err());
    }

    #[test]
    fn zcdp_conversion_matches_known_values() {
        // rho = 0.5: the classic bound rho + 2 sqrt(rho ln(1/delta)) at delta = 1e-6 is
        // eps = 5.757; the tight conversion gives a smaller delta there.
        let d = zcdp_delta(0.5, 0.5 + 2.0 * (0.5f64 * 1e6f64.ln()).sqrt());
        assert!(d < 1e-6 && d > 1e-9, "{d}");
        assert_eq!(zcdp_delta(0.0, 1.0), 0.0);
        assert!(zcdp_delta(0.5, 1.0) > zcdp_delta(0.5, 2.0));
        let e = zcdp_epsilon(0.5, 1e-6).expect("valid");
        assert!(
            zcdp_delta(0.5, e) <= 1e-6 && zcdp_delta(0.5, e * 0.999) > 1e-6,
            "{e}"
        );
        assert!(e < 0.5 + 2.0 * (0.5f64 * 1e6f64.ln()).sqrt(), "{e}");
        assert!(zcdp_epsilon(0.0, 1e-6).is_err() && zcdp_epsilon(0.5, 0.0).is_err());
    }
}
