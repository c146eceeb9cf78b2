//! The segments of the decayed running sums (`kinsey_decay`'s binary mechanism,
//! weights 1, and its exponential sums, weights `alpha^(2^k)`), the part that is the same
//! for every segment: one chunk of whole segments of `2^l` steps, each segment's levels
//! `0..=l` formed (a node is its left child times the level's weight plus its right
//! child), its left nodes below `l` released on the grid with their draws, and per step
//! the Horner sum from the segment's start value over those releases. The levels above `l`
//! join segments and are few (one node per segment): the host runs them between the two
//! passes, from the level-`l` nodes of [`RunningTops`].
//!
//! CPU twin here ([`running_levels`], [`running_sums`]), GPU twin in `gpu.rs` (the
//! `running_` and `exp_` passes of `shaders/window.wgsl`), in the order of the decayed
//! sums' CPU path. Weights 1: additions only (`1.0 * x + y` is `x + y`, fused or not).
//! Other weights: every product is stored by its own dispatch before the add, since WGSL
//! lets a device fuse a multiply into the add that uses it; so two roundings on every
//! device, as on the CPU (Rust never fuses). The same bits either way.

use crate::KernelError;

/// One chunk of whole segments: steps `from .. from + xs.len()` (`from` and the length
/// multiples of `2^l`) of a forest whose nodes are numbered in completion order up to level
/// `h` (ids, and so draws, count the levels above `l` too).
#[derive(Debug, Clone, Copy)]
pub struct RunningChunk<'a> {
    /// Segments of `2^l` steps (`1 <= l < h`, `l <= 30`).
    pub l: u32,
    /// The forest's top level (at most 63).
    pub h: u32,
    /// The release grid (a power of two).
    pub gamma: f64,
    /// Per level `k` (at least `0..=l`), the weight of a left child of that level when it
    /// joins its sibling, which is also its weight in the sums: `alpha^(2^k)`, all 1 for
    /// the running sum.
    pub pow: &'a [f64],
    /// The chunk's first step.
    pub from: u64,
    /// The values.
    pub xs: &'a [f64],
}

/// What the level passes give the host.
#[derive(Debug, Clone, PartialEq)]
pub struct RunningTops {
    /// Per segment, its level-`l` node's true value.
    pub tops: Vec<f64>,
    /// Per level below `l`, the last segment's latest released left node (the state the
    /// next chunk starts from).
    pub ends: Vec<f64>,
}

/// Number of nodes (levels `0..=h`) that complete before step `t`: the noise id of the
/// first node completing at `t` (nodes are numbered in completion order, at each step the
/// levels that close, bottom up). The decayed sums number their counters by it too.
pub fn first_id(t: u64, h: u32) -> u64 {
    (0..=h.min(63)).map(|j| t >> j).sum()
}

impl RunningChunk<'_> {
    /// Whether some weight is not 1 (an exponential sum: multiplications).
    pub fn weighted(&self) -> bool {
        self.pow.iter().take(self.l as usize + 1).any(|&w| w != 1.0)
    }

    /// Whole segments in the chunk.
    pub fn segments(&self) -> usize {
        self.xs.len() >> self.l
    }

    /// Nodes of levels `0..=l` in the chunk.
    pub fn nodes(&self) -> usize {
        (0..=self.l).map(|k| self.xs.len() >> k).sum()
    }

    /// Draws the chunk's nodes own: every node completing in it, levels `0..=h`.
    pub fn draws(&self) -> usize {
        (first_id(self.from + self.xs.len() as u64, self.h) - first_id(self.from, self.h)) as usize
    }

    /// Offsets of each level's nodes (level `k` at `[k]`, `l + 2` entries), then each
    /// segment's first draw id relative to the chunk's.
    pub(crate) fn index(&self) -> Vec<u32> {
        let mut idx = Vec::with_capacity(self.l as usize + 2 + self.segments());
        let mut o = 0usize;
        for k in 0..=self.l {
            idx.push(o as u32);
            o += self.xs.len() >> k;
        }
        idx.push(o as u32);
        let base = first_id(self.from, self.h);
        idx.extend(
            (0..self.segments() as u64)
                .map(|s| (first_id(self.from + (s << self.l), self.h) - base) as u32),
        );
        idx
    }

    /// Checks the shape: segment and forest levels, whole aligned segments, one draw per
    /// node, sizes that fit 32-bit indices, a power-of-two grid.
    pub fn check(&self, draws: usize) -> Result<(), KernelError> {
        let bad = |m: String| Err(KernelError::Input(format!("running chunk: {m}")));
        let len = self.xs.len() as u64;
        if self.l == 0 || self.l > 30 || self.h <= self.l || self.h > 63 {
            return bad(format!(
                "segment level {} with top level {}",
                self.l, self.h
            ));
        }
        let seg = 1u64 << self.l;
        if self.pow.len() <= self.l as usize || self.pow.iter().any(|w| !w.is_finite()) {
            return bad(format!(
                "{} weights for levels 0..={} (finite, one per level)",
                self.pow.len(),
                self.l
            ));
        }
        if len == 0 || !len.is_multiple_of(seg) || !self.from.is_multiple_of(seg) {
            return bad(format!(
                "steps {} .. {} are not whole segments of 2^{}",
                self.from,
                self.from + len,
                self.l
            ));
        }
        if len >= 1 << 30 || self.draws() >= 1 << 31 {
            return bad(format!("{len} steps (below 2^30)"));
        }
        if draws != self.draws() {
            return bad(format!("{draws} draws for {} nodes", self.draws()));
        }
        if !(self.gamma > 0.0 && self.gamma.is_finite() && self.gamma.log2().fract() == 0.0) {
            return bad(format!("grid {} is not a power of two", self.gamma));
        }
        Ok(())
    }
}

