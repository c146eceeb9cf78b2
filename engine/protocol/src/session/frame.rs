//! Frames on a TLS stream between two participants: a length, the session id, a sequence
//! number, the frame's class and stage, and the body. The length is checked against the
//! limit of the frame's stage before anything is allocated, the session id and the sequence
//! number before the body is read.

use crate::params::KEY_BITS;
use crate::transport::Stage;

/// Bytes after the length field and before the body: session id, sequence, class, stage.
pub(crate) const HEADER: usize = 16 + 8 + 1 + 1;
/// Largest hello, goodbye or abort body.
pub(crate) const CONTROL_LIMIT: usize = 64 * 1024;

/// What a frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    /// A protocol message (sealed by `wire::seal`).
    Message = 0,
    /// The handshake: version, sender, shared parameters.
    Hello = 1,
    /// The sender finished and will close.
    Bye = 2,
    /// The sender stopped the session; the body says why.
    Abort = 3,
    /// The sender has waited long for a peer (body: that peer), or no longer waits (empty):
    /// lets a participant that times out find who is silent rather than who waits.
    Status = 4,
}

impl Class {
    fn from_u8(v: u8) -> Option<Self> {
        [
            Class::Message,
            Class::Hello,
            Class::Bye,
            Class::Abort,
            Class::Status,
        ]
        .into_iter()
        .find(|c| *c as u8 == v)
    }
}

/// The largest body a frame may have in each stage, from K, d and the key size: fixed
/// before the session starts, so a peer cannot make a participant allocate more.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    per_stage: [usize; 4],
}

impl Limits {
    /// Limits for K parties, dimension d and `key_bits`-bit keys. A ciphertext is bounded by
    /// `max(key_bits / 2, 1024)` bytes (Paillier's is `key_bits / 4`); the comparison of
    /// Stage 1 sends at most `2 (KEY_BITS + 2)` ciphertexts in one message.
    pub fn new(k: usize, d: usize, key_bits: u32) -> Self {
        Self::sized(k, d, (key_bits as usize / 2).max(1024) + 8, 0)
    }

    /// Limits for a backend that states its largest ciphertext and public key (TFHE's
    /// are megabytes; one whose `BackendInfo` leaves them 0 is bounded by its key size).
    pub fn for_backend(k: usize, d: usize, info: &kinsey_backend::BackendInfo) -> Self {
        if info.ciphertext_bytes == 0 {
            return Self::new(k, d, info.key_bits);
        }
        // Never below the key-size bound (which also covers DGK's comparison ciphertexts).
        let floor = (info.key_bits as usize / 2).max(1024) + 8;
        let ct = usize::try_from(info.ciphertext_bytes)
            .unwrap_or(usize::MAX / 4096)
            .max(floor);
        let pk = usize::try_from(info.public_key_bytes).unwrap_or(usize::MAX / 4096);
        Self::sized(k, d, ct, pk)
    }

    /// Limits from the largest ciphertext `ct` and public key `pk` in bytes. Setup carries
    /// at most two keys (a secret key holds its public half) and Stage 1's comparison at
    /// most `2 (KEY_BITS + 2)` ciphertexts in one message.
    fn sized(k: usize, d: usize, ct: usize, pk: usize) -> Self {
        let base = 64 * 1024;
        let keys = (2 * pk).max(64 * ct);
        Self {
            per_stage: [
                base + keys,
                base + (2 * k + 4 * (KEY_BITS as usize + 2)) * ct,
                base + (k + d + 2) * ct,
                base + (d + 2) * ct + 32 * d,
            ],
        }
    }

    /// The largest body of a frame of `class` in `stage`.
    pub(crate) fn body(&self, class: Class, stage: Stage) -> usize {
        match class {
            Class::Message => self.per_stage[stage as usize],
            _ => CONTROL_LIMIT,
        }
    }

    /// The largest body of any frame.
    pub(crate) fn largest(&self) -> usize {
        self.per_stage
            .iter()
            .copied()
            .max()
            .unwrap_or(0)
            .max(CONTROL_LIMIT)
    }
}

/// A frame's bytes.
pub(crate) fn encode(id: &[u8; 16], seq: u64, class: Class, stage: Stage, body: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(4 + HEADER + body.len());
    f.extend_from_slice(&((HEADER + body.len()) as u32).to_le_bytes());
    f.extend_from_slice(id);
    f.extend_from_slice(&seq.to_le_bytes());
    f.push(class as u8);
    f.push(stage as u8);
    f.extend_from_slice(body);
    f
}

/// A checked frame header.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Header {
    pub(crate) class: Class,
    pub(crate) stage: Stage,
    /// Body bytes that follow.
    pub(crate) body: usize,
}

