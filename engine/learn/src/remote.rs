//! A party whose rows live elsewhere: a cluster's executors (Apache Spark, through the
//! Python package) hold them, and only sums come back.
//!
//! The driver (the party's coordinator) runs the solver, draws the noise and takes part in
//! the protocol exactly as a party on one machine does; the solver reads the rows only
//! through [`Passes`], and here every pass is one job on the cluster ([`RemoteParty::run`]):
//! each executor computes, for every row group of [`GROUP_ROWS`] rows it holds, what the
//! task asks ([`Work`]: the group's loss and gradient sums, its digest, its rows of the
//! Hessian subsample, its misclassified count), and the driver adds the groups' results in
//! group order with the local kernel's own reduction
//! (`kinsey_kernels::logistic::cpu::LogisticSums::add_group`). The row groups are the local
//! run's (the kernel's reduction groups and the data set digest's groups,
//! `kinsey_data::digest::GROUP_ROWS`), so the same rows give the local run's sums, tag and
//! model, byte for byte, however the cluster partitions them: the caller sends the rows of
//! groups that straddle partitions to one executor before the passes.

mod task;
mod worker;

pub use task::{GROUP_ROWS, Plan, Task, Work};
pub use worker::GroupWorker;

use crate::bounded::PartyFit;
use crate::logreg;
use crate::passes::Passes;
use crate::pipeline::{self, JobSpec, Local, PartyFacts, Report};
use crate::seeding::NoiseKeys;
use arrow::datatypes::Schema;
use kinsey_core::{Error, Progress, Result};
use kinsey_data::Dataset;
use kinsey_data::batch_decoder::BatchDecoder;
use kinsey_data::parquet_io::ColumnSpec;
use kinsey_kernels::logistic::cpu::LogisticSums;
use kinsey_kernels::{LossSums, Rows};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// Rows of group `g` of a party of `n` rows (the last group may be short).
pub use kinsey_data::row_groups::group_len as group_rows;

/// The groups of a party of `n` rows.
pub fn groups(n: usize) -> usize {
    n.div_ceil(GROUP_ROWS)
}

/// A party's rows on a cluster, as its driver sees them: the schema and row count (public
/// to the party), and jobs that run a [`Task`] on every partition and return each group's
/// payload.
pub trait RemoteParty: Send + Sync {
    /// Its name in messages and reports.
    fn name(&self) -> &str;
    /// The Arrow schema of its rows.
    fn schema(&self) -> &Schema;
    /// Its rows (counted on the cluster before anything else).
    fn rows(&self) -> usize;
    /// Run `task` (a [`Task`] as JSON) over every row: `(group, payload)` for each group,
    /// in any order.
    fn run(&self, task: &str) -> Result<Vec<(u64, Vec<u8>)>>;
    /// Where the passes run (`spark: local[2], 4 partitions`).
    fn describe(&self) -> String;
}

/// The plan of `party` under `spec`: its features resolved from its schema by `columns`'
/// rules (those of a Parquet file).
pub fn plan(party: &dyn RemoteParty, columns: &ColumnSpec, spec: &JobSpec) -> Result<Plan> {
    let dec = BatchDecoder::new(Path::new(party.name()), party.schema(), columns)?;
    let features = dec.features().to_vec();
    Ok(Plan {
        name: party.name().to_string(),
        columns: ColumnSpec {
            features: features.clone(),
            ..columns.clone()
        },
        features,
        transform: spec.transform,
        intercept: spec.intercept,
        rows: party.rows(),
    })
}

/// A remote party's full-data passes: each one job on its cluster.
pub struct RemotePasses {
    party: Arc<dyn RemoteParty>,
    plan: Plan,
}

impl std::fmt::Debug for RemotePasses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RemotePasses({})", self.plan.name)
    }
}

impl RemotePasses {
    /// The passes over `party`'s rows read by `plan`.
    pub fn new(party: Arc<dyn RemoteParty>, plan: Plan) -> Self {
        Self { party, plan }
    }

