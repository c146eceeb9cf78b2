//! The factorizations' mixtures a block of steps at a time: vector arithmetic in place of a
//! recurrence a step.
//!
//! A mixture maps a stream `q` to `E_t = q_t + sum_i omega_i S_(i,t)` with buffers
//! `S_(i,t) = theta_i S_(i,t-1) + q_(t-1)` (`d` of them, `theta_i < 1`). Over a block of
//! [`BLOCK`] steps from `t_0 = b BLOCK`, step `t_0 + j` is
//! `E = q_j + sum_i omega_i theta_i^j S_(i,t_0) + sum_(0 < k <= j) c_k q_(j-k)`,
//! `c_k = sum_i omega_i theta_i^(k-1)`, and the buffers at the next block's start are
//! `S_(i,t_0 + BLOCK) = theta_i^BLOCK S_(i,t_0) + sum_s theta_i^(BLOCK-1-s) q_s`: small
//! dense products, four lanes wide (about `2 d + BLOCK / 2` fused multiply-adds a step),
//! and the blocks of a chunk encode in parallel once the buffers at their starts are known.
//!
//! **Encoder** ([`Encoder`], the privacy-relevant direction). The buffers at block starts
//! are exact 64-bit integers with units as fine as their range allows ([`Precision`]:
//! `2^-36` for a running sum's buffers, `2^-48` for the window factorization's lagged
//! differences, whose buffers stay below `W`; until 2026-12 that stage kept 128-bit
//! buffers), advanced by `floor(S P_i / 2^64)` (`P_i = theta_i^BLOCK` from five exact
//! squarings at 128 bits, floored) plus the block's contribution, computed in f64 and
//! rounded to the units. Within
//! a block everything is f64 (fused multiply-adds, the tables `theta^k` and
//! `omega theta^k` rounded once from double-double powers). Each error is bounded
//! ([`BlockMix::enc_err`], the worst case over every input the precision allows,
//! `|q| <= Q`; `u = 2^-53`, `u' = u (1 + 2^-40)`, `g_m = m u / (1 - m u)`,
//! `M_i` the bound on buffer `i`, `Q / (1 - theta_i)` or the lagged one, `W_1 = sum |omega_i|`):
//! * the contribution `D_i = sum_s theta_i^k q_s` within `Q (BLOCK u' + u BLOCK (BLOCK + 1)
//!   / 2)` (the tables, and the fused sum's roundings, `u` times each partial sum); with the
//!   rounding to units, the floor and `P`'s error, the buffers at block starts stay within
//!   `eps_i = (that + 2 units + 2^-63 M_i) / (1 - theta_i^BLOCK)` of the exact ones;
//! * the carried part `sum_i omega_i theta_i^j S_i` (the buffers as f64 within `u`) within `sum_i |omega_i| (eps_i + M_i (u' + 2u))` plus `u` times
//!   the fused sum's partial sums of `|omega_i| (M_i + eps_i)` (the slowest buffers, the
//!   largest terms, come last);
//! * the block's own part `sum c_k q_(j-k)` within `1.01 BLOCK W_1 Q (g_(B+d+1) + g_B)`;
//! * the two final additions within `g_2 (Q + 1.01 sum |omega_i| (M_i + eps_i) + 1.01
//!   BLOCK W_1 Q)`.
//!
//! Their sum, times 1.01, is the deviation `e` the release's L2 sensitivity counts
//! (`||C e_0|| + 2 e sqrt(T)`, as for the integer encoder it replaced, whose `e` was
//! `sum |omega_i| M_i 2^-64`). At `T = 3e7`: a running sum's `e` is `3.8e-9`
//! (`2 e sqrt(T) / ||C e_0|| = 1.7e-5`), a window's and an exponential sum's `3e-13`
//! (`blt::tests::build_times`). The test `blt::tests::the_block_encoder_is_within_its_bound`
//! holds it against an exact integer encoder on adversarial streams.
//!
//! **Decoder** ([`decoder::Decoder`], post-processing: no bound needed). The inverse
//! mixture `C^-1` in the same block form, its blocks on every thread too: `dec = L^-1 (y -
//! carried)`, `L^-1` the first [`BLOCK`] coefficients of `C^-1`, the buffers at block
//! starts in f64.
//!
//! **Bit for bit.** Every output is computed by the same operations in the same order
//! whether a block is stepped one value at a time (online) or whole (bulk, blocks in
//! parallel): each sum runs over its index in ascending order from `0.0`, the vector loops
//! run across independent outputs only, and a block's contribution to the next start is
//! computed once, at its end, by one function.

