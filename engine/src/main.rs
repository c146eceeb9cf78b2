//! The `kinsey` command-line tool.

use clap::{Args, Parser, Subcommand};
use kinsey::aggregate::{Calibration, NoiseKind, PrivacySpec};
use kinsey::config::TrainConfig;
use kinsey::data::libsvm::read_libsvm;
use kinsey::data::output::Outputs;
use kinsey::data::parquet_io::{ColumnSpec, read_parquet, write_parquet};
use kinsey::data::split::{SplitSpec, split};
use kinsey::data::{Dataset, LabelEncoding, RowTransform, synth};
use kinsey::dp::NoiseRng;
use kinsey::error::{Error, Result};
use kinsey::logreg::{Objective, SolverConfig};
use kinsey::pipeline::{self, JobSpec, ModelFile};
use kinsey::release::write_json;
use kinsey::toolbox::commands;
use kinsey_kernels::DevicePref;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(
    name = "kinsey",
    version,
    about = "Differentially private statistics with secrecy"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// The main job on built-in synthetic data: 5 parties, train, aggregate privately, evaluate.
    Demo {
        #[arg(long, default_value = "kinsey-out")]
        out: PathBuf,
        /// Reproducible noise (the release is then not private against whoever knows it).
        #[arg(long)]
        seed: Option<u64>,
        /// Write the seed's value into the report (by default it says only that a seed was used).
        #[arg(long)]
        record_seed: bool,
        #[arg(long, default_value = "auto")]
        device: String,
        #[arg(long, default_value_t = 1.0)]
        epsilon: f64,
        #[command(flatten)]
        crypto: CryptoArgs,
        /// Skip the diagnostics (on by default for the demo, whose parties are synthetic).
        #[arg(long)]
        no_diagnostics: bool,
        /// Test hook: make a participant fail (PARTICIPANT:STAGE:abort|garbage).
        #[arg(long, hide = true)]
        inject_fault: Option<String>,
    },
    /// Train the DP aggregate classifier on the parties listed in a TOML config.
    Train {
        #[arg(long)]
        config: PathBuf,
        /// Overrides [output] dir.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Also compute and write the NOT PRIVATE diagnostics (party sizes, per-party fits,
        /// non-private baselines, test errors, timings) to diagnostics.NOT-PRIVATE.json.
        #[arg(long)]
        diagnostics: bool,
        /// Write the seed's value into the report (by default it says only that a seed was used).
        #[arg(long)]
        record_seed: bool,
    },
    /// Apply a published model to a data set; prints the error rate if labels are present.
    Predict {
        #[arg(long)]
        model: PathBuf,
        #[arg(long)]
        input: PathBuf,
        /// CSV of (row, score, prediction).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Dimension, for LIBSVM input.
        #[arg(long)]
        dim: Option<usize>,
    },
    /// Convert a LIBSVM text file to Parquet (features f1..fD, label).
    Convert {
        #[arg(long)]
        libsvm: PathBuf,
        #[arg(long)]
        dim: usize,
        #[arg(long)]
        out: PathBuf,
        #[arg(long, value_parser = parse_labels, default_value = "pm1")]
        labels: LabelEncoding,
    },
    /// Shuffle a data set (recorded seed) and split it into one Parquet file per party.
    Split {
        #[arg(long)]
        input: PathBuf,
        #[arg(
            long,
            value_delimiter = ',',
            conflicts_with = "fractions",
            required_unless_present = "fractions"
        )]
        sizes: Vec<usize>,
        #[arg(long, value_delimiter = ',')]
        fractions: Vec<f64>,
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        seed: Option<u64>,
        /// Dimension, for LIBSVM input.
        #[arg(long)]
        dim: Option<usize>,
        #[command(flatten)]
        cols: ColumnArgs,
    },
    /// Synthetic parties from a planted logistic model (plus a test set).
    Generate {
        #[arg(long)]
        parties: usize,
        /// Total training rows, split evenly across the parties.
        #[arg(long)]
        rows: usize,
        #[arg(long)]
        dim: usize,
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Test rows (default: rows / 5).
        #[arg(long)]
        test_rows: Option<usize>,
        /// Norm of the planted model.
        #[arg(long, default_value_t = 4.0)]
        signal: f64,
        /// AR(1) correlation between neighbouring features, in [0, 1).
        #[arg(long, default_value_t = 0.0)]
        correlation: f64,
    },
    /// Reproduce an experiment of the seeds.
    Experiment {
        #[command(subcommand)]
        which: Experiment,
    },
    /// Throughput benchmarks.
    Bench {
        #[command(subcommand)]
        which: Bench,
    },
    /// Private window, exponentially decayed or running sums of a time series (seed 004).
    Decay {
        /// CSV (with a header) or Parquet file, one row per step; or a .txt file of 0/1
        /// characters, one bit per step.
        #[arg(long)]
        input: PathBuf,
        /// The column holding each step's value.
        #[arg(long, default_value = "value")]
        column: String,
        /// Event input: bucket this timestamp column (Parquet timestamp, or ISO text in CSV)
        /// into steps of `--step`; each step's value is its number of events.
        #[arg(long)]
        time_column: Option<String>,
        /// Step width for --time-column: 30s, 1m, 15m, 1h, 1d.
        #[arg(long, default_value = "1m")]
        step: String,
        /// First time of a --time-column series (public; YYYY-MM-DDTHH:MM[:SS] or seconds).
        #[arg(long)]
        start: Option<String>,
        /// Last time of a --time-column series (public): the output covers start..=end
        /// whatever the events, and events outside are dropped.
        #[arg(long)]
        end: Option<String>,
        /// Keep only events with COLUMN OP NUMBER (e.g. "delay>=15"); without --time-column,
        /// one bit per event.
        #[arg(long = "where")]
        predicate: Option<String>,
        /// window | allwindow | exponential | polynomial | running | laplace | rr
        #[arg(long)]
        model: String,
        #[arg(long)]
        epsilon: f64,
        /// Window length in steps (models window, laplace, rr).
        #[arg(long)]
        window: Option<u64>,
        /// Window lengths for model allwindow (all from one tree), e.g. 60,1440.
        #[arg(long, value_delimiter = ',')]
        windows: Option<Vec<u64>>,
        /// Decay per step, in (0, 1) (model exponential).
        #[arg(long)]
        alpha: Option<f64>,
        /// Decay exponent c > 1 of g(i) = (i + 1)^-c (model polynomial).
        #[arg(long)]
        c: Option<f64>,
        /// Approximation parameter in (0, 1): estimates F' with (1 - beta) F <= F' <= F.
        #[arg(long, default_value_t = 0.1)]
        beta: f64,
        /// Longest stream the running sum is calibrated for (default: the series length,
        /// which is public: a column's length, or --start..--end).
        #[arg(long)]
        horizon: Option<u64>,
        /// Per-step contribution bound B: values are clamped to [0, B] (clamping counted).
        #[arg(long, default_value_t = 1.0)]
        bound: f64,
        /// (step, estimate) as CSV, or Parquet if the name ends in .parquet; a report
        /// `<out>.report.json` is written beside it.
        #[arg(long)]
        out: PathBuf,
        /// Write the NOT PRIVATE diagnostics (clamped steps, timings) to
        /// `<out>.NOT-PRIVATE.diagnostics.json`.
        #[arg(long)]
        diagnostics: bool,
        /// Diagnostics (implies --diagnostics): compute the true sums and the error, and draw
        /// true vs private over `--plot-range` to `<out>.NOT-PRIVATE.plot.svg` and `.png`.
        #[arg(long)]
        evaluate: bool,
        /// Steps to plot with --evaluate, FROM:TO (default: the last 1,440 steps).
        #[arg(long)]
        plot_range: Option<String>,
        /// Run the online path (one step at a time) instead of bulk: the same numbers.
        #[arg(long)]
        online: bool,
        /// Derive the noise key from a seed and the release's parameters (NOT private
        /// against whoever knows the seed).
        #[arg(long)]
        seed: Option<u64>,
        /// Write the seed's value into the report (by default it says only that one was used).
        #[arg(long)]
        record_seed: bool,
    },
    /// DP histogram or count of a column (seed 002), under bounded or unbounded neighbours.
    Histogram(commands::HistogramArgs),
    /// DP decision tree: ID3 with a private split choice (seed 002, Friedman & Schuster).
    Tree(commands::TreeArgs),
    /// SuLQ algorithms (seed 003): noisy sums with a bounded number of queries.
    Sulq {
        #[command(subcommand)]
        cmd: Sulq,
    },
    /// The crypto backends compiled into this build, with their security description.
    Backends,
    /// Paillier keys and ciphertexts in python-paillier's formats.
    Keys {
        #[command(subcommand)]
        which: KeysCmd,
    },
}

