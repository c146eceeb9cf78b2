//! `kinsey bench train`: Newton to the tolerance on generated or given rows, then one full
//! pass (loss and gradient at the optimum) timed alone: the median of five.

use kinsey_core::Result;
use kinsey_data::parquet_io::{ColumnSpec, read_parquet};
use kinsey_data::{RowTransform, synth};
use kinsey_kernels::DevicePref;
use kinsey_kernels::logistic::csr::CsrRows;
use kinsey_learn::logreg::{self, Objective, SolverConfig};
use kinsey_learn::passes::{CsrPasses, MemoryPasses, Passes};
use serde::Serialize;
use std::path::PathBuf;
use std::time::Instant;

/// What `bench train` fits and how.
#[derive(Debug, Clone)]
pub struct TrainBench {
    /// Generated rows (when no input or LIBSVM file).
    pub rows: usize,
    /// Features of the generated rows, or the dimension of the LIBSVM file.
    pub dim: usize,
    /// Where the row passes run.
    pub device: DevicePref,
    /// L2 regularisation lambda.
    pub lambda: f64,
    /// A Parquet file instead of generated rows.
    pub input: Option<PathBuf>,
    /// A LIBSVM file (of dimension `dim`) instead of generated rows.
    pub libsvm: Option<PathBuf>,
    /// Keep the LIBSVM rows sparse (CSR).
    pub sparse: bool,
    /// Multiply every row by this public constant first.
    pub row_scale: Option<f64>,
    /// Rows in the Hessian subsample (0 = all rows).
    pub hessian_rows: usize,
}

/// The figures of one `bench train` run (its JSON line).
#[derive(Debug, Clone, Serialize)]
pub struct TrainFigures {
    /// Rows.
    pub rows: usize,
    /// Features.
    pub dim: usize,
    /// `dense` or `csr`.
    pub layout: String,
    /// Values stored (non-zeros of CSR rows).
    pub stored_values: usize,
    /// L2 regularisation lambda.
    pub lambda: f64,
    /// Where the fit ran, in words.
    pub device: String,
    /// Seconds to the tolerance.
    pub seconds: f64,
    /// Seconds reading or generating the rows.
    pub load_seconds: f64,
    /// Newton iterations.
    pub iterations: usize,
    /// Full passes over the rows.
    pub passes: usize,
    /// One full pass at the optimum, median of five.
    pub pass_seconds: f64,
    /// Hessian evaluations.
    pub hessian_evaluations: usize,
    /// Rows of each Hessian.
    pub hessian_rows: usize,
    /// The objective at the optimum.
    pub objective: f64,
    /// `||grad J||` at the optimum.
    pub grad_norm: f64,
    /// Rows per second over the fit's passes.
    pub rows_per_s: f64,
    /// Threads of the pool.
    pub threads: usize,
    /// Seconds uploading the rows to the device (0 on the CPU).
    pub upload_seconds: f64,
    /// Where the timed pass ran, in words.
    pub pass_device: String,
    /// Bytes one pass reads (f32 rows and labels).
    pub pass_bytes: usize,
    /// The tolerance the fit reached.
    #[serde(skip)]
    pub tolerance: f64,
}

/// The rows `bench train` fits: dense, or sparse.
enum BenchRows {
    Dense(kinsey_data::Dataset),
    Sparse(kinsey_data::sparse::SparseDataset),
}

impl TrainBench {
    /// The rows, scaled when asked.
    fn rows(&self) -> Result<BenchRows> {
        let labels = kinsey_data::LabelEncoding::PlusMinusOne;
        let mut rows = match (&self.input, &self.libsvm) {
            (Some(p), _) => BenchRows::Dense(read_parquet(p, &ColumnSpec::default())?),
            (None, Some(p)) if self.sparse => BenchRows::Sparse(
                kinsey_data::sparse::read_libsvm_sparse(p, self.dim, labels)?,
            ),
            (None, Some(p)) => {
                BenchRows::Dense(kinsey_data::libsvm::read_libsvm(p, self.dim, labels)?)
            }
            (None, None) => {
                kinsey_core::limits::check_dense("--rows", self.rows, self.dim)?;
                BenchRows::Dense(synth::generate(
                    self.rows,
                    self.dim,
                    16.0,
                    1,
                    1,
                    "bench".into(),
                ))
            }
        };
        if let Some(c) = self.row_scale {
            let t = RowTransform::Scale(c);
            match &mut rows {
                BenchRows::Dense(ds) => t.apply(ds)?,
                BenchRows::Sparse(sp) => sp.apply(t)?,
            };
        }
        Ok(rows)
    }

    /// Fit, then time one pass alone.
    pub fn run(&self) -> Result<TrainFigures> {
        let t = Instant::now();
        let data = self.rows()?;
        let load_s = t.elapsed().as_secs_f64();
        let obj = Objective::new(self.lambda)?;
        let solver = SolverConfig {
            hessian_rows: self.hessian_rows,
            ..SolverConfig::default()
        };
        let (passes, nnz): (Box<dyn Passes + '_>, usize) = match &data {
            BenchRows::Dense(ds) => (Box::new(MemoryPasses::new(ds.rows()?)), ds.n() * ds.d),
            BenchRows::Sparse(sp) => (
                Box::new(CsrPasses::new(CsrRows::new(
                    &sp.indptr,
                    &sp.indices,
                    &sp.values,
                    &sp.y,
                    sp.d,
                )?)),
                sp.nnz(),
            ),
        };
        let (n, d) = passes.shape();
        // The full passes where the fit runs them (on the device under --device gpu,
        // unless KINSEY_GPU_PASSES=cpu), uploaded once: the fit and the timed pass share
        // the rows.
        let t = Instant::now();
        let on_device = logreg::device_passes(passes.as_ref(), self.device)?;
        let upload_s = t.elapsed().as_secs_f64();
        let mut fit = logreg::fit_passes_on(
            passes.as_ref(),
            on_device.as_ref(),
            self.device,
            &obj,
            &solver,
        )?;
        if on_device.is_some() {
            fit.upload_seconds = upload_s;
            fit.seconds += upload_s;
        }
        let timed: &dyn Passes = match &on_device {
            Some(k) => k,
            None => passes.as_ref(),
        };
        let mut times = (0..5)
            .map(|_| {
                let t = Instant::now();
                timed.sums(&fit.w, false)?;
                Ok(t.elapsed().as_secs_f64())
            })
            .collect::<Result<Vec<f64>>>()?;
        times.sort_by(f64::total_cmp);
        let layout = if matches!(data, BenchRows::Sparse(_)) {
            "csr"
        } else {
            "dense"
        };
        Ok(TrainFigures {
            rows: n,
            dim: d,
            layout: layout.into(),
            stored_values: nnz,
            lambda: self.lambda,
            device: fit.device.clone(),
            seconds: fit.seconds,
            load_seconds: load_s,
            iterations: fit.iterations,
            passes: fit.passes,
            pass_seconds: times[2],
            hessian_evaluations: fit.hessian_evaluations,
            hessian_rows: fit.hessian_rows,
            objective: fit.objective,
            grad_norm: fit.grad_norm,
            rows_per_s: (n * fit.passes) as f64 / fit.seconds,
            threads: rayon::current_num_threads(),
            upload_seconds: fit.upload_seconds,
            pass_device: timed.describe(),
            pass_bytes: n * d * 4 + n * 4,
            tolerance: solver.tolerance,
        })
    }
}
