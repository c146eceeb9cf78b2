//! `kinsey keys`: Paillier key files in python-paillier's JSON Web Key format (pheutil's),
//! and encrypted numbers in its serialized form, so keys and ciphertexts move between
//! kinsey and python-paillier.
//!
//! kinsey's own key files are pheutil files with two extra members python-paillier ignores:
//! `p`/`q` in the private key (python-paillier >= 1.4 builds `PaillierPrivateKey(pub, p, q)`
//! from them) and `kinsey_hs` in the public key (the base of kinsey's short-exponent
//! encryption randomness). `export` drops `kinsey_hs`; `import` recovers the primes from
//! `lambda` when the file has no `p`/`q`, and draws a fresh `h_s`.

use kinsey_backend::AdditiveHe;
use kinsey_backend_paillier::{Paillier, phe, public_key_bits};
use kinsey_core::{Error, Result};
use kinsey_data::output::Outputs;
use std::path::{Path, PathBuf};

/// The base-16 exponent of kinsey's 2^-32 fixed point in python-paillier's encoding.
pub(crate) const PHE_EXPONENT: i32 = -(kinsey::classifier::FIXED_POINT_BITS as i32) / 4;

/// The text of a key or number file, at most [`MAX_KEY_FILE`] bytes. A path that is JSON
/// itself (a number pasted on the command line) gets an error that says so.
fn read(path: &Path) -> Result<String> {
    let s = path.to_string_lossy();
    if s.trim_start().starts_with('{') {
        return Err(Error::param(
            "path",
            "expected the path of a JSON file, got JSON text: write it to a file and pass the \
             file's path",
        ));
    }
    kinsey_data::read_text_at_most(path, MAX_KEY_FILE, "key or number file")
}

/// Largest key or number file `kinsey keys` reads (a 16384-bit private key in JSON is
/// about 10 KB).
const MAX_KEY_FILE: u64 = 1 << 20;

fn in_file(path: &Path) -> impl Fn(kinsey_backend::BackendError) -> Error + '_ {
    move |e| Error::format(path, e.to_string())
}

fn kid(what: &str) -> String {
    format!(
        "Paillier {what} made by kinsey {}",
        env!("CARGO_PKG_VERSION")
    )
}

fn write_pair(out: &Path, private: &str, public: &str) -> Result<Vec<PathBuf>> {
    let mut o = Outputs::new();
    o.ensure_dir(out)?;
    // 0600 from creation: the file holds p, q, lambda and mu.
    o.write_private(&out.join("private.json"), format!("{private}\n").as_bytes())?;
    o.write(&out.join("public.json"), format!("{public}\n").as_bytes())?;
    o.commit()
}

/// A backend sized for a key, refusing small keys unless allowed.
fn backend_for(bits: u32, allow_insecure_test_keys: bool) -> Result<Paillier> {
    Ok(Paillier::new(bits, allow_insecure_test_keys)?)
}

/// `kinsey keys generate`: a fresh key pair written as `private.json` and `public.json`.
pub(crate) fn generate(
    bits: u32,
    allow_insecure_test_keys: bool,
    out: &Path,
    rng: &mut dyn rand_core::CryptoRng,
) -> Result<Vec<PathBuf>> {
    let b = backend_for(bits, allow_insecure_test_keys)?;
    let kp = b.keygen(rng)?;
    let private = phe::private_key_to_jwk(&kp.public, &kp.secret, &kid("private key"), true)?;
    let public = phe::public_key_to_jwk(&kp.public, &kid("public key"), true)?;
    write_pair(out, &private, &public)
}

/// `kinsey keys export`: python-paillier's files (no kinsey members) from a kinsey private key.
pub(crate) fn export(
    private: &Path,
    out: &Path,
    rng: &mut dyn rand_core::CryptoRng,
) -> Result<Vec<PathBuf>> {
    let kp = phe::private_key_from_jwk(&read(private)?, rng).map_err(in_file(private))?;
    let sk = phe::private_key_to_jwk(&kp.public, &kp.secret, &kid("private key"), false)?;
    let pk = phe::public_key_to_jwk(&kp.public, &kid("public key"), false)?;
    write_pair(out, &sk, &pk)
}

/// `kinsey keys import`: a pheutil private key file into kinsey's files.
pub(crate) fn import(
    private: &Path,
    out: &Path,
    rng: &mut dyn rand_core::CryptoRng,
) -> Result<Vec<PathBuf>> {
    let kp = phe::private_key_from_jwk(&read(private)?, rng).map_err(in_file(private))?;
    let sk = phe::private_key_to_jwk(&kp.public, &kp.secret, &kid("private key"), true)?;
    let pk = phe::public_key_to_jwk(&kp.public, &kid("public key"), true)?;
    write_pair(out, &sk, &pk)
}