/// The `[crypto]` section as command-line flags (demo).
#[derive(Args, Debug, Clone)]
struct CryptoArgs {
    /// "secure" (the 3-stage protocol) or "plaintext" (reference, no secrecy).
    #[arg(long, default_value = "secure")]
    aggregation: String,
    /// Crypto backend ("paillier" or "mock"; see `kinsey backends`).
    #[arg(long, default_value = "paillier")]
    backend: String,
    /// Key size in bits (backend default: 2048 for Paillier).
    #[arg(long)]
    key_bits: Option<u32>,
    /// Accept a backend that does not encrypt (mock).
    #[arg(long)]
    allow_insecure: bool,
    /// Accept keys below the backend's minimum.
    #[arg(long)]
    allow_insecure_test_keys: bool,
}

impl CryptoArgs {
    fn config(&self) -> kinsey::config::CryptoConfig {
        kinsey::config::CryptoConfig {
            aggregation: self.aggregation.clone(),
            backend: self.backend.clone(),
            key_bits: self.key_bits,
            allow_insecure_test_keys: self.allow_insecure_test_keys,
            allow_insecure: self.allow_insecure,
        }
    }
}

#[derive(Subcommand, Debug)]
enum KeysCmd {
    /// A new Paillier key pair: OUT/private.json and OUT/public.json (pheutil's JWK format,
    /// with kinsey's h_s and the primes as extra members python-paillier ignores).
    Generate {
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value_t = 2048)]
        bits: u32,
        #[arg(long)]
        allow_insecure_test_keys: bool,
    },
    /// python-paillier's own files from a kinsey private key (kinsey's h_s dropped).
    Export {
        #[arg(long)]
        private: PathBuf,
        #[arg(long)]
        out: PathBuf,
    },
    /// kinsey's files from a pheutil private key (primes recovered from lambda if needed).
    Import {
        #[arg(long)]
        private: PathBuf,
        #[arg(long)]
        out: PathBuf,
    },
    /// Encrypt a number (kinsey's 2^-32 fixed point): prints a python-paillier EncryptedNumber.
    Encrypt {
        #[arg(long)]
        public: PathBuf,
        #[arg(allow_hyphen_values = true)]
        value: f64,
        #[arg(long)]
        allow_insecure_test_keys: bool,
    },
    /// Decrypt a python-paillier EncryptedNumber ({"v": ..., "e": ...}).
    Decrypt {
        #[arg(long)]
        private: PathBuf,
        number: PathBuf,
        #[arg(long)]
        allow_insecure_test_keys: bool,
    },
}

