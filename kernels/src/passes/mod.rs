//! The `passes` kernel: training's full-data passes (the logistic loss, its gradient and
//! its Hessian `X^T D X` summed over every row) in f64 on the device, the rows resident
//! there in f32. The f32 kernel of [`crate::logistic`] serves the Hessian subsample, where
//! f32 is enough; the solver's loss and gradient decide Newton's 1e-10 stopping rule, so
//! they are summed in f64 like the CPU path's.
//!
//! CPU twin [`cpu::sums`] (one thread, the shader's operations in the shader's order: the
//! same bits); GPU twin [`gpu::GpuPasses`] (`shaders/passes.wgsl`, `SHADER_F64`). Both
//! split the rows by [`layout`], the one place the blocks, chunks and reduction groups
//! are decided. Against the CPU path ([`crate::logistic::cpu::CpuLogistic`], libm's `exp`
//! and `ln`, faer's summation order) the sums agree to about 1e-15 relative, not bit for
//! bit: a model trained with its passes on the device is the CPU's model within the
//! solver's tolerance.

pub mod cpu;
#[cfg(feature = "gpu")]
pub mod gpu;
mod layout;

use crate::device::DevicePref;
use crate::error::KernelError;
use crate::logistic::LogisticKernel;
use crate::rows::Rows;

pub use layout::{Block, CHUNK, RED_GROUP, layout};

/// The environment variable that keeps the full-data passes on the CPU under
/// `--device gpu` (`KINSEY_GPU_PASSES=cpu`, the way before the passes moved to the device:
/// one half of an A/B pair; only the Hessian subsample then runs on the GPU).
pub const PASSES_ENV: &str = "KINSEY_GPU_PASSES";

/// The full-data passes' kernel for a preference, or `None` where they stay on the CPU
/// (in f64, the solver's own path). They go to the device only when asked for (`Gpu`:
/// no measured crossover yet says a GPU wins a training pass, so `Auto` keeps the CPU),
/// the device has 64-bit floats and `KINSEY_GPU_PASSES` is not `cpu`.
pub fn select<'a>(
    pref: DevicePref,
    rows: Rows<'a>,
) -> Result<Option<Box<dyn LogisticKernel + 'a>>, KernelError> {
    if pref != DevicePref::Gpu || std::env::var(PASSES_ENV).is_ok_and(|v| v == "cpu") {
        return Ok(None);
    }
    #[cfg(feature = "gpu")]
    {
        let ctx = crate::gpu::GpuContext::shared()?;
        if !ctx.has_f64() {
            tracing::info!(
                "{} has no 64-bit floats: training's full passes stay on the CPU",
                ctx.describe()
            );
            return Ok(None);
        }
        Ok(Some(Box::new(gpu::GpuPasses::with_context(ctx, rows)?)))
    }
    #[cfg(not(feature = "gpu"))]
    {
        let _ = rows;
        crate::device::cpu_only(pref)?;
        Ok(None)
    }
}
