//! CPU implementation: rayon over row chunks, f64 accumulation, faer for `X^T D X`
//! (a symmetric rank-k update per chunk on the lower triangle, mirrored at the end).

use crate::{KernelError, LogisticKernel, LossSums, Rows, row_terms};
use faer::linalg::matmul::triangular::{BlockStructure, matmul};
use faer::{Accum, Mat, MatRef, Par};
use rayon::prelude::*;

/// Rows per work item: large enough to amortise the rank-k update, small enough for cache.
const CHUNK_ROWS: usize = 1024;

/// CPU logistic kernel.
#[derive(Debug)]
pub struct CpuLogistic<'a> {
    rows: Rows<'a>,
}

impl<'a> CpuLogistic<'a> {
    pub fn new(rows: Rows<'a>) -> Self {
        Self { rows }
    }
}

struct Acc {
    loss: f64,
    grad: Vec<f64>,
    hess: Option<Mat<f64>>,
    scratch: Mat<f64>,
}

impl Acc {
    fn new(d: usize, hessian: bool) -> Self {
        Self {
            loss: 0.0,
            grad: vec![0.0; d],
            hess: hessian.then(|| Mat::zeros(d, d)),
            scratch: if hessian {
                Mat::zeros(CHUNK_ROWS, d)
            } else {
                Mat::zeros(0, 0)
            },
        }
    }

    fn merge(mut self, other: Acc) -> Acc {
        self.loss += other.loss;
        for (a, b) in self.grad.iter_mut().zip(&other.grad) {
            *a += b;
        }
        if let (Some(h), Some(o)) = (self.hess.as_mut(), other.hess.as_ref()) {
            *h += o;
        }
        self
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
        let acc = x
            .par_chunks(CHUNK_ROWS * d)
            .zip(y.par_chunks(CHUNK_ROWS))
            .fold(
                || Acc::new(d, hessian),
                |mut acc, (xc, yc)| {
                    let m = yc.len();
                    for (i, (row, &yi)) in xc.chunks_exact(d).zip(yc).enumerate() {
                        let z: f64 = row.iter().zip(w).map(|(&a, &b)| a as f64 * b).sum();
                        let (l, c, dw) = row_terms(z, yi as f64);
                        acc.loss += l;
                        for (g, &a) in acc.grad.iter_mut().zip(row) {
                            *g += c * a as f64;
                        }
                        if hessian {
                            let s = dw.sqrt();
                            for (j, &a) in row.iter().enumerate() {
                                acc.scratch[(i, j)] = s * a as f64;
                            }
                        }
                    }
                    if let Some(h) = acc.hess.as_mut() {
                        let a: MatRef<'_, f64> = acc.scratch.as_ref().subrows(0, m);
                        matmul(
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
            grad: acc.grad,
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
