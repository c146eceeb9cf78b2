//! Randomized response's coin: `Bern(1 / (1 + e^eps))`, exactly, at every accepted epsilon.
//!
//! A flip is "a uniform real `V` in [0, 1) lies below `p = 1 / (1 + e^eps)`", decided by
//! comparing `V`'s bits, drawn lazily, with `p`'s binary expansion, 64 bits at a time, up to
//! the first bit where they differ (about two bits a flip). The expansion is certified: `e^x`
//! for the exact dyadic value `x` of the f64 epsilon is enclosed by its Taylor series summed
//! twice in big-integer fixed point, once rounding every term down and once up with the tail
//! bounded ([`crate::certified::exp_enclosure`]), so `p 2^P` lies in a known interval, and
//! a word of `p` is used only where both ends agree on it. `p` is irrational (Lindemann: `e^x` is transcendental for rational
//! `x != 0`), so every word can be certified; the first four are computed once, a fifth
//! (needed with probability `2^-256`) on demand. No float enters a flip, so the flip
//! probability is `1 / (1 + e^eps)` exactly and the mechanism is eps-DP exactly.
//!
//! What it replaced: a 53-bit uniform compared with `floor(p 2^53)`. The floor made the true
//! epsilon larger than the stated one (36.044 at eps = 36), and for eps > 36.74 the
//! threshold was 0: no bit was ever flipped, and the "private" series was the input.

use crate::certified::exp_enclosure;
use crate::exact::{BitReader, RandomBits};
use kinsey_core::{Result, check_epsilon};
use num_bigint::BigUint;

/// Words of `p` computed when the coin is made.
const WORDS: usize = 4;

/// The exact coin of randomized response at one epsilon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlipCoin {
    /// Epsilon, exactly: `num / 2^bits`.
    num: u64,
    bits: u32,
    /// The first words of `p`'s binary expansion, most significant first (certified).
    words: Vec<u64>,
}

impl FlipCoin {
    /// The coin for `epsilon` (checked: `[1e-6, 100]`), read as the exact dyadic rational the
    /// f64 is.
    pub fn new(epsilon: f64) -> Result<Self> {
        check_epsilon("epsilon", epsilon)?;
        // epsilon = m 2^e with an integer m < 2^53; -72 <= e <= 1 in the accepted range.
        let raw = epsilon.to_bits();
        let exp = ((raw >> 52) & 0x7ff) as i32;
        let mant = (raw & ((1u64 << 52) - 1)) | (1u64 << 52);
        let e = exp - 1075;
        let (num, bits) = if e >= 0 {
            (mant << e, 0u32)
        } else {
            (mant, (-e) as u32)
        };
        let words = expansion(num, bits, WORDS);
        Ok(Self { num, bits, words })
    }

    /// The flip probability `1 / (1 + e^eps)` in f64 (for debiasing and reports; the flips
    /// do not use it).
    pub fn p(&self) -> f64 {
        self.words
            .iter()
            .enumerate()
            .map(|(i, &w)| w as f64 * (-64.0 * (i as f64 + 1.0)).exp2())
            .sum()
    }

    /// Word `i` of `p`'s expansion.
    fn word(&self, i: usize) -> u64 {
        match self.words.get(i) {
            Some(&w) => w,
            None => expansion(self.num, self.bits, i + 1)[i],
        }
    }

    /// One flip decision (true: report the other bit), reading a fresh bit reader over `src`.
    pub fn sample<R: RandomBits + ?Sized>(&self, src: &mut R) -> bool {
        self.sample_bits(&mut BitReader::new(src))
    }

    /// One flip decision from a bit reader: `V < p`, `V`'s bits read up to the first one
    /// that differs from `p`'s (a stream of flips reads its bits in turn, none wasted).
    pub fn sample_bits<R: RandomBits + ?Sized>(&self, bits: &mut BitReader<'_, R>) -> bool {
        let mut i = 0;
        loop {
            match bits.compare_bits(self.word(i), 64) {
                std::cmp::Ordering::Less => return true,
                std::cmp::Ordering::Greater => return false,
                std::cmp::Ordering::Equal => i += 1,
            }
        }
    }
}

/// The first `n` 64-bit words of `1 / (1 + e^x)`, `x = num / 2^bits > 0`, each certified:
/// computed with more guard bits until an enclosure of `p 2^(64 n)` pins all of them.
fn expansion(num: u64, bits: u32, n: usize) -> Vec<u64> {
    let prec = 64 * n;
    let mut guard = 128;
    loop {
        let (lo, hi) = p_enclosure(num, bits, prec + guard);
        let (lo, hi) = (lo >> guard, hi >> guard);
        if lo == hi {
            let digits = lo.to_u64_digits(); // little-endian; p < 1, so at most n words
            return (0..n)
                .map(|i| digits.get(n - 1 - i).copied().unwrap_or(0))
                .collect();
        }
        guard *= 2;
    }
}

