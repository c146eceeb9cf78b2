//! The batch size from which the Paillier backend's GPU path beats its CPU path, per
//! operation (`kinsey bench paillier --crossover`). Each operation is timed on both paths at
//! batches of 1, 2, 4, ... items (the best of a few repetitions, on the same key and
//! inputs); its crossover is the smallest batch from which the GPU was faster at every
//! larger batch measured. The measurement is the backend's own: under `device = "auto"`
//! without `[crypto] gpu_min_batch` it runs a shorter one at start and sends each
//! operation's batches from its crossover. A single `gpu_min_batch` that pins one threshold
//! for every operation is suggested too: the largest crossover, so that every batch sent to
//! the GPU is one it wins.

use kinsey_core::{Error, Result};
use serde::Serialize;

/// One batch size of one operation: seconds per batch on each path.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub(crate) struct Point {
    /// Items in the batch.
    pub(crate) batch: usize,
    /// Seconds for the batch on the CPU path (all threads).
    pub(crate) cpu_seconds: f64,
    /// Seconds for the batch on the GPU path.
    pub(crate) gpu_seconds: f64,
}

/// One operation's measurements and crossover.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct OpCrossover {
    /// The operation.
    pub(crate) op: String,
    /// Batches measured, smallest first.
    pub(crate) points: Vec<Point>,
    /// The smallest batch from which the GPU was faster at every batch measured; `None`
    /// when it lost at the largest.
    pub(crate) crossover: Option<usize>,
}

/// Every operation's crossover at one key size.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Crossover {
    /// Key size.
    pub(crate) bits: u32,
    /// CPU threads of the CPU path.
    pub(crate) threads: usize,
    /// The GPU path's device, in words.
    pub(crate) device: String,
    /// Largest batch asked for.
    pub(crate) max_batch: usize,
    /// Per operation.
    pub(crate) ops: Vec<OpCrossover>,
    /// `gpu_min_batch` to use: the largest crossover, when every operation has one.
    pub(crate) suggested_min_batch: Option<usize>,
}

impl OpCrossover {
    /// One line: the operation, its crossover and every batch's rates on both paths.
    pub(crate) fn line(&self, bits: u32) -> String {
        let points: Vec<String> = self
            .points
            .iter()
            .map(|p| {
                format!(
                    "{}: {:.0} / {:.0}",
                    p.batch,
                    p.batch as f64 / p.cpu_seconds,
                    p.batch as f64 / p.gpu_seconds
                )
            })
            .collect();
        format!(
            "crossover {bits} bits, {}: from {} (batch: CPU / GPU items/s; {})",
            self.op,
            self.crossover
                .map_or_else(|| "none".to_string(), |c| c.to_string()),
            points.join(", ")
        )
    }
}

/// The largest crossover, when every operation has one.
#[cfg_attr(not(feature = "paillier"), allow(dead_code))]
pub(crate) fn suggest(ops: &[OpCrossover]) -> Option<usize> {
    ops.iter()
        .map(|o| o.crossover)
        .try_fold(1usize, |m, c| c.map(|c| m.max(c)))
}

impl Crossover {
    /// An aligned text table with the suggestion.
    pub(crate) fn table(&self) -> String {
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

/// Measure every operation at `bits` on batches of 1, 2, 4, ... up to `max_batch` items,
/// (keys below 2048 bits only with `allow_insecure_test_keys`: tests), the GPU path on
/// `device` (`gpu`, or `auto` when a hardware GPU is there) against the CPU
/// path on all threads; an operation stops growing once one batch takes more than
/// `budget_s` seconds. Every GPU result of the largest batch is checked against the CPU's.
/// The measurement is the Paillier backend's own ([`kinsey_backend_paillier::calibrate`],
/// what `device = "auto"` runs, shorter, when no `gpu_min_batch` is set).
#[cfg(feature = "paillier")]
pub(crate) fn paillier_crossover(
    bits: u32,
    allow_insecure_test_keys: bool,
    max_batch: usize,
    device: &str,
    budget_s: f64,
    rng: &mut dyn rand_core::CryptoRng,
) -> Result<Crossover> {
    use kinsey_backend_paillier::{DevicePref, MeasurementPlan, Paillier, calibrate, parse_device};
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
    if !gpu.has_gpu() {
        return Err(Error::param(
            "device",
            format!("no GPU to measure ({})", gpu.device()),
        ));
    }
    let plan = MeasurementPlan {
        max_batch,
        budget_s,
        wins_to_stop: None,
    };
    let of = |o: &calibrate::OpCrossover| OpCrossover {
        op: o.op.name().to_string(),
        points: o
            .points
            .iter()
            .map(|p| Point {
                batch: p.batch,
                cpu_seconds: p.cpu_seconds,
                gpu_seconds: p.gpu_seconds,
            })
            .collect(),
        crossover: o.crossover,
    };
    // One line per operation on stderr as it finishes: a run stopped by a time limit keeps
    // what it measured (the table and the JSON come only at the end).
    let c = calibrate::measure_reporting(&cpu, &gpu, bits, &plan, rng, &mut |o| {
        eprintln!("{}", of(o).line(bits))
    })?;
    let ops: Vec<OpCrossover> = c.ops.iter().map(of).collect();
    Ok(Crossover {
        bits,
        threads: rayon::current_num_threads(),
        device: c.device,
        max_batch,
        suggested_min_batch: suggest(&ops),
        ops,
    })
}

/// Without the Paillier backend there is nothing to measure.
#[cfg(not(feature = "paillier"))]
pub(crate) fn paillier_crossover(
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

    /// The suggestion is the largest crossover (the backend's own measurement decides each
    /// crossover: `calibrate`'s tests), none when one operation never wins.
    #[test]
    fn the_suggestion_is_the_largest_crossover() {
        let op = |c| OpCrossover {
            op: "x".into(),
            points: Vec::new(),
            crossover: c,
        };
        assert_eq!(suggest(&[op(Some(4)), op(Some(64)), op(Some(1))]), Some(64));
        assert_eq!(suggest(&[op(Some(4)), op(None)]), None);
        let o = OpCrossover {
            op: "add".into(),
            points: vec![Point {
                batch: 4,
                cpu_seconds: 0.5,
                gpu_seconds: 0.25,
            }],
            crossover: Some(4),
        };
        assert_eq!(
            o.line(2048),
            "crossover 2048 bits, add: from 4 (batch: CPU / GPU items/s; 4: 8 / 16)"
        );
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
