//! CPU twin of `shaders/montgomery.wgsl`: the same 16-bit digits, the same loops in the
//! same order, items in parallel with rayon. Also the host-side constants (`R^2 mod m`)
//! and the constant-time comparison used to check inputs.

use super::{FixedTable, Modulus};
use rayon::prelude::*;

/// Words -> 16-bit digits, one per `u32` (as the shader holds them).
fn digits(words: &[u32], out: &mut [u32]) {
    for (k, &w) in words.iter().enumerate() {
        out[2 * k] = w & 0xffff;
        out[2 * k + 1] = w >> 16;
    }
}

fn words(digits: &[u32]) -> Vec<u32> {
    digits
        .chunks_exact(2)
        .map(|d| d[0] | (d[1] << 16))
        .collect()
}

/// Working registers of one item (the shader's private arrays).
struct Regs {
    x: Vec<u32>,
    y: Vec<u32>,
    z: Vec<u32>,
    t: Vec<u32>,
    md: Vec<u32>,
    n0inv: u32,
}

impl Regs {
    fn new(m: &Modulus) -> Self {
        let dig = 2 * m.words();
        let mut md = vec![0; dig];
        digits(&m.m, &mut md);
        Self {
            x: vec![0; dig],
            y: vec![0; dig],
            z: vec![0; dig],
            t: vec![0; dig + 2],
            md,
            n0inv: m.n0inv,
        }
    }

    /// The reduction half of a CIOS step: `t = (t + q m) / 2^16`.
    fn reduce_step(&mut self) {
        let dig = self.md.len();
        let t = &mut self.t;
        let q = t[0].wrapping_mul(self.n0inv) & 0xffff;
        let mut c2 = t[0].wrapping_add(q.wrapping_mul(self.md[0])) >> 16;
        for j in 1..dig {
            let s = t[j]
                .wrapping_add(q.wrapping_mul(self.md[j]))
                .wrapping_add(c2);
            t[j - 1] = s & 0xffff;
            c2 = s >> 16;
        }
        let s2 = t[dig].wrapping_add(c2);
        t[dig - 1] = s2 & 0xffff;
        t[dig] = t[dig + 1].wrapping_add(s2 >> 16);
    }

    /// `z = t - m` if `t >= m`, else `t`, as a masked select.
    fn final_subtract(&mut self) {
        let dig = self.md.len();
        let mut borrow = 0u32;
        for j in 0..dig {
            let d = self.t[j].wrapping_sub(self.md[j]).wrapping_sub(borrow);
            self.z[j] = d & 0xffff;
            borrow = (d >> 16) & 1;
        }
        let keep = borrow & (1 - self.t[dig]);
        let take = keep.wrapping_sub(1);
        for j in 0..dig {
            self.z[j] = (self.z[j] & take) | (self.t[j] & !take);
        }
    }

    /// `z = x y R^-1 mod m`.
    fn montmul(&mut self) {
        let dig = self.md.len();
        self.t.iter_mut().for_each(|v| *v = 0);
        for i in 0..dig {
            let yi = self.y[i];
            let mut c = 0u32;
            for j in 0..dig {
                let s = self.t[j]
                    .wrapping_add(self.x[j].wrapping_mul(yi))
                    .wrapping_add(c);
                self.t[j] = s & 0xffff;
                c = s >> 16;
            }
            let s1 = self.t[dig].wrapping_add(c);
            self.t[dig] = s1 & 0xffff;
            self.t[dig + 1] = s1 >> 16;
            self.reduce_step();
        }
        self.final_subtract();
    }

    /// `z = (x + y R) R^-1 mod m` for a double-width value below `m R`.
    fn redc_wide(&mut self) {
        let dig = self.md.len();
        self.t[..dig].copy_from_slice(&self.x);
        self.t[dig] = 0;
        self.t[dig + 1] = 0;
        for i in 0..dig {
            let s1 = self.t[dig].wrapping_add(self.y[i]);
            self.t[dig] = s1 & 0xffff;
            self.t[dig + 1] = s1 >> 16;
            self.reduce_step();
        }
        self.final_subtract();
    }

    fn z_to_x(&mut self) {
        self.x.copy_from_slice(&self.z);
    }

