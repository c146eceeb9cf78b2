//! The aggregate-classifier job on sparse parties (LIBSVM text, or Parquet with list or map
//! columns of each row's non-zeros) kept sparse (CSR), so that a full-data
//! pass costs O(non-zeros) instead of O(rows x d) (a9a: 14 of its 123 features are set).
//!
//! Party by party: the party's file is read as CSR with the dense reader's checks, its
//! noise tag is the digest of its dense twin (`seeding`: a seed gives the noise of the same
//! rows read dense, or converted to Parquet), the row transform and the intercept go
//! through the dense code's per-row functions on the non-zeros, and every full-data pass
//! of the solver runs over the CSR rows (the Hessian subsample is gathered dense, so the
//! device kernel takes it unchanged). The rows are dropped before the next party is read,
//! unless the NOT PRIVATE diagnostics need them for the pooled baseline.
//!
//! Memory is bounded as the rows are read: every 65,536 rows the bytes the party will hold
//! (its CSR arrays, the intercept's copy, the Hessian subsample, the parties kept for the
//! diagnostics and the engine) are checked against the limit, and a party that passes it
//! stops the run there, naming the party, the bytes and the limit.

use crate::bounded::PROCESS_BYTES;
use crate::logreg::{self, Fit};
use crate::pipeline::{self, JobSpec, Local, PartyFacts, Report};
use crate::seeding::{NoiseKeys, Tag};
use kinsey_core::limits::show_bytes;
use kinsey_core::{Error, Progress, Result};
use kinsey_data::sparse::{SparseDataset, read_libsvm_sparse_within};
use kinsey_data::sparse_parquet::{SparseLayout, read_sparse_parquet_within};
use kinsey_data::{Dataset, LabelEncoding};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What a run over sparse parties is given besides the job's parameters.
#[derive(Debug, Clone)]
pub struct SparseInput {
    /// The job's name in the release (`train`).
    pub command: &'static str,
    /// One file (or, for Parquet, a directory) per party.
    pub parties: Vec<PathBuf>,
    /// How the parties' files store their rows.
    pub files: SparseFiles,
    /// Features (public: every party's files are read with it).
    pub dim: usize,
    /// How the files write their labels.
    pub labels: LabelEncoding,
    /// A test set with `dim` features, in memory (its errors are diagnostics).
    pub test: Option<Dataset>,
}

/// How sparse parties' files store their rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SparseFiles {
    /// LIBSVM text (labels first on each line, 1-based `index:value` pairs).
    Libsvm,
    /// Parquet with each row's non-zeros in list or map columns
    /// ([`kinsey_data::sparse_parquet`]).
    Parquet {
        /// The label column.
        label: String,
        /// The non-zeros' columns.
        layout: SparseLayout,
    },
}

impl SparseFiles {
    /// Read `path` as CSR of `dim` features; `within` bounds what is held as rows arrive.
    pub fn read_within(
        &self,
        path: &Path,
        (dim, labels): (usize, LabelEncoding),
        within: &mut dyn FnMut(&SparseDataset) -> Result<()>,
    ) -> Result<SparseDataset> {
        match self {
            Self::Libsvm => read_libsvm_sparse_within(path, dim, labels, within),
            Self::Parquet { label, layout } => {
                read_sparse_parquet_within(path, (dim, layout), (label, labels), within)
            }
        }
    }

    /// A test set of `dim` features in these files' form, read dense (within the dense
    /// reader's cap).
    pub fn read_test(&self, path: &Path, dim: usize, labels: LabelEncoding) -> Result<Dataset> {
        match self {
            Self::Libsvm => kinsey_data::libsvm::read_libsvm(path, dim, labels),
            Self::Parquet { .. } => {
                let name = path.display().to_string();
                let ds = self.read_within(path, (dim, labels), &mut |ds| {
                    kinsey_core::limits::check_dense(&name, ds.n(), dim)
                })?;
                Ok(ds.to_dense())
            }
        }
    }
}

/// One party after its fit: what the rest of the job needs from it.
struct SparseParty {
    tag: Tag,
    fit: Fit,
    transformed: usize,
    facts: PartyFacts,
    /// Its rows, kept only for the diagnostics' pooled baseline.
    rows: Option<SparseDataset>,
}

/// Bytes held besides a party's CSR arrays while it is fitted: the Hessian subsample,
/// gathered dense (twice: the copy and the kernel's), and a round of partial Hessians.
fn fit_bytes(n: usize, d: usize, spec: &JobSpec) -> u64 {
    let m = spec.solver.hessian_rows.min(n) as u64;
    let threads = rayon::current_num_threads() as u64;
    let d = d as u64;
    2 * m * (d + 1) * 4 + (2 * threads + 4) * d * d * 8
}