/// Check the 4-byte length alone: refuse what no stage allows.
pub(crate) fn check_len(len: u32, limits: &Limits) -> Result<usize, String> {
    let len = len as usize;
    if len < HEADER {
        return Err(format!(
            "sent a malformed frame ({len} bytes, shorter than its header)"
        ));
    }
    if len - HEADER > limits.largest() {
        return Err(format!(
            "sent an oversized frame ({} bytes; no stage allows more than {})",
            len - HEADER,
            limits.largest()
        ));
    }
    Ok(len)
}

/// Check a header (the `HEADER` bytes after the length) before reading the body.
pub(crate) fn check_header(
    h: &[u8],
    len: usize,
    id: &[u8; 16],
    expected_seq: u64,
    limits: &Limits,
) -> Result<Header, String> {
    if h.len() < HEADER {
        return Err("sent a truncated frame header".into());
    }
    if h[..16] != id[..] {
        return Err("sent a frame from another session (wrong session id)".into());
    }
    let mut s = [0u8; 8];
    s.copy_from_slice(&h[16..24]);
    let seq = u64::from_le_bytes(s);
    if seq != expected_seq {
        return Err(format!(
            "sent a replayed or out-of-order frame (sequence {seq}, expected {expected_seq})"
        ));
    }
    let class =
        Class::from_u8(h[24]).ok_or_else(|| format!("sent a frame of unknown class {}", h[24]))?;
    let stage =
        Stage::from_u8(h[25]).ok_or_else(|| format!("sent a frame of unknown stage {}", h[25]))?;
    let body = len - HEADER;
    let limit = limits.body(class, stage);
    if body > limit {
        return Err(format!(
            "sent an oversized frame ({body} bytes; {} allows {limit})",
            stage.name()
        ));
    }
    Ok(Header { class, stage, body })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame whose length and header pass is within its stage's limit and its declared
    /// length; nothing panics on any prefix.
    #[test]
    fn fuzz_frame_headers() {
        let id = [7u8; 16];
        let lim = Limits::new(5, 123, 2048);
        let seeds = vec![
            encode(&id, 3, Class::Message, Stage::Noise, b"hello"),
            encode(&id, 3, Class::Message, Stage::Shares, &[0u8; 64]),
        ];
        kinsey_fuzz::fuzz("session frame header", seeds, |f| {
            let Some(l) = f.get(..4) else { return Ok(()) };
            let Ok(len) = check_len(u32::from_le_bytes([l[0], l[1], l[2], l[3]]), &lim) else {
                return Ok(());
            };
            if let Ok(h) = check_header(&f[4..], len, &id, 3, &lim)
                && (h.body != len - HEADER || h.body > lim.body(h.class, h.stage))
            {
                return Err(format!("accepted a body of {} bytes", h.body));
            }
            Ok(())
        });
    }

    #[test]
    fn frames_round_trip_and_every_check_can_fail() {
        let id = [7u8; 16];
        let lim = Limits::new(5, 123, 2048);
        let f = encode(&id, 3, Class::Message, Stage::Noise, b"hello");
        let len = check_len(u32::from_le_bytes([f[0], f[1], f[2], f[3]]), &lim).expect("len");
        assert_eq!(len, HEADER + 5);
        let h = check_header(&f[4..], len, &id, 3, &lim).expect("header");
        assert_eq!(
            (h.class, h.stage, h.body),
            (Class::Message, Stage::Noise, 5)
        );
        assert_eq!(&f[4 + HEADER..], b"hello");

        let e = check_header(&f[4..], len, &[8u8; 16], 3, &lim).expect_err("session");
        assert!(e.contains("another session"), "{e}");
        let e = check_header(&f[4..], len, &id, 4, &lim).expect_err("replay");
        assert!(e.contains("replayed"), "{e}");
        let e = check_len(u32::MAX, &lim).expect_err("huge");
        assert!(e.contains("oversized"), "{e}");
        let e = check_len(3, &lim).expect_err("short");
        assert!(e.contains("malformed"), "{e}");
        // A body over the stage's limit but under the largest: refused by the header check.
        let setup = lim.body(Class::Message, Stage::Setup);
        assert!(setup < lim.largest());
        let e = check_header(
            &encode(&id, 0, Class::Message, Stage::Setup, &[])[4..],
            HEADER + setup + 1,
            &id,
            0,
            &lim,
        )
        .expect_err("stage limit");
        assert!(e.contains("setup"), "{e}");
        let mut bad = f.clone();
        bad[4 + 24] = 9;
        assert!(check_header(&bad[4..], len, &id, 3, &lim).is_err());
        bad[4 + 24] = 0;
        bad[4 + 25] = 9;
        assert!(check_header(&bad[4..], len, &id, 3, &lim).is_err());
    }

    #[test]
    fn limits_grow_with_the_job_and_stay_bounded() {
        let small = Limits::new(2, 10, 512);
        let big = Limits::new(20, 1000, 2048);
        assert!(big.largest() > small.largest());
        // K = 20, d = 1000, 2048-bit keys: under 2 MiB per frame.
        assert!(big.largest() < 2 << 20, "{}", big.largest());
    }
}
