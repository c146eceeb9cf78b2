//! `kinsey demo`: the aggregate classifier on built-in synthetic parties.

use super::common::*;
use super::session::{self, InitArgs};
use crate::config::{self};
use crate::term;
use kinsey::DevicePref;
use kinsey::classifier::{Job, NoiseKind, SensitivityDerivation};
use kinsey_core::{Error, Result};
use std::path::PathBuf;

/// The main job on built-in synthetic data: 5 parties, train, aggregate privately, evaluate.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[arg(long, default_value = "kinsey-out")]
    /// Output directory.
    out: PathBuf,
    /// Reproducible noise (the release is then not private against whoever knows it).
    #[arg(long)]
    seed: Option<u64>,
    /// Write the seed's value into the report (by default it says only that a seed was used).
    #[arg(long)]
    record_seed: bool,
    #[arg(long, default_value = "auto")]
    /// Where the local training runs: auto (a hardware GPU if any), cpu or gpu.
    device: DevicePref,
    #[arg(long, default_value_t = 1.0)]
    /// Privacy budget of the published classifier.
    epsilon: f64,
    #[command(flatten)]
    crypto: CryptoArgs,
    /// Skip the diagnostics (on by default for the demo, whose parties are synthetic).
    #[arg(long)]
    no_diagnostics: bool,
    /// Test hook: make a participant fail (PARTICIPANT:STAGE:abort|garbage).
    #[arg(long, hide = true)]
    inject_fault: Option<String>,
    /// Number of parties K.
    #[arg(long, default_value_t = 5)]
    parties: usize,
    /// Accept K = 2: the smaller party can then compute the other party's exact model from
    /// the published one (docs/protocol-deployment.md).
    #[arg(long)]
    allow_two_parties: bool,
    /// Dimension of the synthetic data.
    #[arg(long, value_parser = kinsey_core::limits::parse_dim, default_value_t = 20)]
    dim: usize,
    /// Rows of the smallest party (party j has rows (1 + (j - 1) / 2)); `generate --rows`
    /// and `bench train --rows` count every row instead, hence the other name.
    #[arg(long = "smallest-party", value_name = "ROWS", default_value_t = 20_000)]
    rows: usize,
    /// Give the model an intercept: the public constant C in (0, 1) appended to every row
    /// (the rest scaled by sqrt(1 - C^2), so rows stay in the unit ball).
    #[arg(long, value_name = "C")]
    intercept: Option<f64>,
    /// Run every participant as its own process, connected by mutually authenticated TLS
    /// on 127.0.0.1 (the session is written to OUT/session; see `kinsey session init`).
    #[arg(long)]
    processes: bool,
    /// The memory the run may use, e.g. 512MiB or 4GiB (default half this machine's).
    /// Parties that do not fit together are generated and trained one by one, each
    /// streamed from a private spill directory under OUT when it does not fit alone; the
    /// model is the same.
    #[arg(long, value_parser = kinsey_core::limits::parse_bytes, value_name = "BYTES")]
    memory_limit: Option<u64>,
}

/// Runs `kinsey demo`.
pub(crate) fn run(a: Args) -> Result<()> {
    let Args {
        out,
        seed,
        record_seed,
        device: dev,
        epsilon,
        crypto,
        no_diagnostics,
        inject_fault,
        parties: k,
        allow_two_parties,
        dim: d,
        rows,
        intercept,
        processes,
        memory_limit,
    } = a;
    if let Some(c) = intercept {
        kinsey_data::check_intercept("intercept", c)?;
    }
    if processes {
        if memory_limit.is_some() {
            return Err(Error::param(
                "memory-limit",
                "not with --processes (each party process reads its own file)",
            ));
        }
        if inject_fault.is_some() {
            return Err(Error::param(
                "inject-fault",
                "not with --processes (the party and curator commands have their own hooks)",
            ));
        }
        return run_processes(InitArgs {
            parties: k,
            out: out.join("session"),
            base_port: None,
            dim: d,
            rows,
            seed,
            epsilon,
            allow_two_parties,
            intercept,
            connect_window: 600,
            timeout: 300,
            crypto,
            curator_out: Some(out.clone()),
        });
    }
    if k == 0 || d == 0 || rows < 2 {
        return Err(Error::param(
            "parties",
            "need parties >= 1, dim >= 1, smallest-party >= 2",
        ));
    }
    let (parties, test) = kinsey::data::demo_parties(k, d, rows)?;
    let aggregator = match (crypto.config().aggregation()?, inject_fault) {
        (config::Aggregation::Secure(a), Some(f)) => {
            config::Aggregation::Secure(a.dangerous_with_fault(f.parse()?))
        }
        (a, _) => a,
    }
    .into_aggregator();
    let limit = memory_limit.unwrap_or_else(kinsey::classifier::default_memory_limit);
    let mut b = Job::builder()
        .synthetic_parties(parties, test)
        .name("demo")
        .epsilon(epsilon)
        .sensitivity(SensitivityDerivation::Tight)
        .noise(NoiseKind::L2)
        .device(dev)
        .aggregator(aggregator)
        .memory_limit(limit)
        .spill_dir(out.clone())
        .progress(std::sync::Arc::new(term::Bars::default()));
    if let Some(c) = intercept {
        b = b.intercept(c);
    }
    if allow_two_parties {
        b = b.allow_two_parties();
    }
    if let Some(seed) = seed {
        b = b.seed(seed);
    }
    if record_seed {
        b = b.record_seed();
    }
    if !no_diagnostics {
        b = b.diagnostics();
    }
    let job = b.build()?;
    if !job.fits_in_memory_not_private()? {
        // The parties' sizes are public here (the demo's parameters), but the message
        // follows them: a diagnostic, as `train`'s.
        term::print_diagnostic(&format!(
            "the parties do not fit the memory limit of {} together: generating and training \
             them one by one, streamed through a private spill folder under {}",
            kinsey_core::limits::show_bytes(limit),
            out.display()
        ));
    }
    let trained = job.run()?;
    finish_job(trained.report(), &out, "label")
}

/// `--processes`: write a session under OUT/session and run one child process per
/// participant; the curator writes the published model to OUT.
fn run_processes(mut init: InitArgs) -> Result<()> {
    let dir = init.out.clone();
    if dir.join("roster.toml").exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    }
    if let Some(c) = init.curator_out.as_mut()
        && c.is_relative()
    {
        *c = std::env::current_dir()
            .map_err(|e| Error::io(".", e))?
            .join(&*c);
    }
    let configs = session::init(&init)?;
    eprintln!(
        "kinsey demo --processes: {} parties and the curator as separate processes over TLS (session in {})",
        init.parties,
        dir.display()
    );
    let logs = dir.join("logs");
    session::run_local(&configs, &logs, std::time::Duration::from_secs(3600))?;
    let curator_log = logs.join("curator.log");
    let text = std::fs::read_to_string(&curator_log).map_err(|e| Error::io(&curator_log, e))?;
    for l in text.lines().filter(|l| !l.starts_with("curator: waiting")) {
        println!("{l}");
    }
    Ok(())
}
