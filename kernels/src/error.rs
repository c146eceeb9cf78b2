//! The compute layer's error type.

/// Errors of the compute layer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum KernelError {
    #[error(
        "no GPU adapter found ({0}); install a Vulkan driver (e.g. mesa-vulkan-drivers) or use device = \"cpu\""
    )]
    /// No adapter came up (the reason).
    NoAdapter(String),
    #[error("GPU device request failed: {0}")]
    /// The adapter refused a device (the reason).
    Device(String),
    #[error("GPU arithmetic differs from the CPU twin: {0}")]
    /// The device's results differ in their bits from the CPU twin's on a probe (the
    /// device, the case and the first differing value).
    Unfaithful(String),
    #[error("GPU buffer mapping failed: {0}")]
    /// Reading results back failed.
    Map(String),
    #[error("GPU validation error: {0}")]
    /// wgpu rejected a shader, pipeline or buffer.
    Validation(String),
    #[error(
        "device = gpu, but this build has no GPU twins (kinsey-kernels without its `gpu` feature)"
    )]
    /// `gpu` asked of a build without the `gpu` feature.
    NotBuilt,
    #[error("bad kernel input: {0}")]
    /// The input does not fit the kernel (shapes, sizes).
    Input(String),
}

impl From<KernelError> for kinsey_core::Error {
    fn from(e: KernelError) -> Self {
        kinsey_core::Error::Kernel(Box::new(e))
    }
}
