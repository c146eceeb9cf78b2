//! Homomorphic operations on radix ciphertexts, with the degree and noise level of every
//! block kept within the parameter set's bounds (so its 2^-128 failure probability holds)
//! and set only from public quantities (so the bounds in a ciphertext's header never
//! reveal a plaintext digit).
//!
//! Costs, in programmable bootstraps (PBS), for 64-block (128-bit) integers:
//! addition, addition of a plaintext and [`select`] are linear (no PBS) while the degrees
//! and noise levels fit; [`refresh`] (carry propagation) and [`sanitize`] (one PBS per
//! block) are where the time goes.

use crate::cipher::{Ct, Kind};
use crate::keys::Public;
use crate::params::{BLOCKS, FULL_MAX, MSG_MAX, PARAMS, digits, max_noise_level, max_units};
use kinsey_backend::{BackendError, Rng};
use rayon::prelude::*;
use tfhe::integer::ciphertext::{ReRandomizationContext, ReRandomizationKey};
use tfhe::integer::{ClientKey, IntegerCiphertext, IntegerRadixCiphertext, RadixCiphertext};
use tfhe::shortint::Ciphertext as Block;
use tfhe::shortint::ciphertext::{Degree, NoiseLevel};

fn level(b: &Block) -> u64 {
    b.noise_level().get()
}

fn set_level(b: &mut Block, l: u64) {
    let l = if l == 0 {
        NoiseLevel::ZERO
    } else {
        NoiseLevel::NOMINAL * l
    };
    b.set_noise_level(l, PARAMS.max_noise_level);
}

/// The blocks of `ct` as an integer: a selector `E(b)` becomes `(E(b), 0, ..., 0)`, a
/// selection is bootstrapped into base-4 blocks ([`bits_to_radix`]).
pub(crate) fn radix(p: &Public, ct: Ct) -> Vec<Block> {
    match ct.kind {
        Kind::Radix => ct.blocks,
        Kind::Bits => bits_to_radix(p, ct),
        Kind::Selector => {
            let mut blocks: Vec<Block> = p
                .sks
                .create_trivial_radix::<u64, RadixCiphertext>(0, BLOCKS)
                .into_blocks();
            let mut b0 = ct.blocks.into_iter().next();
            if let Some(b) = b0.take() {
                blocks[0] = b;
            }
            blocks
        }
    }
}

/// Propagate carries (if any block has some) and bootstrap every block whose noise level is
/// above nominal: afterwards every block is clean (degree <= 3, nominal noise).
pub(crate) fn refresh(p: &Public, blocks: Vec<Block>) -> Vec<Block> {
    let mut r = RadixCiphertext::from(blocks);
    if r.blocks().iter().any(|b| b.degree.get() > MSG_MAX) {
        p.sks.full_propagate_parallelized(&mut r);
    }
    let key: &tfhe::shortint::ServerKey = p.sks.as_ref();
    r.blocks_mut().par_iter_mut().for_each(|b| {
        if level(b) > 1 {
            key.message_extract_assign(b);
        }
    });
    r.into_blocks()
}

/// `E(a + b)`.
pub(crate) fn add(p: &Public, a: Vec<Block>, b: Vec<Block>, disjoint: bool) -> Vec<Block> {
    let fits = a.iter().zip(&b).all(|(x, y)| {
        let deg = if disjoint {
            x.degree.get().max(y.degree.get())
        } else {
            x.degree.get() + y.degree.get()
        };
        deg <= FULL_MAX && level(x) + level(y) <= max_noise_level()
    });
    let (a, b) = if fits {
        (a, b)
    } else if disjoint {
        // Only the noise can overflow: bootstrap the noisier operand.
        let (na, nb) = (
            a.iter().map(level).max().unwrap_or(0),
            b.iter().map(level).max().unwrap_or(0),
        );
        if na >= nb {
            (refresh(p, a), b)
        } else {
            (a, refresh(p, b))
        }
    } else {
        (refresh(p, a), refresh(p, b))
    };
    let key: &tfhe::shortint::ServerKey = p.sks.as_ref();
    a.iter()
        .zip(&b)
        .map(|(x, y)| {
            let mut r = key.unchecked_add(x, y);
            if disjoint {
                r.degree = Degree::new(x.degree.get().max(y.degree.get()));
            }
            r
        })
        .collect()
}

