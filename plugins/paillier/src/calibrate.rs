//! Where `device = "auto"` sends each operation's batches, measured on the machine that
//! runs them rather than guessed: every operation is timed on the CPU path (all threads)
//! and on the GPU path at batches of 1, 2, 4, ... items, on a throwaway key of the same
//! size, and an operation goes to the GPU from its *crossover*, the smallest batch from
//! which the GPU was faster at every larger batch measured. An operation the GPU never beat
//! stays on the CPU. The GPU's results of the largest batch are compared byte for byte with
//! the CPU's first: a GPU that computes something else is an error, not a fallback.
//!
//! `kinsey bench paillier --crossover` prints the same measurement in full; under `auto`
//! the backend runs a shorter one ([`MeasurementPlan::AUTO`]) once per process and key size, and says
//! what it found in its device description.

use kinsey_backend::{AdditiveHe, BackendError, Ciphertext};
use rand_core::{RngCore, SeedableRng};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// The operations whose batches can run on the GPU, each with its own crossover.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Encryption under the public key.
    Encrypt,
    /// Encryption by the key holder (the public key's path, after the secret key's check).
    EncryptKeyHolder,
    /// Decryption (CRT).
    Decrypt,
    /// Addition of two ciphertexts (also used for adding a plaintext: the same product).
    Add,
    /// Multiplication of ciphertexts by plaintexts, one each.
    MulPlain,
    /// One ciphertext multiplied by many plaintexts (Stage 2).
    MulPlainOne,
    /// Re-randomisation.
    Rerandomize,
}

/// How many [`Op`]s there are.
pub const OPS: usize = 7;

impl Op {
    /// Every operation, in table order.
    pub const ALL: [Op; OPS] = [
        Op::Encrypt,
        Op::EncryptKeyHolder,
        Op::Decrypt,
        Op::Add,
        Op::MulPlain,
        Op::MulPlainOne,
        Op::Rerandomize,
    ];

    /// The operation in words.
    pub fn name(self) -> &'static str {
        match self {
            Op::Encrypt => "encrypt",
            Op::EncryptKeyHolder => "encrypt (key holder)",
            Op::Decrypt => "decrypt (CRT)",
            Op::Add => "add",
            Op::MulPlain => "multiply by 32-bit plaintexts",
            Op::MulPlainOne => "multiply one by many (Stage 2)",
            Op::Rerandomize => "re-randomise",
        }
    }

    /// Its place in [`Op::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// One batch size of one operation: seconds per batch on each path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// Items in the batch.
    pub batch: usize,
    /// Seconds for the batch on the CPU path (all threads).
    pub cpu_seconds: f64,
    /// Seconds for the batch on the GPU path.
    pub gpu_seconds: f64,
}

/// One operation's measurements and crossover.
#[derive(Debug, Clone, PartialEq)]
pub struct OpCrossover {
    /// The operation.
    pub op: Op,
    /// Batches measured, smallest first.
    pub points: Vec<Point>,
    /// The smallest batch from which the GPU was faster at every batch measured; `None`
    /// when it lost at the largest.
    pub crossover: Option<usize>,
}

/// The smallest batch from which `gpu_seconds < cpu_seconds` at every point (points in
/// increasing batch order); `None` when the last point is not a win.
pub fn crossover_of(points: &[Point]) -> Option<usize> {
    let wins = |p: &Point| p.gpu_seconds < p.cpu_seconds;
    let from = points.iter().rposition(|p| !wins(p)).map_or(0, |i| i + 1);
    points.get(from).map(|p| p.batch)
}

/// How long a measurement may grow.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeasurementPlan {
    /// Largest batch measured.
    pub max_batch: usize,
    /// An operation stops growing once one batch takes longer than this on either path.
    pub budget_s: f64,
    /// Stop growing once the GPU has won at this many batch sizes in a row (`None`: measure
    /// up to `max_batch` or the budget). A GPU that wins at a batch keeps winning at larger
    /// ones once it is full, so two wins in a row settle the crossover.
    pub wins_to_stop: Option<usize>,
}

impl MeasurementPlan {
    /// What `device = "auto"` runs when the configuration gives no `gpu_min_batch`: batches
    /// up to 4096 items, a quarter of a second per batch, two wins in a row to settle.
    pub const AUTO: MeasurementPlan = MeasurementPlan {
        max_batch: 4096,
        budget_s: 0.25,
        wins_to_stop: Some(2),
    };
}

/// A finished measurement: per operation, and how long it took.
#[derive(Debug, Clone, PartialEq)]
pub struct Crossovers {
    /// Key size measured.
    pub bits: u32,
    /// The GPU, in words.
    pub device: String,
    /// Per operation, in [`Op::ALL`] order.
    pub ops: Vec<OpCrossover>,
    /// Seconds the measurement took (key generation and warm-up included).
    pub seconds: f64,
}