#[derive(Args, Debug, Clone)]
struct ColumnArgs {
    #[arg(long, default_value = "label")]
    label: String,
    #[arg(long, value_parser = parse_labels, default_value = "pm1")]
    labels: LabelEncoding,
}

impl ColumnArgs {
    fn spec(&self) -> ColumnSpec {
        ColumnSpec {
            label: self.label.clone(),
            features: Vec::new(),
            labels: self.labels,
        }
    }
}

#[derive(Subcommand, Debug)]
enum Sulq {
    /// SuLQ k-means: k (1 + d) sums per iteration as one vector query.
    Kmeans(commands::KmeansArgs),
    /// SuLQ PCA (noisy covariance) or SVD (noisy A^T A, --no-center), eigenvectors by faer.
    Pca(commands::PcaArgs),
    /// SuLQ perceptron.
    Perceptron(commands::PerceptronArgs),
    /// The statistical-query adapter with an SQ learner: the best single binary predictor.
    Stat(commands::StatArgs),
    /// Vertically partitioned test: does alpha (in A) imply beta (in B) in probability?
    Implication(commands::ImplicationArgs),
}

#[derive(Subcommand, Debug)]
enum Experiment {
    /// Figure 2 of seed 001 on a9a.
    Figure2 {
        #[arg(long)]
        train: PathBuf,
        #[arg(long)]
        test: PathBuf,
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value_t = 200)]
        runs: usize,
        #[arg(long)]
        seed: Option<u64>,
        #[arg(long, value_delimiter = ',')]
        lambdas: Option<Vec<f64>>,
        #[arg(long, value_parser = parse_noise, default_value = "l2")]
        noise: NoiseKind,
    },
}

#[derive(Subcommand, Debug)]
enum Bench {
    /// SuLQ k-means and PCA fit times on a matrix in [0, 1]^d (one JSON line).
    Sulq {
        #[arg(long)]
        input: PathBuf,
        #[arg(long, default_value_t = 8)]
        k: usize,
        #[arg(long, default_value_t = 10)]
        iterations: usize,
        #[arg(long, default_value_t = 5)]
        components: usize,
        #[arg(long, default_value_t = 1.0)]
        epsilon: f64,
        #[arg(long, default_value_t = 1e-6)]
        delta: f64,
        /// auto | cpu | gpu (the k-means assignment step)
        #[arg(long, default_value = "cpu")]
        device: String,
    },
    /// Newton training to ||grad J|| <= 1e-10: rows/s and time to the tolerance.
    Train {
        #[arg(long, default_value_t = 1_000_000)]
        rows: usize,
        #[arg(long, default_value_t = 123)]
        dim: usize,
        #[arg(long, default_value = "cpu")]
        device: String,
        #[arg(long, default_value_t = 1e-4)]
        lambda: f64,
        /// Train on this Parquet file instead of generated rows.
        #[arg(long)]
        input: Option<PathBuf>,
        /// Print one JSON line (for scripts).
        #[arg(long)]
        json: bool,
        /// Rows in the Hessian subsample (0 = all rows).
        #[arg(long, default_value_t = SolverConfig::default().hessian_rows)]
        hessian_rows: usize,
    },
    /// Bulk decayed sums on a generated stream, in chunks: steps per second and peak memory.
    Decay {
        #[arg(long, default_value_t = 100_000_000)]
        steps: u64,
        #[arg(long, default_value = "window")]
        model: String,
        #[arg(long, default_value_t = 1024)]
        window: u64,
        #[arg(long, default_value_t = 0.999)]
        alpha: f64,
        /// Steps per chunk (memory is one chunk, independent of the stream length).
        #[arg(long, default_value_t = 1 << 22)]
        chunk: usize,
        #[arg(long)]
        json: bool,
    },
    /// Paillier operations per second (encrypt, key-holder encrypt, decrypt, add,
    /// multiply by a 32-bit plaintext), on one thread and on all.
    Paillier {
        #[arg(long, value_delimiter = ',', default_value = "2048,3072")]
        bits: Vec<u32>,
        /// Values per operation and run.
        #[arg(long, default_value_t = 256)]
        count: usize,
        /// Thread counts to measure (0 = all cores).
        #[arg(long, value_delimiter = ',', default_value = "1,0")]
        threads: Vec<usize>,
        #[arg(long)]
        json: bool,
    },
    /// The secure protocol end to end on synthetic inputs: time, operations and traffic.
    Protocol {
        #[arg(long, default_value_t = 5)]
        parties: usize,
        #[arg(long, default_value_t = 123)]
        dim: usize,
        #[command(flatten)]
        crypto: CryptoArgs,
        #[arg(long)]
        json: bool,
    },
}

