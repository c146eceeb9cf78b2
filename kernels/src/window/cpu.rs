//! The `window` kernel's CPU twin: the shader's two passes written plainly (the decayed
//! sums' own CPU path, `kinsey_decay::window`, is a faster rebuild of the same
//! numbers; tests compare all three).

use super::spec::WindowChunk;
use crate::KernelError;

/// The window sums of steps `c.out_from ..` of the chunk.
pub fn window_sums(c: &WindowChunk<'_>) -> Result<Vec<f64>, KernelError> {
    c.check()?;
    let offs = c.offsets();
    let (n, h) = (c.xs.len(), c.h);
    let mut val = vec![0.0f64; c.nodes()];
    let mut rel = vec![0.0f64; c.nodes()];
    let inv = 1.0 / c.gamma;
    for k in 0..=h {
        let o = offs[k as usize] as usize;
        for m in 0..n >> k {
            let v = if k == 0 {
                c.xs[m]
            } else {
                let below = offs[k as usize - 1] as usize + 2 * m;
                val[below] + val[below + 1]
            };
            val[o + m] = v;
            let t = ((m + 1) << k) - 1;
            let id = k as usize + (0..=h).map(|j| t >> j).sum::<usize>();
            rel[o + m] = c.gamma * ((v * inv).round() + c.z[id] as f64);
        }
    }
    let from = c.from as usize;
    Ok((c.out_from as usize - from..n)
        .map(|u| {
            let w = c.w.min(u as u64 + 1) as usize;
            let mut at = u + 1 - w;
            let mut s = 0.0;
            while at <= u {
                let fits = (u - at + 1).ilog2();
                let k = at.trailing_zeros().min(h).min(fits);
                s += rel[offs[k as usize] as usize + (at >> k)];
                at += 1 << k;
            }
            s
        })
        .collect())
}