    /// `y = entry digit` of 16 entries of `w` words at `table`, reading all 16.
    fn select(&mut self, table: &[u32], w: usize, digit: u32) {
        self.y.iter_mut().for_each(|v| *v = 0);
        for d in 0..16u32 {
            let mask = 0u32.wrapping_sub(u32::from(d == digit));
            for k in 0..w {
                let v = table[d as usize * w + k] & mask;
                self.y[2 * k] |= v & 0xffff;
                self.y[2 * k + 1] |= v >> 16;
            }
        }
    }
}

/// The 4-bit window `w` (from the least significant) of an exponent.
fn window(exp: &[u32], w: usize) -> u32 {
    (exp[w / 8] >> (4 * (w % 8))) & 0xf
}

/// `1` if `a < b` (same length), else `0`, reading every word.
pub(crate) fn lt(a: &[u32], b: &[u32]) -> u32 {
    let mut borrow = 0u64;
    for (&x, &y) in a.iter().zip(b) {
        let d = u64::from(x).wrapping_sub(u64::from(y)).wrapping_sub(borrow);
        borrow = (d >> 63) & 1;
    }
    borrow as u32
}

/// `R^2 mod m` by `2 * 32 * words` constant-time doublings of 1.
pub(crate) fn r_squared(m: &[u32]) -> Vec<u32> {
    let w = m.len();
    let mut x = vec![0u32; w];
    x[0] = 1;
    let mut d = vec![0u32; w];
    for _ in 0..64 * w {
        // x = 2x (with its carry bit), then subtract m if 2x >= m.
        let mut carry = 0u32;
        for v in x.iter_mut() {
            let nv = (*v << 1) | carry;
            carry = *v >> 31;
            *v = nv;
        }
        let mut borrow = 0u64;
        for k in 0..w {
            let s = u64::from(x[k])
                .wrapping_sub(u64::from(m[k]))
                .wrapping_sub(borrow);
            d[k] = s as u32;
            borrow = (s >> 63) & 1;
        }
        // Keep x only when it is below m: no carry out and a borrow.
        let keep = (borrow as u32) & (1 - carry);
        let take = keep.wrapping_sub(1);
        for k in 0..w {
            x[k] = (d[k] & take) | (x[k] & !take);
        }
    }
    x
}

/// `x y R^-1 mod m` for one pair of numbers below `m` (words in, words out).
pub(crate) fn mont_words(m: &Modulus, x: &[u32], y: &[u32]) -> Vec<u32> {
    let mut r = Regs::new(m);
    digits(x, &mut r.x);
    digits(y, &mut r.y);
    r.montmul();
    words(&r.z)
}

/// Twin of the GPU's `modmul` program.
pub fn mul(m: &Modulus, a: &[u32], b: &[u32]) -> Vec<u32> {
    let w = m.words();
    a.par_chunks_exact(w)
        .zip(b.par_chunks_exact(w))
        .flat_map_iter(|(a, b)| {
            let mut r = Regs::new(m);
            digits(a, &mut r.x);
            digits(b, &mut r.y);
            r.montmul();
            r.z_to_x();
            digits(&m.r2, &mut r.y);
            r.montmul();
            words(&r.z)
        })
        .collect()
}

/// Twin of the GPU's `fixed_pow` program.
pub fn fixed_pow(
    m: &Modulus,
    table: &FixedTable,
    exps: &[u32],
    exp_words: usize,
    factors: &[u32],
) -> Vec<u32> {
    let w = m.words();
    factors
        .par_chunks_exact(w)
        .zip(exps.par_chunks_exact(exp_words))
        .flat_map_iter(|(f, e)| {
            let mut r = Regs::new(m);
            digits(&table.init, &mut r.x);
            for win in 0..table.windows {
                let at = win * 16 * w;
                r.select(&table.entries[at..at + 16 * w], w, window(e, win));
                r.montmul();
                r.z_to_x();
            }
            digits(f, &mut r.y);
            r.montmul();
            words(&r.z)
        })
        .collect()
}

