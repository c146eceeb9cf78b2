//! The inverse mixture `C^-1` in block form, with its blocks on every thread
//! (post-processing of released values: no bound needed).
//!
//! Over a block from buffers `r` at its start, the inverse's outputs are
//! `dec = L^-1 (y - F r)` (`L^-1` the first [`BLOCK`] coefficients `h` of `C^-1`, `F` the
//! carried part of [`BlockMix`]), and the buffers at the next start are
//! `r' = P r + T dec` (`P = diag(theta^BLOCK)`, `T` the contribution). Split by linearity:
//! `u = L^-1 y` depends on the block's inputs alone, `dec = u - G r` with
//! `G = L^-1 F`, and `r' = M r + T u` with `M = P - T G` (a `d x d` product a block). So
//! the Toeplitz parts and contributions of a chunk's blocks run in parallel, the buffers
//! at the blocks' starts follow in order (one small product a block), and the outputs
//! again in parallel. (Until 2026-12 the whole decoder was in order: `blt`'s and
//! `sqrt`'s only sequential stage.)
//!
//! **Bit for bit.** A step at a time (online) or whole blocks (bulk, on every thread) run
//! the same operations in the same order: `u` by [`BlockMix::toeplitz`] (whose whole-block
//! path gives the partial path's bits), `G r` by the carried part's sums over `G`, and the
//! advance by one function on the block's complete `u`.

use super::{BLOCK, BlockMix, LANES, block_of, by_block, head_and_whole, whole_blocks};

impl BlockMix {
    /// The inverse's buffers at the next block's start from `r` at this one's and the
    /// block's contribution `a = T u` (overwritten; `a` has `dp` entries):
    /// `r' = a + sum_l M_l r_l`, over `l` in order.
    #[inline]
    fn dec_advance(&self, r: &mut [f64], a: &mut [f64]) {
        let dp = self.dp;
        for (g0, lanes) in (0..dp).step_by(LANES).zip(a.chunks_exact_mut(LANES)) {
            let mut acc = [0.0f64; LANES];
            acc.copy_from_slice(lanes);
            for (l, &rl) in r.iter().enumerate() {
                let row = &self.md[l * dp + g0..l * dp + g0 + LANES];
                for x in 0..LANES {
                    acc[x] = row[x].mul_add(rl, acc[x]);
                }
            }
            lanes.copy_from_slice(&acc);
        }
        let d = r.len();
        r.copy_from_slice(&a[..d]);
    }
}

/// The decoder's state: the inverse mixture's buffers at the current block's start and
/// the block's inputs and Toeplitz parts so far.
#[derive(Debug, Clone)]
pub(crate) struct Decoder {
    r: Vec<f64>,
    /// Scratch: a block's contributions.
    ds: Vec<f64>,
    /// Scratch of a parallel run: a group's contributions and starts (kept: freed and
    /// allocated again each run, they cost page faults).
    bulk: (Vec<f64>, Vec<f64>),
    y: [f64; BLOCK],
    u: [f64; BLOCK],
    j: usize,
}

impl Decoder {
    /// At step 0.
    pub(crate) fn new(mix: &BlockMix) -> Self {
        Self {
            r: vec![0.0; mix.d],
            ds: vec![0.0; mix.dp],
            bulk: (Vec::new(), Vec::new()),
            y: [0.0; BLOCK],
            u: [0.0; BLOCK],
            j: 0,
        }
    }

    /// The decoded stream `C^-1 y` for `ys`, in order from the current step.
    pub(crate) fn run(&mut self, mix: &BlockMix, ys: &[f64], out: &mut [f64]) {
        by_block(&mut self.j, ys.len(), |j0, j1, at| {
            self.y[j0..j1].copy_from_slice(&ys[at..at + (j1 - j0)]);
            let mut u = [0.0f64; BLOCK];
            BlockMix::toeplitz(block_of(&mix.h), 0, &self.y, j0, j1, &mut u);
            self.u[j0..j1].copy_from_slice(&u[j0..j1]);
            let mut g = [0.0f64; BLOCK];
            BlockMix::carried(&mix.gd, &self.r, j0, j1, &mut g);
            for (j, o) in (j0..j1).zip(&mut out[at..at + (j1 - j0)]) {
                *o = u[j] - g[j];
            }
            if j1 == BLOCK {
                mix.contribution(&self.u, &mut self.ds);
                mix.dec_advance(&mut self.r, &mut self.ds);
            }
        });
    }

    /// The same outputs as [`run`](Self::run), the whole blocks on every thread: their
    /// Toeplitz parts and contributions in parallel, the buffers at the blocks' starts (in
    /// order over the blocks), then the carried parts in parallel.
    pub(crate) fn run_parallel(&mut self, mix: &BlockMix, ys: &[f64], out: &mut [f64]) {
        let (head, whole) = head_and_whole(self.j, ys.len());
        self.run(mix, &ys[..head], &mut out[..head]);
        let (body, body_out) = (&ys[head..head + whole], &mut out[head..head + whole]);
        let mut bulk = std::mem::take(&mut self.bulk);
        let r = &mut self.r;
        let d = mix.d;
        whole_blocks(
            mix,
            body,
            body_out,
            &mut bulk,
            |yb, o, a| {
                // u = L^-1 y, two blocks at a time (their sums interleaved, the same bits).
                if yb.len() == 2 * BLOCK {
                    let (mut ua, mut ub) = ([0.0f64; BLOCK], [0.0f64; BLOCK]);
                    BlockMix::toeplitz_whole(
                        block_of(&mix.h),
                        0,
                        [block_of(&yb[..BLOCK]), block_of(&yb[BLOCK..])],
                        [&mut ua, &mut ub],
                    );
                    o[..BLOCK].copy_from_slice(&ua);
                    o[BLOCK..].copy_from_slice(&ub);
                } else {
                    let mut u = [0.0f64; BLOCK];
                    BlockMix::toeplitz(block_of(&mix.h), 0, block_of(yb), 0, BLOCK, &mut u);
                    o.copy_from_slice(&u);
                }
                mix.contributions_of(o, a);
            },
            |a, start| {
                start.copy_from_slice(r);
                mix.dec_advance(r, a);
            },
            |_, o, starts| {
                for (o, rs) in o.chunks_mut(BLOCK).zip(starts.chunks(d)) {
                    let mut g = [0.0f64; BLOCK];
                    BlockMix::carried(&mix.gd, rs, 0, BLOCK, &mut g);
                    for (o, &gj) in o.iter_mut().zip(&g) {
                        *o -= gj;
                    }
                }
            },
        );
        self.bulk = bulk;
        let rest = head + whole;
        self.run(mix, &ys[rest..], &mut out[rest..]);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Encoder, Precision};
    use super::*;

