//! Fixed-base exponentiation `base^e mod m` for a secret exponent `e` of a fixed bit length,
//! with precomputed 4-bit window tables (Lim-Lee / "comb" style, one table per window).
//!
//! Side channels: the exponent is secret (it is encryption randomness), so
//! * each table lookup reads all 16 entries and keeps one with a mask (no secret-dependent
//!   memory address);
//! * every window multiplies by a full-size entry: digits are offset by one (the table for
//!   window `i` holds `base^((d + 1) 16^i)`), so a zero digit is not a cheap multiply by 1,
//!   and the offset `base^(sum 16^i)` is removed by one multiplication by its inverse;
//! * the multiplications and reductions are GMP's on operands of fixed limb count.
//!
//! Cost: `bits / 4` modular multiplications per exponentiation, against about `1.2 bits`
//! for square-and-multiply; tables take `bits / 4 * 16` entries.

use rug::Integer;
use rug::integer::Order;

const WINDOW: u32 = 4;
const ENTRIES: usize = 1 << WINDOW;

/// Precomputed powers of one base modulo one modulus.
pub struct FixedBase {
    modulus: Integer,
    limbs: usize,
    exp_bits: u32,
    /// `tables[i][d * limbs .. (d + 1) * limbs]` = `base^((d + 1) 16^i) mod m`, little-endian limbs.
    tables: Vec<Vec<u64>>,
    /// `base^(-sum_i 16^i) mod m`.
    correction: Integer,
}

impl std::fmt::Debug for FixedBase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "FixedBase({} windows, {} limbs)",
            self.tables.len(),
            self.limbs
        )
    }
}

fn limbs_of(x: &Integer, limbs: usize) -> Vec<u64> {
    let mut v = x.to_digits::<u64>(Order::Lsf);
    v.resize(limbs, 0);
    v
}

impl FixedBase {
    /// Tables for exponents of `exp_bits` bits (rounded up to a whole window). `None` if the
    /// base is not invertible modulo `modulus`.
    pub fn new(base: &Integer, modulus: &Integer, exp_bits: u32) -> Option<Self> {
        let windows = exp_bits.div_ceil(WINDOW) as usize;
        let limbs = (modulus.significant_bits() as usize).div_ceil(64);
        let mut b = Integer::from(base % modulus);
        let mut offset = Integer::from(1);
        let mut tables = Vec::with_capacity(windows);
        for _ in 0..windows {
            let mut t = Vec::with_capacity(ENTRIES * limbs);
            let mut acc = b.clone();
            for d in 0..ENTRIES {
                if d > 0 {
                    acc = Integer::from(&acc * &b) % modulus;
                }
                t.extend(limbs_of(&acc, limbs));
            }
            offset = Integer::from(&offset * &b) % modulus;
            b = acc; // base^(16^(i+1))
            tables.push(t);
        }
        let correction = offset.invert(modulus).ok()?;
        Some(Self {
            modulus: modulus.clone(),
            limbs,
            exp_bits: windows as u32 * WINDOW,
            tables,
            correction,
        })
    }

    /// Bits of exponent the tables cover.
    #[cfg(test)]
    pub(crate) fn exp_bits(&self) -> u32 {
        self.exp_bits
    }

    /// Bytes of exponent [`pow`](Self::pow) reads.
    pub(crate) fn exp_bytes(&self) -> usize {
        (self.exp_bits as usize).div_ceil(8)
    }

    /// The tables (window-major, 16 entries each) and the correction as little-endian
    /// 32-bit words, `words` per number (at least the modulus's size): the GPU's layout.
    pub(crate) fn to_words(&self, words: usize) -> (Vec<u32>, Vec<u32>) {
        let split = |limbs: &[u64]| -> Vec<u32> {
            let mut v: Vec<u32> = limbs
                .iter()
                .flat_map(|&l| [l as u32, (l >> 32) as u32])
                .collect();
            v.resize(words, 0);
            v
        };
        let entries = self
            .tables
            .iter()
            .flat_map(|t| t.chunks_exact(self.limbs).flat_map(split))
            .collect();
        (entries, split(&limbs_of(&self.correction, self.limbs)))
    }

    /// `base^e mod m`, `e` given as `exp_bytes()` little-endian bytes.
    pub fn pow(&self, e: &[u8]) -> Integer {
        let mut acc = self.correction.clone();
        let mut entry = vec![0u64; self.limbs];
        for (i, table) in self.tables.iter().enumerate() {
            let byte = e.get(i / 2).copied().unwrap_or(0);
            let digit = (byte >> (4 * (i % 2) as u32)) & 0x0f;
            select(table, self.limbs, digit, &mut entry);
            let x = Integer::from_digits(&entry, Order::Lsf);
            acc *= &x;
            acc %= &self.modulus;
        }
        acc
    }
}

/// `out = table[digit]`, reading every entry.
fn select(table: &[u64], limbs: usize, digit: u8, out: &mut [u64]) {
    out.iter_mut().for_each(|o| *o = 0);
    for d in 0..ENTRIES {
        let x = (d as u64) ^ u64::from(digit);
        // all ones when x == 0, else zero, without a branch
        let mask = std::hint::black_box(((x | x.wrapping_neg()) >> 63).wrapping_sub(1));
        let row = &table[d * limbs..(d + 1) * limbs];
        for (o, r) in out.iter_mut().zip(row) {
            *o |= r & mask;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::{RngCore, SeedableRng};

    #[test]
    fn matches_pow_mod() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
        // 2^127 - 1 is prime, so every nonzero base is invertible.
        let m = (Integer::from(1) << 127u32) - 1u32;
        let base = Integer::from(123456789u64);
        let fb = FixedBase::new(&base, &m, 130).expect("invertible");
        assert_eq!(fb.exp_bits(), 132);
        for _ in 0..20 {
            let mut e = vec![0u8; fb.exp_bytes()];
            rng.fill_bytes(&mut e);
            e[16] &= 0x0f; // 132 bits
            let want = base
                .clone()
                .pow_mod(&Integer::from_digits(&e, Order::Lsf), &m)
                .expect("pow");
            assert_eq!(fb.pow(&e), want);
        }
        let zero = vec![0u8; fb.exp_bytes()];
        assert_eq!(fb.pow(&zero), 1);
        assert!(FixedBase::new(&Integer::from(0), &m, 64).is_none());
    }
}
