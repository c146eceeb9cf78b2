//! The logistic kernel's interface and its per-row terms (the shader's CPU twin).

use crate::error::KernelError;

/// Sums over rows of the logistic loss, its gradient and (optionally) its Hessian.
#[derive(Debug, Clone, PartialEq)]
pub struct LossSums {
    /// Sum of the losses.
    pub loss: f64,
    /// Sum of the gradients, length d.
    pub grad: Vec<f64>,
    /// Row-major `d x d`, symmetric.
    pub hess: Option<Vec<f64>>,
}

/// One interface, two implementations.
pub trait LogisticKernel: Send + Sync {
    /// Human-readable name of the implementation and device ("cpu (rayon, 2 threads)",
    /// "gpu: NVIDIA H100 (Vulkan)").
    fn describe(&self) -> String;
    /// Whether this is a GPU implementation.
    fn is_gpu(&self) -> bool;
    /// Number of rows and columns.
    fn shape(&self) -> (usize, usize);
    /// Sums over rows at `w` (length d).
    fn eval(&self, w: &[f64], hessian: bool) -> Result<LossSums, KernelError>;
}

/// Per-row terms at margin `z = x.w` with label `y`: (loss, gradient coefficient,
/// Hessian weight) = (log(1 + e^{-yz}), -y sigma(-yz), sigma(z) sigma(-z)).
/// The WGSL function `row_terms` in `shaders/logistic.wgsl` is its line-for-line twin.
#[inline]
pub fn row_terms(z: f64, y: f64) -> (f64, f64, f64) {
    let t = -y * z;
    // One exponential serves all three terms: e = exp(-|t|) <= 1 never overflows.
    let e = (-t.abs()).exp();
    // softplus(t) = max(t, 0) + log(1 + exp(-|t|))
    let loss = t.max(0.0) + e.ln_1p();
    // s = sigmoid(t)
    let s = if t >= 0.0 {
        1.0 / (1.0 + e)
    } else {
        e / (1.0 + e)
    };
    let coef = -y * s;
    let dw = s * (1.0 - s);
    (loss, coef, dw)
}

/// Logistic function, stable for large |t|.
#[inline]
pub fn sigmoid(t: f64) -> f64 {
    if t >= 0.0 {
        1.0 / (1.0 + (-t).exp())
    } else {
        let e = t.exp();
        e / (1.0 + e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_terms_are_stable_and_consistent() {
        for &(z, y) in &[(0.0, 1.0), (800.0, 1.0), (-800.0, 1.0), (3.0, -1.0)] {
            let (l, c, d) = row_terms(z, y);
            assert!(l.is_finite() && c.is_finite() && d.is_finite());
            assert!(l >= 0.0 && (0.0..=0.25).contains(&d));
        }
        let (l, c, d) = row_terms(0.0, 1.0);
        assert!(
            (l - 2f64.ln()).abs() < 1e-15 && (c + 0.5).abs() < 1e-15 && (d - 0.25).abs() < 1e-15
        );
        // derivative check of the loss wrt z
        let h = 1e-6;
        let (lp, _, _) = row_terms(0.3 + h, -1.0);
        let (lm, _, _) = row_terms(0.3 - h, -1.0);
        let (_, c, _) = row_terms(0.3, -1.0);
        assert!(((lp - lm) / (2.0 * h) - c).abs() < 1e-8);
    }
}
