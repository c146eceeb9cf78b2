//! `kinsey train`: the aggregate classifier on the parties a TOML config lists.

use super::common::*;
use crate::config::TrainConfig;
use crate::term;
use kinsey_core::Result;
use kinsey_data::parquet_io::read_parquet;
use kinsey_learn::logreg::Objective;
use kinsey_learn::pipeline::{self, JobSpec};
use kinsey_learn::seeding::NoiseKeys;
use std::path::PathBuf;
use std::time::Instant;

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
}

/// Runs `kinsey train`.
pub(crate) fn run(a: Args) -> Result<()> {
    let Args {
        config,
        out,
        diagnostics,
        record_seed,
    } = a;
    let cfg = TrainConfig::load(&config)?;
    let t = Instant::now();
    let cols = cfg.data.columns();
    let bar = crate::term::bar(cfg.data.parties.len() as u64, "reading parties");
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
        device: cfg.compute.device,
        transform: cfg.data.transform()?,
        intercept: cfg.data.intercept()?,
        aggregation: cfg.crypto.aggregation()?.into_aggregator(),
        allow_two_parties: cfg.privacy.allow_two_parties,
    };
    let features = parties
        .first()
        .map(|p| p.features.clone())
        .unwrap_or_default();
    // The features every party is read with (public: the schema), so a column that should
    // not be one is seen before the model is published.
    println!("{}", features_line(&features));
    let job = pipeline::job_description("train", &spec, &features);
    let keys = NoiseKeys::new(cfg.privacy.seed, record_seed, job);
    let input = pipeline::RunInput {
        command: "train",
        parties,
        test,
        ingest_s: t.elapsed().as_secs_f64(),
    };
    let report = pipeline::run(input, &spec, &keys, diagnostics, &term::Bars::default())?;
    // Every party's data set is charged the classifier's guarantee, before anything is
    // written (the release is computed in memory; a refused one is discarded unseen).
    let g = &report.release.guarantee;
    let inputs: Vec<&std::path::Path> = cfg.data.parties.iter().map(|p| p.as_path()).collect();
    let ledger = super::ledger::charge_with(
        &inputs,
        "train",
        g.epsilon,
        g.delta,
        super::ledger::LedgerSetting {
            path: cfg.privacy.ledger.clone(),
            budget: cfg.privacy.ledger_budget,
        },
    )?;
    if let Some(line) = ledger {
        eprintln!("{line}");
    }
    finish_job(
        &report,
        &out.unwrap_or(cfg.output.dir.clone()),
        &cfg.data.label,
    )
}
