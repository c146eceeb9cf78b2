//! The interface every crypto backend of kinsey implements (Paillier on CPU and GPU, TFHE,
//! and the insecure `mock` used for fast protocol tests), the fixed-point codec, the
//! registry that maps a config name to a backend, and the conformance suite every backend
//! must pass.
//!
//! Keys and ciphertexts cross this interface as bytes ([`PublicKey`], [`SecretKey`],
//! [`Ciphertext`]): the protocol sends them over a transport anyway, and each backend
//! validates what it parses (range, invertibility, length, key binding), so a corrupted or
//! foreign ciphertext is an error, never a silent wrong answer.

pub mod compare;
#[cfg(any(test, feature = "conformance"))]
pub mod conformance;
mod error;
pub mod fixed;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod he;
mod keys;
pub mod registry;

pub use compare::{Duplex, SecureComparison};
pub use error::BackendError;
pub use fixed::FixedPoint;
pub use he::{AdditiveHe, BackendInfo, same_len};
pub use keys::{Ciphertext, KeyPair, PublicKey, Rng, SecretKey};
pub use registry::Registry;