fn parse_labels(s: &str) -> std::result::Result<LabelEncoding, String> {
    match s {
        "pm1" | "plus_minus_one" => Ok(LabelEncoding::PlusMinusOne),
        "01" | "zero_one" => Ok(LabelEncoding::ZeroOne),
        o => Err(format!("unknown label encoding '{o}' (pm1 or zero_one)")),
    }
}

fn parse_noise(s: &str) -> std::result::Result<NoiseKind, String> {
    match s {
        "l2" => Ok(NoiseKind::L2),
        "laplace" => Ok(NoiseKind::Laplace),
        o => Err(format!("unknown noise '{o}' (l2 or laplace)")),
    }
}

fn device(s: &str) -> Result<DevicePref> {
    s.parse()
        .map_err(|e: kinsey_kernels::KernelError| Error::param("device", e.to_string()))
}

/// Parquet (file or directory) by default; LIBSVM when a dimension is given.
fn load(path: &Path, spec: &ColumnSpec, dim: Option<usize>) -> Result<Dataset> {
    match dim {
        Some(d) => read_libsvm(path, d, spec.labels),
        None => read_parquet(path, spec),
    }
}

fn finish_job(report: &pipeline::Report, out: &Path, label: &str) -> Result<()> {
    let mut o = Outputs::new();
    o.ensure_dir(out)?;
    write_json(&mut o, &out.join("report.json"), &report.release)?;
    let r = &report.release;
    let model = ModelFile {
        kind: "kinsey.dp_aggregate_logistic.v1".into(),
        features: r.features.clone(),
        label: label.into(),
        row_transform: r.row_transform,
        w: r.w.clone(),
        epsilon: r.privacy.epsilon,
    };
    write_json(&mut o, &out.join("model.json"), &model)?;
    let diag = kinsey::release::diagnostics_path(out, "job");
    if let Some(d) = &report.diagnostics {
        kinsey::release::write_diagnostics(&mut o, &diag, d)?;
    }
    o.commit()?;
    print!("{}", report.summary());
    println!(
        "  wrote {}/report.json and {}/model.json",
        out.display(),
        out.display()
    );
    if report.diagnostics.is_some() {
        kinsey::release::print_diagnostic(&format!("wrote {}", diag.display()));
    }
    Ok(())
}

/// The release description that keys a seeded generator for an aggregate-classifier job:
/// every public parameter of the release (the aggregation mode and backend are excluded on
/// purpose: switching them must not change a seeded run's model).
fn job_label(command: &str, spec: &JobSpec, d: usize) -> String {
    format!(
        "{command}|d={d}|lambda={}|epsilon={}|calibration={}|noise={}|tolerance={}|transform={:?}",
        spec.objective.lambda,
        spec.privacy.epsilon,
        spec.privacy.calibration.name(),
        spec.privacy.noise.name(),
        spec.solver.tolerance,
        spec.transform
    )
}

fn report_done(d: commands::Done) -> Result<()> {
    println!("{}", d.summary);
    for p in &d.written {
        println!("  wrote {}", p.display());
    }
    Ok(())
}

