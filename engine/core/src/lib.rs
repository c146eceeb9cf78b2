//! The foundation every engine crate shares: one error type whose messages name the thing
//! that was wrong (file, column, row, parameter, participant, stage), the parameter checks
//! every command applies (epsilon, delta), and the [`Progress`] callback through which the
//! libraries report long steps without drawing anything themselves.

pub mod device;
mod kind;
pub mod limits;

pub use device::DevicePref;
pub use kind::ErrorKind;

use std::path::PathBuf;

/// Result alias used across the engine.
pub type Result<T> = std::result::Result<T, Error>;

/// Everything that can go wrong in kinsey, grouped by what the user has to fix.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be opened, read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        #[source]
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A file was readable but its content is malformed (truncated Parquet, bad LIBSVM line, ...).
    #[error("{path}: {msg}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong with its content.
        msg: String,
    },
    /// The data does not have the expected columns or types.
    #[error("{path}: column '{column}': {msg}")]
    Schema {
        /// The file.
        path: PathBuf,
        /// The column.
        column: String,
        /// What is wrong with it.
        msg: String,
    },
    /// A value in the data is unusable (null, NaN, label outside the declared set, row outside the unit ball).
    #[error("{path}: column '{column}', row {row}: {msg}")]
    Value {
        /// The file.
        path: PathBuf,
        /// The column.
        column: String,
        /// The row (0-based, counting data rows).
        row: usize,
        /// What is wrong with the value (never the value itself when it is private).
        msg: String,
    },
    /// A parameter (from the CLI or the config) is out of range.
    #[error("invalid parameter '{name}': {msg}")]
    Param {
        /// The parameter, as the user writes it (flag or config key).
        name: String,
        /// What is wrong with it.
        msg: String,
    },
    /// The configuration file is malformed.
    #[error("config {path}: {msg}")]
    Config {
        /// The config file.
        path: PathBuf,
        /// What is wrong in it.
        msg: String,
    },
    /// The privacy accountant refused a spend.
    #[error("privacy budget exceeded: {0}")]
    Budget(String),
    /// Refused for privacy: a release its guarantee would not cover (two parties without
    /// consent, a ledger whose integrity does not check).
    #[error("refused for privacy ({name}): {msg}")]
    Refused {
        /// The parameter that would accept the risk, or the file refused.
        name: String,
        /// Why, and what to do.
        msg: String,
    },
    /// A numerical procedure did not reach its target.
    #[error("numerical failure: {0}")]
    Numerical(String),
    /// A compute kernel failed (no GPU adapter, shader error, ...): a
    /// `kinsey_kernels::KernelError`, converted where it arises.
    #[error("{0}")]
    Kernel(Box<dyn std::error::Error + Send + Sync>),
    /// The crypto layer refused something (key, ciphertext, backend name): a
    /// `kinsey_backend::BackendError`, converted where it arises.
    #[error("crypto: {0}")]
    Crypto(Box<dyn std::error::Error + Send + Sync>),
    /// The secure protocol stopped; names the stage and the participant at fault.
    #[error("secure protocol failed in {stage}, {participant}: {msg}")]
    Protocol {
        /// The protocol stage.
        stage: String,
        /// The participant at fault.
        participant: String,
        /// What went wrong.
        msg: String,
    },
    /// Errors surfaced from arrow/parquet that are not attributable to a single value.
    #[error("{path}: {source}")]
    Parquet {
        /// The file.
        path: PathBuf,
        #[source]
        /// The Parquet reader's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("{path}: {source}")]
    /// Errors surfaced from arrow that are not attributable to a single value.
    Arrow {
        /// The file.
        path: PathBuf,
        #[source]
        /// The arrow error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl Error {
    /// Shorthand for a parameter error.
    pub fn param(name: impl Into<String>, msg: impl Into<String>) -> Self {
        Error::Param {
            name: name.into(),
            msg: msg.into(),
        }
    }
    /// Shorthand for a refusal for privacy.
    pub fn refused(name: impl Into<String>, msg: impl Into<String>) -> Self {
        Error::Refused {
            name: name.into(),
            msg: msg.into(),
        }
    }
    /// Shorthand for an I/O error on a path.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
    /// Shorthand for a format error on a path.
    pub fn format(path: impl Into<PathBuf>, msg: impl Into<String>) -> Self {
        Error::Format {
            path: path.into(),
            msg: msg.into(),
        }
    }
}

impl Error {
    /// What kind of failure this is (see [`ErrorKind`]: the exit code and Python class).
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Param { .. } | Error::Config { .. } => ErrorKind::Parameter,
            Error::Format { .. }
            | Error::Schema { .. }
            | Error::Value { .. }
            | Error::Parquet { .. }
            | Error::Arrow { .. } => ErrorKind::Input,
            Error::Budget(_) => ErrorKind::BudgetExhausted,
            Error::Refused { .. } => ErrorKind::PrivacyRefused,
            Error::Kernel(_) | Error::Crypto(_) | Error::Protocol { .. } => ErrorKind::Backend,
            Error::Numerical(_) => ErrorKind::Numerical,
            Error::Io { .. } => ErrorKind::Io,
        }
    }
}

/// Check that a privacy parameter epsilon is a finite positive number.
pub fn check_epsilon(name: &str, eps: f64) -> Result<()> {
    if !(eps.is_finite() && (MIN_EPSILON..=MAX_EPSILON).contains(&eps)) {
        return Err(Error::param(
            name,
            format!(
                "epsilon must be in [{MIN_EPSILON:e}, {MAX_EPSILON}] (below that the noise \
                 overflows the exact samplers, above it no guarantee is meaningful), got {}",
                short(eps)
            ),
        ));
    }
    Ok(())
}

/// A number as a user would write it: `1e308`, not 309 digits (nor `2.3e-60` as 60).
pub fn short(x: f64) -> String {
    if x != 0.0 && x.is_finite() && !(1e-4..1e6).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        x.to_string()
    }
}

/// Smallest epsilon any command accepts: below it the exact samplers' integer parameters
/// would overflow (docs/privacy.md, "Parameter ranges").
pub const MIN_EPSILON: f64 = 1e-6;
/// Largest epsilon any command accepts: `e^100` is no privacy at all, and larger values make
/// calibrations degenerate (a Gaussian sigma of 0, noise below the grid).
pub const MAX_EPSILON: f64 = 100.0;

/// Check that a delta is in [0, 1).
pub fn check_delta(name: &str, delta: f64) -> Result<()> {
    if !(delta.is_finite() && (0.0..1.0).contains(&delta)) {
        return Err(Error::param(
            name,
            format!("delta must be in [0, 1), got {delta}"),
        ));
    }
    Ok(())
}

/// Progress of a long step, reported by the libraries to whoever drives them. Only the CLI
/// draws it (on a terminal); libraries never touch stderr. Every method has a silent default.
pub trait Progress: Send + Sync {
    /// A step named `task` starts; `total` units of work when known.
    fn begin(&self, _task: &str, _total: Option<u64>) {}
    /// `n` more units are done.
    fn advance(&self, _n: u64) {}
    /// The current step is over (successfully or not).
    fn end(&self) {}
}

/// A [`Progress`] that reports nothing (tests, libraries used on their own).
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl Progress for Silent {}
