//! Polynomially decayed sums, approximated within a factor `1 - beta` by window sums.

use super::model::{CalibrationReport, DecayedSum, ModelParams, Public, check_bound, window_truth};
use super::window::WindowSum;
use kinsey_core::{Error, Result, check_epsilon};
use rayon::prelude::*;

/// Polynomially decayed sums `F(k) = sum_i (k - i + 1)^-c x_i`, approximated within a factor
/// `1 - beta` (the seed's bicriteria guarantee). Lags are cut at `b(j) = max{i : (i + 1)^-c >=
/// (1 - beta)^j}`; on the lags `(b(j-1), b(j)]` the decay is replaced by `(1 - beta)^j`, so
/// `(1 - beta) g <= g' <= g`, and `F'(k) = x_k + sum_j (1 - beta)^j WS_j(k - b(j-1) - 1)`, where
/// `WS_j` is the window sum of width `W_j = b(j) - b(j-1)`. Each `WS_j` is a [`WindowSum`]
/// over the weighted stream `w_j x` (bound `w_j B`) with its own noise stream and budget
/// `eps_j = eps w_j (h_j + 1) / S`, `S = sum_j w_j (h_j + 1)`: the budgets add up to eps
/// (sequential composition), and every instance's counters get the same noise scale
/// `S B / eps`, as the seed prescribes. Instances start
/// once the stream is longer than their smallest lag; `S` sums over all instances (the
/// series converges), so the calibration does not depend on the stream length. A far lag's
/// instance whose share `eps_j` falls below the exact sampler's range (1e-6) is left out
/// with the lags after it, and the estimate's extra bias is at most the public
/// [`tail_bound`](Self::tail_bound), stated in the calibration (refused when that bound
/// passes `beta B`). Online the
/// estimate needs the last `b(j)` steps of each instance: memory grows with the largest lag
/// in use, which is the nature of heavy-tailed decay.
#[derive(Debug, Clone)]
pub struct PolynomialSum {
    pub(super) c: f64,
    pub(super) beta: f64,
    pub(super) epsilon: f64,
    pub(super) bound: f64,
    /// (width, weight, lag offset b(j-1) + 1, instance) for j >= 1 with W_j >= 1; lag 0 first.
    pub(super) parts: Vec<(u64, f64, u64, WindowSum)>,
    pub(super) total: f64,
    /// The first lag left out (its instance's share of epsilon is below the sampler's
    /// range), if any: see [`tail_bound`](Self::tail_bound).
    pub(super) cut: Option<u64>,
    /// Online: the recent outputs of each instance, newest last.
    pub(super) recent: Vec<std::collections::VecDeque<f64>>,
}

/// `b(j)` for the polynomial decay `(i + 1)^-c` and step `1 - beta`.
fn poly_cut(c: f64, beta: f64, j: u32) -> u64 {
    let x = (1.0 - beta).powf(-f64::from(j) / c);
    (x.floor() as u64).saturating_sub(1)
}

