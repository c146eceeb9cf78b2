//! `kinsey bench decay`: a decayed sum's chunked stream on a generated series, with the
//! machine's two floors on the same chunks (reading and adding the values, and the noise's
//! keystream).

use kinsey_core::{Error, Result};
use kinsey_kernels::DevicePref;
use std::time::Instant;

/// What `bench decay` streams.
#[derive(Debug, Clone)]
pub struct DecayBench {
    /// Length of the generated series.
    pub steps: u64,
    /// window | exponential | running | polynomial | laplace | rr | allwindow.
    pub model: String,
    /// Window length in steps (window, laplace, rr).
    pub window: u64,
    /// Decay per step (exponential).
    pub alpha: f64,
    /// tree, kary or best, as `kinsey decay --mechanism`.
    pub mechanism: String,
    /// Children per node of the kary mechanism (default: the least stated error).
    pub arity: Option<u32>,
    /// Gaussian noise under this zCDP budget instead of pure DP at epsilon 1.
    pub rho: Option<f64>,
    /// Steps per chunk (memory is one chunk, independent of the stream length).
    pub chunk: usize,
    /// Where the noise is drawn.
    pub device: DevicePref,
}

/// Throughput of a decayed sum's chunked stream on a generated series.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DecayThroughput {
    /// The mechanism, in words.
    pub model: String,
    /// Steps streamed.
    pub steps: u64,
    /// Seconds in the mechanism (without generating the input).
    pub seconds: f64,
    /// Steps per second.
    pub steps_per_second: f64,
    /// Peak resident memory of the process, MiB.
    pub peak_rss_mib: f64,
    /// Threads of the pool.
    pub threads: usize,
    /// Where the noise was drawn.
    pub device: String,
    /// Time generating the input (not included in `seconds`).
    pub generate_seconds: f64,
    /// One pass over the same chunks that only reads the values and adds them (all
    /// threads): the memory-bound floor of any decayed sum.
    pub read_add_steps_per_second: f64,
    /// The ChaCha20 keystream alone, two 64-bit words per counter, all threads: the floor
    /// of the noise.
    pub keystream_steps_per_second: f64,
    /// Noise counters per step: a tree releases `2 - 2^-h` nodes per step (window,
    /// exponential, running; the exponential sum draws only the left ones but reads
    /// every node's keystream); the per-output baselines one.
    pub counters_per_step: usize,
    /// How the GPU path ran: `pipelined`, or `serial` under `KINSEY_GPU_PIPELINE=serial`
    /// (the A/B switch of `kinsey_kernels::gpu::stream`); `cpu` without a GPU.
    pub pipeline: String,
    /// The host's seconds and calls per stage of the GPU path, under `KINSEY_GPU_TRACE=1`
    /// (empty otherwise).
    pub host_stages: Vec<HostStage>,
}

/// One stage of the GPU path's host work (`kinsey_kernels::gpu::stream::Stage`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct HostStage {
    /// The stage.
    pub stage: &'static str,
    /// Its seconds.
    pub seconds: f64,
    /// Its calls.
    pub calls: u64,
}