/// The level passes on the CPU: [`RunningTops`] and every node's release (left nodes
/// below `l`; the others 0), level after level at the offsets of [`RunningChunk::index`].
pub fn running_levels(
    c: &RunningChunk<'_>,
    z: &[i64],
) -> Result<(RunningTops, Vec<f64>), KernelError> {
    c.check(z.len())?;
    let idx = c.index();
    let (l, n, nseg) = (c.l, c.xs.len(), c.segments());
    let mut val = vec![0.0f64; c.nodes()];
    let mut rel = vec![0.0f64; c.nodes()];
    let mut tops = RunningTops {
        tops: vec![0.0; nseg],
        ends: vec![0.0; l as usize],
    };
    let inv = 1.0 / c.gamma;
    for k in 0..=l {
        let (o, count) = (idx[k as usize] as usize, n >> k);
        for m in 0..count {
            let v = if k == 0 {
                c.xs[m]
            } else {
                let below = idx[k as usize - 1] as usize + 2 * m;
                c.pow[k as usize - 1] * val[below] + val[below + 1]
            };
            val[o + m] = v;
            if k == l {
                tops.tops[m] = v;
                continue;
            }
            if m & 1 == 1 {
                continue;
            }
            let s = m >> (l - k);
            let t = (((m + 1) << k) - 1) - (s << l);
            let id = idx[l as usize + 2 + s] as usize
                + k as usize
                + (0..l).map(|j| t >> j).sum::<usize>();
            let r = c.gamma * ((v * inv).round() + z[id] as f64);
            rel[o + m] = r;
            if m + 2 == count {
                tops.ends[k as usize] = r;
            }
        }
    }
    Ok((tops, rel))
}

/// The sums pass on the CPU: per step, Horner from `starts[s][0]` (the segment's start
/// value: the levels from `l` up) over its left nodes below `l`, highest first (`acc =
/// acc * pow[k] + release`); a segment's last step is `starts[s][1]`.
pub fn running_sums(
    c: &RunningChunk<'_>,
    rel: &[f64],
    starts: &[[f64; 2]],
) -> Result<Vec<f64>, KernelError> {
    check_sums(c, rel.len(), starts)?;
    let idx = c.index();
    let l = c.l;
    let mask = (1usize << l) - 1;
    Ok((0..c.xs.len())
        .map(|i| {
            let (s, tl) = (i >> l, i & mask);
            if tl == mask {
                return starts[s][1];
            }
            let n = tl + 1;
            let mut acc = starts[s][0];
            for b in (0..l).rev() {
                if (n >> b) & 1 == 1 {
                    let r = rel[idx[b as usize] as usize + (s << (l - b)) + (n >> b) - 1];
                    acc = acc * c.pow[b as usize] + r;
                }
            }
            acc
        })
        .collect())
}