impl Crossovers {
    /// The smallest batch of `op` sent to the GPU (`usize::MAX`: never).
    pub fn threshold(&self, op: Op) -> usize {
        self.ops
            .iter()
            .find(|o| o.op == op)
            .and_then(|o| o.crossover)
            .unwrap_or(usize::MAX)
    }

    /// What it decided, in words: per operation the batch from which it runs on the GPU.
    pub fn describe(&self) -> String {
        let parts: Vec<String> = self
            .ops
            .iter()
            .map(|o| match o.crossover {
                Some(c) => format!("{} from {c}", o.op.name()),
                None => format!("{} never", o.op.name()),
            })
            .collect();
        format!(
            "per operation, the batch from which the GPU beat the CPU on this machine \
             (measured in {:.1} s): {}",
            self.seconds,
            parts.join(", ")
        )
    }
}

/// The best (smallest) seconds per call of `f` over repetitions adding up to about 50 ms
/// (at least one, at most 10).
fn best_of(f: &mut dyn FnMut() -> Result<(), BackendError>) -> Result<f64, BackendError> {
    let (mut best, mut total) = (f64::INFINITY, 0.0);
    for _ in 0..10 {
        let t = Instant::now();
        f()?;
        let s = t.elapsed().as_secs_f64();
        best = best.min(s);
        total += s;
        if total >= 0.05 {
            break;
        }
    }
    Ok(best)
}

/// Times every operation on `cpu` (the Paillier backend with every batch on the CPU) and
/// `gpu` (the same with every batch on the GPU: built with `min_batch` 1 or `device =
/// "gpu"`), both for `bits`-bit keys, with a fresh key from `rng`, as `plan` says. Errors
/// when the two paths' results differ.
pub fn measure(
    cpu: &dyn AdditiveHe,
    gpu: &dyn AdditiveHe,
    bits: u32,
    plan: &MeasurementPlan,
    rng: &mut dyn rand_core::CryptoRng,
) -> Result<Crossovers, BackendError> {
    measure_reporting(cpu, gpu, bits, plan, rng, &mut |_| {})
}

