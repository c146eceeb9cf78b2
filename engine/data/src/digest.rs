//! Digests of the data a seeded release reads (SHA-256, ring), bound into its noise key
//! (`kinsey_dp::rng::for_release`), so that a seed replays a release of the same data and
//! two releases of neighbouring data with one seed draw unrelated noise.
//!
//! What is digested, and why before any filter:
//! * the toolbox commands (`histogram`, `tree`, `sulq`, `decay`): every byte of the input
//!   file (or of every `*.parquet` file of an input directory, each with its name and
//!   length), so every row and column the command reads is covered before any `--where`
//!   filter, binning, clipping or clamping. A digest taken after them would make two seeded
//!   releases *equal* exactly when the changed row was dropped by the filter or fell in the
//!   same bin or clamp: a noise-free bit about that row;
//! * the aggregate classifier: every value of a party's data set as read (dimensions,
//!   feature names, each row's `f32` bits, each label), before the row transform, so a
//!   party's synthetic data in memory and the same data read back from Parquet agree.

use crate::Dataset;
use kinsey_core::{Error, Result};
use kinsey_dp::DataDigest;
use ring::digest::{Context, SHA256};
use std::io::Read;
use std::path::Path;

/// A domain-separated SHA-256 of length-prefixed parts.
struct Digester(Context);

impl Digester {
    fn new(domain: &str) -> Self {
        let mut d = Self(Context::new(&SHA256));
        d.part(domain.as_bytes());
        d
    }

    /// One part, prefixed by its length (the parts are prefix-free).
    fn part(&mut self, b: &[u8]) {
        self.0.update(&(b.len() as u64).to_le_bytes());
        self.0.update(b);
    }

    fn finish(self) -> DataDigest {
        let mut out = [0u8; 32];
        out.copy_from_slice(self.0.finish().as_ref());
        DataDigest(out)
    }
}

/// The files an input is read from: a file, or a directory's `*.parquet` files in name
/// order.
fn input_files(path: &Path) -> Result<Vec<std::path::PathBuf>> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if meta.is_file() {
        Ok(vec![path.to_path_buf()])
    } else {
        crate::parquet_io::parquet_files(path)
    }
}

/// Every byte of `path`: a file, or a directory's `*.parquet` files in name order (the
/// files a directory input is read from), each with its name and length.
pub fn of_files(path: &Path) -> Result<DataDigest> {
    let files = input_files(path)?;
    let mut d = Digester::new("kinsey input files v1");
    let mut buf = vec![0u8; 1 << 20];
    for f in &files {
        let name = f.file_name().map(|n| n.to_string_lossy().into_owned());
        d.part(name.unwrap_or_default().as_bytes());
        bytes_into(&mut d, f, &mut buf)?;
    }
    Ok(d.finish())
}

/// The identity of the data in `path` for the budget ledger: its bytes and nothing else. A
/// file is digested with its length; a directory is the set of its `*.parquet` files' own
/// digests, sorted, so no file name, path or listing order enters it: the same bytes under
/// any name are the same data set (the noise key, [`of_files`], keeps the names).
pub fn identity_of_files(path: &Path) -> Result<DataDigest> {
    let files = input_files(path)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut each = files
        .iter()
        .map(|f| {
            let mut d = Digester::new("kinsey data set file v1");
            bytes_into(&mut d, f, &mut buf)?;
            Ok(d.finish().0)
        })
        .collect::<Result<Vec<_>>>()?;
    each.sort_unstable();
    let mut d = Digester::new("kinsey data set identity v1");
    for f in &each {
        d.part(f);
    }
    Ok(d.finish())
}

