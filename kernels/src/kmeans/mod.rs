//! The k-means assignment step of SuLQ k-means: each row's nearest centre, then sizes,
//! coordinate sums and inertia per centre (f64, fixed reduction order). CPU twin:
//! [`cpu::CpuKmeans`]; GPU twin: [`gpu::GpuKmeans`] (`shaders/kmeans.wgsl`, assignments on
//! the device, sums on the host).

pub mod cpu;
pub mod gpu;
mod sums;

pub use sums::{KmeansKernel, KmeansSums, accumulate, nearest};

use crate::device::DevicePref;
use crate::error::KernelError;
use crate::gpu::GpuContext;

/// The kernel for a preference, chosen like the logistic kernel (`auto` takes a GPU only
/// if it is not a software rasteriser).
pub fn select<'a>(
    pref: DevicePref,
    x: &'a [f32],
    d: usize,
) -> Result<Box<dyn KmeansKernel + 'a>, KernelError> {
    crate::rows::whole_rows(x, d)?;
    Ok(match GpuContext::for_preference(pref)? {
        Some(ctx) => Box::new(gpu::GpuKmeans::new(ctx, x, d)?),
        None => Box::new(cpu::CpuKmeans { x, d }),
    })
}