fn run(cli: Cli) -> Result<()> {
    match cli.cmd {
        Cmd::Demo {
            out,
            seed,
            record_seed,
            device: dev,
            epsilon,
            crypto,
            no_diagnostics,
            inject_fault,
        } => {
            let t = Instant::now();
            let sizes = [20_000usize, 30_000, 40_000, 50_000, 60_000];
            let d = 20;
            let data_seed = 2010;
            let parties: Vec<Dataset> = sizes
                .iter()
                .enumerate()
                .map(|(j, &n)| {
                    synth::generate(
                        n,
                        d,
                        8.0,
                        data_seed,
                        j as u64 + 1,
                        format!("synthetic party {}", j + 1).into(),
                    )
                })
                .collect();
            let test = synth::generate(20_000, d, 8.0, data_seed, 0, "synthetic test".into());
            let spec = JobSpec {
                objective: Objective::new(1e-3)?,
                solver: SolverConfig::default(),
                privacy: PrivacySpec {
                    epsilon,
                    calibration: Calibration::Tight,
                    noise: NoiseKind::L2,
                },
                device: device(&dev)?,
                transform: RowTransform::None,
                aggregation: match (crypto.config().aggregation()?, inject_fault) {
                    (pipeline::Aggregation::Secure(a), Some(f)) => {
                        pipeline::Aggregation::Secure(a.with_fault(f.parse()?))
                    }
                    (a, _) => a,
                },
            };
            let mut rng = NoiseRng::for_release(seed, &job_label("demo", &spec, d));
            if record_seed {
                rng.record_seed(seed);
            }
            let report = pipeline::run(
                "demo",
                parties,
                Some(test),
                &spec,
                &mut rng,
                t.elapsed().as_secs_f64(),
                !no_diagnostics,
            )?;
            finish_job(&report, &out, "label")
        }
        Cmd::Train {
            config,
            out,
            diagnostics,
            record_seed,
        } => {
            let cfg = TrainConfig::load(&config)?;
            let t = Instant::now();
            let cols = cfg.data.columns();
            let bar = kinsey::cli_support::bar(cfg.data.parties.len() as u64, "reading parties");
            let mut parties = Vec::new();
            for p in &cfg.data.parties {
                parties.push(read_parquet(p, &cols)?);
                bar.inc(1);
            }
            bar.finish_and_clear();
            let test = cfg
                .data
                .test
                .as_ref()
                .map(|p| read_parquet(p, &cols))
                .transpose()?;
            let spec = JobSpec {
                objective: Objective::new(cfg.model.lambda)?,
                solver: cfg.model.solver(),
                privacy: cfg.privacy.spec(),
                device: device(&cfg.compute.device)?,
                transform: cfg.data.transform()?,
                aggregation: cfg.crypto.aggregation()?,
            };
            let label = format!(
                "{}|parties={:?}|label={}",
                job_label("train", &spec, 0),
                cfg.data.parties,
                cfg.data.label
            );
            let mut rng = NoiseRng::for_release(cfg.privacy.seed, &label);
            if record_seed {
                rng.record_seed(cfg.privacy.seed);
            }
            let report = pipeline::run(
                "train",
                parties,
                test,
                &spec,
                &mut rng,
                t.elapsed().as_secs_f64(),
                diagnostics,
            )?;
            finish_job(
                &report,
                &out.unwrap_or(cfg.output.dir.clone()),
                &cfg.data.label,
            )
        }
        Cmd::Predict {
            model,
            input,
            out,
            dim,
        } => {
            let text = std::fs::read_to_string(&model).map_err(|e| Error::io(&model, e))?;
            let m: ModelFile = serde_json::from_str(&text)
                .map_err(|e| Error::format(&model, format!("not a kinsey model file: {e}")))?;
            let spec = ColumnSpec {
                label: m.label.clone(),
                features: if dim.is_some() {
                    Vec::new()
                } else {
                    m.features.clone()
                },
                labels: LabelEncoding::PlusMinusOne,
            };
            let mut ds = load(&input, &spec, dim)?;
            if ds.d != m.w.len() {
                return Err(Error::Schema {
                    path: input.clone(),
                    column: "<features>".into(),
                    msg: format!(
                        "the model has {} weights but the input has {} features",
                        m.w.len(),
                        ds.d
                    ),
                });
            }
            if m.row_transform != RowTransform::None {
                m.row_transform.apply(&mut ds)?;
            }
            let err = kinsey::logreg::error_rate(&m.w, &ds.x, &ds.y, ds.d);
            println!("rows: {}  error rate: {err:.4}", ds.n());
            if let Some(out) = out {
                let mut csv = String::from("row,score,prediction\n");
                for i in 0..ds.n() {
                    let z: f64 = ds.row(i).iter().zip(&m.w).map(|(&a, b)| a as f64 * b).sum();
                    csv.push_str(&format!("{i},{z},{}\n", if z > 0.0 { 1 } else { -1 }));
                }
                let mut o = Outputs::new();
                o.write(&out, csv.as_bytes())?;
                o.commit()?;
                println!("wrote {}", out.display());
            }
            Ok(())
        }
        Cmd::Convert {
            libsvm,
            dim,
            out,
            labels,
        } => {
            let ds = read_libsvm(&libsvm, dim, labels)?;
            let mut o = Outputs::new();
            write_parquet(&mut o, &out, &ds, "label")?;
            o.commit()?;
            println!(
                "wrote {} ({} rows x {} features)",
                out.display(),
                ds.n(),
                ds.d
            );
            Ok(())
        }
        Cmd::Split {
            input,
            sizes,
            fractions,
            out,
            seed,
            dim,
            cols,
        } => {
            let ds = load(&input, &cols.spec(), dim)?;
            let spec = if sizes.is_empty() {
                SplitSpec::Fractions(fractions)
            } else {
                SplitSpec::Sizes(sizes)
            };
            // The shuffle seed is always recorded: drawn from the OS when not given.
            let seed = seed.unwrap_or_else(|| NoiseRng::from_os().next_u64());
            let parts = split(&ds, &spec, &mut NoiseRng::from_seed_quiet(seed))?;
            let mut o = Outputs::new();
            o.ensure_dir(&out)?;
            let mut files = Vec::new();
            for (j, p) in parts.iter().enumerate() {
                let f = out.join(format!("party-{}.parquet", j + 1));
                write_parquet(&mut o, &f, p, &cols.label)?;
                files.push(serde_json::json!({"file": f, "rows": p.n()}));
            }
            write_json(
                &mut o,
                &out.join("split.json"),
                &serde_json::json!({"input": input, "seed": seed, "rows_in": ds.n(), "parties": files}),
            )?;
            o.commit()?;
            println!(
                "split {} rows into {} parties (seed {seed}) in {}",
                ds.n(),
                parts.len(),
                out.display()
            );
            Ok(())
        }
        Cmd::Generate {
            parties,
            rows,
            dim,
            out,
            seed,
            test_rows,
            signal,
            correlation,
        } => {
            if !(0.0..1.0).contains(&correlation) {
                return Err(Error::param(
                    "correlation",
                    format!("must be in [0, 1), got {correlation}"),
                ));
            }
            if parties == 0 || rows < parties || dim == 0 {
                return Err(Error::param(
                    "generate",
                    "need parties >= 1, rows >= parties, dim >= 1",
                ));
            }
            if !(signal.is_finite() && signal >= 0.0) {
                return Err(Error::param("signal", "must be finite and >= 0"));
            }
            let mut o = Outputs::new();
            o.ensure_dir(&out)?;
            let bar = kinsey::cli_support::bar(parties as u64 + 1, "generating");
            let mut sizes = vec![rows / parties; parties];
            sizes[parties - 1] += rows % parties;
            for (j, &n) in sizes.iter().enumerate() {
                let ds = synth::generate_correlated(
                    n,
                    dim,
                    signal,
                    correlation,
                    seed,
                    j as u64 + 1,
                    "gen".into(),
                );
                write_parquet(
                    &mut o,
                    &out.join(format!("party-{}.parquet", j + 1)),
                    &ds,
                    "label",
                )?;
                bar.inc(1);
            }
            let test = synth::generate(
                test_rows.unwrap_or(rows / 5).max(1),
                dim,
                signal,
                seed,
                0,
                "gen".into(),
            );
            write_parquet(&mut o, &out.join("test.parquet"), &test, "label")?;
            write_json(
                &mut o,
                &out.join("generate.json"),
                &serde_json::json!({"seed": seed, "signal": signal, "correlation": correlation, "dim": dim, "party_rows": sizes, "test_rows": test.n(), "planted_w": synth::planted_w(dim, signal, seed)}),
            )?;
            bar.finish_and_clear();
            o.commit()?;
            println!(
                "wrote {parties} parties ({rows} rows, d = {dim}) and test.parquet to {}",
                out.display()
            );
            Ok(())
        }
        Cmd::Experiment {
            which:
                Experiment::Figure2 {
                    train,
                    test,
                    out,
                    runs,
                    seed,
                    lambdas,
                    noise,
                },
        } => {
            let spec = ColumnSpec::default();
            let dim = |p: &Path| {
                if p.extension().is_some_and(|e| e == "parquet") || p.is_dir() {
                    None
                } else {
                    Some(123)
                }
            };
            let tr = load(&train, &spec, dim(&train))?;
            let te = load(&test, &spec, dim(&test))?;
            let mut cfg = kinsey::experiment::figure2::Figure2Config {
                runs,
                seed,
                noise,
                ..Default::default()
            };
            if let Some(l) = lambdas {
                cfg.lambdas = l;
            }
            let r = kinsey::experiment::figure2::run(&tr, &te, &cfg)?;
            let files = r.write(&out)?;
            for f in files
                .iter()
                .filter(|f| f.extension().is_some_and(|e| e == "md"))
            {
                if let Ok(s) = std::fs::read_to_string(f) {
                    println!("{s}");
                }
            }
            println!(
                "wrote {} files to {} in {:.1} s",
                files.len(),
                out.display(),
                r.seconds
            );
            Ok(())
        }
        Cmd::Bench {
            which:
                Bench::Train {
                    rows,
                    dim,
                    device: dev,
                    lambda,
                    input,
                    json,
                    hessian_rows,
                },
        } => {
            let t = Instant::now();
            let ds = match &input {
                Some(p) => read_parquet(p, &ColumnSpec::default())?,
                None => synth::generate(rows, dim, 16.0, 1, 1, "bench".into()),
            };
            let load_s = t.elapsed().as_secs_f64();
            let spec = JobSpec {
                objective: Objective::new(lambda)?,
                solver: SolverConfig {
                    hessian_rows,
                    ..SolverConfig::default()
                },
                privacy: PrivacySpec {
                    epsilon: 1.0,
                    calibration: Calibration::Tight,
                    noise: NoiseKind::L2,
                },
                device: device(&dev)?,
                transform: RowTransform::None,
                aggregation: pipeline::Aggregation::Plaintext,
            };
            let fit = pipeline::fit(&ds, &spec)?;
            let rows_per_s = (ds.n() * fit.passes) as f64 / fit.seconds;
            if json {
                println!(
                    "{}",
                    serde_json::json!({"rows": ds.n(), "dim": ds.d, "lambda": lambda, "device": fit.device, "seconds": fit.seconds, "load_seconds": load_s, "iterations": fit.iterations, "passes": fit.passes, "hessian_evaluations": fit.hessian_evaluations, "hessian_rows": fit.hessian_rows, "objective": fit.objective, "grad_norm": fit.grad_norm, "rows_per_s": rows_per_s, "threads": rayon::current_num_threads()})
                );
            } else {
                println!("device: {}", fit.device);
                println!("rows: {} x {}  (data ready in {load_s:.2} s)", ds.n(), ds.d);
                println!(
                    "time to ||grad J|| <= {:.0e}: {:.3} s  ({} Newton iterations, {} passes)",
                    spec.solver.tolerance, fit.seconds, fit.iterations, fit.passes
                );
                println!(
                    "objective {:.12}  ||grad J|| = {:.2e}",
                    fit.objective, fit.grad_norm
                );
                println!(
                    "throughput: {:.3e} rows/s (row passes per second)",
                    rows_per_s
                );
            }
            Ok(())
        }
        Cmd::Bench {
            which:
                Bench::Paillier {
                    bits,
                    count,
                    threads,
                    json,
                },
        } => {
            let mut rng = kinsey::dp::rng::os_crypto_rng();
            for b in bits {
                for &t in &threads {
                    let r = kinsey::bench_crypto::paillier_throughput(b, count, t, &mut rng)?;
                    if json {
                        println!(
                            "{}",
                            serde_json::to_string(&r)
                                .map_err(|e| Error::Numerical(e.to_string()))?
                        );
                    } else {
                        print!("{}", r.table());
                    }
                }
            }
            Ok(())
        }
        Cmd::Bench {
            which:
                Bench::Protocol {
                    parties,
                    dim,
                    crypto,
                    json,
                },
        } => {
            let agg = match crypto.config().aggregation()? {
                pipeline::Aggregation::Secure(a) => a,
                pipeline::Aggregation::Plaintext => {
                    return Err(Error::param(
                        "aggregation",
                        "the protocol bench needs secure",
                    ));
                }
            };
            let r = kinsey::bench_crypto::protocol_run(&agg, parties, dim)?;
            if json {
                println!(
                    "{}",
                    serde_json::to_string(&r).map_err(|e| Error::Numerical(e.to_string()))?
                );
            } else {
                print!("{}", kinsey::bench_crypto::protocol_table(&r));
            }
            Ok(())
        }
        Cmd::Decay {
            input,
            column,
            time_column,
            step,
            start,
            end,
            predicate,
            model,
            epsilon,
            window,
            windows,
            alpha,
            c,
            beta,
            horizon,
            bound,
            out,
            diagnostics,
            evaluate,
            plot_range,
            online,
            seed,
            record_seed,
        } => {
            use kinsey::release::{NOT_PRIVATE_PREFIX, print_diagnostic};
            let t = Instant::now();
            let diagnostics = diagnostics || evaluate;
            let release_label = format!(
                "decay|input={}|column={column}|time={time_column:?}|step={step}|start={start:?}|end={end:?}|where={predicate:?}|model={model}|epsilon={epsilon}|window={window:?}|windows={windows:?}|alpha={alpha:?}|c={c:?}|beta={beta}|horizon={horizon:?}|bound={bound}",
                input.display()
            );
            let series = if time_column.is_some() || predicate.is_some() {
                let range = match (&time_column, &start, &end) {
                    (Some(_), Some(s), Some(e)) => Some((
                        kinsey::decay::io::parse_time("start", s)?,
                        kinsey::decay::io::parse_time("end", e)?,
                    )),
                    (Some(_), _, _) => {
                        return Err(Error::param(
                            "start",
                            "--time-column needs a public --start and --end (the first and \
                             last events are private, and the output length must not depend \
                             on them)",
                        ));
                    }
                    (None, _, _) => None,
                };
                let spec = kinsey::decay::io::EventSpec {
                    time_column,
                    step_seconds: kinsey::decay::io::parse_step(&step)?,
                    predicate: predicate
                        .as_deref()
                        .map(kinsey::decay::io::Predicate::parse)
                        .transpose()?,
                    range,
                };
                kinsey::decay::io::load_events(&input, &spec, bound)?
            } else {
                kinsey::decay::io::load(&input, &column, bound)?
            };
            let n = series.values.len() as u64;
            if seed.is_some() {
                eprintln!("warning: {}", kinsey::dp::rng::USER_SEED_WARNING);
            }
            let key = kinsey::decay::noise::key(seed, &release_label);
            let m = kinsey::decay::Mechanism::build_with(
                &model,
                window,
                windows,
                alpha,
                c.map(|c| (c, beta)),
                horizon.or(Some(n)),
                epsilon,
                bound,
                key,
            )?;
            let load_s = t.elapsed().as_secs_f64();
            let t = Instant::now();
            let bar = kinsey::cli_support::spinner("private decayed sums");
            let est = m.run(&series.values, online);
            bar.finish_and_clear();
            let est = est?;
            let run_s = t.elapsed().as_secs_f64();
            let cal = m.calibration();
            let report = serde_json::json!({
                "input": input.display().to_string(),
                "column": column,
                "steps": n,
                "steps_are": "public: the column's length, or --start..=--end",
                "calibration": cal,
                "guarantee": kinsey::release::Guarantee {
                    kind: "pure".into(),
                    epsilon,
                    delta: 0.0,
                    neighbours: "change one step's value within [0, bound] (event-level: one \
                                 event per step changes)".into(),
                    mechanism: format!("{}: exact discrete Laplace on tree counters", cal.model),
                    sensitivity: format!("{} (L1, over all counters)", cal.sensitivity),
                },
                "path": if online { "online" } else { "bulk" },
                "noise_key": match (seed, record_seed) {
                    (Some(s), true) => format!("derived from user seed {s} and the release's parameters"),
                    (Some(_), false) => "derived from a user seed and the release's parameters (seed not recorded)".into(),
                    (None, _) => "OS-random 256-bit key (not stored)".into(),
                },
                "warning": seed.map(|_| kinsey::dp::rng::USER_SEED_WARNING),
                "std_at_last_step": m.std_at(n - 1),
            });
            let mut diag = serde_json::json!({
                "clamped_steps": series.clamped,
                "seconds": {"load": load_s, "mechanism": run_s},
                "steps_per_second": n as f64 / run_s.max(1e-12),
            });
            let names = m.columns();
            let mut o = Outputs::new();
            if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
                o.ensure_dir(dir)?;
            }
            if evaluate {
                use kinsey::decay::evaluate;
                let range = evaluate::plot_range(plot_range.as_deref(), est[0].len())?;
                let (stats, truths) = evaluate::errors(&m, &series.values, &est);
                let chart = evaluate::chart(
                    format!(
                        "NOT PRIVATE: {} (eps = {epsilon}) against the true sums",
                        cal.model
                    ),
                    &names[0],
                    &est[0],
                    &truths[0],
                    range,
                );
                // write_chart replaces the last extension: `<out>.NOT-PRIVATE.plot.svg`/`.png`.
                let stem = PathBuf::from(format!("{}.NOT-PRIVATE.plot.chart", out.display()));
                kinsey::plot::write_chart(&mut o, &stem, &chart)?;
                for e in &stats {
                    println!(
                        "{NOT_PRIVATE_PREFIX} evaluation ({}): RMSE {:.3}, mean |error| {:.3}, max {:.3} (theory: std {:.3} at the last step; mean true value {:.3})",
                        e.column,
                        e.rmse,
                        e.mean_abs_error,
                        e.max_abs_error,
                        e.theoretical_std_last_step,
                        e.mean_true_value
                    );
                }
                diag["evaluation"] = if stats.len() == 1 {
                    serde_json::to_value(&stats[0])
                } else {
                    serde_json::to_value(&stats)
                }
                .map_err(|e| Error::Numerical(e.to_string()))?;
            }
            o.write(
                &out,
                &kinsey::decay::io::encode_columns(&out, &names, &est)?,
            )?;
            let rep_path = PathBuf::from(format!("{}.report.json", out.display()));
            write_json(&mut o, &rep_path, &report)?;
            let diag_path =
                PathBuf::from(format!("{}.NOT-PRIVATE.diagnostics.json", out.display()));
            if diagnostics {
                kinsey::release::write_diagnostics(&mut o, &diag_path, &diag)?;
            }
            o.commit()?;
            println!(
                "{}: {n} steps, counter noise std {:.3}, estimate std {:.3} ({}); wrote {} and {}",
                cal.model,
                cal.counter_std,
                m.std_at(n - 1),
                if online { "online" } else { "bulk" },
                out.display(),
                rep_path.display()
            );
            if diagnostics {
                print_diagnostic(&format!(
                    "{} steps clamped to the bound; {:.3e} steps/s; wrote {}",
                    series.clamped,
                    n as f64 / run_s.max(1e-12),
                    diag_path.display()
                ));
            }
            Ok(())
        }
        Cmd::Bench {
            which:
                Bench::Sulq {
                    input,
                    k,
                    iterations,
                    components,
                    epsilon,
                    delta,
                    device: dev,
                },
        } => {
            let v = kinsey::sulq::bench::run(
                &input,
                k,
                iterations,
                components,
                epsilon,
                delta,
                device(&dev)?,
            )?;
            println!("{v}");
            Ok(())
        }
        Cmd::Bench {
            which:
                Bench::Decay {
                    steps,
                    model,
                    window,
                    alpha,
                    chunk,
                    json,
                },
        } => {
            let r = kinsey::decay::bench(&model, steps, window, alpha, chunk)?;
            if json {
                println!(
                    "{}",
                    serde_json::to_string(&r).map_err(|e| Error::Numerical(e.to_string()))?
                );
            } else {
                println!(
                    "{} on {} steps: {:.2} s, {:.3e} steps/s, peak memory {:.0} MiB ({} threads)",
                    r.model, r.steps, r.seconds, r.steps_per_second, r.peak_rss_mib, r.threads
                );
            }
            Ok(())
        }
        Cmd::Histogram(a) => report_done(commands::run_histogram(&a)?),
        Cmd::Tree(a) => report_done(commands::run_tree(&a)?),
        Cmd::Sulq { cmd } => report_done(match cmd {
            Sulq::Kmeans(a) => commands::run_kmeans(&a)?,
            Sulq::Pca(a) => commands::run_pca(&a)?,
            Sulq::Perceptron(a) => commands::run_perceptron(&a)?,
            Sulq::Stat(a) => commands::run_stat(&a)?,
            Sulq::Implication(a) => commands::run_implication(&a)?,
        }),
        Cmd::Backends => {
            for (name, d) in kinsey::bench_crypto::describe_backends() {
                println!("{name}\n  {d}");
            }
            Ok(())
        }
        Cmd::Keys { which } => keys(which),
    }
}

