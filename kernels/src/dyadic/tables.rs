//! The alias tables of a dyadic discrete Laplace law and the table path of one draw (the
//! code both twins share: the CPU twin calls [`DyadicTables::fast`], the shader mirrors it).

/// The marker of a draw the table path cannot finish (no draw of the fast path is this
/// value: they are below `2^45` in magnitude).
pub const SLOW: i64 = i64::MIN;

/// Bits of word 0 below the second digit: the sign and the geometric part's first 11
/// trailing zeros.
pub const LOW_BITS: u32 = 12;

/// Most digits a law may have (the two of the counter's words and one wide word each for
/// the rest).
pub const MAX_DIGITS: usize = 2 + EXTRA_WORDS;

/// Wide words per counter: counter `id` owns wide words `2 id .. 2 id + 2`.
pub const EXTRA_WORDS: usize = 2;

/// The alias table of one digit of `R`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigitTable {
    /// Bit position of the digit in `R`.
    pub pos: u32,
    /// Precision: the digit reads the low `prec` bits of its word (64, or 52 for digit 1).
    pub prec: u32,
    /// `2^slot_bits` slots (`1..=12` bits).
    pub slot_bits: u32,
    /// Per slot, `alias << (prec - slot_bits) | threshold`.
    pub table: Vec<u64>,
}

impl DigitTable {
    /// The digit for the uniform word `w` (its low `prec` bits): the slot from the top
    /// `slot_bits` of them, the slot's own value when the rest is below its threshold, else
    /// its alias. One load, no branch on the key.
    #[inline(always)]
    pub fn draw(&self, w: u64) -> u64 {
        let low = self.prec - self.slot_bits;
        let mask = (1u64 << low) - 1;
        let slot = (w >> low) & ((1 << self.slot_bits) - 1);
        let e = self.table[slot as usize];
        if w & mask < e & mask { slot } else { e >> low }
    }
}

/// The tables of one law `Z = S (M G + R)`: the block length `M` and the digits of `R`,
/// lowest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DyadicTables {
    /// The block length `M` (below `2^41`).
    pub m: u64,
    /// The digits, lowest first (at most [`MAX_DIGITS`]).
    pub digits: Vec<DigitTable>,
}

impl DyadicTables {
    /// Checks what the GPU path relies on: at most four digits, positions below 48, 52-bit
    /// precision for digit 1 and 64 for the others, `1..=12` slot bits and full tables, and
    /// `M < 2^41`.
    pub fn check(&self) -> Result<(), crate::KernelError> {
        let bad = |what: String| Err(crate::KernelError::Input(format!("dyadic tables: {what}")));
        if self.digits.len() > MAX_DIGITS {
            return bad(format!(
                "{} digits (at most {MAX_DIGITS})",
                self.digits.len()
            ));
        }
        if self.m == 0 || self.m >= 1 << 41 {
            return bad(format!("block length {} (1 ..= 2^41 - 1)", self.m));
        }
        for (i, d) in self.digits.iter().enumerate() {
            let prec = if i == 1 { 64 - LOW_BITS } else { 64 };
            if d.prec != prec
                || !(1..=12).contains(&d.slot_bits)
                || d.pos >= 48
                || d.table.len() != 1 << d.slot_bits
            {
                return bad(format!(
                    "digit {i}: precision {}, {} slot bits, position {}, {} entries",
                    d.prec,
                    d.slot_bits,
                    d.pos,
                    d.table.len()
                ));
            }
        }
        Ok(())
    }

    /// Wide words a draw reads (digits beyond the two of the counter's words).
    pub fn extra_words(&self) -> usize {
        self.digits.len().saturating_sub(2)
    }

    /// The draw from the counter's two words and its [`extra_words`](Self::extra_words)
    /// wide words, or `None` when it needs more bits than these (then the full sampler,
    /// reading the same words first, finishes it).
    #[inline(always)]
    pub fn fast(&self, words: [u64; 2], extra: &[u64]) -> Option<i64> {
        let z = self.fast_or_slow(words, extra);
        (z != SLOW).then_some(z)
    }

    /// [`fast`](Self::fast) with [`SLOW`] for `None`, free of branches on the random bits
    /// (the sign is a fair coin: a branch on it is mispredicted every other draw).
    #[inline(always)]
    pub fn fast_or_slow(&self, words: [u64; 2], extra: &[u64]) -> i64 {
        let mut r = 0;
        if let Some(d) = self.digits.first() {
            r = d.draw(words[1]);
        }
        if let Some(d) = self.digits.get(1) {
            r += d.draw(words[0] >> LOW_BITS) << d.pos;
        }
        for (d, &w) in self.digits.iter().skip(2).zip(extra) {
            r += d.draw(w) << d.pos;
        }
        combine(words[0], r, self.m)
    }
}

/// The draw from word 0 (sign and geometric part), the digits' sum `r` and the block
/// length `m`: `S (M G + R)`, or [`SLOW`] (no geometric bit, or a negative zero).
#[inline(always)]
fn combine(w0: u64, r: u64, m: u64) -> i64 {
    let gbits = (w0 >> 1) & ((1 << (LOW_BITS - 1)) - 1);
    // x < 64 M + M < 2^48 (G's 11 bits all zero gives 64: marked slow below).
    let x = u64::from(gbits.trailing_zeros()) * m + r;
    let negative = w0 & 1;
    let z = (x ^ negative.wrapping_neg()).wrapping_add(negative) as i64;
    let slow = (gbits == 0) | ((negative == 1) & (x == 0));
    if slow { SLOW } else { z }
}