/// The chunked stream (`DecayedSum::stream`) over `steps` generated values in `{0..3}`
/// (bits for `rr`), chunk by chunk: memory is one chunk, whatever the length.
pub fn decay_throughput(a: &DecayBench) -> Result<DecayThroughput> {
    use kinsey_decay::{self as decay, ModelParams, Public};
    if a.steps == 0 {
        return Err(Error::param("steps", "must be at least 1"));
    }
    // A chunk of 0 steps would never advance; one past 2^28 values is 2 GiB.
    if !(1..=1 << 28).contains(&a.chunk) {
        return Err(Error::param(
            "chunk",
            format!("must be 1 to 2^28 steps, got {}", a.chunk),
        ));
    }
    let params = ModelParams {
        window: Some(a.window),
        windows: Some(vec![60, a.window]),
        alpha: Some(a.alpha),
        c: Some(1.5),
        horizon: Some(a.steps),
        mechanism: Some(a.mechanism.clone()),
        arity: a.arity,
        ..ModelParams::default()
    };
    let zcdp = a
        .rho
        .map(|rho| decay::zcdp::Zcdp::new(rho, None))
        .transpose()?;
    let public = Public {
        zcdp,
        epsilon: 1.0,
        bound: 3.0,
        // OS-keyed: no data digest is ever asked for.
        key: decay::noise::key(None, "bench", || {
            Err(Error::param("seed", "the benchmark is not seeded"))
        })?,
    };
    let mut m = decay::build(&a.model, &params, &public)?;
    let device = m
        .use_device(a.device)?
        .map_or_else(|| "CPU".into(), |g| format!("GPU {g}"));
    let shift: u32 = if a.model == "rr" { 63 } else { 62 };
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    kinsey_kernels::gpu::stream::reset_trace();
    let (mut gen_s, mut done, mut checksum) = (0.0, 0u64, 0.0);
    let (mut xs, mut out) = (Vec::with_capacity(a.chunk), Vec::new());
    let t = Instant::now();
    while done < a.steps {
        let len = (a.steps - done).min(a.chunk as u64) as usize;
        let g = Instant::now();
        generate(&mut state, shift, len, &mut xs);
        gen_s += g.elapsed().as_secs_f64();
        m.stream_into(&xs, &mut out)?;
        checksum += out.first().and_then(|c| c.last()).copied().unwrap_or(0.0);
        done += len as u64;
    }
    let seconds = t.elapsed().as_secs_f64() - gen_s;
    std::hint::black_box(checksum);
    let host_stages = kinsey_kernels::gpu::stream::trace()
        .into_iter()
        .filter(|s| s.2 > 0)
        .map(|(stage, seconds, calls)| HostStage {
            stage,
            seconds,
            calls,
        })
        .collect();
    let pipeline = match (
        device.starts_with("GPU"),
        kinsey_kernels::gpu::stream::serial(),
    ) {
        (false, _) => "cpu",
        (true, false) => "pipelined",
        (true, true) => "serial",
    };
    // Peak memory of the decayed sum, before the floors allocate their own buffers.
    let peak_rss_mib = peak_rss_mib();
    let counters_per_step = match a.model.as_str() {
        "laplace" | "rr" => 1,
        _ => 2,
    };
    let (read_add, keystream) = machine_limits(a, &public.key, shift, counters_per_step)?;
    Ok(DecayThroughput {
        model: m.calibration().model,
        steps: a.steps,
        seconds,
        steps_per_second: a.steps as f64 / seconds,
        peak_rss_mib,
        threads: rayon::current_num_threads(),
        device,
        generate_seconds: gen_s,
        read_add_steps_per_second: a.steps as f64 / read_add,
        keystream_steps_per_second: a.steps as f64 / keystream,
        counters_per_step,
        pipeline: pipeline.into(),
        host_stages,
    })
}

/// The next `len` values of the bench's input (xorshift64, values `state >> shift`) into `xs`.
fn generate(state: &mut u64, shift: u32, len: usize, xs: &mut Vec<f64>) {
    xs.clear();
    xs.extend((0..len).map(|_| {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        (*state >> shift) as f64
    }));
}

/// Seconds of the two floors on the same generated chunks: reading and adding the values,
/// and the keystream of `counters` noise counters (two words each) per step, both on all
/// threads.
fn machine_limits(
    a: &DecayBench,
    key: &[u8; 32],
    shift: u32,
    counters: usize,
) -> Result<(f64, f64)> {
    use rayon::prelude::*;
    let noise = kinsey_decay::noise::KeyedNoise::new(*key, 1, 1.0, 1, 1.0)?;
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let (mut add_s, mut key_s, mut done, mut acc) = (0.0, 0.0, 0u64, 0.0);
    let mut xs = Vec::with_capacity(a.chunk);
    // Pieces of 4,096 counters (64 KiB) into a buffer per thread that stays in cache, as
    // the mechanisms' batches do: the keystream's cost, not the memory's.
    const PIECE: usize = 1 << 12;
    while done < a.steps {
        let len = (a.steps - done).min(a.chunk as u64) as usize;
        generate(&mut state, shift, len, &mut xs);
        let t = Instant::now();
        acc += xs
            .par_chunks(1 << 16)
            .map(|c| c.iter().sum::<f64>())
            .sum::<f64>();
        add_s += t.elapsed().as_secs_f64();
        let t = Instant::now();
        let (first, total) = (counters as u64 * done, counters * len);
        let last = (0..total.div_ceil(PIECE))
            .into_par_iter()
            .map_init(
                || vec![[0u64; 2]; PIECE],
                |buf, i| {
                    let n = PIECE.min(total - i * PIECE);
                    noise.words(first + (i * PIECE) as u64, &mut buf[..n]);
                    buf[n - 1][0]
                },
            )
            .reduce(|| 0, u64::wrapping_add);
        key_s += t.elapsed().as_secs_f64();
        acc += last as f64;
        done += len as u64;
    }
    std::hint::black_box(acc);
    Ok((add_s, key_s))
}

/// Peak resident memory of this process (Linux), MiB.
pub fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}