impl PolynomialSum {
    /// `max_len`: the longest stream this instance will see (instances whose smallest lag is
    /// beyond it are not built; the calibration includes them anyway).
    pub fn new(
        c: f64,
        beta: f64,
        epsilon: f64,
        bound: f64,
        key: [u8; 32],
        max_len: u64,
    ) -> Result<Self> {
        check_epsilon("epsilon", epsilon)?;
        check_bound(bound)?;
        if !(c > 1.0 && c.is_finite()) {
            return Err(Error::param(
                "c",
                format!("the decay exponent must be > 1, got {c}"),
            ));
        }
        if !(beta > 0.0 && beta < 1.0) {
            return Err(Error::param(
                "beta",
                format!("beta must be in (0, 1), got {beta}"),
            ));
        }
        // (width, weight, offset) for lag 0 and every nonempty (b(j-1), b(j)].
        let mut specs: Vec<(u64, f64, u64)> = vec![(1, 1.0, 0)];
        let mut total = 1.0; // lag 0: window 1, h = 0
        let mut prev = 0u64;
        for j in 1..20_000u32 {
            let b = poly_cut(c, beta, j);
            let w = (1.0 - beta).powi(j as i32);
            if b > prev {
                let width = b - prev;
                let h = width.next_power_of_two().trailing_zeros();
                total += w * f64::from(h + 1);
                if prev < max_len {
                    specs.push((width, w, prev + 1));
                }
                prev = b;
            }
            if w * 64.0 < 1e-17 * total {
                break;
            }
        }
        // A far lag's instance has a tiny weight and so a tiny share of the budget (the
        // same noise scale as the others over a tiny sensitivity). Below the exact
        // sampler's range (epsilon 1e-6) it cannot be drawn without inflating the noise:
        // the lags from there on are left out, which biases the estimate down by at most
        // the public bound `tail` (and adds no noise: such an instance would add a whole
        // counter's noise for a signal below `B (i + 1)^-c`).
        let mut parts = Vec::with_capacity(specs.len());
        let mut cut = None;
        for (i, (width, w, off)) in specs.into_iter().enumerate() {
            let h = width.next_power_of_two().trailing_zeros();
            let eps_j = epsilon * w * f64::from(h + 1) / total;
            if check_epsilon("epsilon", eps_j).is_err() {
                if off == 0 {
                    return Err(Error::param(
                        "epsilon",
                        format!(
                            "polynomial decay (c = {c}, beta = {beta}): even the lag-0 \
                             instance would get epsilon {eps_j:.3e} of the total {epsilon}, \
                             below what the exact noise sampler represents: a larger \
                             --epsilon or --beta"
                        ),
                    ));
                }
                cut = Some(off);
                break;
            }
            parts.push(
                WindowSum::with_stream(width, eps_j, w * bound, key, 100 + i as u64)
                    .map(|ws| (width, w, off, ws))?,
            );
        }
        let n = parts.len();
        let m = Self {
            c,
            beta,
            epsilon,
            bound,
            parts,
            total,
            cut,
            recent: vec![std::collections::VecDeque::new(); n],
        };
        // Leaving lags out is worth it only while their bias stays below the approximation's
        // own slack on one step of value B; past that, say what would work.
        if let Some((l, tail)) = m.tail_bound()
            && tail > beta * bound
        {
            return Err(Error::param(
                "epsilon",
                format!(
                    "polynomial decay (c = {c}, beta = {beta}): the instances for lags from \
                     {l} on would get less than the exact noise sampler's smallest epsilon \
                     (1e-6) of the total {epsilon}, and leaving them out could bias an \
                     estimate by {tail:.3e}, more than beta B = {:.3e}: {}a larger \
                     --epsilon or --beta, or a larger --c",
                    beta * bound,
                    if l > 1 {
                        format!(
                            "a horizon (the series' length, or --horizon) of at most {} \
                             steps, ",
                            l - 1
                        )
                    } else {
                        String::new()
                    }
                ),
            ));
        }
        Ok(m)
    }

    /// With lags from `L` on left out, a public bound on what they would add to any
    /// estimate: `B sum_{i >= L} g'(i) <= B sum_{i >= L} (i + 1)^-c <= B L^(1 - c) / (c - 1)`.
    /// The estimate then lies within `[(1 - beta) F - tail, F]` in expectation.
    pub fn tail_bound(&self) -> Option<(u64, f64)> {
        self.cut.map(|l| {
            let tail = self.bound * (l as f64).powf(1.0 - self.c) / (self.c - 1.0);
            (l, tail)
        })
    }

    pub(crate) fn calibration(&self) -> CalibrationReport {
        let cut = match self.tail_bound() {
            Some((l, tail)) => format!(
                "; lags >= {l} left out (their epsilon share is below the exact sampler's \
                 range): estimates biased down by at most {tail:.3e}"
            ),
            None => String::new(),
        };
        CalibrationReport {
            model: format!(
                "polynomial (c = {}, beta = {}, {} window instances{cut})",
                self.c,
                self.beta,
                self.parts.len()
            ),
            epsilon: self.epsilon,
            bound: self.bound,
            levels: self.parts.len() as u32,
            sensitivity: self.total * self.bound,
            counter_scale: self.total * self.bound / self.epsilon,
            counter_std: std::f64::consts::SQRT_2 * self.total * self.bound / self.epsilon,
            rho: None,
        }
    }

    /// Standard deviation of the estimate at step `j`.
    pub(crate) fn std_at(&self, j: u64) -> f64 {
        self.parts
            .iter()
            .filter(|(_, _, off, _)| *off <= j)
            .map(|(_, _, off, ws)| ws.std_at(j - off).powi(2))
            .sum::<f64>()
            .sqrt()
    }

    /// Online: one step in, the estimate out.
    pub(crate) fn advance(&mut self, x: f64) -> f64 {
        let mut out = 0.0;
        for ((_, w, off, ws), q) in self.parts.iter_mut().zip(&mut self.recent) {
            q.push_back(ws.advance(*w * x));
            // The instance's output `off` steps ago (its window ends `off` steps back).
            if q.len() as u64 > *off {
                out += q[q.len() - 1 - *off as usize];
            }
            while q.len() as u64 > *off + 1 {
                q.pop_front();
            }
        }
        out
    }

    /// Bulk: every instance in bulk (each parallel inside), added into the result one
    /// instance after another, in the same order as `push`: memory stays at two series.
    pub(crate) fn bulk_series(&self, xs: &[f64]) -> Result<Vec<f64>> {
        let mut out = vec![0.0; xs.len()];
        for (_, w, off, ws) in &self.parts {
            let off = *off as usize;
            if off >= xs.len() {
                continue;
            }
            let weighted: Vec<f64> = xs[..xs.len() - off].par_iter().map(|x| *w * x).collect();
            let o = ws.bulk_series(&weighted)?;
            out[off..]
                .par_iter_mut()
                .zip(o.par_iter())
                .for_each(|(r, v)| *r += v);
        }
        Ok(out)
    }

