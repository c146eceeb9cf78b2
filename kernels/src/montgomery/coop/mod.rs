//! The cooperative product: one modular product `a b mod m` spread over `L` lanes of a
//! workgroup (the workgroup-memory form; subgroup shuffles are not needed by it), instead
//! of one invocation holding a whole bignum in private arrays.
//!
//! A Montgomery product `x y R^-1 mod m` (`R = 2^(32 W)`) as three multi-precision
//! products with no step-to-step dependency inside any of them (CIOS has one per limb):
//! `P = x y`; `q = (P mod R) n' mod R` with `n' = -m^-1 mod R`; `(P + q m) / R`, below `2m`,
//! then `m` subtracted under a mask. Each product's columns are shared out over the lanes
//! (lane `l` takes columns `l, l + L, ...`): a column's 32-bit halves of its 64-bit partial
//! products are added into two u64 accumulators (at most `W` terms each: no overflow up to
//! 2^32 limbs), and one lane turns the columns into limbs with their carries, in order. The
//! operands live in workgroup memory; a lane's registers hold two accumulators.
//!
//! CPU twin: [`cpu_mul`] (the same columns, carries and masked subtraction); GPU:
//! `coop/coop.wgsl` with its sizes set per modulus (entries `coop_mul`, `a b mod m` as
//! `x y R^-1` then times `R^2`; `coop_fixed_pow`; `coop_pow_setup` and `coop_pow`), run by `gpu::GpuCoop`.
//! Chosen by `KINSEY_GPU_MONTGOMERY=coop` for every operation (an A/B against the limbs
//! program; on a software rasteriser variable-base powers whose set-up would pass its loop
//! budget stay on the limbs program).

pub mod cpu;
#[cfg(feature = "gpu")]
mod gpu;

pub use cpu::cpu_mul;
#[cfg(feature = "gpu")]
pub(crate) use gpu::{GpuCoop, pow_setup_fits};
