//! The crypto layer's error type.

/// Errors of the crypto layer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    /// No backend of that name is registered.
    #[error("unknown crypto backend '{name}'; available: {available}")]
    Unknown {
        /// The name asked for.
        name: String,
        /// The registered names.
        available: String,
    },
    /// The backend exists but this build left it out.
    #[error("crypto backend '{name}' is not compiled in: rebuild with cargo feature '{feature}'")]
    Disabled {
        /// The backend.
        name: String,
        /// The cargo feature that compiles it in.
        feature: String,
    },
    /// A ciphertext failed validation (length, key binding, range, invertibility).
    #[error("invalid ciphertext: {0}")]
    BadCiphertext(String),
    /// A key failed validation.
    #[error("invalid key: {0}")]
    BadKey(String),
    /// A key below the backend's minimum size, without `allow_insecure_test_keys`.
    #[error(
        "key size {bits} bits is below the minimum {min} (set allow_insecure_test_keys = true for tests)"
    )]
    WeakKey {
        /// The key size asked for.
        bits: u32,
        /// The smallest size accepted.
        min: u32,
    },
    /// A value does not fit the fixed-point format.
    #[error("fixed-point: {0}")]
    Codec(String),
    /// Two batches of different lengths.
    #[error("batch length mismatch: {0} vs {1}")]
    Length(usize, usize),
    /// Anything else (a transport failure inside a comparison, a poisoned lock).
    #[error("{0}")]
    Other(String),
}

impl From<BackendError> for kinsey_core::Error {
    fn from(e: BackendError) -> Self {
        kinsey_core::Error::Crypto(Box::new(e))
    }
}
