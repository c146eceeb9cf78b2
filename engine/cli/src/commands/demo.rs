//! `kinsey demo`: the aggregate classifier on built-in synthetic parties.

use super::common::*;
use crate::config::{self};
use crate::term;
use kinsey_core::Result;
use kinsey_data::{Dataset, RowTransform, synth};
use kinsey_dp::NoiseRng;
use kinsey_kernels::DevicePref;
use kinsey_learn::aggregate::{Calibration, NoiseKind, PrivacySpec};
use kinsey_learn::logreg::{Objective, SolverConfig};
use kinsey_learn::pipeline::{self, JobSpec};
use std::path::PathBuf;
use std::time::Instant;

/// The main job on built-in synthetic data: 5 parties, train, aggregate privately, evaluate.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[arg(long, default_value = "kinsey-out")]
    out: PathBuf,
    /// Reproducible noise (the release is then not private against whoever knows it).
    #[arg(long)]
    seed: Option<u64>,
    /// Write the seed's value into the report (by default it says only that a seed was used).
    #[arg(long)]
    record_seed: bool,
    #[arg(long, default_value = "auto")]
    device: DevicePref,
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
    } = a;
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
        device: dev,
        transform: RowTransform::None,
        aggregation: match (crypto.config().aggregation()?, inject_fault) {
            (config::Aggregation::Secure(a), Some(f)) => {
                config::Aggregation::Secure(a.with_fault(f.parse()?))
            }
            (a, _) => a,
        }
        .into_aggregator(),
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
        &term::Bars::default(),
    )?;
    finish_job(&report, &out, "label")
}