/// `E(a + m)`; every block's degree grows by 3 whatever the digit.
pub(crate) fn add_plain(p: &Public, a: Vec<Block>, m: i128) -> Result<Vec<Block>, BackendError> {
    let a = if a.iter().all(|x| x.degree.get() + MSG_MAX <= FULL_MAX) {
        a
    } else {
        refresh(p, a)
    };
    let key: &tfhe::shortint::ServerKey = p.sks.as_ref();
    let ds = digits(m as u128);
    let mut out: Vec<Block> = a
        .iter()
        .zip(ds)
        .map(|(x, d)| {
            let mut r = key.unchecked_scalar_add(x, d as u8);
            r.degree = Degree::new(x.degree.get() + MSG_MAX);
            r
        })
        .collect();
    hide_trivial(p, &mut out)?;
    Ok(out)
}

/// A generator seeded by tfhe-rs's seeder (the OS's entropy), for operations whose
/// interface takes no randomness.
fn os_rng() -> rand_chacha::ChaCha20Rng {
    let mut seeder = tfhe::core_crypto::seeders::new_seeder();
    let (a, b) = (seeder.seed().0, seeder.seed().0);
    let mut key = [0u8; 32];
    key[..16].copy_from_slice(&a.to_le_bytes());
    key[16..].copy_from_slice(&b.to_le_bytes());
    <rand_chacha::ChaCha20Rng as rand_core::SeedableRng>::from_seed(key)
}

/// Blocks that are noiseless but hold a value (tfhe-rs's scalar multiplication shifts in
/// trivial blocks; a plaintext added to a public zero) would show it in their bytes: each
/// gets a fresh encryption of zero.
pub(crate) fn hide_trivial(p: &Public, blocks: &mut [Block]) -> Result<(), BackendError> {
    let idx: Vec<usize> = (0..blocks.len())
        .filter(|&i| level(&blocks[i]) == 0 && blocks[i].degree.get() > 0)
        .collect();
    if idx.is_empty() {
        return Ok(());
    }
    let mut one = vec![idx.iter().map(|&i| blocks[i].clone()).collect::<Vec<_>>()];
    add_zero(p, &mut one, &mut os_rng())?;
    for (&i, b) in idx.iter().zip(one.into_iter().flatten()) {
        blocks[i] = b;
    }
    Ok(())
}

/// `E(k a)` for any integer ciphertext: tfhe-rs's scalar multiplication by `|k|` (carries
/// propagated, bootstraps growing with the bits of `|k|`: its time depends on `k`, so the
/// protocol never calls it on a secret; Stage 2 uses [`select`]), negated for `k < 0`.
pub(crate) fn mul_plain(p: &Public, a: Vec<Block>, k: i128) -> Result<Vec<Block>, BackendError> {
    let r = RadixCiphertext::from(a);
    let m = p.sks.scalar_mul_parallelized(&r, k.unsigned_abs());
    let mut out = if k < 0 {
        p.sks.neg_parallelized(&m).into_blocks()
    } else {
        m.into_blocks()
    };
    hide_trivial(p, &mut out)?;
    Ok(out)
}

/// `E(b k)` as a selection for a selector `E(b)` of `n` blocks, `b` in {0, 1},
/// `0 <= k < 2^n`: block `i` is `k_i E(b)_i`, `k_i` the i-th bit of `k`, a linear map of the
/// LWE ciphertext (no bootstrapping). Its noise is the selector block's or none, so the
/// selection's budget is the selector's (the header keeps the worst case: degree 1, the
/// selector's level). It must be re-randomised before it leaves its maker, as a Paillier
/// `E(m)^k`, and sanitised ([`sanitize_bits`]) before a key holder sees it.
pub(crate) fn select(sel: &Ct, k: i128) -> Result<Ct, BackendError> {
    if sel.kind != Kind::Selector {
        return Err(BackendError::Other(
            "internal: select on a non-selector".into(),
        ));
    }
    let n = sel.blocks.len();
    let bits = n.min(127) as u32;
    if k < 0 || (k as u128) >> bits != 0 {
        return Err(BackendError::Codec(format!(
            "a plaintext multiplied by this indicator must lie in [0, 2^{bits})"
        )));
    }
    let mut units = 0;
    let blocks = sel
        .blocks
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let mut r = b.clone();
            let bit = ((k as u128) >> i) as u64 & 1;
            tfhe::core_crypto::algorithms::lwe_ciphertext_cleartext_mul_assign(
                &mut r.ct,
                tfhe::core_crypto::entities::Cleartext(bit),
            );
            let l = level(b).max(1);
            units = units.max(l * l);
            r.degree = Degree::new(1);
            set_level(&mut r, 1);
            r
        })
        .collect();
    Ok(Ct {
        kind: Kind::Bits,
        blocks,
        units,
    })
}