use rayon::prelude::*;

pub(crate) mod decoder;
pub(crate) mod lanes;

/// Steps per block (a power of two: `theta^BLOCK` by squarings).
pub(crate) const BLOCK: usize = 32;
/// Squarings from `theta` to `theta^BLOCK`.
const SQUARINGS: u32 = BLOCK.trailing_zeros();
/// Buffers a contribution updates at once (its lanes stay in registers).
const LANES: usize = 16;
/// Blocks whose buffers are advanced at a time in a parallel run (bounds its scratch).
const GROUP: usize = 4096;

/// The unit roundoff of f64.
const U: f64 = f64::EPSILON / 2.0;

/// `m u / (1 - m u)`: the relative error bound of `m` rounded operations.
fn g(m: usize) -> f64 {
    let mu = m as f64 * U;
    mu / (1.0 - mu)
}

/// `(hi, lo) t` in double-double: `hi + lo` within `2^-104` relative of the exact product
/// (`hi = fl(hi + lo)`).
fn dd_mul((hi, lo): (f64, f64), t: f64) -> (f64, f64) {
    let p = hi * t;
    let e = hi.mul_add(t, -p);
    let l = lo.mul_add(t, e);
    let s = p + l;
    (s, l - (s - p))
}

/// `floor(a b / 2^128)`, exactly.
#[inline]
fn mul_hi(a: u128, b: u128) -> u128 {
    const M: u128 = u64::MAX as u128;
    let (a1, a0, b1, b0) = (a >> 64, a & M, b >> 64, b & M);
    let lo = (a0 * b0) >> 64;
    let (m1, m2) = (a1 * b0, a0 * b1);
    let mid = (m1 >> 64) + (m2 >> 64) + (((m1 & M) + (m2 & M) + lo) >> 64);
    a1 * b1 + mid
}

/// The public constants of one mixture in block form (see the module's documentation).
#[derive(Debug, Clone)]
pub(crate) struct BlockMix {
    d: usize,
    /// `d` rounded up to a multiple of [`LANES`].
    dp: usize,
    /// `f[i BLOCK + j] = fl(omega_i theta_i^j)`.
    f: Vec<f64>,
    /// `t[s dp + i] = fl(theta_i^(BLOCK - 1 - s))` (0 past `d`).
    t: Vec<f64>,
    /// `c[k] = fl(c_k)` for `1 <= k < BLOCK` (`c[0] = 0`).
    c: Vec<f64>,
    /// The first coefficients of the inverse mixture (`h[0] = 1`).
    h: Vec<f64>,
    /// `2^units` and `2^-units` for the fraction bits `units` of the buffers at block
    /// starts (hoisted out of [`advance_one`](Self::advance_one): both exact).
    scale: f64,
    inv_scale: f64,
    /// `floor(theta_i^BLOCK 2^64)`, exactly.
    p: Vec<u64>,
    /// `fl(theta_i^BLOCK)`.
    pf: Vec<f64>,
    /// The decoder's carried part, `gd[i BLOCK + j] = (L^-1 F)_(j, i)` (`L^-1` the first
    /// coefficients `h`, `F` the table `f`): step `j`'s part carried by buffer `i`
    /// ([`decoder`]).
    gd: Vec<f64>,
    /// The decoder's advance, `md[l dp + i] = M_(i, l)` for `M = diag(pf) - T G` (0 past
    /// `d`): the next start's buffers from this one's.
    md: Vec<f64>,
    /// The encoder's deviation bound per step, in values.
    err: f64,
    /// A bound on `|E|` for the inputs the precision allows.
    reach: f64,
}

/// How an encoder keeps its buffers at block starts (exactly, as integers).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Precision {
    /// In 64 bits, units as fine as `|S| <= q_max / (1 - theta)` leaves room for (one
    /// product an advance; `2^-36` for a running sum's buffers, a deviation bound about
    /// `1e-9`).
    Int64 {
        /// The inputs' largest magnitude (either sign).
        q_max: f64,
    },
    /// In 64 bits for inputs that are differences `x_t - x_(t - lag)` of a stream in
    /// `[0, q_max]` (the window factorization's first stage): buffer `i` is then within
    /// `q_max (1 - theta_i^lag) / (1 - theta_i)`, at most `lag q_max` (the two sums of
    /// the stream it differences each lie in `[0, q_max (1 - theta_i^lag) / (1 - theta_i)]`),
    /// which leaves room for finer units (`2^-48` for lags up to `2^11`).
    Lagged {
        /// The stream's largest value.
        q_max: f64,
        /// The lag of the differences.
        lag: u64,
    },
}

