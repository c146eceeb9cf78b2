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
    /// A backend option out of range (`name`: the config key).
    #[error("invalid parameter '{name}': {msg}")]
    Param {
        /// The option, as the config names it.
        name: String,
        /// What is wrong with it.
        msg: String,
    },
    /// A backend that gives no secrecy, refused without the option (`name`) that accepts it.
    #[error("{msg}")]
    Insecure {
        /// The option that accepts the risk.
        name: String,
        /// What it does not protect, and how to accept it.
        msg: String,
    },
    /// Anything else (a transport failure inside a comparison, a poisoned lock).
    #[error("{0}")]
    Other(String),
}

impl From<BackendError> for kinsey_core::Error {
    /// A parameter stays a parameter error and a refusal a refusal (their kinds:
    /// `docs/errors.md`); everything else is the crypto layer's failure.
    fn from(e: BackendError) -> Self {
        use kinsey_core::Error;
        match e {
            BackendError::Param { name, msg } => Error::param(name, msg),
            BackendError::Unknown { .. } | BackendError::Disabled { .. } => {
                Error::param("backend", e.to_string())
            }
            BackendError::Insecure { name, msg } => Error::refused(name, msg),
            BackendError::WeakKey { .. } => {
                Error::refused("allow_insecure_test_keys", e.to_string())
            }
            other => Error::Crypto(Box::new(other)),
        }
    }
}
