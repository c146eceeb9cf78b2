//! The executor's side of a remote party: one partition's rows in, one payload per
//! complete row group out.

use super::task::{GROUP_ROWS, Task, Work};
use kinsey_core::{Error, Result};
use kinsey_data::Dataset;
use kinsey_data::batch_decoder::BatchDecoder;
use kinsey_data::row_groups::RowGroups;
use kinsey_kernels::logistic::cpu::group_sums;
use std::path::{Path, PathBuf};

/// One partition's work: rows arrive in record batches, each a run of consecutive rows of
/// the party (its first row's position given); every group they complete is computed as
/// soon as its last row arrives ([`Work`]), and [`GroupWorker::finish`] returns the
/// payloads in the order the groups completed. A group's rows must arrive together, in
/// order, and all of them (`kinsey_data::row_groups`): a partition holds whole groups (the
/// driver sends the rows of groups that straddle partitions to one place first).
#[derive(Debug)]
pub struct GroupWorker {
    task: Task,
    decoder: Option<BatchDecoder>,
    groups: RowGroups,
    out: Vec<(u64, Vec<u8>)>,
}

impl GroupWorker {
    /// The worker of a task ([`Task`], as the driver wrote it).
    pub fn new(task: &str) -> Result<Self> {
        let task: Task = serde_json::from_str(task)
            .map_err(|e| Error::param("task", format!("not a remote party's task: {e}")))?;
        let groups = RowGroups::new(Path::new(&task.plan.name), task.plan.rows);
        Ok(Self {
            task,
            decoder: None,
            groups,
            out: Vec::new(),
        })
    }

    fn source(&self) -> PathBuf {
        PathBuf::from(&self.task.plan.name)
    }

    /// The rows of `batch`: rows `first`, `first + 1`, ... of the party.
    pub fn add(&mut self, batch: &arrow::record_batch::RecordBatch, first: u64) -> Result<()> {
        if self.decoder.is_none() {
            let dec = BatchDecoder::new(&self.source(), &batch.schema(), &self.task.plan.columns)?;
            if dec.features() != self.task.plan.features.as_slice() {
                return Err(Error::format(
                    self.source(),
                    "an executor's rows have other feature columns than the driver's schema",
                ));
            }
            self.decoder = Some(dec);
        }
        let Self {
            task,
            decoder,
            groups,
            out,
        } = self;
        let dec = decoder
            .as_ref()
            .ok_or_else(|| Error::param("task", "no decoder"))?;
        groups.add(batch, first, &mut |g, batches| {
            let mut ds = Dataset {
                x: Vec::new(),
                y: Vec::new(),
                d: task.plan.features.len(),
                features: task.plan.features.clone(),
                source: PathBuf::from(&task.plan.name),
            };
            let mut row = g as usize * GROUP_ROWS;
            for b in &batches {
                dec.decode(b, row, &mut ds.x, &mut ds.y)?;
                row += b.num_rows();
            }
            out.push((g, group(task, g, ds)?));
            Ok(())
        })
    }

    /// The payloads of the groups completed, as `(group, payload)`; a group left open is
    /// an error (its rows did not all arrive).
    pub fn finish(self) -> Result<Vec<(u64, Vec<u8>)>> {
        self.groups.finish()?;
        Ok(self.out)
    }
}

/// Group `g`'s payload (see [`Work`]).
fn group(task: &Task, g: u64, mut ds: Dataset) -> Result<Vec<u8>> {
    let plan = &task.plan;
    let first = g as usize * GROUP_ROWS;
    let mut out = Vec::new();
    if let Work::Prepare { digest } = &task.work {
        if *digest {
            out.extend(kinsey_data::digest::group_digest(g, &ds.x, &ds.y));
        }
        let changed = plan
            .transform
            .apply(&mut ds)
            .map_err(|e| kinsey_data::offset_row(e, first))?;
        out.extend((changed as u64).to_le_bytes());
        return Ok(out);
    }
    plan.transform
        .apply(&mut ds)
        .map_err(|e| kinsey_data::offset_row(e, first))?;
    if let Some(c) = plan.intercept {
        kinsey_data::append_intercept(&mut ds, c)?;
    }
    let d = ds.d;
    match &task.work {
        Work::Prepare { .. } => {}
        Work::Sums { w, hessian } => {
            let s = group_sums(&ds.x, &ds.y, w, *hessian)?;
            out.extend(s.loss.to_le_bytes());
            for v in s.grad.iter().chain(s.hessian_lower.iter().flatten()) {
                out.extend(v.to_le_bytes());
            }
        }
        Work::Gather { rows } => {
            let end = first + ds.n();
            let lo = rows.partition_point(|&r| (r as usize) < first);
            for &r in rows[lo..].iter().take_while(|&&r| (r as usize) < end) {
                let i = r as usize - first;
                out.extend(r.to_le_bytes());
                for v in &ds.x[i * d..(i + 1) * d] {
                    out.extend(v.to_le_bytes());
                }
                out.extend(ds.y[i].to_le_bytes());
            }
        }
        Work::Misclassified { w } => {
            let wrong = crate::passes::misclassified(w, &ds.x, &ds.y, d);
            out.extend((wrong as u64).to_le_bytes());
        }
    }
    Ok(out)
}
