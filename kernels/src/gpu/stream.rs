//! How the streaming kernels (the decayed sums' draws, levels and sums) use the device, and
//! where their time goes.
//!
//! * **Pipelined** (the default): a group's draws are submitted before the previous
//!   group's are finished, the host waits on one submission at a time (never on all of
//!   them), the rare slow draws are finished on every core and patched in with one upload
//!   and one dispatch, and results are copied from the mapped buffer straight into the
//!   caller's slices on every core.
//! * **Serial** (`KINSEY_GPU_PIPELINE=serial`, read once per process): the way before
//!   (one group at a time, waits on all submitted work, one 8-byte upload per slow draw,
//!   slow draws on one thread, results copied through a fresh vector), kept so that one
//!   binary measures both on the same warm machine (A/B). The same bits either way.
//!
//! `KINSEY_GPU_TRACE=1` adds up the host's time per [`Stage`] (see [`trace`]); off, a
//! stage costs one branch.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Whether `KINSEY_GPU_PIPELINE=serial` asks for the serial way (see the module).
pub fn serial() -> bool {
    static SERIAL: OnceLock<bool> = OnceLock::new();
    *SERIAL.get_or_init(|| match std::env::var("KINSEY_GPU_PIPELINE").as_deref() {
        Ok("serial") => true,
        Ok("pipelined") | Err(_) => false,
        Ok(other) => {
            tracing::warn!("KINSEY_GPU_PIPELINE = '{other}' ignored (pipelined or serial)");
            false
        }
    })
}

/// A part of the host's work on a stream of groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Recording and submitting a group's draws.
    DrawsSubmit,
    /// Waiting for a group's list of slow draws.
    DrawsWait,
    /// Finishing the slow draws on the host.
    SlowDraws,
    /// Writing the finished slow draws into the device's draws.
    Patch,
    /// Uploading a group's values and submitting its passes.
    Submit,
    /// Waiting for a group's results.
    ReadWait,
    /// Copying results into the caller's slices.
    CopyOut,
}

/// Every stage, in the order of the trace.
pub const STAGES: [Stage; 7] = [
    Stage::DrawsSubmit,
    Stage::DrawsWait,
    Stage::SlowDraws,
    Stage::Patch,
    Stage::Submit,
    Stage::ReadWait,
    Stage::CopyOut,
];

impl Stage {
    /// The stage's name in the trace.
    pub fn name(self) -> &'static str {
        match self {
            Stage::DrawsSubmit => "draws_submit",
            Stage::DrawsWait => "draws_wait",
            Stage::SlowDraws => "slow_draws",
            Stage::Patch => "patch",
            Stage::Submit => "submit",
            Stage::ReadWait => "read_wait",
            Stage::CopyOut => "copy_out",
        }
    }
}

/// Nanoseconds and calls per stage (indexed as [`STAGES`]).
static NANOS: [AtomicU64; 7] = [const { AtomicU64::new(0) }; 7];
static CALLS: [AtomicU64; 7] = [const { AtomicU64::new(0) }; 7];

/// Whether `KINSEY_GPU_TRACE` is set (read once).
fn tracing_on() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("KINSEY_GPU_TRACE").is_some_and(|v| v != "0"))
}

/// `f()`, its time added to `stage` when tracing is on.
pub fn timed<T>(stage: Stage, f: impl FnOnce() -> T) -> T {
    if !tracing_on() {
        return f();
    }
    let t = Instant::now();
    let out = f();
    let k = stage as usize;
    NANOS[k].fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
    CALLS[k].fetch_add(1, Ordering::Relaxed);
    out
}

/// The trace so far: per stage its name, seconds and calls (all zero unless
/// `KINSEY_GPU_TRACE` is set).
pub fn trace() -> Vec<(&'static str, f64, u64)> {
    STAGES
        .iter()
        .map(|&s| {
            let k = s as usize;
            (
                s.name(),
                NANOS[k].load(Ordering::Relaxed) as f64 * 1e-9,
                CALLS[k].load(Ordering::Relaxed),
            )
        })
        .collect()
}

/// Clears the trace (between the runs of a benchmark).
pub fn reset_trace() {
    for k in 0..STAGES.len() {
        NANOS[k].store(0, Ordering::Relaxed);
        CALLS[k].store(0, Ordering::Relaxed);
    }
}

/// Copies `src` into `dsts` (laid end to end), on every core when it is large.
pub fn scatter_into<T: Copy + Send + Sync>(src: &[T], dsts: Vec<&mut [T]>) {
    use rayon::prelude::*;
    /// Values per parallel piece (below this one thread copies).
    const PIECE: usize = 1 << 16;
    let mut pieces = Vec::with_capacity(dsts.len());
    let mut at = 0;
    for d in dsts {
        let n = d.len().min(src.len().saturating_sub(at));
        let (d, _) = d.split_at_mut(n);
        pieces.push((at, d));
        at += n;
    }
    if serial() || src.len() < 2 * PIECE {
        for (at, d) in pieces {
            d.copy_from_slice(&src[at..at + d.len()]);
        }
        return;
    }
    // Split large slices so that every core has work even for one big slice.
    let parts: Vec<(usize, &mut [T])> = pieces
        .into_iter()
        .flat_map(|(at, d)| {
            d.chunks_mut(PIECE)
                .enumerate()
                .map(move |(i, c)| (at + i * PIECE, c))
        })
        .collect();
    parts
        .into_par_iter()
        .for_each(|(at, d)| d.copy_from_slice(&src[at..at + d.len()]));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values land in the slices laid end to end, small and large, a slice longer than the
    /// source keeping its tail.
    #[test]
    fn scatter_lays_slices_end_to_end() {
        for n in [0usize, 5, 300_000] {
            let src: Vec<u64> = (0..n as u64).collect();
            let mut a = vec![u64::MAX; n / 3];
            let mut b = vec![u64::MAX; n - n / 3 + 2];
            scatter_into(&src, vec![&mut a, &mut b]);
            assert!(a.iter().enumerate().all(|(i, &v)| v == i as u64));
            let k = n / 3;
            assert!(
                b[..n - k]
                    .iter()
                    .enumerate()
                    .all(|(i, &v)| v == (k + i) as u64)
            );
            assert_eq!(&b[n - k..], &[u64::MAX; 2]);
        }
    }

    /// A stage's time and calls add up when tracing is on, and stay zero when it is off.
    #[test]
    fn stages_add_up_only_when_tracing() {
        let before = trace();
        let x = timed(Stage::CopyOut, || 41 + 1);
        assert_eq!(x, 42);
        let after = trace();
        let k = Stage::CopyOut as usize;
        let called = after[k].2 - before[k].2;
        assert_eq!(called, u64::from(tracing_on()));
        assert_eq!(after.len(), STAGES.len());
    }
}
