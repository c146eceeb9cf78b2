use super::*;
use rand_core::SeedableRng;

/// tfhe-rs's bootstrap counter is process-wide: the tests that count bootstraps and the
/// tests that bootstrap run one at a time (each uses both cores anyway).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn rng() -> rand_chacha::ChaCha20Rng {
    rand_chacha::ChaCha20Rng::seed_from_u64(14)
}

#[test]
fn tfhe_passes_the_conformance_suite() {
    let _serial = serial();
    kinsey_backend::conformance::run(&Tfhe::new(), &mut rng()).expect("conformance");
}

/// Keys: 2 cases each (a 60 MB public key whose mutation survives the format checks takes
/// seconds to decompress); ciphertexts: 32 (a 1 MiB ciphertext costs about 0.1 s a case
/// through decrypt, add and add-plaintext). The decoders under it have fast harnesses of
/// their own (`cipher::tests`, `keys::tests`).
#[test]
fn fuzz_tfhe_keys_and_ciphertexts() {
    let _serial = serial();
    kinsey_backend::fuzzing::decoders(&Tfhe::new(), 2, 32, &mut rng());
}

#[test]
fn forged_headers_and_blocks_are_refused() {
    let _serial = serial();
    let he = Tfhe::new();
    let mut r = rng();
    let kp = he.keygen(&mut r).expect("keygen");
    let c = he.encrypt(&kp.public, 42, &mut r).expect("encrypt");
    // Header: 23 bytes, then per block degree, level, u32 length.
    let mut deg = c.clone();
    deg.0[23] = 16;
    let e = he.decrypt(&kp.secret, &deg).expect_err("refused");
    assert!(e.to_string().contains("degree 16"), "{e}");
    let mut lvl = c.clone();
    lvl.0[24] = 9;
    assert!(he.decrypt(&kp.secret, &lvl).is_err());
    let mut len = c.clone();
    len.0[25..29].copy_from_slice(&u32::MAX.to_le_bytes());
    let e = he.decrypt(&kp.secret, &len).expect_err("refused");
    assert!(e.to_string().contains("bytes"), "{e}");
    // A block that claims a lower noise level than it has is refused by tfhe-rs's check.
    let mut under = c.clone();
    under.0[24] = 0;
    let e = he.decrypt(&kp.secret, &under).expect_err("refused");
    assert!(e.to_string().contains("refused"), "{e}");
    // Garbage inside a block.
    let mut body = c.clone();
    for b in &mut body.0[40..80] {
        *b ^= 0xa5;
    }
    assert!(he.decrypt(&kp.secret, &body).is_err());
    // The right number of blocks, with a kind that does not exist.
    let mut kind = c.clone();
    kind.0[4] = 7;
    assert!(he.decrypt(&kp.secret, &kind).is_err());
    assert_eq!(he.decrypt(&kp.secret, &c).expect("intact"), 42);
}

#[test]
fn keys_of_another_client_key_are_refused() {
    let _serial = serial();
    let he = Tfhe::new();
    let mut r = rng();
    let a = he.keygen(&mut r).expect("keygen");
    let b = he.keygen(&mut r).expect("keygen");
    // Secret key A with public half B: the probe catches it.
    let (_, pk_a) = keys::parse_secret_parts(a.secret.as_bytes()).expect("parts");
    let cut = a.secret.as_bytes().len() - pk_a.len();
    let mixed = SecretKey::new([&a.secret.as_bytes()[..cut], &b.public.0[..]].concat());
    let e = he.public_key_of(&mixed).expect_err("refused");
    assert!(e.to_string().contains("another client key"), "{e}");
    // A truncated public key, and one with trailing bytes.
    assert!(
        he.check_public_key(&PublicKey(a.public.0[..1000].to_vec()))
            .is_err()
    );
    let mut long = a.public.0.clone();
    long.push(0);
    assert!(he.check_public_key(&PublicKey(long)).is_err());
}

