//! Quantiles chosen among public candidates by permute-and-flip.
//!
//! The candidates are `C` evenly spaced points of `[lo, hi]` (public). For the level
//! `q = a / b` (`b = 10^6`) the score of candidate `c` is `-|(b - a) #{x < c} - a #{x > c}|`
//! (Smith, STOC 2011; OpenDP's `make_quantile_score_candidates` has the same form): rows
//! equal to `c` count on neither side, so a candidate tied with many rows scores as well as
//! it should. Adding or removing one row moves one of the two counts by 1 (or neither):
//! the score by at most `max(a, b - a)`. Replacing one removes and adds: `(b - a) + a = b`
//! at most (when both moves are on the same side they cancel). [`PermuteAndFlip`] with those sensitivities is `epsilon / m`-DP per
//! level; `m` levels compose to `epsilon`. Permute-and-flip is never worse in expected score
//! than the exponential mechanism (McKenna & Sheldon 2020), which OpenDP and diffprivlib use.

use super::moments::share;
use super::spec::{Estimate, Part, Released, SummaryQuery};
pub use super::spec::{LEVEL_DENOMINATOR, level};
use kinsey_core::Result;
use kinsey_dp::permute_flip::PermuteAndFlip;
use kinsey_dp::{Neighbours, NoiseRng};

/// The estimate's name for level `q` (`q0.5`).
pub fn name(q: f64) -> String {
    format!("q{q}")
}

/// The public candidates: `count` evenly spaced points from `lo` to `hi`.
pub fn candidates(lo: f64, hi: f64, count: usize) -> Vec<f64> {
    let last = (count - 1) as f64;
    (0..count)
        .map(|i| {
            if i + 1 == count {
                hi
            } else {
                lo + (hi - lo) * (i as f64 / last)
            }
        })
        .collect()
}

/// The score sensitivity of level `a / 10^6`.
pub fn sensitivity(a: u64, neighbours: Neighbours) -> u64 {
    match neighbours {
        Neighbours::Bounded => LEVEL_DENOMINATOR,
        Neighbours::Unbounded => a.max(LEVEL_DENOMINATOR - a),
    }
}

/// `(#{x < c}, #{x > c})` for every candidate `c` (`x` sorted).
pub fn counts(sorted: &[f64], candidates: &[f64]) -> Vec<(u64, u64)> {
    let n = sorted.len();
    candidates
        .iter()
        .map(|&c| {
            let lt = sorted.partition_point(|&x| x < c);
            let le = sorted.partition_point(|&x| x <= c);
            (lt as u64, (n - le) as u64)
        })
        .collect()
}

/// [`counts`] accumulated a block of values at a time, without sorting or holding them: per
/// value, how many candidates are at most it and how many are below it; the counts per
/// candidate are prefix sums of those (exact integers: any blocks, the same counts).
#[derive(Debug, Clone)]
pub struct CandidateCounts {
    candidates: Vec<f64>,
    /// `at_most[i]`: values with exactly `i` candidates `<= x`.
    at_most: Vec<u64>,
    /// `below[i]`: values with exactly `i` candidates `< x`.
    below: Vec<u64>,
}

impl CandidateCounts {
    /// Empty counts over `candidates` (ascending).
    pub fn new(candidates: Vec<f64>) -> Self {
        let m = candidates.len() + 1;
        Self {
            candidates,
            at_most: vec![0; m],
            below: vec![0; m],
        }
    }

    /// Add a block of values (counted on every core: integer counts, any split).
    pub fn add(&mut self, values: &[f64]) {
        use rayon::prelude::*;
        let (m, cands) = (self.at_most.len(), &self.candidates);
        let zero = || (vec![0u64; m], vec![0u64; m]);
        let (at_most, below) = values
            .par_chunks(4096)
            .fold(zero, |(mut a, mut b), chunk| {
                for &x in chunk {
                    a[cands.partition_point(|&c| c <= x)] += 1;
                    b[cands.partition_point(|&c| c < x)] += 1;
                }
                (a, b)
            })
            .reduce(zero, |(mut a, mut b), (c, d)| {
                a.iter_mut().zip(c).for_each(|(x, y)| *x += y);
                b.iter_mut().zip(d).for_each(|(x, y)| *x += y);
                (a, b)
            });
        self.at_most
            .iter_mut()
            .zip(at_most)
            .for_each(|(x, y)| *x += y);
        self.below.iter_mut().zip(below).for_each(|(x, y)| *x += y);
    }

