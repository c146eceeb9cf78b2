//! Paillier encryption (Paillier 1999) on GMP through rug, behind kinsey's `AdditiveHe`,
//! and DGK comparison (module [`dgk`]) for Stage 1 of the protocol.
//!
//! * Keys: n = p q with p, q random primes of equal size, gcd(n, (p-1)(q-1)) = 1 checked;
//!   g = n + 1. 2048-bit n by default (3072 and 4096 available); smaller keys are refused
//!   unless `allow_insecure_test_keys` is set (tests only).
//! * Encryption: `(1 + m n) h_s^a mod n^2` with `h_s = (-y^2)^n mod n^2` fixed in the public
//!   key and `a` a fresh secret exponent of `4 x security` bits (448 at 2048-bit n): the
//!   randomness `r^n` of textbook Paillier becomes `(y'^a)^n`, so the ciphertext is an
//!   ordinary Paillier ciphertext (python-paillier decrypts it) but costs 112 table
//!   multiplications instead of a 2048-bit exponentiation. This is the short-exponent
//!   variant of Damgard, Jurik and Nielsen (2010); its semantic security rests on DCR plus
//!   the assumption that a short exponent of a random n-th residue is indistinguishable
//!   from a full one (documented in ARCHITECTURE.md). The exponentiation is constant-time
//!   ([`fixed_base`]).
//! * Encryption by the key holder is the public key's encryption (a CRT path would reduce by
//!   the secret p^2 and q^2, which constant time made 50 times slower).
//! * Decryption: CRT over p^2 and q^2; the exponents p - 1 and q - 1 are secret, so the
//!   modular exponentiations use GMP's constant-time `secure_pow_mod`.
//! * Multiplication by a plaintext constant uses `secure_pow_mod` too: in the protocol the
//!   constant can be secret noise (Stage 2).
//! * Plaintexts are signed integers mod n (values above n/2 are negative); the interface
//!   carries them as i128, so |m| < 2^126.
//! * Every incoming ciphertext is validated: right length, bound to this key, 0 < c < n^2
//!   and gcd(c, n) = 1.
//! * Batches run in parallel with rayon; randomness is drawn from the caller's CSPRNG first.
//! * Keys and ciphertexts convert to and from python-paillier's JSON formats ([`phe`]).

mod arith;
pub mod calibrate;
pub mod dgk;
pub mod fixed_base;
mod gpu;
mod keys;
pub mod phe;
#[cfg(test)]
mod review;

use arith::*;
use fixed_base::FixedBase;
use keys::*;
use kinsey_backend::registry::BackendOptions;
use kinsey_backend::{
    AdditiveHe, BackendError, BackendInfo, Ciphertext, KeyPair, PublicKey, Registry, Rng,
    SecretKey, SecureComparison, same_len,
};
use rayon::prelude::*;
use rug::integer::Order;
use rug::{Complete, Integer};

use std::sync::Arc;

pub use arith::{randomness_bits, security_bits};
pub use calibrate::{Crossovers, MeasurementPlan, Op};
pub use keys::public_key_bits;
pub use kinsey_kernels::DevicePref;

/// Smallest key accepted without `allow_insecure_test_keys`.
pub(crate) const MIN_KEY_BITS: u32 = 2048;

/// Register `paillier` in a registry.
pub fn register(registry: &mut Registry) {
    registry.register("paillier", create);
}

fn create(opts: &BackendOptions) -> Result<Arc<dyn AdditiveHe>, BackendError> {
    if opts.gpu_min_batch == Some(0) {
        return Err(BackendError::Param {
            name: "crypto.gpu_min_batch".into(),
            msg: "must be >= 1 (the smallest batch device = \"auto\" sends to the GPU), got 0"
                .into(),
        });
    }
    let p = Paillier::new(
        opts.key_bits.unwrap_or(MIN_KEY_BITS),
        opts.allow_insecure_test_keys,
    )?;
    let pref = opts.device.unwrap_or(DevicePref::Cpu);
    Ok(Arc::new(match opts.gpu_min_batch {
        Some(m) => p.with_device(pref, m)?,
        // Under `auto` without a threshold, each operation's is measured on this machine.
        None if pref == DevicePref::Auto => p.with_measured_device(pref)?,
        None => p.with_device(pref, 1)?,
    }))
}

/// A device preference as users write it: `auto`, `cpu` or `gpu`.
pub fn parse_device(s: &str) -> Result<DevicePref, BackendError> {
    s.parse()
        .map_err(|e: kinsey_core::device::UnknownDevice| BackendError::Other(e.to_string()))
}

/// The Paillier backend for one key size.
#[derive(Clone)]
pub struct Paillier {
    key_bits: u32,
    public: Arc<Cache<PkCtx>>,
    secret: Arc<Cache<SkCtx>>,
    device: Arc<gpu::Device>,
}

