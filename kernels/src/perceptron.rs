//! The SuLQ perceptron step: misclassified rows counted and their `y x` summed (CPU only:
//! one pass of multiply-adds per row).

use crate::error::KernelError;
use crate::rows::BLOCK_ROWS;
use rayon::prelude::*;

/// Perceptron step sums at `w`: the number of rows with `y_i <x_i, w> <= 0` and the sum of
/// `y_i x_i` over them.
pub fn perceptron_sums(
    x: &[f32],
    y: &[f32],
    d: usize,
    w: &[f64],
) -> Result<(f64, Vec<f64>), KernelError> {
    let n = crate::rows::whole_rows(x, d)?;
    if y.len() != n || w.len() != d {
        return Err(KernelError::Input(format!(
            "{n} rows, {} labels and a weight vector of {} for {d} columns",
            y.len(),
            w.len()
        )));
    }
    let mut acc = (0.0, vec![0.0; d]);
    add_partials(&mut acc, x, y, d, w);
    Ok(acc)
}

/// [`perceptron_sums`] of a block of rows added to `acc`: over blocks of whole
/// [`BLOCK_ROWS`]-row groups, in order, the sums are those of the rows at once, bit for bit
/// (the same group partials added in the same order).
pub fn perceptron_sums_into(
    acc: &mut (f64, Vec<f64>),
    x: &[f32],
    y: &[f32],
    d: usize,
    w: &[f64],
) -> Result<(), KernelError> {
    let n = crate::rows::whole_rows(x, d)?;
    if y.len() != n || w.len() != d || acc.1.len() != d {
        return Err(KernelError::Input(format!(
            "{n} rows, {} labels, a weight vector of {} and sums of {} for {d} columns",
            y.len(),
            w.len(),
            acc.1.len()
        )));
    }
    add_partials(acc, x, y, d, w);
    Ok(())
}

/// [`perceptron_sums_into`] of rows of width `d + 1` whose last column is the label (in
/// {-1, +1}): the same sums, bit for bit, without splitting the rows first.
pub fn perceptron_sums_labelled_into(
    acc: &mut (f64, Vec<f64>),
    rows: &[f32],
    d: usize,
    w: &[f64],
) -> Result<(), KernelError> {
    crate::rows::whole_rows(rows, d + 1)?;
    if w.len() != d || acc.1.len() != d {
        return Err(KernelError::Input(format!(
            "a weight vector of {} and sums of {} for {d} columns",
            w.len(),
            acc.1.len()
        )));
    }
    let partials: Vec<(f64, Vec<f64>)> = rows
        .par_chunks(BLOCK_ROWS * (d + 1))
        .map(|group| {
            let rows = group.chunks_exact(d + 1).map(|r| (&r[..d], r[d]));
            group_partial(rows, d, w)
        })
        .collect();
    add_in_order(acc, partials);
    Ok(())
}

/// The group partials of checked rows, added to `acc` in group order.
fn add_partials(acc: &mut (f64, Vec<f64>), x: &[f32], y: &[f32], d: usize, w: &[f64]) {
    let partials: Vec<(f64, Vec<f64>)> = x
        .par_chunks(BLOCK_ROWS * d)
        .zip(y.par_chunks(BLOCK_ROWS))
        .map(|(block, labels)| {
            let rows = block.chunks_exact(d).zip(labels.iter().copied());
            group_partial(rows, d, w)
        })
        .collect();
    add_in_order(acc, partials);
}

/// One group's misclassified count and sum of `y x`.
fn group_partial<'a>(
    rows: impl Iterator<Item = (&'a [f32], f32)>,
    d: usize,
    w: &[f64],
) -> (f64, Vec<f64>) {
    let mut count = 0.0;
    let mut sums = vec![0.0; d];
    for (row, yi) in rows {
        let z: f64 = row.iter().zip(w).map(|(&a, b)| a as f64 * b).sum();
        if yi as f64 * z <= 0.0 {
            count += 1.0;
            sums.iter_mut()
                .zip(row)
                .for_each(|(s, &v)| *s += (yi * v) as f64);
        }
    }
    (count, sums)
}

/// Group partials added to `acc`, in order.
fn add_in_order(acc: &mut (f64, Vec<f64>), partials: Vec<(f64, Vec<f64>)>) {
    for (bc, bs) in partials {
        acc.1.iter_mut().zip(&bs).for_each(|(a, b)| *a += b);
        acc.0 += bc;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rows as data;

    #[test]
    fn perceptron_sums_match_the_definition() {
        let (n, d) = (5_000, 3);
        let x: Vec<f32> = data(n, d, 4).iter().map(|v| 2.0 * v - 1.0).collect();
        let y: Vec<f32> = (0..n)
            .map(|i| if x[i * d] > 0.1 { 1.0 } else { -1.0 })
            .collect();
        let w = [0.2, -0.1, 0.3];
        let (c, s) = perceptron_sums(&x, &y, d, &w).expect("shapes");
        let mut wc = 0.0;
        let mut ws = vec![0.0; d];
        for (row, &yi) in x.chunks(d).zip(&y) {
            let z: f64 = (0..d).map(|t| row[t] as f64 * w[t]).sum();
            if yi as f64 * z <= 0.0 {
                wc += 1.0;
                (0..d).for_each(|t| ws[t] += (yi * row[t]) as f64);
            }
        }
        assert_eq!(c, wc);
        for (a, b) in s.iter().zip(&ws) {
            assert!((a - b).abs() < 1e-9);
        }
        assert!(perceptron_sums(&x, &y[1..], d, &w).is_err());
        // Blocks of whole groups add up to the same bits.
        let mut acc = (0.0, vec![0.0; d]);
        for (xb, yb) in x.chunks(BLOCK_ROWS * d).zip(y.chunks(BLOCK_ROWS)) {
            perceptron_sums_into(&mut acc, xb, yb, d, &w).expect("block");
        }
        assert_eq!(acc, (c, s.clone()));
        // Rows with their label as a last column give the same bits.
        let labelled: Vec<f32> = x
            .chunks(d)
            .zip(&y)
            .flat_map(|(r, &l)| r.iter().copied().chain([l]))
            .collect();
        let mut acc = (0.0, vec![0.0; d]);
        for block in labelled.chunks(BLOCK_ROWS * (d + 1) * 3) {
            perceptron_sums_labelled_into(&mut acc, block, d, &w).expect("labelled");
        }
        assert_eq!(acc, (c, s));
    }
}
