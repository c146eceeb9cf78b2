//! Heavy loops of kinsey, each with one interface and two implementations:
//! a CPU path (rayon + faer, f64 accumulation) and a GPU path (WGSL compute shaders through
//! wgpu, f32 arithmetic, partial sums reduced in f64 on the host).
//!
//! The logistic-regression kernel computes, for a weight vector `w`, the *sums over rows*
//! of the logistic loss `log(1 + exp(-y x.w))`, its gradient and its Hessian `X^T D X`.
//! Scaling by `1/n` and the regulariser belong to the objective, which is written once in
//! the engine (`kinsey_learn::logreg::Objective`); kernels know nothing about privacy.

pub mod cpu;
pub mod gpu;
pub mod stats;

use std::fmt;

/// Errors of the compute layer.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    #[error(
        "no GPU adapter found ({0}); install a Vulkan driver (e.g. mesa-vulkan-drivers) or use device = \"cpu\""
    )]
    NoAdapter(String),
    #[error("GPU device request failed: {0}")]
    Device(String),
    #[error("GPU buffer mapping failed: {0}")]
    Map(String),
    #[error("GPU validation error: {0}")]
    Validation(String),
    #[error("bad kernel input: {0}")]
    Input(String),
}

/// Which implementation to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DevicePref {
    /// A GPU adapter if one exists, else the CPU.
    #[default]
    Auto,
    Cpu,
    Gpu,
}

impl std::str::FromStr for DevicePref {
    type Err = KernelError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(Self::Auto),
            "cpu" => Ok(Self::Cpu),
            "gpu" => Ok(Self::Gpu),
            other => Err(KernelError::Input(format!(
                "unknown device '{other}' (expected auto, cpu or gpu)"
            ))),
        }
    }
}

/// A borrowed, row-major data set: `x` has `n * d` entries, `y` has `n` labels in {-1, +1}.
#[derive(Clone, Copy)]
pub struct Rows<'a> {
    pub x: &'a [f32],
    pub y: &'a [f32],
    pub n: usize,
    pub d: usize,
}

impl fmt::Debug for Rows<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Rows {{ n: {}, d: {} }}", self.n, self.d)
    }
}

impl<'a> Rows<'a> {
    /// Check shapes.
    pub fn new(x: &'a [f32], y: &'a [f32], d: usize) -> Result<Self, KernelError> {
        if d == 0 {
            return Err(KernelError::Input("dimension must be >= 1".into()));
        }
        if !x.len().is_multiple_of(d) || x.len() / d != y.len() {
            return Err(KernelError::Input(format!(
                "x has {} entries, not {} rows x {} columns",
                x.len(),
                y.len(),
                d
            )));
        }
        Ok(Self {
            x,
            y,
            n: y.len(),
            d,
        })
    }
}

/// Sums over rows of the logistic loss, its gradient and (optionally) its Hessian.
#[derive(Debug, Clone, PartialEq)]
pub struct LossSums {
    pub loss: f64,
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

/// Build the kernel for a preference. `Auto` tries the GPU and falls back to the CPU,
/// logging which it used; `Gpu` fails if no adapter comes up.
pub fn select<'a>(
    pref: DevicePref,
    rows: Rows<'a>,
) -> Result<Box<dyn LogisticKernel + 'a>, KernelError> {
    match pref {
        DevicePref::Cpu => Ok(Box::new(cpu::CpuLogistic::new(rows))),
        DevicePref::Gpu => Ok(Box::new(gpu::GpuLogistic::new(rows)?)),
        DevicePref::Auto => match gpu::GpuContext::open() {
            // A software rasteriser (lavapipe/llvmpipe) is correct but slower than the CPU
            // path, so "auto" only takes real GPUs; ask for "gpu" to use it anyway.
            Ok(ctx) if !ctx.is_software() => {
                let g = gpu::GpuLogistic::with_context(ctx, rows)?;
                tracing::info!("compute device: {}", g.describe());
                Ok(Box::new(g))
            }
            Ok(ctx) => {
                tracing::info!(
                    "only a software GPU adapter ({}); using the CPU",
                    ctx.describe()
                );
                Ok(Box::new(cpu::CpuLogistic::new(rows)))
            }
            Err(e) => {
                static SAID: std::sync::Once = std::sync::Once::new();
                SAID.call_once(|| tracing::info!("no usable GPU ({e}); using the CPU"));
                Ok(Box::new(cpu::CpuLogistic::new(rows)))
            }
        },
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

    #[test]
    fn rows_shape_is_checked() {
        assert!(Rows::new(&[1.0; 6], &[1.0; 2], 3).is_ok());
        assert!(Rows::new(&[1.0; 6], &[1.0; 3], 3).is_err());
        assert!(Rows::new(&[1.0; 6], &[1.0; 2], 0).is_err());
        assert!("tpu".parse::<DevicePref>().is_err());
    }
}
