//! A kinsey TFHE ciphertext in memory and on the wire.
//!
//! Bytes: `KTCT`, a kind (0 = integer in radix form, 1 = selector, 2 = selection), the
//! 16-byte fingerprint of the public key it was made under, a `u16` block count, for a
//! selection one byte of noise budget, then per block its degree and
//! noise level (one byte each: the bounds tfhe-rs tracks, never a plaintext: every operation
//! sets them from public quantities only), a `u32` length and the block's tfhe-rs safe
//! serialization. Each block is read through `safe_deserialize_conformant` against the
//! parameter set with the declared degree and noise level, after the declared values are
//! checked against the limits the parameter set allows.
//!
//! A *radix* ciphertext holds `sum_i m_i 4^i mod 2^128` (blocks may carry unpropagated
//! carries up to the degree). A *selector* encrypts one bit `b` in every block (each block an
//! independent encryption of `b`): the form the curator's one-hot indicator takes, so that
//! multiplying it by a public vector is linear (see `ops::select`). A *selection* holds
//! `sum_i b_i 2^i`, one bit per block, each block a sum of selector blocks times 0 or 1 and
//! fresh encryptions of zero, all independent; its budget byte bounds the variance of every
//! block's noise in units of a nominal block's (at most `max_noise_level^2`, see
//! `params::max_units`), its blocks' own levels are nominal.

use crate::params::{FULL_MAX, PARAMS, WIDTH, max_noise_level, max_units};
use kinsey_backend::{BackendError, Ciphertext};
use tfhe::safe_serialization::{safe_deserialize_conformant, safe_serialize};
use tfhe::shortint::Ciphertext as Block;
use tfhe::shortint::ciphertext::{Degree, NoiseLevel};
use tfhe::shortint::parameters::PBSParameters;

const MAGIC: &[u8; 4] = b"KTCT";
const HEADER: usize = 4 + 1 + 16 + 2;
/// Largest serialized block (an LWE ciphertext of dimension 2048 is 16 KiB).
pub(crate) const BLOCK_LIMIT: u64 = 20 << 10;

/// What a ciphertext's blocks mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An integer mod 2^128 in radix form.
    Radix,
    /// One bit, encrypted in every block.
    Selector,
    /// One bit per block, block `i` weighing `2^i`.
    Bits,
}

/// A parsed ciphertext.
#[derive(Clone)]
pub(crate) struct Ct {
    pub(crate) kind: Kind,
    pub(crate) blocks: Vec<Block>,
    /// A selection's noise budget (variance in nominal units); 0 for other kinds.
    pub(crate) units: u64,
}

impl Ct {
    /// An integer in radix form.
    pub(crate) fn radix(blocks: Vec<Block>) -> Self {
        Self {
            kind: Kind::Radix,
            blocks,
            units: 0,
        }
    }
}

impl std::fmt::Debug for Ct {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Ct({:?}, {} blocks)", self.kind, self.blocks.len())
    }
}

/// Serialize under the key with fingerprint `fp`.
pub(crate) fn encode(fp: &[u8; 16], ct: &Ct) -> Result<Ciphertext, BackendError> {
    let mut out = Vec::with_capacity(HEADER + ct.blocks.len() * (16 << 10));
    out.extend_from_slice(MAGIC);
    out.push(match ct.kind {
        Kind::Radix => 0,
        Kind::Selector => 1,
        Kind::Bits => 2,
    });
    out.extend_from_slice(fp);
    out.extend_from_slice(&(ct.blocks.len() as u16).to_le_bytes());
    if ct.kind == Kind::Bits {
        if ct.units == 0 || ct.units > max_units() {
            return Err(BackendError::Other(format!(
                "internal: a selection with noise budget {} cannot be sent",
                ct.units
            )));
        }
        out.push(ct.units as u8);
    }
    for b in &ct.blocks {
        let (deg, lvl) = (b.degree.get(), b.noise_level().get());
        if deg > FULL_MAX || lvl > max_noise_level() {
            return Err(BackendError::Other(format!(
                "internal: block with degree {deg} and noise level {lvl} cannot be sent"
            )));
        }
        if lvl == 0 && deg > 0 {
            return Err(BackendError::Other(
                "internal: a noiseless block holding a value would reveal it; re-randomise \
                 before sending"
                    .into(),
            ));
        }
        out.push(deg as u8);
        out.push(lvl as u8);
        let at = out.len();
        out.extend_from_slice(&[0u8; 4]);
        safe_serialize(b, &mut out, BLOCK_LIMIT)
            .map_err(|e| BackendError::Other(format!("cannot serialize a block: {e}")))?;
        let len = (out.len() - at - 4) as u32;
        out[at..at + 4].copy_from_slice(&len.to_le_bytes());
    }
    Ok(Ciphertext(out))
}

