//! The wire format: message kinds, framing with a checksum, and parsing of every
//! ciphertext, integer and permutation a participant receives (bounded before allocation,
//! errors naming the sender).

use crate::transport::{Peer, Recorded, Stage, Transport, TransportError};
use kinsey_backend::BackendError;
use kinsey_backend::compare::{Duplex, frame};
use kinsey_backend::{Ciphertext, KeyPair, PublicKey, SecretKey};

// Message kinds (second header byte).
pub(crate) const XI_SK: u8 = 1;
pub(crate) const XI_PK: u8 = 2;
pub(crate) const ZETA_PK: u8 = 3;
pub(crate) const CMP_PK: u8 = 4;
/// A party's data tag (network sessions, before the protocol: `session::run`).
pub(crate) const TAG: u8 = 5;
pub(crate) const PI1: u8 = 10;
pub(crate) const A_SHARE: u8 = 11;
pub(crate) const POSITION: u8 = 12;
pub(crate) const BLINDED: u8 = 13;
pub(crate) const A_TILDE: u8 = 14;
pub(crate) const PAIR: u8 = 15;
pub(crate) const CMP: u8 = 16;
pub(crate) const INDICATOR: u8 = 20;
pub(crate) const CHAIN: u8 = 21;
pub(crate) const MASKED: u8 = 30;
pub(crate) const RESHARE: u8 = 31;
pub(crate) const PUBLISH: u8 = 32;

/// Frame a message: stage, kind, payload, and a 64-bit FNV-1a checksum of all of it, so a
/// corrupted message is an error rather than a wrong number.
pub(crate) fn seal(stage: Stage, kind: u8, payload: &[u8]) -> Vec<u8> {
    let mut msg = Vec::with_capacity(payload.len() + 10);
    msg.push(stage as u8);
    msg.push(kind);
    msg.extend_from_slice(payload);
    let sum = fnv1a(&msg);
    msg.extend_from_slice(&sum.to_le_bytes());
    msg
}

/// Check a framed message and return its payload.
pub(crate) fn open(m: &[u8], stage: Stage, kind: u8) -> std::result::Result<Vec<u8>, String> {
    if m.len() < 10 {
        return Err(format!("sent a truncated message ({} bytes)", m.len()));
    }
    let (body, sum) = m.split_at(m.len() - 8);
    if fnv1a(body).to_le_bytes() != sum {
        return Err("sent a corrupted message (checksum mismatch)".into());
    }
    if body[0] != stage as u8 || body[1] != kind {
        return Err(format!(
            "sent an unexpected message (stage {} kind {}, expected stage {} kind {kind})",
            body[0], body[1], stage as u8
        ));
    }
    Ok(body[2..].to_vec())
}

pub(crate) fn fnv1a(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
        (h ^ u64::from(x)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The comparison's byte channel, carried over the protocol transport.
pub(crate) struct Link<'a, T: Transport> {
    pub(crate) t: &'a mut Recorded<T>,
    pub(crate) peer: Peer,
    pub(crate) stage: Stage,
    pub(crate) error: Option<TransportError>,
}

impl<T: Transport> Duplex for Link<'_, T> {
    fn send(&mut self, msg: Vec<u8>) -> std::result::Result<(), BackendError> {
        let m = seal(self.stage, CMP, &msg);
        self.t.send(self.peer, m).map_err(|e| {
            self.error = Some(e.clone());
            BackendError::Other(e.to_string())
        })
    }

    fn recv(&mut self) -> std::result::Result<Vec<u8>, BackendError> {
        let m = self.t.recv(self.peer).map_err(|e| {
            self.error = Some(e.clone());
            BackendError::Other(e.to_string())
        })?;
        open(&m, self.stage, CMP).map_err(BackendError::Other)
    }
}

pub(crate) fn cts_bytes(cs: &[Ciphertext]) -> Vec<u8> {
    let parts: Vec<&[u8]> = cs.iter().map(|c| c.0.as_slice()).collect();
    frame(&parts)
}

pub(crate) fn ints_bytes(v: &[i128]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub(crate) fn key_pair(pk: &[u8], sk: SecretKey) -> KeyPair {
    KeyPair {
        public: PublicKey(pk.to_vec()),
        secret: sk,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever `open` accepts is exactly a sealed message of that stage and kind.
    #[test]
    fn fuzz_open() {
        let seeds = vec![
            seal(
                Stage::Noise,
                CHAIN,
                &cts_bytes(&[Ciphertext(vec![1, 2, 3])]),
            ),
            seal(Stage::Shares, MASKED, &ints_bytes(&[5, -7])),
            seal(Stage::Setup, XI_PK, b""),
        ];
        kinsey_fuzz::fuzz("wire::open", seeds, |m| {
            for (stage, kind) in [
                (Stage::Noise, CHAIN),
                (Stage::Shares, MASKED),
                (Stage::Setup, XI_PK),
            ] {
                if let Ok(p) = open(m, stage, kind)
                    && seal(stage, kind, &p) != m
                {
                    return Err("accepted a message that does not seal back".into());
                }
            }
            Ok(())
        });
    }
}
