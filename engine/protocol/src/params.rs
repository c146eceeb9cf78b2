//! The protocol's integer ranges (see the crate documentation for why each holds).

/// Sizes must be below 2^SIZE_BITS.
pub const SIZE_BITS: u32 = 32;
/// Most parties the protocol accepts.
pub const MAX_PARTIES: usize = 256;
/// Bits of the Stage 1 keys `n_j K + j`.
pub const KEY_BITS: u32 = 40;
/// Statistical security of every additive mask.
pub const SIGMA: u32 = 40;
/// Bits of the largest fixed-point noise value (units of `2^-32 / K`).
pub const NOISE_BITS: u32 = kinsey_learn::aggregate::NOISE_BITS;
/// Stage 2 selects `eta + NOISE_OFFSET`, which lies in `[0, 2^(NOISE_BITS + 1))`: the
/// indicator then needs only that width (41 TFHE blocks instead of 64).
pub const NOISE_OFFSET: i128 = 1 << NOISE_BITS;