    /// The approximated decayed sums `F'` (what the mechanism estimates without bias), exact.
    pub(crate) fn approx_truth(&self, xs: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; xs.len()];
        for (width, w, off, _) in &self.parts {
            let off = *off as usize;
            if off >= xs.len() {
                continue;
            }
            let t = window_truth(&xs[..xs.len() - off], *width);
            for (r, v) in out[off..].iter_mut().zip(&t) {
                *r += *w * v;
            }
        }
        out
    }
}

/// `polynomial`: needs `--c` and `--horizon` (the CLI defaults it to the series length);
/// `--beta` defaults to 0.1.
pub(crate) fn build(p: &ModelParams, c: &Public) -> Result<Box<dyn DecayedSum>> {
    let exponent = p.need("polynomial", "c", &p.c)?;
    let horizon = p.need("polynomial", "horizon", &p.horizon)?;
    Ok(Box::new(PolynomialSum::new(
        exponent, p.beta, c.epsilon, c.bound, c.key, horizon,
    )?))
}

impl DecayedSum for PolynomialSum {
    fn calibration(&self) -> CalibrationReport {
        PolynomialSum::calibration(self)
    }

    fn noise_std(&self, _column: usize, j: u64) -> f64 {
        self.std_at(j)
    }

    fn use_device(&mut self, device: kinsey_kernels::DevicePref) -> Result<Option<String>> {
        let mut used = None;
        for (_, _, _, ws) in &mut self.parts {
            used = ws.use_device(device)?;
        }
        Ok(used)
    }

    fn push(&mut self, x: f64, out: &mut [f64]) -> Result<()> {
        if self.parts.iter().any(|p| p.3.held.next_step() > 0) {
            return Err(Error::param(
                "push",
                "this polynomial sum was fed by chunks (stream); keep streaming",
            ));
        }
        out[0] = self.advance(x);
        Ok(())
    }

    fn bulk(&self, xs: &[f64]) -> Result<Vec<Vec<f64>>> {
        Ok(vec![self.bulk_series(xs)?])
    }

    /// The same numbers as `push`: each instance streams the weighted chunk in bulk, and
    /// its outputs wait `off` steps as online (memory: the chunk and the lags in use).
    fn stream_into(&mut self, chunk: &[f64], out: &mut Vec<Vec<f64>>) -> Result<()> {
        if self.parts.iter().any(|p| p.3.t > 0) {
            // Fed online before: continue online (the same numbers).
            return super::model::push_each(self, chunk, out);
        }
        let n = chunk.len();
        let dst = super::model::one_column(out, n);
        dst.fill(0.0);
        let (mut weighted, mut o) = (Vec::with_capacity(n), Vec::new());
        // Instances added in `parts` order into 0.0, as online and bulk do.
        for ((_, w, off, ws), q) in self.parts.iter_mut().zip(&mut self.recent) {
            weighted.clear();
            weighted.extend(chunk.iter().map(|x| *w * x));
            ws.stream_into(&weighted, &mut o)?;
            ws.free_buffers();
            let new: &[f64] = o.first().map_or(&[], Vec::as_slice);
            // `q` holds the instance's last `min(t0, off)` outputs before the chunk (step
            // `t0`), `new` the chunk's: step `t0 + i - off`'s output is entry
            // `i + q.len() - off` of the two in turn, so the first belongs to `i0` (earlier
            // steps: the instance has not started).
            let off = *off as usize;
            let i0 = off.saturating_sub(q.len()).min(n);
            for (d, v) in dst[i0..].iter_mut().zip(q.iter().chain(new)) {
                *d += v;
            }
            // Later steps read at most the last `off` outputs (a chunk's worth is never
            // queued: memory is the lags in use, not the chunk times the instances).
            if new.len() >= off {
                q.clear();
                q.extend(&new[new.len() - off..]);
            } else {
                q.extend(new);
                let drop = q.len().saturating_sub(off);
                q.drain(..drop);
            }
        }
        Ok(())
    }

    /// The (1 - beta)-approximation F' the mechanism estimates without bias.
    fn truth(&self, xs: &[f64]) -> Vec<Vec<f64>> {
        vec![self.approx_truth(xs)]
    }

    fn fresh(&self) -> Box<dyn DecayedSum> {
        let mut m = self.clone();
        for (_, _, _, ws) in &mut m.parts {
            ws.reset();
        }
        m.recent
            .iter_mut()
            .for_each(std::collections::VecDeque::clear);
        Box::new(m)
    }
}
