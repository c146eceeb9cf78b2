//! The table draw four counters at a time in AVX2 registers: the same integer operations as
//! [`DyadicTables::fast_or_slow`](super::DyadicTables::fast_or_slow), lane by lane, so the
//! draws are the scalar ones bit for bit (a test compares them on random words and
//! tables, the rare slow draws included).
//!
//! Two steps differ in form, not in value: an alias table's four entries come from four
//! loads (a gather instruction was slower on the AMD EPYC measured, docs/benchmarks-history.md), and the
//! geometric part's trailing zeros (of an 11-bit value) from the exponent of its lowest set
//! bit written as a double.

use super::tables::{LOW_BITS, Prepared, Ready, SLOW};
use std::arch::x86_64::*;

/// One digit's parameters in registers.
#[derive(Clone, Copy)]
struct Digit<'a> {
    low: __m128i,
    mask: __m256i,
    slot_mask: __m256i,
    pos: __m128i,
    table: &'a [u64],
}

impl<'a> Digit<'a> {
    #[target_feature(enable = "avx2")]
    fn new(r: &Ready<'a>) -> Self {
        Digit {
            low: _mm_cvtsi64_si128(i64::from(r.low)),
            mask: _mm256_set1_epi64x(r.mask as i64),
            slot_mask: _mm256_set1_epi64x(r.table.len() as i64 - 1),
            pos: _mm_cvtsi64_si128(i64::from(r.pos)),
            table: r.table,
        }
    }

    /// The digit of four words: the slot from the bits above `low`, its own value when the
    /// bits below are under the entry's threshold, else the entry's alias.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn draw(&self, w: __m256i) -> __m256i {
        let slot = _mm256_and_si256(_mm256_srl_epi64(w, self.low), self.slot_mask);
        let s: [u64; 4] = bytemuck::cast(slot);
        let t = self.table;
        let e: __m256i = bytemuck::cast([
            t[s[0] as usize],
            t[s[1] as usize],
            t[s[2] as usize],
            t[s[3] as usize],
        ]);
        // Both sides are below 2^low <= 2^63: the signed comparison is the unsigned one.
        let below = _mm256_cmpgt_epi64(
            _mm256_and_si256(e, self.mask),
            _mm256_and_si256(w, self.mask),
        );
        _mm256_blendv_epi8(_mm256_srl_epi64(e, self.low), slot, below)
    }
}