/// Bootstrap every block of a selection (identity on its bit): its noise becomes one fresh
/// bootstrap's (one unit). For a sum whose budget would overflow.
fn refresh_bits(p: &Public, ct: &mut Ct) {
    let key: &tfhe::shortint::ServerKey = p.sks.as_ref();
    let identity = key.generate_lookup_table(|x| x);
    ct.blocks.par_iter_mut().for_each(|b| {
        let deg = b.degree.get();
        key.apply_lookup_table_assign(b, &identity);
        b.degree = Degree::new(deg);
        set_level(b, 1);
    });
    ct.units = 1;
}

/// `E(a + b)` for two selections of the same width of which one is zero (the caller's
/// promise, as for [`add`]) and whose noises are independent (made from different
/// selectors and re-randomised): degrees take the larger, budgets add. If the budget would
/// pass [`max_units`](crate::params::max_units) (one unit kept for [`sanitize_bits`]), the noisier one is bootstrapped
/// first (tfhe-rs's noise check would otherwise reject nothing, and the failure probability
/// would no longer hold).
pub(crate) fn add_bits(p: &Public, mut a: Ct, mut b: Ct) -> Result<Ct, BackendError> {
    if a.kind != Kind::Bits || b.kind != Kind::Bits || a.blocks.len() != b.blocks.len() {
        return Err(BackendError::BadCiphertext(format!(
            "a disjoint sum of selections needs two selections of the same width ({:?} of {} \
             blocks, {:?} of {})",
            a.kind,
            a.blocks.len(),
            b.kind,
            b.blocks.len()
        )));
    }
    if a.units + b.units > max_units() - 1 {
        if a.units >= b.units {
            refresh_bits(p, &mut a);
        } else {
            refresh_bits(p, &mut b);
        }
    }
    let key: &tfhe::shortint::ServerKey = p.sks.as_ref();
    let blocks = a
        .blocks
        .iter()
        .zip(&b.blocks)
        .map(|(x, y)| {
            let mut r = key.unchecked_add(x, y);
            r.degree = Degree::new(x.degree.get().max(y.degree.get()));
            set_level(&mut r, 1);
            r
        })
        .collect();
    Ok(Ct {
        kind: Kind::Bits,
        blocks,
        units: a.units + b.units,
    })
}

/// A fresh encryption of zero added to every block of every selection (one unit more).
pub(crate) fn add_zero_bits(p: &Public, cts: &mut [Ct], rng: Rng<'_>) -> Result<(), BackendError> {
    for c in cts.iter_mut() {
        if c.units + 1 > max_units() - 1 {
            refresh_bits(p, c);
        }
    }
    let mut blocks: Vec<Vec<Block>> = cts
        .iter_mut()
        .map(|c| std::mem::take(&mut c.blocks))
        .collect();
    add_zero(p, &mut blocks, rng)?;
    for (c, b) in cts.iter_mut().zip(blocks) {
        c.blocks = b;
        c.units += 1;
    }
    Ok(())
}

/// [`add_zero_bits`] on owned selections (the re-randomisation of a batch of selections).
pub(crate) fn add_zero_bits_owned(
    p: &Public,
    mut cts: Vec<Ct>,
    rng: Rng<'_>,
) -> Result<Vec<Ct>, BackendError> {
    add_zero_bits(p, &mut cts, rng)?;
    Ok(cts)
}

/// A selection as a radix integer: each bit block bootstrapped (identity for even
/// positions, doubling for odd ones) and pairs added into base-4 blocks (two fresh
/// bootstraps: noise level 2, degree at most 3); blocks beyond the width are public zeros.
/// `n` bootstraps for `n` bits.
fn bits_to_radix(p: &Public, ct: Ct) -> Vec<Block> {
    let key: &tfhe::shortint::ServerKey = p.sks.as_ref();
    let luts = [
        key.generate_lookup_table(|x| x),
        key.generate_lookup_table(|x| (2 * x) % (FULL_MAX + 1)),
    ];
    let mut bits = ct.blocks;
    bits.par_iter_mut().enumerate().for_each(|(i, b)| {
        let deg = b.degree.get() << (i % 2);
        key.apply_lookup_table_assign(b, &luts[i % 2]);
        b.degree = Degree::new(deg);
        set_level(b, 1);
    });
    let mut out: Vec<Block> = p
        .sks
        .create_trivial_radix::<u64, RadixCiphertext>(0, BLOCKS)
        .into_blocks();
    for (o, pair) in out.iter_mut().zip(bits.chunks(2)) {
        *o = match pair {
            [lo, hi] => {
                let mut r = key.unchecked_add(lo, hi);
                r.degree = Degree::new(lo.degree.get() + hi.degree.get());
                r
            }
            [lo] => lo.clone(),
            _ => continue,
        };
    }
    out
}

