//! Decoder fuzzing every backend runs in its tests (feature `fuzzing`): mutated public keys,
//! secret keys and ciphertexts go through every entry point that parses them. The decoder
//! may refuse (that is the point) but must never panic, and a mutated ciphertext it accepts
//! must still decrypt without error or be refused by decryption: a corrupted input is an
//! error or a value, never a crash, a hang or an allocation its size does not bound.

use crate::he::AdditiveHe;
use crate::keys::{Ciphertext, PublicKey, Rng, SecretKey};
use kinsey_fuzz::{budget, fuzz_n};
use rand_core::SeedableRng;

/// Cases for the key harnesses: at most `key_cases` (a backend whose keys are large or slow
/// to parse, such as TFHE's 60 MB public key, bounds them), else the budget.
fn key_budget(key_cases: u32) -> u32 {
    budget().min(key_cases)
}

/// Fuzz `backend`'s public-key, secret-key and ciphertext decoders from a fresh key pair,
/// with at most `key_cases` cases for each key and `ct_cases` for ciphertexts (both capped
/// by the budget). Panics with the shrunk input on the first failure.
pub fn decoders(backend: &dyn AdditiveHe, key_cases: u32, ct_cases: u32, rng: Rng<'_>) {
    let name = backend.info().name;
    let kp = backend.keygen(rng).expect("keygen");
    let values = [0i128, 1, -1, 12345, -(1 << 40)];
    let cts = backend
        .encrypt_batch(&kp.public, &values, rng)
        .expect("encrypt");
    let kc = key_budget(key_cases);
    fuzz_n(
        &format!("{name} public key"),
        kc,
        vec![kp.public.0.clone()],
        |b| {
            let _ = backend.check_public_key(&PublicKey(b.to_vec()));
            Ok(())
        },
    );
    fuzz_n(
        &format!("{name} secret key"),
        kc,
        vec![kp.secret.as_bytes().to_vec()],
        |b| {
            let _ = backend.public_key_of(&SecretKey::new(b.to_vec()));
            Ok(())
        },
    );
    let seeds: Vec<Vec<u8>> = cts.iter().map(|c| c.0.clone()).collect();
    fuzz_n(
        &format!("{name} ciphertext"),
        budget().min(ct_cases),
        seeds.clone(),
        |b| {
            let c = Ciphertext(b.to_vec());
            if let Some(i) = seeds.iter().position(|s| s == b) {
                // An unmutated seed decrypts to its value.
                let v = backend.decrypt_batch(&kp.secret, std::slice::from_ref(&c));
                if v.as_deref().ok() != Some(&[values[i]][..]) {
                    return Err(format!("seed {i} decrypted to {v:?}, not {}", values[i]));
                }
                return Ok(());
            }
            let _ = backend.decrypt_batch(&kp.secret, std::slice::from_ref(&c));
            let _ = backend.add_batch(&kp.public, std::slice::from_ref(&c), &cts[..1]);
            let _ = backend.add_plain_batch(&kp.public, std::slice::from_ref(&c), &[3]);
            Ok(())
        },
    );
}

/// Records the first message a role sends, then ends the run.
struct Capture(Vec<Vec<u8>>);

impl crate::compare::Duplex for Capture {
    fn send(&mut self, msg: Vec<u8>) -> Result<(), crate::BackendError> {
        self.0.push(msg);
        Ok(())
    }
    fn recv(&mut self) -> Result<Vec<u8>, crate::BackendError> {
        Err(crate::BackendError::Other("capture ends here".into()))
    }
}

/// Hands one (mutated) message to a role, then ends the run.
struct Feed(Option<Vec<u8>>);

impl crate::compare::Duplex for Feed {
    fn send(&mut self, _msg: Vec<u8>) -> Result<(), crate::BackendError> {
        Ok(())
    }
    fn recv(&mut self) -> Result<Vec<u8>, crate::BackendError> {
        self.0
            .take()
            .ok_or_else(|| crate::BackendError::Other("feed ends here".into()))
    }
}

/// Fuzz a secure comparison's public-key check and the helper's parsing of the learner's
/// first message (mutated from a real one).
pub fn comparison(cmp: &dyn crate::SecureComparison, rng: Rng<'_>) {
    let kp = cmp.keygen(rng).expect("keygen");
    let bits = 16;
    let mut cap = Capture(Vec::new());
    let _ = cmp.learn(&kp, 1234, bits, &mut cap, rng);
    assert!(!cap.0.is_empty(), "the learner speaks first");
    fuzz_n(
        "comparison public key",
        budget(),
        vec![kp.public.0.clone()],
        |b| {
            let _ = cmp.check_public_key(&PublicKey(b.to_vec()));
            Ok(())
        },
    );
    let mut r = rand_chacha::ChaCha20Rng::from_seed([5; 32]);
    let r = std::cell::RefCell::new(&mut r);
    fuzz_n("comparison first message", budget(), cap.0.clone(), |b| {
        let mut feed = Feed(Some(b.to_vec()));
        let mut g = r.borrow_mut();
        let _ = cmp.help(&kp.public, -77, bits, &mut feed, &mut **g);
        Ok(())
    });
}
