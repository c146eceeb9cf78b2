//! `kinsey bench gpu-probe`: what the GPU machine can do, as one JSON line (the adapter's
//! features, subgroup sizes and limits, the host link's and device memory's bandwidth,
//! the compile time of the heaviest shaders and what the pipeline cache on disk did), the
//! first step of a GPU figures run.

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
    /// Sizes in 32-bit words of the limbs programs to compile and time (64: the moduli
    /// p^2 of Paillier-2048's decryption; 128: its n^2). Empty: none.
    #[arg(long, value_delimiter = ',', default_value = "64,128")]
    compile_words: Vec<usize>,
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
    // Then one line per compile as it finishes (a compile that runs past the step's limit
    // leaves the lines before it), and what the disk cache read at start-up and holds now.
    probe::compiles(&ctx, &a.compile_words, &mut |c| {
        println!(
            "{}",
            json!({"device": f.describe, "compile": {"what": c.what,
                "first_seconds": c.first_seconds, "again_seconds": c.again_seconds}})
        );
    })
    .map_err(|e| Error::param("compile-words", e.to_string()))?;
    let cache = ctx.pipeline_cache().map(
        |c| json!({"path": c.path, "loaded_bytes": c.loaded_bytes, "saved_bytes": c.saved_bytes}),
    );
    println!(
        "{}",
        json!({ "device": f.describe, "pipeline_cache": cache })
    );
    Ok(())
}
