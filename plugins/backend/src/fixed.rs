//! Fixed-point codec for reals entering ciphertexts: `x -> round(x 2^f)` as a signed
//! integer, decoded back by dividing by `2^f`. Overflow is detected *before* it can wrap:
//! a value is accepted only if it fits the capacity the caller declares (the backend's
//! signed plaintext range, divided by the number of terms a protocol will add up).

use crate::error::BackendError;
use serde::{Deserialize, Serialize};

/// A fixed-point format: `frac_bits` fractional bits, values with |v| < 2^(capacity_bits)
/// after scaling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixedPoint {
    /// A real `x` is encoded as `round(x 2^frac_bits)`.
    pub frac_bits: u32,
    /// Encoded integers must satisfy |v| < 2^capacity_bits.
    pub capacity_bits: u32,
}

impl FixedPoint {
    /// A codec with `frac_bits` fractional bits and room for `capacity_bits` in total.
    pub fn new(frac_bits: u32, capacity_bits: u32) -> Result<Self, BackendError> {
        if capacity_bits > 126 || frac_bits >= capacity_bits {
            return Err(BackendError::Codec(format!(
                "fixed point needs frac_bits < capacity_bits <= 126, got {frac_bits} and {capacity_bits}"
            )));
        }
        Ok(Self {
            frac_bits,
            capacity_bits,
        })
    }

    /// Largest encodable magnitude (exclusive) as an integer.
    pub fn limit(&self) -> i128 {
        1i128 << self.capacity_bits
    }

    /// Codec whose capacity leaves room for adding `terms` values without leaving the range:
    /// each term must then fit `capacity_bits - ceil(log2 terms)` bits.
    #[cfg(test)]
    pub(crate) fn for_sum_of(&self, terms: u64) -> Result<Self, BackendError> {
        let extra = 64 - terms.max(1).saturating_sub(1).leading_zeros();
        Self::new(self.frac_bits, self.capacity_bits.saturating_sub(extra))
    }

    /// Encode a real.
    pub fn encode(&self, x: f64) -> Result<i128, BackendError> {
        if !x.is_finite() {
            return Err(BackendError::Codec(format!(
                "cannot encode non-finite value {x}"
            )));
        }
        let v = (x * (self.frac_bits as f64).exp2()).round();
        if v.abs() >= (self.capacity_bits as f64).exp2() {
            return Err(BackendError::Codec(format!(
                "value {x} overflows the fixed-point range (|x| < 2^{})",
                self.capacity_bits - self.frac_bits
            )));
        }
        Ok(v as i128)
    }

    /// Check an integer is in range (e.g. after a homomorphic sum was decrypted).
    pub fn check(&self, v: i128) -> Result<i128, BackendError> {
        if v.unsigned_abs() >= self.limit().unsigned_abs() {
            return Err(BackendError::Codec(format!(
                "decoded integer {v} is outside the fixed-point range: the sum overflowed"
            )));
        }
        Ok(v)
    }

    /// Decode an integer.
    pub fn decode(&self, v: i128) -> f64 {
        v as f64 / (self.frac_bits as f64).exp2()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_overflow() {
        let c = FixedPoint::new(32, 80).expect("valid");
        for x in [0.0, 1.0, -1.0, 0.123456789, -12345.678, 2f64.powi(40)] {
            let v = c.encode(x).expect("fits");
            assert!((c.decode(v) - x).abs() <= 0.5 / 2f64.powi(32));
        }
        assert!(c.encode(2f64.powi(48)).is_err());
        assert!(c.encode(f64::NAN).is_err());
        assert!(c.check(c.limit()).is_err());
        assert!(c.check(-(c.limit() - 1)).is_ok());
        assert!(FixedPoint::new(40, 40).is_err());
        assert!(FixedPoint::new(10, 127).is_err());
    }

    #[test]
    fn room_for_sums() {
        let c = FixedPoint::new(32, 80).expect("valid");
        assert_eq!(c.for_sum_of(1).expect("ok").capacity_bits, 80);
        assert_eq!(c.for_sum_of(2).expect("ok").capacity_bits, 79);
        assert_eq!(c.for_sum_of(5).expect("ok").capacity_bits, 77);
        // The worst case of 5 maximal terms still fits the original range.
        let t = c.for_sum_of(5).expect("ok");
        let sum: i128 = 5 * (t.limit() - 1);
        assert!(c.check(sum).is_ok());
    }
}