/// Sanitise a selection for the key holder: a fresh encryption of zero, one bootstrap per
/// bit ([`bits_to_radix`]: the noise of every party's selection is gone), and a fresh
/// encryption of zero on every block of the resulting integer. `n` bootstraps per
/// ciphertext, however many selections were summed into it.
pub(crate) fn sanitize_bits(
    p: &Public,
    mut cts: Vec<Ct>,
    rng: Rng<'_>,
) -> Result<Vec<Vec<Block>>, BackendError> {
    add_zero_bits(p, &mut cts, rng)?;
    let mut out: Vec<Vec<Block>> = cts.into_par_iter().map(|c| bits_to_radix(p, c)).collect();
    add_zero_keeping_degrees(p, &mut out, rng)?;
    Ok(out)
}

/// A block whose bounds say it is a noiseless zero (degree 0, noise level 0): its value and
/// bytes are public, so it needs no re-randomisation.
fn public_zero(b: &Block) -> bool {
    b.degree.get() == 0 && level(b) == 0
}

/// Add a fresh encryption of zero under the compact public key to every block of every
/// ciphertext (tfhe-rs's re-randomisation; its noise analysis keeps a nominal block
/// nominal). A block above nominal is counted one level higher afterwards.
pub(crate) fn add_zero(
    p: &Public,
    cts: &mut [Vec<Block>],
    rng: Rng<'_>,
) -> Result<(), BackendError> {
    let mut nonce = [0u8; 32];
    rng.fill_bytes(&mut nonce);
    let mut ctx = ReRandomizationContext::new(
        *b"KNSY_Rrd",
        [b"kinsey tfhe re-randomisation".as_slice(), &nonce],
        *b"KNSY_Enc",
    );
    let empty = RadixCiphertext::from(Vec::new());
    for _ in cts.iter() {
        ctx.add_ciphertext(&empty);
    }
    let mut seeds_of = ctx.finalize();
    let seeds = cts
        .iter()
        .map(|_| seeds_of.next_seed())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| BackendError::Other(format!("re-randomisation seed: {e}")))?;
    cts.par_iter_mut()
        .zip(seeds)
        .try_for_each(|(blocks, seed)| {
            let old: Vec<u64> = blocks.iter().map(level).collect();
            for b in blocks.iter_mut() {
                if level(b) > 1 {
                    set_level(b, 1);
                }
            }
            let mut r = RadixCiphertext::from(std::mem::take(blocks));
            let res = r.re_randomize(
                ReRandomizationKey::DerivedCPKWithoutKeySwitch { cpk: &p.cpk },
                seed,
            );
            *blocks = r.into_blocks();
            for (b, l) in blocks.iter_mut().zip(old) {
                if l > 1 {
                    set_level(b, l + 1);
                }
            }
            res.map_err(|e| BackendError::Other(format!("re-randomisation: {e}")))
        })
}

/// Blocks at the noise bound bootstrapped first, so that a fresh encryption of zero added
/// to them stays within it.
fn refresh_at_bound(p: &Public, cts: Vec<Vec<Block>>) -> Vec<Vec<Block>> {
    cts.into_iter()
        .map(|c| {
            if c.iter().any(|b| level(b) >= max_noise_level()) {
                refresh(p, c)
            } else {
                c
            }
        })
        .collect()
}

/// [`add_zero`] with every block's degree kept (a fresh zero adds nothing to the value).
fn add_zero_keeping_degrees(
    p: &Public,
    cts: &mut [Vec<Block>],
    rng: Rng<'_>,
) -> Result<(), BackendError> {
    let deg: Vec<Vec<u64>> = cts
        .iter()
        .map(|c| c.iter().map(|b| b.degree.get()).collect())
        .collect();
    add_zero(p, cts, rng)?;
    for (c, d) in cts.iter_mut().zip(&deg) {
        for (b, &dg) in c.iter_mut().zip(d) {
            b.degree = Degree::new(dg);
        }
    }
    Ok(())
}

/// Re-randomise: a fresh encryption of zero on every block. Unlinkable to the input for
/// anyone without the secret key; the key holder needs [`sanitize`].
pub(crate) fn rerandomize(
    p: &Public,
    cts: Vec<Vec<Block>>,
    rng: Rng<'_>,
) -> Result<Vec<Vec<Block>>, BackendError> {
    let mut cts = refresh_at_bound(p, cts);
    add_zero_keeping_degrees(p, &mut cts, rng)?;
    Ok(cts)
}

