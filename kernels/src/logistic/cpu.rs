//! CPU implementation: rayon over row chunks, f64 accumulation, faer for `X^T D X`
//! (a symmetric rank-k update per chunk on the lower triangle, mirrored at the end).

use super::kernel::{LogisticKernel, LossSums};
use crate::error::KernelError;
use crate::rows::Rows;
use faer::linalg::matmul::{self, triangular, triangular::BlockStructure};
use faer::{Accum, Mat, MatRef, Par};
use rayon::prelude::*;

/// Rows per work item: large enough to amortise the rank-k update, small enough for cache.
const CHUNK_ROWS: usize = 1024;
/// Rows per logarithm in the loss sum (see `add_chunk`).
const LOG_BLOCK: usize = 512;

/// CPU logistic kernel.
#[derive(Debug)]
pub struct CpuLogistic<'a> {
    rows: Rows<'a>,
}

impl<'a> CpuLogistic<'a> {
    /// The kernel over `rows`.
    pub fn new(rows: Rows<'a>) -> Self {
        Self { rows }
    }
}

struct Acc {
    loss: f64,
    grad: Mat<f64>,
    hess: Option<Mat<f64>>,
    /// The chunk converted to f64, row-major (`CHUNK_ROWS x d`).
    buf: Vec<f64>,
    z: Mat<f64>,
    c: Mat<f64>,
}

impl Acc {
    fn new(d: usize, hessian: bool) -> Self {
        Self {
            loss: 0.0,
            grad: Mat::zeros(d, 1),
            hess: hessian.then(|| Mat::zeros(d, d)),
            buf: Vec::new(),
            z: Mat::zeros(CHUNK_ROWS, 1),
            c: Mat::zeros(CHUNK_ROWS, 1),
        }
    }

    fn merge(mut self, other: Acc) -> Acc {
        self.loss += other.loss;
        self.grad += &other.grad;
        if let (Some(h), Some(o)) = (self.hess.as_mut(), other.hess.as_ref()) {
            *h += o;
        }
        self
    }

    /// Add one chunk of rows: z = X w and g += X^T c with faer (SIMD chosen at run time),
    /// the per-row terms in between, and the Hessian as a rank-m update of sqrt(D) X.
    fn add_chunk(&mut self, xc: &[f32], yc: &[f32], w: MatRef<'_, f64>, d: usize) {
        let m = yc.len();
        self.buf.clear();
        self.buf.extend(xc.iter().map(|&v| v as f64));
        let a = MatRef::from_row_major_slice(&self.buf, m, d);
        matmul::matmul(
            self.z.as_mut().subrows_mut(0, m),
            Accum::Replace,
            a,
            w,
            1.0,
            Par::Seq,
        );
        let z = self.z.as_ref();
        let mut dws = [0.0f64; CHUNK_ROWS];
        // The per-row terms of `row_terms`, with the logarithm of the loss taken once per
        // block: sum_i log(1 + e_i) = log prod_i (1 + e_i), each factor in (1, 2], so a
        // product over LOG_BLOCK <= 1000 rows cannot overflow. One `exp` per row instead of
        // an `exp` and a `ln_1p`; relative error of the block log about LOG_BLOCK ulp.
        let mut prod = 1.0f64;
        for (i, &yi) in yc.iter().enumerate() {
            let y = yi as f64;
            let t = -y * z[(i, 0)];
            let e = (-t.abs()).exp();
            self.loss += t.max(0.0);
            prod *= 1.0 + e;
            if i % LOG_BLOCK == LOG_BLOCK - 1 {
                self.loss += prod.ln();
                prod = 1.0;
            }
            let sg = if t >= 0.0 {
                1.0 / (1.0 + e)
            } else {
                e / (1.0 + e)
            };
            self.c[(i, 0)] = -y * sg;
            dws[i] = sg * (1.0 - sg);
        }
        self.loss += prod.ln();
        let c = self.c.as_ref().subrows(0, m);
        matmul::matmul(
            self.grad.as_mut(),
            Accum::Add,
            a.transpose(),
            c,
            1.0,
            Par::Seq,
        );
        if let Some(h) = self.hess.as_mut() {
            for (row, dw) in self.buf.chunks_exact_mut(d).zip(&dws) {
                let s = dw.sqrt();
                for v in row.iter_mut() {
                    *v *= s;
                }
            }
            let a = MatRef::from_row_major_slice(&self.buf, m, d);
            triangular::matmul(
                h.as_mut(),
                BlockStructure::TriangularLower,
                Accum::Add,
                a.transpose(),
                BlockStructure::Rectangular,
                a,
                BlockStructure::Rectangular,
                1.0,
                Par::Seq,
            );
        }
    }
}

