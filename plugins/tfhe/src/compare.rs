//! Stage 1's comparison under TFHE. The learner encrypts its reduced share `Y` under its
//! own client key and sends it; the helper encrypts its share `X` under the learner's
//! compact public key, computes `t = E([X < Y])` with tfhe-rs's encrypted `lt` (the same
//! bootstraps whatever the values: no branch on the helper's share, which a scalar
//! comparison against a clear `X` would take on its leading zero digits), blinds it with a
//! random bit `delta_h` in one bootstrap (`v -> v xor delta_h`, between two fresh
//! encryptions of zero, so the learner cannot read the computation from the noise) and
//! sends it with `delta_h xor top(x')`. The learner decrypts `delta_l = t xor delta_h` and
//! combines as `kinsey_backend::compare` explains. The learner learns the one bit; the
//! helper sees only a ciphertext under a key it does not hold.

use crate::cipher::{self, Ct};
use crate::keys::{self, Keys, Public};
use crate::ops;
use crate::params::{BLOCK_BITS, MSG_MAX};
use kinsey_backend::compare::{
    Duplex, check_bits, frame, helper_share, learner_output, learner_share, unframe,
};
use kinsey_backend::{BackendError, KeyPair, PublicKey, Rng, SecretKey, SecureComparison};
use std::sync::Arc;
use tfhe::integer::{IntegerRadixCiphertext, RadixCiphertext};
use tfhe::shortint::ciphertext::Degree;

/// The TFHE comparison (encrypted `lt`, blinded result bit).
#[derive(Debug)]
pub struct TfheComparison {
    pub(crate) keys: Arc<Keys>,
}

fn blocks_for(bits: u32) -> usize {
    (bits + 1).div_ceil(BLOCK_BITS) as usize
}

impl TfheComparison {
    fn public(&self, pk: &PublicKey) -> Result<Arc<Public>, BackendError> {
        self.keys.public(pk)
    }
}

impl SecureComparison for TfheComparison {
    fn describe(&self) -> String {
        "TFHE encrypted comparison (tfhe-rs 1.8.2 `lt` on radix integers, result bit blinded \
         and bootstrapped before it is revealed)"
            .into()
    }
    /// Key material comes from tfhe-rs's seeder (OS entropy), not from `rng`.
    fn keygen(&self, _rng: Rng<'_>) -> Result<KeyPair, BackendError> {
        let (pk, sk) = keys::generate()?;
        Ok(KeyPair {
            public: PublicKey(pk),
            secret: SecretKey::new(sk),
        })
    }
    fn check_public_key(&self, pk: &PublicKey) -> Result<(), BackendError> {
        self.public(pk).map(|_| ())
    }
    fn learn(
        &self,
        keys: &KeyPair,
        y: i128,
        bits: u32,
        ch: &mut dyn Duplex,
        _rng: Rng<'_>,
    ) -> Result<bool, BackendError> {
        check_bits(bits)?;
        let (ck, p) = self.keys.secret(&keys.secret)?;
        let (yl, ytop) = learner_share(y, bits);
        let nb = blocks_for(bits);
        let ct = ck.encrypt_radix(yl, nb);
        let blocks = ct.into_blocks();
        ch.send(cipher::encode(&p.fp, &Ct::radix(blocks))?.0)?;
        let m = ch.recv()?;
        let parts = unframe(&m, 2)?;
        let t = cipher::decode_radix(&p.fp, &kinsey_backend::Ciphertext(parts[0].to_vec()), 1)?;
        let dl = ops::decrypt(&ck, &t.blocks);
        let masked = match parts[1] {
            [0] => false,
            [1] => true,
            _ => {
                return Err(BackendError::Other(
                    "comparison: malformed masked bit".into(),
                ));
            }
        };
        match dl {
            0 | 1 => Ok(learner_output(dl == 1, masked, ytop)),
            _ => Err(BackendError::Other(
                "comparison: the helper's answer is not a bit".into(),
            )),
        }
    }
    fn help(
        &self,
        pk: &PublicKey,
        x: i128,
        bits: u32,
        ch: &mut dyn Duplex,
        rng: Rng<'_>,
    ) -> Result<(), BackendError> {
        check_bits(bits)?;
        let p = self.public(pk)?;
        let (xl, xtop) = helper_share(x, bits);
        let nb = blocks_for(bits);
        let m = ch.recv()?;
        let y = cipher::decode_radix(&p.fp, &kinsey_backend::Ciphertext(m), nb)?;
        let xe = ops::encrypt(&p, &[xl], nb, rng)?
            .pop()
            .ok_or_else(|| BackendError::Other("empty encryption".into()))?;
        let t = p
            .sks
            .lt_parallelized(&RadixCiphertext::from(xe), &RadixCiphertext::from(y.blocks));
        let mut byte = [0u8; 1];
        rng.fill_bytes(&mut byte);
        let dh = byte[0] & 1;
        let mut c = vec![vec![t.into_raw_parts()]];
        ops::add_zero(&p, &mut c, rng)?;
        let key: &tfhe::shortint::ServerKey = p.sks.as_ref();
        let lut = key.generate_lookup_table(|v| (v & 1) ^ u64::from(dh));
        for b in c.iter_mut().flatten() {
            key.apply_lookup_table_assign(b, &lut);
        }
        ops::add_zero(&p, &mut c, rng)?;
        let blocks: Vec<_> = c
            .into_iter()
            .flatten()
            .map(|mut b| {
                b.degree = Degree::new(MSG_MAX);
                b
            })
            .collect();
        let ct = cipher::encode(&p.fp, &Ct::radix(blocks))?;
        ch.send(frame(&[&ct.0, &[dh ^ u8::from(xtop)]]))
    }
}
