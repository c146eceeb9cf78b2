//! `kinsey train`: the aggregate classifier on the parties a TOML config lists.

use super::common::*;
use crate::config::TrainConfig;
use crate::term;
use kinsey_core::Result;
use kinsey_data::parquet_blocks::ParquetParty;
use kinsey_data::parquet_io::read_parquet;
use kinsey_learn::bounded::{self, MemoryBudget};
use kinsey_learn::logreg::Objective;
use kinsey_learn::pipeline::{self, JobSpec};
use kinsey_learn::seeding::NoiseKeys;
use kinsey_learn::sparse_job::{SparseFiles, SparseInput, run_sparse};
use std::path::PathBuf;

/// Train the DP aggregate classifier on the parties listed in a TOML config.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[arg(long)]
    /// The job file (TOML): data, model, privacy, compute, output, crypto (see examples/train.toml).
    config: PathBuf,
    /// Overrides [output] dir.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Also compute and write the NOT PRIVATE diagnostics (party sizes, per-party fits,
    /// non-private baselines, test errors, timings) to job.NOT-PRIVATE.diagnostics.json.
    #[arg(long)]
    diagnostics: bool,
    /// Write the seed's value into the report (by default it says only that a seed was used).
    #[arg(long)]
    record_seed: bool,
    /// The memory the run may use, e.g. 512MiB or 4GiB (overrides [compute] memory_limit;
    /// default half this machine's). Parties that do not fit together are trained one by
    /// one, each streamed from a private spill directory when it does not fit alone; the
    /// model is the same.
    #[arg(long, value_parser = kinsey_core::limits::parse_bytes, value_name = "BYTES")]
    memory_limit: Option<u64>,
}

/// Runs `kinsey train`.
pub(crate) fn run(a: Args) -> Result<()> {
    let Args {
        config,
        out,
        diagnostics,
        record_seed,
        memory_limit,
    } = a;
    let cfg = TrainConfig::load(&config)?;
    let out = out.unwrap_or(cfg.output.dir.clone());
    let budget = MemoryBudget {
        limit: match memory_limit {
            Some(b) => b,
            None => cfg
                .compute
                .memory_limit()?
                .unwrap_or_else(MemoryBudget::default_limit),
        },
        spill_base: cfg.compute.spill_dir.clone().unwrap_or(out.clone()),
    };
    let spec = JobSpec {
        objective: Objective::new(cfg.model.lambda)?,
        solver: cfg.model.solver(),
        privacy: cfg.privacy.spec(),
        device: cfg.compute.device,
        transform: cfg.data.transform()?,
        intercept: cfg.data.intercept()?,
        aggregation: cfg.crypto.aggregation()?.into_aggregator(),
        allow_two_parties: cfg.privacy.allow_two_parties,
    };
    // Charge, then compute, then publish: every party's data set is charged the
    // classifier's guarantee (public: K, d and the parameters) before any noise is drawn.
    let sparse = cfg.data.sparse()?;
    let d = match &sparse {
        Some((dim, _)) => *dim,
        None => match cfg.data.parties.first() {
            Some(p) => ParquetParty::open(p, &cfg.data.columns())?.features().len(),
            None => 0,
        },
    } + usize::from(spec.intercept.is_some());
    let g = pipeline::guarantee(&spec, cfg.data.parties.len(), d)?;
    let inputs: Vec<&std::path::Path> = cfg.data.parties.iter().map(|p| p.as_path()).collect();
    let charged = super::ledger::charge_with(
        &inputs,
        "train",
        g.epsilon,
        g.delta,
        super::ledger::LedgerSetting {
            path: cfg.privacy.ledger.clone(),
            budget: cfg.privacy.ledger_budget,
            key: cfg.privacy.ledger_key.clone(),
            dataset: None,
        },
    )?;
    let report = match sparse {
        Some(files) => sparse_report(&cfg, files, &spec, budget.limit, (diagnostics, record_seed))?,
        None => parquet_report(&cfg, &spec, &budget, (diagnostics, record_seed))?,
    };
    let r = &report.release.guarantee;
    if r.epsilon != g.epsilon || r.delta > g.delta {
        return Err(kinsey_core::Error::Numerical(format!(
            "the release's guarantee (epsilon {}, delta {}) is not the one charged (epsilon \
             {}, delta {})",
            r.epsilon, r.delta, g.epsilon, g.delta
        )));
    }
    let line = charged.summary(String::new());
    if !line.is_empty() {
        eprintln!("{line}");
    }
    finish_job(&report, &out, &cfg.data.label)
}

/// The report of a job over Parquet parties: in memory when they fit the budget together,
/// else party by party, each streamed when it does not fit alone.
fn parquet_report(
    cfg: &TrainConfig,
    spec: &JobSpec,
    budget: &MemoryBudget,
    (diagnostics, record_seed): (bool, bool),
) -> Result<pipeline::Report> {
    let cols = cfg.data.columns();
    // The footers only: shapes and features, before any row is decoded.
    let opened = cfg
        .data
        .parties
        .iter()
        .map(|p| ParquetParty::open(p, &cols))
        .collect::<Result<Vec<_>>>()?;
    let features = opened
        .first()
        .map(|p| p.features().to_vec())
        .unwrap_or_default();
    // The features every party is read with (public: the schema), so a column that should
    // not be one is seen before the model is published.
    println!("{}", features_line(&features));
    let job = pipeline::job_description("train", spec, &features);
    let keys = NoiseKeys::new(cfg.privacy.seed, record_seed, job);
    let test = cfg
        .data
        .test
        .as_ref()
        .map(|p| read_parquet(p, &cols))
        .transpose()?;
    if diagnostics && !bounded::fits_in_memory(&opened, spec, diagnostics, budget.limit) {
        // Whether the parties fit follows their sizes: a diagnostic, only when asked.
        crate::term::print_diagnostic(&format!(
            "the parties do not fit the memory limit of {} together: training them one by \
             one, streamed through a private spill folder under {}",
            kinsey_core::limits::show_bytes(budget.limit),
            budget.spill_base.display()
        ));
    }
    let input = bounded::FilesInput {
        command: "train",
        parties: opened,
        test,
    };
    let bars = term::Bars::default();
    bounded::run_parquet(input, &cols, (spec, &keys), diagnostics, budget, &bars)
}

/// The report of a job over sparse parties (LIBSVM or sparse Parquet files) of `dim`
/// features, kept sparse (CSR), party by party within `limit` bytes.
fn sparse_report(
    cfg: &TrainConfig,
    (dim, files): (usize, SparseFiles),
    spec: &JobSpec,
    limit: u64,
    (diagnostics, record_seed): (bool, bool),
) -> Result<pipeline::Report> {
    let features = kinsey_data::Dataset::default_feature_names(dim);
    println!("{}", features_line(&features));
    let job = pipeline::job_description("train", spec, &features);
    let keys = NoiseKeys::new(cfg.privacy.seed, record_seed, job);
    let test = cfg
        .data
        .test
        .as_ref()
        .map(|p| files.read_test(p, dim, cfg.data.labels))
        .transpose()?;
    let input = SparseInput {
        command: "train",
        parties: cfg.data.parties.clone(),
        files,
        dim,
        labels: cfg.data.labels,
        test,
    };
    run_sparse(
        input,
        spec,
        &keys,
        diagnostics,
        limit,
        &term::Bars::default(),
    )
}