/// A file's length, then every byte of it (refused if it changes while read).
fn bytes_into(d: &mut Digester, f: &Path, buf: &mut [u8]) -> Result<()> {
    let mut file = std::fs::File::open(f).map_err(|e| Error::io(f, e))?;
    let len = file.metadata().map_err(|e| Error::io(f, e))?.len();
    d.0.update(&len.to_le_bytes());
    let mut read = 0u64;
    loop {
        let got = file.read(buf).map_err(|e| Error::io(f, e))?;
        if got == 0 {
            break;
        }
        d.0.update(&buf[..got]);
        read += got as u64;
    }
    if read != len {
        return Err(Error::format(f, "the file changed while it was read"));
    }
    Ok(())
}

/// [`of_files`] of each input, in order (a command that reads several files).
pub fn of_inputs(paths: &[&Path]) -> Result<DataDigest> {
    let mut d = Digester::new("kinsey inputs v1");
    for p in paths {
        d.part(&of_files(p)?.0);
    }
    Ok(d.finish())
}

/// Rows per group of the data set digest: the rows are digested in groups of this many
/// (the last may be shorter), each group on its own, and the data set's digest is taken
/// over the groups' digests in order. Groups make the digest computable where the rows
/// are: a cluster's executors digest the groups they hold and the driver combines them
/// ([`combine`]), with the digest one machine takes over the same rows.
pub const GROUP_ROWS: usize = 4096;

/// Every value of a data set as read: dimensions, feature names, then each group of
/// [`GROUP_ROWS`] rows (its rows' values, then its labels), the groups digested side by
/// side.
pub fn of_dataset(ds: &Dataset) -> DataDigest {
    use rayon::prelude::*;
    let d = ds.d;
    let groups: Vec<[u8; 32]> =
        ds.y.par_chunks(GROUP_ROWS)
            .enumerate()
            .map(|(g, y)| {
                let r0 = g * GROUP_ROWS;
                group_digest(g as u64, &ds.x[r0 * d..(r0 + y.len()) * d], y)
            })
            .collect();
    combine(ds.n(), d, &ds.features, &groups)
}

/// The digest of group `g` of a data set: its rows' values (row-major, as read), then its
/// labels.
pub fn group_digest(g: u64, x: &[f32], y: &[f32]) -> [u8; 32] {
    let mut h = GroupHasher::new(g);
    h.rows(x, y);
    h.finish()
}

/// The data set's digest from its shape and its groups' digests ([`group_digest`]), in
/// group order.
pub fn combine(n: usize, d: usize, features: &[String], groups: &[[u8; 32]]) -> DataDigest {
    let mut dg = head(n, d, features);
    for g in groups {
        dg.part(g);
    }
    dg.finish()
}

/// The data set digest's start: its domain, shape and feature names.
fn head(n: usize, d: usize, features: &[String]) -> Digester {
    let mut dg = Digester::new("kinsey data set v2");
    dg.part(&(n as u64).to_le_bytes());
    dg.part(&(d as u64).to_le_bytes());
    for f in features {
        dg.part(f.as_bytes());
    }
    dg
}

/// One group's digest as its rows arrive: the rows' values go in as they come, the labels
/// are held (at most a group's) and go in at the end.
struct GroupHasher {
    ctx: Context,
    labels: Vec<f32>,
    bytes: Vec<u8>,
}

impl GroupHasher {
    fn new(g: u64) -> Self {
        let mut ctx = Digester::new("kinsey data set group v2");
        ctx.part(&g.to_le_bytes());
        Self {
            ctx: ctx.0,
            labels: Vec::new(),
            bytes: Vec::new(),
        }
    }

    fn rows(&mut self, x: &[f32], y: &[f32]) {
        for chunk in x.chunks(1 << 14) {
            self.bytes.clear();
            self.bytes
                .extend(chunk.iter().flat_map(|v| v.to_bits().to_le_bytes()));
            self.ctx.update(&self.bytes);
        }
        self.labels.extend_from_slice(y);
    }

    fn len(&self) -> usize {
        self.labels.len()
    }

