//! The crypto layer's error type.

/// Errors of the crypto layer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    #[error("unknown crypto backend '{name}'; available: {available}")]
    Unknown { name: String, available: String },
    #[error("crypto backend '{name}' is not compiled in: rebuild with cargo feature '{feature}'")]
    Disabled { name: String, feature: String },
    #[error("invalid ciphertext: {0}")]
    BadCiphertext(String),
    #[error("invalid key: {0}")]
    BadKey(String),
    #[error(
        "key size {bits} bits is below the minimum {min} (set allow_insecure_test_keys = true for tests)"
    )]
    WeakKey { bits: u32, min: u32 },
    #[error("fixed-point: {0}")]
    Codec(String),
    #[error("batch length mismatch: {0} vs {1}")]
    Length(usize, usize),
    #[error("{0}")]
    Other(String),
}