impl LogisticKernel for CpuLogistic<'_> {
    fn describe(&self) -> String {
        format!(
            "cpu (rayon, {} threads, faer)",
            rayon::current_num_threads()
        )
    }

    fn is_gpu(&self) -> bool {
        false
    }

    fn shape(&self) -> (usize, usize) {
        (self.rows.n, self.rows.d)
    }

    fn eval(&self, w: &[f64], hessian: bool) -> Result<LossSums, KernelError> {
        let Rows { x, y, n: _, d } = self.rows;
        if w.len() != d {
            return Err(KernelError::Input(format!(
                "w has {} entries, data has {d} columns",
                w.len()
            )));
        }
        let wm = MatRef::from_column_major_slice(w, d, 1);
        let acc = x
            .par_chunks(CHUNK_ROWS * d)
            .zip(y.par_chunks(CHUNK_ROWS))
            .fold(
                || Acc::new(d, hessian),
                |mut acc, (xc, yc)| {
                    acc.add_chunk(xc, yc, wm, d);
                    acc
                },
            )
            .reduce(|| Acc::new(d, false), Acc::merge_any);
        let hess = acc.hess.map(|h| {
            let mut out = vec![0.0; d * d];
            for j in 0..d {
                for k in 0..=j {
                    out[j * d + k] = h[(j, k)];
                    out[k * d + j] = h[(j, k)];
                }
            }
            out
        });
        Ok(LossSums {
            loss: acc.loss,
            grad: (0..d).map(|j| acc.grad[(j, 0)]).collect(),
            hess,
        })
    }
}

impl Acc {
    /// Merge where either side may be the empty identity (no Hessian allocated).
    fn merge_any(a: Acc, b: Acc) -> Acc {
        match (&a.hess, &b.hess) {
            (None, Some(_)) => b.merge(a),
            _ => a.merge(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row_terms;

    /// Direct definition, one row at a time, for comparison.
    fn naive(x: &[f32], y: &[f32], d: usize, w: &[f64]) -> (f64, Vec<f64>, Vec<f64>) {
        let mut loss = 0.0;
        let mut g = vec![0.0; d];
        let mut h = vec![0.0; d * d];
        for (row, &yi) in x.chunks_exact(d).zip(y) {
            let z: f64 = row.iter().zip(w).map(|(&a, &b)| a as f64 * b).sum();
            let (l, c, dw) = row_terms(z, yi as f64);
            loss += l;
            for j in 0..d {
                g[j] += c * row[j] as f64;
                for k in 0..d {
                    h[j * d + k] += dw * row[j] as f64 * row[k] as f64;
                }
            }
        }
        (loss, g, h)
    }

    #[test]
    fn matches_naive_definition() {
        let d = 7;
        let n = 3000; // several chunks, last one partial
        let x: Vec<f32> = (0..n * d)
            .map(|i| ((i * 37 % 101) as f32 / 101.0) - 0.5)
            .collect();
        let y: Vec<f32> = (0..n)
            .map(|i| if i % 3 == 0 { 1.0 } else { -1.0 })
            .collect();
        let w: Vec<f64> = (0..d).map(|j| 0.3 * j as f64 - 1.0).collect();
        let k = CpuLogistic::new(Rows::new(&x, &y, d).expect("shape"));
        let s = k.eval(&w, true).expect("eval");
        let (l, g, h) = naive(&x, &y, d, &w);
        assert!((s.loss - l).abs() < 1e-9 * l);
        for (a, b) in s.grad.iter().zip(&g) {
            assert!((a - b).abs() < 1e-9);
        }
        for (a, b) in s.hess.expect("requested").iter().zip(&h) {
            assert!((a - b).abs() < 1e-9);
        }
        assert!(k.eval(&w[..3], false).is_err());
        assert!(k.eval(&w, false).expect("eval").hess.is_none());
    }
}
