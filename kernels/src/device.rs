//! Which implementation a kernel uses: [`DevicePref`] (defined in `kinsey-core`, shared by
//! every layer), and what a build without GPU twins does with it.

pub use kinsey_core::DevicePref;

/// Without the `gpu` feature every kernel is its CPU twin: `gpu` is refused, `auto` and
/// `cpu` take the CPU.
#[cfg(not(feature = "gpu"))]
pub(crate) fn cpu_only(pref: DevicePref) -> Result<(), crate::error::KernelError> {
    match pref {
        DevicePref::Gpu => Err(crate::error::KernelError::NotBuilt),
        DevicePref::Auto | DevicePref::Cpu => Ok(()),
    }
}
