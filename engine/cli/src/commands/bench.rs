//! `kinsey bench`: throughput benchmarks (training, Paillier, the protocol, decayed sums, SuLQ).

use super::common::*;
use crate::config::{self};
use clap::Subcommand;
use kinsey_core::{Error, Result};
use kinsey_data::parquet_io::{ColumnSpec, read_parquet};
use kinsey_data::{RowTransform, synth};
use kinsey_kernels::DevicePref;
use kinsey_kernels::logistic::csr::CsrRows;
use kinsey_learn::logreg::{self, Objective, SolverConfig};
use kinsey_learn::passes::{CsrPasses, MemoryPasses, Passes};
use std::path::PathBuf;
use std::time::Instant;

/// Throughput benchmarks.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[command(subcommand)]
    which: Which,
}

#[derive(Subcommand, Debug)]
enum Which {
    /// SuLQ k-means and PCA fit times on a matrix in [0, 1]^d (one JSON line).
    Sulq(SulqArgs),
    /// Newton training to ||grad J|| <= 1e-10: rows/s and time to the tolerance.
    Train(TrainArgs),
    /// Bulk decayed sums on a generated stream, in chunks: steps per second and peak memory.
    Decay(DecayArgs),
    /// Paillier operations per second (encrypt, key-holder encrypt, decrypt, add,
    /// multiply by a 32-bit plaintext), on one thread and on all.
    Paillier(PaillierArgs),
    /// The secure protocol end to end on synthetic inputs: time, operations and traffic.
    Protocol(ProtocolArgs),
    /// Each operation of one crypto backend on a batch (ms each, bootstraps each where the
    /// backend counts them), with its key and ciphertext sizes.
    Backend(BackendArgs),
    /// The GPU adapter's features, subgroup sizes and limits, and the bandwidth of the
    /// host link and device memory (one JSON line).
    GpuProbe(crate::benchmarks::gpu_probe::ProbeArgs),
    /// One variable-base power batch at a modulus size on the GPU, checked against the
    /// CPU, with the private memory per invocation of the 16-bit fused program (one JSON
    /// line; `benches/gpu-figures.sh` bisects where the fused program stops working).
    GpuPrivate(crate::benchmarks::gpu_probe::PrivateArgs),
    /// The table of figures of a `benches/gpu-figures.sh` run: reads each step's JSON lines
    /// from RAW, writes figures.md and figures.jsonl into OUT.
    Figures(FiguresArgs),
}

/// Runs the chosen benchmark.
pub(crate) fn run(a: Args) -> Result<()> {
    match a.which {
        Which::Sulq(x) => sulq(x),
        Which::Train(x) => train(x),
        Which::Decay(x) => decay(x),
        Which::Paillier(x) => paillier(x),
        Which::Protocol(x) => protocol(x),
        Which::Backend(x) => backend(x),
        Which::GpuProbe(x) => crate::benchmarks::gpu_probe::run(&x),
        Which::GpuPrivate(x) => crate::benchmarks::gpu_probe::private_memory(&x),
        Which::Figures(x) => {
            let n = crate::figures::write(&x.raw, &x.out)?;
            println!(
                "{n} figures in {} and {}",
                x.out.join("figures.md").display(),
                x.out.join("figures.jsonl").display()
            );
            Ok(())
        }
    }
}

#[derive(clap::Args, Debug)]
struct FiguresArgs {
    /// The folder of the steps' outputs (steps.txt, machine.txt, STEP.json).
    #[arg(long)]
    raw: PathBuf,
    /// Where figures.md and figures.jsonl go.
    #[arg(long)]
    out: PathBuf,
}

#[derive(clap::Args, Debug)]
struct SulqArgs {
    #[arg(long)]
    /// Parquet or CSV input whose numeric columns lie in [0, 1].
    input: PathBuf,
    #[arg(long, default_value_t = 8)]
    /// Clusters of the k-means fit.
    k: usize,
    #[arg(long, default_value_t = 10)]
    /// k-means iterations.
    iterations: usize,
    #[arg(long, default_value_t = 5)]
    /// Principal components of the PCA fit.
    components: usize,
    #[arg(long, default_value_t = 1.0)]
    /// Privacy budget of each fit.
    epsilon: f64,
    #[arg(long, default_value_t = 1e-6)]
    /// delta of each fit's (epsilon, delta) guarantee.
    delta: f64,
    /// auto | cpu | gpu (the k-means assignment step)
    #[arg(long, default_value = "cpu")]
    device: DevicePref,
}

