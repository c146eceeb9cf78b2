//! What most programs need, in one `use kinsey::prelude::*;`.
//!
//! The samplers alone (what `default-features = false` builds):
//!
//! ```
//! use kinsey::prelude::*;
//!
//! // A count released with the exact discrete Laplace: sensitivity 1, epsilon 0.5.
//! let mech = LaplaceMechanism::new(1.0, 0.5)?;
//! let noisy = mech.release(1234.0, &mut NoiseRng::from_os())?;
//! assert!(noisy.is_finite());
//! # Ok::<(), kinsey::Error>(())
//! ```

pub use crate::guarantee::{Guarantee, Released};
pub use crate::{DevicePref, Error, Result};
pub use kinsey_dp::{LaplaceMechanism, Neighbours, NoiseRng};

#[cfg(feature = "classifier")]
pub use crate::classifier::{Backend, Job, Trained};
#[cfg(feature = "parquet")]
pub use crate::ledger::Ledger;
#[cfg(feature = "stats")]
pub use crate::stats::{Bound, DecayedSum, Histogram};
