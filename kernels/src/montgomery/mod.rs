//! Batched modular arithmetic for Paillier: products, fixed-base and variable-base
//! exponentiation modulo an odd modulus of up to [`MAX_WORDS`] 32-bit words, one item per
//! GPU invocation. CPU twin: [`cpu`]; GPU twin: [`gpu::GpuMontgomery`]
//! (`shaders/montgomery.wgsl`). Both run the same Montgomery arithmetic on 16-bit digits
//! (WGSL has no 64-bit integers), so their results (unique residues) agree bit for bit.
//!
//! Numbers are little-endian `u32` words, exactly `words` of them for the modulus size.
//! Every exponentiation runs a fixed sequence of multiplications and reads every table
//! entry (exponents are secret: encryption randomness, `p - 1`, Stage 2's noise); inputs are
//! checked against the modulus in constant time (the modulus can be secret: `p^2`).
//!
//! [`BatchArith`] picks the device; the Paillier backend decides which batches go to it.

mod arith;
pub mod coop;
pub mod cpu;
#[cfg(feature = "gpu")]
mod fused;
#[cfg(feature = "gpu")]
pub mod gpu;
#[cfg(feature = "gpu")]
pub(crate) use gpu::limbs_build;
pub mod limbs;
mod numbers;
#[cfg(feature = "gpu")]
mod steps;

#[cfg(feature = "gpu")]
pub use fused::Shape;
pub use numbers::{FixedTable, MAX_WORDS, Modulus};

use crate::device::DevicePref;
use crate::error::KernelError;
#[cfg(feature = "gpu")]
use crate::gpu::GpuContext;

/// Private memory per invocation of the 16-bit fused program's variable-base power at
/// moduli of `words` words (`shaders/montgomery.wgsl`: `FX`, `FY`, `FZ` and the 16-entry
/// table `FTB` of `2 words` digits each, `FT` of `2 words + 2`, and `GI`): 10,252 bytes
/// at 64 words, the size that lost an H100 (`bench gpu-private` bisects the threshold).
pub fn fused_pow_private_bytes(words: usize) -> usize {
    let dig = 2 * words;
    4 * (3 * dig + 16 * dig + dig + 2 + 1)
}

/// The GPU twin.
#[cfg(feature = "gpu")]
type Gpu = gpu::GpuMontgomery;

/// Without the `gpu` feature there is no GPU twin: a type with no value.
#[cfg(not(feature = "gpu"))]
#[derive(Debug, Clone)]
enum Gpu {}

#[cfg(not(feature = "gpu"))]
impl Gpu {
    fn describe(&self) -> String {
        match *self {}
    }
    fn mul(&self, _: &Modulus, _: &[u32], _: &[u32]) -> Result<Vec<u32>, KernelError> {
        match *self {}
    }
    fn fixed_pow(
        &self,
        _: &Modulus,
        _: &FixedTable,
        _: &[u32],
        _: usize,
        _: &[u32],
    ) -> Result<Vec<u32>, KernelError> {
        match *self {}
    }
    fn pow(
        &self,
        _: &Modulus,
        _: &[u32],
        _: bool,
        _: &[u32],
        _: usize,
        _: bool,
    ) -> Result<Vec<u32>, KernelError> {
        match *self {}
    }
}

/// Where batched modular arithmetic runs.
#[derive(Debug, Clone)]
pub struct BatchArith {
    gpu: Option<Gpu>,
}

impl BatchArith {
    /// The CPU twin.
    pub fn cpu() -> Self {
        Self { gpu: None }
    }

    /// For a preference: `Auto` takes a hardware GPU (a software rasteriser is correct but
    /// slower than the CPU), `Gpu` any adapter or an error, `Cpu` the CPU.
    pub fn new(pref: DevicePref) -> Result<Self, KernelError> {
        #[cfg(feature = "gpu")]
        let gpu = GpuContext::for_preference(pref)?.map(gpu::GpuMontgomery::new);
        #[cfg(not(feature = "gpu"))]
        let gpu = crate::device::cpu_only(pref).map(|()| None)?;
        Ok(Self { gpu })
    }

    /// Whether operations run on a GPU.
    pub fn is_gpu(&self) -> bool {
        self.gpu.is_some()
    }

    /// "CPU" or the GPU's description.
    pub fn describe(&self) -> String {
        match &self.gpu {
            Some(g) => format!("GPU {}", g.describe()),
            None => "CPU".into(),
        }
    }

    /// On a hardware GPU, build the pipelines for moduli of each of `words` words in a
    /// background thread, so that their compile overlaps whatever the caller does before
    /// its first batch (a batch that comes first waits for its own pipeline only). Nothing
    /// on the CPU, nor on a software rasteriser (it compiles each entry when first used:
    /// its compiles cost the same cores). A failed build is logged; the first batch that
    /// needs the pipeline reports it.
    pub fn warm_in_background(&self, words: &[usize]) {
        #[cfg(feature = "gpu")]
        if let Some(g) = self.gpu.clone().filter(|g| !g.is_software()) {
            let words = words.to_vec();
            let spawned = std::thread::Builder::new()
                .name("kinsey-gpu-warm".into())
                .spawn(move || {
                    for w in words {
                        if let Err(e) = g.warm(w) {
                            tracing::debug!("warming the GPU pipelines for {w} words: {e}");
                        }
                    }
                });
            if let Err(e) = spawned {
                tracing::debug!("no thread to warm the GPU pipelines: {e}");
            }
        }
        #[cfg(not(feature = "gpu"))]
        let _ = words;
    }