/// `kinsey bench sulq`: SuLQ k-means and PCA fit times (one JSON line).
fn sulq(a: SulqArgs) -> Result<()> {
    let SulqArgs {
        input,
        k,
        iterations,
        components,
        epsilon,
        delta,
        device: dev,
    } = a;
    let v = kinsey_stats::sulq::bench::run(&input, k, iterations, components, epsilon, delta, dev)?;
    println!("{v}");
    Ok(())
}

#[derive(clap::Args, Debug)]
struct TrainArgs {
    #[arg(long, default_value_t = 1_000_000)]
    /// Generated rows (when no --input or --libsvm).
    rows: usize,
    #[arg(long, value_parser = kinsey_core::limits::parse_dim, default_value_t = 123)]
    /// Features of the generated rows, or the dimension of the --libsvm file.
    dim: usize,
    #[arg(long, default_value = "cpu")]
    /// Where the row passes run: auto, cpu or gpu.
    device: DevicePref,
    #[arg(long, default_value_t = 1e-4)]
    /// L2 regularisation lambda of the objective.
    lambda: f64,
    /// Train on this Parquet file instead of generated rows.
    #[arg(long, conflicts_with = "libsvm")]
    input: Option<PathBuf>,
    /// Train on this LIBSVM file (of dimension --dim) instead of generated rows.
    #[arg(long)]
    libsvm: Option<PathBuf>,
    /// Keep the --libsvm rows sparse (CSR): passes cost O(non-zeros).
    #[arg(long, requires = "libsvm")]
    sparse: bool,
    /// Multiply every row by this public constant first (1/sqrt(14) puts a9a in the
    /// unit ball).
    #[arg(long)]
    row_scale: Option<f64>,
    /// Print one JSON line (for scripts).
    #[arg(long)]
    json: bool,
    /// Rows in the Hessian subsample (0 = all rows).
    #[arg(long, default_value_t = SolverConfig::default().hessian_rows)]
    hessian_rows: usize,
}

/// The rows `bench train` fits: dense, or sparse.
enum BenchRows {
    Dense(kinsey_data::Dataset),
    Sparse(kinsey_data::sparse::SparseDataset),
}

/// The rows of `bench train`, scaled when asked.
fn bench_rows(a: &TrainArgs) -> Result<BenchRows> {
    let labels = kinsey_data::LabelEncoding::PlusMinusOne;
    let mut rows = match (&a.input, &a.libsvm) {
        (Some(p), _) => BenchRows::Dense(read_parquet(p, &ColumnSpec::default())?),
        (None, Some(p)) if a.sparse => {
            BenchRows::Sparse(kinsey_data::sparse::read_libsvm_sparse(p, a.dim, labels)?)
        }
        (None, Some(p)) => BenchRows::Dense(kinsey_data::libsvm::read_libsvm(p, a.dim, labels)?),
        (None, None) => {
            kinsey_core::limits::check_dense("--rows", a.rows, a.dim)?;
            BenchRows::Dense(synth::generate(a.rows, a.dim, 16.0, 1, 1, "bench".into()))
        }
    };
    if let Some(c) = a.row_scale {
        let t = RowTransform::Scale(c);
        match &mut rows {
            BenchRows::Dense(ds) => t.apply(ds)?,
            BenchRows::Sparse(sp) => sp.apply(t)?,
        };
    }
    Ok(rows)
}