/// `kinsey keys encrypt`: a real number in kinsey's fixed point under a public key file,
/// as python-paillier's serialized `EncryptedNumber` (exponent -8).
pub(crate) fn encrypt(
    public: &Path,
    value: f64,
    allow_insecure_test_keys: bool,
    rng: &mut dyn rand_core::CryptoRng,
) -> Result<String> {
    if !value.is_finite() {
        return Err(Error::param(
            "value",
            format!("{value} is not a finite number"),
        ));
    }
    let pk = phe::public_key_from_jwk(&read(public)?, rng).map_err(in_file(public))?;
    let b = backend_for(public_key_bits(&pk)?, allow_insecure_test_keys)?;
    let m = kinsey::classifier::encode_fixed(value)?;
    let c = b.encrypt(&pk, m, rng)?;
    Ok(phe::encrypted_to_json(&pk, &c, PHE_EXPONENT)?)
}

/// `kinsey keys decrypt`: a serialized `EncryptedNumber` (any exponent) with a private key.
pub(crate) fn decrypt(
    private: &Path,
    number: &Path,
    allow_insecure_test_keys: bool,
    rng: &mut dyn rand_core::CryptoRng,
) -> Result<f64> {
    let kp = phe::private_key_from_jwk(&read(private)?, rng).map_err(in_file(private))?;
    let b = backend_for(public_key_bits(&kp.public)?, allow_insecure_test_keys)?;
    let (c, e) = phe::encrypted_from_json(&kp.public, &read(number)?).map_err(in_file(number))?;
    // python-paillier's exponents are small (-8 for 2^-32 fixed point); one whose value
    // 16^e cannot carry the plaintext (0 or infinity) is refused, not printed as 0.
    if !(-MAX_PHE_EXPONENT..=MAX_PHE_EXPONENT).contains(&e) {
        return Err(Error::format(
            number,
            format!(
                "exponent \"e\" = {e} is outside -{MAX_PHE_EXPONENT}..={MAX_PHE_EXPONENT} \
                 (python-paillier writes small exponents, -8 for 2^-32 fixed point)"
            ),
        ));
    }
    let m = b.decrypt(&kp.secret, &c).map_err(in_file(number))?;
    let v = m as f64 * 16f64.powi(e);
    if !v.is_finite() || (m != 0 && v == 0.0) {
        return Err(Error::format(
            number,
            format!("the value m 16^{e} does not fit a finite non-zero f64"),
        ));
    }
    Ok(v)
}

/// Largest base-16 exponent `kinsey keys decrypt` accepts (16^64 = 2^256).
const MAX_PHE_EXPONENT: i32 = 64;

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    #[test]
    fn generate_encrypt_decrypt_export_import() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
        let dir = tempfile::tempdir().expect("tmp");
        let e = generate(1024, false, dir.path(), &mut rng).expect_err("weak key refused");
        assert!(e.to_string().contains("allow_insecure_test_keys"), "{e}");
        assert!(!dir.path().join("private.json").exists(), "nothing partial");
        generate(512, true, dir.path(), &mut rng).expect("test key");
        let ct = encrypt(&dir.path().join("public.json"), -2.75, true, &mut rng).expect("enc");
        assert!(ct.contains("\"e\":-8"), "{ct}");
        let ctf = dir.path().join("ct.json");
        std::fs::write(&ctf, &ct).expect("write");
        let v = decrypt(&dir.path().join("private.json"), &ctf, true, &mut rng).expect("dec");
        assert_eq!(v, -2.75);
        // An absurd exponent is refused, naming it, instead of printing 0.
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, ct.replace("\"e\":-8", "\"e\":-1000000000")).expect("write");
        let e = decrypt(&dir.path().join("private.json"), &bad, true, &mut rng).expect_err("e");
        assert!(e.to_string().contains("exponent"), "{e}");
        // A number pasted instead of a path says so.
        let inline = Path::new(r#"{"v": "12", "e": -8}"#);
        let e = decrypt(&dir.path().join("private.json"), inline, true, &mut rng).expect_err("j");
        assert!(e.to_string().contains("JSON text"), "{e}");
        let ex = dir.path().join("export");
        export(&dir.path().join("private.json"), &ex, &mut rng).expect("export");
        let text = std::fs::read_to_string(ex.join("public.json")).expect("read");
        assert!(!text.contains("kinsey_hs") && text.contains("PAI-GN1"));
        let im = dir.path().join("import");
        import(&ex.join("private.json"), &im, &mut rng).expect("import");
        // The re-imported key decrypts what the original public key encrypted.
        let v = decrypt(&im.join("private.json"), &ctf, true, &mut rng).expect("dec");
        assert_eq!(v, -2.75);
        std::fs::write(&ctf, "{\"v\": \"17\"}").expect("write");
        let e = decrypt(&im.join("private.json"), &ctf, true, &mut rng).expect_err("bad");
        assert!(
            e.to_string().contains("ct.json") && e.to_string().contains("\"e\""),
            "{e}"
        );
    }
}
