//! Optimal linear (Honaker 2015) estimation on the k-ary trees: every estimate is the
//! minimum-variance unbiased linear combination of the counters released so far.
//!
//! **Bottom-up.** A complete node whose whole subtree is released (a *complete subtree*)
//! has the estimate `z = V (y / s^2 + Z / C)`: its own counter `y` (variance `s_l^2`) and the
//! sum `Z` of its children's estimates, each decayed to the node's end (variance
//! `C_l = V_(l-1) sum_c a_c^2`, `a_c = alpha^((k - 1 - c) k^(l - 1))`, `k V_(l-1)` without
//! decay), with `1 / V_l = 1 / s_l^2 + 1 / C_l` and `V_0 = s_0^2`. `z` is the minimum-variance
//! estimate of the node's total from its subtree (the children's estimates are sufficient
//! for their totals within their subtrees).
//!
//! **Independence.** The counters released by step `j` are the nodes of maximal complete
//! subtrees (*roots*: the prefix `[0, j]`'s canonical nodes, and in a window tree the
//! previous block's top nodes, the block itself never released). Roots hold disjoint steps
//! and independent noise, so the best estimate of a sum is the sum over roots of the best
//! estimate of its part in each: `z` for a root it covers, and for a root it covers in part
//! (a window's left end), the top-down estimate within that root.
//!
//! **Top-down** (windows, no decay). Given the estimate `u` of a node's total, its children's
//! are `z_c + (u - sum z) / k` (equal variances: the residual is shared equally). The part of
//! a root `R` before offset `o` is the sum of its leaves' top-down estimates before `o` (the
//! window trees keep running sums of them per block, filled once as each top-level node
//! completes, so a window's estimate is a difference of two of them: `O(1)` a step).
//! Its variance, with `F = V_m` the root's: writing `P` for that prefix and conditioning on
//! a node's total, `Var P = A + lambda^2 F` where, for a node with children of variance `V`,
//! digit `d` of `o` at the children's level and `(A', lambda')` the child's (0 when the rest
//! of `o` is 0): `A = V (d - d^2 / k) + A' + lambda'^2 V (1 - 1 / k) - 2 d lambda' V / k`,
//! `lambda = (d + lambda') / k` (the children given their parent's total are the
//! bottom-up estimates conditioned on their sum: covariance `V (I - J / k)`). The suffix
//! `R - P` the window uses has variance `A + (1 - lambda)^2 F`.

/// The bottom-up weights and variances of each level.
#[derive(Debug, Clone, Default)]
pub(crate) struct Levels {
    /// `V_l`: the variance of a complete subtree's root estimate at level `l`.
    pub var: Vec<f64>,
    /// `V_l / s_l^2`: the weight of the node's own counter.
    pub own: Vec<f64>,
    /// `V_l / C_l`: the weight of its children's decayed sum.
    pub kids: Vec<f64>,
}

impl Levels {
    /// The levels for counter variances `counter_var` (one per level), arity `k` and decay
    /// `alpha` per step (1: none).
    pub(crate) fn new(counter_var: &[f64], k: u64, alpha: f64) -> Self {
        let mut lv = Self::default();
        let mut span = 1.0f64; // k^(l - 1)
        for (l, &s2) in counter_var.iter().enumerate() {
            if l == 0 {
                lv.var.push(s2);
                lv.own.push(1.0);
                lv.kids.push(0.0);
                continue;
            }
            let gain2: f64 = if alpha == 1.0 {
                k as f64
            } else {
                (0..k)
                    .map(|c| alpha.powf(2.0 * (k - 1 - c) as f64 * span))
                    .sum()
            };
            let c = lv.var[l - 1] * gain2;
            let v = 1.0 / (1.0 / s2 + 1.0 / c);
            lv.var.push(v);
            lv.own.push(v / s2);
            lv.kids.push(v / c);
            span *= k as f64;
        }
        lv
    }

    /// A complete node's estimate from its counter `y` and its children's decayed sum `zc`.
    #[inline]
    pub(crate) fn combine(&self, l: usize, y: f64, zc: f64) -> f64 {
        if l == 0 {
            y
        } else {
            self.own[l] * y + self.kids[l] * zc
        }
    }

    /// `(A, lambda)` of the part before offset `o` of a complete subtree at level `m`
    /// (`0 < o < k^m`; see the module's documentation).
    fn prefix_moments(&self, k: u64, m: usize, o: u64) -> (f64, f64) {
        // Digits of o from level m - 1 down, then the recursion from the bottom up.
        let kf = k as f64;
        // At most 64 levels (k >= 2, offsets below 2^64): no allocation per call.
        let mut digits = [0u64; 64];
        let mut n = 0;
        let mut rest = o;
        for (i, digit) in digits.iter_mut().enumerate().take(m) {
            let (d, below) = divrem_pow(k, (m - 1 - i) as u32, rest);
            *digit = d;
            n = i + 1;
            rest = below;
            if rest == 0 {
                break;
            }
        }
        let (mut a, mut lambda) = (0.0f64, 0.0f64);
        for (i, &d) in digits[..n].iter().enumerate().rev() {
            // Children of this node are at level m - 1 - i.
            let v = self.var[m - 1 - i];
            let d = d as f64;
            a = v * (d - d * d / kf) + a + lambda * lambda * v * (1.0 - 1.0 / kf)
                - 2.0 * d * lambda * v / kf;
            lambda = (d + lambda) / kf;
        }
        (a, lambda)
    }