impl std::fmt::Debug for Paillier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Paillier({} bits)", self.key_bits)
    }
}

impl Paillier {
    /// The backend for `key_bits`-bit moduli (below 2048 only with `allow_insecure_test_keys`).
    pub fn new(key_bits: u32, allow_insecure_test_keys: bool) -> Result<Self, BackendError> {
        if !key_bits.is_multiple_of(2) || key_bits < 128 {
            return Err(BackendError::BadKey(format!(
                "key size must be an even number of bits >= 128, got {key_bits}"
            )));
        }
        if key_bits < MIN_KEY_BITS && !allow_insecure_test_keys {
            return Err(BackendError::WeakKey {
                bits: key_bits,
                min: MIN_KEY_BITS,
            });
        }
        Ok(Self {
            key_bits,
            public: Arc::default(),
            secret: Arc::default(),
            device: Arc::new(gpu::Device::cpu()),
        })
    }

    /// The same backend with its batches on `pref`: `gpu` sends every batch to the GPU (an
    /// error without an adapter), `auto` sends batches of at least `min_batch` items to a
    /// hardware GPU if there is one, `cpu` none. Results are identical on either device.
    pub fn with_device(self, pref: DevicePref, min_batch: usize) -> Result<Self, BackendError> {
        self.on_device(pref, gpu::Policy::AtLeast(min_batch.max(1)))
    }

    /// The same backend with its batches on `pref` (`auto` or `gpu`), each operation's sent
    /// to the GPU from the batch size at which the GPU beat the CPU on this machine
    /// ([`calibrate`]: measured once per process and key size, on a throwaway key; none
    /// when there is no GPU). An error when the GPU's results differ from the CPU's.
    pub fn with_measured_device(self, pref: DevicePref) -> Result<Self, BackendError> {
        let every = self.clone().on_device(pref, gpu::Policy::AtLeast(1))?;
        if !every.has_gpu() {
            return Ok(every);
        }
        let cpu = Self {
            device: Arc::new(gpu::Device::cpu()),
            ..self.clone()
        };
        let c = calibrate::measured_once(&cpu, &every, self.key_bits, &every.device.adapter())?;
        let device = Arc::new(every.device.with_policy(gpu::Policy::Measured(c)));
        Ok(Self { device, ..self })
    }

    fn on_device(mut self, pref: DevicePref, policy: gpu::Policy) -> Result<Self, BackendError> {
        if pref != DevicePref::Cpu
            && 2 * gpu::words_for(self.key_bits) > kinsey_kernels::montgomery::MAX_WORDS
        {
            return Err(BackendError::Other(format!(
                "Paillier on the GPU supports keys of up to {} bits, not {}",
                kinsey_kernels::montgomery::MAX_WORDS * 16,
                self.key_bits
            )));
        }
        self.device = Arc::new(gpu::Device::new(pref, policy)?);
        // The pipelines for n^2 (encryption, products, powers) and p^2 (CRT decryption)
        // compile while the caller generates keys and reads data.
        let w = gpu::words_for(self.key_bits);
        self.device.warm_in_background(&[2 * w, w]);
        Ok(self)
    }

    /// Where batches run, in words.
    pub fn device(&self) -> String {
        self.device.describe()
    }

    /// Whether some batches run on a GPU (`device = "gpu"`, or `"auto"` with a hardware
    /// GPU).
    pub fn has_gpu(&self) -> bool {
        self.device.is_gpu()
    }

    /// The measurement behind `device = "auto"`'s thresholds, when it ran.
    pub fn calibration(&self) -> Option<Arc<Crossovers>> {
        self.device.calibration()
    }

    /// Whether a batch of `n` items of `op` runs on the GPU.
    pub fn runs_on_gpu(&self, op: Op, n: usize) -> bool {
        self.device.for_batch(op, n).is_some()
    }

    /// Modulus size in bits.
    pub fn key_bits(&self) -> u32 {
        self.key_bits
    }

    fn pk_ctx(&self, pk: &PublicKey) -> Result<Arc<PkCtx>, BackendError> {
        self.public.get_or_build(&pk.0, || {
            let pk = parse_pk(pk)?;
            let table = FixedBase::new(&pk.hs, &pk.n2, randomness_bits(pk.bits))
                .ok_or_else(|| BackendError::BadKey("h_s is not invertible".into()))?;
            Ok(PkCtx {
                pk,
                table,
                gpu: Default::default(),
            })
        })
    }

    fn sk_ctx(&self, sk: &SecretKey) -> Result<Arc<SkCtx>, BackendError> {
        self.secret.get_or_build(sk.as_bytes(), || {
            Ok(SkCtx {
                sk: parse_sk(sk)?,
                gpu: Default::default(),
            })
        })
    }
}

