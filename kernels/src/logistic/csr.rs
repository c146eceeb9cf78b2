//! The logistic sums over sparse rows (CSR): a pass costs O(non-zeros), not O(rows x d).
//!
//! The same per-row terms as the dense kernel (`row_terms`, with the loss's logarithm
//! taken once per `LOG_BLOCK` rows as in `cpu.rs`), in f64, over groups of `GROUP_ROWS`
//! rows added in a fixed order, so a sum does not depend on the thread count. The dense
//! kernel's products run through faer's blocked SIMD kernels, so the two layouts agree to
//! rounding, not bit for bit: their minimisers differ by at most the solver's tolerance
//! over the strong convexity (both reach `||grad J|| <= g`). The Hessian, when asked, is
//! summed over each row's pairs of non-zeros. There is no GPU twin: the device kernel runs
//! on the Hessian subsample, which the solver gathers dense.

use super::cpu::GROUP_ROWS;
use super::kernel::LossSums;
use crate::error::KernelError;
use rayon::prelude::*;

/// Rows per logarithm of the loss sum (as the dense kernel's).
const LOG_BLOCK: usize = 512;

/// Borrowed CSR rows: row `i`'s non-zeros are `indices[indptr[i]..indptr[i + 1]]`
/// (0-based, ascending) with the same range of `values`; labels in {-1, +1}.
#[derive(Clone, Copy, Debug)]
pub struct CsrRows<'a> {
    /// Row starts, `n + 1` entries from 0.
    pub indptr: &'a [usize],
    /// Columns of the non-zeros.
    pub indices: &'a [u32],
    /// Values of the non-zeros.
    pub values: &'a [f32],
    /// Labels.
    pub y: &'a [f32],
    /// Columns.
    pub d: usize,
}

impl<'a> CsrRows<'a> {
    /// Check the structure: `n + 1` row starts from 0, increasing, ending at the number of
    /// non-zeros; every column below `d` and ascending within its row.
    pub fn new(
        indptr: &'a [usize],
        indices: &'a [u32],
        values: &'a [f32],
        y: &'a [f32],
        d: usize,
    ) -> Result<Self, KernelError> {
        let bad = |m: String| Err(KernelError::Input(format!("CSR rows: {m}")));
        if d == 0 || indptr.len() != y.len() + 1 || indptr.first() != Some(&0) {
            return bad(format!(
                "{} row starts for {} labels (d = {d})",
                indptr.len(),
                y.len()
            ));
        }
        if indices.len() != values.len() || indptr.last() != Some(&values.len()) {
            return bad(format!(
                "{} columns, {} values, rows end at {:?}",
                indices.len(),
                values.len(),
                indptr.last()
            ));
        }
        for (i, w) in indptr.windows(2).enumerate() {
            if w[1] < w[0] {
                return bad(format!("row {i} ends before it starts"));
            }
            let cols = &indices[w[0]..w[1]];
            if cols.iter().any(|&c| c as usize >= d) || cols.windows(2).any(|p| p[1] <= p[0]) {
                return bad(format!("row {i}: columns must ascend and lie below {d}"));
            }
        }
        Ok(Self {
            indptr,
            indices,
            values,
            y,
            d,
        })
    }

    /// Rows.
    pub fn n(&self) -> usize {
        self.y.len()
    }
}

/// One group's partial sums.
struct Part {
    loss: f64,
    grad: Vec<f64>,
    /// Lower triangle, row-major `d x d`.
    hess: Option<Vec<f64>>,
}

/// Rows per batch of a group: each step (margins, terms, scatter) runs over the batch, so
/// the rows' independent loads and exponentials overlap instead of waiting on one row's
/// chain. The products are fused multiply-adds (one instruction each with FMA).
const BATCH: usize = 256;

fn group(rows: &CsrRows<'_>, first: usize, last: usize, w: &[f64], hessian: bool) -> Part {
    let d = rows.d;
    let mut p = Part {
        loss: 0.0,
        grad: vec![0.0; d],
        hess: hessian.then(|| vec![0.0; d * d]),
    };
    let mut prod = 1.0f64;
    let mut in_block = 0usize;
    let mut coef = [0.0f64; BATCH];
    let mut dws = [0.0f64; BATCH];
    for b0 in (first..last).step_by(BATCH) {
        let b1 = (b0 + BATCH).min(last);
        // Margins z = x.w (two running sums a row, so its additions do not wait on each
        // other).
        for (k, i) in (b0..b1).enumerate() {
            let (s, e) = (rows.indptr[i], rows.indptr[i + 1]);
            let (cols, vals) = (&rows.indices[s..e], &rows.values[s..e]);
            let (mut z0, mut z1) = (0.0f64, 0.0f64);
            for (c, v) in cols.chunks_exact(2).zip(vals.chunks_exact(2)) {
                z0 = f64::from(v[0]).mul_add(w[c[0] as usize], z0);
                z1 = f64::from(v[1]).mul_add(w[c[1] as usize], z1);
            }
            if cols.len() % 2 == 1 {
                z0 = f64::from(vals[vals.len() - 1]).mul_add(w[cols[cols.len() - 1] as usize], z0);
            }
            coef[k] = z0 + z1;
        }
        // The per-row terms (the loss's logarithm once per LOG_BLOCK rows).
        for (k, i) in (b0..b1).enumerate() {
            let y = f64::from(rows.y[i]);
            let t = -y * coef[k];
            let ex = (-t.abs()).exp();
            p.loss += t.max(0.0);
            prod *= 1.0 + ex;
            in_block += 1;
            if in_block == LOG_BLOCK {
                p.loss += prod.ln();
                prod = 1.0;
                in_block = 0;
            }
            let sg = if t >= 0.0 {
                1.0 / (1.0 + ex)
            } else {
                ex / (1.0 + ex)
            };
            coef[k] = -y * sg;
            dws[k] = sg * (1.0 - sg);
        }
        // The gradient (and Hessian) scattered from the batch.
        for (k, i) in (b0..b1).enumerate() {
            let (s, e) = (rows.indptr[i], rows.indptr[i + 1]);
            let (cols, vals) = (&rows.indices[s..e], &rows.values[s..e]);
            for (&c, &v) in cols.iter().zip(vals) {
                let g = &mut p.grad[c as usize];
                *g = coef[k].mul_add(f64::from(v), *g);
            }
            if let Some(h) = p.hess.as_mut() {
                for (a, (&ca, &va)) in cols.iter().zip(vals).enumerate() {
                    let wa = dws[k] * f64::from(va);
                    let row = &mut h[ca as usize * d..];
                    for (&cb, &vb) in cols[..=a].iter().zip(&vals[..=a]) {
                        row[cb as usize] += wa * f64::from(vb);
                    }
                }
            }
        }
    }
    p.loss += prod.ln();
    p
}

