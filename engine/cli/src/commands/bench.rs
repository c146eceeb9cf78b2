//! `kinsey bench`: throughput benchmarks (training, Paillier, the protocol, decayed sums, SuLQ).

use super::common::*;
use crate::benchmarks::tables;
use crate::config::{self};
use clap::Subcommand;
use kinsey::DevicePref;
use kinsey::bench::decay::{DecayBench, decay_throughput};
use kinsey::bench::train::TrainBench;
use kinsey::classifier::SolverConfig;
use kinsey_core::{Error, Result};
use std::path::PathBuf;

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
            let n = kinsey::bench::figures::write(&x.raw, &x.out)?;
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
    let v = kinsey::bench::sulq::run(&input, k, iterations, components, epsilon, delta, dev)?;
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

/// `kinsey bench train`: Newton to the tolerance on generated or given rows, then one
/// full pass (loss and gradient at the optimum) timed alone: the median of five.
fn train(a: TrainArgs) -> Result<()> {
    let f = TrainBench {
        rows: a.rows,
        dim: a.dim,
        device: a.device,
        lambda: a.lambda,
        input: a.input.clone(),
        libsvm: a.libsvm.clone(),
        sparse: a.sparse,
        row_scale: a.row_scale,
        hessian_rows: a.hessian_rows,
    }
    .run()?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string(&f).map_err(|e| Error::Numerical(e.to_string()))?
        );
    } else {
        println!("device: {}", f.device);
        println!(
            "rows: {} x {}, {}, {} stored values  (data ready in {:.2} s)",
            f.rows, f.dim, f.layout, f.stored_values, f.load_seconds
        );
        println!(
            "time to ||grad J|| <= {:.0e}: {:.3} s  ({} Newton iterations, {} passes)",
            f.tolerance, f.seconds, f.iterations, f.passes
        );
        println!(
            "objective {:.12}  ||grad J|| = {:.2e}",
            f.objective, f.grad_norm
        );
        println!(
            "one pass (loss and gradient, median of 5): {:.3} ms; throughput {:.3e} rows/s",
            f.pass_seconds * 1e3,
            f.rows_per_s
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
    /// tree (default), kary, smooth, blt, sqrt or best, as `kinsey decay --mechanism`.
    #[arg(long, default_value = "tree")]
    mechanism: String,
    /// Children per node of --mechanism kary (default: the least stated error).
    #[arg(long)]
    arity: Option<u32>,
    /// Gaussian noise under this zCDP budget (mechanisms tree, kary, smooth, blt, sqrt,
    /// best) instead of
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
    let r = decay_throughput(&DecayBench {
        steps: a.steps,
        model: a.model.clone(),
        window: a.window,
        alpha: a.alpha,
        mechanism: a.mechanism.clone(),
        arity: a.arity,
        rho: a.rho,
        chunk: a.chunk,
        device: a.device,
    })?;
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
            // One line per operation on stderr as it finishes: a run stopped by a time
            // limit keeps what it measured (the table and the JSON come only at the end).
            let r = kinsey::bench::crossover::paillier_crossover(
                b,
                false,
                max_batch,
                &device,
                budget,
                &mut rng,
                &mut |o| eprintln!("{}", tables::crossover_line(o, b)),
            )?;
            json_or_table(json, &r, tables::crossover_table)?;
        }
        return Ok(());
    }
    for b in bits {
        for &t in &threads {
            let r = kinsey::bench::protocol::paillier_throughput(b, count, t, &device, &mut rng)?;
            json_or_table(json, &r, tables::paillier_table)?;
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
            kinsey::bench::protocol::transport_comparison(agg.backend(), parties, dim, repeat)?;
        return json_or_table(json, runs.as_slice(), tables::transport_table);
    }
    let r = kinsey::bench::protocol::protocol_run(&agg, parties, dim)?;
    json_or_table(json, &r, tables::protocol_table)
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
    let opts = kinsey::classifier::BackendOptions {
        key_bits: a.key_bits,
        ..Default::default()
    };
    let he = kinsey::classifier::registry()
        .create(&a.backend, &opts)
        .map_err(|e| Error::param("backend", e.to_string()))?;
    let mut rng = kinsey_dp::rng::os_crypto_rng();
    let t = kinsey::bench::ops::operations(he.as_ref(), a.count, &mut rng)?;
    json_or_table(a.json, &t, tables::op_table)
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