#[test]
fn header_bounds_never_depend_on_the_plaintext() {
    let _serial = serial();
    let he = Tfhe::new();
    let mut r = rng();
    let kp = he.keygen(&mut r).expect("keygen");
    let headers = |c: &Ciphertext| -> Vec<(u8, u8)> {
        let mut out = Vec::new();
        let mut at = 23;
        while at < c.0.len() {
            out.push((c.0[at], c.0[at + 1]));
            let len = u32::from_le_bytes([c.0[at + 2], c.0[at + 3], c.0[at + 4], c.0[at + 5]]);
            at += 6 + len as usize;
        }
        out
    };
    let e = he
        .encrypt_batch(&kp.public, &[0, -1, 1 << 100], &mut r)
        .expect("encrypt");
    assert!(e.iter().all(|c| headers(c) == headers(&e[0])));
    let p = he
        .add_plain_batch(&kp.public, &e, &[0, 3, -1])
        .expect("add plain");
    assert!(p.iter().all(|c| headers(c) == headers(&p[0])));
    // Re-randomising an integer is a fresh encryption of zero per block, no bootstrap;
    // sanitising bootstraps all 64 blocks.
    let pbs = tfhe::get_pbs_count();
    let rr = he.rerandomize_batch(&kp.public, &p, &mut r).expect("rr");
    assert_eq!(tfhe::get_pbs_count(), pbs);
    assert!(rr.iter().all(|c| headers(c) == headers(&rr[0])));
    let sn = he
        .sanitize_batch(&kp.public, &rr, &mut r)
        .expect("sanitise");
    assert_eq!(tfhe::get_pbs_count() - pbs, 3 * 64);
    assert!(sn.iter().all(|c| headers(c) == headers(&sn[0])));
    assert_eq!(
        he.decrypt_batch(&kp.secret, &sn).expect("decrypt"),
        [0, 2, (1 << 100) - 1]
    );
    let ind = he
        .encrypt_indicator_with_secret_batch(&kp.secret, &[true], 81, &mut r)
        .expect("indicator");
    let s = he
        .mul_plain_one_batch(&kp.public, &ind[0], &[0, 1, (1 << 81) - 1, 1 << 70])
        .expect("select");
    assert!(s.iter().all(|c| headers_bits(c) == headers_bits(&s[0])));
    // 81 blocks of one bit: 2^81 and negative values are outside the indicator's width.
    for bad in [1i128 << 81, -1] {
        let e = he
            .mul_plain_one_batch(&kp.public, &ind[0], &[bad])
            .expect_err("refused");
        assert!(e.to_string().contains("2^81"), "{e}");
    }
    // Re-randomising a selection costs no bootstrap; sanitising bootstraps its 81 bits
    // into 41 base-4 blocks, and the 23 public zeros above are encrypted (degree 0,
    // nominal noise), so a plaintext added to them later stays hidden.
    let pbs = tfhe::get_pbs_count();
    let rr = he
        .rerandomize_batch(&kp.public, &s[..1], &mut r)
        .expect("rerandomise");
    assert_eq!(tfhe::get_pbs_count(), pbs);
    assert_eq!(rr[0].0[4], 2, "still a selection");
    assert_eq!(rr[0].0[23], 2, "budget: selector and one fresh zero");
    let clean = he
        .sanitize_batch(&kp.public, &rr, &mut r)
        .expect("sanitise");
    assert_eq!(tfhe::get_pbs_count() - pbs, 81);
    let h = headers(&clean[0]);
    assert!(h[..40].iter().all(|&x| x == (3, 3)), "{h:?}");
    assert_eq!(h[40], (1, 1), "{h:?}");
    assert!(h[41..].iter().all(|&x| x == (0, 1)), "{h:?}");
    assert_eq!(he.decrypt(&kp.secret, &clean[0]).expect("decrypt"), 0);
    let masked = he
        .add_plain_batch(&kp.public, &clean, &[1 << 120])
        .expect("mask");
    assert_eq!(
        he.decrypt(&kp.secret, &masked[0]).expect("decrypt"),
        1 << 120
    );
}

/// Per-block headers of a selection (its budget byte after the block count).
fn headers_bits(c: &Ciphertext) -> Vec<(u8, u8)> {
    let mut out = vec![(c.0[4], c.0[23])];
    let mut at = 24;
    while at < c.0.len() {
        out.push((c.0[at], c.0[at + 1]));
        let len = u32::from_le_bytes([c.0[at + 2], c.0[at + 3], c.0[at + 4], c.0[at + 5]]);
        at += 6 + len as usize;
    }
    out
}

#[test]
fn long_chains_of_selections_stay_within_the_noise_budget() {
    let _serial = serial();
    // 15 parties' selections (one of them selected), each re-randomised, summed along the
    // chain: the budget (variance in nominal units, at most 25) would reach 30, so the sum
    // is bootstrapped once on the way; the result is exact, and the budget byte is checked
    // on the wire.
    let he = Tfhe::new();
    let mut r = rng();
    let kp = he.keygen(&mut r).expect("keygen");
    let k = 15;
    let bits: Vec<bool> = (0..k).map(|i| i == 9).collect();
    let ind = he
        .encrypt_indicator_with_secret_batch(&kp.secret, &bits, 4, &mut r)
        .expect("indicator");
    let pbs = tfhe::get_pbs_count();
    let mut sum: Option<Vec<Ciphertext>> = None;
    for c in &ind {
        let t = he
            .mul_plain_one_batch(&kp.public, c, &[13, 6])
            .expect("select");
        let t = he.rerandomize_batch(&kp.public, &t, &mut r).expect("rr");
        sum = Some(match sum {
            None => t,
            Some(s) => he.add_disjoint_batch(&kp.public, &s, &t).expect("add"),
        });
        let s = sum.as_ref().expect("sum");
        let units = s[0].0[23];
        assert!((1..=24).contains(&units), "budget {units}");
    }
    let sum = sum.expect("sum");
    // One refresh of two 4-bit selections on the way (after 12 terms).
    assert_eq!(tfhe::get_pbs_count() - pbs, 8);
    assert_eq!(
        he.decrypt_batch(&kp.secret, &sum).expect("decrypt"),
        [13, 6]
    );
    let clean = he
        .sanitize_batch(&kp.public, &sum, &mut r)
        .expect("sanitise");
    assert_eq!(
        he.decrypt_batch(&kp.secret, &clean).expect("decrypt"),
        [13, 6]
    );
    // A forged budget above 25 (or 0) is refused.
    for forged in [0u8, 26] {
        let mut c = sum[0].clone();
        c.0[23] = forged;
        let e = he.decrypt(&kp.secret, &c).expect_err("refused");
        assert!(e.to_string().contains("budget"), "{e}");
    }
}