impl Pk {
    fn to_ct(&self, c: &Integer) -> Ciphertext {
        let mut b = self.fingerprint.to_vec();
        b.extend_from_slice(&be_fixed(c, self.width));
        Ciphertext(b)
    }

    /// Ciphertexts from the GPU's `w`-word results.
    fn cts_of_words(&self, out: &[u32], w: usize) -> Vec<Ciphertext> {
        out.par_chunks_exact(w)
            .map(|c| self.to_ct(&gpu::int_of(c)))
            .collect()
    }

    /// Parse and check length, key binding and 0 < c < n^2 (invertibility is checked per
    /// batch by [`parse_cts`](Self::parse_cts)).
    fn parse_ct_range(&self, c: &Ciphertext) -> Result<Integer, BackendError> {
        let b = &c.0;
        if b.len() != 8 + self.width {
            return Err(BackendError::BadCiphertext(format!(
                "{} bytes, expected {}",
                b.len(),
                8 + self.width
            )));
        }
        if b[..8] != self.fingerprint {
            return Err(BackendError::BadCiphertext("made under another key".into()));
        }
        let v = Integer::from_digits(&b[8..], Order::Msf);
        if v <= 0 || v >= self.n2 {
            return Err(BackendError::BadCiphertext("value outside (0, n^2)".into()));
        }
        Ok(v)
    }

    /// Parse and validate one ciphertext: length, key binding, 0 < c < n^2, gcd(c, n) = 1.
    fn parse_ct(&self, c: &Ciphertext) -> Result<Integer, BackendError> {
        self.check_value(self.parse_ct_range(c)?)
    }

    fn check_value(&self, v: Integer) -> Result<Integer, BackendError> {
        if v <= 0 || v >= self.n2 {
            return Err(BackendError::BadCiphertext("value outside (0, n^2)".into()));
        }
        if v.gcd_ref(&self.n).complete() != 1 {
            return Err(BackendError::BadCiphertext(
                "value not invertible mod n".into(),
            ));
        }
        Ok(v)
    }

    /// Parse and validate a batch. Invertibility of every element is one gcd: n = p q, so
    /// gcd(prod c_i mod n, n) = 1 exactly when every gcd(c_i, n) = 1; only when that fails
    /// are the elements checked one by one to name the culprit.
    fn parse_cts(&self, cs: &[Ciphertext]) -> Result<Vec<Integer>, BackendError> {
        let vs = cs
            .par_iter()
            .map(|c| self.parse_ct_range(c))
            .collect::<Result<Vec<_>, _>>()?;
        let prod = vs
            .par_iter()
            .map(|v| (v % &self.n).complete())
            .reduce(|| Integer::from(1), |a, b| a * b % &self.n);
        if prod.gcd_ref(&self.n).complete() != 1 {
            for (i, v) in vs.iter().enumerate() {
                if v.gcd_ref(&self.n).complete() != 1 {
                    return Err(BackendError::BadCiphertext(format!(
                        "element {i} of the batch is not invertible mod n"
                    )));
                }
            }
        }
        Ok(vs)
    }

    /// Signed plaintext -> residue mod n.
    fn residue(&self, m: i128) -> Integer {
        let v = Integer::from(m);
        if v < 0 { v + &self.n } else { v }
    }

    /// Residue mod n -> signed plaintext (values above n/2 are negative).
    fn signed(&self, r: Integer) -> Result<i128, BackendError> {
        let half = (&self.n >> 1u32).complete();
        let v = if r > half { r - &self.n } else { r };
        v.to_i128().ok_or_else(|| {
            BackendError::Codec(
                "decrypted value does not fit 127 bits: the ciphertext is corrupted, was made \
                 under another key, or holds a sum that overflowed"
                    .into(),
            )
        })
    }

    /// `g^m = 1 + m n` (g = n + 1), reduced modulo the public `n^2`.
    fn g_pow(&self, m: i128, n2: &Integer) -> Integer {
        (self.residue(m) * &self.n + 1u32) % n2
    }
}

impl AdditiveHe for Paillier {
    fn device(&self) -> String {
        Paillier::device(self)
    }

    fn info(&self) -> BackendInfo {
        let mut notes = format!(
            "encryption randomness h_s^a with a {}-bit secret exponent (Damgard-Jurik-Nielsen \
             short exponent; DCR + short-exponent assumption)",
            randomness_bits(self.key_bits)
        );
        if self.key_bits < MIN_KEY_BITS {
            notes = format!(
                "TEST KEY: {} bits is below the {MIN_KEY_BITS}-bit minimum; {notes}",
                self.key_bits
            );
        }
        notes = format!("{notes}; device: {}", self.device.describe());
        BackendInfo {
            name: "paillier".into(),
            scheme: "Paillier, g = n + 1, CRT decryption (GMP secure_pow_mod)".into(),
            key_bits: self.key_bits,
            security_bits: security_bits(self.key_bits),
            plaintext_bits: 126,
            insecure: self.key_bits < MIN_KEY_BITS,
            notes,
            // c < n^2 and n: the largest big-endian encodings.
            ciphertext_bytes: u64::from(self.key_bits) / 4,
            public_key_bytes: u64::from(self.key_bits) / 8,
        }
    }