/// The logistic sums over every row at `w`: loss, gradient and (when asked) the Hessian,
/// row-major `d x d`.
pub fn csr_sums(rows: &CsrRows<'_>, w: &[f64], hessian: bool) -> Result<LossSums, KernelError> {
    let d = rows.d;
    if w.len() != d {
        return Err(KernelError::Input(format!(
            "w has {} entries, data has {d} columns",
            w.len()
        )));
    }
    let n = rows.n();
    let groups = n.div_ceil(GROUP_ROWS);
    // A round of groups side by side, then added in order (as the dense kernel's rounds).
    let per_round = if hessian {
        2 * rayon::current_num_threads()
    } else {
        64
    };
    let mut total = Part {
        loss: 0.0,
        grad: vec![0.0; d],
        hess: hessian.then(|| vec![0.0; d * d]),
    };
    for r0 in (0..groups).step_by(per_round.max(1)) {
        let parts: Vec<Part> = (r0..(r0 + per_round).min(groups))
            .into_par_iter()
            .map(|g| {
                let first = g * GROUP_ROWS;
                group(rows, first, (first + GROUP_ROWS).min(n), w, hessian)
            })
            .collect();
        for p in &parts {
            total.loss += p.loss;
            for (a, b) in total.grad.iter_mut().zip(&p.grad) {
                *a += b;
            }
            if let (Some(h), Some(o)) = (total.hess.as_mut(), p.hess.as_ref()) {
                for (a, b) in h.iter_mut().zip(o) {
                    *a += b;
                }
            }
        }
    }
    let hess = total.hess.map(|mut h| {
        for j in 0..d {
            for k in 0..j {
                h[k * d + j] = h[j * d + k];
            }
        }
        h
    });
    Ok(LossSums {
        loss: total.loss,
        grad: total.grad,
        hess,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logistic::LogisticKernel;
    use crate::logistic::cpu::CpuLogistic;
    use crate::rows::Rows;

    /// The CSR sums equal the dense kernel's on the same rows (to rounding), on rows
    /// with empty rows and several groups; malformed structures are refused.
    #[test]
    fn csr_sums_match_the_dense_kernel() {
        let (n, d) = (2 * GROUP_ROWS + 77, 9);
        let mut x = vec![0f32; n * d];
        let (mut indptr, mut indices, mut values) = (vec![0], Vec::new(), Vec::new());
        for i in 0..n {
            for j in 0..d {
                if (i * 31 + j * 7) % 5 == 0 && i % 13 != 0 {
                    let v = ((i * 17 + j * 3) % 23) as f32 / 40.0 - 0.25;
                    x[i * d + j] = v;
                    indices.push(j as u32);
                    values.push(v);
                }
            }
            indptr.push(values.len());
        }
        let y: Vec<f32> = (0..n)
            .map(|i| if i % 3 == 0 { 1.0 } else { -1.0 })
            .collect();
        let w: Vec<f64> = (0..d).map(|j| 0.4 * j as f64 - 1.5).collect();
        let csr = CsrRows::new(&indptr, &indices, &values, &y, d).expect("csr");
        let dense = CpuLogistic::new(Rows::new(&x, &y, d).expect("rows"))
            .eval(&w, true)
            .expect("dense");
        let sparse = csr_sums(&csr, &w, true).expect("sparse");
        assert!((sparse.loss - dense.loss).abs() <= 1e-12 * dense.loss);
        for (a, b) in sparse.grad.iter().zip(&dense.grad) {
            assert!((a - b).abs() <= 1e-10, "{a} {b}");
        }
        let (hs, hd) = (sparse.hess.expect("h"), dense.hess.expect("h"));
        for (a, b) in hs.iter().zip(&hd) {
            assert!((a - b).abs() <= 1e-10, "{a} {b}");
        }
        assert!(csr_sums(&csr, &w[..3], false).is_err());
        let mut swapped = indices.clone();
        swapped.swap(0, 1);
        assert!(CsrRows::new(&indptr, &swapped, &values, &y, d).is_err());
        assert!(CsrRows::new(&indptr, &indices, &values, &y, 3).is_err());
        let short = &indptr[..indptr.len() - 1];
        assert!(CsrRows::new(short, &indices, &values, &y, d).is_err());
    }
}
