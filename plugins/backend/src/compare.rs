//! Secure two-party comparison (Stage 1 of the protocol): two roles exchange bytes over a
//! [`Duplex`] channel; the *learner* (holds a key pair and a share `y`) learns the single
//! bit `[x + y >= 0]`; the *helper* (holds the learner's public key and a share `x`) learns
//! nothing. The caller promises `|x + y| < 2^bits`; `x` and `y` themselves may be large
//! (they are blinded shares).
//!
//! Every backend supplies one: DGK with Veugen's correction next to Paillier, the encrypted
//! `lt` of tfhe-rs next to TFHE, a plaintext exchange next to the insecure mock.
//!
//! The reduction from shares to a comparison of two `bits + 1`-bit numbers is shared here:
//! with `D = x + y + 2^l mod 2^(l+1)`, `[x + y >= 0]` is the top bit of `D`, which is
//! `top(x') xor top(y') xor carry`, where `x' = x + 2^l mod 2^(l+1)`, `y' = y mod 2^(l+1)` and
//! `carry = [low(x') + low(y') >= 2^l] = not [low(x') < 2^l - low(y')]`. So a protocol only has
//! to share the bit `t = [X < Y]` for `X = low(x')` (helper) and `Y = 2^l - low(y')` (learner),
//! as `t = delta_helper xor delta_learner`; the helper then sends `delta_helper xor top(x')`.

use crate::error::BackendError;
use crate::keys::{KeyPair, PublicKey, Rng};

/// Largest `bits` a comparison accepts.
pub(crate) const MAX_COMPARE_BITS: u32 = 120;

/// A bidirectional byte channel between the two roles of a two-party protocol.
pub trait Duplex {
    /// Send one message to the other role.
    fn send(&mut self, msg: Vec<u8>) -> Result<(), BackendError>;
    /// The next message from the other role.
    fn recv(&mut self) -> Result<Vec<u8>, BackendError>;
}

/// A secure two-party comparison of additively shared integers.
pub trait SecureComparison: Send + Sync {
    /// One line for reports: protocol, key size, security.
    fn describe(&self) -> String;
    /// The learner's key pair (made once, reused for many comparisons).
    fn keygen(&self, rng: Rng<'_>) -> Result<KeyPair, BackendError>;
    /// Check the learner's public key as received by the helper.
    fn check_public_key(&self, pk: &PublicKey) -> Result<(), BackendError>;
    /// Learner role: returns `[x + y >= 0]`.
    fn learn(
        &self,
        keys: &KeyPair,
        y: i128,
        bits: u32,
        ch: &mut dyn Duplex,
        rng: Rng<'_>,
    ) -> Result<bool, BackendError>;
    /// Helper role: learns nothing.
    fn help(
        &self,
        pk: &PublicKey,
        x: i128,
        bits: u32,
        ch: &mut dyn Duplex,
        rng: Rng<'_>,
    ) -> Result<(), BackendError>;
}

/// Error unless `bits` is in `1..=MAX_COMPARE_BITS`.
pub fn check_bits(bits: u32) -> Result<(), BackendError> {
    if (1..=MAX_COMPARE_BITS).contains(&bits) {
        Ok(())
    } else {
        Err(BackendError::Other(format!(
            "comparison width {bits} bits is outside 1..={MAX_COMPARE_BITS}"
        )))
    }
}

fn modulo(v: i128, bits: u32) -> u128 {
    (v as u128) & ((1u128 << (bits + 1)) - 1)
}

/// The helper's reduced share: `(X, top bit)` with `X < 2^bits`.
pub fn helper_share(x: i128, bits: u32) -> (u128, bool) {
    let xm = modulo(x.wrapping_add(1i128 << bits), bits);
    (xm & ((1u128 << bits) - 1), xm >> bits == 1)
}

/// The learner's reduced share: `(Y, top bit)` with `0 < Y <= 2^bits`.
pub fn learner_share(y: i128, bits: u32) -> (u128, bool) {
    let ym = modulo(y, bits);
    let low = ym & ((1u128 << bits) - 1);
    ((1u128 << bits) - low, ym >> bits == 1)
}

/// The learner's output from its shares of `t = [X < Y]` and the helper's masked top bit.
pub fn learner_output(delta_learner: bool, helper_masked_top: bool, learner_top: bool) -> bool {
    // [x + y >= 0] = top(x') ^ top(y') ^ carry, carry = !t, t = d_h ^ d_l, masked = d_h ^ top(x').
    !(helper_masked_top ^ delta_learner ^ learner_top)
}

/// A pair of connected in-memory duplex channels (for tests and in-process use).
pub(crate) fn channel_pair() -> (ChannelDuplex, ChannelDuplex) {
    let (ta, rb) = std::sync::mpsc::channel();
    let (tb, ra) = std::sync::mpsc::channel();
    (
        ChannelDuplex { tx: ta, rx: ra },
        ChannelDuplex { tx: tb, rx: rb },
    )
}

/// One end of [`channel_pair`].
#[derive(Debug)]
pub struct ChannelDuplex {
    tx: std::sync::mpsc::Sender<Vec<u8>>,
    rx: std::sync::mpsc::Receiver<Vec<u8>>,
}

impl Duplex for ChannelDuplex {
    fn send(&mut self, msg: Vec<u8>) -> Result<(), BackendError> {
        self.tx
            .send(msg)
            .map_err(|_| BackendError::Other("comparison peer hung up".into()))
    }
    fn recv(&mut self) -> Result<Vec<u8>, BackendError> {
        self.rx
            .recv_timeout(std::time::Duration::from_secs(120))
            .map_err(|e| BackendError::Other(format!("comparison peer did not answer: {e}")))
    }
}

/// Length-prefixed framing of a list of byte strings into one message.
pub fn frame(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + parts.iter().map(|p| p.len() + 4).sum::<usize>());
    out.extend_from_slice(&(parts.len() as u32).to_le_bytes());
    for p in parts {
        out.extend_from_slice(&(p.len() as u32).to_le_bytes());
        out.extend_from_slice(p);
    }
    out
}

