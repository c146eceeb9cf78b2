//! The cooperative product's arithmetic on the CPU: `-m^-1 mod R`, and the twin of the
//! shader's steps ([`cpu_mul`]: the same columns, carries and masked subtraction).

use crate::montgomery::numbers::Modulus;

/// `-m^-1 mod 2^(32 W)` (W = the modulus' words), by Newton's iteration on whole numbers:
/// the inverse's correct low bits double each step from the first word's.
pub(crate) fn neg_inverse(m: &[u32]) -> Vec<u32> {
    let w = m.len();
    // m^-1 mod 2^32: five steps from 1 bit (m is odd).
    let mut inv0 = 1u32;
    for _ in 0..5 {
        inv0 = inv0.wrapping_mul(2u32.wrapping_sub(m[0].wrapping_mul(inv0)));
    }
    let mut inv = vec![0u32; w];
    inv[0] = inv0;
    let mut bits = 32;
    while bits < 32 * w {
        // inv = inv (2 - m inv) mod R
        let t = mul_low(m, &inv);
        let two_minus = add_small(&negate(&t), 2);
        inv = mul_low(&inv, &two_minus);
        bits *= 2;
    }
    negate(&inv)
}

/// `a b mod 2^(32 W)` for `W`-word `a`, `b`.
fn mul_low(a: &[u32], b: &[u32]) -> Vec<u32> {
    let w = a.len();
    let mut out = vec![0u32; w];
    for i in 0..w {
        let mut c = 0u64;
        for j in 0..w - i {
            let v = u64::from(out[i + j]) + u64::from(a[i]) * u64::from(b[j]) + c;
            out[i + j] = v as u32;
            c = v >> 32;
        }
    }
    out
}

/// `-a mod 2^(32 W)`.
fn negate(a: &[u32]) -> Vec<u32> {
    add_small(&a.iter().map(|&x| !x).collect::<Vec<_>>(), 1)
}

/// `a + k mod 2^(32 W)`.
fn add_small(a: &[u32], k: u32) -> Vec<u32> {
    let mut c = u64::from(k);
    a.iter()
        .map(|&x| {
            let v = u64::from(x) + c;
            c = v >> 32;
            v as u32
        })
        .collect()
}

/// Column `c` of `x y` (both `W` words) plus `add`: the low and high 32-bit halves of its
/// partial products added apart, as a lane of the shader adds them.
fn column(x: &[u32], y: &[u32], c: usize, add: u32) -> (u64, u64) {
    let w = x.len();
    let (mut lo, mut hi) = (u64::from(add), 0u64);
    for i in c.saturating_sub(w - 1)..=c.min(w - 1) {
        let p = u64::from(x[i]) * u64::from(y[c - i]);
        lo += p & 0xffff_ffff;
        hi += p >> 32;
    }
    (lo, hi)
}

/// Columns into `n` limbs, carries in order (the shader's one lane); the carry out.
fn carry(cols: &[(u64, u64)], n: usize) -> (Vec<u32>, u64) {
    let mut out = Vec::with_capacity(n);
    let mut c = 0u64;
    for &(lo, hi) in &cols[..n] {
        let v = lo + c;
        out.push(v as u32);
        c = (v >> 32) + hi;
    }
    (out, c)
}

/// `x y R^-1 mod m` the shader's way.
fn montmul(m: &[u32], np: &[u32], x: &[u32], y: &[u32]) -> Vec<u32> {
    let w = m.len();
    let cols: Vec<_> = (0..2 * w).map(|c| column(x, y, c, 0)).collect();
    let (p, _) = carry(&cols, 2 * w);
    let cols: Vec<_> = (0..w).map(|c| column(&p[..w], np, c, 0)).collect();
    let (q, _) = carry(&cols, w);
    let cols: Vec<_> = (0..2 * w).map(|c| column(&q, m, c, p[c])).collect();
    let (t, top) = carry(&cols, 2 * w);
    // t[..w] is zero; (t[w..], top) < 2m: subtract m under a mask.
    let mut d = Vec::with_capacity(w);
    let mut borrow = 0u64;
    for j in 0..w {
        let v = u64::from(t[w + j])
            .wrapping_sub(u64::from(m[j]))
            .wrapping_sub(borrow);
        d.push(v as u32);
        borrow = v >> 63;
    }
    let keep = if top == 0 && borrow == 1 { u32::MAX } else { 0 };
    (0..w).map(|j| (t[w + j] & keep) | (d[j] & !keep)).collect()
}

/// `a_i b_i mod m`, the shader's steps on the CPU (the twin of `coop_mul`).
pub fn cpu_mul(m: &Modulus, a: &[u32], b: &[u32]) -> Vec<u32> {
    let w = m.words();
    let np = neg_inverse(m.value());
    a.chunks_exact(w)
        .zip(b.chunks_exact(w))
        .flat_map(|(a, b)| {
            let t = montmul(m.value(), &np, a, b);
            montmul(m.value(), &np, &t, &m.r2)
        })
        .collect()
}

/// Lanes per item.
#[cfg(feature = "gpu")]
pub(crate) const LANES: usize = 16;

#[cfg(feature = "gpu")]
/// Bytes of workgroup memory per item at `w` words: x, y, q (W each), the product (2 W)
/// and two u64 column accumulators per column of the product (2 W).
pub(crate) fn bytes_per_item(w: usize) -> usize {
    4 * (5 * w) + 16 * (2 * w)
}

#[cfg(feature = "gpu")]
/// Items per workgroup at `w` words within `limit` bytes of workgroup memory (at most
/// 64 / [`LANES`]); 0 when not even one fits.
pub(crate) fn items_per_group(w: usize, limit: usize) -> usize {
    (limit / bytes_per_item(w)).min(64 / LANES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::montgomery::cpu;
    use crate::montgomery::test_numbers::{below, modulus};
    use rand::SeedableRng;

    #[test]
    fn the_inverse_inverts() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for w in [1, 2, 5, 64] {
            let m = modulus(&mut rng, w);
            let np = neg_inverse(m.value());
            let t = add_small(&mul_low(m.value(), &np), 1);
            assert!(t.iter().all(|&x| x == 0), "m n' = -1 mod R at {w} words");
        }
    }

    #[test]
    fn the_twin_computes_the_products() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        for w in [1, 3, 8, 33] {
            let m = modulus(&mut rng, w);
            let a = below(&mut rng, &m, 9);
            let b = below(&mut rng, &m, 9);
            assert_eq!(cpu_mul(&m, &a, &b), cpu::mul(&m, &a, &b), "{w} words");
        }
    }
}