/// The draws of `words` into `out` (the same length; a multiple of four handled here, the
/// rest by the scalar loop).
#[target_feature(enable = "avx2")]
pub(super) fn draws(p: &Prepared<'_>, words: &[[u64; 2]], out: &mut [i64]) {
    let d0 = p.digits[0].as_ref().map(|r| Digit::new(r));
    let d1 = p.digits[1].as_ref().map(|r| Digit::new(r));
    let m_lo = _mm256_set1_epi64x((p.m & 0xffff_ffff) as i64);
    let m_hi = _mm256_set1_epi64x((p.m >> 32) as i64);
    let g_mask = _mm256_set1_epi64x((1 << (LOW_BITS - 1)) - 1);
    let two52 = _mm256_set1_epi64x(0x4330_0000_0000_0000);
    let bias = _mm256_set1_epi64x(1023);
    let one = _mm256_set1_epi64x(1);
    let zero = _mm256_setzero_si256();
    let slow_v = _mm256_set1_epi64x(SLOW);
    let n4 = words.len().min(out.len()) / 4 * 4;
    let (w4, w_rest) = words.split_at(n4);
    let (o4, o_rest) = out.split_at_mut(n4);
    for (w, o) in w4.chunks_exact(4).zip(o4.chunks_exact_mut(4)) {
        let a: __m256i = bytemuck::cast([w[0], w[1]]);
        let b: __m256i = bytemuck::cast([w[2], w[3]]);
        // Lanes in the order of counters 0, 2, 1, 3.
        let w0 = _mm256_unpacklo_epi64(a, b);
        let w1 = _mm256_unpackhi_epi64(a, b);
        let g = _mm256_and_si256(_mm256_srli_epi64::<1>(w0), g_mask);
        let mut r = zero;
        if let Some(d) = &d0 {
            r = d.draw(w1);
        }
        if let Some(d) = &d1 {
            let digit = d.draw(_mm256_srli_epi64::<{ LOW_BITS as i32 }>(w0));
            r = _mm256_add_epi64(r, _mm256_sll_epi64(digit, d.pos));
        }
        // tz(g) for g != 0: the lowest set bit as a double (exact below 2^52) has exponent
        // 1023 + tz. For g = 0 the value is unused (the draw is slow).
        let low_bit = _mm256_and_si256(g, _mm256_sub_epi64(zero, g));
        let as_double = _mm256_sub_pd(
            _mm256_castsi256_pd(_mm256_or_si256(low_bit, two52)),
            _mm256_castsi256_pd(two52),
        );
        let tz = _mm256_sub_epi64(
            _mm256_srli_epi64::<52>(_mm256_castpd_si256(as_double)),
            bias,
        );
        // tz * M with M < 2^41 as two 32 x 32 -> 64-bit products (tz <= 10).
        let tm = _mm256_add_epi64(
            _mm256_mul_epu32(tz, m_lo),
            _mm256_slli_epi64::<32>(_mm256_mul_epu32(tz, m_hi)),
        );
        let x = _mm256_add_epi64(tm, r);
        let negative = _mm256_and_si256(w0, one);
        let flip = _mm256_sub_epi64(zero, negative);
        let z = _mm256_add_epi64(_mm256_xor_si256(x, flip), negative);
        let slow = _mm256_or_si256(
            _mm256_cmpeq_epi64(g, zero),
            _mm256_and_si256(flip, _mm256_cmpeq_epi64(x, zero)),
        );
        let z = _mm256_blendv_epi8(z, slow_v, slow);
        let z = _mm256_permute4x64_epi64::<0b11_01_10_00>(z);
        o.copy_from_slice(&bytemuck::cast::<__m256i, [i64; 4]>(z));
    }
    p.draws(w_rest, o_rest);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dyadic::tables::random_tables;

    /// Four lanes at a time equal the scalar draw of every counter: random words and
    /// tables of zero to two digits, words forced onto the slow cases (no geometric bit,
    /// a negative zero), lengths that leave a scalar tail.
    #[test]
    fn avx2_draws_equal_the_scalar_ones() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            eprintln!("no AVX2 on this CPU: the scalar loop is the only path");
            return;
        }
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for digits in 0..=2 {
            let mut t = random_tables(digits, 1 + next() % ((1 << 41) - 1), digits as u64);
            let mut words: Vec<[u64; 2]> = (0..4099).map(|_| [next(), next()]).collect();
            for (i, w) in words.iter_mut().enumerate() {
                match i % 7 {
                    0 => w[0] &= !0xffe, // no geometric bit: slow
                    1 => w[0] |= 0b11,   // negative, G = 0 (-0 when R = 0)
                    _ => {}
                }
            }
            for zero in [false, true] {
                if zero {
                    // Every digit draws 0 (all aliases 0, thresholds 0): R = 0, X = M G.
                    t.digits.iter_mut().for_each(|d| d.table.fill(0));
                }
                let p = t.prepared().expect("well-formed tables");
                let (mut got, mut want) = (vec![0i64; words.len()], vec![0i64; words.len()]);
                // SAFETY: the CPU has AVX2 (checked at the top).
                #[allow(unsafe_code)]
                unsafe {
                    draws(&p, &words, &mut got)
                };
                p.draws(&words, &mut want);
                let slow = want.iter().filter(|&&z| z == SLOW).count();
                assert!(slow > words.len() / 7, "{digits} digits: {slow} slow draws");
                for (i, (w, (g, e))) in words.iter().zip(got.iter().zip(&want)).enumerate() {
                    assert_eq!(g, e, "{digits} digits, zero tables {zero}, counter {i}");
                    assert_eq!(*e, t.fast_or_slow(*w, &[]), "scalar loop, counter {i}");
                }
            }
        }
    }
}
