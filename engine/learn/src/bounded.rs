//! The aggregate-classifier job in bounded memory, for parties read from Parquet that do
//! not fit the memory a run may use together.
//!
//! Party by party: the first pass decodes the party's file a block at a time, digests the
//! rows as read (its noise tag, as `seeding` defines it), applies the row transform and the
//! intercept, and spills the rows ([`crate::spill`]); the party is then fitted, in memory
//! when it fits the budget alone, else with every full-data pass streamed from the spill;
//! its rows are dropped before the next party is read. The pooled diagnostics baseline
//! streams over every party's spill. Blocks are whole row groups of the kernel's fixed
//! reduction order, so the model, the tags and the noise are those of the in-memory run
//! (`pipeline::run`): the same bytes with the same seed.
//!
//! The plan is made from the footers and public parameters before any row is read: a
//! budget that cannot hold even the smallest block is refused then, naming the party, the
//! bytes needed and the limit.

use crate::logreg::{self, Fit};
use crate::passes::MemoryPasses;
use crate::pipeline::{self, JobSpec, Local, PartyFacts, Report};
use crate::seeding::{NoiseKeys, Tag};
use crate::spill::{Spill, SpillDir, SpillPart, SpillWriter};
use kinsey_core::limits::show_bytes;
use kinsey_core::{Error, Progress, Result};
use kinsey_data::Dataset;
use kinsey_data::digest::DatasetDigest;
use kinsey_data::parquet_blocks::{ParquetParty, PartyBlocks};
use kinsey_data::parquet_io::ColumnSpec;
use kinsey_kernels::logistic::cpu::GROUP_ROWS;
use std::path::PathBuf;
use std::time::Instant;

/// How much memory a run may use, and where it may spill rows.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryBudget {
    /// Bytes of resident memory the run plans for.
    pub limit: u64,
    /// The directory under which a private spill directory is made (and removed).
    pub spill_base: PathBuf,
}

impl MemoryBudget {
    /// Half of this machine's memory (8 GiB where it cannot be read), spilling under
    /// `spill_base`.
    pub fn default_for(spill_base: PathBuf) -> Self {
        Self {
            limit: Self::default_limit(),
            spill_base,
        }
    }

    /// Half of this machine's memory, or 8 GiB where it cannot be read.
    pub fn default_limit() -> u64 {
        kinsey_core::limits::default_memory_limit()
    }
}

/// What a run over Parquet parties is given besides the job's parameters.
#[derive(Debug, Clone)]
pub struct FilesInput<P = ParquetParty> {
    /// The job's name in the release (`train`).
    pub command: &'static str,
    /// The parties, opened (footers read, no rows decoded).
    pub parties: Vec<P>,
    /// A test set with the parties' columns, in memory (its errors are diagnostics).
    pub test: Option<Dataset>,
}

/// The engine itself: code, allocator arenas, thread stacks, keys and protocol buffers.
pub(crate) const PROCESS_BYTES: u64 = 96 << 20;
/// The largest block a pass reads at once.
const MAX_BLOCK_ROWS: usize = 16 * GROUP_ROWS;

/// Bytes of one row of `d` features and its label, as `f32`.
fn row_bytes(d: usize) -> u64 {
    (d as u64 + 1) * 4
}

/// Features the solver sees (the intercept adds one).
fn solver_dim(party: &dyn PartyBlocks, spec: &JobSpec) -> usize {
    party.d() + usize::from(spec.intercept.is_some())
}

/// Bytes the in-memory run (`pipeline::run`) needs for these parties: every party's rows
/// at once (twice with the diagnostics' pooled copy), the largest party's transient copy
/// when an intercept is appended, and the engine itself.
pub fn in_memory_bytes<P: PartyBlocks>(parties: &[P], spec: &JobSpec, diagnostics: bool) -> u64 {
    let held: u64 = parties
        .iter()
        .map(|p| p.rows() as u64 * row_bytes(solver_dim(p, spec)))
        .sum();
    let copy = if spec.intercept.is_some() {
        parties
            .iter()
            .map(|p| p.rows() as u64 * row_bytes(p.d()))
            .max()
            .unwrap_or(0)
    } else {
        0
    };
    PROCESS_BYTES + held * (1 + u64::from(diagnostics)) + copy
}