    fn finish(mut self) -> [u8; 32] {
        self.ctx.update(&(self.labels.len() as u64).to_le_bytes());
        self.bytes.clear();
        self.bytes
            .extend(self.labels.iter().flat_map(|v| v.to_bits().to_le_bytes()));
        self.ctx.update(&self.bytes);
        let mut out = [0u8; 32];
        out.copy_from_slice(self.ctx.finish().as_ref());
        out
    }
}

/// [`of_dataset`] of a data set that arrives in blocks of rows with their labels (a party
/// read from disk a block at a time): blocks of any size give the digest of the whole.
pub struct DatasetDigest {
    head: Digester,
    d: usize,
    next: u64,
    group: Option<GroupHasher>,
}

impl std::fmt::Debug for DatasetDigest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DatasetDigest")
    }
}

impl DatasetDigest {
    /// A digest of `n` rows of the columns `features`.
    pub fn new(n: usize, d: usize, features: &[String]) -> Self {
        Self {
            head: head(n, d, features),
            d,
            next: 0,
            group: None,
        }
    }

    /// The next rows (row-major values, as read) and their labels.
    pub fn block(&mut self, x: &[f32], y: &[f32]) {
        let d = self.d;
        let mut r = 0;
        while r < y.len() {
            let g = self.group.get_or_insert_with(|| {
                let h = GroupHasher::new(self.next);
                self.next += 1;
                h
            });
            let take = (GROUP_ROWS - g.len()).min(y.len() - r);
            g.rows(&x[r * d..(r + take) * d], &y[r..r + take]);
            r += take;
            if g.len() == GROUP_ROWS
                && let Some(full) = self.group.take()
            {
                self.head.part(&full.finish());
            }
        }
    }

    /// The digest.
    pub fn finish(mut self) -> DataDigest {
        if let Some(last) = self.group.take() {
            self.head.part(&last.finish());
        }
        self.head.finish()
    }
}

/// Every value of an in-memory series, in order (a library caller's data, where a file's
/// bytes are not at hand): its length, then each value's bits.
pub fn of_values(values: &[f64]) -> DataDigest {
    let mut d = Digester::new("kinsey values v1");
    d.part(&(values.len() as u64).to_le_bytes());
    let mut bytes = Vec::with_capacity(1 << 17);
    for chunk in values.chunks(1 << 14) {
        bytes.clear();
        bytes.extend(chunk.iter().flat_map(|v| v.to_bits().to_le_bytes()));
        d.0.update(&bytes);
    }
    d.finish()
}

/// Every label of an in-memory categorical column, in order: its length, then each
/// label's length and bytes.
pub fn of_labels(labels: &[String]) -> DataDigest {
    let mut d = Digester::new("kinsey labels v1");
    d.part(&(labels.len() as u64).to_le_bytes());
    for l in labels {
        d.part(l.as_bytes());
    }
    d.finish()
}

