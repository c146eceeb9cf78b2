//! The GPU path of the Paillier backend: the same operations as the CPU path, with the
//! heavy modular arithmetic (fixed-base and variable-base exponentiations, products mod
//! `n^2`, `p^2`, `q^2`) done in batches by `kinsey_kernels::montgomery` (WGSL through wgpu).
//! Parsing, validation, the cheap parts (`1 + m n`, the L function, CRT recombination) and
//! the randomness stay on the CPU, drawn in the same order, so the same inputs and the same
//! random stream give the same ciphertexts and plaintexts on either device.
//!
//! A batch goes to the GPU when the backend was built with `device = "gpu"` (every batch:
//! the correctness path, lavapipe in CI) or `"auto"` with a hardware GPU and the batch is
//! large enough: at least `gpu_min_batch` items where the configuration sets it, else at
//! least the operation's crossover measured on this machine ([`crate::calibrate`]).
//! Otherwise it runs on the CPU.

use crate::calibrate::{Crossovers, Op};
use crate::fixed_base::FixedBase;
use kinsey_backend::BackendError;
use kinsey_kernels::montgomery::{BatchArith, FixedTable, Modulus};
use kinsey_kernels::{DevicePref, KernelError};
use rayon::prelude::*;
use rug::Integer;
use rug::integer::Order;
use std::sync::{Arc, OnceLock};

/// Which batches go to the GPU, when there is one.
#[derive(Debug, Clone)]
pub(crate) enum Policy {
    /// Batches of at least this many items, whatever the operation (`[crypto]
    /// gpu_min_batch`; 1 for every batch).
    AtLeast(usize),
    /// Each operation from its measured crossover ([`Crossovers::threshold`]).
    Measured(Arc<Crossovers>),
}

impl Policy {
    /// Whether a batch of `n` items of `op` goes to the GPU (there being one).
    pub(crate) fn sends(&self, op: Op, n: usize) -> bool {
        n > 0
            && match self {
                Policy::AtLeast(m) => n >= *m,
                Policy::Measured(c) => n >= c.threshold(op),
            }
    }
}

/// Where the backend's batches run.
#[derive(Debug)]
pub(crate) struct Device {
    pref: DevicePref,
    policy: Policy,
    arith: BatchArith,
}

impl Device {
    /// Probes the GPU now for `gpu` and `auto` (a missing adapter is an error for `gpu`).
    pub(crate) fn new(pref: DevicePref, policy: Policy) -> Result<Self, BackendError> {
        let arith = BatchArith::new(pref)
            .map_err(|e| BackendError::Other(format!("Paillier backend, device = {pref}: {e}")))?;
        let policy = if pref == DevicePref::Gpu && matches!(policy, Policy::AtLeast(_)) {
            Policy::AtLeast(1)
        } else {
            policy
        };
        Ok(Self {
            pref,
            policy,
            arith,
        })
    }

    /// Build the GPU pipelines for moduli of these words in the background (hardware only:
    /// [`BatchArith::warm_in_background`]).
    pub(crate) fn warm_in_background(&self, words: &[usize]) {
        self.arith.warm_in_background(words);
    }

    pub(crate) fn cpu() -> Self {
        Self {
            pref: DevicePref::Cpu,
            policy: Policy::AtLeast(usize::MAX),
            arith: BatchArith::cpu(),
        }
    }

    /// The same device (no new probe) with another policy.
    pub(crate) fn with_policy(&self, policy: Policy) -> Self {
        Self {
            pref: self.pref,
            policy,
            arith: self.arith.clone(),
        }
    }

    /// Whether some batches go to a GPU.
    pub(crate) fn is_gpu(&self) -> bool {
        self.arith.is_gpu()
    }

    /// The measurement behind the thresholds, if they were measured.
    pub(crate) fn calibration(&self) -> Option<Arc<Crossovers>> {
        match &self.policy {
            Policy::Measured(c) => Some(Arc::clone(c)),
            Policy::AtLeast(_) => None,
        }
    }

