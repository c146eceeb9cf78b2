//! `kinsey train`: the aggregate classifier on the parties a TOML config lists.

use super::common::*;
use crate::config::TrainConfig;
use crate::term;
use kinsey::classifier::Job;
use kinsey_core::Result;
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

/// Runs `kinsey train`: the config and flags into the facade's [`Job`], which charges the
/// ledger, reads the parties (whole, party by party within the memory limit, or sparse)
/// and publishes; this prints and writes.
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
    let limit = match memory_limit {
        Some(b) => b,
        None => cfg
            .compute
            .memory_limit()?
            .unwrap_or_else(kinsey::classifier::default_memory_limit),
    };
    let privacy = cfg.privacy.spec();
    let cols = cfg.data.columns();
    let mut b = Job::builder();
    b = match cfg.data.sparse()? {
        Some((dim, files)) => b.sparse_parties(&cfg.data.parties, files, dim),
        None => b.parquet_parties(&cfg.data.parties, &cols.label),
    }
    .features(cols.features.clone())
    .labels(cols.labels)
    .epsilon(privacy.epsilon)
    .sensitivity(privacy.calibration)
    .noise(privacy.noise)
    .lambda(cfg.model.lambda)
    .solver(cfg.model.solver())
    .row_transform(cfg.data.transform()?)
    .device(cfg.compute.device)
    .aggregator(cfg.crypto.aggregation()?.into_aggregator())
    .memory_limit(limit)
    .spill_dir(cfg.compute.spill_dir.clone().unwrap_or(out.clone()))
    .progress(std::sync::Arc::new(term::Bars::default()));
    if let Some(c) = cfg.data.intercept()? {
        b = b.intercept(c);
    }
    if let Some(t) = &cfg.data.test {
        b = b.test(t);
    }
    if cfg.privacy.allow_two_parties {
        b = b.allow_two_parties();
    }
    if let Some(seed) = cfg.privacy.seed {
        b = b.seed(seed);
    }
    if record_seed {
        b = b.record_seed();
    }
    if diagnostics {
        b = b.diagnostics();
    }
    let ledger = super::ledger::facade_with(super::ledger::LedgerSetting {
        path: cfg.privacy.ledger.clone(),
        budget: cfg.privacy.ledger_budget,
        key: cfg.privacy.ledger_key.clone(),
        dataset: None,
    })?;
    if let Some(l) = &ledger {
        b = b.ledger(l);
    }
    let job = b.build()?;
    // The features every party is read with (public: the schema), so a column that should
    // not be one is seen before the model is published.
    println!("{}", features_line(&job.features()?));
    if diagnostics && !job.fits_in_memory_not_private()? {
        // Whether the parties fit follows their sizes: a diagnostic, only when asked.
        let (limit, spill) = job.memory();
        crate::term::print_diagnostic(&format!(
            "the parties do not fit the memory limit of {} together: training them one by \
             one, streamed through a private spill folder under {}",
            kinsey_core::limits::show_bytes(limit),
            spill.display()
        ));
    }
    let (trained, charged) = super::ledger::settle(ledger.as_ref(), job.run())?;
    let line = charged.summary(String::new());
    if !line.is_empty() {
        eprintln!("{line}");
    }
    finish_job(trained.report(), &out, &cfg.data.label)
}