/// Parse and validate an integer (radix kind) of exactly `blocks` blocks.
pub(crate) fn decode_radix(
    fp: &[u8; 16],
    c: &Ciphertext,
    blocks: usize,
) -> Result<Ct, BackendError> {
    let ct = decode(fp, c, blocks)?;
    if ct.kind != Kind::Radix {
        return Err(BackendError::BadCiphertext(format!(
            "TFHE ciphertext: a {:?} where an integer was expected",
            ct.kind
        )));
    }
    Ok(ct)
}

/// Parse and validate a ciphertext made under the key with fingerprint `fp`: an integer of
/// exactly `blocks` blocks, or a selector or selection of 1 to 128 blocks.
pub(crate) fn decode(fp: &[u8; 16], c: &Ciphertext, blocks: usize) -> Result<Ct, BackendError> {
    let bad = |why: String| BackendError::BadCiphertext(format!("TFHE ciphertext: {why}"));
    let b = &c.0;
    if b.len() < HEADER || &b[..4] != MAGIC {
        return Err(bad("not a kinsey TFHE ciphertext".into()));
    }
    let kind = match b[4] {
        0 => Kind::Radix,
        1 => Kind::Selector,
        2 => Kind::Bits,
        k => return Err(bad(format!("unknown kind {k}"))),
    };
    if &b[5..21] != fp {
        return Err(bad("made under another key".into()));
    }
    let n = u16::from_le_bytes([b[21], b[22]]) as usize;
    // A selector's or selection's width is its own (one bit per block, at most a full
    // integer's); an integer has exactly `blocks`.
    let count_ok = match kind {
        Kind::Radix => n == blocks,
        Kind::Selector | Kind::Bits => (1..=WIDTH as usize).contains(&n),
    };
    if !count_ok {
        return Err(bad(format!(
            "{n} blocks, expected {}",
            if kind == Kind::Radix {
                blocks.to_string()
            } else {
                format!("1 to {WIDTH}")
            }
        )));
    }
    let mut at = HEADER;
    let mut units = 0;
    if kind == Kind::Bits {
        units = *b
            .get(at)
            .ok_or_else(|| bad("truncated before its budget".into()))? as u64;
        if units == 0 || units > max_units() {
            return Err(bad(format!(
                "a selection declaring noise budget {units} (limits 1 to {})",
                max_units()
            )));
        }
        at += 1;
    }
    let base = PBSParameters::from(PARAMS).to_shortint_conformance_param();
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let head = b
            .get(at..at + 6)
            .ok_or_else(|| bad(format!("truncated at block {i}")))?;
        let (deg, lvl) = (head[0] as u64, head[1] as u64);
        let len = u32::from_le_bytes([head[2], head[3], head[4], head[5]]) as u64;
        let (deg_max, lvl_min, lvl_max) = match kind {
            Kind::Radix => (FULL_MAX, 0, max_noise_level()),
            Kind::Selector => (1, 0, max_noise_level()),
            // A selection's noise is its budget; every block is counted nominal.
            Kind::Bits => (1, 1, 1),
        };
        if deg > deg_max || !(lvl_min..=lvl_max).contains(&lvl) || len > BLOCK_LIMIT {
            return Err(bad(format!(
                "block {i} declares degree {deg}, noise level {lvl}, {len} bytes (limits \
                 {deg_max}, {lvl_min} to {lvl_max}, {BLOCK_LIMIT})"
            )));
        }
        at += 6;
        let body = b
            .get(at..at + len as usize)
            .ok_or_else(|| bad(format!("truncated in block {i}")))?;
        at += len as usize;
        let mut params = base;
        params.degree = Degree::new(deg);
        params.noise_level = NoiseLevel::NOMINAL * lvl;
        let block: Block = safe_deserialize_conformant(body, BLOCK_LIMIT, &params)
            .map_err(|e| bad(format!("block {i} refused: {e}")))?;
        // Noise level 0 is claimed only by a noiseless (trivial) block, which operations
        // then treat as public.
        if lvl == 0 && (deg > 0 || !block.is_trivial()) {
            return Err(bad(format!(
                "block {i} claims no noise but is not a trivial encryption of zero"
            )));
        }
        out.push(block);
    }
    if at != b.len() {
        return Err(bad(format!("{} trailing bytes", b.len() - at)));
    }
    Ok(Ct {
        kind,
        blocks: out,
        units,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tfhe::integer::ClientKey;

    /// The ciphertext decoder alone, without a key set to parse: an integer of one block, a
    /// selector and a selection of two (the per-block code is the one an integer's 64 blocks
    /// go through). What decodes has a known kind, a block count within its limits and
    /// block degrees and noise levels within the parameter set's; nothing panics. Cheap
    /// enough a case for a long run (the backend-level harness in `tests.rs` parses a
    /// 1 MiB ciphertext and uses the 60 MB key on every case).
    #[test]
    fn fuzz_ciphertext_decoder() {
        let ck = ClientKey::new(PARAMS);
        let key: &tfhe::shortint::ClientKey = ck.as_ref();
        let fp = [0x5au8; 16];
        let bit = |v: u64| {
            let mut b = key.encrypt(v);
            b.degree = Degree::new(1);
            b
        };
        let radix = Ct::radix(vec![key.encrypt(2)]);
        let selector = Ct {
            kind: Kind::Selector,
            blocks: vec![bit(1), bit(1)],
            units: 0,
        };
        let selection = Ct {
            kind: Kind::Bits,
            blocks: vec![bit(1), bit(0)],
            units: 2,
        };
        let seeds: Vec<Vec<u8>> = [&radix, &selector, &selection]
            .iter()
            .map(|c| encode(&fp, c).map(|c| c.0))
            .collect::<Result<_, _>>()
            .expect("encode");
        for (i, s) in seeds.iter().enumerate() {
            let ct = decode(&fp, &Ciphertext(s.clone()), 1).expect("an unmutated seed decodes");
            assert_eq!(ct.blocks.len(), [1, 2, 2][i]);
        }
        kinsey_fuzz::fuzz("TFHE ciphertext decoder", seeds, |b| {
            let Ok(ct) = decode(&fp, &Ciphertext(b.to_vec()), 1) else {
                return Ok(());
            };
            let n = ct.blocks.len();
            let count_ok = match ct.kind {
                Kind::Radix => n == 1,
                Kind::Selector | Kind::Bits => (1..=WIDTH as usize).contains(&n),
            };
            let deg_max = if ct.kind == Kind::Radix { FULL_MAX } else { 1 };
            let blocks_ok = ct
                .blocks
                .iter()
                .all(|k| k.degree.get() <= deg_max && k.noise_level().get() <= max_noise_level());
            let units_ok = (ct.kind == Kind::Bits) == (1..=max_units()).contains(&ct.units);
            if !(count_ok && blocks_ok && units_ok) {
                return Err(format!(
                    "decoded {ct:?} (units {}) outside its limits",
                    ct.units
                ));
            }
            Ok(())
        });
    }
}