#[cfg(not(feature = "paillier"))]
fn keys(_: KeysCmd) -> Result<()> {
    Err(Error::param(
        "keys",
        "this build has no Paillier backend (cargo feature 'paillier')",
    ))
}

#[cfg(feature = "paillier")]
fn keys(which: KeysCmd) -> Result<()> {
    use kinsey::keyfiles;
    let mut rng = kinsey::dp::rng::os_crypto_rng();
    let wrote = |files: Vec<PathBuf>| {
        for f in files {
            println!("wrote {}", f.display());
        }
    };
    match which {
        KeysCmd::Generate {
            out,
            bits,
            allow_insecure_test_keys,
        } => wrote(keyfiles::generate(
            bits,
            allow_insecure_test_keys,
            &out,
            &mut rng,
        )?),
        KeysCmd::Export { private, out } => wrote(keyfiles::export(&private, &out, &mut rng)?),
        KeysCmd::Import { private, out } => wrote(keyfiles::import(&private, &out, &mut rng)?),
        KeysCmd::Encrypt {
            public,
            value,
            allow_insecure_test_keys,
        } => println!(
            "{}",
            keyfiles::encrypt(&public, value, allow_insecure_test_keys, &mut rng)?
        ),
        KeysCmd::Decrypt {
            private,
            number,
            allow_insecure_test_keys,
        } => println!(
            "{}",
            keyfiles::decrypt(&private, &number, allow_insecure_test_keys, &mut rng)?
        ),
    }
    Ok(())
}

fn main() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("KINSEY_LOG").unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new("warn,kinsey=info,kinsey_kernels=info")
    });
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        eprintln!("error: {e}");
        let mut src = std::error::Error::source(&e);
        while let Some(s) = src {
            eprintln!("  caused by: {s}");
            src = s.source();
        }
        std::process::exit(1);
    }
}
