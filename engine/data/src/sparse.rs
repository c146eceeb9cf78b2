//! Sparse rows kept sparse: a data set in compressed sparse row (CSR) form, as LIBSVM
//! text is (a9a: 14 non-zeros of 123 features), so a pass over it costs O(non-zeros)
//! instead of O(rows x d). The row transform and the intercept go through the dense
//! code's per-row functions on the non-zero values, which carry the row's norm: a sparse
//! row and its dense twin hold the same values after either.

use crate::libsvm::LibsvmBlocks;
use crate::{Dataset, LabelEncoding, RowTransform, check_intercept, intercept_row};
use kinsey_core::{Error, Result};
use std::path::{Path, PathBuf};

/// A labelled data set in CSR form: row `i`'s non-zeros are
/// `indices[indptr[i]..indptr[i + 1]]` (0-based, ascending) and the same range of `values`.
#[derive(Debug, Clone, PartialEq)]
pub struct SparseDataset {
    /// Row starts into `indices` and `values`, `n + 1` entries from 0.
    pub indptr: Vec<usize>,
    /// Column of each non-zero.
    pub indices: Vec<u32>,
    /// Value of each non-zero.
    pub values: Vec<f32>,
    /// Labels in {-1, +1}.
    pub y: Vec<f32>,
    /// Columns (features).
    pub d: usize,
    /// Feature names, in column order.
    pub features: Vec<String>,
    /// Where it came from (for error messages and reports).
    pub source: PathBuf,
}

impl SparseDataset {
    /// No rows yet, `d` features (`f1 ..= f<d>`), from `source`.
    pub fn empty(d: usize, source: &Path) -> Self {
        Self {
            indptr: vec![0],
            indices: Vec::new(),
            values: Vec::new(),
            y: Vec::new(),
            d,
            features: Dataset::default_feature_names(d),
            source: source.to_path_buf(),
        }
    }

    /// Rows.
    pub fn n(&self) -> usize {
        self.y.len()
    }

    /// Stored non-zeros.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }

    /// The dense twin (tests and comparisons).
    pub fn to_dense(&self) -> Dataset {
        let d = self.d;
        let mut x = vec![0f32; self.n() * d];
        for (i, w) in self.indptr.windows(2).enumerate() {
            for k in w[0]..w[1] {
                x[i * d + self.indices[k] as usize] = self.values[k];
            }
        }
        Dataset {
            x,
            y: self.y.clone(),
            d,
            features: self.features.clone(),
            source: self.source.clone(),
        }
    }

    /// The CSR form of a dense data set (its non-zeros).
    pub fn from_dense(ds: &Dataset) -> Self {
        let mut out = Self {
            indptr: vec![0],
            indices: Vec::new(),
            values: Vec::new(),
            y: ds.y.clone(),
            d: ds.d,
            features: ds.features.clone(),
            source: ds.source.clone(),
        };
        for row in ds.x.chunks_exact(ds.d.max(1)) {
            for (j, &v) in row.iter().enumerate() {
                if v != 0.0 {
                    out.indices.push(j as u32);
                    out.values.push(v);
                }
            }
            out.indptr.push(out.values.len());
        }
        out
    }

    /// The row transform, row by row on the non-zeros (see [`RowTransform::apply`]).
    pub fn apply(&mut self, t: RowTransform) -> Result<usize> {
        let (indptr, values) = (&self.indptr, &mut self.values);
        let mut rows = Vec::with_capacity(self.y.len());
        let mut rest: &mut [f32] = values;
        for w in indptr.windows(2) {
            let (row, tail) = rest.split_at_mut(w[1] - w[0]);
            rows.push(row);
            rest = tail;
        }
        t.apply_rows(rows.into_iter(), &self.source)
    }

    /// [`append_intercept`](crate::append_intercept) on every row: its non-zeros scaled,
    /// then the constant `c` in a new last column.
    pub fn append_intercept(&mut self, c: f64) -> Result<()> {
        check_intercept("intercept", c)?;
        if self.features.iter().any(|f| f == crate::INTERCEPT_FEATURE) {
            return Err(Error::Schema {
                path: self.source.clone(),
                column: crate::INTERCEPT_FEATURE.into(),
                msg: "a feature already has the intercept's name; rename the column".into(),
            });
        }
        let d = self.d;
        let mut values = Vec::with_capacity(self.values.len() + self.n());
        let mut indices = Vec::with_capacity(values.capacity());
        let mut indptr = Vec::with_capacity(self.indptr.len());
        indptr.push(0);
        for w in self.indptr.windows(2) {
            intercept_row(&self.values[w[0]..w[1]], c, &mut values);
            indices.extend_from_slice(&self.indices[w[0]..w[1]]);
            indices.push(d as u32);
            indptr.push(values.len());
        }
        self.values = values;
        self.indices = indices;
        self.indptr = indptr;
        self.d = d + 1;
        self.features.push(crate::INTERCEPT_FEATURE.into());
        Ok(())
    }
}

/// Bytes held per stored non-zero (its column and its value).
const NONZERO_BYTES: u64 = 8;
/// Bytes held per row besides its non-zeros (its start and its label).
const ROW_BYTES: u64 = 12;

impl SparseDataset {
    /// Bytes its arrays hold.
    pub fn bytes(&self) -> u64 {
        self.nnz() as u64 * NONZERO_BYTES + self.n() as u64 * ROW_BYTES
    }

