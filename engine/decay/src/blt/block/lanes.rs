//! Many sequences of one block mixture side by side (the window factorization's lagged
//! stage): the operations of [`super::Encoder`] and [`super::Decoder`] across sequences,
//! four lanes wide, each sequence's sums in the same order as one sequence alone.

use super::{BLOCK, BlockMix};
use rayon::prelude::*;

/// Sequences per lane group: a group's state is contiguous, so groups run on threads of
/// their own.
const GROUP_LANES: usize = 64;

/// The rows of a stream laid out `lanes` wide: steps `t0 .. t0 + len` as
/// `(m, r_a, r_b, p)`, row `m` (each sequence's own step count), sequences `r_a .. r_b`,
/// the first at position `p` of the stream.
fn rows(lanes: usize, t0: u64, len: usize) -> impl Iterator<Item = (u64, usize, usize, usize)> {
    let w = lanes as u64;
    let mut p = 0usize;
    std::iter::from_fn(move || {
        if p >= len {
            return None;
        }
        let t = t0 + p as u64;
        let (m, r) = (t / w, (t % w) as usize);
        let take = (lanes - r).min(len - p);
        let row = (m, r, r + take, p);
        p += take;
        Some(row)
    })
}

/// Many sequences of one mixture stepped side by side, `lanes` of them: sequence `r` is
/// the steps `t = m lanes + r` (`m` its own step count), as the window factorization's
/// lagged stage needs. Its state is laid out sequence-minor (`[buffer][sequence]`), so
/// every operation of [`super::Encoder`] (or [`super::Decoder`]) runs across sequences, with each
/// sequence's sums in the same order as one sequence alone: a step at a time (online) or a
/// chunk of rows (bulk, groups of sequences on every thread) give the same bits.
#[derive(Debug, Clone)]
pub(crate) struct Lanes<G> {
    lanes: usize,
    groups: Vec<G>,
}

/// The encoder's lanes.
pub(crate) type LaneEncoder = Lanes<EncGroup>;

/// The decoder's lanes (the inverse mixture), [`LaneEncoder`]'s inverse.
pub(crate) type LaneDecoder = Lanes<DecGroup>;

impl<G: Rows> Lanes<G> {
    /// `lanes` sequences at step 0.
    pub(crate) fn new(mix: &BlockMix, lanes: usize) -> Self {
        let groups = (0..lanes)
            .step_by(GROUP_LANES)
            .map(|a| G::new(mix, GROUP_LANES.min(lanes - a)))
            .collect();
        Self { lanes, groups }
    }

    /// Steps `t0 .. t0 + x.len()` (the stream's, continuing from the last call), their
    /// outputs into `out`, groups of sequences on every thread when `parallel`: each
    /// thread takes a run of adjacent groups and walks the rows in order across them, so
    /// it reads and writes one contiguous stretch of every row (a group's own rows, a
    /// row's length apart, defeat the prefetcher). A group's operations are the same in
    /// either order.
    pub(crate) fn run(
        &mut self,
        mix: &BlockMix,
        t0: u64,
        x: &[f64],
        out: &mut [f64],
        parallel: bool,
    ) {
        let groups = self.groups.len();
        let parts = if parallel && self.lanes >= 4 * GROUP_LANES {
            rayon::current_num_threads().clamp(1, groups)
        } else {
            1
        };
        let per = groups.div_ceil(parts);
        let plans = plan(self.lanes, t0, out, per);
        let go = |(grps, plan): (&mut [G], Vec<Piece<'_>>)| {
            for (g, m, r0, at, o) in plan {
                let n = o.len();
                grps[g].row(mix, m, r0, &x[at..at + n], o);
            }
        };
        if parts > 1 {
            self.groups.par_chunks_mut(per).zip(plans).for_each(go);
        } else {
            self.groups.chunks_mut(per).zip(plans).for_each(go);
        }
    }
}

/// One group of sequences' encoder state.
#[derive(Debug, Clone)]
pub(crate) struct EncGroup {
    /// Its sequences.
    n: usize,
    /// Buffers at the current block's start, `[i n + r]`, as integers and f64.
    s: Vec<i128>,
    sf: Vec<f64>,
    /// The current block's inputs, `[j n + r]`.
    q: Vec<f64>,
}