/// `kinsey bench train`: Newton to the tolerance on generated or given rows, then one
/// full pass (loss and gradient at the optimum) timed alone: the median of five.
fn train(a: TrainArgs) -> Result<()> {
    let t = Instant::now();
    let data = bench_rows(&a)?;
    let load_s = t.elapsed().as_secs_f64();
    let obj = Objective::new(a.lambda)?;
    let solver = SolverConfig {
        hessian_rows: a.hessian_rows,
        ..SolverConfig::default()
    };
    let (passes, nnz): (Box<dyn Passes + '_>, usize) = match &data {
        BenchRows::Dense(ds) => (Box::new(MemoryPasses::new(ds.rows()?)), ds.n() * ds.d),
        BenchRows::Sparse(sp) => (
            Box::new(CsrPasses::new(CsrRows::new(
                &sp.indptr,
                &sp.indices,
                &sp.values,
                &sp.y,
                sp.d,
            )?)),
            sp.nnz(),
        ),
    };
    let (n, d) = passes.shape();
    // The full passes where the fit runs them (on the device under --device gpu, unless
    // KINSEY_GPU_PASSES=cpu), uploaded once: the fit and the timed pass share the rows.
    let t = Instant::now();
    let on_device = logreg::device_passes(passes.as_ref(), a.device)?;
    let upload_s = t.elapsed().as_secs_f64();
    let mut fit =
        logreg::fit_passes_on(passes.as_ref(), on_device.as_ref(), a.device, &obj, &solver)?;
    if on_device.is_some() {
        fit.upload_seconds = upload_s;
        fit.seconds += upload_s;
    }
    let timed: &dyn Passes = match &on_device {
        Some(k) => k,
        None => passes.as_ref(),
    };
    let mut times = (0..5)
        .map(|_| {
            let t = Instant::now();
            timed.sums(&fit.w, false)?;
            Ok(t.elapsed().as_secs_f64())
        })
        .collect::<Result<Vec<f64>>>()?;
    times.sort_by(f64::total_cmp);
    let pass_s = times[2];
    let rows_per_s = (n * fit.passes) as f64 / fit.seconds;
    let layout = if matches!(data, BenchRows::Sparse(_)) {
        "csr"
    } else {
        "dense"
    };
    if a.json {
        println!(
            "{}",
            serde_json::json!({"rows": n, "dim": d, "layout": layout, "stored_values": nnz, "lambda": a.lambda, "device": fit.device, "seconds": fit.seconds, "load_seconds": load_s, "iterations": fit.iterations, "passes": fit.passes, "pass_seconds": pass_s, "hessian_evaluations": fit.hessian_evaluations, "hessian_rows": fit.hessian_rows, "objective": fit.objective, "grad_norm": fit.grad_norm, "rows_per_s": rows_per_s, "threads": rayon::current_num_threads(), "upload_seconds": fit.upload_seconds, "pass_device": timed.describe(), "pass_bytes": n * d * 4 + n * 4})
        );
    } else {
        println!("device: {}", fit.device);
        println!("rows: {n} x {d}, {layout}, {nnz} stored values  (data ready in {load_s:.2} s)");
        println!(
            "time to ||grad J|| <= {:.0e}: {:.3} s  ({} Newton iterations, {} passes)",
            solver.tolerance, fit.seconds, fit.iterations, fit.passes
        );
        println!(
            "objective {:.12}  ||grad J|| = {:.2e}",
            fit.objective, fit.grad_norm
        );
        println!(
            "one pass (loss and gradient, median of 5): {:.3} ms; throughput {:.3e} rows/s",
            pass_s * 1e3,
            rows_per_s
        );
    }
    Ok(())
}

#[derive(clap::Args, Debug)]
struct DecayArgs {
    #[arg(long, default_value_t = 100_000_000)]
    /// Length of the generated series.
    steps: u64,
    #[arg(long, default_value = "window")]
    /// window | exponential | running | polynomial | laplace | rr | allwindow.
    model: String,
    #[arg(long, default_value_t = 1024)]
    /// Window length in steps (window, laplace, rr).
    window: u64,
    #[arg(long, default_value_t = 0.999)]
    /// Decay per step (exponential).
    alpha: f64,
    /// tree (default), kary or best, as `kinsey decay --mechanism`.
    #[arg(long, default_value = "tree")]
    mechanism: String,
    /// Children per node of --mechanism kary (default: the least stated error).
    #[arg(long)]
    arity: Option<u32>,
    /// Gaussian noise under this zCDP budget (mechanisms tree, kary, blt, best) instead of
    /// pure DP at epsilon 1.
    #[arg(long)]
    rho: Option<f64>,
    /// Steps per chunk (memory is one chunk, independent of the stream length).
    #[arg(long, default_value_t = 1 << 22)]
    chunk: usize,
    /// Where the noise is drawn: auto (a hardware GPU if any), cpu or gpu.
    #[arg(long, default_value = "cpu")]
    device: DevicePref,
    #[arg(long)]
    /// Print one JSON line (for scripts).
    json: bool,
}

