//! `kinsey bench gpu-probe`: what the GPU machine can do, as one JSON line (the adapter's
//! features, subgroup sizes and limits, then the host link's and device memory's
//! bandwidth), the first step of a GPU figures run.

use kinsey_core::{Error, Result};
use kinsey_kernels::gpu::{GpuContext, probe};
use serde_json::json;

/// Arguments of `kinsey bench gpu-probe`.
#[derive(clap::Args, Debug)]
pub(crate) struct ProbeArgs {
    /// Bytes of each transfer (a multiple of 4).
    #[arg(long, default_value_t = 256 << 20)]
    bytes: u64,
    /// Repetitions of each transfer (the best is kept).
    #[arg(long, default_value_t = 3)]
    reps: usize,
}

/// Prints the probe as one JSON line.
pub(crate) fn run(a: &ProbeArgs) -> Result<()> {
    let ctx = GpuContext::shared().map_err(|e| Error::param("device", e.to_string()))?;
    let f = ctx.facts();
    let transfers = probe::transfers(&ctx, a.bytes, a.reps)
        .map_err(|e| Error::param("bytes", e.to_string()))?;
    let v = json!({
        "adapter": {
            "device": f.describe,
            "driver": f.driver,
            "features": f.features.iter().map(|(n, has)| json!({"feature": n, "has": has})).collect::<Vec<_>>(),
            "subgroup_min_size": f.subgroup_sizes.0,
            "subgroup_max_size": f.subgroup_sizes.1,
            "limits": f.limits.iter().map(|(n, v)| json!({"limit": n, "value": v})).collect::<Vec<_>>(),
        },
        "transfers": transfers.iter().map(|t| json!({"what": t.what, "bytes": t.bytes,
            "seconds": t.seconds, "gb_per_s": t.gb_per_s})).collect::<Vec<_>>(),
    });
    println!("{v}");
    Ok(())
}