impl Precision {
    fn q_max(self) -> f64 {
        match self {
            Self::Int64 { q_max } | Self::Lagged { q_max, .. } => q_max,
        }
    }

    /// A bound on a buffer's magnitude for every input allowed, the buffer's `theta`
    /// being `1 - gap`.
    fn buffer_bound(self, gap: f64) -> f64 {
        let q = self.q_max();
        match self {
            Self::Lagged { lag, .. } => {
                // 1 - theta^lag, rounded up, over the gap.
                let lagged = -(lag as f64 * (-gap).ln_1p()).exp_m1() * (1.0 + 1e-9);
                q * (lagged / gap).min(lag as f64) * (1.0 + 1e-9)
            }
            Self::Int64 { .. } => q / gap * (1.0 + 1e-9),
        }
    }
}

/// Fraction bits of 64-bit buffers whose values reach `reach` (at most `2^60` units),
/// with contributions up to `BLOCK q_max` (at most `2^58` units), at most 48.
fn units_for(reach: f64, q_max: f64) -> i32 {
    let room = |v: f64, bits: f64| (bits - v.max(1.0).log2().ceil()) as i32;
    room(reach, 60.0)
        .min(room(BLOCK as f64 * q_max, 58.0))
        .min(48)
}

impl BlockMix {
    /// The block form of the mixture `theta_i = theta_m[i] / 2^64` (each exactly an f64
    /// `theta[i]`, at most `1 - 2^-24`), `omega[i]`, for inputs `precision` allows.
    pub(crate) fn new(theta_m: &[u64], theta: &[f64], omega: &[f64], precision: Precision) -> Self {
        let d = theta.len();
        let dp = d.div_ceil(LANES) * LANES;
        // pow[k][i]: theta_i^k in double-double (relative error below k 2^-104), so that
        // every table entry below is rounded once (within u(1 + 2^-40)).
        let mut pow = vec![vec![(1.0f64, 0.0f64); d]; BLOCK + 1];
        for k in 1..=BLOCK {
            for i in 0..d {
                pow[k][i] = dd_mul(pow[k - 1][i], theta[i]);
            }
        }
        let mut f = vec![0.0; d * BLOCK];
        for i in 0..d {
            for j in 0..BLOCK {
                let (hi, lo) = pow[j][i];
                let p = omega[i] * hi;
                f[i * BLOCK + j] = p + omega[i].mul_add(hi, -p) + omega[i] * lo;
            }
        }
        let pow: Vec<Vec<f64>> = pow
            .iter()
            .map(|row| row.iter().map(|&(hi, _)| hi).collect())
            .collect();
        let mut t = vec![0.0; BLOCK * dp];
        for s in 0..BLOCK {
            for i in 0..d {
                t[s * dp + i] = pow[BLOCK - 1 - s][i];
            }
        }
        let mut c = vec![0.0; BLOCK];
        for (k, ck) in c.iter_mut().enumerate().skip(1) {
            *ck = (0..d).fold(0.0, |acc, i| acc + omega[i] * pow[k - 1][i]);
        }
        let mut h = vec![0.0; BLOCK];
        h[0] = 1.0;
        for k in 1..BLOCK {
            h[k] = -(1..=k).fold(0.0, |acc, m| acc + c[m] * h[k - m]);
        }
        // theta_i^BLOCK 2^128 by floored squarings (at most 32 units low), then floored to
        // 64 bits.
        let p = theta_m
            .iter()
            .map(|&m| {
                let mut x = u128::from(m) << 64;
                for _ in 0..SQUARINGS {
                    x = mul_hi(x, x);
                }
                (x >> 64) as u64
            })
            .collect();
        let pf: Vec<f64> = (0..d).map(|i| pow[BLOCK][i]).collect();
        let q = precision.q_max();
        let units = {
            let s_max = theta_m
                .iter()
                .map(|&m| {
                    precision.buffer_bound((2f64.powi(64) - m as f64).max(1.0) * 2f64.powi(-64))
                })
                .fold(q, f64::max);
            units_for(s_max * 1.01, q)
        };
        let (err, reach) = bound(theta_m, omega, precision, units);
        let (gd, md) = dec_tables(d, dp, &f, &t, &h, &pf);
        Self {
            d,
            dp,
            f,
            t,
            c,
            h,
            scale: 2f64.powi(units),
            inv_scale: 2f64.powi(-units),
            p,
            pf,
            gd,
            md,
            err,
            reach,
        }
    }

