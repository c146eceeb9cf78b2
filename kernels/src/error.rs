//! The compute layer's error type.

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