/// `kinsey bench decay`: the chunked stream of a decayed sum on a generated series.
fn decay(a: DecayArgs) -> Result<()> {
    let r = decay_throughput(&a)?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string(&r).map_err(|e| Error::Numerical(e.to_string()))?
        );
    } else {
        println!(
            "{} on {} steps: {:.2} s, {:.3e} steps/s, peak memory {:.0} MiB ({} threads, \
             noise on {})",
            r.model, r.steps, r.seconds, r.steps_per_second, r.peak_rss_mib, r.threads, r.device
        );
        println!(
            "  limits of this machine on the same chunks: read and add {:.3e} steps/s \
             ({:.1}x the decayed sum), ChaCha20 keystream of the noise ({} counters of two \
             words per step) {:.3e} steps/s ({:.1}x)",
            r.read_add_steps_per_second,
            r.read_add_steps_per_second / r.steps_per_second,
            r.counters_per_step,
            r.keystream_steps_per_second,
            r.keystream_steps_per_second / r.steps_per_second
        );
    }
    Ok(())
}

/// Throughput of a decayed sum's chunked stream on a generated series.
#[derive(Debug, Clone, serde::Serialize)]
struct DecayThroughput {
    model: String,
    steps: u64,
    seconds: f64,
    steps_per_second: f64,
    peak_rss_mib: f64,
    threads: usize,
    /// Where the noise was drawn.
    device: String,
    /// Time generating the input (not included in `seconds`).
    generate_seconds: f64,
    /// One pass over the same chunks that only reads the values and adds them (all
    /// threads): the memory-bound floor of any decayed sum.
    read_add_steps_per_second: f64,
    /// The ChaCha20 keystream alone, two 64-bit words per counter, all threads: the floor
    /// of the noise.
    keystream_steps_per_second: f64,
    /// Noise counters per step: a tree releases `2 - 2^-h` nodes per step (window,
    /// exponential, running; the exponential sum draws only the left ones but reads
    /// every node's keystream); the per-output baselines one.
    counters_per_step: usize,
    /// How the GPU path ran: `pipelined`, or `serial` under `KINSEY_GPU_PIPELINE=serial`
    /// (the A/B switch of `kinsey_kernels::gpu::stream`); `cpu` without a GPU.
    pipeline: String,
    /// The host's seconds and calls per stage of the GPU path, under `KINSEY_GPU_TRACE=1`
    /// (empty otherwise).
    host_stages: Vec<HostStage>,
}

/// One stage of the GPU path's host work (`kinsey_kernels::gpu::stream::Stage`).
#[derive(Debug, Clone, serde::Serialize)]
struct HostStage {
    stage: &'static str,
    seconds: f64,
    calls: u64,
}

