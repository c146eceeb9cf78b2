//! The logistic-regression kernel: for a weight vector `w`, the sums over rows of the
//! logistic loss `log(1 + exp(-y x.w))`, its gradient and its Hessian `X^T D X`. Scaling by
//! `1/n` and the regulariser belong to the objective (`kinsey_learn::logreg::Objective`).
//! CPU twin: [`cpu::CpuLogistic`]; GPU twin: [`gpu::GpuLogistic`] (`shaders/logistic.wgsl`).

pub mod cpu;
pub mod csr;
#[cfg(feature = "gpu")]
pub mod gpu;
mod kernel;

pub use kernel::{LogisticKernel, LossSums, row_terms, sigmoid};

use crate::device::DevicePref;
use crate::error::KernelError;
#[cfg(feature = "gpu")]
use crate::gpu::GpuContext;
use crate::rows::Rows;

/// Build the kernel for a preference. `Auto` takes a hardware GPU and falls back to the
/// CPU (a software rasteriser is correct but slower than the CPU path: ask for `Gpu` to use
/// it anyway); `Gpu` fails if no adapter comes up. The device is probed once per process.
pub fn select<'a>(
    pref: DevicePref,
    rows: Rows<'a>,
) -> Result<Box<dyn LogisticKernel + 'a>, KernelError> {
    #[cfg(feature = "gpu")]
    if let Some(ctx) = GpuContext::for_preference(pref)? {
        return Ok(Box::new(gpu::GpuLogistic::with_context(ctx, rows)?));
    }
    #[cfg(not(feature = "gpu"))]
    crate::device::cpu_only(pref)?;
    Ok(Box::new(cpu::CpuLogistic::new(rows)))
}