    /// The encoder's largest deviation from the exact mixture at any step, for any input
    /// the precision allows (values).
    pub(crate) fn enc_err(&self) -> f64 {
        self.err
    }

    /// A bound on the encoder's outputs for the inputs the precision allows.
    pub(crate) fn reach(&self) -> f64 {
        self.reach
    }

    /// `g[j] = sum_i table[i BLOCK + j] s_i` (over `i` in order, from `0.0`) for `j` in
    /// `j0 .. j1`: the part of steps `j0 .. j1` of a block carried by its buffers at the
    /// start, `s` (`table` is `f`, `omega_i theta_i^j`, or the decoder's `gd`).
    #[inline]
    fn carried(table: &[f64], s: &[f64], j0: usize, j1: usize, g: &mut [f64; BLOCK]) {
        if j0 == 0 && j1 == BLOCK {
            // The whole block: `g` stays in registers, a row of `f` at a time.
            let mut acc = [0.0f64; BLOCK];
            for (row, &si) in table.chunks_exact(BLOCK).zip(s) {
                for j in 0..BLOCK {
                    acc[j] = row[j].mul_add(si, acc[j]);
                }
            }
            *g = acc;
            return;
        }
        g[j0..j1].fill(0.0);
        for (row, &si) in table.chunks_exact(BLOCK).zip(s) {
            for j in j0..j1 {
                g[j] = row[j].mul_add(si, g[j]);
            }
        }
    }

    /// `out[j] = sum_(k = from ..= j) coef[k] v[j - k]` (over `k` in order, from `0.0`) for
    /// `j` in `j0 .. j1`: a block's Toeplitz part, `v` valid up to `j1`.
    #[inline]
    fn toeplitz(
        coef: &[f64; BLOCK],
        from: usize,
        v: &[f64; BLOCK],
        j0: usize,
        j1: usize,
        out: &mut [f64; BLOCK],
    ) {
        if j0 == 0 && j1 == BLOCK {
            Self::toeplitz_whole(coef, from, [v], [out]);
            return;
        }
        for j in j0..j1 {
            let mut acc = 0.0f64;
            for k in from..=j {
                acc = coef[k].mul_add(v[j - k], acc);
            }
            out[j] = acc;
        }
    }

    /// [`toeplitz`](Self::toeplitz) for `N` whole blocks at once: their sums interleaved
    /// (independent chains of fused multiply-adds overlap), each block's in the same order
    /// as alone, so the same bits.
    ///
    /// Every `k` for every `j`, over `v` padded with zeros before its start: a term with
    /// `k > j` adds +-0 to a sum that is never -0 (it starts at +0), so the same bits as the
    /// terms `k <= j` alone, in loops of a fixed length (the sums in registers). The first
    /// half's terms stop at `k = HALF - 1` (the rest are the zeros `k > j`).
    #[inline]
    fn toeplitz_whole<const N: usize>(
        coef: &[f64; BLOCK],
        from: usize,
        v: [&[f64; BLOCK]; N],
        out: [&mut [f64; BLOCK]; N],
    ) {
        const HALF: usize = BLOCK / 2;
        let mut pad = [[0.0f64; 2 * BLOCK]; N];
        for (p, v) in pad.iter_mut().zip(v) {
            p[BLOCK..].copy_from_slice(v);
        }
        let mut lo = [[0.0f64; HALF]; N];
        for (k, &ck) in coef.iter().enumerate().take(HALF).skip(from) {
            for (lo, pad) in lo.iter_mut().zip(&pad) {
                let src = &pad[BLOCK - k..BLOCK - k + HALF];
                for j in 0..HALF {
                    lo[j] = ck.mul_add(src[j], lo[j]);
                }
            }
        }
        let mut hi = [[0.0f64; HALF]; N];
        for (k, &ck) in coef.iter().enumerate().skip(from) {
            for (hi, pad) in hi.iter_mut().zip(&pad) {
                let src = &pad[BLOCK + HALF - k..BLOCK + BLOCK - k];
                for j in 0..HALF {
                    hi[j] = ck.mul_add(src[j], hi[j]);
                }
            }
        }
        for ((out, lo), hi) in out.into_iter().zip(&lo).zip(&hi) {
            out[..HALF].copy_from_slice(lo);
            out[HALF..].copy_from_slice(hi);
        }
    }

