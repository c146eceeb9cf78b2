//! The curator of a network session: it holds no data; once every participant has said
//! goodbye it writes the published model and its release report.

use super::participant::Joined;
use crate::classifier::{ModelFile, Release};
use kinsey_core::{Error, Result};
use kinsey_data::output::{Outputs, diagnostics_path, write_diagnostics, write_json};
use kinsey_dp::rng::{RngRecord, SeedSource};
use kinsey_learn::pipeline::{self, Published};
use kinsey_protocol::session::{Seat, run_participant};
use std::path::{Path, PathBuf};

/// What the curator published and measured.
#[derive(Debug, Clone)]
pub struct CuratorOutcome {
    /// The release: the model, its guarantee and public parameters.
    pub release: Release,
    /// `<out>/report.json`.
    pub report: PathBuf,
    /// `<out>/model.json`.
    pub model: PathBuf,
    /// `<out>/curator.NOT-PRIVATE.diagnostics.json`, when written.
    pub diagnostics: Option<PathBuf>,
    /// Seconds the protocol took (measured).
    pub seconds: f64,
    /// Bytes the curator sent.
    pub bytes_sent: usize,
}

impl Joined {
    /// Run the protocol as the curator and write the release to `out`.
    pub fn run_curator(&self, out: &Path, diagnostics: bool) -> Result<CuratorOutcome> {
        let d = self.dim();
        let k = self.session.parties;
        let backend = self.p.backend.backend().clone();
        let mesh = self.mesh()?;
        let seat = Seat::new(backend.clone(), None, None, d);
        let outcome = run_participant(&mesh, &seat)?;
        let info = backend.info();
        let job = &self.p.job;
        let release = pipeline::release(
            &job.name,
            &self.spec,
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
                features: job.model_features(),
                gradient_bound: self.spec.solver.tolerance,
                parties: k,
                rng: RngRecord {
                    generator: "ChaCha20 (rand_chacha), one per party, keyed by that party: from \
                                the OS unless its own config sets a seed (the curator cannot \
                                see which)"
                        .into(),
                    seed: SeedSource::Os,
                    warning: Some(
                        "the curator cannot see how each party keyed its noise generator: a \
                         party whose config sets [privacy] seed made its noise reproducible \
                         by whoever knows that seed"
                            .into(),
                    ),
                },
            },
        )?;
        let mut o = Outputs::new();
        o.ensure_dir(out)?;
        let report = out.join("report.json");
        write_json(&mut o, &report, &release)?;
        let model = out.join("model.json");
        write_json(&mut o, &model, &ModelFile::of(&release, &job.label))?;
        let diag = diagnostics_path(out, "curator");
        if diagnostics {
            write_diagnostics(&mut o, &diag, &outcome.report)?;
        }
        o.commit()
            .map_err(|e| Error::Numerical(format!("writing the curator's outputs: {e}")))?;
        Ok(CuratorOutcome {
            release,
            report,
            model,
            diagnostics: diagnostics.then_some(diag),
            seconds: outcome.report.wall_seconds,
            bytes_sent: outcome.report.total_bytes,
        })
    }
}