    /// The program a variable-base power (`pow`, not wide) at moduli of `words` words runs
    /// on this device: `"limbs"`, `"fused"` or `"steps"` on a GPU, `"cpu"` without one.
    pub fn pow_program(&self, words: usize) -> &'static str {
        #[cfg(feature = "gpu")]
        if let Some(g) = &self.gpu {
            let kind = fused::Kind::Pow {
                wide: false,
                windows: 8 * words,
            };
            return match g.shape(words, kind) {
                fused::Shape::Limbs => "limbs",
                fused::Shape::Fused => "fused",
                fused::Shape::Steps => "steps",
            };
        }
        let _ = words;
        "cpu"
    }

    /// Build the pipelines for moduli of `words` words now (on the CPU: nothing).
    pub fn warm(&self, words: usize) -> Result<(), KernelError> {
        #[cfg(feature = "gpu")]
        if let Some(g) = &self.gpu {
            return g.warm(words);
        }
        #[cfg(not(feature = "gpu"))]
        let _ = words;
        Ok(())
    }

    /// `a_i b_i mod m` for numbers below `m`.
    pub fn mul(&self, m: &Modulus, a: &[u32], b: &[u32]) -> Result<Vec<u32>, KernelError> {
        let n = a.len() / m.words().max(1);
        m.check_below("left operand", a, n)?;
        m.check_below("right operand", b, n)?;
        match &self.gpu {
            Some(g) => g.mul(m, a, b),
            None => Ok(cpu::mul(m, a, b)),
        }
    }

    /// `f_i * init * prod_w table[w][digit w of e_i] mod m`: with the Paillier table, the
    /// fixed-base power `h^(e_i)` times `f_i`. Exponents are `exp_words` words each, at
    /// least the table's windows / 8 words.
    pub fn fixed_pow(
        &self,
        m: &Modulus,
        table: &FixedTable,
        exps: &[u32],
        exp_words: usize,
        factors: &[u32],
    ) -> Result<Vec<u32>, KernelError> {
        let n = factors.len() / m.words();
        m.check_below("factor", factors, n)?;
        check_exps(exps, exp_words, n)?;
        if exp_words * 8 < table.windows || table.init.len() != m.words() {
            return Err(KernelError::Input(format!(
                "a table of {} windows needs exponents of at least {} words, got {exp_words}",
                table.windows,
                table.windows.div_ceil(8)
            )));
        }
        match &self.gpu {
            Some(g) => g.fixed_pow(m, table, exps, exp_words, factors),
            None => Ok(cpu::fixed_pow(m, table, exps, exp_words, factors)),
        }
    }

    /// `x_i ^ e_i mod m`. With `wide`, each base has `2 words` words (below `m R`, checked
    /// as its high half below `m`) and is reduced mod `m` first. `exps` holds one exponent
    /// of `exp_words` words for every item, or one shared by all.
    pub fn pow(
        &self,
        m: &Modulus,
        bases: &[u32],
        wide: bool,
        exps: &[u32],
        exp_words: usize,
    ) -> Result<Vec<u32>, KernelError> {
        let w = m.words();
        let iw = if wide { 2 * w } else { w };
        if !bases.len().is_multiple_of(iw) {
            return Err(KernelError::Input(format!(
                "bases: {} words is not whole numbers of {iw}",
                bases.len()
            )));
        }
        let n = bases.len() / iw;
        if wide {
            let highs: Vec<u32> = bases
                .chunks_exact(iw)
                .flat_map(|b| &b[w..])
                .copied()
                .collect();
            m.check_below("base (high half)", &highs, n)?;
        } else {
            m.check_below("base", bases, n)?;
        }
        let shared = exps.len() == exp_words && n != 1;
        if !shared {
            check_exps(exps, exp_words, n)?;
        } else if exp_words == 0 {
            return Err(KernelError::Input("an exponent of 0 words".into()));
        }
        match &self.gpu {
            Some(g) => g.pow(m, bases, wide, exps, exp_words, shared),
            None => Ok(cpu::pow(m, bases, wide, exps, exp_words, shared)),
        }
    }
}

fn check_exps(exps: &[u32], exp_words: usize, n: usize) -> Result<(), KernelError> {
    if exp_words == 0 || exps.len() != n * exp_words {
        return Err(KernelError::Input(format!(
            "exponents: {} words for {n} items of {exp_words} words",
            exps.len()
        )));
    }
    Ok(())
}

/// Numbers for the tests of the Montgomery kernels.
#[cfg(test)]
pub(crate) mod test_numbers {
    use super::Modulus;
    use rand::Rng;

    /// A random odd modulus of `words` words with its top bit set.
    pub(crate) fn modulus(rng: &mut impl Rng, words: usize) -> Modulus {
        let mut m: Vec<u32> = (0..words).map(|_| rng.random()).collect();
        m[0] |= 1;
        m[words - 1] |= 1 << 31;
        Modulus::new(m).expect("modulus")
    }

    /// `n` random numbers below `m` (top word halved).
    pub(crate) fn below(rng: &mut impl Rng, m: &Modulus, n: usize) -> Vec<u32> {
        let w = m.words();
        (0..n * w)
            .map(|k| {
                let v: u32 = rng.random();
                if k % w == w - 1 { v >> 1 } else { v }
            })
            .collect()
    }
}