    /// `out[i] = sum_s theta_i^(BLOCK - 1 - s) v[s]` (over `s` in order, from `0.0`) for
    /// every buffer (`out` has `dp` entries): a whole block's part of the next start,
    /// [`LANES`] buffers at a time.
    #[inline]
    fn contribution(&self, v: &[f64; BLOCK], out: &mut [f64]) {
        self.contributions([v], [out]);
    }

    /// [`contribution`](Self::contribution) for `N` blocks at once: their sums
    /// interleaved, each in the same order as alone (the same bits).
    #[inline]
    fn contributions<const N: usize>(&self, v: [&[f64; BLOCK]; N], mut out: [&mut [f64]; N]) {
        for g0 in (0..self.dp).step_by(LANES) {
            let mut lanes = [[0.0f64; LANES]; N];
            for s in 0..BLOCK {
                let row = &self.t[s * self.dp + g0..s * self.dp + g0 + LANES];
                for (lanes, v) in lanes.iter_mut().zip(&v) {
                    let vs = v[s];
                    for l in 0..LANES {
                        lanes[l] = row[l].mul_add(vs, lanes[l]);
                    }
                }
            }
            for (o, lanes) in out.iter_mut().zip(&lanes) {
                o[g0..g0 + LANES].copy_from_slice(lanes);
            }
        }
    }

    /// Two whole blocks' (or one's) contributions into `out` (`dp` entries a block).
    #[inline]
    fn contributions_of(&self, q: &[f64], out: &mut [f64]) {
        if q.len() == 2 * BLOCK {
            let (o1, o2) = out.split_at_mut(self.dp);
            self.contributions([block_of(&q[..BLOCK]), block_of(&q[BLOCK..])], [o1, o2]);
        } else {
            self.contribution(block_of(q), out);
        }
    }

    /// The encoder's outputs at steps `j0 .. j1` of a block (buffers at its start `s`,
    /// inputs `q` valid up to `j1`).
    #[inline]
    fn encode(&self, s: &[f64], q: &[f64; BLOCK], j0: usize, j1: usize, out: &mut [f64]) {
        let mut g = [0.0f64; BLOCK];
        Self::carried(&self.f, s, j0, j1, &mut g);
        let mut own = [0.0f64; BLOCK];
        Self::toeplitz(block_of(&self.c), 1, q, j0, j1, &mut own);
        for (j, o) in (j0..j1).zip(out.iter_mut()) {
            *o = (q[j] + g[j]) + own[j];
        }
    }

    /// Two whole blocks' (or one's) outputs, `s` their buffers at their starts (`d` a
    /// block): [`encode`](Self::encode)'s operations, the Toeplitz parts interleaved.
    #[inline]
    fn encode_whole(&self, s: &[f64], q: &[f64], out: &mut [f64]) {
        if q.len() != 2 * BLOCK {
            self.encode(s, block_of(q), 0, BLOCK, out);
            return;
        }
        let (qa, qb) = (block_of(&q[..BLOCK]), block_of(&q[BLOCK..]));
        let (mut own_a, mut own_b) = ([0.0f64; BLOCK], [0.0f64; BLOCK]);
        Self::toeplitz_whole(block_of(&self.c), 1, [qa, qb], [&mut own_a, &mut own_b]);
        let (oa, ob) = out.split_at_mut(BLOCK);
        for ((s, q), (o, own)) in [(&s[..self.d], qa), (&s[self.d..], qb)]
            .into_iter()
            .zip([(oa, &own_a), (ob, &own_b)])
        {
            let mut g = [0.0f64; BLOCK];
            Self::carried(&self.f, s, 0, BLOCK, &mut g);
            for (j, o) in o.iter_mut().enumerate() {
                *o = (q[j] + g[j]) + own[j];
            }
        }
    }

    /// The encoder's buffers at the next block's start (integers of the precision's units,
    /// and as f64) from this block's start and its contributions `ds`.
    #[inline]
    fn advance(&self, s: &mut [i128], sf: &mut [f64], ds: &[f64]) {
        for (i, ((s, sf), &ds)) in s.iter_mut().zip(sf).zip(ds).enumerate() {
            (*s, *sf) = self.advance_one(i, *s, ds);
        }
    }