/// `[lo, hi]` with `lo <= p 2^prec <= hi`, `p = 1 / (1 + e^x)`, `x = num / 2^bits`.
fn p_enclosure(num: u64, bits: u32, prec: usize) -> (BigUint, BigUint) {
    // e^x in fixed point with `f` fractional bits: [e_lo, e_hi] 2^-f.
    let f = prec + 64;
    let (e_lo, e_hi) = exp_enclosure(&BigUint::from(num), bits, f as u32);
    let one = BigUint::from(1u32) << f;
    let top = BigUint::from(1u32) << (prec + f);
    // p 2^prec = 2^(prec + f) / (2^f + e 2^f).
    let lo = &top / (&one + &e_hi);
    let den = &one + &e_lo;
    let hi = (&top + &den - 1u32) / &den;
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoiseRng;

    /// A source that replays a fixed bit string (most significant bit first), then `fill`.
    struct Script {
        words: Vec<u64>,
        at: usize,
        fill: u64,
    }

    impl Script {
        fn new(bits: &[bool], fill: u64) -> Self {
            let words = bits
                .chunks(64)
                .map(|c| {
                    let mut w = fill;
                    for (i, &b) in c.iter().enumerate() {
                        let m = 1u64 << (63 - i);
                        w = if b { w | m } else { w & !m };
                    }
                    w
                })
                .collect();
            Self { words, at: 0, fill }
        }
    }

    impl RandomBits for Script {
        fn next_u64(&mut self) -> u64 {
            let w = self.words.get(self.at).copied().unwrap_or(self.fill);
            self.at += 1;
            w
        }
    }

    /// z statistic of `k` successes in `n` draws of `Bern(p)`.
    fn z(k: u64, n: u64, p: f64) -> f64 {
        let n = n as f64;
        (k as f64 - n * p) / (n * p * (1.0 - p)).sqrt()
    }

    /// The flip rate is `1 / (1 + e^eps)` (|z| below 5.3, alpha about 1e-7), and the same
    /// test rejects a coin whose flip probability is 30% too small (power check).
    #[test]
    fn flip_rate_fits_and_power_check() {
        let n = 400_000u64;
        for eps in [0.05, 0.7, 2.5, 4.0] {
            let coin = FlipCoin::new(eps).expect("ok");
            let mut rng = NoiseRng::from_seed_quiet(eps.to_bits());
            let p = 1.0 / (1.0 + f64::exp(eps));
            let k = (0..n).filter(|_| coin.sample(&mut rng)).count() as u64;
            assert!(z(k, n, p).abs() < 5.3, "eps {eps}: z = {}", z(k, n, p));
            // A coin with 0.7 p: epsilon solving 1 / (1 + e^e) = 0.7 p.
            let weak = FlipCoin::new((1.0 / (0.7 * p) - 1.0).ln()).expect("ok");
            let k = (0..n).filter(|_| weak.sample(&mut rng)).count() as u64;
            assert!(z(k, n, p).abs() > 5.3, "eps {eps}: power");
        }
    }

    /// Item 3 of the second audit: above eps = 36.74 the old coin could never flip. The
    /// exact coin flips whenever `V < p`, an event of probability `p > 0` at every accepted
    /// epsilon: a `V` of 160 zero bits (then anything) is below `p >= 2^-145`.
    #[test]
    fn a_flip_is_reachable_at_every_accepted_epsilon() {
        for eps in [1e-6, 1.0, 36.0, 36.75, 40.0, 99.9, 100.0] {
            let coin = FlipCoin::new(eps).expect("ok");
            assert!(
                coin.sample(&mut Script::new(&[false; 160], u64::MAX)),
                "eps {eps}"
            );
            assert!(
                !coin.sample(&mut Script::new(&[true], 0)),
                "V >= 1/2 > p: kept"
            );
        }
    }

    /// The certified words agree with f64 where f64 has the bits, are consistent between
    /// precisions, and at the largest epsilon `p` lies in the third word.
    #[test]
    fn the_expansion_is_certified_and_consistent() {
        for eps in [1e-6, 0.3, 1.0, 2.5, 36.0, 100.0] {
            let c = FlipCoin::new(eps).expect("ok");
            let want = 1.0 / (1.0 + f64::exp(eps));
            assert!(
                (c.p() - want).abs() <= 1e-15 * want,
                "eps {eps}: {} vs {want}",
                c.p()
            );
            let longer = expansion(c.num, c.bits, 6);
            assert_eq!(&longer[..WORDS], &c.words[..], "eps {eps}");
            assert_eq!(c.word(5), longer[5]);
        }
        let c = FlipCoin::new(100.0).expect("ok");
        assert_eq!(&c.words[..2], &[0, 0]);
        assert!(c.words[2] != 0);
        assert!(FlipCoin::new(101.0).is_err() && FlipCoin::new(0.0).is_err());
    }
}
