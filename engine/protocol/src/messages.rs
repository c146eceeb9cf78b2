//! Parsing what a participant receives: ciphertexts, integers and permutations, bounded
//! before allocation; a malformed message is blamed on its sender.

use crate::role::{Ctx, R};
use crate::transport::Peer;

use kinsey_backend::Ciphertext;
use kinsey_backend::compare::unframe;

pub(crate) fn parse_cts(ctx: &Ctx, from: Peer, b: &[u8], count: usize) -> R<Vec<Ciphertext>> {
    unframe(b, count)
        .map(|p| p.into_iter().map(|x| Ciphertext(x.to_vec())).collect())
        .map_err(|e| ctx.fail(from, format!("sent a malformed message: {e}")))
}

pub(crate) fn parse_cts_any(ctx: &Ctx, from: Peer, b: &[u8]) -> R<Vec<Ciphertext>> {
    let count = b
        .get(..4)
        .and_then(|h| h.try_into().ok())
        .map(u32::from_le_bytes)
        .ok_or_else(|| ctx.fail(from, "sent a malformed message: no header"))?;
    parse_cts(ctx, from, b, count as usize)
}

pub(crate) fn parse_ints(ctx: &Ctx, from: Peer, b: &[u8], count: Option<usize>) -> R<Vec<i128>> {
    if !b.len().is_multiple_of(16) || count.is_some_and(|c| c * 16 != b.len()) {
        return Err(ctx.fail(
            from,
            format!("sent a malformed integer vector ({} bytes)", b.len()),
        ));
    }
    Ok(b.chunks_exact(16)
        .map(|c| {
            let mut a = [0u8; 16];
            a.copy_from_slice(c);
            i128::from_le_bytes(a)
        })
        .collect())
}

pub(crate) fn parse_perm(ctx: &Ctx, from: Peer, b: &[u8]) -> R<Vec<usize>> {
    let v = parse_ints(ctx, from, b, Some(ctx.k))?;
    let mut seen = vec![false; ctx.k];
    let mut p = Vec::with_capacity(ctx.k);
    for x in v {
        let i = usize::try_from(x)
            .ok()
            .filter(|&i| i < ctx.k && !seen[i])
            .ok_or_else(|| ctx.fail(from, "sent something that is not a permutation"))?;
        seen[i] = true;
        p.push(i);
    }
    Ok(p)
}
