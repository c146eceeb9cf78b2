//! The numbers the `montgomery` kernel works on: an odd modulus with its Montgomery
//! constants, and fixed-base tables in Montgomery form. Values are checked against the
//! modulus in constant time (the modulus can be secret: `p^2`).

use super::arith;
use crate::error::KernelError;

/// Largest modulus in words (8192 bits: `n^2` of a 4096-bit key).
pub const MAX_WORDS: usize = 256;

/// A buffer uploaded to one device on first use and kept (shared by clones).
#[cfg(feature = "gpu")]
pub(super) type OnDevice = std::sync::Arc<std::sync::Mutex<Option<(wgpu::Device, wgpu::Buffer)>>>;

/// An odd modulus `m > 1` and its Montgomery constants (`R = 2^(32 words)`).
#[derive(Clone)]
pub struct Modulus {
    pub(super) m: Vec<u32>,
    /// `-m^-1 mod 2^16`.
    pub(super) n0inv: u32,
    /// `R^2 mod m`.
    pub(super) r2: Vec<u32>,
    /// The constants (`m`, `R^2`) on a device, uploaded on the first batch there: batches
    /// of one key no longer upload them per call.
    #[cfg(feature = "gpu")]
    pub(super) on_device: OnDevice,
    /// The same constants as 32-bit limbs, for the limbs program.
    #[cfg(feature = "gpu")]
    pub(super) limbs_on_device: OnDevice,
}

impl PartialEq for Modulus {
    fn eq(&self, other: &Self) -> bool {
        // The constants follow from m; the device copy is a cache.
        self.m == other.m
    }
}

impl Eq for Modulus {}

impl std::fmt::Debug for Modulus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Modulus({} words)", self.m.len())
    }
}

impl Modulus {
    /// The modulus given as `words` little-endian words (leading zero words allowed: the
    /// word count, not the value, fixes the size). Refused: even, `m <= 1`, empty or more
    /// than [`MAX_WORDS`] words.
    pub fn new(m: Vec<u32>) -> Result<Self, KernelError> {
        let words = m.len();
        if words == 0 || words > MAX_WORDS {
            return Err(KernelError::Input(format!(
                "a modulus of {words} words (limits 1 to {MAX_WORDS})"
            )));
        }
        if m[0] & 1 == 0 {
            return Err(KernelError::Input("an even modulus".into()));
        }
        if m[0] == 1 && m[1..].iter().all(|&w| w == 0) {
            return Err(KernelError::Input("the modulus 1".into()));
        }
        // Newton's iteration doubles the correct low bits: 1 -> 2 -> 4 -> 8 -> 16.
        let m0 = m[0] & 0xffff;
        let mut inv = m0;
        for _ in 0..4 {
            inv = inv.wrapping_mul(2u32.wrapping_sub(m0.wrapping_mul(inv))) & 0xffff;
        }
        let n0inv = 0u32.wrapping_sub(inv) & 0xffff;
        let r2 = arith::r_squared(&m);
        Ok(Self {
            m,
            n0inv,
            r2,
            #[cfg(feature = "gpu")]
            on_device: OnDevice::default(),
            #[cfg(feature = "gpu")]
            limbs_on_device: OnDevice::default(),
        })
    }

    /// Words per number.
    pub fn words(&self) -> usize {
        self.m.len()
    }

    /// The modulus.
    pub fn value(&self) -> &[u32] {
        &self.m
    }

    /// `x R mod m` for `x < m`.
    pub fn to_montgomery(&self, x: &[u32]) -> Result<Vec<u32>, KernelError> {
        self.check_below("value", x, 1)?;
        Ok(arith::mont_words(&self.m, self.n0inv, x, &self.r2))
    }

    /// Every `words`-word number in `v` is below the modulus (constant time in the values),
    /// and `v` holds `count` of them.
    pub(super) fn check_below(
        &self,
        what: &str,
        v: &[u32],
        count: usize,
    ) -> Result<(), KernelError> {
        let w = self.words();
        if v.len() != count * w {
            return Err(KernelError::Input(format!(
                "{what}: {} words, expected {count} numbers of {w}",
                v.len()
            )));
        }
        let mut bad = 0u32;
        for x in v.chunks_exact(w) {
            bad |= 1 - arith::lt(x, &self.m);
        }
        if bad != 0 {
            return Err(KernelError::Input(format!(
                "{what}: a number not below the modulus"
            )));
        }
        Ok(())
    }
}

/// Tables for fixed-base exponentiation, in Montgomery form: `windows` tables of 16 entries
/// and the initial accumulator (the caller folds any digit offset and its correction in, as
/// the Paillier backend's `FixedBase` does).
#[derive(Clone)]
pub struct FixedTable {
    pub(super) windows: usize,
    pub(super) entries: Vec<u32>,
    pub(super) init: Vec<u32>,
    /// The entries and the initial accumulator uploaded to a device on first use there,
    /// kept for the table's life (shared by clones): a batch of encryptions no longer
    /// uploads the table per dispatch.
    #[cfg(feature = "gpu")]
    pub(super) on_device: OnDevice,
}

impl std::fmt::Debug for FixedTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FixedTable({} windows)", self.windows)
    }
}

impl FixedTable {
    /// From plain entries (`windows * 16` numbers, window-major) and the plain initial
    /// accumulator, all below `m`.
    pub fn new(m: &Modulus, entries: &[u32], init: &[u32]) -> Result<Self, KernelError> {
        let w = m.words();
        if entries.is_empty() || !entries.len().is_multiple_of(16 * w) {
            return Err(KernelError::Input(format!(
                "a fixed-base table of {} words is not whole windows of 16 entries of {w} words",
                entries.len()
            )));
        }
        let windows = entries.len() / (16 * w);
        m.check_below("table entry", entries, windows * 16)?;
        let entries = entries
            .chunks_exact(w)
            .flat_map(|e| arith::mont_words(&m.m, m.n0inv, e, &m.r2))
            .collect();
        Ok(Self {
            windows,
            entries,
            init: m.to_montgomery(init)?,
            #[cfg(feature = "gpu")]
            on_device: Default::default(),
        })
    }

    /// Windows (4 exponent bits each).
    pub fn windows(&self) -> usize {
        self.windows
    }
}
