//! DP statistics of a table whose rows are on a cluster (`kinsey.spark`): every
//! executor counts or sums the row groups it holds with the local code
//! ([`ColumnWorker`], run on each partition), the driver adds the exact integer counts and
//! sums (any split adds to the same) and draws the noise. A seeded release binds the
//! digest of the columns it reads, taken a group of rows at a time
//! (`kinsey_data::digest::column_group`), as a table in memory does: the same values give
//! the same release on the cluster and on one machine.

use kinsey_core::{Error, Result};
use kinsey_data::memory::ArrowTable;
use kinsey_data::row_groups::RowGroups;
use kinsey_dp::DataDigest;
use kinsey_learn::remote::RemoteParty;
use kinsey_stats::histogram_query::HistogramQuery;
use kinsey_stats::summary::{SumParts, SummaryQuery, SummarySums};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// What a job over a table on a cluster computes for each group of rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "work", rename_all = "snake_case")]
pub enum ColumnWork {
    /// Each column's group digest (32 bytes each, in order).
    Digest {
        /// The columns.
        columns: Vec<String>,
    },
    /// The group's exact bin counts (JSON: labels and counts).
    Histogram {
        /// The release's query.
        query: HistogramQuery,
    },
    /// The group's exact sums (JSON: [`SumParts`]).
    Summary {
        /// The release's query.
        query: SummaryQuery,
    },
}

/// One job's instructions to every executor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColumnTask {
    /// The table's name (errors name it).
    pub table: String,
    /// Its rows.
    pub rows: usize,
    /// What is computed.
    pub work: ColumnWork,
}

/// One partition's work on an executor: rows in (runs of consecutive rows), one payload
/// per complete group out.
#[derive(Debug)]
pub struct ColumnWorker {
    task: ColumnTask,
    groups: RowGroups,
    out: Vec<(u64, Vec<u8>)>,
}

impl ColumnWorker {
    /// The worker of a task ([`ColumnTask`] as JSON).
    pub fn new(task: &str) -> Result<Self> {
        let task: ColumnTask = serde_json::from_str(task)
            .map_err(|e| Error::param("task", format!("not a table's task: {e}")))?;
        let groups = RowGroups::new(Path::new(&task.table), task.rows);
        Ok(Self {
            task,
            groups,
            out: Vec::new(),
        })
    }

    /// The rows of `batch`: rows `first`, `first + 1`, ... of the table.
    pub fn add(
        &mut self,
        batch: &kinsey_data::arrow::array::RecordBatch,
        first: u64,
    ) -> Result<()> {
        let Self { task, groups, out } = self;
        groups.add(batch, first, &mut |g, batches| {
            let schema = batch.schema();
            let t = ArrowTable::new(&task.table, schema, batches)?;
            let payload = group_payload(&task.work, g, &t).map_err(|e| {
                kinsey_data::offset_row(e, g as usize * kinsey_data::digest::GROUP_ROWS)
            })?;
            out.push((g, payload));
            Ok(())
        })
    }

    /// The payloads of the groups completed; a group left open is an error.
    pub fn finish(self) -> Result<Vec<(u64, Vec<u8>)>> {
        self.groups.finish()?;
        Ok(self.out)
    }
}

fn json<T: Serialize>(v: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(v).map_err(|e| Error::Numerical(format!("a group's result: {e}")))
}

/// Group `g`'s payload (its rows: `t`).
fn group_payload(work: &ColumnWork, g: u64, t: &ArrowTable) -> Result<Vec<u8>> {
    match work {
        ColumnWork::Digest { columns } => {
            let cols: Vec<&str> = columns.iter().map(String::as_str).collect();
            let d = t.group_digests(&cols, g)?;
            Ok(d.into_iter().flatten().flatten().collect())
        }
        ColumnWork::Histogram { query } => json(&query.count(t)?),
        ColumnWork::Summary { query } => json(&query.accumulate(t)?.to_parts()),
    }
}

/// Run `work` over `table` and return every group's payload, in group order.
fn collect(table: &dyn RemoteParty, work: ColumnWork) -> Result<Vec<Vec<u8>>> {
    let task = ColumnTask {
        table: table.name().to_string(),
        rows: table.rows(),
        work,
    };
    kinsey_learn::remote::run_groups(table, &task)
}

fn bad(table: &dyn RemoteParty) -> Error {
    Error::format(
        Path::new(table.name()),
        "a group's result could not be read",
    )
}

/// The digest a seeded release of `columns` binds (a table in memory's, group by group).
pub(crate) fn digest(table: &dyn RemoteParty, columns: &[String]) -> Result<DataDigest> {
    let payloads = collect(
        table,
        ColumnWork::Digest {
            columns: columns.to_vec(),
        },
    )?;
    let k = columns.len();
    let mut per: Vec<Vec<[u8; 32]>> = vec![Vec::new(); k];
    for p in &payloads {
        if p.len() != 32 * k {
            return Err(bad(table));
        }
        for (c, chunk) in p.chunks_exact(32).enumerate() {
            let mut d = [0u8; 32];
            d.copy_from_slice(chunk);
            per[c].push(d);
        }
    }
    let parts: Vec<(String, DataDigest)> = columns
        .iter()
        .zip(&per)
        .map(|(c, g)| {
            (
                c.clone(),
                kinsey_data::digest::of_column_groups(table.rows(), g),
            )
        })
        .collect();
    Ok(kinsey_data::digest::of_named(&parts))
}

/// An empty table of `table`'s schema (what an empty count or sum starts from).
fn empty(table: &dyn RemoteParty) -> Result<ArrowTable> {
    ArrowTable::new(
        table.name(),
        std::sync::Arc::new(table.schema().clone()),
        Vec::new(),
    )
}

/// The exact bin counts of `table`'s column (NOT PRIVATE: the release's input).
pub(crate) fn histogram_counts(
    table: &dyn RemoteParty,
    query: &HistogramQuery,
) -> Result<(Vec<String>, Vec<u64>)> {
    let (labels, mut counts) = query.count(&empty(table)?)?;
    let work = ColumnWork::Histogram {
        query: query.clone(),
    };
    for p in collect(table, work)? {
        let (l, c): (Vec<String>, Vec<u64>) = serde_json::from_slice(&p).map_err(|_| bad(table))?;
        if l != labels || c.len() != counts.len() {
            return Err(bad(table));
        }
        counts.iter_mut().zip(c).for_each(|(t, c)| *t += c);
    }
    Ok((labels, counts))
}

/// The exact sums a summary release of `table`'s column needs (NOT PRIVATE).
pub(crate) fn summary_sums(table: &dyn RemoteParty, query: &SummaryQuery) -> Result<SummarySums> {
    let mut sums = query.accumulate(&empty(table)?)?;
    let work = ColumnWork::Summary {
        query: query.clone(),
    };
    for p in collect(table, work)? {
        let parts: SumParts = serde_json::from_slice(&p).map_err(|_| bad(table))?;
        sums.add_parts(&parts)?;
    }
    Ok(sums)
}