    /// The counts: values with exactly `i` candidates at most them, and below them.
    pub fn parts(&self) -> (Vec<u64>, Vec<u64>) {
        (self.at_most.clone(), self.below.clone())
    }

    /// Add counts over the same candidates accumulated elsewhere ([`parts`](Self::parts)).
    pub fn add_parts(&mut self, at_most: &[u64], below: &[u64]) -> bool {
        if at_most.len() != self.at_most.len() || below.len() != self.below.len() {
            return false;
        }
        self.at_most
            .iter_mut()
            .zip(at_most)
            .for_each(|(x, y)| *x += y);
        self.below.iter_mut().zip(below).for_each(|(x, y)| *x += y);
        true
    }

    /// Values added.
    pub fn rows(&self) -> usize {
        self.at_most.iter().sum::<u64>() as usize
    }

    /// `(#{x < c}, #{x > c})` for every candidate `c`, as [`counts`] gives them.
    pub fn counts(&self) -> Vec<(u64, u64)> {
        let (mut lt, mut gt) = (0u64, self.rows() as u64 - self.below[0]);
        (0..self.candidates.len())
            .map(|k| {
                // x < c_k: at most k candidates are <= x; x > c_k: more than k are < x.
                lt += self.at_most[k];
                let out = (lt, gt);
                gt -= self.below[k + 1];
                out
            })
            .collect()
    }
}

/// The scores of every candidate for level `a / 10^6` given `(#{x < c}, #{x > c})`.
pub fn scores(counts: &[(u64, u64)], a: u64) -> Vec<i128> {
    let (wa, wb) = (i128::from(LEVEL_DENOMINATOR - a), i128::from(a));
    counts
        .iter()
        .map(|&(lt, gt)| -(wa * i128::from(lt) - wb * i128::from(gt)).abs())
        .collect()
}

/// The release of the levels `qs`.
pub(crate) fn release(
    q: &SummaryQuery,
    qs: &[f64],
    values: &CandidateCounts,
    rng: &mut NoiseRng,
) -> Result<Released> {
    let cands = &values.candidates;
    let counts = values.counts();
    let e = share(q.epsilon, qs.len());
    let spacing = (q.hi - q.lo) / (q.candidates - 1) as f64;
    let (mut estimates, mut parts) = (Vec::new(), Vec::new());
    for &level_q in qs {
        let a = level(level_q)?;
        let sens = sensitivity(a, q.neighbours);
        let mech = PermuteAndFlip::new(sens, e)?;
        let chosen = mech.choose(&scores(&counts, a), rng)?;
        estimates.push(Estimate {
            name: name(level_q),
            value: cands[chosen],
            noise_std: None,
        });
        parts.push(Part {
            quantity: format!("score of the {} quantile, in rows", name(level_q)),
            epsilon: e,
            sensitivity: sens as f64 / LEVEL_DENOMINATOR as f64,
            grid: spacing,
            noise_std: None,
        });
    }
    Ok(Released {
        estimates,
        parts,
        mechanism: format!(
            "permute-and-flip (McKenna & Sheldon 2020, exact Bernoulli draws) over {} public \
             candidates {spacing:e} apart, score -|(1 - q) #{{x < c}} - q #{{x > c}}|, epsilon / {} \
             per level",
            q.candidates,
            qs.len()
        ),
        sensitivity: match q.neighbours {
            Neighbours::Bounded => "score: 1 row".into(),
            Neighbours::Unbounded => "score: max(q, 1 - q) rows".into(),
        },
        sensitivity_value: None,
        notes: vec![format!(
            "each quantile is one of the candidates, so its resolution is {spacing:e}; \
             --candidates sets how many"
        )],
    })
}
