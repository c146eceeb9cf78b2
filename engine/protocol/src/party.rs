//! The party role: setup, Stage 1 (shares of the key, routed through pi1), Stage 2
//! (the selected noise, multiplied along the parties) and Stage 3 (masked shares).

use crate::faults::Leak;
use crate::messages::*;
use crate::params::{KEY_BITS, NOISE_BITS, NOISE_OFFSET, SIGMA};
use crate::reshare::reshare;
use crate::role::*;
use crate::transport::{Peer, Stage};
use crate::wire::*;
use kinsey_backend::compare::{frame, unframe};
use kinsey_backend::{Ciphertext, KeyPair, PublicKey, SecretKey};
use kinsey_core::Result;
use kinsey_learn::aggregate::{self, PartyInput};
use rand_core::RngCore;

/// The keys a party holds after setup: the parties' key pair `xi`, the curator's public
/// key `zeta`, and (party 0 only) the curator's comparison key.
struct Keys {
    xi: KeyPair,
    zeta_pk: PublicKey,
    cmp_pk: Option<PublicKey>,
}

/// Party `j` (0-based). Party 0 also makes the parties' key, draws pi1, plays the helper in
/// every comparison and masks the selected noise in Stage 3.
pub(crate) fn party(ctx: &mut Ctx, j: usize, input: &PartyInput) -> R<Vec<i128>> {
    let keys = setup(ctx, j)?;
    ctx.enter(Stage::Smallest)?;
    let pi1 = smallest(ctx, j, input, &keys)?;
    ctx.enter(Stage::Noise)?;
    let total = noise(ctx, j, input, &keys, &pi1)?;
    ctx.enter(Stage::Shares)?;
    let out = shares(ctx, j, input, &keys, &total)?;
    ctx.finish();
    Ok(out)
}

/// Setup: the parties' key xi (made by P1, shared among parties), the curator's key zeta.
fn setup(ctx: &mut Ctx, j: usize) -> R<Keys> {
    let k = ctx.k;
    let p1 = Peer::Party(0);
    let c = Peer::Curator;
    let xi = if j == 0 {
        let kp = ctx.op("keygen", 1, |he, rng| he.keygen(rng))?;
        for q in 1..k {
            ctx.send(Peer::Party(q), XI_SK, kp.secret.as_bytes())?;
        }
        ctx.send(c, XI_PK, &kp.public.0)?;
        kp
    } else {
        let sk = SecretKey::new(ctx.recv(p1, XI_SK)?);
        let pk = ctx.op_on(p1, "key check", 0, |he, _| he.public_key_of(&sk))?;
        key_pair(&pk.0, sk)
    };
    let zeta_pk = PublicKey(ctx.recv(c, ZETA_PK)?);
    ctx.op_on(c, "key check", 0, |he, _| he.check_public_key(&zeta_pk))?;
    let cmp_pk = if j == 0 {
        let pk = PublicKey(ctx.recv(c, CMP_PK)?);
        ctx.cmp
            .check_public_key(&pk)
            .map_err(|e| ctx.fail(c, format!("sent a bad comparison key: {e}")))?;
        Some(pk)
    } else {
        None
    };

    Ok(Keys {
        xi,
        zeta_pk,
        cmp_pk,
    })
}

