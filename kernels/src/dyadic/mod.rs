//! The `dyadic` kernel: keyed noise of the decayed sums' tree counters, counter `id`'s draw a
//! pure function of two ChaCha20 keystreams and the alias tables of a dyadic discrete
//! Laplace law (`kinsey_dp::dyadic`, which builds the tables and proves their privacy map;
//! this crate only evaluates them).
//!
//! Counter `id` owns the 64-bit words `2 id, 2 id + 1` of the main keystream and, for laws
//! with more than two digits, words `2 id, 2 id + 1` of the wide keystream. The draw
//! ([`DyadicTables::fast`]) reads its sign and geometric part from word 0's low 12 bits,
//! its lowest digit from word 1, its second digit from word 0's top 52 bits and any further
//! digit from one wide word each. The rare draws that need more bits (a geometric part past
//! 11, a rejected negative zero: about 1 in 2,000) come back as [`SLOW`], and the caller
//! finishes them with the full sampler, which reads the same words first.
//!
//! Two implementations of [`fill`](cpu::fill) over a range of counters: `cpu.rs` (AVX2
//! keystream, then the table draw four counters at a time in AVX2 registers, `avx2.rs`, for
//! laws of one or two digits) and `gpu.rs` with `shaders/dyadic.wgsl` (one invocation per
//! keystream block, 64-bit arithmetic on pairs of 32-bit words). They agree bit for bit: the
//! sampler is integer-only.

#[cfg(target_arch = "x86_64")]
mod avx2;
pub mod cpu;
#[cfg(feature = "gpu")]
pub mod gpu;
mod tables;

pub use tables::{DigitTable, DyadicTables, EXTRA_WORDS, LOW_BITS, MAX_DIGITS, SLOW};

#[cfg(feature = "gpu")]
use crate::{DevicePref, KernelError, gpu::GpuContext};

/// The GPU path for the law `tables` under `pref` (as every kernel's `select`: `cpu`
/// none, `gpu` the device or an error, `auto` a hardware GPU if there is one), `None` for
/// the CPU twin [`cpu::fill`].
#[cfg(feature = "gpu")]
pub fn select(
    pref: DevicePref,
    tables: &DyadicTables,
) -> Result<Option<gpu::GpuDyadic>, KernelError> {
    tables.check()?;
    GpuContext::for_preference(pref)?
        .map(|ctx| gpu::GpuDyadic::new(ctx, tables))
        .transpose()
}