/// Sanitise: every block gets a fresh encryption of zero (mask re-randomised), every block
/// that is not a public zero a bootstrap of the identity over its whole message-and-carry
/// space (noise reset to a fresh bootstrap's whatever the history; carries kept, so no
/// propagation is needed: decryption reads them), and every block a second fresh
/// encryption of zero. Degrees are kept (public). The result depends on the input only
/// through its plaintext (up to the bootstrap's heuristic circuit privacy, see README).
pub(crate) fn sanitize(
    p: &Public,
    cts: Vec<Vec<Block>>,
    rng: Rng<'_>,
) -> Result<Vec<Vec<Block>>, BackendError> {
    let mut cts = refresh_at_bound(p, cts);
    // Which blocks compute (bootstrapped) and which are public zeros (only encrypted, so
    // that a plaintext added to them later stays hidden); the degrees to keep.
    let act: Vec<Vec<bool>> = cts
        .iter()
        .map(|c| c.iter().map(|b| !public_zero(b)).collect())
        .collect();
    let deg: Vec<Vec<u64>> = cts
        .iter()
        .map(|c| c.iter().map(|b| b.degree.get()).collect())
        .collect();
    add_zero(p, &mut cts, rng)?;
    let key: &tfhe::shortint::ServerKey = p.sks.as_ref();
    let identity = key.generate_lookup_table(|x| x);
    cts.par_iter_mut().zip(&act).for_each(|(c, a)| {
        c.par_iter_mut().zip(a).for_each(|(b, &on)| {
            if on {
                key.apply_lookup_table_assign(b, &identity);
            }
        })
    });
    add_zero(p, &mut cts, rng)?;
    for ((c, a), d) in cts.iter_mut().zip(&act).zip(&deg) {
        for ((b, &on), &dg) in c.iter_mut().zip(a).zip(d) {
            b.degree = Degree::new(if on { dg } else { 0 });
        }
    }
    Ok(cts)
}

/// [`sanitize_bits`] with its results as integer ciphertexts.
pub(crate) fn sanitize_bits_ct(
    p: &Public,
    cts: Vec<Ct>,
    rng: Rng<'_>,
) -> Result<Vec<Ct>, BackendError> {
    Ok(sanitize_bits(p, cts, rng)?
        .into_iter()
        .map(Ct::radix)
        .collect())
}

/// A fresh public-key encryption of `m`: a noiseless (trivial) encoding plus a fresh
/// encryption of zero.
pub(crate) fn encrypt(
    p: &Public,
    m: &[u128],
    blocks: usize,
    rng: Rng<'_>,
) -> Result<Vec<Vec<Block>>, BackendError> {
    let mut cts: Vec<Vec<Block>> = m
        .iter()
        .map(|&v| {
            p.sks
                .create_trivial_radix::<u128, RadixCiphertext>(v, blocks)
                .into_blocks()
        })
        .collect();
    add_zero(p, &mut cts, rng)?;
    for b in cts.iter_mut().flatten() {
        b.degree = Degree::new(MSG_MAX);
    }
    Ok(cts)
}

/// The integer a radix ciphertext holds, carries included, mod 2^128.
pub(crate) fn decrypt(ck: &ClientKey, blocks: &[Block]) -> i128 {
    let key: &tfhe::shortint::ClientKey = ck.as_ref();
    let mut v = 0u128;
    for (i, b) in blocks.iter().enumerate() {
        let x = key.decrypt_message_and_carry(b) as u128;
        v = v.wrapping_add(x << (2 * i));
    }
    v as i128
}

/// The integer a selection holds: block `i` weighs `2^i`.
pub(crate) fn decrypt_bits(ck: &ClientKey, blocks: &[Block]) -> i128 {
    let key: &tfhe::shortint::ClientKey = ck.as_ref();
    let mut v = 0u128;
    for (i, b) in blocks.iter().enumerate() {
        let x = key.decrypt_message_and_carry(b) as u128;
        v = v.wrapping_add(x << i);
    }
    v as i128
}

/// The bit a selector holds; every block must agree.
pub(crate) fn decrypt_selector(ck: &ClientKey, blocks: &[Block]) -> Result<i128, BackendError> {
    let key: &tfhe::shortint::ClientKey = ck.as_ref();
    let first = blocks.first().map(|b| key.decrypt_message_and_carry(b));
    for b in blocks {
        if Some(key.decrypt_message_and_carry(b)) != first || first > Some(1) {
            return Err(BackendError::BadCiphertext(
                "TFHE selector whose blocks do not all hold the same bit".into(),
            ));
        }
    }
    Ok(first.unwrap_or(0) as i128)
}