    fn d(&self) -> usize {
        self.plan.features.len() + usize::from(self.plan.intercept.is_some())
    }

    fn changed(&self) -> Error {
        changed(self.party.as_ref())
    }

    /// Run `work` and return every group's payload, in group order (each group once).
    pub fn collect(&self, work: Work) -> Result<Vec<Vec<u8>>> {
        let task = Task {
            plan: self.plan.clone(),
            work,
        };
        run_groups(self.party.as_ref(), &task)
    }
}

/// The error of a job whose groups are not the party's (its rows changed between jobs).
fn changed(party: &dyn RemoteParty) -> Error {
    Error::format(
        Path::new(party.name()),
        "the cluster returned other row groups than the data has (its rows changed between \
         jobs); the DataFrame must read the same rows in the same order on every job: a file \
         scan does (persist or checkpoint one that does not)",
    )
}

/// Run `task` (any task a worker reads: a party's [`Task`], a table's) over `party`'s rows
/// and return every group's payload in group order, each group exactly once (else the rows
/// changed between jobs, and the error says so).
pub fn run_groups(party: &dyn RemoteParty, task: &impl serde::Serialize) -> Result<Vec<Vec<u8>>> {
    let text =
        serde_json::to_string(task).map_err(|e| Error::param("task", format!("JSON: {e}")))?;
    let mut got = party.run(&text)?;
    got.sort_unstable_by_key(|(g, _)| *g);
    let ng = groups(party.rows());
    if got.len() != ng || got.iter().enumerate().any(|(i, (g, _))| *g != i as u64) {
        return Err(changed(party));
    }
    Ok(got.into_iter().map(|(_, p)| p).collect())
}

fn f64s(b: &[u8]) -> impl Iterator<Item = f64> + '_ {
    b.chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

impl Passes for RemotePasses {
    fn shape(&self) -> (usize, usize) {
        (self.plan.rows, self.d())
    }

    fn sums(&self, w: &[f64], hessian: bool) -> Result<LossSums> {
        let d = self.d();
        let payloads = self.collect(Work::Sums {
            w: w.to_vec(),
            hessian,
        })?;
        let mut sums = LogisticSums::new(w, d, hessian)?;
        let want = 8 * (1 + d + if hessian { d * d } else { 0 });
        for (g, p) in payloads.iter().enumerate() {
            if p.len() != want {
                return Err(self.changed());
            }
            let v: Vec<f64> = f64s(p).collect();
            sums.add_group(&kinsey_kernels::logistic::cpu::GroupSums {
                rows: group_rows(self.plan.rows, g as u64),
                loss: v[0],
                grad: v[1..=d].to_vec(),
                hessian_lower: hessian.then(|| v[1 + d..].to_vec()),
            })?;
        }
        Ok(sums.finish())
    }

    fn misclassified(&self, w: &[f64]) -> Result<usize> {
        let payloads = self.collect(Work::Misclassified { w: w.to_vec() })?;
        payloads.iter().try_fold(0usize, |acc, p| {
            u64_at(p, 0)
                .map(|c| acc + c as usize)
                .ok_or_else(|| self.changed())
        })
    }

    fn gather(&self, idx: &[usize]) -> Result<(Vec<f32>, Vec<f32>)> {
        let d = self.d();
        let payloads = self.collect(Work::Gather {
            rows: idx.iter().map(|&i| i as u64).collect(),
        })?;
        let row_bytes = 8 + 4 * (d + 1);
        let (mut x, mut y, mut at) = (Vec::with_capacity(idx.len() * d), Vec::new(), Vec::new());
        for p in &payloads {
            if p.len() % row_bytes != 0 {
                return Err(self.changed());
            }
            for r in p.chunks_exact(row_bytes) {
                at.push(u64_at(r, 0).unwrap_or(u64::MAX) as usize);
                let vals = r[8..]
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]));
                let mut vals: Vec<f32> = vals.collect();
                y.push(vals.pop().unwrap_or(f32::NAN));
                x.extend(vals);
            }
        }
        if at != idx {
            return Err(self.changed());
        }
        Ok((x, y))
    }

    fn in_memory(&self) -> Option<Rows<'_>> {
        None
    }

    fn describe(&self) -> String {
        self.party.describe()
    }
}