    /// The variance of the estimate of a root at level `m` from offset `o` to its end
    /// (`o = 0`: the whole root).
    pub(crate) fn suffix_var(&self, k: u64, m: usize, o: u64) -> f64 {
        if o == 0 {
            return self.var[m];
        }
        let (a, lambda) = self.prefix_moments(k, m, o);
        a + (1.0 - lambda) * (1.0 - lambda) * self.var[m]
    }
}

/// The roots of a block's prefix `[0, e)` at level `l` (`e <= k^top+1`, top the last level).
#[inline]
fn roots_at(k: u64, top: usize, l: usize, e: u64) -> u64 {
    let q = e / k.pow(l as u32);
    if l == top { q } else { q % k }
}

/// The highest level whose node holding offset `a` is complete before `e` (`a < e`): the
/// root of the prefix `[0, e)` that holds `a`.
fn root_level(k: u64, top: usize, a: u64, e: u64) -> usize {
    let mut m = 0usize;
    while m < top && divrem_pow(k, m as u32 + 1, a).0 < divrem_pow(k, m as u32 + 1, e).0 {
        m += 1;
    }
    m
}

/// `(v / k^e, v % k^e)`, by shifts for a power-of-two arity.
#[inline]
fn divrem_pow(k: u64, e: u32, v: u64) -> (u64, u64) {
    if k.is_power_of_two() {
        let sh = k.trailing_zeros() * e;
        if sh >= 64 {
            (0, v)
        } else {
            (v >> sh, v & ((1u64 << sh) - 1))
        }
    } else {
        let span = k.pow(e);
        (v / span, v % span)
    }
}

/// The variance of the window estimate at step `j` (window `w`, `top + 1` levels).
pub(crate) fn window_var(lv: &Levels, k: u64, top: usize, w: u64, j: u64) -> f64 {
    let block = k.pow(top as u32 + 1);
    let (here, e) = (j / block * block, j % block + 1);
    let start = (j + 1).saturating_sub(w);
    let prefix = |upto: usize| -> f64 {
        (0..upto)
            .map(|l| roots_at(k, top, l, e) as f64 * lv.var[l])
            .sum()
    };
    if start == here {
        return prefix(top + 1);
    }
    if start > here {
        let a = start - here;
        let m = root_level(k, top, a, e);
        let span = k.pow(m as u32);
        let (r, o) = (a / span, a % span);
        let after = (e / span - 1 - r) as f64;
        return prefix(m) + after * lv.var[m] + lv.suffix_var(k, m, o);
    }
    let a = start + block - here;
    let span = k.pow(top as u32);
    let (r, o) = (a / span, a % span);
    prefix(top + 1) + (k - 1 - r) as f64 * lv.var[top] + lv.suffix_var(k, top, o)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stated variances against a direct generalised least squares on a small tree:
    /// every prefix of a complete subtree (binary and ternary, unequal level noise).
    #[test]
    fn the_suffix_variance_is_the_least_squares_one() {
        for (k, m, s2) in [
            (2u64, 3usize, vec![1.0, 2.0, 0.5, 3.0]),
            (3, 2, vec![1.0, 1.5, 0.7]),
        ] {
            let lv = Levels::new(&s2, k, 1.0);
            let leaves = k.pow(m as u32) as usize;
            // Design: every node of the subtree, rows of leaf indicators.
            let mut rows: Vec<(Vec<f64>, f64)> = Vec::new();
            for (l, &v) in s2.iter().enumerate().take(m + 1) {
                let span = k.pow(l as u32) as usize;
                for i in 0..leaves / span {
                    let mut a = vec![0.0; leaves];
                    a[i * span..(i + 1) * span]
                        .iter_mut()
                        .for_each(|v| *v = 1.0);
                    rows.push((a, v));
                }
            }
            let mut h = vec![vec![0.0; leaves]; leaves];
            for (a, v) in &rows {
                for p in 0..leaves {
                    for q in 0..leaves {
                        h[p][q] += a[p] * a[q] / v;
                    }
                }
            }
            let cov = invert(h);
            for o in 0..leaves as u64 {
                let g: Vec<f64> = (0..leaves).map(|i| f64::from(i as u64 >= o)).collect();
                let want: f64 = (0..leaves)
                    .map(|p| (0..leaves).map(|q| g[p] * cov[p][q] * g[q]).sum::<f64>())
                    .sum();
                let got = lv.suffix_var(k, m, o);
                assert!(
                    (got / want - 1.0).abs() < 1e-9,
                    "k {k} o {o}: {got} vs {want}"
                );
            }
        }
    }

    fn invert(mut a: Vec<Vec<f64>>) -> Vec<Vec<f64>> {
        let n = a.len();
        let mut inv: Vec<Vec<f64>> = (0..n)
            .map(|i| (0..n).map(|j| f64::from(u8::from(i == j))).collect())
            .collect();
        for c in 0..n {
            let p = (c..n)
                .max_by(|&x, &y| a[x][c].abs().total_cmp(&a[y][c].abs()))
                .unwrap_or(c);
            a.swap(c, p);
            inv.swap(c, p);
            let d = a[c][c];
            for j in 0..n {
                a[c][j] /= d;
                inv[c][j] /= d;
            }
            for r in 0..n {
                if r != c {
                    let f = a[r][c];
                    for j in 0..n {
                        a[r][j] -= f * a[c][j];
                        inv[r][j] -= f * inv[c][j];
                    }
                }
            }
        }
        inv
    }
}
