//! The one parameter set kinsey uses and the constants derived from it.

use kinsey_backend::BackendError;
use tfhe::shortint::parameters::CompactPublicKeyEncryptionParameters;
pub(crate) use tfhe::shortint::parameters::PARAM_MESSAGE_2_CARRY_2_KS_PBS_TUNIFORM_2M128 as PARAMS;

/// Its name, as tfhe-rs 1.8.2 calls it.
pub(crate) const PARAMS_NAME: &str = "PARAM_MESSAGE_2_CARRY_2_KS_PBS_TUNIFORM_2M128";
/// Bits of message per radix block.
pub(crate) const BLOCK_BITS: u32 = 2;
/// Largest message of a clean block (no carries).
pub(crate) const MSG_MAX: u64 = 3;
/// Largest value a block may hold with its carries (message and carry space, below the
/// padding bit).
pub(crate) const FULL_MAX: u64 = 15;
/// Blocks of a ciphertext: 64 blocks of 2 bits, integers mod 2^128.
pub(crate) const BLOCKS: usize = 64;
/// Plaintext width in bits.
pub(crate) const WIDTH: u32 = BLOCK_BITS * BLOCKS as u32;

/// The largest noise level a block may have before it is bootstrapped, for the parameter
/// set's failure probability to hold.
pub(crate) fn max_noise_level() -> u64 {
    PARAMS.max_noise_level.get()
}

/// The largest noise a block may carry into a bootstrap, in units of a nominal block's
/// variance: tfhe-rs's parameter sets guarantee their failure probability for a noise whose
/// norm2 is at most `max_noise_level` nominal standard deviations (tfhe-rs's
/// `MaxNoiseLevel`), i.e. a variance of at most `max_noise_level^2` units. (tfhe-rs's own
/// noise level adds standard deviations, a bound that also holds for correlated noise;
/// a selection sums independent noises, whose variances add.)
pub(crate) fn max_units() -> u64 {
    max_noise_level() * max_noise_level()
}

/// The compact public key's parameters (derived from the compute parameters).
pub(crate) fn cpk_params() -> Result<CompactPublicKeyEncryptionParameters, BackendError> {
    CompactPublicKeyEncryptionParameters::try_from(PARAMS)
        .map_err(|e| BackendError::BadKey(format!("compact public key parameters: {e}")))
}

/// The base-4 digits of `v`, least significant first.
pub(crate) fn digits(v: u128) -> [u64; BLOCKS] {
    std::array::from_fn(|i| ((v >> (BLOCK_BITS as usize * i)) & 3) as u64)
}