/// What the first job over a remote party finds: its digest's groups (seeded runs) and
/// how many rows the transform changes.
fn prepare(passes: &RemotePasses, seeded: bool) -> Result<(Vec<[u8; 32]>, usize)> {
    let payloads = passes.collect(Work::Prepare { digest: seeded })?;
    let (mut digests, mut changed) = (Vec::new(), 0usize);
    let at = if seeded { 32 } else { 0 };
    for p in &payloads {
        if p.len() != at + 8 {
            return Err(passes.changed());
        }
        if seeded {
            let mut g = [0u8; 32];
            g.copy_from_slice(&p[..32]);
            digests.push(g);
        }
        changed += u64_at(p, at).unwrap_or(0) as usize;
    }
    Ok((digests, changed))
}

/// Party `j` of `k` on its cluster: planned from its schema, its rows checked, digested
/// (seeded runs) and counted in one job, then fitted with every pass a job: what the
/// protocol needs from it, the same as a party on one machine gets from the same rows.
pub fn fit_party(
    j: usize,
    k: usize,
    party: Arc<dyn RemoteParty>,
    columns: &ColumnSpec,
    (spec, keys): (&JobSpec, &NoiseKeys),
) -> Result<PartyFit> {
    let plan = plan(party.as_ref(), columns, spec)?;
    let (n, d0) = (plan.rows, plan.features.len());
    if n == 0 {
        return Err(Error::format(
            Path::new(&plan.name),
            "the party has no rows",
        ));
    }
    let features = plan.features.clone();
    let passes = RemotePasses::new(party, plan);
    let (digests, transformed) = prepare(&passes, keys.seeded())?;
    let tag = keys.tag_of(k, d0, j, || {
        kinsey_data::digest::combine(n, d0, &features, &digests)
    });
    let fit = logreg::fit_passes(&passes, spec.device, &spec.objective, &spec.solver)?;
    Ok(PartyFit {
        tag,
        fit,
        n,
        transformed,
    })
}

/// Every party's rows one after another (the diagnostics' pooled baseline): sums and
/// counts added party by party, not the bits of one pass over the pooled rows (the
/// baseline is a NOT PRIVATE diagnostic).
struct Pooled(Vec<RemotePasses>);

impl Passes for Pooled {
    fn shape(&self) -> (usize, usize) {
        let n = self.0.iter().map(|p| p.shape().0).sum();
        (n, self.0.first().map_or(0, |p| p.d()))
    }

    fn sums(&self, w: &[f64], hessian: bool) -> Result<LossSums> {
        let mut total: Option<LossSums> = None;
        for p in &self.0 {
            let s = p.sums(w, hessian)?;
            total = Some(match total {
                None => s,
                Some(mut t) => {
                    t.loss += s.loss;
                    t.grad.iter_mut().zip(&s.grad).for_each(|(a, b)| *a += b);
                    if let (Some(h), Some(o)) = (t.hess.as_mut(), s.hess.as_ref()) {
                        h.iter_mut().zip(o).for_each(|(a, b)| *a += b);
                    }
                    t
                }
            });
        }
        total.ok_or_else(|| Error::param("parties", "no parties"))
    }

    fn misclassified(&self, w: &[f64]) -> Result<usize> {
        self.0.iter().map(|p| p.misclassified(w)).sum()
    }

    fn gather(&self, idx: &[usize]) -> Result<(Vec<f32>, Vec<f32>)> {
        let (mut x, mut y, mut first) = (Vec::new(), Vec::new(), 0usize);
        for p in &self.0 {
            let n = p.shape().0;
            let mine: Vec<usize> = idx
                .iter()
                .filter(|&&i| i >= first && i < first + n)
                .map(|&i| i - first)
                .collect();
            if !mine.is_empty() {
                let (px, py) = p.gather(&mine)?;
                x.extend(px);
                y.extend(py);
            }
            first += n;
        }
        Ok((x, y))
    }