    /// Buffer `i` at the next block's start from `s` at this one's and the contribution
    /// `ds`: the integer and its f64 value.
    #[inline]
    fn advance_one(&self, i: usize, s: i128, ds: f64) -> (i128, f64) {
        // |ds| <= BLOCK q_max and |s| below 2^60 units (`units_for`): one product,
        // truncated.
        // Powers of two: the product by the inverse is the exact quotient.
        let add = (ds * self.scale).round() as i64;
        let s = s as i64;
        let mag = ((u128::from(s.unsigned_abs()) * u128::from(self.p[i])) >> 64) as i64;
        let s = if s < 0 { -mag } else { mag } + add;
        (i128::from(s), s as f64 * self.inv_scale)
    }
}

/// The decoder's tables `(gd, md)` (see [`BlockMix`]'s fields and [`decoder`]).
fn dec_tables(
    d: usize,
    dp: usize,
    f: &[f64],
    t: &[f64],
    h: &[f64],
    pf: &[f64],
) -> (Vec<f64>, Vec<f64>) {
    let mut gd = vec![0.0; d * BLOCK];
    for i in 0..d {
        for j in 0..BLOCK {
            gd[i * BLOCK + j] = (0..=j).fold(0.0, |acc, k| h[k].mul_add(f[i * BLOCK + j - k], acc));
        }
    }
    let mut md = vec![0.0; d * dp];
    for l in 0..d {
        for i in 0..d {
            let tg = (0..BLOCK).fold(0.0, |acc, s| t[s * dp + i].mul_add(gd[l * BLOCK + s], acc));
            md[l * dp + i] = if i == l { pf[i] - tg } else { -tg };
        }
    }
    (gd, md)
}

/// The encoder's deviation bound and a bound on its outputs (see the module's
/// documentation).
fn bound(theta_m: &[u64], omega: &[f64], precision: Precision, units: i32) -> (f64, f64) {
    let (d, b, bf) = (omega.len(), BLOCK, BLOCK as f64);
    let q = precision.q_max();
    // A table entry (theta^k, omega theta^k) within u' of the exact value.
    let u1 = U * (1.0 + 2f64.powi(-40));
    let w1: f64 = omega.iter().map(|o| o.abs()).sum();
    // P's error relative to theta^BLOCK: 2^-64 (floored from 128 bits) and 32 2^-128; the
    // buffers as f64: one rounding.
    let (p_err, sf_err) = (2f64.powi(-63), U);
    // The contribution, a fused sum over s in order of terms below q each: the tables'
    // errors (BLOCK u' q) and the roundings, u times the partial sums (at most (k + 1) q).
    let floats = q * (bf * u1 + 1.01 * U * bf * (bf + 1.0) / 2.0);
    let (mut carried, mut big, mut partial, mut sums) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for (&m, &o) in theta_m.iter().zip(omega) {
        // 1 - theta from its integer form, and 1 - theta^BLOCK from it (rounded down).
        let gap = (2f64.powi(64) - m as f64).max(1.0) * 2f64.powi(-64);
        let gap_b = -(bf * (-gap).ln_1p()).exp_m1() * (1.0 - 1e-9);
        let big_m = precision.buffer_bound(gap);
        // The contribution's floats, the rounding to units and the floor or truncation,
        // and P's error on the buffer: per block, kept by the buffer within
        // 1 / (1 - theta^BLOCK) of them.
        let delta = floats + 2.0 * (-f64::from(units)).exp2() + p_err * big_m * 1.01;
        let eps = delta / gap_b;
        // The carried part's term: its inputs' errors; the fused sum over the buffers in
        // order (the slowest, largest, last) rounds u times each partial sum.
        let term = o.abs() * (big_m + eps) * (1.0 + u1) * (1.0 + sf_err);
        carried += o.abs() * (eps + big_m * (u1 + sf_err + u1 * sf_err));
        partial += term;
        sums += partial;
        big += o.abs() * (big_m + eps);
    }
    carried += 1.01 * U * sums;
    let own = 1.01 * bf * w1 * q * (g(b + d + 1) + g(b));
    let reach = q + 1.01 * big + 1.01 * bf * w1 * q;
    let last = g(2) * reach;
    (1.01 * (carried + own + last), reach)
}

