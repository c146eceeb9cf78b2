//! The batch size from which the Paillier backend's GPU path beats its CPU path, per
//! operation (`kinsey bench paillier --crossover`): the measurement behind `[crypto]
//! gpu_min_batch`. Each operation is timed on both paths at batches of 1, 2, 4, ... items
//! (the best of a few repetitions, on the same key and inputs); its crossover is the
//! smallest batch from which the GPU was faster at every larger batch measured, and the
//! suggested `gpu_min_batch` is the largest crossover, so that under `device = "auto"`
//! every batch sent to the GPU is one it wins.

use kinsey_core::{Error, Result};
use serde::Serialize;

/// One batch size of one operation: seconds per batch on each path.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Point {
    /// Items in the batch.
    pub batch: usize,
    /// Seconds for the batch on the CPU path (all threads).
    pub cpu_seconds: f64,
    /// Seconds for the batch on the GPU path.
    pub gpu_seconds: f64,
}

/// One operation's measurements and crossover.
#[derive(Debug, Clone, Serialize)]
pub struct OpCrossover {
    /// The operation.
    pub op: String,
    /// Batches measured, smallest first.
    pub points: Vec<Point>,
    /// The smallest batch from which the GPU was faster at every batch measured; `None`
    /// when it lost at the largest.
    pub crossover: Option<usize>,
}

/// Every operation's crossover at one key size.
#[derive(Debug, Clone, Serialize)]
pub struct Crossover {
    /// Key size.
    pub bits: u32,
    /// CPU threads of the CPU path.
    pub threads: usize,
    /// The GPU path's device, in words.
    pub device: String,
    /// Largest batch asked for.
    pub max_batch: usize,
    /// Per operation.
    pub ops: Vec<OpCrossover>,
    /// `gpu_min_batch` to use: the largest crossover, when every operation has one.
    pub suggested_min_batch: Option<usize>,
}

/// The smallest batch from which `gpu_seconds < cpu_seconds` at every point (points in
/// increasing batch order); `None` when the last point is not a win.
pub fn crossover_of(points: &[Point]) -> Option<usize> {
    let wins = |p: &Point| p.gpu_seconds < p.cpu_seconds;
    let from = points.iter().rposition(|p| !wins(p)).map_or(0, |i| i + 1);
    points.get(from).map(|p| p.batch)
}

/// The largest crossover, when every operation has one.
pub fn suggest(ops: &[OpCrossover]) -> Option<usize> {
    ops.iter()
        .map(|o| o.crossover)
        .try_fold(1usize, |m, c| c.map(|c| m.max(c)))
}

impl Crossover {
    /// An aligned text table with the suggestion.
    pub fn table(&self) -> String {
        let mut s = format!(
            "Paillier {} bits: the batch from which the GPU path beats the CPU path ({} CPU \
             thread(s)), GPU: {}\n  {:<34} {:>10} {:>8} {:>14} {:>14}\n",
            self.bits,
            self.threads,
            self.device,
            "operation",
            "crossover",
            "batch",
            "CPU items/s",
            "GPU items/s"
        );
        for o in &self.ops {
            let last = o.points.last();
            let rate = |sec: f64, b: usize| b as f64 / sec;
            s.push_str(&format!(
                "  {:<34} {:>10} {:>8} {:>14.0} {:>14.0}\n",
                o.op,
                o.crossover
                    .map_or_else(|| "none".to_string(), |c| c.to_string()),
                last.map_or(0, |p| p.batch),
                last.map_or(0.0, |p| rate(p.cpu_seconds, p.batch)),
                last.map_or(0.0, |p| rate(p.gpu_seconds, p.batch)),
            ));
        }
        match self.suggested_min_batch {
            Some(b) => s.push_str(&format!(
                "  suggested [crypto] gpu_min_batch = {b} (the largest crossover: from there \
                 every operation was faster on the GPU)\n"
            )),
            None => {
                let lost: Vec<&str> = self
                    .ops
                    .iter()
                    .filter(|o| o.crossover.is_none())
                    .map(|o| o.op.as_str())
                    .collect();
                s.push_str(&format!(
                    "  no gpu_min_batch to suggest: the GPU did not beat the CPU on {} at the \
                     largest batch measured (up to {}); keep device = \"cpu\", or measure \
                     larger batches (--max-batch)\n",
                    lost.join(", "),
                    self.max_batch
                ));
            }
        }
        s
    }
}

