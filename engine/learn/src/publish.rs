//! Publishing a finished job: its model file and the files it writes, all or nothing.

use crate::model_file::ModelFile;
use crate::pipeline::{Release, Report};
use kinsey_core::Result;
use std::path::{Path, PathBuf};

impl ModelFile {
    /// The model file of a release (`label`: the label column's name, which the release
    /// does not hold).
    pub fn of(release: &Release, label: &str) -> Self {
        Self {
            kind: Self::KIND.into(),
            features: release.features.clone(),
            label: label.into(),
            row_transform: release.row_transform,
            intercept: release.intercept,
            w: release.w.clone(),
            epsilon: release.privacy.epsilon,
        }
    }
}

/// The files a job wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The release (`report.json`).
    pub report: PathBuf,
    /// The model (`model.json`).
    pub model: PathBuf,
    /// The NOT PRIVATE diagnostics, when the job computed them.
    pub diagnostics: Option<PathBuf>,
}

impl Report {
    /// Write the release (`report.json`), its model (`model.json`, `label` naming the
    /// label column) and, when computed, the diagnostics
    /// (`job.NOT-PRIVATE.diagnostics.json`) into `out`: all of them or, on an error,
    /// none.
    pub fn write(&self, out: &Path, label: &str) -> Result<Written> {
        use kinsey_data::output::{Outputs, diagnostics_path, write_diagnostics, write_json};
        let mut o = Outputs::new();
        o.ensure_dir(out)?;
        let written = Written {
            report: out.join("report.json"),
            model: out.join("model.json"),
            diagnostics: self
                .diagnostics
                .as_ref()
                .map(|_| diagnostics_path(out, "job")),
        };
        write_json(&mut o, &written.report, &self.release)?;
        write_json(&mut o, &written.model, &ModelFile::of(&self.release, label))?;
        if let (Some(d), Some(p)) = (&self.diagnostics, &written.diagnostics) {
            write_diagnostics(&mut o, p, d)?;
        }
        o.commit()?;
        Ok(written)
    }
}
