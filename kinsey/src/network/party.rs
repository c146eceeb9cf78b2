//! A party of a network session: it reads only its own data, trains its local model, draws
//! its own noise and takes part in the protocol; nothing but protocol messages leaves it.

use super::participant::Joined;
use crate::classifier::ModelFile;
use kinsey_core::{Error, Result};
use kinsey_data::output::{Outputs, diagnostics_path, write_diagnostics, write_json};
use kinsey_data::parquet_blocks::ParquetParty;
use kinsey_data::parquet_io::{ColumnSpec, read_parquet};
use kinsey_learn::aggregate::{self, PartyInput};
use kinsey_learn::bounded::{self, MemoryBudget};
use kinsey_learn::pipeline;
use kinsey_learn::remote::{self, RemoteParty};
use kinsey_learn::seeding::NoiseKeys;
use kinsey_protocol::session::{Binding, Seat, run_participant};
use kinsey_protocol::transport::Peer;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// A party's local fit: its noise tag, fit, rows and rows the transform changed.
type Fitted = (
    kinsey_learn::seeding::Tag,
    kinsey_learn::logreg::Fit,
    usize,
    usize,
);

/// A party's data and outputs.
#[derive(Debug, Clone)]
pub struct PartyData {
    /// Its Parquet file or directory (not read for a party on a cluster).
    pub path: PathBuf,
    /// The columns read (the session's features and label, and the label encoding).
    pub columns: ColumnSpec,
    /// A seed for its noise (trials only: NOT private against whoever knows it).
    pub seed: Option<u64>,
    /// Where it writes the published model (and its diagnostics, asked for).
    pub out: PathBuf,
    /// Write its NOT PRIVATE report: traffic, timings, fit and noise calibration.
    pub diagnostics: bool,
}

/// What a party's run wrote and measured.
#[derive(Debug, Clone)]
pub struct PartyOutcome {
    /// `<out>/model.json`.
    pub model: PathBuf,
    /// `<out>/party.NOT-PRIVATE.diagnostics.json`, when written.
    pub diagnostics: Option<PathBuf>,
    /// Bytes this party sent (a public function of K, d and the key size).
    pub bytes_sent: usize,
    /// Protocol messages it sent.
    pub messages_sent: usize,
}

impl Joined {
    /// Train this party's local model on its data (whole, or spilled and streamed past
    /// half this machine's memory), then run the protocol and write the published model.
    /// `trained` is told the training time (NOT PRIVATE: it follows the party's size)
    /// before the protocol starts.
    pub fn run_party(&self, data: &PartyData, trained: &dyn Fn(f64)) -> Result<PartyOutcome> {
        self.run_fitted(data, trained, &|keys, idx, k| {
            self.fit_local(data, keys, idx, k)
        })
    }

    /// [`run_party`](Self::run_party) for a party whose rows are on a cluster
    /// (`kinsey.spark.party`): every pass of its fit is a job there, and what it sends is
    /// what a party on one machine sends (`data.path` is not read).
    pub fn run_remote_party(
        &self,
        party: Arc<dyn RemoteParty>,
        data: &PartyData,
        trained: &dyn Fn(f64),
    ) -> Result<PartyOutcome> {
        self.run_fitted(data, trained, &|keys, idx, k| {
            let p = remote::fit_party(idx, k, party.clone(), &data.columns, (&self.spec, keys))?;
            Ok((p.tag, p.fit, p.n, p.transformed))
        })
    }

    /// This party's local fit from its Parquet data: its tag, fit, rows and transformed rows.
    fn fit_local(
        &self,
        data: &PartyData,
        keys: &NoiseKeys,
        idx: usize,
        k: usize,
    ) -> Result<Fitted> {
        let d = self.p.job.features.len();
        let cols = &data.columns;
        // A party larger than half this machine's memory is spilled once and streamed (the
        // same model); the footers decide, before any row is read.
        let opened = ParquetParty::open(&data.path, cols)?;
        let budget = MemoryBudget::default_for(data.out.clone());
        let fits = bounded::fits_in_memory(
            std::slice::from_ref(&opened),
            &self.spec,
            false,
            budget.limit,
        );
        Ok(if fits {
            let mut ds = read_parquet(&data.path, cols)?;
            ds.check_nonempty()?;
            let tag = keys.tag(k, d, idx, &ds);
            let transformed = self.spec.transform.apply(&mut ds)?;
            if let Some(c) = self.spec.intercept {
                kinsey_data::append_intercept(&mut ds, c)?;
            }
            (tag, pipeline::fit(&ds, &self.spec)?, ds.n(), transformed)
        } else {
            let p = bounded::fit_party(idx, k, &opened, (&self.spec, keys), &budget)?;
            (p.tag, p.fit, p.n, p.transformed)
        })
    }

    /// Fit this party (`fit`: its tag, local fit, rows and transformed rows), then run the
    /// protocol and write the published model.
    fn run_fitted(
        &self,
        data: &PartyData,
        trained: &dyn Fn(f64),
        fit: &dyn Fn(&NoiseKeys, usize, usize) -> Result<Fitted>,
    ) -> Result<PartyOutcome> {
        let t0 = Instant::now();
        let Peer::Party(idx) = self.me else {
            return Err(Error::param("session.me", "not a party"));
        };
        // The TLS files are checked before any row is read.
        let mesh = self.mesh()?;
        let job = &self.p.job;
        let k = self.session.parties;
        // The noise keys: the OS, or a seed bound to the job and, through the tags the
        // parties exchange before the protocol, to every party's data (as in-process).
        let description = pipeline::job_description(&job.name, &self.spec, &job.features);
        let keys = NoiseKeys::new(data.seed, false, description);
        let (tag, fit, n, transformed) = fit(&keys, idx, k)?;
        // The model's dimension (the tag above binds the data as read).
        let d = self.dim();
        let solver = &self.spec.solver;
        if fit.grad_norm.is_nan() || fit.grad_norm > solver.tolerance {
            return Err(Error::param(
                "shared.max_iterations",
                format!(
                    "{} did not reach the public gradient bound ||grad J|| <= {:e} (tolerance) \
                     within {} Newton iterations",
                    self.me, solver.tolerance, solver.max_iterations
                ),
            ));
        }
        let g = solver.tolerance;
        let cal = aggregate::calibrate(&self.spec.objective, &self.spec.privacy, n, k, d, g)?;
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
        trained(train_s);
        let seat = Seat::new(
            self.p.backend.backend().clone(),
            Some(input),
            Some(binding),
            d,
        );
        let outcome = run_participant(&mesh, &seat)?;
        let out = &data.out;
        let mut o = Outputs::new();
        o.ensure_dir(out)?;
        let model = ModelFile {
            kind: ModelFile::KIND.into(),
            features: job.model_features(),
            label: job.label.clone(),
            row_transform: self.spec.transform,
            intercept: self.spec.intercept,
            w: outcome.w.clone(),
            epsilon: job.epsilon,
        };
        let model_path = out.join("model.json");
        write_json(&mut o, &model_path, &model)?;
        let diag = diagnostics_path(out, "party");
        if data.diagnostics {
            let report = serde_json::json!({
                "participant": self.me.to_string(),
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
        Ok(PartyOutcome {
            model: model_path,
            diagnostics: data.diagnostics.then_some(diag),
            bytes_sent: outcome.report.total_bytes,
            messages_sent: outcome
                .report
                .participants
                .first()
                .map_or(0, |p| p.messages_sent),
        })
    }
}