    fn keygen(&self, rng: Rng<'_>) -> Result<KeyPair, BackendError> {
        let half = self.key_bits / 2;
        loop {
            let p = random_prime(half, rng);
            let q = random_prime(half, rng);
            if p == q {
                continue;
            }
            let n = (&p * &q).complete();
            let phi = ((&p - 1u32).complete()) * ((&q - 1u32).complete());
            if n.significant_bits() != self.key_bits || n.gcd_ref(&phi).complete() != 1 {
                continue;
            }
            return Ok(key_pair_from_primes(&p, &q, rng));
        }
    }

    fn check_public_key(&self, pk: &PublicKey) -> Result<(), BackendError> {
        let k = parse_pk(pk)?;
        if k.bits != self.key_bits {
            return Err(BackendError::BadKey(format!(
                "public key has {} bits, this backend is configured for {}",
                k.bits, self.key_bits
            )));
        }
        Ok(())
    }

    fn public_key_of(&self, sk: &SecretKey) -> Result<PublicKey, BackendError> {
        let (pk, _) = sk_public(sk.as_bytes())?;
        Ok(PublicKey(pk.to_vec()))
    }

    fn comparison(&self) -> Arc<dyn SecureComparison> {
        Arc::new(dgk::Dgk::new(self.key_bits))
    }

    fn encrypt_batch(
        &self,
        pk: &PublicKey,
        m: &[i128],
        rng: Rng<'_>,
    ) -> Result<Vec<Ciphertext>, BackendError> {
        let ctx = self.pk_ctx(pk)?;
        let k = &ctx.pk;
        let es = exponents(m.len(), ctx.table.exp_bytes(), rng);
        if let Some(arith) = self.device.for_batch(Op::Encrypt, m.len()) {
            let g = ctx.gpu()?;
            let factors: Vec<u32> = m
                .par_iter()
                .flat_map_iter(|&v| gpu::words_of(&k.g_pow(v, &k.n2), g.w()))
                .collect();
            let exps = gpu::exps_words(&es, g.exp_words);
            let out = arith
                .fixed_pow(&g.n2, g.table(&ctx.table)?, &exps, g.exp_words, &factors)
                .map_err(gpu::kernel_err("encryption"))?;
            return Ok(out
                .par_chunks_exact(g.w())
                .map(|c| k.to_ct(&gpu::int_of(c)))
                .collect());
        }
        Ok(m.par_iter()
            .zip(es.par_iter())
            .map(|(&v, e)| k.to_ct(&((k.g_pow(v, &k.n2) * ctx.table.pow(e)) % &k.n2)))
            .collect())
    }

    /// The key holder encrypts as anyone would, with the public key's tables (reductions
    /// by the public `n^2` only), after its secret key is checked. A CRT path (tables and
    /// reductions by `p^2`, `q^2`) must reduce by the secret moduli in constant time, which
    /// made it 50 times slower than this at 2048 bits (38/s against 1,900/s on one core);
    /// the ciphertexts are the same (`c mod n^2` is unique) for the same randomness.
    fn encrypt_with_secret_batch(
        &self,
        sk: &SecretKey,
        m: &[i128],
        rng: Rng<'_>,
    ) -> Result<Vec<Ciphertext>, BackendError> {
        self.sk_ctx(sk)?;
        self.encrypt_batch(&self.public_key_of(sk)?, m, rng)
    }