    fn in_memory(&self) -> Option<Rows<'_>> {
        None
    }

    fn describe(&self) -> String {
        self.0.first().map_or_else(String::new, |p| p.describe())
    }
}

/// What a run over remote parties is given besides the job's parameters.
pub struct RemoteInput {
    /// The job's name in the release (`train`).
    pub command: &'static str,
    /// The parties.
    pub parties: Vec<Arc<dyn RemoteParty>>,
    /// How their rows are read.
    pub columns: ColumnSpec,
    /// A test set with the parties' columns, in memory (its errors are diagnostics).
    pub test: Option<Dataset>,
}

/// The features every party is read with (each party's schema must give the first's).
pub fn features(parties: &[Arc<dyn RemoteParty>], columns: &ColumnSpec) -> Result<Vec<String>> {
    let mut first: Option<Vec<String>> = None;
    for (j, p) in parties.iter().enumerate() {
        let f = BatchDecoder::new(Path::new(p.name()), p.schema(), columns)?
            .features()
            .to_vec();
        match &first {
            None => first = Some(f),
            Some(f0) if *f0 != f => {
                return Err(Error::format(
                    Path::new(p.name()),
                    format!(
                        "party {} has other features ({}) than party 1 ({})",
                        j + 1,
                        f.len(),
                        f0.len()
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    first.ok_or_else(|| Error::param("parties", "no parties"))
}

/// Run the whole job over parties on clusters: each fitted by [`fit_party`] in turn, then
/// aggregated and released as [`pipeline::run`] does. The release is the bytes of the
/// same parties' rows on one machine.
pub fn run(
    input: RemoteInput,
    spec: &JobSpec,
    keys: &NoiseKeys,
    diagnostics: bool,
    progress: &dyn Progress,
) -> Result<Report> {
    let RemoteInput {
        command,
        parties,
        columns,
        mut test,
    } = input;
    let t0 = Instant::now();
    let k = parties.len();
    pipeline::check_parties(k, spec.allow_two_parties)?;
    let mut features = features(&parties, &columns)?;
    if let Some(t) = test.as_mut() {
        pipeline::prepare_test(&features, t, spec)?;
    }
    let (mut fits, mut tags, mut transformed) = (Vec::new(), Vec::new(), Vec::new());
    progress.begin("training local classifiers (on clusters)", Some(k as u64));
    for (j, party) in parties.iter().enumerate() {
        let p = fit_party(j, k, party.clone(), &columns, (spec, keys))?;
        fits.push(p.fit);
        tags.push(p.tag);
        transformed.push(p.transformed);
        progress.advance(1);
    }
    progress.end();
    if spec.intercept.is_some() {
        features.push(kinsey_data::INTERCEPT_FEATURE.into());
    }
    let local = Local {
        command,
        d: fits.first().map_or(0, |f| f.w.len()),
        fits,
        tags,
        transformed,
        parties: parties
            .iter()
            .map(|p| PartyFacts {
                source: p.name().to_string(),
                n: p.rows(),
            })
            .collect(),
        features,
        ingest_s: 0.0,
        local_s: t0.elapsed().as_secs_f64(),
    };
    let pooled = || -> Result<Pooled> {
        parties
            .iter()
            .map(|p| {
                Ok(RemotePasses::new(
                    p.clone(),
                    plan(p.as_ref(), &columns, spec)?,
                ))
            })
            .collect::<Result<Vec<_>>>()
            .map(Pooled)
    };
    let ctx = (spec, keys, progress);
    let mut report = pipeline::conclude(local, ctx, diagnostics.then_some(pooled), test.as_ref())?;
    if let Some(dg) = report.diagnostics.as_mut() {
        dg.timings.total_s = t0.elapsed().as_secs_f64();
    }
    Ok(report)
}

impl std::fmt::Debug for RemoteInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.parties.iter().map(|p| p.name()).collect();
        write!(f, "RemoteInput({names:?})")
    }
}

#[cfg(test)]
mod tests;
