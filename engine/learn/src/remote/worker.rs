//! The executor's side of a remote party: one partition's rows in, one payload per
//! complete row group out.

use super::{GROUP_ROWS, Task, Work, group_rows};
use kinsey_core::{Error, Result};
use kinsey_data::Dataset;
use kinsey_data::parquet_io::BatchDecoder;
use kinsey_kernels::logistic::cpu::group_sums;
use std::path::PathBuf;

/// One partition's work: rows arrive in record batches, each a run of consecutive rows of
/// the party (its first row's position given); every group they complete is computed as
/// soon as its last row arrives ([`Work`]), and [`GroupWorker::finish`] returns the
/// payloads in the order the groups completed. A group's rows must arrive together, in
/// order, and all of them: a partition holds whole groups (the driver sends the rows of
/// groups that straddle partitions to one place first).
#[derive(Debug)]
pub struct GroupWorker {
    task: Task,
    decoder: Option<BatchDecoder>,
    /// The open group: its index, rows so far (as read) and their labels.
    open: Option<(u64, Dataset)>,
    out: Vec<(u64, Vec<u8>)>,
    x: Vec<f32>,
    y: Vec<f32>,
}

impl GroupWorker {
    /// The worker of a task ([`Task`], as the driver wrote it).
    pub fn new(task: &str) -> Result<Self> {
        let task: Task = serde_json::from_str(task)
            .map_err(|e| Error::param("task", format!("not a remote party's task: {e}")))?;
        Ok(Self {
            task,
            decoder: None,
            open: None,
            out: Vec::new(),
            x: Vec::new(),
            y: Vec::new(),
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
                    &self.source(),
                    "an executor's rows have other feature columns than the driver's schema",
                ));
            }
            self.decoder = Some(dec);
        }
        let dec = self
            .decoder
            .as_ref()
            .ok_or_else(|| Error::param("task", "no decoder"))?;
        self.x.clear();
        self.y.clear();
        dec.decode(batch, first as usize, &mut self.x, &mut self.y)?;
        let d = self.task.plan.features.len();
        let n = self.task.plan.rows as u64;
        let (x, y) = (std::mem::take(&mut self.x), std::mem::take(&mut self.y));
        let mut r = 0usize;
        while r < y.len() {
            let row = first + r as u64;
            if row >= n {
                return Err(self.out_of_order(row));
            }
            let g = row / GROUP_ROWS as u64;
            let open_here = matches!(&self.open, Some((og, _)) if *og == g);
            if !open_here {
                if self.open.is_some() || row != g * GROUP_ROWS as u64 {
                    return Err(self.out_of_order(row));
                }
                self.open = Some((g, self.empty_group()));
            }
            let Some((_, ds)) = self.open.as_mut() else {
                return Err(self.out_of_order(row));
            };
            let len = group_rows(n as usize, g);
            let take = (len - ds.n()).min(y.len() - r);
            ds.x.extend_from_slice(&x[r * d..(r + take) * d]);
            ds.y.extend_from_slice(&y[r..r + take]);
            r += take;
            if ds.n() == len
                && let Some((g, ds)) = self.open.take()
            {
                let payload = self.group(g, ds)?;
                self.out.push((g, payload));
            }
        }
        self.x = x;
        self.y = y;
        Ok(())
    }

    fn empty_group(&self) -> Dataset {
        Dataset {
            x: Vec::new(),
            y: Vec::new(),
            d: self.task.plan.features.len(),
            features: self.task.plan.features.clone(),
            source: self.source(),
        }
    }

    fn out_of_order(&self, row: u64) -> Error {
        Error::format(
            &self.source(),
            format!(
                "row {row} reached an executor out of place (a row group's rows must arrive \
                 together and in order); the DataFrame must read the same rows in the same \
                 order on every pass: a file scan does, a shuffle does not (persist or \
                 checkpoint it, or sort it)"
            ),
        )
    }

    /// Group `g`'s payload (see [`Work`]).
    fn group(&self, g: u64, mut ds: Dataset) -> Result<Vec<u8>> {
        let plan = &self.task.plan;
        let first = g as usize * GROUP_ROWS;
        let mut out = Vec::new();
        if let Work::Prepare { digest } = &self.task.work {
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
        match &self.task.work {
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

    /// The payloads of the groups completed, as `(group, payload)`; a group left open is
    /// an error (its rows did not all arrive).
    pub fn finish(self) -> Result<Vec<(u64, Vec<u8>)>> {
        if let Some((g, ds)) = &self.open {
            let row = *g as usize * GROUP_ROWS + ds.n();
            return Err(self.out_of_order(row as u64));
        }
        Ok(self.out)
    }
}