    /// The adapter alone, in words.
    pub(crate) fn adapter(&self) -> String {
        self.arith.describe()
    }

    /// The arithmetic for a batch of `n` items of `op`, if it goes to the GPU.
    pub(crate) fn for_batch(&self, op: Op, n: usize) -> Option<&BatchArith> {
        (self.arith.is_gpu() && self.policy.sends(op, n)).then_some(&self.arith)
    }

    /// "CPU", or the GPU and when it is used.
    pub(crate) fn describe(&self) -> String {
        match (self.arith.is_gpu(), self.pref, &self.policy) {
            (false, DevicePref::Cpu, _) => "CPU".into(),
            (false, _, _) => format!("CPU (device = {}: no hardware GPU)", self.pref),
            (true, _, Policy::AtLeast(1)) => format!("{} (every batch)", self.arith.describe()),
            (true, _, Policy::AtLeast(m)) => format!(
                "{} for batches of at least {m} items (gpu_min_batch), CPU below",
                self.arith.describe()
            ),
            (true, _, Policy::Measured(c)) => {
                format!(
                    "{} where it wins, CPU elsewhere; {}",
                    self.arith.describe(),
                    c.describe()
                )
            }
        }
    }
}

/// Little-endian words of `x`, exactly `w` of them (`x < 2^(32 w)`).
pub(crate) fn words_of(x: &Integer, w: usize) -> Vec<u32> {
    let mut v = x.to_digits::<u32>(Order::Lsf);
    v.resize(w, 0);
    v
}

pub(crate) fn int_of(w: &[u32]) -> Integer {
    Integer::from_digits(w, Order::Lsf)
}

/// Exponent bytes (little-endian) as `w` words.
pub(crate) fn exp_words(e: &[u8], w: usize) -> Vec<u32> {
    let mut v: Vec<u32> = e
        .chunks(4)
        .map(|c| {
            let mut b = [0u8; 4];
            b[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(b)
        })
        .collect();
    v.resize(w, 0);
    v
}

/// Exponents (bytes each) as `w` words each, concatenated.
pub(crate) fn exps_words(es: &[Vec<u8>], w: usize) -> Vec<u32> {
    es.iter().flat_map(|e| exp_words(e, w)).collect()
}

/// Numbers as `w` words each, concatenated.
pub(crate) fn batch_words(xs: &[Integer], w: usize) -> Vec<u32> {
    xs.par_iter().flat_map_iter(|x| words_of(x, w)).collect()
}

/// `2^127` as a 4-word exponent.
pub(crate) const OFFSET_127: [u32; 4] = [0, 0, 0, 1 << 31];

/// `v + 2^127` (a secret scalar as a non-negative 128-bit exponent) as 4 words.
pub(crate) fn offset_words(v: i128) -> [u32; 4] {
    let e = (v as u128).wrapping_add(1u128 << 127);
    [
        e as u32,
        (e >> 32) as u32,
        (e >> 64) as u32,
        (e >> 96) as u32,
    ]
}

pub(crate) fn kernel_err(stage: &'static str) -> impl Fn(KernelError) -> BackendError {
    move |e| BackendError::Other(format!("Paillier on the GPU, {stage}: {e}"))
}

/// Words of a number below `2^bits`.
pub(crate) fn words_for(bits: u32) -> usize {
    (bits as usize).div_ceil(32)
}

/// A fixed-base table for the GPU.
pub(crate) fn table(m: &Modulus, fb: &FixedBase) -> Result<FixedTable, BackendError> {
    let (entries, init) = fb.to_words(m.words());
    FixedTable::new(m, &entries, &init).map_err(kernel_err("fixed-base table"))
}

/// What the GPU needs of a public key: `n^2`, and for encryption and re-randomisation the
/// `h_s` table (built on first use: products and powers of ciphertexts never need it).
pub(crate) struct GpuPk {
    pub(crate) n2: Modulus,
    table: Lazy<FixedTable>,
    /// Words of an encryption exponent.
    pub(crate) exp_words: usize,
}

impl GpuPk {
    /// For a `bits`-bit key: `n^2`; `hs_table` gives the exponent size.
    pub(crate) fn new(bits: u32, n2: &Integer, hs_table: &FixedBase) -> Result<Self, BackendError> {
        let w = 2 * words_for(bits);
        let n2 = Modulus::new(words_of(n2, w)).map_err(kernel_err("modulus n^2"))?;
        Ok(Self {
            n2,
            table: Lazy::default(),
            exp_words: hs_table.exp_bytes().div_ceil(4),
        })
    }

    /// Words of `n^2`.
    pub(crate) fn w(&self) -> usize {
        self.n2.words()
    }

    /// The GPU table of `h_s` (the key's CPU table `hs_table`), built on first use.
    pub(crate) fn table(&self, hs_table: &FixedBase) -> Result<&FixedTable, BackendError> {
        self.table.get(|| table(&self.n2, hs_table))
    }
}

/// What the GPU needs of a secret key (to decrypt): `p^2`, `q^2`, `p - 1`, `q - 1`.
pub(crate) struct GpuSk {
    pub(crate) p2: Modulus,
    pub(crate) q2: Modulus,
    pub(crate) pm1: Vec<u32>,
    pub(crate) qm1: Vec<u32>,
}

impl GpuSk {
    /// Words of `p^2` and `q^2` (half those of `n^2`).
    pub(crate) fn w(&self) -> usize {
        self.p2.words()
    }

    /// Words of `p - 1` and `q - 1`.
    pub(crate) fn half_words(&self) -> usize {
        self.pm1.len()
    }
}

/// The secret numbers a [`GpuSk`] is made of.
pub(crate) struct SecretParts<'a> {
    pub(crate) bits: u32,
    pub(crate) p2: &'a Integer,
    pub(crate) q2: &'a Integer,
    pub(crate) pm1: &'a Integer,
    pub(crate) qm1: &'a Integer,
}