/// The chunked stream (`DecayedSum::stream`) over `steps` generated values in `{0..3}`
/// (bits for `rr`), chunk by chunk: memory is one chunk, whatever the length.
fn decay_throughput(a: &DecayArgs) -> Result<DecayThroughput> {
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
    a: &DecayArgs,
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
fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

#[derive(clap::Args, Debug)]
struct PaillierArgs {
    #[arg(long, value_delimiter = ',', default_value = "2048,3072")]
    /// Key sizes to measure, e.g. 2048,3072.
    bits: Vec<u32>,
    /// Values per operation and run.
    #[arg(long, default_value_t = 256)]
    count: usize,
    /// Thread counts to measure (0 = all cores).
    #[arg(long, value_delimiter = ',', default_value = "1,0")]
    threads: Vec<usize>,
    /// Where the batches run: cpu, gpu (every batch; results checked against the CPU on a
    /// sample) or auto.
    #[arg(long, default_value = "cpu")]
    device: String,
    /// Instead of the rates: per operation, the batch from which the GPU path (--device
    /// gpu or auto) beats the CPU path, and the `gpu_min_batch` that follows.
    #[arg(long)]
    crossover: bool,
    /// Largest batch the crossover measures.
    #[arg(long, default_value_t = 4096)]
    max_batch: usize,
    /// Seconds of one GPU batch past which the crossover stops growing the batch.
    #[arg(long, default_value_t = 10.0)]
    budget: f64,
    #[arg(long)]
    /// Print JSON lines (for scripts).
    json: bool,
}

/// `kinsey bench paillier`: Paillier operations per second.
fn paillier(a: PaillierArgs) -> Result<()> {
    let PaillierArgs {
        bits,
        count,
        threads,
        device,
        crossover,
        max_batch,
        budget,
        json,
    } = a;
    let mut rng = kinsey_dp::rng::os_crypto_rng();
    if crossover {
        if !(budget > 0.0 && budget.is_finite()) {
            return Err(Error::param(
                "budget",
                format!("seconds must be positive, got {budget}"),
            ));
        }
        for b in bits {
            let r = crate::benchmarks::crossover::paillier_crossover(
                b, false, max_batch, &device, budget, &mut rng,
            )?;
            json_or_table(json, &r, crate::benchmarks::crossover::Crossover::table)?;
        }
        return Ok(());
    }
    for b in bits {
        for &t in &threads {
            let r =
                crate::benchmarks::protocol::paillier_throughput(b, count, t, &device, &mut rng)?;
            json_or_table(json, &r, crate::benchmarks::protocol::PaillierRates::table)?;
        }
    }
    Ok(())
}

#[derive(clap::Args, Debug)]
struct ProtocolArgs {
    #[arg(long, default_value_t = 5)]
    /// Parties K.
    parties: usize,
    #[arg(long, value_parser = kinsey_core::limits::parse_dim, default_value_t = 123)]
    /// Model dimension d.
    dim: usize,
    #[command(flatten)]
    crypto: CryptoArgs,
    #[arg(long)]
    /// Print one JSON line (for scripts).
    json: bool,
    /// Also run the same inputs over TLS (one thread per participant, loopback TCP) and
    /// compare per stage, with rounds and the time at 1 ms and 50 ms round trip.
    #[arg(long)]
    compare_tls: bool,
    /// Comparison runs (medians are reported).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
}

/// `kinsey bench protocol`: the secure protocol end to end on synthetic inputs.
fn protocol(a: ProtocolArgs) -> Result<()> {
    let ProtocolArgs {
        parties,
        dim,
        crypto,
        json,
        compare_tls,
        repeat,
    } = a;
    let agg = match crypto.config().aggregation()? {
        config::Aggregation::Secure(a) => a,
        config::Aggregation::Plaintext => {
            return Err(Error::param(
                "aggregation",
                "the protocol bench needs secure",
            ));
        }
    };
    if compare_tls {
        let runs =
            crate::benchmarks::protocol::transport_comparison(agg.backend(), parties, dim, repeat)?;
        return json_or_table(
            json,
            runs.as_slice(),
            crate::benchmarks::protocol::transport_table,
        );
    }
    let r = crate::benchmarks::protocol::protocol_run(&agg, parties, dim)?;
    json_or_table(json, &r, crate::benchmarks::protocol::protocol_table)
}

#[derive(clap::Args, Debug)]
struct BackendArgs {
    /// The backend (see `kinsey backends`).
    #[arg(long, default_value = "tfhe")]
    backend: String,
    /// Key size in bits (the backend's default if absent).
    #[arg(long)]
    key_bits: Option<u32>,
    /// Elements per operation (general multiplication and comparison: at most 2).
    #[arg(long, default_value_t = 8)]
    count: usize,
    #[arg(long)]
    /// Print one JSON line (for scripts).
    json: bool,
}

/// `kinsey bench backend`: per-operation costs of one backend.
fn backend(a: BackendArgs) -> Result<()> {
    let opts = kinsey_backend::registry::BackendOptions {
        key_bits: a.key_bits,
        ..Default::default()
    };
    let he = kinsey_protocol::registry::registry()
        .create(&a.backend, &opts)
        .map_err(|e| Error::param("backend", e.to_string()))?;
    let mut rng = kinsey_dp::rng::os_crypto_rng();
    let t = crate::benchmarks::opbench::operations(he.as_ref(), a.count, &mut rng)?;
    json_or_table(a.json, &t, crate::benchmarks::opbench::op_table)
}

/// Print a measurement as one JSON line, or as its table.
fn json_or_table<T: serde::Serialize + ?Sized>(
    json: bool,
    v: &T,
    table: impl Fn(&T) -> String,
) -> Result<()> {
    if json {
        println!(
            "{}",
            serde_json::to_string(v).map_err(|e| Error::Numerical(e.to_string()))?
        );
    } else {
        print!("{}", table(v));
    }
    Ok(())
}