/// Whether the in-memory run fits `limit`: [`in_memory_bytes`] within it, and every party
/// within the dense cap a whole-file read accepts (`kinsey_core::limits::MAX_DENSE_BYTES`).
pub fn fits_in_memory<P: PartyBlocks>(
    parties: &[P],
    spec: &JobSpec,
    diagnostics: bool,
    limit: u64,
) -> bool {
    let dense_ok = parties
        .iter()
        .all(|p| p.rows() as u64 * p.d() as u64 * 4 <= kinsey_core::limits::MAX_DENSE_BYTES);
    dense_ok && in_memory_bytes(parties, spec, diagnostics) <= limit
}

/// How a bounded run reads: rows per block, and the bytes a streamed party needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    /// Rows per block (a multiple of the kernel's `GROUP_ROWS`).
    pub block_rows: usize,
    /// Bytes a party needs while it is streamed.
    pub stream_bytes: u64,
}

/// Bytes of streaming `party` in blocks of `block`: its largest compressed row group
/// (twice: fetched and decompressed), the decoded block (Arrow columns, `f32` rows, `f64`
/// casts), the transformed block and the spill's two read buffers, the Hessian subsample
/// (gathered and in the kernel), a round of partial Hessians, and the engine.
fn stream_bytes(party: &dyn PartyBlocks, rg_bytes: u64, spec: &JobSpec, block: usize) -> u64 {
    let (d, de) = (party.d() as u64, solver_dim(party, spec) as u64);
    // A party shorter than a block is read in one block of its own length.
    let b = block.min(party.rows()) as u64;
    let m = spec.solver.hessian_rows.min(party.rows()) as u64;
    let threads = rayon::current_num_threads() as u64;
    PROCESS_BYTES
        + 2 * rg_bytes
        + b * d * 16
        + 3 * b * row_bytes(de as usize)
        + 2 * m * row_bytes(de as usize)
        + (2 * threads + 4) * de * de * 8
}

/// The plan for these parties under `limit`: the largest block (at most 16 groups) every
/// party can stream within it, or, before any row is read, the first party that cannot
/// stream even one group of rows, with the bytes it needs and the limit.
pub fn plan<P: PartyBlocks>(parties: &[P], spec: &JobSpec, limit: u64) -> Result<Plan> {
    let mut block = MAX_BLOCK_ROWS;
    let mut need = 0;
    for (j, p) in parties.iter().enumerate() {
        let rg = p.reader_bytes();
        while block > GROUP_ROWS && stream_bytes(p, rg, spec, block) > limit {
            block -= GROUP_ROWS;
        }
        let least = stream_bytes(p, rg, spec, block);
        if least > limit {
            let (file, rewrite) = if rg > 0 {
                (
                    ", the file's largest row group",
                    ", or rewrite the file with smaller row groups",
                )
            } else {
                ("", "")
            };
            return Err(Error::param(
                "memory_limit",
                format!(
                    "party {} ({}): streaming it needs at least {} (blocks of {GROUP_ROWS} \
                     rows of {} features{file}, a Hessian subsample of up to {} rows), above \
                     the memory limit of {}; raise [compute] memory_limit / --memory-limit or \
                     lower model.hessian_rows{rewrite}",
                    j + 1,
                    p.name().display(),
                    show_bytes(least),
                    solver_dim(p, spec),
                    spec.solver.hessian_rows,
                    show_bytes(limit)
                ),
            ));
        }
        need = need.max(least);
    }
    Ok(Plan {
        block_rows: block,
        stream_bytes: need,
    })
}

/// One party after its first pass: its tag, its spilled rows, and how many rows the
/// transform changed.
struct Spilled {
    tag: Tag,
    part: SpillPart,
    transformed: usize,
}

/// The first pass over party `j` of `k`: digest (seeded runs), transform, intercept, spill.
fn spill_party(
    j: usize,
    k: usize,
    party: &dyn PartyBlocks,
    (spec, keys): (&JobSpec, &NoiseKeys),
    dir: &SpillDir,
    block_rows: usize,
) -> Result<Spilled> {
    let d = party.d();
    let mut digest = keys
        .seeded()
        .then(|| DatasetDigest::new(party.rows(), d, party.features()));
    let mut out = SpillWriter::create(dir, &format!("party-{}", j + 1), solver_dim(party, spec))?;
    let (mut row0, mut transformed) = (0usize, 0usize);
    party.for_each_block(block_rows, &mut |block| {
        if let Some(dg) = digest.as_mut() {
            dg.block(&block.x, &block.y);
        }
        transformed += spec
            .transform
            .apply(block)
            .map_err(|e| kinsey_data::offset_row(e, row0))?;
        if let Some(c) = spec.intercept {
            kinsey_data::append_intercept(block, c)?;
        }
        out.append(&block.x, &block.y)?;
        row0 += block.n();
        Ok(())
    })?;
    let part = out.finish()?;
    let tag = match digest {
        Some(dg) => keys.tag_of(k, d, j, || dg.finish()),
        // Unseeded, the tag is 32 bytes from the OS and no digest is read.
        None => keys.tag_of(k, d, j, || kinsey_dp::DataDigest([0; 32])),
    };
    Ok(Spilled {
        tag,
        part,
        transformed,
    })
}