/// Lanes summed at a time by [`lanes_sum`]: eight vectors of sums in registers, enough
/// independent chains to hide the fused multiply-add's latency.
const TILE: usize = 32;

/// `out[l] = sum_k a_k x_k[l]` for the lanes `t0 .. t0 + T` (see [`lanes_sum`]).
#[inline(always)]
fn tile_sum<'a, const T: usize>(
    out: &mut [f64],
    t0: usize,
    terms: impl Iterator<Item = (f64, &'a [f64])>,
) {
    let mut acc = [0.0f64; T];
    for (a, x) in terms {
        let x: &[f64; T] = x[t0..t0 + T].try_into().unwrap_or(&[0.0; T]);
        for l in 0..T {
            acc[l] = a.mul_add(x[l], acc[l]);
        }
    }
    out[t0..t0 + T].copy_from_slice(&acc);
}

/// `out[l] = sum_k a_k x_k[l]` (fused, over the terms in order, from `0.0`) for every lane
/// `l < out.len()`, a tile of lanes at a time (each lane's sum the same whatever its tile).
#[inline(always)]
fn lanes_sum<'a>(out: &mut [f64], terms: impl Iterator<Item = (f64, &'a [f64])> + Clone) {
    let w = out.len();
    let mut t0 = 0;
    while t0 + TILE <= w {
        tile_sum::<TILE>(out, t0, terms.clone());
        t0 += TILE;
    }
    while t0 + TILE / 4 <= w {
        tile_sum::<{ TILE / 4 }>(out, t0, terms.clone());
        t0 += TILE / 4;
    }
    for (l, o) in out.iter_mut().enumerate().skip(t0) {
        *o = terms.clone().fold(0.0, |acc, (a, x)| a.mul_add(x[l], acc));
    }
}

impl EncGroup {
    /// Row `m`'s outputs for the group's sequences `r0 .. r0 + x.len()` (group-relative).
    fn row(&mut self, mix: &BlockMix, m: u64, r0: usize, x: &[f64], out: &mut [f64]) {
        let (n, w, j) = (self.n, x.len(), (m % BLOCK as u64) as usize);
        self.q[j * n + r0..j * n + r0 + w].copy_from_slice(x);
        let mut g = [0.0f64; GROUP_LANES];
        let g = &mut g[..w];
        let sf = &self.sf;
        lanes_sum(
            g,
            (0..mix.d).map(|i| (mix.f[i * BLOCK + j], &sf[i * n + r0..i * n + r0 + w])),
        );
        let mut own = [0.0f64; GROUP_LANES];
        let own = &mut own[..w];
        let q = &self.q;
        lanes_sum(
            own,
            (1..=j).map(|k| (mix.c[k], &q[(j - k) * n + r0..(j - k) * n + r0 + w])),
        );
        for (((o, &q), &gv), &ov) in out.iter_mut().zip(x).zip(g.iter()).zip(own.iter()) {
            *o = (q + gv) + ov;
        }
        if j == BLOCK - 1 {
            for i in 0..mix.d {
                let mut acc = [0.0f64; GROUP_LANES];
                let acc = &mut acc[..w];
                let q = &self.q;
                lanes_sum(
                    acc,
                    (0..BLOCK).map(|sb| (mix.t[sb * mix.dp + i], &q[sb * n + r0..sb * n + r0 + w])),
                );
                for (r, &ds) in (r0..r0 + w).zip(acc.iter()) {
                    (self.s[i * n + r], self.sf[i * n + r]) =
                        mix.advance_one(i, self.s[i * n + r], ds);
                }
            }
        }
    }
}

/// A group of sequences stepped a row at a time.
pub(crate) trait Rows: Send {
    /// `n` sequences at step 0.
    fn new(mix: &BlockMix, n: usize) -> Self;
    /// Row `m`'s outputs for the group's sequences `r0 .. r0 + x.len()` (group-relative).
    fn row(&mut self, mix: &BlockMix, m: u64, r0: usize, x: &[f64], out: &mut [f64]);
}

impl Rows for EncGroup {
    fn new(mix: &BlockMix, n: usize) -> Self {
        Self {
            n,
            s: vec![0; mix.d * n],
            sf: vec![0.0; mix.d * n],
            q: vec![0.0; BLOCK * n],
        }
    }