    fn decrypt_batch(&self, sk: &SecretKey, c: &[Ciphertext]) -> Result<Vec<i128>, BackendError> {
        let ctx = self.sk_ctx(sk)?;
        let s = &ctx.sk;
        let cs = s.pk.parse_cts(c)?;
        // From c^(p-1) mod p^2 and c^(q-1) mod q^2 to the plaintext. Every reduction by a
        // secret modulus is side-channel silent (sec_mod), and the L function divides by a
        // secret prime through its 2-adic inverse.
        let finish = |cp: Integer, cq: Integer| {
            let mp = sec_mod(&(l_secret(cp, &s.p, &s.p_inv_2k) * &s.hp), &s.p);
            let mq = sec_mod(&(l_secret(cq, &s.q, &s.q_inv_2k) * &s.hq), &s.q);
            // CRT: m = mq + q ((mp - mq) q^-1 mod p)
            let t = sec_mod(&((mp - &mq) * &s.q_inv_p), &s.p);
            s.pk.signed(mq + t * &s.q)
        };
        if let Some(arith) = self.device.for_batch(Op::Decrypt, cs.len()) {
            let g = ctx.gpu()?;
            // Each c (below n^2 = p^2 q^2, so below p^2 R) is reduced mod p^2 and q^2 on
            // the GPU, then raised to the secret p - 1 and q - 1 with a fixed schedule.
            let bases: Vec<u32> = cs
                .par_iter()
                .flat_map_iter(|c| gpu::words_of(c, 2 * g.w()))
                .collect();
            let cp = arith
                .pow(&g.p2, &bases, true, &g.pm1, g.half_words())
                .map_err(gpu::kernel_err("decryption mod p^2"))?;
            let cq = arith
                .pow(&g.q2, &bases, true, &g.qm1, g.half_words())
                .map_err(gpu::kernel_err("decryption mod q^2"))?;
            return cp
                .par_chunks_exact(g.w())
                .zip(cq.par_chunks_exact(g.w()))
                .map(|(a, b)| finish(gpu::int_of(a), gpu::int_of(b)))
                .collect();
        }
        cs.par_iter()
            .map(|c| {
                let cp = Integer::from(c.secure_pow_mod_ref(&s.pm1, &s.p2));
                let cq = Integer::from(c.secure_pow_mod_ref(&s.qm1, &s.q2));
                finish(cp, cq)
            })
            .collect()
    }

    fn add_batch(
        &self,
        pk: &PublicKey,
        a: &[Ciphertext],
        b: &[Ciphertext],
    ) -> Result<Vec<Ciphertext>, BackendError> {
        same_len(a.len(), b.len())?;
        if let Some(arith) = self.device.for_batch(Op::Add, a.len()) {
            let ctx = self.pk_ctx(pk)?;
            let (k, g) = (&ctx.pk, ctx.gpu()?);
            let x = gpu::batch_words(&k.parse_cts(a)?, g.w());
            let y = gpu::batch_words(&k.parse_cts(b)?, g.w());
            let out = arith
                .mul(&g.n2, &x, &y)
                .map_err(gpu::kernel_err("addition"))?;
            return Ok(k.cts_of_words(&out, g.w()));
        }
        let k = parse_pk(pk)?;
        let (x, y) = (k.parse_cts(a)?, k.parse_cts(b)?);
        Ok(x.par_iter()
            .zip(y.par_iter())
            .map(|(x, y)| k.to_ct(&((x * y).complete() % &k.n2)))
            .collect())
    }

    fn add_plain_batch(
        &self,
        pk: &PublicKey,
        a: &[Ciphertext],
        m: &[i128],
    ) -> Result<Vec<Ciphertext>, BackendError> {
        same_len(a.len(), m.len())?;
        if let Some(arith) = self.device.for_batch(Op::Add, a.len()) {
            let ctx = self.pk_ctx(pk)?;
            let (k, g) = (&ctx.pk, ctx.gpu()?);
            let x = gpu::batch_words(&k.parse_cts(a)?, g.w());
            let gm: Vec<u32> = m
                .par_iter()
                .flat_map_iter(|&v| gpu::words_of(&k.g_pow(v, &k.n2), g.w()))
                .collect();
            let out = arith
                .mul(&g.n2, &gm, &x)
                .map_err(gpu::kernel_err("plaintext addition"))?;
            return Ok(k.cts_of_words(&out, g.w()));
        }
        let k = parse_pk(pk)?;
        let x = k.parse_cts(a)?;
        Ok(x.par_iter()
            .zip(m.par_iter())
            .map(|(x, &v)| k.to_ct(&((k.g_pow(v, &k.n2) * x) % &k.n2)))
            .collect())
    }

