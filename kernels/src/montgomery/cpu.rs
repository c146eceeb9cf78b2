//! CPU twin of `shaders/montgomery.wgsl`'s programs: the arithmetic of [`super::arith`]
//! (the same 16-bit digits, the same loops in the same order), items in parallel with rayon.

use super::arith::{Regs, digits, window, words};
use super::numbers::{FixedTable, Modulus};
use rayon::prelude::*;

/// Twin of the GPU's `modmul` program.
pub fn mul(m: &Modulus, a: &[u32], b: &[u32]) -> Vec<u32> {
    let w = m.words();
    a.par_chunks_exact(w)
        .zip(b.par_chunks_exact(w))
        .flat_map_iter(|(a, b)| {
            let mut r = Regs::new(&m.m, m.n0inv);
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
            let mut r = Regs::new(&m.m, m.n0inv);
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
            let mut r = Regs::new(&m.m, m.n0inv);
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