/// Stage 1: shares of the key `n_j K + j`, routed through pi1; party 0 then helps the
/// curator compare. Returns pi1.
fn smallest(ctx: &mut Ctx, j: usize, input: &PartyInput, keys: &Keys) -> R<Vec<usize>> {
    let k = ctx.k;
    let p1 = Peer::Party(0);
    let c = Peer::Curator;
    let Keys {
        xi,
        zeta_pk,
        cmp_pk,
    } = keys;
    let key = input.n as i128 * k as i128 + j as i128;
    let a = ctx.random_below_pow2(KEY_BITS + SIGMA);
    let b = key - a;
    ctx.t.learn("a (own share)", a);
    let pi1 = if j == 0 {
        let p = ctx.permutation();
        let bytes = ints_bytes(&p.iter().map(|&x| x as i128).collect::<Vec<_>>());
        for q in 1..k {
            ctx.send(Peer::Party(q), PI1, &bytes)?;
        }
        p
    } else {
        let b = ctx.recv(p1, PI1)?;
        parse_perm(ctx, p1, &b)?
    };
    let dest = pi1[j];
    let source = pi1.iter().position(|&x| x == j).unwrap_or(j);
    let zb = ctx.op("encrypt", 1, |he, rng| he.encrypt_batch(zeta_pk, &[b], rng))?;
    // What the network shows may not depend on pi1: every party sends one share frame to
    // every other party, the real one to P_pi1(j) and a random one of the same length to the
    // rest (none is real when pi1(j) = j), in party order; every party reads one from every
    // other party and keeps the one from P_pi1^-1(j). TLS makes the two kinds look alike;
    // the receiver drops a dummy after its frame is authenticated.
    let real = frame(&[&a.to_le_bytes(), &zb[0].0]);
    for q in (0..k).filter(|&q| q != j) {
        if q == dest {
            ctx.send(Peer::Party(q), A_SHARE, &real)?;
        } else if ctx.leak != Some(Leak::RoutedShares) {
            let mut dummy = vec![0u8; real.len()];
            ctx.rng.fill_bytes(&mut dummy);
            ctx.send(Peer::Party(q), A_SHARE, &dummy)?;
        }
    }
    let mut held = None;
    for q in (0..k).filter(|&q| q != j) {
        if ctx.leak == Some(Leak::RoutedShares) && q != source {
            continue;
        }
        let src = Peer::Party(q);
        let m = ctx.recv(src, A_SHARE)?;
        if q != source {
            continue;
        }
        let parts =
            unframe(&m, 2).map_err(|e| ctx.fail(src, format!("sent a malformed share: {e}")))?;
        let a_in: [u8; 16] = parts[0]
            .try_into()
            .map_err(|_| ctx.fail(src, "sent a share that is not 16 bytes"))?;
        held = Some((
            i128::from_le_bytes(a_in),
            vec![Ciphertext(parts[1].to_vec())],
            src,
        ));
    }
    let (a_held, zb_held, from) = match held {
        Some(h) => h,
        None => (a, zb, ctx.me),
    };
    if !(0..1i128 << (KEY_BITS + SIGMA)).contains(&a_held) {
        return Err(ctx.fail(from, "sent a share outside its range"));
    }
    let zb_fwd = ctx.op_on(from, "rerandomize", 1, |he, rng| {
        he.rerandomize_batch(zeta_pk, &zb_held, rng)
    })?;
    let xa = ctx.op("encrypt (key holder)", 1, |he, rng| {
        he.encrypt_with_secret_batch(&xi.secret, &[a_held], rng)
    })?;
    ctx.send(c, POSITION, &cts_bytes(&[xa[0].clone(), zb_fwd[0].clone()]))?;
    let m = ctx.recv(c, BLINDED)?;
    let blinded = parse_cts(ctx, c, &m, 1)?;
    let a_tilde = ctx.op_on(c, "decrypt", 1, |he, _| {
        he.decrypt_batch(&xi.secret, &blinded)
    })?[0];
    ctx.t.learn("a~ (own position)", a_tilde);
    if j != 0 {
        ctx.send(p1, A_TILDE, &a_tilde.to_le_bytes())?;
    } else {
        let mut at = vec![a_tilde];
        for q in 1..k {
            let b = ctx.recv(Peer::Party(q), A_TILDE)?;
            at.push(parse_ints(ctx, Peer::Party(q), &b, Some(1))?[0]);
        }
        for (i, v) in at.iter().enumerate() {
            ctx.t.learn(&format!("a~[{i}]"), *v);
        }
        let pk = cmp_pk
            .as_ref()
            .ok_or_else(|| ctx.own("no comparison key"))?;
        loop {
            let m = ctx.recv(c, PAIR)?;
            let pair = parse_ints(ctx, c, &m, None)?;
            match pair.as_slice() {
                [] => break,
                &[x, y] => {
                    let (x, y) = (x as usize, y as usize);
                    if x >= k || y >= k || x == y {
                        return Err(ctx.fail(c, "asked for a comparison of invalid positions"));
                    }
                    let diff = at[x] - at[y];
                    ctx.compare(c, |cmp, link, rng| {
                        cmp.help(pk, diff, KEY_BITS, link, rng).map(|_| false)
                    })?;
                }
                _ => return Err(ctx.fail(c, "sent a malformed comparison request")),
            }
        }
    }

    Ok(pi1)
}