/// The encoder's state: the buffers at the current block's start (exact units and f64)
/// and the block's inputs so far.
#[derive(Debug, Clone)]
pub(crate) struct Encoder {
    s: Vec<i128>,
    sf: Vec<f64>,
    /// Scratch: a block's contributions.
    ds: Vec<f64>,
    /// Scratch of a parallel run: a group's contributions and starts (kept: freed and
    /// allocated again each run, they cost page faults).
    bulk: (Vec<f64>, Vec<f64>),
    q: [f64; BLOCK],
    j: usize,
}

impl Encoder {
    /// At step 0 (every buffer empty).
    pub(crate) fn new(mix: &BlockMix) -> Self {
        Self {
            s: vec![0; mix.d],
            sf: vec![0.0; mix.d],
            ds: vec![0.0; mix.dp],
            bulk: (Vec::new(), Vec::new()),
            q: [0.0; BLOCK],
            j: 0,
        }
    }

    /// The outputs for `qs` (in the range the mixture's precision allows), in order from
    /// the current step.
    pub(crate) fn run(&mut self, mix: &BlockMix, qs: &[f64], out: &mut [f64]) {
        by_block(&mut self.j, qs.len(), |j0, j1, at| {
            let at = at..at + (j1 - j0);
            self.q[j0..j1].copy_from_slice(&qs[at.clone()]);
            mix.encode(&self.sf, &self.q, j0, j1, &mut out[at]);
            if j1 == BLOCK {
                mix.contribution(&self.q, &mut self.ds);
                mix.advance(&mut self.s, &mut self.sf, &self.ds);
            }
        });
    }

    /// The same outputs as [`run`](Self::run), the whole blocks on every thread: their
    /// contributions in parallel, the buffers' values at the blocks' starts (in order over
    /// the blocks), then the blocks' outputs in parallel.
    pub(crate) fn run_parallel(&mut self, mix: &BlockMix, qs: &[f64], out: &mut [f64]) {
        let (head, whole) = head_and_whole(self.j, qs.len());
        self.run(mix, &qs[..head], &mut out[..head]);
        let (body, body_out) = (&qs[head..head + whole], &mut out[head..head + whole]);
        let mut bulk = std::mem::take(&mut self.bulk);
        let (s, sf) = (&mut self.s, &mut self.sf);
        whole_blocks(
            mix,
            body,
            body_out,
            &mut bulk,
            |qb, _, ds| mix.contributions_of(qb, ds),
            |c, start| {
                start.copy_from_slice(sf);
                mix.advance(s, sf, c);
            },
            |qb, o, starts| mix.encode_whole(starts, qb, o),
        );
        self.bulk = bulk;
        let rest = head + whole;
        self.run(mix, &qs[rest..], &mut out[rest..]);
    }
}

/// The online runs' frame: `n` steps from position `*j` of the current block, a piece of
/// one block at a time, `step(j0, j1, at)` for the block's steps `j0 .. j1` (`at` their
/// first in the run; `j1 == BLOCK` ends the block), `*j` kept at the position reached.
#[inline]
pub(crate) fn by_block(j: &mut usize, n: usize, mut step: impl FnMut(usize, usize, usize)) {
    let mut at = 0;
    while at < n {
        let (j0, take) = (*j, (BLOCK - *j).min(n - at));
        step(j0, j0 + take, at);
        *j = (j0 + take) % BLOCK;
        at += take;
    }
}

/// A parallel run of `n` steps from position `j` of the current block: the steps that
/// finish that block (run online) and the whole blocks after them.
#[inline]
pub(crate) fn head_and_whole(j: usize, n: usize) -> (usize, usize) {
    let head = ((BLOCK - j) % BLOCK).min(n);
    (head, (n - head) / BLOCK * BLOCK)
}