/// The best (smallest) seconds per call of `f` over repetitions adding up to about 50 ms
/// (at least one, at most 10).
#[cfg(feature = "paillier")]
fn best_of(f: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
    let (mut best, mut total) = (f64::INFINITY, 0.0);
    for _ in 0..10 {
        let t = std::time::Instant::now();
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

/// Measure every operation at `bits` on batches of 1, 2, 4, ... up to `max_batch` items,
/// (keys below 2048 bits only with `allow_insecure_test_keys`: tests), the GPU path on
/// `device` (`gpu`, or `auto` when a hardware GPU is there) against the CPU
/// path on all threads; an operation stops growing once one GPU batch takes more than
/// `budget_s` seconds. Every GPU result of the largest batch is checked against the CPU's.
#[cfg(feature = "paillier")]
pub fn paillier_crossover(
    bits: u32,
    allow_insecure_test_keys: bool,
    max_batch: usize,
    device: &str,
    budget_s: f64,
    rng: &mut dyn rand_core::CryptoRng,
) -> Result<Crossover> {
    use kinsey_backend::AdditiveHe;
    use kinsey_backend_paillier::{DevicePref, Paillier, parse_device};
    use rand_core::{RngCore, SeedableRng};
    let pref = parse_device(device).map_err(|e| Error::param("device", e.to_string()))?;
    if pref == DevicePref::Cpu {
        return Err(Error::param(
            "device",
            "a crossover needs a GPU path: --device gpu or auto",
        ));
    }
    if max_batch == 0 || max_batch > 1 << 20 {
        return Err(Error::param(
            "max-batch",
            format!("must be in 1 ..= 2^20, got {max_batch}"),
        ));
    }
    let cpu = Paillier::new(bits, allow_insecure_test_keys)?;
    // Every batch to the device (`min_batch` 1): the crossover is what is measured.
    let gpu = cpu.clone().with_device(pref, 1)?;
    let device = gpu.device();
    if !gpu.has_gpu() {
        return Err(Error::param(
            "device",
            format!("no GPU to measure ({device})"),
        ));
    }
    let mut rng = kinsey_backend::compare::split_rng(rng);
    let kp = cpu.keygen(&mut rng)?;
    let m: Vec<i128> = (0..max_batch as i128)
        .map(|i| (i - 100) * 1_000_003)
        .collect();
    let k: Vec<i128> = (0..max_batch).map(|_| i128::from(rng.next_u32())).collect();
    let c = cpu.encrypt_batch(&kp.public, &m, &mut rng)?;
    let mut seed = [0u8; 32];
    rng.fill_bytes(&mut seed);
    let (pk, sk) = (&kp.public, &kp.secret);
    type Op<'a> = Box<dyn Fn(&Paillier, usize) -> Result<Vec<u8>> + 'a>;
    // Each operation's output as bytes, from a fixed random stream (the same on both paths).
    let bytes = |v: Vec<kinsey_backend::Ciphertext>| v.iter().flat_map(|x| x.0.clone()).collect();
    let stream = || rand_chacha::ChaCha20Rng::from_seed(seed);
    let ops: Vec<(&str, Op<'_>)> = vec![
        (
            "encrypt",
            Box::new(|b, n| Ok(bytes(b.encrypt_batch(pk, &m[..n], &mut stream())?))),
        ),
        (
            "encrypt (key holder, CRT)",
            Box::new(|b, n| {
                Ok(bytes(b.encrypt_with_secret_batch(
                    sk,
                    &m[..n],
                    &mut stream(),
                )?))
            }),
        ),
        (
            "decrypt (CRT)",
            Box::new(|b, n| {
                let d = b.decrypt_batch(sk, &c[..n])?;
                Ok(d.iter().flat_map(|x| x.to_le_bytes()).collect())
            }),
        ),
        (
            "add",
            Box::new(|b, n| Ok(bytes(b.add_batch(pk, &c[..n], &c[..n])?))),
        ),
        (
            "multiply by 32-bit plaintexts",
            Box::new(|b, n| Ok(bytes(b.mul_plain_batch(pk, &c[..n], &k[..n])?))),
        ),
        (
            "multiply one by many (Stage 2)",
            Box::new(|b, n| Ok(bytes(b.mul_plain_one_batch(pk, &c[0], &k[..n])?))),
        ),
        (
            "re-randomise",
            Box::new(|b, n| Ok(bytes(b.rerandomize_batch(pk, &c[..n], &mut stream())?))),
        ),
    ];
    let mut out = Vec::new();
    for (name, op) in &ops {
        // Warm-up: pipelines and fixed-base tables are built on first use.
        op(&gpu, 1)?;
        op(&cpu, 1)?;
        let mut points = Vec::new();
        let mut n = 1;
        let mut last = 0;
        while n <= max_batch {
            let cpu_seconds = best_of(&mut || op(&cpu, n).map(drop))?;
            let gpu_seconds = best_of(&mut || op(&gpu, n).map(drop))?;
            points.push(Point {
                batch: n,
                cpu_seconds,
                gpu_seconds,
            });
            last = n;
            if gpu_seconds > budget_s || n == max_batch {
                break;
            }
            n = (2 * n).min(max_batch);
        }
        if op(&gpu, last)? != op(&cpu, last)? {
            return Err(Error::Numerical(format!(
                "{name}: the GPU and the CPU paths differ on a batch of {last}"
            )));
        }
        out.push(OpCrossover {
            op: (*name).to_string(),
            crossover: crossover_of(&points),
            points,
        });
    }
    Ok(Crossover {
        bits,
        threads: rayon::current_num_threads(),
        device,
        max_batch,
        suggested_min_batch: suggest(&out),
        ops: out,
    })
}

/// Without the Paillier backend there is nothing to measure.
#[cfg(not(feature = "paillier"))]
pub fn paillier_crossover(
    _bits: u32,
    _allow_insecure_test_keys: bool,
    _max_batch: usize,
    _device: &str,
    _budget_s: f64,
    _rng: &mut dyn rand_core::CryptoRng,
) -> Result<Crossover> {
    Err(Error::param(
        "backend",
        "this build has no Paillier backend (cargo feature 'paillier')",
    ))
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
    /// does not count, a loss at the largest batch means none; the suggestion is the
    /// largest crossover, none when one operation never wins.
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
        let op = |c| OpCrossover {
            op: "x".into(),
            points: Vec::new(),
            crossover: c,
        };
        assert_eq!(suggest(&[op(Some(4)), op(Some(64)), op(Some(1))]), Some(64));
        assert_eq!(suggest(&[op(Some(4)), op(None)]), None);
    }

    /// On the CI's adapter (lavapipe) the measurement runs end to end at a small key: every
    /// operation measured at batches 1 and 2, the results checked against the CPU, a
    /// table that names each operation. Fails without an adapter.
    #[cfg(feature = "paillier")]
    #[test]
    fn crossover_runs_on_the_ci_adapter() {
        let mut rng = kinsey_dp::rng::os_crypto_rng();
        let r = paillier_crossover(1024, true, 2, "gpu", 60.0, &mut rng).expect("a GPU adapter");
        assert_eq!(r.ops.len(), 7);
        for o in &r.ops {
            assert!(!o.points.is_empty() && o.points.len() <= 2, "{o:?}");
            assert!(
                o.points
                    .iter()
                    .all(|p| p.cpu_seconds > 0.0 && p.gpu_seconds > 0.0)
            );
        }
        let t = r.table();
        assert!(
            t.contains("multiply one by many") && t.contains("gpu_min_batch"),
            "{t}"
        );
        let e = paillier_crossover(1024, true, 2, "cpu", 1.0, &mut rng).expect_err("cpu");
        assert!(e.to_string().contains("GPU"), "{e}");
    }
}
