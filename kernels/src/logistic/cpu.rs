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

/// One group's partial sums, added to the total in the groups' order.
struct Part {
    loss: f64,
    grad: Mat<f64>,
    hess: Option<Mat<f64>>,
}

impl Part {
    fn zeros(d: usize, hessian: bool) -> Self {
        Self {
            loss: 0.0,
            grad: Mat::zeros(d, 1),
            hess: hessian.then(|| Mat::zeros(d, d)),
        }
    }

    fn add(&mut self, other: &Part) {
        self.loss += other.loss;
        self.grad += &other.grad;
        if let (Some(h), Some(o)) = (self.hess.as_mut(), other.hess.as_ref()) {
            *h += o;
        }
    }
}

/// A thread's running sums over a group and its scratch buffers.
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

    /// The sums so far, leaving zero sums and the scratch buffers (reused by the next
    /// group on this thread: a chunk's buffer is a megabyte at d = 123).
    fn take(&mut self) -> Part {
        let d = self.grad.nrows();
        Part {
            loss: std::mem::take(&mut self.loss),
            grad: std::mem::replace(&mut self.grad, Mat::zeros(d, 1)),
            hess: self
                .hess
                .as_mut()
                .map(|h| std::mem::replace(h, Mat::zeros(d, d))),
        }
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
        let mut sums = LogisticSums::new(w, d, hessian)?;
        sums.add_block(x, y)?;
        Ok(sums.finish())
    }
}

/// Rows per group, the unit of the fixed-order reduction: each group's partial sums are
/// computed by one task over its rows in order, and the groups are added left to right. A
/// sum therefore depends neither on the thread count nor on how the rows arrive in blocks,
/// so long as every block but the last is a whole number of groups: a party streamed from
/// disk in blocks gets the same bits as the same rows in memory.
pub const GROUP_ROWS: usize = crate::rows::BLOCK_ROWS;
/// Groups computed side by side before they are added to the total, without the Hessian;
/// with it, two per thread (a round holds one `d x d` partial sum per group). Rounds only
/// bound the memory: the order of the additions is the groups' either way.
const ROUND_GROUPS: usize = 64;

/// Running logistic sums at a fixed `w` over rows that arrive in blocks (in memory: one
/// block; streamed: row blocks read from disk), reduced in the fixed order of
/// [`GROUP_ROWS`]-row groups.
pub struct LogisticSums {
    w: Vec<f64>,
    d: usize,
    hessian: bool,
    rows: usize,
    total: Part,
}

impl std::fmt::Debug for LogisticSums {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LogisticSums {{ d: {}, rows: {} }}", self.d, self.rows)
    }
}

impl LogisticSums {
    /// Empty sums at `w` over rows of `d` columns.
    pub fn new(w: &[f64], d: usize, hessian: bool) -> Result<Self, KernelError> {
        if w.len() != d {
            return Err(KernelError::Input(format!(
                "w has {} entries, data has {d} columns",
                w.len()
            )));
        }
        Ok(Self {
            w: w.to_vec(),
            d,
            hessian,
            rows: 0,
            total: Part::zeros(d, hessian),
        })
    }