/// Stage 2: `psi_j = zeta(v_j)^eta_j`, multiplied along the parties; party 0 ends up with
/// the product (the others return nothing).
fn noise(
    ctx: &mut Ctx,
    j: usize,
    input: &PartyInput,
    keys: &Keys,
    pi1: &[usize],
) -> R<Vec<Ciphertext>> {
    let k = ctx.k;
    let d = input.w.len();
    let c = Peer::Curator;
    let zeta_pk = &keys.zeta_pk;
    let m = ctx.recv(c, INDICATOR)?;
    let ind = parse_cts(ctx, c, &m, k)?;
    let mine = ind[pi1[j]].clone();
    // Already in units of 2^-32 / K (`aggregate::NoiseCalibration::sample`).
    let eta: &[i128] = &input.noise;
    // Offset into [0, 2^(NOISE_BITS + 1)): the indicator's width (P1 takes the offset
    // back out with its mask in Stage 3).
    let shifted: Vec<i128> = eta.iter().map(|v| v + NOISE_OFFSET).collect();
    let psi = ctx.op_chunked(c, "multiply by plaintext", d, |he, _, r| {
        he.mul_plain_one_batch(zeta_pk, &mine, &shifted[r])
    })?;
    let me = ctx.me;
    let psi = ctx.op_chunked(me, "rerandomize", d, |he, rng, r| {
        he.rerandomize_batch(zeta_pk, &psi[r], rng)
    })?;
    let total = if k == 1 {
        sanitize(ctx, c, zeta_pk, psi)?
    } else if j == 0 {
        ctx.send(Peer::Party(1), CHAIN, &cts_bytes(&psi))?;
        let last = Peer::Party(k - 1);
        let m = ctx.recv(last, CHAIN)?;
        let sum = parse_cts(ctx, last, &m, d)?;
        sanitize(ctx, last, zeta_pk, sum)?
    } else {
        let prev = Peer::Party(j - 1);
        let m = ctx.recv(prev, CHAIN)?;
        let incoming = parse_cts(ctx, prev, &m, d)?;
        // One-hot: at most one of the two sums is nonzero.
        let prod = ctx.op_chunked(prev, "add", d, |he, _, r| {
            he.add_disjoint_batch(zeta_pk, &incoming[r.clone()], &psi[r])
        })?;
        ctx.send(Peer::Party((j + 1) % k), CHAIN, &cts_bytes(&prod))?;
        Vec::new()
    };

    Ok(total)
}

/// The chain's sum made fit for the curator's eyes (its key decrypts it after Stage 3's
/// mask): one sanitisation, whatever the number of parties (TFHE: one bootstrap per bit;
/// Paillier: nothing, its re-randomised sums already look fresh).
fn sanitize(
    ctx: &mut Ctx,
    from: Peer,
    zeta_pk: &PublicKey,
    total: Vec<Ciphertext>,
) -> R<Vec<Ciphertext>> {
    ctx.op_chunked(from, "sanitize", total.len(), |he, rng, r| {
        he.sanitize_batch(zeta_pk, &total[r], rng)
    })
}

/// Stage 3: P1 masks zeta(eta) with s; shares of K w_s; re-share and publish.
fn shares(
    ctx: &mut Ctx,
    j: usize,
    input: &PartyInput,
    keys: &Keys,
    total: &[Ciphertext],
) -> R<Vec<i128>> {
    let k = ctx.k;
    let d = input.w.len();
    let c = Peer::Curator;
    let zeta_pk = &keys.zeta_pk;
    let mut v: Vec<i128> = input
        .w
        .iter()
        .map(|&x| aggregate::encode_fixed(x))
        .collect::<Result<_>>()
        .map_err(|e| ctx.own(e))?;
    if j == 0 {
        let s: Vec<i128> = (0..d)
            .map(|_| ctx.random_below_pow2(NOISE_BITS + SIGMA))
            .collect();
        // The total is a sum of re-randomised ciphertexts: adding s needs no fresh
        // encryption (under TFHE it also needs no bootstrap).
        let from = Peer::Party(k - 1);
        let unshift: Vec<i128> = s.iter().map(|v| v - NOISE_OFFSET).collect();
        let masked = ctx.op_on(from, "add plaintext", d, |he, _| {
            he.add_plain_batch(zeta_pk, total, &unshift)
        })?;
        ctx.send(c, MASKED, &cts_bytes(&masked))?;
        for (vi, si) in v.iter_mut().zip(&s) {
            *vi -= si;
        }
    }
    reshare(ctx, &v)
}