/// The sums pass's inputs: the chunk's releases and one start pair per segment.
pub(crate) fn check_sums(
    c: &RunningChunk<'_>,
    releases: usize,
    starts: &[[f64; 2]],
) -> Result<(), KernelError> {
    if releases != c.nodes() || starts.len() != c.segments() {
        return Err(KernelError::Input(format!(
            "running sums: {releases} releases and {} segment starts for {} nodes in {} segments",
            starts.len(),
            c.nodes(),
            c.segments()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The twin's pieces against the decayed binary mechanism written from its
    /// definition: every node of levels `0..=h` released in completion order, the sum at
    /// `t` Horner over the releases of the left nodes of `t + 1`'s binary digits, highest
    /// first; weights 1 (running) and `alpha^(2^k)` (exponential).
    #[test]
    fn the_cpu_twin_is_the_binary_mechanism() {
        let (l, h, gamma) = (3u32, 6u32, 0.25);
        let from = 5u64 << l;
        let xs: Vec<f64> = (0..48).map(|i| f64::from(i % 7) * 0.3 - 0.5).collect();
        for alpha in [1.0f64, 0.9] {
            let pow: Vec<f64> = (0..=h).map(|k| alpha.powi(1 << k)).collect();
            let c = RunningChunk {
                l,
                h,
                gamma,
                pow: &pow,
                from,
                xs: &xs,
            };
            assert_eq!(c.weighted(), alpha != 1.0);
            let z: Vec<i64> = (0..c.draws() as i64).map(|i| (i * 37 % 11) - 5).collect();
            let (tops, rel) = running_levels(&c, &z).expect("levels");
            fn tree(xs: &[f64], pow: &[f64], from: u64, k: u32, m: u64) -> f64 {
                if k == 0 {
                    return xs[(m - from) as usize];
                }
                pow[k as usize - 1] * tree(xs, pow, from, k - 1, 2 * m)
                    + tree(xs, pow, from, k - 1, 2 * m + 1)
            }
            let value = |k: u32, m: u64| tree(&xs, &pow, from, k, m);
            let release = |k: u32, m: u64| -> f64 {
                let end = ((m + 1) << k) - 1;
                let id = first_id(end, h) + u64::from(k) - first_id(from, h);
                gamma * ((value(k, m) / gamma).round() + z[id as usize] as f64)
            };
            for (s, &top) in tops.tops.iter().enumerate() {
                assert_eq!(top, value(l, (from >> l) + s as u64));
            }
            let last = (from + xs.len() as u64) - 1;
            for k in 0..l {
                assert_eq!(tops.ends[k as usize], release(k, ((last + 1) >> k) - 2));
            }
            // Start values as the host makes them: the levels from l up of n = t + 1,
            // with made-up releases above l.
            let above = |k: u32, n: u64| f64::from(k) * 100.0 + (n >> k) as f64;
            let high = |n: u64| {
                let mut acc = 0.0;
                for k in (l..=h).rev() {
                    if (n >> k) & 1 == 1 {
                        acc = acc * pow[k as usize] + above(k, n);
                    }
                }
                acc
            };
            let starts: Vec<[f64; 2]> = (0..c.segments() as u64)
                .map(|s| {
                    let start = from + (s << l);
                    [high(start), high(start + (1 << l))]
                })
                .collect();
            let got = running_sums(&c, &rel, &starts).expect("sums");
            for (i, &g) in got.iter().enumerate() {
                let n = from + i as u64 + 1;
                let mut want = high(n);
                for k in (0..l).rev() {
                    if (n >> k) & 1 == 1 {
                        want = want * pow[k as usize] + release(k, (n >> k) - 1);
                    }
                }
                assert_eq!(g, want, "alpha {alpha}, step {}", from + i as u64);
            }
        }
        let pow = vec![1.0; 7];
        let c = RunningChunk {
            l,
            h,
            gamma,
            pow: &pow,
            from,
            xs: &xs,
        };
        let z = vec![0i64; c.draws()];
        let (_, rel) = running_levels(&c, &z).expect("levels");
        let starts = vec![[0.0; 2]; c.segments()];
        // Shapes refused: a ragged chunk, a wrong draw count, a segment level at the top.
        let bad = RunningChunk { xs: &xs[..20], ..c };
        assert!(running_levels(&bad, &z).is_err());
        assert!(running_levels(&c, &z[1..]).is_err());
        assert!(running_levels(&RunningChunk { l: h, ..c }, &z).is_err());
        assert!(running_sums(&c, &rel, &starts[1..]).is_err());
        assert!(running_sums(&c, &rel, &starts).is_ok());
        // Too few weights, or one that is not finite.
        assert!(
            running_levels(
                &RunningChunk {
                    pow: &pow[..3],
                    ..c
                },
                &z
            )
            .is_err()
        );
        let nan = [f64::NAN; 7];
        assert!(running_levels(&RunningChunk { pow: &nan, ..c }, &z).is_err());
    }
}
