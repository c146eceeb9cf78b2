//! Stage 3's last step, run by all K + 1 participants.

use crate::messages::*;
use crate::role::{Ctx, R};
use crate::transport::Peer;
use crate::wire::*;

/// Stage 3's last step, run by all K + 1 participants: split `v` into K + 1 uniform shares
/// in Z_(2^128), send one to each other participant, add what arrives, publish the fresh
/// share to everyone, and add the published shares.
pub(crate) fn reshare(ctx: &mut Ctx, v: &[i128]) -> R<Vec<i128>> {
    let d = v.len();
    let all: Vec<Peer> = (0..ctx.k).map(Peer::Party).chain([Peer::Curator]).collect();
    let others: Vec<Peer> = all.iter().copied().filter(|p| *p != ctx.me).collect();
    let mut own: Vec<u128> = v.iter().map(|&x| x as u128).collect();
    for &q in &others {
        let share: Vec<i128> = (0..d).map(|_| ctx.random_below_pow2(128)).collect();
        for (o, s) in own.iter_mut().zip(&share) {
            *o = o.wrapping_sub(*s as u128);
        }
        ctx.send(q, RESHARE, &ints_bytes(&share))?;
    }
    for &q in &others {
        let b = ctx.recv(q, RESHARE)?;
        let got = parse_ints(ctx, q, &b, Some(d))?;
        for (o, s) in own.iter_mut().zip(&got) {
            *o = o.wrapping_add(*s as u128);
        }
    }
    let published: Vec<i128> = own.iter().map(|&x| x as i128).collect();
    for &q in &others {
        ctx.send(q, PUBLISH, &ints_bytes(&published))?;
    }
    let mut total = own;
    for &q in &others {
        let b = ctx.recv(q, PUBLISH)?;
        let got = parse_ints(ctx, q, &b, Some(d))?;
        for (t, s) in total.iter_mut().zip(&got) {
            *t = t.wrapping_add(*s as u128);
        }
    }
    for (i, &p) in published.iter().enumerate() {
        ctx.t.learn(&format!("published share {i}"), p);
    }
    Ok(total.into_iter().map(|x| x as i128).collect())
}