    /// The digest of its dense twin ([`crate::digest::of_dataset`] of [`Self::to_dense`]),
    /// taken a block of rows at a time: a sparse party's noise tag is its dense twin's.
    pub fn digest(&self) -> kinsey_dp::DataDigest {
        const BLOCK: usize = 4096;
        let d = self.d;
        let mut dg = crate::digest::DatasetDigest::new(self.n(), d, &self.features);
        let mut x = vec![0f32; BLOCK * d];
        for r0 in (0..self.n()).step_by(BLOCK) {
            let r1 = (r0 + BLOCK).min(self.n());
            let x = &mut x[..(r1 - r0) * d];
            x.fill(0.0);
            for i in r0..r1 {
                for k in self.indptr[i]..self.indptr[i + 1] {
                    x[(i - r0) * d + self.indices[k] as usize] = self.values[k];
                }
            }
            dg.block(x, &self.y[r0..r1]);
        }
        dg.finish()
    }

    /// The rows of `parts`, one after another (the diagnostics' pooled rows); the first
    /// part's columns.
    pub fn concat(parts: &[SparseDataset]) -> Result<SparseDataset> {
        let first = parts
            .first()
            .ok_or_else(|| Error::param("parties", "no parties"))?;
        let nnz = parts.iter().map(SparseDataset::nnz).sum();
        let mut out = SparseDataset {
            indptr: Vec::with_capacity(parts.iter().map(SparseDataset::n).sum::<usize>() + 1),
            indices: Vec::with_capacity(nnz),
            values: Vec::with_capacity(nnz),
            y: Vec::new(),
            d: first.d,
            features: first.features.clone(),
            source: "<pooled>".into(),
        };
        out.indptr.push(0);
        for p in parts {
            if p.d != first.d {
                return Err(Error::format(
                    &p.source,
                    format!("{} features, the first party has {}", p.d, first.d),
                ));
            }
            let base = out.values.len();
            out.indptr.extend(p.indptr[1..].iter().map(|&s| base + s));
            out.indices.extend_from_slice(&p.indices);
            out.values.extend_from_slice(&p.values);
            out.y.extend_from_slice(&p.y);
        }
        Ok(out)
    }
}

/// Read a LIBSVM file of dimension `dim` as CSR, with the dense reader's checks and
/// errors (every line's indices, values and label). The non-zeros are bounded by the
/// dense-memory limit (8 bytes each) as they are read.
pub fn read_libsvm_sparse(path: &Path, dim: usize, labels: LabelEncoding) -> Result<SparseDataset> {
    read_libsvm_sparse_within(path, dim, labels, &mut |ds| {
        kinsey_core::limits::check_dense(&path.display().to_string(), ds.nnz(), 2)
    })
}

/// [`read_libsvm_sparse`] with the caller's bound on what is held: `within` sees the rows
/// read so far every 65,536 rows and at the end, and its error stops the read (a memory
/// budget: nothing more is allocated past the block that crossed it).
pub fn read_libsvm_sparse_within(
    path: &Path,
    dim: usize,
    labels: LabelEncoding,
    within: &mut dyn FnMut(&SparseDataset) -> Result<()>,
) -> Result<SparseDataset> {
    let mut lines = LibsvmBlocks::open(path, dim, labels)?;
    let mut out = SparseDataset::empty(dim, path);
    while let Some(y) = lines.next_sparse_row(&mut out.indices, &mut out.values)? {
        out.y.push(y);
        out.indptr.push(out.values.len());
        if out.y.len().is_multiple_of(1 << 16) {
            within(&out)?;
        }
    }
    within(&out)?;
    if out.n() == 0 {
        return Err(Error::format(path, "the data set has zero rows"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// a9a read as CSR is the dense read's non-zeros; the transform and the intercept give
    /// the dense results' values, row for row.
    #[test]
    fn a9a_as_csr_is_the_dense_read() {
        let path = crate::testdata::shared_data_dir().join("a9a").join("a9a");
        let dense =
            crate::libsvm::read_libsvm(&path, 123, LabelEncoding::PlusMinusOne).expect("dense");
        let mut sparse =
            read_libsvm_sparse(&path, 123, LabelEncoding::PlusMinusOne).expect("sparse");
        assert_eq!(sparse.n(), 32_561);
        assert!(sparse.nnz() < 15 * sparse.n(), "{} non-zeros", sparse.nnz());
        assert_eq!(sparse.to_dense().x, dense.x);
        assert_eq!(SparseDataset::from_dense(&dense), sparse);
        let mut dense = dense;
        let t = RowTransform::Scale(1.0 / 14f64.sqrt());
        assert_eq!(
            sparse.apply(t).expect("sparse"),
            t.apply(&mut dense).expect("dense")
        );
        sparse.append_intercept(0.5).expect("sparse");
        crate::append_intercept(&mut dense, 0.5).expect("dense");
        assert_eq!(sparse.to_dense().x, dense.x);
        assert_eq!(sparse.features, dense.features);
        // The digest (a seeded party's noise tag) is the dense twin's.
        assert_eq!(
            sparse.digest(),
            crate::digest::of_dataset(&sparse.to_dense())
        );
        assert_eq!(
            sparse.bytes(),
            sparse.nnz() as u64 * 8 + sparse.n() as u64 * 12
        );
        let pooled = SparseDataset::concat(&[sparse.clone(), sparse.clone()]).expect("concat");
        assert_eq!(pooled.n(), 2 * sparse.n());
        let twice = pooled.to_dense();
        assert_eq!(&twice.x[..dense.x.len()], &dense.x[..]);
        assert_eq!(&twice.x[dense.x.len()..], &dense.x[..]);
        let mut big = sparse.clone();
        big.values.iter_mut().for_each(|v| *v *= 10.0);
        assert!(
            big.apply(RowTransform::None).is_err(),
            "rows outside the ball"
        );
    }
}
