//! The DP core: the CSPRNG, the mechanisms (each with its sensitivity and privacy map
//! stated beside the code, plus statistical tests with a power check), and the accountant.
//!
//! Architecture invariant: privacy noise is sampled only in this crate.

pub mod accountant;
pub mod certified;
pub mod dgauss;
pub mod dyadic;
pub mod exact;
pub mod exponential;
pub mod gaussian;
pub mod l2laplace;
pub mod laplace;
pub mod neighbours;
pub mod permute_flip;
pub mod release;
pub mod rng;
pub mod rr;
#[cfg(any(test, feature = "testing"))]
pub mod stattest;

pub use accountant::Accountant;
pub use exponential::ExponentialMechanism;
pub use gaussian::GaussianMechanism;
pub use l2laplace::L2LaplaceMechanism;
pub use laplace::LaplaceMechanism;
pub use neighbours::Neighbours;
pub use rng::{DataDigest, NoiseRng, RngRecord, SeedSource};
