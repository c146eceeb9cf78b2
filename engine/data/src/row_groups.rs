//! A table's rows arriving in runs (a cluster's partition, batch by batch) gathered into
//! the groups of [`GROUP_ROWS`] rows that a seeded digest and the kernels' fixed
//! reductions are made of: every group is handed on whole, as soon as its last row
//! arrives.

use crate::digest::GROUP_ROWS;
use arrow::array::RecordBatch;
use kinsey_core::{Error, Result};
use std::path::{Path, PathBuf};

/// Rows gathered into whole groups (see the module). A group's rows must arrive together
/// and in order, and all of them.
#[derive(Debug)]
pub struct RowGroups {
    name: PathBuf,
    rows: usize,
    /// The open group: its index, its batches so far and their rows.
    open: Option<(u64, Vec<RecordBatch>, usize)>,
}

/// Rows of group `g` of a table of `n` rows (the last group may be short).
pub fn group_len(n: usize, g: u64) -> usize {
    n.saturating_sub(g as usize * GROUP_ROWS).min(GROUP_ROWS)
}

impl RowGroups {
    /// Groups of a table of `rows` rows named `name` in errors.
    pub fn new(name: &Path, rows: usize) -> Self {
        Self {
            name: name.to_path_buf(),
            rows,
            open: None,
        }
    }

    fn out_of_place(&self, row: u64) -> Error {
        Error::format(
            &self.name,
            format!(
                "row {row} reached an executor out of place (a row group's rows must arrive \
                 together and in order); the DataFrame must read the same rows in the same \
                 order on every pass: a file scan does, a shuffle does not (persist or \
                 checkpoint it, or sort it)"
            ),
        )
    }

    /// The rows of `batch`, rows `first`, `first + 1`, ... of the table; `done` gets each
    /// group they complete (its index, its rows' batches).
    pub fn add(
        &mut self,
        batch: &RecordBatch,
        first: u64,
        done: &mut dyn FnMut(u64, Vec<RecordBatch>) -> Result<()>,
    ) -> Result<()> {
        let mut r = 0usize;
        while r < batch.num_rows() {
            let row = first + r as u64;
            if row >= self.rows as u64 {
                return Err(self.out_of_place(row));
            }
            let g = row / GROUP_ROWS as u64;
            match &self.open {
                Some((og, _, _)) if *og == g => {}
                Some(_) => return Err(self.out_of_place(row)),
                None if row != g * GROUP_ROWS as u64 => return Err(self.out_of_place(row)),
                None => self.open = Some((g, Vec::new(), 0)),
            }
            let len = group_len(self.rows, g);
            let Some((_, batches, have)) = self.open.as_mut() else {
                return Err(self.out_of_place(row));
            };
            let take = (len - *have).min(batch.num_rows() - r);
            batches.push(batch.slice(r, take));
            *have += take;
            r += take;
            if *have == len
                && let Some((g, batches, _)) = self.open.take()
            {
                done(g, batches)?;
            }
        }
        Ok(())
    }

    /// The end of the rows: a group left open is an error (its rows did not all arrive).
    pub fn finish(self) -> Result<()> {
        match &self.open {
            Some((g, _, have)) => Err(self.out_of_place(*g * GROUP_ROWS as u64 + *have as u64)),
            None => Ok(()),
        }
    }
}