/// The whole blocks of a parallel run (`input.len()` a multiple of [`BLOCK`]), the frame
/// the encoder and the decoder share, [`GROUP`] blocks at a time: `first(inputs, outputs,
/// parts)` on every thread, two blocks at a time (`parts` has `dp` entries a block), then
/// `advance(part, start)` in order over the blocks (`start`: the `d` buffers at the
/// block's start, written), then `last(inputs, outputs, starts)` on every thread, two
/// blocks at a time. `bulk` is the scratch the parts and starts are kept in.
pub(crate) fn whole_blocks(
    mix: &BlockMix,
    input: &[f64],
    out: &mut [f64],
    bulk: &mut (Vec<f64>, Vec<f64>),
    first: impl Fn(&[f64], &mut [f64], &mut [f64]) + Sync,
    mut advance: impl FnMut(&mut [f64], &mut [f64]),
    last: impl Fn(&[f64], &mut [f64], &[f64]) + Sync,
) {
    let (d, dp) = (mix.d, mix.dp);
    let (parts, starts) = bulk;
    for (ig, og) in input
        .chunks(GROUP * BLOCK)
        .zip(out.chunks_mut(GROUP * BLOCK))
    {
        let n = ig.len() / BLOCK;
        parts.resize(n * dp, 0.0);
        og.par_chunks_mut(2 * BLOCK)
            .zip(ig.par_chunks(2 * BLOCK))
            .zip(parts.par_chunks_mut(2 * dp))
            .for_each(|((o, i), p)| first(i, o, p));
        starts.resize(n * d, 0.0);
        // One small product an advance: in order over the blocks, starts[b d + i].
        for (st, p) in starts.chunks_exact_mut(d).zip(parts.chunks_exact_mut(dp)) {
            advance(p, st);
        }
        og.par_chunks_mut(2 * BLOCK)
            .zip(ig.par_chunks(2 * BLOCK))
            .zip(starts.par_chunks(2 * d))
            .for_each(|((o, i), st)| last(i, o, st));
    }
}

/// A whole block's inputs as an array.
#[inline]
fn block_of(q: &[f64]) -> &[f64; BLOCK] {
    q.try_into().unwrap_or(&[0.0; BLOCK])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_products_are_exact_floors() {
        let cases = [
            (u128::MAX, u128::MAX),
            (1u128 << 127, 3),
            ((1u128 << 88) - 1, u128::MAX - 12345),
            (
                0x1234_5678_9abc_def0_0fed_cba9_8765_4321,
                0xffff_0000_ffff_0000_1111_2222_3333_4444,
            ),
        ];
        for (a, b) in cases {
            // Against schoolbook on 32-bit limbs.
            let limbs = |x: u128| {
                [
                    x as u32,
                    (x >> 32) as u32,
                    (x >> 64) as u32,
                    (x >> 96) as u32,
                ]
            };
            let (la, lb) = (limbs(a), limbs(b));
            let mut r = [0u64; 9];
            for i in 0..4 {
                let mut carry = 0u64;
                for j in 0..4 {
                    let cur = r[i + j] + u64::from(la[i]) * u64::from(lb[j]) + carry;
                    r[i + j] = cur & 0xffff_ffff;
                    carry = cur >> 32;
                }
                r[i + 4] += carry;
            }
            let want = u128::from(r[4] as u32)
                | (u128::from(r[5] as u32) << 32)
                | (u128::from(r[6] as u32) << 64)
                | (u128::from(r[7] as u32) << 96);
            assert_eq!(mul_hi(a, b), want, "{a:#x} {b:#x}");
        }
    }

    /// The lagged differences of streams in `[0, 1]` keep every buffer within its stated
    /// bound, and the worst stream (a full window then an empty one) nearly reaches it; an
    /// unlagged bound would be far larger.
    #[test]
    fn lagged_buffers_stay_within_their_bound() {
        let lag = 50u64;
        let precision = Precision::Lagged { q_max: 1.0, lag };
        for theta in [0.5, 0.97, 0.999, 1.0 - 2f64.powi(-20)] {
            let gap = 1.0 - theta;
            let stated = precision.buffer_bound(gap);
            assert!(stated <= lag as f64 * (1.0 + 1e-8), "{stated}");
            let streams: [Box<dyn Fn(u64) -> f64>; 3] = [
                Box::new(|t| {
                    if (t / lag).is_multiple_of(2) {
                        1.0
                    } else {
                        0.0
                    }
                }),
                Box::new(|t| f64::from((t * 7919 % 13) as u32) / 12.0),
                Box::new(|t| if t < 20 * lag { 1.0 } else { 0.0 }),
            ];
            let mut reached: f64 = 0.0;
            for x in &streams {
                let mut s = 0.0f64;
                for t in 0..20_000u64 {
                    let dq = x(t) - if t >= lag { x(t - lag) } else { 0.0 };
                    s = theta * s + dq;
                    assert!(s.abs() <= stated, "theta {theta} step {t}: {s} > {stated}");
                    reached = reached.max(s.abs());
                }
            }
            assert!(
                reached > 0.9 * stated,
                "theta {theta}: {reached} of {stated}"
            );
        }
    }
}
