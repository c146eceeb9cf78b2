//! `kinsey curator`: the curator of a network session. It holds no data; it writes the
//! published model and its release report once every participant has said goodbye.

use super::participant::{Hooks, join};
use kinsey_core::{Error, Result};
use kinsey_data::output::{Outputs, diagnostics_path, write_diagnostics, write_json};
use kinsey_dp::rng::{RngRecord, SeedSource};
use kinsey_learn::pipeline::{self, ModelFile, Published};
use kinsey_protocol::session::{Seat, run_participant};
use std::path::PathBuf;

/// Run the curator of a session from its TOML config (see `kinsey session init`).
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[arg(long)]
    /// The session file (TOML) of this participant.
    config: PathBuf,
    #[command(flatten)]
    hooks: Hooks,
}

/// Runs `kinsey curator`.
pub(crate) fn run(a: Args) -> Result<()> {
    let j = join(&a.config, false)?;
    let mesh = j.mesh(&a.hooks)?;
    let d = j.cfg.shared.dim();
    let k = j.session.parties;
    eprintln!(
        "curator: waiting for {k} parties (connect window {} s)",
        j.cfg.session.connect_window_s
    );
    let seat = Seat::new(j.backend.clone(), None, None, d);
    let outcome = run_participant(&mesh, &seat)?;
    let info = j.backend.info();
    let release = pipeline::release(
        &j.cfg.shared.job,
        &j.spec,
        Published {
            w: outcome.w.clone(),
            aggregator: format!(
                "secure 3-stage protocol ({}, {}) between {} processes over mutually \
                 authenticated TLS 1.3",
                info.name,
                info.key_words(),
                k + 1
            ),
            backend: Some(info),
            features: j.cfg.shared.model_features(),
            gradient_bound: j.spec.solver.tolerance,
            parties: k,
            rng: RngRecord {
                generator: "ChaCha20 (rand_chacha), one per party, keyed by that party: from the \
                            OS unless its own config sets a seed (the curator cannot see which)"
                    .into(),
                seed: SeedSource::Os,
                warning: Some(
                    "the curator cannot see how each party keyed its noise generator: a party \
                     whose config sets [privacy] seed made its noise reproducible by whoever \
                     knows that seed"
                        .into(),
                ),
            },
        },
    )?;
    let out = &j.cfg.output.dir;
    let mut o = Outputs::new();
    o.ensure_dir(out)?;
    write_json(&mut o, &out.join("report.json"), &release)?;
    let model = ModelFile::of(&release, &j.cfg.shared.label);
    write_json(&mut o, &out.join("model.json"), &model)?;
    let diag = diagnostics_path(out, "curator");
    if j.cfg.output.diagnostics {
        write_diagnostics(&mut o, &diag, &outcome.report)?;
    }
    o.commit()
        .map_err(|e| Error::Numerical(format!("writing the curator's outputs: {e}")))?;
    println!(
        "kinsey curator: published the DP aggregate classifier of {k} parties (d = {d}, {})",
        release.guarantee.short()
    );
    println!("  aggregation: {}", release.aggregator);
    // Timings follow the parties' sizes only loosely, but they are measured, not public.
    crate::term::print_diagnostic(&format!(
        "protocol: {:.2} s, {:.1} KiB sent by the curator",
        outcome.report.wall_seconds,
        outcome.report.total_bytes as f64 / 1024.0
    ));
    println!(
        "  wrote {}/report.json and {}/model.json",
        out.display(),
        out.display()
    );
    if j.cfg.output.diagnostics {
        crate::term::print_diagnostic(&format!("wrote {}", diag.display()));
    }
    Ok(())
}
