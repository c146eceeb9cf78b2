//! Full-data passes of the solver, over rows in memory or streamed from disk.
//!
//! The solver reads a party's rows only through [`Passes`]: the loss and gradient sums at
//! a point (every full-data pass), the rows of the Hessian subsample (once), and the
//! misclassified count (diagnostics). In memory ([`MemoryPasses`]) a pass is one kernel
//! call; streamed ([`crate::spill::Spill`]) it reads the rows a block at a time. Both sum
//! through `kinsey_kernels::logistic::cpu::LogisticSums`, whose reduction order is fixed
//! by row groups, so the same rows give the same bits either way: a memory-limited run
//! publishes the in-memory run's model.

use kinsey_core::Result;
use kinsey_kernels::logistic::cpu::CpuLogistic;
use kinsey_kernels::logistic::csr::{CsrRows, csr_sums};
use kinsey_kernels::{LogisticKernel, LossSums, Rows};

/// A party's rows as the solver reads them.
pub trait Passes: Sync {
    /// Rows and columns.
    fn shape(&self) -> (usize, usize);
    /// The logistic sums over every row at `w` (one full pass).
    fn sums(&self, w: &[f64], hessian: bool) -> Result<LossSums>;
    /// Rows where `sign(w.x)` (ties to -1) differs from the label.
    fn misclassified(&self, w: &[f64]) -> Result<usize>;
    /// Copies of rows `idx` (increasing), row-major, and their labels.
    fn gather(&self, idx: &[usize]) -> Result<(Vec<f32>, Vec<f32>)>;
    /// The rows, when they are in memory (a GPU kernel can take them).
    fn in_memory(&self) -> Option<Rows<'_>>;
    /// Where the sums run.
    fn describe(&self) -> String;
}

/// Rows in memory: each pass is one call of the CPU kernel.
#[derive(Debug)]
pub struct MemoryPasses<'a> {
    rows: Rows<'a>,
    kernel: CpuLogistic<'a>,
}

impl<'a> MemoryPasses<'a> {
    /// Passes over `rows`.
    pub fn new(rows: Rows<'a>) -> Self {
        Self {
            rows,
            kernel: CpuLogistic::new(rows),
        }
    }
}

impl Passes for MemoryPasses<'_> {
    fn shape(&self) -> (usize, usize) {
        (self.rows.n, self.rows.d)
    }

    fn sums(&self, w: &[f64], hessian: bool) -> Result<LossSums> {
        Ok(self.kernel.eval(w, hessian)?)
    }

    fn misclassified(&self, w: &[f64]) -> Result<usize> {
        Ok(misclassified(w, self.rows.x, self.rows.y, self.rows.d))
    }

    fn gather(&self, idx: &[usize]) -> Result<(Vec<f32>, Vec<f32>)> {
        Ok(gather(self.rows, idx))
    }

    fn in_memory(&self) -> Option<Rows<'_>> {
        Some(self.rows)
    }

    fn describe(&self) -> String {
        self.kernel.describe()
    }
}

/// An owned data set in memory (the diagnostics' pooled rows): the same passes as
/// [`MemoryPasses`] over its rows.
impl Passes for kinsey_data::Dataset {
    fn shape(&self) -> (usize, usize) {
        (self.n(), self.d)
    }

    fn sums(&self, w: &[f64], hessian: bool) -> Result<LossSums> {
        MemoryPasses::new(self.rows()?).sums(w, hessian)
    }

    fn misclassified(&self, w: &[f64]) -> Result<usize> {
        Ok(misclassified(w, &self.x, &self.y, self.d))
    }

    fn gather(&self, idx: &[usize]) -> Result<(Vec<f32>, Vec<f32>)> {
        Ok(gather(self.rows()?, idx))
    }

    fn in_memory(&self) -> Option<Rows<'_>> {
        self.rows().ok()
    }

    fn describe(&self) -> String {
        MemoryPasses::new(Rows {
            x: &self.x,
            y: &self.y,
            n: self.n(),
            d: self.d,
        })
        .describe()
    }
}

/// A sparse data set in memory (a LIBSVM party, or the sparse parties' pooled rows): the
/// same passes as [`CsrPasses`] over its rows.
impl Passes for kinsey_data::sparse::SparseDataset {
    fn shape(&self) -> (usize, usize) {
        (self.n(), self.d)
    }

    fn sums(&self, w: &[f64], hessian: bool) -> Result<LossSums> {
        CsrPasses::new(csr_rows(self)?).sums(w, hessian)
    }

    fn misclassified(&self, w: &[f64]) -> Result<usize> {
        CsrPasses::new(csr_rows(self)?).misclassified(w)
    }

    fn gather(&self, idx: &[usize]) -> Result<(Vec<f32>, Vec<f32>)> {
        CsrPasses::new(csr_rows(self)?).gather(idx)
    }

