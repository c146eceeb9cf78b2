//! A party's Parquet data read a block of rows at a time, for data sets larger than the
//! memory a run may use: the footers give the row count, the schema and the row groups'
//! sizes before any row is decoded (so a run can plan its memory, or refuse, first), and
//! [`ParquetParty::for_each_block`] decodes the rows in blocks of at most a given size with
//! the same column rules and checks as [`read_parquet`](crate::parquet_io::read_parquet).

use crate::Dataset;
use crate::parquet_io::{
    ColumnSpec, Columns, arrow_error, decode_batch, parquet_error, parquet_files, projected,
    resolve_columns,
};
use kinsey_core::{Error, Result};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::fs::File;
use std::path::{Path, PathBuf};

/// A party's rows read a block at a time, their shape known before any row is: what a
/// run in bounded memory trains on (a Parquet file, or the demo's generated rows).
pub trait PartyBlocks: Sync {
    /// The party's name in messages and reports (a file's path as given).
    fn name(&self) -> &Path;
    /// Rows.
    fn rows(&self) -> usize;
    /// Feature columns.
    fn d(&self) -> usize {
        self.features().len()
    }
    /// The features' names.
    fn features(&self) -> &[String];
    /// Bytes the reader holds besides the decoded block (a Parquet row group, fetched).
    fn reader_bytes(&self) -> u64;
    /// The rows in order, in blocks of at most `block_rows` rows, each handed to `f` as a
    /// data set (as read: no row transform) whose `source` is [`PartyBlocks::name`].
    fn for_each_block(
        &self,
        block_rows: usize,
        f: &mut dyn FnMut(&mut Dataset) -> Result<()>,
    ) -> Result<()>;
}

impl PartyBlocks for ParquetParty {
    fn name(&self) -> &Path {
        &self.path
    }

    fn rows(&self) -> usize {
        self.rows
    }

    fn features(&self) -> &[String] {
        &self.features
    }

    fn reader_bytes(&self) -> u64 {
        self.largest_group_bytes
    }

    fn for_each_block(
        &self,
        block_rows: usize,
        f: &mut dyn FnMut(&mut Dataset) -> Result<()>,
    ) -> Result<()> {
        ParquetParty::for_each_block(self, block_rows, f)
    }
}

/// A Parquet file or directory opened for block reads: its shape from the footers.
#[derive(Debug, Clone)]
pub struct ParquetParty {
    path: PathBuf,
    files: Vec<PathBuf>,
    spec: ColumnSpec,
    features: Vec<String>,
    rows: usize,
    largest_group_bytes: u64,
}

impl ParquetParty {
    /// Read the footers of `path` (a file, or a directory's `*.parquet` files in name
    /// order): the columns `spec` selects, the rows, and the largest row group. Every file
    /// must give the same features.
    pub fn open(path: &Path, spec: &ColumnSpec) -> Result<Self> {
        let files = parquet_files(path)?;
        let mut features: Option<Vec<String>> = None;
        let (mut rows, mut largest) = (0usize, 0u64);
        for f in &files {
            let file = File::open(f).map_err(|e| Error::io(f, e))?;
            let builder = ParquetRecordBatchReaderBuilder::try_new(file)
                .map_err(|source| parquet_error(f, source))?;
            let (_, _, names) = resolve_columns(f, builder.schema(), spec)?;
            match &features {
                None => features = Some(names),
                Some(first) if *first != names => {
                    return Err(Error::format(
                        f,
                        format!(
                            "its features ({}) differ from the first file's ({})",
                            names.join(", "),
                            first.join(", ")
                        ),
                    ));
                }
                Some(_) => {}
            }
            let meta = builder.metadata();
            rows = rows.saturating_add(meta.file_metadata().num_rows().max(0) as usize);
            for rg in meta.row_groups() {
                largest = largest.max(rg.compressed_size().max(0) as u64);
            }
        }
        let features = features.ok_or_else(|| Error::format(path, "no data"))?;
        if rows == 0 {
            return Err(Error::format(path, "no rows"));
        }
        Ok(Self {
            path: path.to_path_buf(),
            files,
            spec: spec.clone(),
            features,
            rows,
            largest_group_bytes: largest,
        })
    }

    /// The path as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Rows, from the footers.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Feature columns.
    pub fn d(&self) -> usize {
        self.features.len()
    }

    /// The features' names.
    pub fn features(&self) -> &[String] {
        &self.features
    }

