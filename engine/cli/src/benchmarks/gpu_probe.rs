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
    let most = kinsey_kernels::montgomery::MAX_WORDS;
    if let Some(w) = a.compile_words.iter().find(|&&w| !(1..=most).contains(&w)) {
        return Err(Error::param(
            "compile-words",
            format!("limbs programs of 1 to {most} words, not {w}"),
        ));
    }
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

/// Arguments of `kinsey bench gpu-private`.
#[derive(clap::Args, Debug)]
pub(crate) struct PrivateArgs {
    /// Modulus size in 32-bit words (1 to the kernel's largest).
    #[arg(long)]
    words: usize,
    /// Items in the batch.
    #[arg(long, default_value_t = 256)]
    items: usize,
}

/// Words of a generated number: xorshift from `seed` (a probe's operands, not secrets).
fn words_from(seed: &mut u64, n: usize) -> Vec<u32> {
    (0..n)
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            (*seed >> 32) as u32
        })
        .collect()
}

/// `bench gpu-private`: `items` variable-base powers at a `words`-word odd modulus on the
/// GPU (the program `KINSEY_GPU_MONTGOMERY` picks: `fused` for the bisection), compared
/// with the CPU twin. A failure, the device lost included, is `"ok": false` with the
/// reason, not an error exit: the bisection reads it and goes on.
pub(crate) fn private_memory(a: &PrivateArgs) -> Result<()> {
    use kinsey_kernels::DevicePref;
    use kinsey_kernels::montgomery::{BatchArith, MAX_WORDS, Modulus, fused_pow_private_bytes};
    if !(1..=MAX_WORDS).contains(&a.words) {
        return Err(Error::param(
            "words",
            format!("a modulus of 1 to {MAX_WORDS} words, not {}", a.words),
        ));
    }
    if a.items == 0 {
        return Err(Error::param("items", "at least one item"));
    }
    let w = a.words;
    let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ w as u64;
    let mut m = words_from(&mut seed, w);
    m[0] |= 1;
    m[w - 1] |= 1 << 31;
    let bases: Vec<u32> = (0..a.items)
        .flat_map(|_| {
            let mut b = words_from(&mut seed, w);
            b[w - 1] &= 0x3fff_ffff; // below m: m's top bit is set
            b
        })
        .collect();
    let exps = words_from(&mut seed, a.items * w);
    let m = Modulus::new(m).map_err(|e| Error::param("words", e.to_string()))?;
    let gpu =
        BatchArith::new(DevicePref::Gpu).map_err(|e| Error::param("device", e.to_string()))?;
    let program = gpu.pow_program(w);
    let want = BatchArith::cpu()
        .pow(&m, &bases, false, &exps, w)
        .map_err(|e| Error::Numerical(e.to_string()))?;
    let t = std::time::Instant::now();
    let got = gpu.pow(&m, &bases, false, &exps, w);
    let seconds = t.elapsed().as_secs_f64();
    let (ok, error) = match got {
        Ok(g) if g == want => (true, None),
        Ok(_) => (
            false,
            Some("the GPU's powers differ from the CPU's".to_string()),
        ),
        Err(e) => (false, Some(e.to_string())),
    };
    println!(
        "{}",
        json!({"device": gpu.describe(), "private_memory": {"words": w,
            "private_bytes": fused_pow_private_bytes(w), "program": program, "items": a.items,
            "ok": ok, "seconds": seconds, "error": error}})
    );
    Ok(())
}
