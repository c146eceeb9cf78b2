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

/// The largest crossover, when every operation has one.
pub fn suggest(ops: &[OpCrossover]) -> Option<usize> {
    ops.iter()
        .map(|o| o.crossover)
        .try_fold(1usize, |m, c| c.map(|c| m.max(c)))
}

/// Measure every operation at `bits` on batches of 1, 2, 4, ... up to `max_batch` items,
/// (keys below 2048 bits only with `allow_insecure_test_keys`: tests), the GPU path on
/// `device` (`gpu`, or `auto` when a hardware GPU is there) against the CPU
/// path on all threads; an operation stops growing once one batch takes more than
/// `budget_s` seconds. Every GPU result of the largest batch is checked against the CPU's.
/// The measurement is the Paillier backend's own ([`kinsey_backend_paillier::calibrate`],
/// what `device = "auto"` runs, shorter, when no `gpu_min_batch` is set).
#[cfg(feature = "paillier")]
pub fn paillier_crossover(
    bits: u32,
    allow_insecure_test_keys: bool,
    max_batch: usize,
    device: &str,
    budget_s: f64,
    rng: &mut dyn rand_core::CryptoRng,
    on_op: &mut dyn FnMut(&OpCrossover),
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
    // Each operation to `on_op` as it finishes: a run stopped by a time limit keeps what
    // it reported (the whole measurement comes only at the end).
    let c = calibrate::measure_reporting(&cpu, &gpu, bits, &plan, rng, &mut |o| on_op(&of(o)))?;
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
pub fn paillier_crossover(
    _bits: u32,
    _allow_insecure_test_keys: bool,
    _max_batch: usize,
    _device: &str,
    _budget_s: f64,
    _rng: &mut dyn rand_core::CryptoRng,
    _on_op: &mut dyn FnMut(&OpCrossover),
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
    }

    /// On the CI's adapter (lavapipe) the measurement runs end to end at a small key: every
    /// operation measured at batches 1 and 2, the results checked against the CPU, a
    /// table that names each operation. Fails without an adapter.
    #[cfg(feature = "paillier")]
    #[test]
    fn crossover_runs_on_the_ci_adapter() {
        let mut rng = kinsey_dp::rng::os_crypto_rng();
        let mut reported = 0;
        let r = paillier_crossover(1024, true, 2, "gpu", 60.0, &mut rng, &mut |_| reported += 1)
            .expect("a GPU adapter");
        assert_eq!(r.ops.len(), 7);
        assert_eq!(reported, 7);
        for o in &r.ops {
            assert!(!o.points.is_empty() && o.points.len() <= 2, "{o:?}");
            assert!(
                o.points
                    .iter()
                    .all(|p| p.cpu_seconds > 0.0 && p.gpu_seconds > 0.0)
            );
        }
        assert!(
            r.ops.iter().any(|o| o.op.contains("multiply one by many")),
            "{r:?}"
        );
        let e =
            paillier_crossover(1024, true, 2, "cpu", 1.0, &mut rng, &mut |_| {}).expect_err("cpu");
        assert!(e.to_string().contains("GPU"), "{e}");
    }
}