    /// Stored bytes of the largest row group's selected columns, compressed, as a reader
    /// fetches them (an upper bound: every column of the group).
    pub fn largest_row_group_bytes(&self) -> u64 {
        self.largest_group_bytes
    }

    /// Decode the rows in order, in blocks of at most `block_rows` rows, each handed to `f`
    /// as a data set (as read: no row transform) whose `source` is the path. Every row
    /// the footers promised must arrive.
    pub fn for_each_block(
        &self,
        block_rows: usize,
        mut f: impl FnMut(&mut Dataset) -> Result<()>,
    ) -> Result<()> {
        let d = self.d();
        let mut block = Dataset {
            x: Vec::new(),
            y: Vec::new(),
            d,
            features: self.features.clone(),
            source: self.path.clone(),
        };
        let mut seen = 0usize;
        for file in &self.files {
            let pq = |source| parquet_error(file, source);
            let handle = File::open(file).map_err(|e| Error::io(file, e))?;
            let builder = ParquetRecordBatchReaderBuilder::try_new(handle).map_err(pq)?;
            let schema = builder.schema().clone();
            let (label, idx, names) = resolve_columns(file, &schema, &self.spec)?;
            // Only the label and the features are decoded.
            let (keep, label, idx) = projected(label, &idx);
            let cols = Columns {
                path: file,
                spec: &self.spec,
                label,
                features: &idx,
                names: &names,
            };
            let mask = parquet::arrow::ProjectionMask::roots(builder.parquet_schema(), keep);
            let reader = builder
                .with_projection(mask)
                .with_batch_size(block_rows.max(1))
                .build()
                .map_err(pq)?;
            let mut row0 = 0usize;
            for batch in reader {
                let batch = batch.map_err(arrow_error(file))?;
                // The caller may have transformed the last block in place (an intercept
                // widens it): each block starts as read.
                block.x.clear();
                block.y.clear();
                block.d = d;
                if block.features.len() != d {
                    block.features = self.features.clone();
                }
                decode_batch(&batch, &cols, row0, &mut block.x, &mut block.y)?;
                row0 += batch.num_rows();
                f(&mut block)?;
            }
            seen += row0;
        }
        if seen != self.rows {
            return Err(Error::format(
                &self.path,
                "the rows read differ from the count its footers promise (the file changed \
                 while it was read, or is damaged)",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parquet_io::{read_parquet, write_parquet};

    /// Blocks of any size concatenate to what `read_parquet` reads, across files of a
    /// directory, and the footers give the shape before any row is decoded.
    #[test]
    fn blocks_concatenate_to_the_whole_read() {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path().to_path_buf();
        let a = crate::synth::generate_one(1000, 4, 2.0, 1, "a".into());
        let b = crate::synth::generate_one(700, 4, 2.0, 2, "b".into());
        let mut o = crate::output::Outputs::new();
        write_parquet(&mut o, &dir.join("1.parquet"), &a, "label").expect("write");
        write_parquet(&mut o, &dir.join("2.parquet"), &b, "label").expect("write");
        o.commit().expect("commit");
        let spec = ColumnSpec::default();
        let whole = read_parquet(&dir, &spec).expect("read");
        let party = ParquetParty::open(&dir, &spec).expect("open");
        assert_eq!((party.rows(), party.d()), (1700, 4));
        assert_eq!(party.features(), whole.features.as_slice());
        for block in [1, 64, 999, 5000] {
            let (mut x, mut y) = (Vec::new(), Vec::new());
            party
                .for_each_block(block, |ds| {
                    assert!(ds.n() <= block);
                    x.extend_from_slice(&ds.x);
                    y.extend_from_slice(&ds.y);
                    Ok(())
                })
                .expect("blocks");
            assert_eq!(
                (x, y),
                (whole.x.clone(), whole.y.clone()),
                "blocks of {block}"
            );
        }
        // Some features, out of file order: only they and the label are decoded, each in
        // its place.
        let some = ColumnSpec {
            features: vec!["f3".into(), "f1".into()],
            ..ColumnSpec::default()
        };
        let whole = read_parquet(&dir, &some).expect("read");
        let party = ParquetParty::open(&dir, &some).expect("open");
        let mut x = Vec::new();
        party
            .for_each_block(300, |ds| {
                x.extend_from_slice(&ds.x);
                Ok(())
            })
            .expect("blocks");
        assert_eq!(x, whole.x);
        assert_eq!((whole.d, whole.x[0], whole.x[1]), (2, a.x[2], a.x[0]));
    }
}