impl GpuSk {
    /// From the secret key's numbers.
    pub(crate) fn new(s: SecretParts<'_>) -> Result<Self, BackendError> {
        let w = words_for(s.bits);
        let half_words = words_for(s.bits.div_ceil(2));
        let p2 = Modulus::new(words_of(s.p2, w)).map_err(kernel_err("modulus p^2"))?;
        let q2 = Modulus::new(words_of(s.q2, w)).map_err(kernel_err("modulus q^2"))?;
        Ok(Self {
            p2,
            q2,
            pm1: words_of(s.pm1, half_words),
            qm1: words_of(s.qm1, half_words),
        })
    }
}

/// A per-key GPU context, built on first use.
pub(crate) struct Lazy<T>(OnceLock<Result<T, BackendError>>);

impl<T> Default for Lazy<T> {
    fn default() -> Self {
        Self(OnceLock::new())
    }
}

impl<T> Lazy<T> {
    /// The value, built on first use (a failure is kept and returned again).
    pub(crate) fn get(
        &self,
        build: impl FnOnce() -> Result<T, BackendError>,
    ) -> Result<&T, BackendError> {
        self.0.get_or_init(build).as_ref().map_err(Clone::clone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A measured policy sends each operation's batches from that operation's own
    /// crossover (never where it has none); a pinned one from its one threshold.
    #[test]
    fn each_operation_is_routed_by_its_own_crossover() {
        let crossover = |i: usize| (i != 2).then_some(1usize << (2 * i));
        let c = Arc::new(crate::calibrate::made_up(crossover, 0.5));
        let p = Policy::Measured(c);
        for (i, op) in Op::ALL.into_iter().enumerate() {
            for n in [0, 1, 3, 4, 15, 16, 255, 256, 4095, 4096, 1 << 20] {
                let want = n > 0 && crossover(i).is_some_and(|x| n >= x);
                assert_eq!(p.sends(op, n), want, "{} at {n}", op.name());
            }
        }
        let pinned = Policy::AtLeast(64);
        assert!(!pinned.sends(Op::Add, 63) && pinned.sends(Op::Decrypt, 64));
    }
}
