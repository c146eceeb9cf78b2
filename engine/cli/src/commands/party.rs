//! `kinsey party`: one party of a network session. It reads only its own data, trains its
//! local model, draws its own noise, and takes part in the protocol; nothing but protocol
//! messages leaves the process. It writes the published model, and (when asked) its own
//! NOT PRIVATE report: its traffic, timings, fit and noise calibration.

use super::participant::{Hooks, join};
use kinsey_core::{Error, Result};
use kinsey_data::output::{Outputs, diagnostics_path, write_diagnostics, write_json};
use kinsey_data::parquet_blocks::ParquetParty;
use kinsey_data::parquet_io::read_parquet;
use kinsey_learn::aggregate::{self, PartyInput};
use kinsey_learn::bounded::{self, MemoryBudget};
use kinsey_learn::pipeline::{self, ModelFile};
use kinsey_learn::seeding::NoiseKeys;
use kinsey_protocol::session::{Binding, Seat, run_participant};
use kinsey_protocol::transport::Peer;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// Run one party of a session from its TOML config (see `kinsey session init`).
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[arg(long)]
    /// The session file (TOML) of this participant.
    config: PathBuf,
    #[command(flatten)]
    hooks: Hooks,
}

/// Runs `kinsey party`.
pub(crate) fn run(a: Args) -> Result<()> {
    let t0 = Instant::now();
    let j = join(&a.config, true)?;
    let Peer::Party(idx) = j.me else {
        return Err(Error::param("session.me", "not a party"));
    };
    let mesh = j.mesh(&a.hooks)?;
    let shared = &j.cfg.shared;
    let data = j
        .cfg
        .data
        .as_ref()
        .ok_or_else(|| Error::param("data", "a party's config needs [data] path = ..."))?;
    let k = j.session.parties;
    let d = shared.features.len();
    let cols = shared.data(data.path.clone(), data.labels).columns();
    // The noise keys: the OS, or a seed bound to the job and, through the tags the parties
    // exchange before the protocol, to every party's data (as in the in-process run).
    let seed = j.cfg.privacy.as_ref().and_then(|p| p.seed);
    let job = pipeline::job_description(&shared.job, &j.spec, &shared.features);
    let keys = NoiseKeys::new(seed, false, job);
    // A party larger than half this machine's memory is spilled once and streamed (the
    // same model); the footers decide, before any row is read.
    let opened = ParquetParty::open(&data.path, &cols)?;
    let budget = MemoryBudget::default_for(j.cfg.output.dir.clone());
    let (tag, fit, n, transformed) =
        if bounded::fits_in_memory(std::slice::from_ref(&opened), &j.spec, false, budget.limit) {
            let mut ds = read_parquet(&data.path, &cols)?;
            ds.check_nonempty()?;
            let tag = keys.tag(k, d, idx, &ds);
            let transformed = j.spec.transform.apply(&mut ds)?;
            if let Some(c) = j.spec.intercept {
                kinsey_data::append_intercept(&mut ds, c)?;
            }
            (tag, pipeline::fit(&ds, &j.spec)?, ds.n(), transformed)
        } else {
            let p = bounded::fit_party(idx, k, &opened, (&j.spec, &keys), &budget)?;
            (p.tag, p.fit, p.n, p.transformed)
        };
    // The model's dimension (the tag above binds the data as read, as in-process runs do).
    let d = shared.dim();
    if fit.grad_norm.is_nan() || fit.grad_norm > j.spec.solver.tolerance {
        return Err(Error::param(
            "shared.max_iterations",
            format!(
                "{} did not reach the public gradient bound ||grad J|| <= {:e} (tolerance) within \
                 {} Newton iterations",
                j.me, j.spec.solver.tolerance, j.spec.solver.max_iterations
            ),
        ));
    }
    let g = j.spec.solver.tolerance;
    let cal = aggregate::calibrate(&j.spec.objective, &j.spec.privacy, n, k, d, g)?;
    let input = PartyInput {
        n,
        w: fit.w.clone(),
        noise: Vec::new(),
    };
    let drawn = cal.clone();
    let binding = Binding {
        tag,
        draw: Arc::new(move |tags| Ok(drawn.sample(&mut keys.party_rng(d, tags, idx)))),
    };
    let train_s = t0.elapsed().as_secs_f64();
    // The training time follows the party's size: a diagnostic, on its own terminal.
    crate::term::print_diagnostic(&format!(
        "{}: trained its local model in {train_s:.2} s",
        j.me
    ));
    eprintln!(
        "{}: joining the session (crypto backend on {})",
        j.me,
        j.backend.device()
    );
    let seat = Seat::new(j.backend.clone(), Some(input), Some(binding), d);
    let outcome = run_participant(&mesh, &seat)?;
    let out = &j.cfg.output.dir;
    let mut o = Outputs::new();
    o.ensure_dir(out)?;
    let model = ModelFile {
        kind: ModelFile::KIND.into(),
        features: shared.model_features(),
        label: shared.label.clone(),
        row_transform: j.spec.transform,
        intercept: j.spec.intercept,
        w: outcome.w.clone(),
        epsilon: shared.epsilon,
    };
    write_json(&mut o, &out.join("model.json"), &model)?;
    let diag = diagnostics_path(out, "party");
    if j.cfg.output.diagnostics {
        let report = serde_json::json!({
            "participant": j.me.to_string(),
            "rows": n,
            "rows_transformed": transformed,
            "local_fit": {
                "objective": fit.objective,
                "grad_norm": fit.grad_norm,
                "newton_iterations": fit.iterations,
                "seconds": fit.seconds,
                "device": fit.device,
            },
            "noise": cal,
            "training_seconds": train_s,
            "protocol": outcome.report,
        });
        write_diagnostics(&mut o, &diag, &report)?;
    }
    o.commit()?;
    println!(
        "kinsey {}: session finished; the published model is in {}/model.json",
        j.me,
        out.display()
    );
    if j.cfg.output.diagnostics {
        crate::term::print_diagnostic(&format!(
            "{}: sent {:.1} KiB in {} messages; wrote {}",
            j.me,
            outcome.report.total_bytes as f64 / 1024.0,
            outcome
                .report
                .participants
                .first()
                .map_or(0, |p| p.messages_sent),
            diag.display()
        ));
    }
    Ok(())
}
