//! Randomized response's coin: `Bern(1 / (1 + e^eps))`, exactly, at every accepted epsilon.
//!
//! With `q = e^-eps`, `1 / (1 + e^eps) = q / (1 + q)`, and this loop has exactly that law:
//! draw a fair bit; on 0 answer "keep"; on 1 draw `Bern(q)` and answer "flip" on success,
//! otherwise start again (`P = q/2 + (1 - q)/2 P`, so `P = q / (1 + q)`). `Bern(e^-eps)` is
//! CKS Algorithm 1 on the exact rational value of the f64 epsilon (a dyadic `m / 2^k`): one
//! `Bern(e^-1)` per unit, von Neumann's series for the fraction, every comparison between
//! uniform bits and an integer ratio. No float enters a draw, so the flip probability is
//! `1 / (1 + e^eps)` to the last bit and the mechanism is eps-DP exactly.
//!
//! What it replaced: a 53-bit uniform compared with `floor(p 2^53)`. The floor made the true
//! epsilon larger than the stated one (36.044 at eps = 36), and for eps > 36.74 the
//! threshold was 0: no bit was ever flipped, and the "private" series was the input.

use crate::exact::{BitReader, RandomBits, bernoulli_exp_minus_one, bernoulli_exp_minus_unit};
use kinsey_core::{Result, check_epsilon};

/// The exact coin of randomized response at one epsilon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlipCoin {
    /// `floor(eps)`: one `Bern(e^-1)` each.
    whole: u64,
    /// The fraction of epsilon, `frac / 2^bits` (exact).
    frac: u128,
    bits: u32,
}

impl FlipCoin {
    /// The coin for `epsilon` (checked: `[1e-6, 100]`), read as the exact dyadic rational the
    /// f64 is.
    pub fn new(epsilon: f64) -> Result<Self> {
        check_epsilon("epsilon", epsilon)?;
        // epsilon = m 2^e with an integer m < 2^53; e >= -72 in the accepted range.
        let raw = epsilon.to_bits();
        let exp = ((raw >> 52) & 0x7ff) as i32;
        let mant = u128::from(raw & ((1u64 << 52) - 1) | (1u64 << 52));
        let e = exp - 1075;
        let (num, bits) = if e >= 0 {
            (mant << e, 0u32)
        } else {
            (mant, (-e) as u32)
        };
        let (whole, frac) = if bits == 0 {
            (num, 0)
        } else {
            (num >> bits, num & ((1u128 << bits) - 1))
        };
        Ok(Self {
            whole: whole as u64,
            frac,
            bits,
        })
    }

    /// The flip probability `1 / (1 + e^eps)` in f64 (for debiasing and reports; the draws
    /// do not use it).
    pub fn p(&self) -> f64 {
        let eps = self.whole as f64 + self.frac as f64 / (self.bits as f64).exp2();
        1.0 / (1.0 + eps.exp())
    }

    /// `Bern(e^-eps)`.
    fn keep_going<R: RandomBits + ?Sized>(&self, bits: &mut BitReader<'_, R>) -> bool {
        for _ in 0..self.whole {
            if !bernoulli_exp_minus_one(bits) {
                return false;
            }
        }
        self.frac == 0 || bernoulli_exp_minus_unit(bits, self.frac, 1u128 << self.bits)
    }

    /// One flip decision (true: report the other bit), reading a fresh bit reader over `src`.
    pub fn sample<R: RandomBits + ?Sized>(&self, src: &mut R) -> bool {
        let mut bits = BitReader::new(src);
        loop {
            if !bits.bit() {
                return false;
            }
            if self.keep_going(&mut bits) {
                return true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoiseRng;

    /// A source that replays a fixed bit string (most significant bit first), then ones.
    struct Script {
        words: Vec<u64>,
        at: usize,
    }

    impl Script {
        fn new(bits: &[bool]) -> Self {
            let words = bits
                .chunks(64)
                .map(|c| {
                    let mut w = u64::MAX;
                    for (i, &b) in c.iter().enumerate() {
                        if !b {
                            w &= !(1u64 << (63 - i));
                        }
                    }
                    w
                })
                .collect();
            Self { words, at: 0 }
        }
    }

    impl RandomBits for Script {
        fn next_u64(&mut self) -> u64 {
            let w = self.words.get(self.at).copied().unwrap_or(u64::MAX);
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
            let k = (0..n).filter(|_| coin.sample(&mut rng)).count() as u64;
            let p = coin.p();
            assert!(z(k, n, p).abs() < 5.3, "eps {eps}: z = {}", z(k, n, p));
            // A coin with 0.7 p: epsilon solving 1 / (1 + e^e) = 0.7 p.
            let weak = FlipCoin::new((1.0 / (0.7 * p) - 1.0).ln()).expect("ok");
            let k = (0..n).filter(|_| weak.sample(&mut rng)).count() as u64;
            assert!(z(k, n, p).abs() > 5.3, "eps {eps}: power");
        }
    }

    /// Item 3 of the second audit: above eps = 36.74 the old coin could never flip. The
    /// exact coin flips on a bit string of positive probability at every accepted epsilon,
    /// the largest included (fair bit 1, then "01" for each `Bern(e^-1)` success, then ones
    /// for the fraction's von Neumann step).
    #[test]
    fn a_flip_is_reachable_at_every_accepted_epsilon() {
        for eps in [1e-6, 1.0, 36.0, 36.75, 40.0, 99.9, 100.0] {
            let coin = FlipCoin::new(eps).expect("ok");
            let mut bits = vec![true];
            for _ in 0..coin.whole {
                bits.extend([false, true]);
            }
            assert!(coin.sample(&mut Script::new(&bits)), "eps {eps}");
            // A first bit 0 keeps the bit.
            assert!(!coin.sample(&mut Script::new(&[false])), "eps {eps}");
        }
    }

    #[test]
    fn epsilon_is_read_exactly() {
        let c = FlipCoin::new(2.5).expect("ok");
        assert_eq!((c.whole, c.frac, c.bits), (2, 1u128 << 50, 51));
        let c = FlipCoin::new(100.0).expect("ok");
        assert_eq!((c.whole, c.frac), (100, 0));
        assert!((FlipCoin::new(1.0).expect("ok").p() - 1.0 / (1.0 + 1f64.exp())).abs() < 1e-16);
        assert!(FlipCoin::new(101.0).is_err() && FlipCoin::new(0.0).is_err());
    }
}