/// Inverse of [`frame`]; `expect` is the number of parts the caller requires.
pub fn unframe(msg: &[u8], expect: usize) -> Result<Vec<&[u8]>, BackendError> {
    let bad = |why: &str| BackendError::Other(format!("malformed message: {why}"));
    let mut at = 0usize;
    let mut take = |n: usize| -> Result<&[u8], BackendError> {
        let end = at.checked_add(n).ok_or_else(|| bad("length overflow"))?;
        let s = msg.get(at..end).ok_or_else(|| bad("truncated"))?;
        at = end;
        Ok(s)
    };
    let count = u32::from_le_bytes(take(4)?.try_into().map_err(|_| bad("header"))?) as usize;
    if count != expect {
        return Err(bad(&format!("{count} parts, expected {expect}")));
    }
    let mut parts = Vec::with_capacity(count);
    for _ in 0..count {
        let len = u32::from_le_bytes(take(4)?.try_into().map_err(|_| bad("length"))?) as usize;
        parts.push(take(len)?);
    }
    if at != msg.len() {
        return Err(bad("trailing bytes"));
    }
    Ok(parts)
}

/// A fresh ChaCha20 generator seeded from `rng` (one per thread of a two-role run).
pub fn split_rng(rng: &mut dyn rand_core::CryptoRng) -> rand_chacha::ChaCha20Rng {
    let mut seed = [0u8; 32];
    rng.fill_bytes(&mut seed);
    <rand_chacha::ChaCha20Rng as rand_core::SeedableRng>::from_seed(seed)
}

/// Run both roles on one pair of shares in two threads; returns the learner's bit.
pub fn run_pair(
    cmp: &dyn SecureComparison,
    keys: &KeyPair,
    x: i128,
    y: i128,
    bits: u32,
    rng: Rng<'_>,
) -> Result<bool, BackendError> {
    let (mut a, mut b) = channel_pair();
    let (mut rh, mut rl) = (split_rng(rng), split_rng(rng));
    std::thread::scope(|s| {
        let h = s.spawn(|| cmp.help(&keys.public, x, bits, &mut a, &mut rh));
        let bit = cmp.learn(keys, y, bits, &mut b, &mut rl);
        let helped = h
            .join()
            .map_err(|_| BackendError::Other("helper thread panicked".into()))?;
        helped?;
        bit
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduction_is_exact_on_boundaries() {
        let bits = 8;
        for x in [-300i128, -1, 0, 1, 255, 1 << 100, -(1 << 100), 12345] {
            for d in -255i128..=255 {
                let y = d - x;
                let (xl, xt) = helper_share(x, bits);
                let (yl, yt) = learner_share(y, bits);
                let t = xl < yl;
                // Any split of t into two shares gives the same output.
                for dh in [false, true] {
                    let dl = t ^ dh;
                    assert_eq!(learner_output(dl, dh ^ xt, yt), d >= 0, "x={x} d={d}");
                }
            }
        }
    }

    /// Whatever `unframe` accepts frames back to the same bytes.
    #[test]
    fn fuzz_unframe() {
        let seeds = vec![
            frame(&[b"abc", b"", b"de"]),
            frame(&[&[7u8; 300][..]]),
            frame(&[]),
        ];
        kinsey_fuzz::fuzz("compare::unframe", seeds, |b| {
            for expect in [0, 1, 3] {
                if let Ok(parts) = unframe(b, expect)
                    && (parts.len() != expect || frame(&parts) != b)
                {
                    return Err(format!(
                        "accepted {} parts that do not frame back",
                        parts.len()
                    ));
                }
            }
            Ok(())
        });
    }

    #[test]
    fn framing_round_trips_and_rejects_garbage() {
        let m = frame(&[b"abc", b"", b"de"]);
        let p = unframe(&m, 3).expect("ok");
        assert_eq!(p, vec![&b"abc"[..], &b""[..], &b"de"[..]]);
        assert!(unframe(&m, 2).is_err());
        assert!(unframe(&m[..m.len() - 1], 3).is_err());
        let mut longer = m.clone();
        longer.push(0);
        assert!(unframe(&longer, 3).is_err());
        assert!(unframe(&[255, 255, 255, 255, 1], 1).is_err());
    }
}