/// One column of a table as a seeded release binds it: numbers (`None`: a null) or
/// labels, a group of [`GROUP_ROWS`] rows at a time.
#[derive(Debug, Clone, Copy)]
pub enum ColumnValues<'a> {
    /// A numeric or boolean column's values as `f64`, as stored (non-finite values
    /// included), nulls as `None`.
    Numbers(&'a [Option<f64>]),
    /// Any other column's cells as text.
    Labels(&'a [String]),
}

/// The digest of group `g` of a table's column (at most [`GROUP_ROWS`] rows).
pub fn column_group(g: u64, values: ColumnValues<'_>) -> [u8; 32] {
    let mut d = Digester::new("kinsey column group v2");
    d.part(&g.to_le_bytes());
    match values {
        ColumnValues::Numbers(v) => {
            d.part(b"numbers");
            let mut bytes = Vec::with_capacity(v.len() * 9);
            for x in v {
                match x {
                    Some(x) => {
                        bytes.push(1);
                        bytes.extend(x.to_bits().to_le_bytes());
                    }
                    None => bytes.push(0),
                }
            }
            d.part(&bytes);
        }
        ColumnValues::Labels(v) => {
            d.part(b"labels");
            d.part(&(v.len() as u64).to_le_bytes());
            for l in v {
                d.part(l.as_bytes());
            }
        }
    }
    d.finish().0
}

/// A table column's digest from its rows and its groups' digests ([`column_group`]), in
/// group order: what a table's seeded release binds, and what a cluster's executors
/// compute group by group.
pub fn of_column_groups(rows: usize, groups: &[[u8; 32]]) -> DataDigest {
    let mut d = Digester::new("kinsey column v2");
    d.part(&(rows as u64).to_le_bytes());
    for g in groups {
        d.part(g);
    }
    d.finish()
}

/// Named digests, in order (the columns of a table a release reads).
pub fn of_named(parts: &[(String, DataDigest)]) -> DataDigest {
    let mut d = Digester::new("kinsey named digests v1");
    for (name, digest) in parts {
        d.part(name.as_bytes());
        d.part(&digest.0);
    }
    d.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ds(x: Vec<f32>, y: Vec<f32>) -> Dataset {
        Dataset {
            x,
            y,
            d: 2,
            features: vec!["a".into(), "b".into()],
            source: "mem".into(),
        }
    }

    #[test]
    fn one_changed_value_changes_the_digest() {
        let a = ds(vec![0.1, 0.2, 0.3, 0.4], vec![1.0, -1.0]);
        assert_eq!(of_dataset(&a), of_dataset(&a.clone()));
        let mut b = a.clone();
        b.x[3] = 0.5;
        assert_ne!(of_dataset(&a), of_dataset(&b));
        let mut c = a.clone();
        c.y[1] = 1.0;
        assert_ne!(of_dataset(&a), of_dataset(&c));
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("x.csv");
        std::fs::write(&p, "x\n1\n2\n").expect("w");
        let one = of_files(&p).expect("digest");
        assert_eq!(one, of_files(&p).expect("again"));
        std::fs::write(&p, "x\n1\n3\n").expect("w");
        assert_ne!(one, of_files(&p).expect("changed"));
        assert!(of_files(&dir.path().join("missing.csv")).is_err());
        assert_eq!(of_values(&[1.0, 2.0]), of_values(&[1.0, 2.0]));
        assert_ne!(of_values(&[1.0, 2.0]), of_values(&[1.0, 2.5]));
        assert_ne!(of_values(&[1.0]), of_values(&[1.0, 0.0]));
    }

    /// A data set digested a block at a time gives the digest of the whole.
    #[test]
    fn blocks_digest_as_the_whole() {
        let x: Vec<f32> = (0..3000).map(|i| i as f32 * 0.001).collect();
        let y: Vec<f32> = (0..1500)
            .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        let whole = ds(x.clone(), y.clone());
        for block in [1, 77, 998, 1500] {
            let mut b = DatasetDigest::new(1500, 2, &whole.features);
            for (xc, yc) in x.chunks(2 * block).zip(y.chunks(block)) {
                b.block(xc, yc);
            }
            assert_eq!(b.finish(), of_dataset(&whole), "blocks of {block}");
        }
        // Groups digested apart (a cluster's executors) and combined: the same digest.
        let n = 3 * GROUP_ROWS + 5;
        let x: Vec<f32> = (0..2 * n).map(|i| i as f32 * 1e-4).collect();
        let y: Vec<f32> = (0..n).map(|i| (i % 2) as f32).collect();
        let whole = ds(x.clone(), y.clone());
        let groups: Vec<[u8; 32]> = y
            .chunks(GROUP_ROWS)
            .enumerate()
            .map(|(g, yg)| {
                let r0 = g * GROUP_ROWS;
                group_digest(g as u64, &x[2 * r0..2 * (r0 + yg.len())], yg)
            })
            .collect();
        assert_eq!(combine(n, 2, &whole.features, &groups), of_dataset(&whole));
        let mut swapped = groups.clone();
        swapped.swap(0, 1);
        assert_ne!(combine(n, 2, &whole.features, &swapped), of_dataset(&whole));
    }
}