/// [`measure`], handing each operation to `done` as soon as it is measured and checked, so
/// that a run stopped part way (a time limit) still shows the operations it finished.
pub fn measure_reporting(
    cpu: &dyn AdditiveHe,
    gpu: &dyn AdditiveHe,
    bits: u32,
    plan: &MeasurementPlan,
    rng: &mut dyn rand_core::CryptoRng,
    done: &mut dyn FnMut(&OpCrossover),
) -> Result<Crossovers, BackendError> {
    let start = Instant::now();
    if plan.max_batch == 0 || plan.max_batch > 1 << 20 {
        return Err(BackendError::Other(format!(
            "GPU crossover: the largest batch must be in 1 ..= 2^20, got {}",
            plan.max_batch
        )));
    }
    let mut rng = kinsey_backend::compare::split_rng(rng);
    let kp = cpu.keygen(&mut rng)?;
    let max = plan.max_batch;
    let m: Vec<i128> = (0..max as i128).map(|i| (i - 100) * 1_000_003).collect();
    let k: Vec<i128> = (0..max).map(|_| i128::from(rng.next_u32())).collect();
    let c = cpu.encrypt_batch(&kp.public, &m, &mut rng)?;
    let mut seed = [0u8; 32];
    rng.fill_bytes(&mut seed);
    let (pk, sk) = (&kp.public, &kp.secret);
    // Each operation's output as bytes, from a fixed random stream (the same on both paths).
    let bytes = |v: Vec<Ciphertext>| -> Vec<u8> { v.into_iter().flat_map(|x| x.0).collect() };
    let stream = || rand_chacha::ChaCha20Rng::from_seed(seed);
    let run = |b: &dyn AdditiveHe, op: Op, n: usize| -> Result<Vec<u8>, BackendError> {
        Ok(match op {
            Op::Encrypt => bytes(b.encrypt_batch(pk, &m[..n], &mut stream())?),
            Op::EncryptKeyHolder => {
                bytes(b.encrypt_with_secret_batch(sk, &m[..n], &mut stream())?)
            }
            Op::Decrypt => b
                .decrypt_batch(sk, &c[..n])?
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect(),
            Op::Add => bytes(b.add_batch(pk, &c[..n], &c[..n])?),
            Op::MulPlain => bytes(b.mul_plain_batch(pk, &c[..n], &k[..n])?),
            Op::MulPlainOne => bytes(b.mul_plain_one_batch(pk, &c[0], &k[..n])?),
            Op::Rerandomize => bytes(b.rerandomize_batch(pk, &c[..n], &mut stream())?),
        })
    };
    let mut ops = Vec::with_capacity(OPS);
    for op in Op::ALL {
        // Warm-up: pipelines and fixed-base tables are built on first use.
        run(gpu, op, 1)?;
        run(cpu, op, 1)?;
        let (mut points, mut n, mut wins) = (Vec::new(), 1, 0);
        loop {
            let cpu_seconds = best_of(&mut || run(cpu, op, n).map(drop))?;
            let gpu_seconds = best_of(&mut || run(gpu, op, n).map(drop))?;
            points.push(Point {
                batch: n,
                cpu_seconds,
                gpu_seconds,
            });
            wins = if gpu_seconds < cpu_seconds {
                wins + 1
            } else {
                0
            };
            let settled = plan.wins_to_stop.is_some_and(|w| wins >= w);
            if settled || n == max || gpu_seconds.max(cpu_seconds) > plan.budget_s {
                break;
            }
            n = (2 * n).min(max);
        }
        if run(gpu, op, n)? != run(cpu, op, n)? {
            return Err(BackendError::Other(format!(
                "GPU crossover, {}: the GPU and the CPU paths differ on a batch of {n} (the GPU \
                 is not used)",
                op.name()
            )));
        }
        let o = OpCrossover {
            op,
            crossover: crossover_of(&points),
            points,
        };
        done(&o);
        ops.push(o);
    }
    Ok(Crossovers {
        bits,
        device: gpu.device(),
        ops,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// Measurements made in this process, by key size and device: parties running as threads
/// of one process, or a backend built again, measure once.
type Measured = Vec<((u32, String), Arc<Crossovers>)>;

/// [`measure`] with [`MeasurementPlan::AUTO`] and a key from the OS, once per process for each key
/// size and adapter (`gpu` sends every batch to the GPU).
pub(crate) fn measured_once(
    cpu: &dyn AdditiveHe,
    gpu: &dyn AdditiveHe,
    bits: u32,
    adapter: &str,
) -> Result<Arc<Crossovers>, BackendError> {
    static CACHE: OnceLock<Mutex<Measured>> = OnceLock::new();
    let id = (bits, adapter.to_string());
    // The lock is held while measuring: a second backend waits and takes the result.
    let mut cache = CACHE.get_or_init(Mutex::default).lock().map_err(|_| {
        BackendError::Other("GPU crossover: an earlier measurement panicked".into())
    })?;
    if let Some((_, c)) = cache.iter().find(|(k, _)| *k == id) {
        return Ok(Arc::clone(c));
    }
    let mut os = rand_chacha::ChaCha20Rng::from_os_rng();
    let c = Arc::new(measure(cpu, gpu, bits, &MeasurementPlan::AUTO, &mut os)?);
    cache.push((id, Arc::clone(&c)));
    Ok(c)
}

/// A measurement with made-up crossovers (operation `i`'s is `crossover(i)`), for tests.
#[cfg(test)]
pub(crate) fn made_up(crossover: impl Fn(usize) -> Option<usize>, seconds: f64) -> Crossovers {
    let ops = Op::ALL
        .iter()
        .enumerate()
        .map(|(i, &op)| OpCrossover {
            op,
            points: Vec::new(),
            crossover: crossover(i),
        })
        .collect();
    Crossovers {
        bits: 2048,
        device: "test".into(),
        ops,
        seconds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(wins: &[bool]) -> Vec<Point> {
        wins.iter()
            .enumerate()
            .map(|(i, &w)| Point {
                batch: 1 << i,
                cpu_seconds: 1.0,
                gpu_seconds: if w { 0.5 } else { 2.0 },
            })
            .collect()
    }

    /// The crossover is where the GPU starts winning for good: a win followed by a loss
    /// does not count, a loss at the largest batch means none.
    #[test]
    fn crossover_is_the_start_of_the_last_run_of_wins() {
        assert_eq!(crossover_of(&pts(&[false, false, true, true])), Some(4));
        assert_eq!(crossover_of(&pts(&[true, true])), Some(1));
        assert_eq!(
            crossover_of(&pts(&[true, false, true, false, true])),
            Some(16)
        );
        assert_eq!(crossover_of(&pts(&[false, true, false])), None);
        assert_eq!(crossover_of(&[]), None);
    }

    /// Each operation's threshold is its own crossover, `usize::MAX` where the GPU never
    /// won, and the description names every operation.
    #[test]
    fn thresholds_are_per_operation() {
        let c = made_up(|i| (i % 3 != 2).then_some(1 << i), 1.25);
        assert_eq!(c.threshold(Op::Encrypt), 1);
        assert_eq!(c.threshold(Op::EncryptKeyHolder), 2);
        assert_eq!(c.threshold(Op::Decrypt), usize::MAX);
        assert_eq!(c.threshold(Op::Add), 8);
        assert_eq!(c.threshold(Op::Rerandomize), 64);
        let d = c.describe();
        assert!(
            d.contains("decrypt (CRT) never") && d.contains("add from 8"),
            "{d}"
        );
        assert!(d.contains("1.2 s") || d.contains("1.3 s"), "{d}");
        for (i, op) in Op::ALL.iter().enumerate() {
            assert_eq!(op.index(), i);
        }
    }
}