    fn mix() -> BlockMix {
        let theta = [0.5, 0.9, 0.999, 0.99999];
        let theta_m: Vec<u64> = theta.iter().map(|t| (t * 2f64.powi(64)) as u64).collect();
        BlockMix::new(
            &theta_m,
            &theta,
            &[0.3, 0.2, 0.01, 0.002],
            Precision::Int64 { q_max: 1.0 },
        )
    }

    /// The decoder inverts the encoder (up to float rounding), block by block and in
    /// parallel.
    #[test]
    fn the_decoder_inverts_the_mixture() {
        let mix = mix();
        let qs: Vec<f64> = (0..5000)
            .map(|i| f64::from((i * 7919) % 13) / 13.0)
            .collect();
        let mut e = vec![0.0; qs.len()];
        Encoder::new(&mix).run(&mix, &qs, &mut e);
        for parallel in [false, true] {
            let mut back = vec![0.0; qs.len()];
            let mut dec = Decoder::new(&mix);
            if parallel {
                dec.run_parallel(&mix, &e, &mut back);
            } else {
                dec.run(&mix, &e, &mut back);
            }
            for (a, b) in qs.iter().zip(&back) {
                assert!((a - b).abs() < 1e-9, "{a} {b}");
            }
        }
    }

    /// Whole blocks on every thread, blocks cut anywhere and a step at a time give the same
    /// bits.
    #[test]
    fn online_and_parallel_decoders_agree_bit_for_bit() {
        let mix = mix();
        let ys: Vec<f64> = (0..20_000u32)
            .map(|i| f64::from(i.wrapping_mul(2_654_435_761) >> 8) / 1e5 - 80.0)
            .collect();
        let mut online = vec![0.0; ys.len()];
        let mut dec = Decoder::new(&mix);
        for (y, o) in ys.iter().zip(online.iter_mut()) {
            dec.run(&mix, std::slice::from_ref(y), std::slice::from_mut(o));
        }
        for cuts in [
            vec![ys.len()],
            vec![5, 3000, 31, 64, 9000],
            vec![1, 1, 17_000],
        ] {
            let mut dec = Decoder::new(&mix);
            let mut bulk = vec![0.0; ys.len()];
            let mut at = 0usize;
            for (k, &c) in cuts.iter().chain(std::iter::once(&usize::MAX)).enumerate() {
                let end = at.saturating_add(c).min(ys.len());
                if k % 2 == 0 {
                    dec.run_parallel(&mix, &ys[at..end], &mut bulk[at..end]);
                } else {
                    dec.run(&mix, &ys[at..end], &mut bulk[at..end]);
                }
                at = end;
            }
            assert!(
                online
                    .iter()
                    .zip(&bulk)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{cuts:?}"
            );
        }
    }
}

#[cfg(test)]
mod speed {
    use super::super::{Encoder, Precision};
    use super::*;

    /// `cargo test --release -p kinsey-decay --lib -- --ignored --nocapture block_speed`
    #[test]
    #[ignore = "timing: run by hand in release"]
    fn block_speed() {
        let d = 28usize;
        let theta: Vec<f64> = (0..d)
            .map(|i| 1.0 - 0.5f64.powi((i / 2 + 1) as i32))
            .collect();
        let theta_m: Vec<u64> = theta.iter().map(|t| (t * 2f64.powi(64)) as u64).collect();
        let omega: Vec<f64> = (0..d).map(|i| 0.1 / (i + 1) as f64).collect();
        for precision in [
            Precision::Int64 { q_max: 1.0 },
            Precision::Lagged {
                q_max: 1.0,
                lag: 1024,
            },
        ] {
            let mix = BlockMix::new(&theta_m, &theta, &omega, precision);
            let n = 1 << 22;
            let qs: Vec<f64> = (0..n).map(|i| ((i * 7919) % 13) as f64 / 13.0).collect();
            let mut e = vec![0.0; n];
            for threads in [1, 2, 1, 2] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .expect("pool");
                let t = std::time::Instant::now();
                pool.install(|| Encoder::new(&mix).run_parallel(&mix, &qs, &mut e));
                let enc = t.elapsed().as_secs_f64() / n as f64 * 1e9;
                let mut back = vec![0.0; n];
                let t = std::time::Instant::now();
                pool.install(|| Decoder::new(&mix).run_parallel(&mix, &e, &mut back));
                let dec = t.elapsed().as_secs_f64() / n as f64 * 1e9;
                println!(
                    "d = {d} {precision:?}: encoder {enc:.1} ns a step ({threads} threads), decoder {dec:.1} ns"
                );
            }
        }
    }
}
