//! Heavy loops of kinsey, each with one interface and two implementations:
//! a CPU path (rayon + faer, f64 accumulation) and a GPU path (WGSL compute shaders through
//! wgpu; the logistic kernel in f32 arithmetic, its partial sums reduced on the device with
//! compensation and the last few groups added in f64 on the host).
//!
//! The logistic-regression kernel computes, for a weight vector `w`, the *sums over rows*
//! of the logistic loss `log(1 + exp(-y x.w))`, its gradient and its Hessian `X^T D X`.
//! Scaling by `1/n` and the regulariser belong to the objective, which is written once in
//! the engine (`kinsey_learn::logreg::Objective`); kernels know nothing about privacy.
//!
//! The `montgomery` kernel is batched modular arithmetic (products and constant-time
//! exponentiations modulo numbers of up to 8192 bits) for the Paillier backend: on a
//! hardware GPU one invocation per whole operation, on a software rasteriser a program of
//! micro-operations where the whole would pass its loop budget.
//!
//! The `passes` kernel is training's full-data passes in f64 on the device (software `exp`
//! and `log1p`, sums in a fixed order), beside the f32 logistic kernel of the Hessian
//! subsample.
//!
//! The `dyadic` kernel draws the decayed sums' keyed noise (ChaCha20 keystream and alias tables).
//!
//! Layout: one folder per kernel with a GPU twin (`logistic/`, `kmeans/`, `montgomery/`, `dyadic/`: the interface in
//! `mod.rs`, the CPU twin in `cpu.rs`, the GPU host side in `gpu.rs`, the shader in
//! `shaders/<kernel>.wgsl`); CPU-only sum kernels in one file each (`gram.rs`,
//! `perceptron.rs`); the device and the helpers every GPU kernel uses in `gpu/`.

pub mod chacha;
mod device;
pub mod dyadic;
mod error;
#[cfg(feature = "gpu")]
pub mod gpu;
pub mod gram;
pub mod kmeans;
pub mod logistic;
pub mod montgomery;
pub mod passes;
pub mod perceptron;
mod rows;
pub mod window;

pub use device::DevicePref;
pub use error::KernelError;
pub use logistic::{LogisticKernel, LossSums, row_terms, select, sigmoid};
pub use rows::{BLOCK_ROWS, Rows};

/// Rows of uniform `[0, 1)` values for the kernels' tests.
#[cfg(test)]
pub(crate) fn test_rows(n: usize, d: usize, seed: u64) -> Vec<f32> {
    use rand::{Rng, SeedableRng};
    let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..n * d).map(|_| r.random::<f32>()).collect()
}

#[cfg(test)]
mod tests {
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
            // 64-bit floats only where a kernel needs them (`window`: the same bits as
            // the CPU's f64 sums; `passes`: training's f64 sums); the device is asked for
            // SHADER_F64 then.
            let caps = if stem == "window" || stem == "passes" {
                naga::valid::Capabilities::FLOAT64
            } else {
                naga::valid::Capabilities::empty()
            };
            naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
                .validate(&module)
                .unwrap_or_else(|e| panic!("{stem}.wgsl does not validate: {e:?}"));
            seen += 1;
        }
        assert!(
            seen >= 5,
            "expected the logistic, kmeans, montgomery, dyadic and window shaders"
        );
    }
}
