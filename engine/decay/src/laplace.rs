//! Baseline: every window sum released with its own Laplace noise. One step is in `W`
//! outputs, so the output vector has L1 sensitivity `W B` and every output gets
//! `Lap(W B / eps)` (exact dyadic discrete Laplace on the grid): error `O(W / eps)`.

use super::model::{
    CalibrationReport, DecayedSum, ModelParams, Public, Sliding, check_bound, laplace_guarantee,
    window_truth,
};
use super::noise::KeyedNoise;
use kinsey_core::{Error, Result, check_epsilon};
use kinsey_dp::release::Guarantee;

/// Per-output Laplace noise on each window sum.
#[derive(Debug, Clone)]
pub struct LaplaceWindow {
    w: u64,
    noise: KeyedNoise,
    bound: f64,
    epsilon: f64,
    /// Online and stream: the step and the running window sum.
    t: u64,
    window: Sliding,
    /// Stream: the chunk's draws (reused from chunk to chunk).
    z: Vec<i64>,
}

impl LaplaceWindow {
    /// The baseline over windows of `w` steps.
    pub fn new(w: u64, epsilon: f64, bound: f64, key: [u8; 32]) -> Result<Self> {
        check_epsilon("epsilon", epsilon)?;
        check_bound(bound)?;
        if w < 1 {
            return Err(Error::param("window", "the window must be >= 1 step"));
        }
        let touched = u32::try_from(w).unwrap_or(u32::MAX);
        let noise = KeyedNoise::new(key, 2, w as f64 * bound, touched, epsilon)?;
        Ok(Self {
            w,
            noise,
            bound,
            epsilon,
            t: 0,
            window: Sliding::new(w),
            z: Vec::new(),
        })
    }
}

/// `laplace`: needs `--window`.
pub(crate) fn build(p: &ModelParams, c: &Public) -> Result<Box<dyn DecayedSum>> {
    let w = p.need("laplace", "window", &p.window)?;
    Ok(Box::new(LaplaceWindow::new(w, c.epsilon, c.bound, c.key)?))
}

impl DecayedSum for LaplaceWindow {
    fn calibration(&self) -> CalibrationReport {
        CalibrationReport {
            model: format!("per-output Laplace baseline (W = {})", self.w),
            epsilon: self.epsilon,
            bound: self.bound,
            levels: 1,
            sensitivity: self.w as f64 * self.bound,
            counter_scale: self.noise.scale(),
            counter_std: self.noise.std_dev(),
            rho: None,
        }
    }

    fn noise_std(&self, _column: usize, _j: u64) -> f64 {
        self.noise.std_dev()
    }

    fn use_device(&mut self, device: kinsey_kernels::DevicePref) -> Result<Option<String>> {
        self.noise.use_device(device)
    }

    /// The running sum adds then subtracts in the same order as `window_truth`, so the
    /// online and bulk paths agree bit for bit.
    fn push(&mut self, x: f64, out: &mut [f64]) -> Result<()> {
        let v = self.window.push(x);
        out[0] = self.noise.release(v, self.noise.z(self.t));
        self.t += 1;
        Ok(())
    }

    /// The same numbers as `push`, with the chunk's noise drawn in one keystream pass.
    fn stream_into(&mut self, chunk: &[f64], out: &mut Vec<Vec<f64>>) -> Result<()> {
        self.z.resize(chunk.len(), 0);
        self.noise.fill(self.t, &mut self.z)?;
        let out = super::model::one_column(out, chunk.len());
        let (noise, z) = (&self.noise, &self.z);
        self.window
            .extend(chunk, |i, v| out[i] = noise.release(v, z[i]));
        self.t += chunk.len() as u64;
        Ok(())
    }

    /// All estimates; the true window sums are exact running differences of integers.
    fn bulk(&self, xs: &[f64]) -> Result<Vec<Vec<f64>>> {
        let truth = window_truth(xs, self.w);
        let mut z = vec![0i64; xs.len()];
        self.noise.fill(0, &mut z)?;
        Ok(vec![
            truth
                .iter()
                .zip(&z)
                .map(|(v, &z)| self.noise.release(*v, z))
                .collect(),
        ])
    }

    fn truth(&self, xs: &[f64]) -> Vec<Vec<f64>> {
        vec![window_truth(xs, self.w)]
    }

    fn fresh(&self) -> Box<dyn DecayedSum> {
        let mut m = self.clone();
        m.t = 0;
        m.window = Sliding::new(self.w);
        Box::new(m)
    }

    fn guarantee(&self) -> Guarantee {
        laplace_guarantee(&self.calibration(), "every output", "outputs")
    }
}