/// Check every party against the first: the same features.
fn check_features<P: PartyBlocks>(parties: &[P]) -> Result<()> {
    let first = parties
        .first()
        .ok_or_else(|| Error::param("parties", "no parties"))?;
    for (j, p) in parties.iter().enumerate().skip(1) {
        if p.features() != first.features() {
            return Err(Error::format(
                p.name(),
                format!(
                    "party {} has other features ({}) than party 1 ({})",
                    j + 1,
                    p.d(),
                    first.d()
                ),
            ));
        }
    }
    Ok(())
}

/// Fit party `j` from its spill: in memory when it fits the budget alone, else streamed.
fn fit_spilled(part: &SpillPart, plan: &Plan, spec: &JobSpec, limit: u64) -> Result<Fit> {
    let spill = Spill::new(vec![part.clone()], plan.block_rows)?;
    let (n, d) = crate::passes::Passes::shape(&spill);
    let resident = n as u64 * row_bytes(d) + plan.stream_bytes;
    if resident <= limit {
        let (x, y) = spill.load()?;
        let rows = kinsey_kernels::Rows::new(&x, &y, d)?;
        logreg::fit_passes(
            &MemoryPasses::new(rows),
            spec.device,
            &spec.objective,
            &spec.solver,
        )
    } else {
        logreg::fit_passes(&spill, spec.device, &spec.objective, &spec.solver)
    }
}

/// One party fitted in bounded memory (a network session's party, which holds only its
/// own data): what the protocol needs from it.
#[derive(Debug, Clone)]
pub struct PartyFit {
    /// Its noise tag (`seeding`), from its data as read.
    pub tag: Tag,
    /// Its local model.
    pub fit: Fit,
    /// Its rows (secret: it calibrates its own noise).
    pub n: usize,
    /// Rows the transform changed (a diagnostic).
    pub transformed: usize,
}

/// Party `j` of `k` within `budget`: planned from its footers (refused before reading when
/// the budget cannot hold a block), spilled once, fitted in memory when it fits alone,
/// else streamed; the spill is removed before it returns.
pub fn fit_party<P: PartyBlocks>(
    j: usize,
    k: usize,
    party: &P,
    (spec, keys): (&JobSpec, &NoiseKeys),
    budget: &MemoryBudget,
) -> Result<PartyFit> {
    let plan = plan(std::slice::from_ref(party), spec, budget.limit)?;
    let dir = SpillDir::create(&budget.spill_base)?;
    let s = spill_party(j, k, party, (spec, keys), &dir, plan.block_rows)?;
    let fit = fit_spilled(&s.part, &plan, spec, budget.limit)?;
    Ok(PartyFit {
        tag: s.tag,
        fit,
        n: party.rows(),
        transformed: s.transformed,
    })
}

/// Run the whole job over Parquet parties (opened: footers read), read with `columns`: in
/// memory ([`pipeline::run`]) when they fit `budget` together ([`fits_in_memory`]), else
/// party by party ([`run_bounded`]). The release is the same bytes either way.
pub fn run_parquet(
    input: FilesInput,
    columns: &ColumnSpec,
    (spec, keys): (&JobSpec, &NoiseKeys),
    diagnostics: bool,
    budget: &MemoryBudget,
    progress: &dyn Progress,
) -> Result<Report> {
    if !fits_in_memory(&input.parties, spec, diagnostics, budget.limit) {
        return run_bounded(input, spec, keys, diagnostics, budget, progress);
    }
    let t = Instant::now();
    progress.begin("reading parties", Some(input.parties.len() as u64));
    let parties = input
        .parties
        .iter()
        .map(|p| {
            let ds = kinsey_data::parquet_io::read_parquet(p.path(), columns);
            progress.advance(1);
            ds
        })
        .collect::<Result<Vec<_>>>();
    progress.end();
    let input = pipeline::RunInput {
        command: input.command,
        parties: parties?,
        test: input.test,
        ingest_s: t.elapsed().as_secs_f64(),
    };
    pipeline::run(input, spec, keys, diagnostics, progress)
}