/// Twin of the GPU's `modpow` program.
pub fn pow(
    m: &Modulus,
    bases: &[u32],
    wide: bool,
    exps: &[u32],
    exp_words: usize,
    shared: bool,
) -> Vec<u32> {
    let w = m.words();
    let iw = if wide { 2 * w } else { w };
    bases
        .par_chunks_exact(iw)
        .enumerate()
        .flat_map_iter(|(i, b)| {
            let e = if shared {
                exps
            } else {
                &exps[i * exp_words..(i + 1) * exp_words]
            };
            let mut r = Regs::new(m);
            if wide {
                digits(&b[..w], &mut r.x);
                digits(&b[w..], &mut r.y);
                r.redc_wide();
                r.z_to_x();
                digits(&m.r2, &mut r.y);
                r.montmul();
                r.z_to_x();
                digits(&m.r2, &mut r.y);
                r.montmul();
            } else {
                digits(b, &mut r.x);
                digits(&m.r2, &mut r.y);
                r.montmul();
            }
            let base_m = r.z.clone();
            // table[d] = base^d R mod m
            r.x.iter_mut().for_each(|v| *v = 0);
            r.x[0] = 1;
            digits(&m.r2, &mut r.y);
            r.montmul();
            let mut table = vec![0u32; 16 * w];
            for d in 0..16 {
                table[d * w..(d + 1) * w].copy_from_slice(&words(&r.z));
                r.z_to_x();
                r.y.copy_from_slice(&base_m);
                r.montmul();
            }
            r.select(&table, w, 0);
            r.x.copy_from_slice(&r.y);
            for win in (0..exp_words * 8).rev() {
                for _ in 0..4 {
                    r.y.copy_from_slice(&r.x);
                    r.montmul();
                    r.z_to_x();
                }
                r.select(&table, w, window(e, win));
                r.montmul();
                r.z_to_x();
            }
            r.y.iter_mut().for_each(|v| *v = 0);
            r.y[0] = 1;
            r.montmul();
            words(&r.z)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::montgomery::BatchArith;
    use rand::{Rng, SeedableRng};
    use rug::Integer;
    use rug::integer::Order;

    fn int(w: &[u32]) -> Integer {
        Integer::from_digits(w, Order::Lsf)
    }

    fn to_words(x: &Integer, w: usize) -> Vec<u32> {
        let mut v = x.to_digits::<u32>(Order::Lsf);
        v.resize(w, 0);
        v
    }

    /// An odd modulus of exactly `words` words (top bit set), or with a zero top word.
    fn modulus(rng: &mut impl Rng, words: usize, short: bool) -> Modulus {
        let mut m: Vec<u32> = (0..words).map(|_| rng.random()).collect();
        m[0] |= 1;
        m[words - 1] |= 1 << 31;
        if short && words > 1 {
            m[words - 1] = 0;
            m[words - 2] |= 1 << 31;
        }
        Modulus::new(m).expect("modulus")
    }

    /// Values below m: random, 0, 1, m - 1.
    fn values(rng: &mut impl Rng, m: &Modulus, n: usize) -> Vec<u32> {
        let mi = int(m.value());
        let w = m.words();
        let mut out = Vec::new();
        for i in 0..n {
            let v = match i {
                0 => Integer::new(),
                1 => Integer::from(1),
                2 => mi.clone() - 1u32,
                _ => {
                    let r: Vec<u32> = (0..w + 1).map(|_| rng.random()).collect();
                    int(&r) % &mi
                }
            };
            out.extend(to_words(&v, w));
        }
        out
    }

    #[test]
    fn constants_and_products_match_gmp() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(16);
        let arith = BatchArith::cpu();
        for &(words, short) in &[(1, false), (2, false), (5, true), (64, false), (128, true)] {
            let m = modulus(&mut rng, words, short);
            let mi = int(m.value());
            let r = Integer::from(1) << (32 * words as u32);
            assert_eq!(int(&m.r2), r.clone() * &r % &mi, "R^2 mod m, {words} words");
            let inv = Integer::from(m.value()[0] & 0xffff)
                .invert(&Integer::from(1 << 16))
                .expect("odd");
            assert_eq!((Integer::from(m.n0inv) + inv) % (1 << 16), 0);
            let a = values(&mut rng, &m, 6);
            let b = values(&mut rng, &m, 6);
            let got = arith.mul(&m, &a, &b).expect("mul");
            for i in 0..6 {
                let (x, y) = (int(&a[i * words..][..words]), int(&b[i * words..][..words]));
                assert_eq!(int(&got[i * words..][..words]), x * y % &mi, "item {i}");
            }
        }
    }

    #[test]
    fn powers_match_gmp() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(17);
        let arith = BatchArith::cpu();
        for &(words, short) in &[(2, false), (8, true), (32, false)] {
            let m = modulus(&mut rng, words, short);
            let mi = int(m.value());
            let bases = values(&mut rng, &m, 5);
            let exps: Vec<u32> = (0..5 * 3).map(|_| rng.random()).collect();
            let got = arith.pow(&m, &bases, false, &exps, 3).expect("pow");
            for i in 0..5 {
                let b = int(&bases[i * words..][..words]);
                let e = int(&exps[i * 3..][..3]);
                let want = b.pow_mod(&e, &mi).expect("pow");
                assert_eq!(int(&got[i * words..][..words]), want, "item {i}");
            }
            // Wide bases (below m R), one shared exponent.
            let wide: Vec<u32> = (0..4)
                .flat_map(|_| {
                    let lo: Vec<u32> = (0..words).map(|_| rng.random()).collect();
                    let hi = values(&mut rng, &m, 4).split_off(3 * words);
                    [lo, hi].concat()
                })
                .collect();
            let e = [rng.random::<u32>(), 0, 7];
            let got = arith.pow(&m, &wide, true, &e, 3).expect("wide pow");
            for i in 0..4 {
                let b = int(&wide[i * 2 * words..][..2 * words]);
                let want = b.pow_mod(&int(&e), &mi).expect("pow");
                assert_eq!(int(&got[i * words..][..words]), want, "wide item {i}");
            }
        }
    }

    #[test]
    fn fixed_base_matches_gmp() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(18);
        let m = modulus(&mut rng, 16, false);
        let mi = int(m.value());
        let base = int(&values(&mut rng, &m, 4)[3 * 16..]);
        // Plain powers base^(d 16^i), digits taken as they are (no offset), init = 1.
        let windows = 10;
        let mut entries = Vec::new();
        for i in 0..windows {
            for d in 0..16u32 {
                let e = Integer::from(d) << (4 * i as u32);
                entries.extend(to_words(&base.clone().pow_mod(&e, &mi).expect("pow"), 16));
            }
        }
        let table = FixedTable::new(&m, &entries, &to_words(&Integer::from(1), 16)).expect("table");
        let exps: Vec<u32> = (0..3 * 2).map(|_| rng.random()).collect();
        let factors = values(&mut rng, &m, 3);
        let got = BatchArith::cpu()
            .fixed_pow(&m, &table, &exps, 2, &factors)
            .expect("fixed pow");
        for i in 0..3 {
            // Only the 10 windows the table has count: 40 bits of the exponent.
            let e = int(&exps[i * 2..][..2]).keep_bits(40);
            let f = int(&factors[i * 16..][..16]);
            let want = base.clone().pow_mod(&e, &mi).expect("pow") * f % &mi;
            assert_eq!(int(&got[i * 16..][..16]), want, "item {i}");
        }
    }

    #[test]
    fn inputs_are_checked() {
        let arith = BatchArith::cpu();
        assert!(Modulus::new(vec![4]).is_err());
        assert!(Modulus::new(vec![1, 0]).is_err());
        assert!(Modulus::new(vec![]).is_err());
        assert!(Modulus::new(vec![3; super::super::MAX_WORDS + 1]).is_err());
        let m = Modulus::new(vec![0xffff_fffb, 0x7fff_ffff]).expect("m");
        let e = arith
            .mul(&m, &[0xffff_fffb, 0x7fff_ffff], &[1, 0])
            .expect_err("a = m is refused");
        assert!(e.to_string().contains("not below the modulus"), "{e}");
        assert!(arith.mul(&m, &[1, 0, 1], &[1, 0, 1]).is_err());
        assert!(arith.pow(&m, &[1, 0, 2, 0], false, &[1, 2, 3], 2).is_err());
    }
}
