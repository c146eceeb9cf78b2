//! Heavy loops of kinsey, each with one interface and two implementations:
//! a CPU path (rayon + faer, f64 accumulation) and a GPU path (WGSL compute shaders through
//! wgpu, f32 arithmetic, partial sums reduced in f64 on the host).
//!
//! The logistic-regression kernel computes, for a weight vector `w`, the *sums over rows*
//! of the logistic loss `log(1 + exp(-y x.w))`, its gradient and its Hessian `X^T D X`.
//! Scaling by `1/n` and the regulariser belong to the objective, which is written once in
//! the engine (`kinsey_learn::logreg::Objective`); kernels know nothing about privacy.
//!
//! Layout: one folder per kernel with a GPU twin (`logistic/`, `kmeans/`: the interface in
//! `mod.rs`, the CPU twin in `cpu.rs`, the GPU host side in `gpu.rs`, the shader in
//! `shaders/<kernel>.wgsl`); CPU-only sum kernels in one file each (`gram.rs`,
//! `perceptron.rs`); the device and the helpers every GPU kernel uses in `gpu/`.

pub mod gpu;
pub mod gram;
pub mod kmeans;
pub mod logistic;
pub mod perceptron;

pub use logistic::{LogisticKernel, LossSums, row_terms, select, sigmoid};

use std::fmt;

/// Errors of the compute layer.
#[derive(Debug, Clone, thiserror::Error)]
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

/// Rows per block of the sum kernels: one block is one rayon task and one f32 Gram
/// product; blocks are reduced in a fixed order, so no result depends on the thread count.
pub const BLOCK_ROWS: usize = 4096;

/// The number of rows of a row-major buffer of `d` columns, or why it is not one.
pub(crate) fn whole_rows(x: &[f32], d: usize) -> Result<usize, KernelError> {
    if d == 0 {
        return Err(KernelError::Input("dimension must be >= 1".into()));
    }
    if !x.len().is_multiple_of(d) {
        return Err(KernelError::Input(format!(
            "{} values are not whole rows of {d} columns",
            x.len()
        )));
    }
    Ok(x.len() / d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every shader is named after its kernel (`shaders/NAME.wgsl` beside `src/NAME/`),
    /// and naga parses and validates it.
    #[test]
    fn every_shader_belongs_to_a_kernel_and_validates() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut seen = 0;
        for entry in std::fs::read_dir(root.join("../shaders")).expect("shaders/") {
            let path = entry.expect("entry").path();
            let stem = path.file_stem().and_then(|s| s.to_str()).expect("name");
            assert!(
                root.join("src").join(stem).join("gpu.rs").is_file(),
                "{stem}.wgsl has no kernel folder src/{stem}/ with a gpu.rs"
            );
            let src = std::fs::read_to_string(&path).expect("read");
            let module = naga::front::wgsl::parse_str(&src)
                .unwrap_or_else(|e| panic!("{stem}.wgsl: {}", e.emit_to_string(&src)));
            naga::valid::Validator::new(
                naga::valid::ValidationFlags::all(),
                naga::valid::Capabilities::empty(),
            )
            .validate(&module)
            .unwrap_or_else(|e| panic!("{stem}.wgsl does not validate: {e:?}"));
            seen += 1;
        }
        assert!(seen >= 2, "expected the logistic and kmeans shaders");
    }

    #[test]
    fn rows_shape_is_checked() {
        assert!(Rows::new(&[1.0; 6], &[1.0; 2], 3).is_ok());
        assert!(Rows::new(&[1.0; 6], &[1.0; 3], 3).is_err());
        assert!(Rows::new(&[1.0; 6], &[1.0; 2], 0).is_err());
        assert!("tpu".parse::<DevicePref>().is_err());
    }
}