    fn row(&mut self, mix: &BlockMix, m: u64, r0: usize, x: &[f64], out: &mut [f64]) {
        EncGroup::row(self, mix, m, r0, x, out);
    }
}

impl Rows for DecGroup {
    fn new(mix: &BlockMix, n: usize) -> Self {
        Self {
            n,
            r: vec![0.0; mix.d * n],
            v: vec![0.0; BLOCK * n],
            dec: vec![0.0; BLOCK * n],
        }
    }

    fn row(&mut self, mix: &BlockMix, m: u64, r0: usize, x: &[f64], out: &mut [f64]) {
        DecGroup::row(self, mix, m, r0, x, out);
    }
}

/// One group's part of one row: the group (within its run), the row, the first sequence
/// (group-relative), its position in the stream and its outputs.
type Piece<'a> = (usize, u64, usize, usize, &'a mut [f64]);

/// The pieces of steps `t0 .. t0 + out.len()` laid out `lanes` wide for each run of `per`
/// adjacent groups, row by row and within a row group by group: `out` split into
/// disjoint pieces (row by row, then at group boundaries).
fn plan(lanes: usize, t0: u64, out: &mut [f64], per: usize) -> Vec<Vec<Piece<'_>>> {
    let runs = lanes.div_ceil(GROUP_LANES).div_ceil(per);
    let mut plans: Vec<Vec<Piece<'_>>> = (0..runs).map(|_| Vec::new()).collect();
    let len = out.len();
    let mut rest = out;
    for (m, ra, rb, p) in rows(lanes, t0, len) {
        let (mut row, tail) = std::mem::take(&mut rest).split_at_mut(rb - ra);
        rest = tail;
        let mut r = ra;
        while r < rb {
            let g = r / GROUP_LANES;
            let end = ((g + 1) * GROUP_LANES).min(rb);
            let (piece, more) = std::mem::take(&mut row).split_at_mut(end - r);
            row = more;
            plans[g / per].push((g % per, m, r - g * GROUP_LANES, p + r - ra, piece));
            r = end;
        }
    }
    plans
}

/// One group of sequences' decoder state.
#[derive(Debug, Clone)]
pub(crate) struct DecGroup {
    /// Its sequences.
    n: usize,
    /// Buffers at the current block's start, `[i n + r]`.
    r: Vec<f64>,
    /// The current block's carried-corrected inputs and decoded values, `[j n + r]`.
    v: Vec<f64>,
    dec: Vec<f64>,
}

impl DecGroup {
    fn row(&mut self, mix: &BlockMix, m: u64, r0: usize, y: &[f64], out: &mut [f64]) {
        let (n, w, j) = (self.n, y.len(), (m % BLOCK as u64) as usize);
        let mut g = [0.0f64; GROUP_LANES];
        let g = &mut g[..w];
        let r = &self.r;
        lanes_sum(
            g,
            (0..mix.d).map(|i| (mix.f[i * BLOCK + j], &r[i * n + r0..i * n + r0 + w])),
        );
        for ((v, &yv), &gv) in self.v[j * n + r0..j * n + r0 + w]
            .iter_mut()
            .zip(y)
            .zip(g.iter())
        {
            *v = yv - gv;
        }
        let mut dec = [0.0f64; GROUP_LANES];
        let dec = &mut dec[..w];
        let v = &self.v;
        lanes_sum(
            dec,
            (0..=j).map(|k| (mix.h[k], &v[(j - k) * n + r0..(j - k) * n + r0 + w])),
        );
        self.dec[j * n + r0..j * n + r0 + w].copy_from_slice(dec);
        out.copy_from_slice(dec);
        if j == BLOCK - 1 {
            for i in 0..mix.d {
                let mut acc = [0.0f64; GROUP_LANES];
                let acc = &mut acc[..w];
                let dv = &self.dec;
                lanes_sum(
                    acc,
                    (0..BLOCK)
                        .map(|sb| (mix.t[sb * mix.dp + i], &dv[sb * n + r0..sb * n + r0 + w])),
                );
                let pf = mix.pf[i];
                for (rv, &a) in self.r[i * n + r0..i * n + r0 + w]
                    .iter_mut()
                    .zip(acc.iter())
                {
                    *rv = pf.mul_add(*rv, a);
                }
            }
        }
    }
}
