//! The k-means assignment step of SuLQ k-means: each row's nearest centre, then sizes,
//! coordinate sums and inertia per centre (f64, fixed reduction order). CPU twin:
//! [`cpu::CpuKmeans`]; GPU twin: [`gpu::GpuKmeans`] (`shaders/kmeans.wgsl`, assignments on
//! the device, sums on the host).

pub mod cpu;
#[cfg(feature = "gpu")]
pub mod gpu;
mod sums;

pub use sums::{KmeansKernel, KmeansSums, accumulate, nearest};

use crate::device::DevicePref;
use crate::error::KernelError;
#[cfg(feature = "gpu")]
use crate::gpu::GpuContext;

/// Whether [`select`] under `pref` takes the GPU (an error where `pref` asks for one and
/// there is none).
pub fn runs_on_gpu(pref: DevicePref) -> Result<bool, KernelError> {
    #[cfg(feature = "gpu")]
    return Ok(GpuContext::for_preference(pref)?.is_some());
    #[cfg(not(feature = "gpu"))]
    {
        crate::device::cpu_only(pref)?;
        Ok(false)
    }
}

/// The kernel for a preference, chosen like the logistic kernel (`auto` takes a GPU only
/// if it is not a software rasteriser).
pub fn select<'a>(
    pref: DevicePref,
    x: &'a [f32],
    d: usize,
) -> Result<Box<dyn KmeansKernel + 'a>, KernelError> {
    crate::rows::whole_rows(x, d)?;
    #[cfg(feature = "gpu")]
    if let Some(ctx) = GpuContext::for_preference(pref)? {
        return Ok(Box::new(gpu::GpuKmeans::new(ctx, x, d)?));
    }
    #[cfg(not(feature = "gpu"))]
    crate::device::cpu_only(pref)?;
    Ok(Box::new(cpu::CpuKmeans { x, d }))
}