    /// Rows added so far.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Add a block of rows (row-major `x`, labels `y`). Every block before the last must
    /// be a whole number of [`GROUP_ROWS`] rows (the order of the reduction is the
    /// groups'); a block after a partial one is refused.
    pub fn add_block(&mut self, x: &[f32], y: &[f32]) -> Result<(), KernelError> {
        let d = self.d;
        if x.len() != y.len() * d {
            return Err(KernelError::Input(format!(
                "x has {} entries, not {} rows x {d} columns",
                x.len(),
                y.len()
            )));
        }
        if y.is_empty() {
            return Ok(());
        }
        if !self.rows.is_multiple_of(GROUP_ROWS) {
            return Err(KernelError::Input(format!(
                "a block follows a partial group ({} rows so far, groups of {GROUP_ROWS})",
                self.rows
            )));
        }
        let wm = MatRef::from_column_major_slice(&self.w, d, 1);
        let groups = if self.hessian {
            2 * rayon::current_num_threads()
        } else {
            ROUND_GROUPS
        };
        let round = groups.max(1) * GROUP_ROWS;
        for (xr, yr) in x.chunks(round * d).zip(y.chunks(round)) {
            let hessian = self.hessian;
            let parts: Vec<Part> = xr
                .par_chunks(GROUP_ROWS * d)
                .zip(yr.par_chunks(GROUP_ROWS))
                .map_init(
                    || Acc::new(d, hessian),
                    |acc, (xg, yg)| {
                        for (xc, yc) in xg.chunks(CHUNK_ROWS * d).zip(yg.chunks(CHUNK_ROWS)) {
                            acc.add_chunk(xc, yc, wm, d);
                        }
                        acc.take()
                    },
                )
                .collect();
            for p in &parts {
                self.total.add(p);
            }
        }
        self.rows += y.len();
        Ok(())
    }

    /// Add one group's partial sums computed elsewhere ([`group_sums`]: an executor of a
    /// cluster), the next group in the fixed order: adding every group's sums in order
    /// gives the bits [`LogisticSums::add_block`] gives over the same rows.
    pub fn add_group(&mut self, g: &GroupSums) -> Result<(), KernelError> {
        let d = self.d;
        if g.grad.len() != d || g.hessian_lower.as_ref().is_some_and(|h| h.len() != d * d) {
            return Err(KernelError::Input(format!(
                "a group's sums have {} gradient entries, not {d}",
                g.grad.len()
            )));
        }
        if g.hessian_lower.is_some() != self.hessian {
            return Err(KernelError::Input(
                "a group's sums and the pass disagree on the Hessian".into(),
            ));
        }
        let part = Part {
            loss: g.loss,
            grad: Mat::from_fn(d, 1, |j, _| g.grad[j]),
            hess: g
                .hessian_lower
                .as_ref()
                .map(|h| Mat::from_fn(d, d, |j, k| h[j * d + k])),
        };
        self.total.add(&part);
        self.rows += g.rows;
        Ok(())
    }

    /// The sums (the Hessian mirrored to full `d x d`).
    pub fn finish(self) -> LossSums {
        let d = self.d;
        let acc = self.total;
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
        LossSums {
            loss: acc.loss,
            grad: (0..d).map(|j| acc.grad[(j, 0)]).collect(),
            hess,
        }
    }
}

/// One group's partial sums (at most [`GROUP_ROWS`] rows, the group's rows in order),
/// computed exactly as [`LogisticSums::add_block`] computes each group's: what an executor
/// of a cluster returns for the groups it holds, to be added in order by
/// [`LogisticSums::add_group`].
#[derive(Debug, Clone, PartialEq)]
pub struct GroupSums {
    /// Rows summed.
    pub rows: usize,
    /// Sum of the losses.
    pub loss: f64,
    /// Sum of the gradients, length `d`.
    pub grad: Vec<f64>,
    /// With the Hessian: its lower triangle, row-major `d x d` (the upper triangle zero).
    pub hessian_lower: Option<Vec<f64>>,
}

