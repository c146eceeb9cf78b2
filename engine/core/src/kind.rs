//! What kind of failure an [`Error`](crate::Error) is, for a program to branch on: the same kinds are the
//! `kinsey` command's exit codes and the Python package's exception classes
//! (`docs/errors.md` is the one table of all three).

/// The kind of an [`Error`](crate::Error): what the caller has to do about it.
///
/// ```
/// use kinsey_core::{Error, ErrorKind};
///
/// let e = Error::param("epsilon", "must be positive");
/// assert_eq!(e.kind(), ErrorKind::Parameter);
/// assert_eq!(e.kind().exit_code(), 2);
/// assert_eq!(e.kind().python_class(), "ParameterError");
/// let retry = matches!(e.kind(), ErrorKind::Backend | ErrorKind::Io);
/// assert!(!retry);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A parameter out of range, missing or contradicting another, or a malformed config
    /// file: fix the call. Exit code 2 (as for a flag the command line does not know).
    Parameter,
    /// The data: a file that is not the format it claims, a missing or mistyped column, an
    /// unusable value (the message names file, column and row). Exit code 3.
    Input,
    /// The privacy budget would be exceeded (a ledger's data set, or an accountant); nothing
    /// was released. Exit code 4.
    BudgetExhausted,
    /// Refused for privacy: a release the guarantee would not cover (two parties without
    /// consent, a ledger whose integrity does not check). Exit code 5.
    PrivacyRefused,
    /// A crypto backend, the secure protocol, its transport or a compute device failed (the
    /// message names the participant and the stage, or the device). Exit code 6.
    Backend,
    /// A numerical procedure did not reach its target. Exit code 7.
    Numerical,
    /// The file system: a file that cannot be opened, read or written (permissions, a
    /// missing directory, a full disk). Exit code 8.
    Io,
}

impl ErrorKind {
    /// Every kind, in the order of their exit codes (the table of `docs/errors.md`).
    pub const ALL: [ErrorKind; 7] = [
        ErrorKind::Parameter,
        ErrorKind::Input,
        ErrorKind::BudgetExhausted,
        ErrorKind::PrivacyRefused,
        ErrorKind::Backend,
        ErrorKind::Numerical,
        ErrorKind::Io,
    ];

    /// The `kinsey` command's exit code for an error of this kind (1 is left for a failure
    /// of kinsey itself, 128 + N for a stop by signal N).
    pub fn exit_code(self) -> i32 {
        match self {
            ErrorKind::Parameter => 2,
            ErrorKind::Input => 3,
            ErrorKind::BudgetExhausted => 4,
            ErrorKind::PrivacyRefused => 5,
            ErrorKind::Backend => 6,
            ErrorKind::Numerical => 7,
            ErrorKind::Io => 8,
        }
    }

    /// The Python package's exception class for this kind (each a subclass of
    /// `kinsey.KinseyError`).
    pub fn python_class(self) -> &'static str {
        match self {
            ErrorKind::Parameter => "ParameterError",
            ErrorKind::Input => "InputError",
            ErrorKind::BudgetExhausted => "BudgetExhausted",
            ErrorKind::PrivacyRefused => "PrivacyRefused",
            ErrorKind::Backend => "BackendError",
            ErrorKind::Numerical => "NumericalError",
            ErrorKind::Io => "FileError",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    /// Each variant has its kind, and each kind its own exit code and Python class.
    #[test]
    fn every_kind_has_its_own_exit_code_and_class() {
        let io = || std::io::Error::other("x");
        let cases = [
            (Error::param("epsilon", "x"), ErrorKind::Parameter),
            (
                Error::Config {
                    path: "c.toml".into(),
                    msg: "x".into(),
                },
                ErrorKind::Parameter,
            ),
            (Error::format("a.csv", "x"), ErrorKind::Input),
            (
                Error::Value {
                    path: "a.csv".into(),
                    column: "c".into(),
                    row: 3,
                    msg: "x".into(),
                },
                ErrorKind::Input,
            ),
            (Error::Budget("x".into()), ErrorKind::BudgetExhausted),
            (
                Error::refused("allow_two_parties", "x"),
                ErrorKind::PrivacyRefused,
            ),
            (Error::Crypto(Box::new(io())), ErrorKind::Backend),
            (
                Error::Protocol {
                    stage: "stage 2".into(),
                    participant: "party 3".into(),
                    msg: "x".into(),
                },
                ErrorKind::Backend,
            ),
            (Error::Numerical("x".into()), ErrorKind::Numerical),
            (Error::io("out", io()), ErrorKind::Io),
        ];
        for (e, kind) in cases {
            assert_eq!(e.kind(), kind, "{e}");
        }
        let mut codes: Vec<i32> = ErrorKind::ALL.iter().map(|k| k.exit_code()).collect();
        codes.dedup();
        assert_eq!(codes, (2..=8).collect::<Vec<_>>());
        let mut classes: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.python_class()).collect();
        classes.sort_unstable();
        classes.dedup();
        assert_eq!(classes.len(), ErrorKind::ALL.len());
    }
}