/// Run the whole job party by party within `budget` (see the module's documentation).
pub fn run_bounded<P: PartyBlocks>(
    input: FilesInput<P>,
    spec: &JobSpec,
    keys: &NoiseKeys,
    diagnostics: bool,
    budget: &MemoryBudget,
    progress: &dyn Progress,
) -> Result<Report> {
    let FilesInput {
        command,
        parties,
        mut test,
    } = input;
    let t0 = Instant::now();
    let k = parties.len();
    pipeline::check_parties(k, spec.allow_two_parties)?;
    check_features(&parties)?;
    let plan = plan(&parties, spec, budget.limit)?;
    if let Some(t) = test.as_mut() {
        pipeline::prepare_test(parties[0].features(), t, spec)?;
    }
    let dir = SpillDir::create(&budget.spill_base)?;
    let (mut fits, mut tags, mut parts, mut transformed) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut ingest_s = 0.0;
    progress.begin(
        "training local classifiers (bounded memory)",
        Some(k as u64),
    );
    for (j, party) in parties.iter().enumerate() {
        let t = Instant::now();
        let s = spill_party(j, k, party, (spec, keys), &dir, plan.block_rows)?;
        ingest_s += t.elapsed().as_secs_f64();
        fits.push(fit_spilled(&s.part, &plan, spec, budget.limit)?);
        tags.push(s.tag);
        transformed.push(s.transformed);
        if diagnostics {
            parts.push(s.part);
        } else {
            s.part.remove();
        }
        progress.advance(1);
    }
    progress.end();
    let mut features = parties[0].features().to_vec();
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
                source: p.name().display().to_string(),
                n: p.rows(),
            })
            .collect(),
        features,
        ingest_s,
        local_s: t0.elapsed().as_secs_f64() - ingest_s,
    };
    // The pooled baseline streams over every party's spill, in party order.
    let block_rows = plan.block_rows;
    let pooled = move || Spill::new(parts, block_rows);
    let ctx = (spec, keys, progress);
    let mut report = pipeline::conclude(local, ctx, diagnostics.then_some(pooled), test.as_ref())?;
    if let Some(dg) = report.diagnostics.as_mut() {
        dg.timings.total_s = t0.elapsed().as_secs_f64();
    }
    // The spill folder (and every party's rows in it) goes now, also on every error above.
    drop(dir);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::{NoiseKind, PlaintextAggregator, PrivacySpec, SensitivityDerivation};
    use crate::logreg::{Objective, SolverConfig};
    use kinsey_core::Silent as NoProgress;
    use kinsey_data::parquet_io::{ColumnSpec, read_parquet, write_parquet};
    use kinsey_data::{RowTransform, synth};

    fn spec(hessian_rows: usize, intercept: Option<f64>) -> JobSpec {
        JobSpec {
            objective: Objective::new(1e-3).expect("lambda"),
            solver: SolverConfig {
                hessian_rows,
                ..SolverConfig::default()
            },
            privacy: PrivacySpec {
                epsilon: 1.0,
                calibration: SensitivityDerivation::Tight,
                noise: NoiseKind::L2,
            },
            device: kinsey_kernels::DevicePref::Cpu,
            transform: RowTransform::Scale(0.5),
            intercept,
            aggregation: std::sync::Arc::new(PlaintextAggregator),
            allow_two_parties: false,
        }
    }

    /// Three parties of more than one block each (blocks of 16 groups), as Parquet files.
    fn parties(dir: &std::path::Path) -> Vec<PathBuf> {
        let mut o = kinsey_data::output::Outputs::new();
        let paths: Vec<PathBuf> = [70_001usize, 80_000, 66_000]
            .iter()
            .enumerate()
            .map(|(j, &n)| {
                let ds = synth::generate(n, 4, 4.0, 11, j as u64 + 1, "p".into());
                let p = dir.join(format!("party-{}.parquet", j + 1));
                write_parquet(&mut o, &p, &ds, "label").expect("write");
                p
            })
            .collect();
        o.commit().expect("commit");
        paths
    }

    /// A run that must stream every party (and the pooled baseline) publishes the
    /// in-memory run's release byte for byte under one seed, with the same diagnostics
    /// figures; with and without a Hessian subsample and an intercept. The spill is gone
    /// afterwards.
    #[test]
    fn a_memory_limited_run_publishes_the_in_memory_model() {
        let tmp = tempfile::tempdir().expect("tmp");
        let paths = parties(tmp.path());
        let cols = ColumnSpec::default();
        for (hessian_rows, intercept) in [(4096, None), (0, Some(0.5))] {
            let spec = spec(hessian_rows, intercept);
            let keys = NoiseKeys::new(Some(5), false, "job".into());
            let in_memory = pipeline::run(
                pipeline::RunInput {
                    command: "train",
                    parties: paths
                        .iter()
                        .map(|p| read_parquet(p, &cols).expect("read"))
                        .collect(),
                    test: None,
                    ingest_s: 0.0,
                },
                &spec,
                &keys,
                true,
                &NoProgress,
            )
            .expect("in memory");
            let opened: Vec<ParquetParty> = paths
                .iter()
                .map(|p| ParquetParty::open(p, &cols).expect("open"))
                .collect();
            // Enough to stream, too little to hold any party: every pass reads the spill.
            let limit = plan(&opened, &spec, u64::MAX).expect("plan").stream_bytes;
            let budget = MemoryBudget {
                limit,
                spill_base: tmp.path().join("spill"),
            };
            let bounded = run_bounded(
                FilesInput {
                    command: "train",
                    parties: opened,
                    test: None,
                },
                &spec,
                &keys,
                true,
                &budget,
                &NoProgress,
            )
            .expect("bounded");
            let json = |r: &Report| serde_json::to_string(&r.release).expect("json");
            assert_eq!(
                json(&bounded),
                json(&in_memory),
                "hessian_rows {hessian_rows}"
            );
            let (a, b) = (
                bounded.diagnostics.expect("diagnostics"),
                in_memory.diagnostics.expect("diagnostics"),
            );
            assert!(
                a.parties[0].device.contains("streamed"),
                "{}",
                a.parties[0].device
            );
            for (x, y) in a.models.iter().zip(&b.models) {
                assert_eq!((x.objective, x.train_error), (y.objective, y.train_error));
            }
            assert_eq!(a.party_sizes, b.party_sizes);
            // The spill folder, and the base folder the run made for it, are gone.
            assert!(
                !budget.spill_base.exists(),
                "the spill directory outlives the run"
            );
        }
    }

    /// A budget that cannot hold one block is refused from the footers, before a row is
    /// read or a spill directory made, naming the party, the bytes needed and the limit.
    #[test]
    fn an_impossible_budget_is_refused_before_reading() {
        let tmp = tempfile::tempdir().expect("tmp");
        let paths = parties(tmp.path());
        let cols = ColumnSpec::default();
        let opened: Vec<ParquetParty> = paths
            .iter()
            .map(|p| ParquetParty::open(p, &cols).expect("open"))
            .collect();
        let budget = MemoryBudget {
            limit: 64 << 20,
            spill_base: tmp.path().join("spill"),
        };
        let keys = NoiseKeys::new(None, false, "job".into());
        let input = FilesInput {
            command: "train",
            parties: opened,
            test: None,
        };
        let e = run_bounded(input, &spec(4096, None), &keys, false, &budget, &NoProgress)
            .expect_err("64 MiB cannot hold the engine")
            .to_string();
        for needle in [
            "memory_limit",
            "party 1",
            "party-1.parquet",
            "64 MiB",
            "needs at least",
        ] {
            assert!(e.contains(needle), "{needle}: {e}");
        }
        assert!(
            !budget.spill_base.exists(),
            "nothing is written before the plan"
        );
    }

    /// A bad row in a later block is named by its row in the party, not in the block.
    #[test]
    fn a_streamed_rows_error_names_its_row_in_the_party() {
        let tmp = tempfile::tempdir().expect("tmp");
        let mut ds = synth::generate(70_000, 4, 4.0, 3, 1, "p".into());
        ds.x[69_000 * 4] = 5.0;
        let p = tmp.path().join("party-1.parquet");
        let mut o = kinsey_data::output::Outputs::new();
        write_parquet(&mut o, &p, &ds, "label").expect("write");
        o.commit().expect("commit");
        let party = ParquetParty::open(&p, &ColumnSpec::default()).expect("open");
        let dir = SpillDir::create(tmp.path()).expect("dir");
        let keys = NoiseKeys::new(None, false, "job".into());
        let mut spec = spec(4096, None);
        spec.transform = RowTransform::None;
        let e = spill_party(0, 3, &party, (&spec, &keys), &dir, GROUP_ROWS)
            .err()
            .expect("a row outside the unit ball")
            .to_string();
        assert!(
            e.contains("row 69000") && e.contains("party-1.parquet"),
            "{e}"
        );
    }
}