/// The partial sums of one group of rows at `w` ([`GroupSums`]).
pub fn group_sums(
    x: &[f32],
    y: &[f32],
    w: &[f64],
    hessian: bool,
) -> Result<GroupSums, KernelError> {
    let d = w.len();
    if x.len() != y.len() * d || y.len() > GROUP_ROWS || d == 0 {
        return Err(KernelError::Input(format!(
            "a group of {} rows of {d} columns has {} values (at most {GROUP_ROWS} rows)",
            y.len(),
            x.len()
        )));
    }
    let wm = MatRef::from_column_major_slice(w, d, 1);
    let mut acc = Acc::new(d, hessian);
    for (xc, yc) in x.chunks(CHUNK_ROWS * d).zip(y.chunks(CHUNK_ROWS)) {
        acc.add_chunk(xc, yc, wm, d);
    }
    let part = acc.take();
    Ok(GroupSums {
        rows: y.len(),
        loss: part.loss,
        grad: (0..d).map(|j| part.grad[(j, 0)]).collect(),
        hessian_lower: part
            .hess
            .map(|h| (0..d * d).map(|i| h[(i / d, i % d)]).collect()),
    })
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

    /// Groups summed one by one (as a cluster's executors do) and added in order give
    /// the bits of one pass over the same rows, with and without the Hessian.
    #[test]
    fn groups_added_in_order_are_the_pass() {
        let d = 5;
        let n = 3 * GROUP_ROWS + 777;
        let x: Vec<f32> = (0..n * d)
            .map(|i| ((i * 53 % 97) as f32 / 97.0) - 0.5)
            .collect();
        let y: Vec<f32> = (0..n).map(|i| if i % 5 < 2 { 1.0 } else { -1.0 }).collect();
        let w: Vec<f64> = (0..d).map(|j| 0.2 * j as f64 - 0.4).collect();
        for hessian in [false, true] {
            let mut whole = LogisticSums::new(&w, d, hessian).expect("new");
            whole.add_block(&x, &y).expect("block");
            let mut grouped = LogisticSums::new(&w, d, hessian).expect("new");
            for (xg, yg) in x.chunks(GROUP_ROWS * d).zip(y.chunks(GROUP_ROWS)) {
                let g = group_sums(xg, yg, &w, hessian).expect("group");
                grouped.add_group(&g).expect("add");
            }
            assert_eq!(grouped.rows(), n);
            assert_eq!(grouped.finish(), whole.finish());
        }
        let g = group_sums(&x[..d], &y[..1], &w, false).expect("group");
        let mut with_h = LogisticSums::new(&w, d, true).expect("new");
        assert!(with_h.add_group(&g).is_err());
        assert!(group_sums(&x[..d + 1], &y[..1], &w, false).is_err());
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

    /// The reduction order is the groups': the same rows in blocks of whole groups, or on
    /// another number of threads, give the same bits (a streamed party's model is the
    /// in-memory one's); a block after a partial group is refused, not summed out of order.
    #[test]
    fn sums_do_not_depend_on_blocks_or_threads() {
        let d = 5;
        let n = 5 * GROUP_ROWS + 123;
        let x: Vec<f32> = (0..n * d)
            .map(|i| ((i * 7919 % 1013) as f32 / 1013.0) - 0.5)
            .collect();
        let y: Vec<f32> = (0..n).map(|i| if i % 7 < 3 { 1.0 } else { -1.0 }).collect();
        let w = [0.4, -1.1, 0.25, 2.0, -0.3];
        let whole = CpuLogistic::new(Rows::new(&x, &y, d).expect("shape"))
            .eval(&w, true)
            .expect("eval");
        for block in [GROUP_ROWS, 2 * GROUP_ROWS, 3 * GROUP_ROWS] {
            let mut s = LogisticSums::new(&w, d, true).expect("sums");
            for (xb, yb) in x.chunks(block * d).zip(y.chunks(block)) {
                s.add_block(xb, yb).expect("block");
            }
            assert_eq!(s.rows(), n);
            assert_eq!(s.finish(), whole, "blocks of {block} rows");
        }
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("pool");
            let k = CpuLogistic::new(Rows::new(&x, &y, d).expect("shape"));
            let s = pool.install(|| k.eval(&w, true)).expect("eval");
            assert_eq!(s, whole, "{threads} threads");
        }
        let mut s = LogisticSums::new(&w, d, false).expect("sums");
        s.add_block(&x[..100 * d], &y[..100])
            .expect("partial block");
        let late = s.add_block(&x[100 * d..200 * d], &y[100..200]);
        assert!(
            late.is_err(),
            "a block after a partial group must be refused"
        );
    }
}
