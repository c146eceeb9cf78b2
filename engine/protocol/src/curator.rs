//! The curator role: holds zeta, finds the doubly permuted smallest party by DGK
//! comparisons, encrypts the indicator, and takes one share.

use crate::faults::Leak;
use crate::params::{KEY_BITS, NOISE_BITS, SIGMA};
use crate::transport::{Peer, Stage};

use crate::messages::*;
use crate::reshare::reshare;
use crate::role::*;
use crate::wire::*;
use kinsey_backend::{Ciphertext, PublicKey};
use std::time::Instant;

/// The curator: holds zeta, learns the doubly permuted index of the smallest party, and one
/// share of the result.
pub(crate) fn curator(ctx: &mut Ctx) -> R<Vec<i128>> {
    let k = ctx.k;
    let p1 = Peer::Party(0);
    let zeta = ctx.op("keygen", 1, |he, rng| he.keygen(rng))?;
    let cmp = ctx.cmp.clone();
    let t0 = Instant::now();
    let cmp_keys = cmp
        .keygen(&mut ctx.rng)
        .map_err(|e| ctx.own(format!("comparison keygen failed: {e}")))?;
    ctx.ops
        .entry((Stage::Setup, "keygen (comparison)"))
        .or_default()
        .seconds += t0.elapsed().as_secs_f64();
    for q in 0..k {
        ctx.send(Peer::Party(q), ZETA_PK, &zeta.public.0)?;
    }
    ctx.send(p1, CMP_PK, &cmp_keys.public.0)?;
    let xi_pk = PublicKey(ctx.recv(p1, XI_PK)?);
    ctx.op_on(p1, "key check", 0, |he, _| he.check_public_key(&xi_pk))?;

    // Stage 1.
    ctx.enter(Stage::Smallest)?;
    let mut blinded = Vec::with_capacity(k);
    let mut b_masked = Vec::with_capacity(k);
    for pos in 0..k {
        let from = Peer::Party(pos);
        let m = ctx.recv(from, POSITION)?;
        let cts = parse_cts(ctx, from, &m, 2)?;
        let b = ctx.op_on(from, "decrypt", 1, |he, _| {
            he.decrypt_batch(&zeta.secret, &cts[1..])
        })?[0];
        ctx.t.learn("b (pi1 order)", b);
        let r = ctx.random_below_pow2(KEY_BITS + 2 * SIGMA);
        let c = ctx.op_on(from, "add plaintext", 1, |he, _| {
            he.add_plain_batch(&xi_pk, &cts[..1], &[r])
        })?;
        let c = ctx.op("rerandomize", 1, |he, rng| {
            he.rerandomize_batch(&xi_pk, &c, rng)
        })?;
        // A party holding xi decrypts it, and one of them made `xi(a)`: nothing of how it
        // was computed may show (TFHE: its noise).
        let c = ctx.op("sanitize", 1, |he, rng| he.sanitize_batch(&xi_pk, &c, rng))?;
        blinded.push(c);
        b_masked.push(b - r);
    }
    let pi2 = ctx.permutation();
    let mut bt = vec![0i128; k];
    let mut to_party = vec![0usize; k];
    for pos in 0..k {
        bt[pi2[pos]] = b_masked[pos];
        to_party[pi2[pos]] = pos;
    }
    // In party order: the order of the sends on the links may not reveal pi2.
    let sends: Vec<(usize, usize)> = if ctx.leak == Some(Leak::RoutedShares) {
        (0..k).map(|pos| (pi2[pos], pos)).collect()
    } else {
        to_party.iter().copied().enumerate().collect()
    };
    for (q, pos) in sends {
        ctx.send(Peer::Party(q), BLINDED, &cts_bytes(&blinded[pos]))?;
    }
    let mut best = 0usize;
    for i in 1..k {
        ctx.send(p1, PAIR, &ints_bytes(&[best as i128, i as i128]))?;
        let y = bt[best] - bt[i];
        let best_not_smaller = ctx.compare(p1, |cmp, link, rng| {
            cmp.learn(&cmp_keys, y, KEY_BITS, link, rng)
        })?;
        ctx.t.learn("comparison bit", i128::from(best_not_smaller));
        if best_not_smaller {
            best = i;
        }
    }
    ctx.send(p1, PAIR, &[])?;
    ctx.t.learn("smallest (pi2 position)", best as i128);

    // Stage 2: the indicator, encrypted under zeta, in pi1 order.
    ctx.enter(Stage::Noise)?;
    let u: Vec<bool> = (0..k).map(|i| i == best).collect();
    let enc = ctx.op("encrypt (key holder)", k, |he, rng| {
        he.encrypt_indicator_with_secret_batch(&zeta.secret, &u, NOISE_BITS + 1, rng)
    })?;
    let in_pi1: Vec<Ciphertext> = (0..k).map(|pos| enc[pi2[pos]].clone()).collect();
    let msg = cts_bytes(&in_pi1);
    for q in 0..k {
        ctx.send(Peer::Party(q), INDICATOR, &msg)?;
    }

    // Stage 3.
    ctx.enter(Stage::Shares)?;
    let m = ctx.recv(p1, MASKED)?;
    let masked = parse_cts_any(ctx, p1, &m)?;
    let e = ctx.op_on(p1, "decrypt", masked.len(), |he, _| {
        he.decrypt_batch(&zeta.secret, &masked)
    })?;
    let bound = 1i128 << (NOISE_BITS + SIGMA + 1);
    if e.iter().any(|x| x.unsigned_abs() >= bound.unsigned_abs()) {
        return Err(ctx.fail(p1, "sent a masked noise vector outside its range"));
    }
    for x in &e {
        ctx.t.learn("eta + s", *x);
    }
    let out = reshare(ctx, &e)?;
    ctx.finish();
    Ok(out)
}
