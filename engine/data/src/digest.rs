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

/// Every value of a data set as read: dimensions, feature names, rows, labels.
pub fn of_dataset(ds: &Dataset) -> DataDigest {
    let mut d = DatasetDigest::new(ds.n(), ds.d, &ds.features);
    d.rows(&ds.x);
    d.labels(&ds.y);
    d.finish()
}

/// [`of_dataset`] of a data set that arrives in blocks (a party read from disk a block of
/// rows at a time): the shape first, then every row's bits in order, then every label.
/// Blocks of any size give the digest of the whole.
pub struct DatasetDigest {
    d: Digester,
    bytes: Vec<u8>,
}

impl std::fmt::Debug for DatasetDigest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DatasetDigest")
    }
}

impl DatasetDigest {
    /// A digest of `n` rows of the columns `features`.
    pub fn new(n: usize, d: usize, features: &[String]) -> Self {
        let mut dg = Digester::new("kinsey data set v1");
        dg.part(&(n as u64).to_le_bytes());
        dg.part(&(d as u64).to_le_bytes());
        for f in features {
            dg.part(f.as_bytes());
        }
        Self {
            d: dg,
            bytes: Vec::with_capacity(1 << 16),
        }
    }

    /// The next rows' values (row-major, as read); all rows come before any label.
    pub fn rows(&mut self, x: &[f32]) {
        self.values(x);
    }

    /// The next labels.
    pub fn labels(&mut self, y: &[f32]) {
        self.values(y);
    }

    fn values(&mut self, v: &[f32]) {
        for chunk in v.chunks(1 << 14) {
            self.bytes.clear();
            self.bytes
                .extend(chunk.iter().flat_map(|v| v.to_bits().to_le_bytes()));
            self.d.0.update(&self.bytes);
        }
    }

    /// The digest.
    pub fn finish(self) -> DataDigest {
        self.d.finish()
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
        let mut b = DatasetDigest::new(1500, 2, &whole.features);
        for c in x.chunks(998) {
            b.rows(c);
        }
        for c in y.chunks(77) {
            b.labels(c);
        }
        assert_eq!(b.finish(), of_dataset(&whole));
    }
}