    fn in_memory(&self) -> Option<Rows<'_>> {
        None
    }

    fn describe(&self) -> String {
        csr_description()
    }
}

/// How sparse passes run, in words.
fn csr_description() -> String {
    format!(
        "cpu (rayon, {} threads, sparse rows: CSR)",
        rayon::current_num_threads()
    )
}

/// The kernel's view of a sparse data set's rows (its structure checked).
pub fn csr_rows(ds: &kinsey_data::sparse::SparseDataset) -> Result<CsrRows<'_>> {
    Ok(CsrRows::new(
        &ds.indptr,
        &ds.indices,
        &ds.values,
        &ds.y,
        ds.d,
    )?)
}

/// A device kernel (CPU or GPU) as the solver's Hessian source.
pub struct KernelPasses<'a>(pub Box<dyn LogisticKernel + 'a>);

impl std::fmt::Debug for KernelPasses<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KernelPasses({})", self.0.describe())
    }
}

impl Passes for KernelPasses<'_> {
    fn shape(&self) -> (usize, usize) {
        self.0.shape()
    }

    fn sums(&self, w: &[f64], hessian: bool) -> Result<LossSums> {
        Ok(self.0.eval(w, hessian)?)
    }

    fn misclassified(&self, _w: &[f64]) -> Result<usize> {
        Err(kinsey_core::Error::Numerical(
            "a device kernel does not count errors".into(),
        ))
    }

    fn gather(&self, _idx: &[usize]) -> Result<(Vec<f32>, Vec<f32>)> {
        Err(kinsey_core::Error::Numerical(
            "a device kernel does not hand back rows".into(),
        ))
    }

    fn in_memory(&self) -> Option<Rows<'_>> {
        None
    }

    fn describe(&self) -> String {
        self.0.describe()
    }
}

/// Copy rows `idx` of a view.
fn gather(rows: Rows<'_>, idx: &[usize]) -> (Vec<f32>, Vec<f32>) {
    let d = rows.d;
    let mut x = Vec::with_capacity(idx.len() * d);
    for &i in idx {
        x.extend_from_slice(&rows.x[i * d..(i + 1) * d]);
    }
    (x, idx.iter().map(|&i| rows.y[i]).collect())
}

/// Rows of `x` (row-major, `d` columns) where `sign(w.x)` (ties to -1) differs from `y`.
pub(crate) fn misclassified(w: &[f64], x: &[f32], y: &[f32], d: usize) -> usize {
    use rayon::prelude::*;
    x.par_chunks(d)
        .zip(y.par_iter())
        .filter(|(row, yi)| {
            let z: f64 = row.iter().zip(w).map(|(&a, b)| a as f64 * b).sum();
            (if z > 0.0 { 1.0 } else { -1.0 }) != **yi
        })
        .count()
}

/// Sparse rows in memory (CSR): each pass costs O(non-zeros). The Hessian subsample is
/// gathered dense, so the device kernel (CPU or GPU) runs on it unchanged.
#[derive(Debug)]
pub struct CsrPasses<'a> {
    rows: CsrRows<'a>,
}

impl<'a> CsrPasses<'a> {
    /// Passes over `rows`.
    pub fn new(rows: CsrRows<'a>) -> Self {
        Self { rows }
    }

    fn row(&self, i: usize) -> (&[u32], &[f32]) {
        let (s, e) = (self.rows.indptr[i], self.rows.indptr[i + 1]);
        (&self.rows.indices[s..e], &self.rows.values[s..e])
    }
}

impl Passes for CsrPasses<'_> {
    fn shape(&self) -> (usize, usize) {
        (self.rows.n(), self.rows.d)
    }

    fn sums(&self, w: &[f64], hessian: bool) -> Result<LossSums> {
        Ok(csr_sums(&self.rows, w, hessian)?)
    }

    fn misclassified(&self, w: &[f64]) -> Result<usize> {
        use rayon::prelude::*;
        Ok((0..self.rows.n())
            .into_par_iter()
            .filter(|&i| {
                let (cols, vals) = self.row(i);
                let z: f64 = cols
                    .iter()
                    .zip(vals)
                    .map(|(&c, &v)| f64::from(v) * w[c as usize])
                    .sum();
                (if z > 0.0 { 1.0 } else { -1.0 }) != self.rows.y[i]
            })
            .count())
    }

    fn gather(&self, idx: &[usize]) -> Result<(Vec<f32>, Vec<f32>)> {
        let d = self.rows.d;
        let mut x = vec![0f32; idx.len() * d];
        for (k, &i) in idx.iter().enumerate() {
            let (cols, vals) = self.row(i);
            for (&c, &v) in cols.iter().zip(vals) {
                x[k * d + c as usize] = v;
            }
        }
        Ok((x, idx.iter().map(|&i| self.rows.y[i]).collect()))
    }

    fn in_memory(&self) -> Option<Rows<'_>> {
        None
    }

    fn describe(&self) -> String {
        csr_description()
    }
}