    fn mul_plain_batch(
        &self,
        pk: &PublicKey,
        a: &[Ciphertext],
        s: &[i128],
    ) -> Result<Vec<Ciphertext>, BackendError> {
        same_len(a.len(), s.len())?;
        // a^v = a^(v + 2^127) (a^-1)^(2^127): one secret exponent of fixed length (bit 127
        // always set) through secure_pow_mod, and no branch on the sign or zero-ness of the
        // secret scalar (the audit found both); the correction has a public exponent.
        let offset = Integer::from(1) << 127u32;
        let not_invertible = |_| BackendError::BadCiphertext("not invertible".into());
        if let Some(arith) = self.device.for_batch(Op::MulPlain, a.len()) {
            let ctx = self.pk_ctx(pk)?;
            let (k, g) = (&ctx.pk, ctx.gpu()?);
            let x = k.parse_cts(a)?;
            let inv = x
                .par_iter()
                .map(|x| x.clone().invert(&k.n2).map_err(not_invertible))
                .collect::<Result<Vec<_>, _>>()?;
            let corr = arith
                .pow(
                    &g.n2,
                    &gpu::batch_words(&inv, g.w()),
                    false,
                    &gpu::OFFSET_127,
                    4,
                )
                .map_err(gpu::kernel_err("plaintext multiplication"))?;
            let exps: Vec<u32> = s.iter().flat_map(|&v| gpu::offset_words(v)).collect();
            let xe = arith
                .pow(&g.n2, &gpu::batch_words(&x, g.w()), false, &exps, 4)
                .map_err(gpu::kernel_err("plaintext multiplication"))?;
            let out = arith
                .mul(&g.n2, &xe, &corr)
                .map_err(gpu::kernel_err("plaintext multiplication"))?;
            return Ok(k.cts_of_words(&out, g.w()));
        }
        let k = parse_pk(pk)?;
        let x = k.parse_cts(a)?;
        x.par_iter()
            .zip(s.par_iter())
            .map(|(x, &v)| {
                let inv = x.clone().invert(&k.n2).map_err(not_invertible)?;
                let corr = inv.pow_mod(&offset, &k.n2).map_err(not_invertible)?;
                let e = Integer::from((v as u128).wrapping_add(1u128 << 127));
                let xe = Integer::from(x.secure_pow_mod_ref(&e, &k.n2));
                Ok(k.to_ct(&(xe * corr % &k.n2)))
            })
            .collect()
    }

    /// One fixed-base table for `a` (32 windows of 4 bits over `k + 2^127`), then 32
    /// constant-time table multiplications per value instead of a `secure_pow_mod` each.
    fn mul_plain_one_batch(
        &self,
        pk: &PublicKey,
        a: &Ciphertext,
        k: &[i128],
    ) -> Result<Vec<Ciphertext>, BackendError> {
        if k.len() < 8 {
            return self.mul_plain_batch(pk, &vec![a.clone(); k.len()], k);
        }
        let key = parse_pk(pk)?;
        let x = key.parse_ct(a)?;
        let table = FixedBase::new(&x, &key.n2, 128)
            .ok_or_else(|| BackendError::BadCiphertext("not invertible".into()))?;
        // a^(k + 2^127) a^(-2^127) = a^k, with a non-negative 128-bit exponent.
        let offset = Integer::from(1) << 127u32;
        let inv = x
            .invert(&key.n2)
            .map_err(|_| BackendError::BadCiphertext("not invertible".into()))?;
        let corr = inv
            .pow_mod(&offset, &key.n2)
            .map_err(|_| BackendError::BadCiphertext("not invertible".into()))?;
        if let Some(arith) = self.device.for_batch(Op::MulPlainOne, k.len()) {
            let ctx = self.pk_ctx(pk)?;
            let g = ctx.gpu()?;
            let t = gpu::table(&g.n2, &table)?;
            let cw = gpu::words_of(&corr, g.w());
            let factors: Vec<u32> = (0..k.len()).flat_map(|_| cw.iter().copied()).collect();
            let exps: Vec<u32> = k.iter().flat_map(|&v| gpu::offset_words(v)).collect();
            let out = arith
                .fixed_pow(&g.n2, &t, &exps, 4, &factors)
                .map_err(gpu::kernel_err(
                    "plaintext multiplication of one ciphertext",
                ))?;
            return Ok(key.cts_of_words(&out, g.w()));
        }
        Ok(k.par_iter()
            .map(|&v| {
                let e = (v as u128).wrapping_add(1u128 << 127).to_le_bytes();
                key.to_ct(&(table.pow(&e) * &corr % &key.n2))
            })
            .collect())
    }

    fn rerandomize_batch(
        &self,
        pk: &PublicKey,
        a: &[Ciphertext],
        rng: Rng<'_>,
    ) -> Result<Vec<Ciphertext>, BackendError> {
        let ctx = self.pk_ctx(pk)?;
        let k = &ctx.pk;
        let x = k.parse_cts(a)?;
        let es = exponents(a.len(), ctx.table.exp_bytes(), rng);
        if let Some(arith) = self.device.for_batch(Op::Rerandomize, a.len()) {
            let g = ctx.gpu()?;
            let exps = gpu::exps_words(&es, g.exp_words);
            let out = arith
                .fixed_pow(
                    &g.n2,
                    g.table(&ctx.table)?,
                    &exps,
                    g.exp_words,
                    &gpu::batch_words(&x, g.w()),
                )
                .map_err(gpu::kernel_err("re-randomisation"))?;
            return Ok(k.cts_of_words(&out, g.w()));
        }
        Ok(x.par_iter()
            .zip(es.par_iter())
            .map(|(x, e)| k.to_ct(&((ctx.table.pow(e) * x) % &k.n2)))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    #[test]
    fn paillier_passes_the_conformance_suite() {
        // 1024-bit test keys keep the suite fast; the arithmetic is the same at 2048.
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);
        let backend = Paillier::new(1024, true).expect("test key size");
        kinsey_backend::conformance::run(&backend, &mut rng).expect("conformance");
    }

    #[test]
    fn fuzz_paillier_keys_and_ciphertexts() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(8);
        let backend = Paillier::new(1024, true).expect("test key size");
        kinsey_backend::fuzzing::decoders(&backend, u32::MAX, u32::MAX, &mut rng);
    }