/// One digit's table with its shifts and masks worked out once, for a loop of draws.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ready<'a> {
    /// Bits below the slot (`prec - slot_bits`, at most 63).
    pub low: u32,
    /// `2^low - 1`.
    pub mask: u64,
    /// Bit position of the digit in `R`.
    pub pos: u32,
    /// `2^slot_bits` entries.
    pub table: &'a [u64],
}

impl<'a> Ready<'a> {
    /// `None` for a digit of the wrong shape ([`DyadicTables::check`]'s rules).
    fn new(d: &'a DigitTable) -> Option<Self> {
        let fits = (1..=12).contains(&d.slot_bits)
            && d.prec <= 64
            && d.slot_bits < d.prec
            && d.pos < 48
            && d.table.len() == 1 << d.slot_bits;
        fits.then(|| {
            let low = d.prec - d.slot_bits;
            Ready {
                low,
                mask: (1u64 << low) - 1,
                pos: d.pos,
                table: &d.table,
            }
        })
    }

    /// [`DigitTable::draw`], the same operations.
    #[inline(always)]
    fn draw(&self, w: u64) -> u64 {
        let slot = (w >> self.low) as usize & (self.table.len() - 1);
        let e = self.table[slot];
        if w & self.mask < e & self.mask {
            slot as u64
        } else {
            e >> self.low
        }
    }
}

/// A law of at most two digits prepared for a loop of draws.
#[derive(Debug, Clone, Copy)]
pub(super) struct Prepared<'a> {
    /// The block length `M`.
    pub m: u64,
    /// Digit 0 (from word 1) and digit 1 (from word 0's top 52 bits), where the law has them.
    pub digits: [Option<Ready<'a>>; 2],
}

impl DyadicTables {
    /// The law prepared for a loop of draws: `None` for more than two digits or tables of
    /// the wrong shape.
    pub(super) fn prepared(&self) -> Option<Prepared<'_>> {
        if self.digits.len() > 2 || self.m >= 1 << 41 {
            return None;
        }
        let mut digits = [None, None];
        for (r, d) in digits.iter_mut().zip(&self.digits) {
            *r = Some(Ready::new(d)?);
        }
        Some(Prepared { m: self.m, digits })
    }
}

impl Prepared<'_> {
    /// [`DyadicTables::fast_or_slow`] of every counter's two words into `out`.
    #[inline(always)]
    pub(super) fn draws(&self, words: &[[u64; 2]], out: &mut [i64]) {
        match self.digits {
            [None, _] => draws(self.m, [], words, out),
            [Some(a), None] => draws(self.m, [a], words, out),
            [Some(a), Some(b)] => draws(self.m, [a, b], words, out),
        }
    }
}

/// The draws of [`DyadicTables::fast_or_slow`] for `N <= 2` digits.
#[inline(always)]
fn draws<const N: usize>(m: u64, d: [Ready<'_>; N], words: &[[u64; 2]], out: &mut [i64]) {
    for (o, w) in out.iter_mut().zip(words) {
        let mut r = 0;
        if let Some(d) = d.first() {
            r = d.draw(w[1]);
        }
        if let Some(d) = d.get(1) {
            r += d.draw(w[0] >> LOW_BITS) << d.pos;
        }
        *o = combine(w[0], r, m);
    }
}

/// Tables of the right shape with random entries (the kernels do not care whether they
/// carry a law; `kinsey_dp::dyadic` tests that): `digits` digits, block `m`.
#[cfg(test)]
pub(crate) fn random_tables(digits: usize, m: u64, seed: u64) -> DyadicTables {
    use rand::{Rng, SeedableRng};
    let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let digits = (0..digits)
        .map(|i| {
            let slot_bits = r.random_range(1..=12u32);
            let prec = if i == 1 { 52 } else { 64 };
            let low = prec - slot_bits;
            DigitTable {
                pos: 12 * i as u32,
                prec,
                slot_bits,
                table: (0..1u64 << slot_bits)
                    .map(|_| {
                        let alias = r.random_range(0..1u64 << slot_bits);
                        (alias << low) | (r.random::<u64>() & ((1 << low) - 1))
                    })
                    .collect(),
            }
        })
        .collect();
    DyadicTables { m, digits }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_path_marks_what_it_cannot_finish() {
        let t = random_tables(2, 5000, 1);
        assert!(t.check().is_ok());
        assert_eq!(t.fast([0, 7], &[]), None, "geometric part past 11");
        // Tables whose every draw is digit 0: R = 0, so X = M G.
        let mut zero = t.clone();
        for d in &mut zero.digits {
            d.table.iter_mut().for_each(|e| *e = 0);
        }
        assert_eq!(zero.fast([0b10, 9], &[]), Some(0), "+0");
        assert_eq!(zero.fast([0b11, 9], &[]), None, "-0 is rejected");
        assert_eq!(
            zero.fast([0b1001, 9], &[]),
            Some(-2 * 5000),
            "G = 2, negative"
        );
        // A full slot (threshold above every draw) gives the slot itself.
        let mut own = zero.clone();
        let low = own.digits[0].prec - own.digits[0].slot_bits;
        own.digits[0]
            .table
            .iter_mut()
            .for_each(|e| *e = (1 << low) - 1);
        let top = (1u64 << own.digits[0].slot_bits) - 1;
        assert_eq!(own.fast([0b10, top << low], &[]), Some(top as i64));
        assert_eq!(
            own.fast([0b10, u64::MAX], &[]),
            Some(0),
            "at the threshold: the alias"
        );
        let mut bad = t.clone();
        bad.digits[1].prec = 64;
        assert!(bad.check().is_err());
        bad = t.clone();
        bad.m = 1 << 41;
        assert!(bad.check().is_err());
        assert!(random_tables(5, 9, 2).check().is_err());
    }
}