/// Read, tag, transform and fit party `j` of `k`, with `held` bytes already held.
fn fit_party(
    j: usize,
    k: usize,
    input: &SparseInput,
    (spec, keys): (&JobSpec, &NoiseKeys),
    (held, limit): (u64, u64),
) -> Result<SparseParty> {
    let path = &input.parties[j];
    let de = input.dim + usize::from(spec.intercept.is_some());
    // The intercept rebuilds the arrays: the party is held twice for a moment.
    let copies = 1 + u64::from(spec.intercept.is_some());
    // What the run will hold with `bytes` of this party's rows (`n` of them) read.
    let within = |bytes: u64, n: usize| -> Result<()> {
        let need = PROCESS_BYTES + held + copies * bytes + fit_bytes(n, de, spec);
        if need > limit {
            return Err(Error::param(
                "memory_limit",
                format!(
                    "party {} ({}): its rows as sparse (CSR) rows need at least {} with \
                     what the run already holds, above the memory limit of {}; raise \
                     [compute] memory_limit / --memory-limit{}",
                    j + 1,
                    path.display(),
                    show_bytes(need),
                    show_bytes(limit),
                    if held > 0 {
                        ", or train without --diagnostics (its pooled baseline holds every \
                         party)"
                    } else {
                        ""
                    }
                ),
            ));
        }
        Ok(())
    };
    // Before the file is opened, then as its rows arrive.
    within(0, 0)?;
    let mut ds = input
        .files
        .read_within(path, (input.dim, input.labels), &mut |ds| {
            within(ds.bytes(), ds.n())
        })?;
    // The tag of the rows as read (before the transform), as a dense party's.
    let tag = keys.tag_of(k, input.dim, j, || ds.digest());
    let transformed = ds.apply(spec.transform)?;
    if let Some(c) = spec.intercept {
        ds.append_intercept(c)?;
    }
    let fit = logreg::fit_passes(&ds, spec.device, &spec.objective, &spec.solver)?;
    let facts = PartyFacts {
        source: path.display().to_string(),
        n: ds.n(),
    };
    Ok(SparseParty {
        tag,
        fit,
        transformed,
        facts,
        rows: Some(ds),
    })
}

/// Run the whole job on sparse parties within `limit` bytes (see the module's
/// documentation).
pub fn run_sparse(
    input: SparseInput,
    spec: &JobSpec,
    keys: &NoiseKeys,
    diagnostics: bool,
    limit: u64,
    progress: &dyn Progress,
) -> Result<Report> {
    let t0 = Instant::now();
    let k = input.parties.len();
    pipeline::check_parties(k, spec.allow_two_parties)?;
    if k == 0 {
        return Err(Error::param("parties", "no parties"));
    }
    let read_features = Dataset::default_feature_names(input.dim);
    let mut test = input.test.clone();
    if let Some(t) = test.as_mut() {
        pipeline::prepare_test(&read_features, t, spec)?;
    }
    let (mut fits, mut tags, mut transformed, mut facts, mut kept) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut held = 0u64;
    progress.begin("training local classifiers (sparse rows)", Some(k as u64));
    for j in 0..k {
        let mut p = fit_party(j, k, &input, (spec, keys), (held, limit))?;
        fits.push(p.fit);
        tags.push(p.tag);
        transformed.push(p.transformed);
        facts.push(p.facts);
        if diagnostics && let Some(rows) = p.rows.take() {
            held += rows.bytes();
            kept.push(rows);
        }
        progress.advance(1);
    }
    progress.end();
    let mut features = read_features;
    if spec.intercept.is_some() {
        features.push(kinsey_data::INTERCEPT_FEATURE.into());
    }
    let local = Local {
        command: input.command,
        d: fits.first().map_or(0, |f| f.w.len()),
        fits,
        tags,
        transformed,
        parties: facts,
        features,
        ingest_s: 0.0,
        local_s: t0.elapsed().as_secs_f64(),
    };
    let pooled = move || SparseDataset::concat(&kept);
    let ctx = (spec, keys, progress);
    let mut report = pipeline::conclude(local, ctx, diagnostics.then_some(pooled), test.as_ref())?;
    if let Some(dg) = report.diagnostics.as_mut() {
        dg.timings.total_s = t0.elapsed().as_secs_f64();
    }
    Ok(report)
}

#[cfg(test)]
mod tests;