    #[test]
    fn key_sizes_are_enforced_and_described() {
        let e = Paillier::new(1024, false).expect_err("weak");
        assert!(e.to_string().contains("allow_insecure_test_keys"), "{e}");
        assert!(Paillier::new(1023, true).is_err());
        let p = Paillier::new(3072, false).expect("ok");
        assert_eq!(p.info().security_bits, 128);
        assert!(!p.info().insecure);
        assert!(Paillier::new(512, true).expect("test").info().insecure);
        let mut r = Registry::new();
        register(&mut r);
        let e = r.create(
            "paillier",
            &BackendOptions {
                key_bits: Some(1024),
                ..Default::default()
            },
        );
        assert!(e.is_err());
    }

    /// The GPU path (lavapipe in CI; an error, not a skip, without an adapter) gives the
    /// CPU path's ciphertexts and plaintexts byte for byte, with the same randomness, for
    /// 0, 1, -1, the largest plaintexts, negative fixed-point values and the ciphertexts 1
    /// and n^2 - 1, every operation at a 1024-bit test key. (The arithmetic at the moduli
    /// of 2048-, 3072- and 4096-bit keys is compared with its CPU twin in
    /// `kinsey_kernels::montgomery`; `gpu_encrypts_and_decrypts_at_2048_bits` runs the
    /// whole path once at 2048. lavapipe takes about 0.5 s per 2048-bit encryption.)
    #[test]
    fn gpu_path_is_bit_identical_to_the_cpu() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(16);
        {
            let bits = 1024;
            let cpu = Paillier::new(bits, true).expect("key size");
            let gpu = cpu
                .clone()
                .with_device(DevicePref::Gpu, 0)
                .expect("a GPU adapter (lavapipe in CI)");
            assert!(
                gpu.info().notes.contains("device: GPU"),
                "{}",
                gpu.info().notes
            );
            let kp = cpu.keygen(&mut rng).expect("keygen");
            let m: Vec<i128> = vec![
                0,
                1,
                -1,
                (1 << 125) - 1,
                -(1 << 125),
                -123_456_789_012_345,
                (-2.75f64 * (1u64 << 40) as f64) as i128,
                987_654_321,
            ];
            let same = |what: &str, f: &dyn Fn(&Paillier, &mut rand_chacha::ChaCha20Rng) -> Vec<Ciphertext>| {
                let seed = what.bytes().map(u64::from).sum::<u64>() + u64::from(bits);
                let a = f(&gpu, &mut rand_chacha::ChaCha20Rng::seed_from_u64(seed));
                let b = f(&cpu, &mut rand_chacha::ChaCha20Rng::seed_from_u64(seed));
                assert_eq!(a, b, "{what}, {bits} bits");
                a
            };
            let c = same("encryption", &|b, r| {
                b.encrypt_batch(&kp.public, &m, r).expect("enc")
            });
            let k = parse_pk(&kp.public).expect("pk");
            let mut cs = c.clone();
            cs.push(k.to_ct(&Integer::from(1)));
            cs.push(k.to_ct(&(k.n2.clone() - 1u32)));
            same("key-holder encryption", &|b, r| {
                b.encrypt_with_secret_batch(&kp.secret, &m, r).expect("enc")
            });
            same("re-randomisation", &|b, r| {
                b.rerandomize_batch(&kp.public, &cs, r).expect("rerand")
            });
            let dg = gpu.decrypt_batch(&kp.secret, &cs);
            assert_eq!(dg, cpu.decrypt_batch(&kp.secret, &cs), "decryption");
            assert_eq!(&dg.expect("decrypts")[..m.len()], &m[..]);
            let ks: Vec<i128> = (0..cs.len() as i128).map(|i| (i - 4) * 1_000_003).collect();
            same("addition", &|b, _| {
                b.add_batch(&kp.public, &cs, &cs).expect("add")
            });
            same("plaintext addition", &|b, _| {
                b.add_plain_batch(&kp.public, &cs, &ks).expect("add")
            });
            same("plaintext multiplication", &|b, _| {
                b.mul_plain_batch(&kp.public, &cs, &ks).expect("mul")
            });
            same("plaintext multiplication of one", &|b, _| {
                b.mul_plain_one_batch(&kp.public, &cs[5], &ks).expect("mul")
            });
            // Corrupted input is refused on the GPU path as on the CPU path.
            let bad = k.to_ct(&k.n);
            let bad = std::slice::from_ref(&bad);
            assert!(gpu.decrypt_batch(&kp.secret, bad).is_err());
            assert!(gpu.add_batch(&kp.public, bad, bad).is_err());
        }
    }

    /// `auto`'s measured thresholds (run here with `gpu` on the CI's adapter, lavapipe, at a
    /// 512-bit test key; an error, not a skip, without one): every operation measured and
    /// checked against the CPU, each batch routed by its own operation's crossover, the
    /// measurement made once per process and key size, the results the CPU's.
    #[test]
    fn measured_thresholds_route_each_operation() {
        let cpu = Paillier::new(512, true).expect("key size");
        let b = cpu
            .clone()
            .with_measured_device(DevicePref::Gpu)
            .expect("a GPU adapter (lavapipe in CI)");
        let c = b.calibration().expect("measured");
        assert_eq!(c.ops.len(), calibrate::OPS);
        for (o, op) in c.ops.iter().zip(Op::ALL) {
            assert_eq!(o.op, op);
            assert!(!o.points.is_empty(), "{o:?}");
            for n in (0..13).map(|i| 1usize << i) {
                let want = o.crossover.is_some_and(|x| n >= x);
                assert_eq!(b.runs_on_gpu(op, n), want, "{} at {n}: {o:?}", op.name());
            }
            assert!(!b.runs_on_gpu(op, 0));
        }
        assert!(
            b.device().contains("beat the CPU on this machine"),
            "{}",
            b.device()
        );
        let again = cpu
            .clone()
            .with_measured_device(DevicePref::Gpu)
            .expect("adapter");
        assert!(Arc::ptr_eq(&c, &again.calibration().expect("measured")));
        assert!(cpu.calibration().is_none());
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(19);
        let kp = cpu.keygen(&mut rng).expect("keygen");
        let m = [3i128, -7, 0, 1 << 100];
        let enc = |p: &Paillier| {
            p.encrypt_batch(
                &kp.public,
                &m,
                &mut rand_chacha::ChaCha20Rng::seed_from_u64(2),
            )
            .expect("enc")
        };
        let e = enc(&b);
        assert_eq!(e, enc(&cpu));
        assert_eq!(b.decrypt_batch(&kp.secret, &e).expect("dec"), m);
    }

    /// Encryption and decryption at a 2048-bit key on the GPU equal the CPU's.
    #[test]
    fn gpu_encrypts_and_decrypts_at_2048_bits() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(18);
        let cpu = Paillier::new(2048, false).expect("key size");
        let gpu = cpu
            .clone()
            .with_device(DevicePref::Gpu, 0)
            .expect("a GPU adapter (lavapipe in CI)");
        let kp = cpu.keygen(&mut rng).expect("keygen");
        let m = [0i128, -1, (1 << 125) - 1];
        let c = gpu
            .encrypt_batch(
                &kp.public,
                &m,
                &mut rand_chacha::ChaCha20Rng::seed_from_u64(1),
            )
            .expect("enc");
        let want = cpu
            .encrypt_batch(
                &kp.public,
                &m,
                &mut rand_chacha::ChaCha20Rng::seed_from_u64(1),
            )
            .expect("enc");
        assert_eq!(c, want);
        assert_eq!(gpu.decrypt_batch(&kp.secret, &c).expect("dec"), m);
    }

    /// The conformance suite on the GPU path (every batch on the device), at a 512-bit
    /// test key: the suite checks the backend's semantics (homomorphisms, validation,
    /// errors), which do not depend on the size; the arithmetic at 1024 and 2048 bits is
    /// compared with the CPU's above. (At 1024 bits it took 80 s of CI on lavapipe.)
    #[test]
    fn gpu_path_passes_the_conformance_suite() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(17);
        let backend = Paillier::new(512, true)
            .expect("test key size")
            .with_device(DevicePref::Gpu, 0)
            .expect("a GPU adapter (lavapipe in CI)");
        kinsey_backend::conformance::run(&backend, &mut rng).expect("conformance");
    }

    #[test]
    fn ciphertexts_outside_the_group_are_rejected() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(8);
        let b = Paillier::new(512, true).expect("test");
        let kp = b.keygen(&mut rng).expect("keygen");
        let k = parse_pk(&kp.public).expect("pk");
        // c = n (not invertible) and c = n^2 (out of range), correctly framed.
        for v in [k.n.clone(), k.n2.clone()] {
            let c = k.to_ct(&v);
            let e = b.decrypt(&kp.secret, &c).expect_err("rejected");
            assert!(matches!(e, BackendError::BadCiphertext(_)), "{e}");
        }
    }
}
