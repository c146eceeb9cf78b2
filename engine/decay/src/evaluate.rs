//! `kinsey decay --evaluate`: the error of the private estimates against the true sums
//! (computed here, never written); the CLI draws the true-vs-private chart.

use super::model::DecayedSum;
use kinsey_core::{Error, Result};
use serde::Serialize;

/// Error statistics of one output column.
#[derive(Debug, Clone, Serialize)]
pub struct ColumnError {
    /// The output column.
    pub column: String,
    /// Root mean squared error.
    pub rmse: f64,
    /// Mean absolute error.
    pub mean_abs_error: f64,
    /// Largest absolute error.
    pub max_abs_error: f64,
    /// The stated standard deviation at the last step.
    pub theoretical_std_last_step: f64,
    /// Mean of the true sums.
    pub mean_true_value: f64,
}

/// Per-column errors, and the true values (for the chart).
pub fn errors(
    m: &dyn DecayedSum,
    xs: &[f64],
    est: &[Vec<f64>],
) -> (Vec<ColumnError>, Vec<Vec<f64>>) {
    let truths = m.truth(xs);
    let last = (xs.len() as u64).saturating_sub(1);
    let stats = m
        .columns()
        .into_iter()
        .zip(est.iter().zip(&truths))
        .enumerate()
        .map(|(c, (column, (e, t)))| {
            let n = e.len().max(1) as f64;
            let errs = e.iter().zip(t).map(|(a, b)| a - b);
            ColumnError {
                column,
                rmse: (errs.clone().map(|d| d * d).sum::<f64>() / n).sqrt(),
                mean_abs_error: errs.clone().map(f64::abs).sum::<f64>() / n,
                max_abs_error: errs.fold(0.0, |a, d| a.max(d.abs())),
                theoretical_std_last_step: m.noise_std(c, last),
                mean_true_value: t.iter().sum::<f64>() / n,
            }
        })
        .collect();
    (stats, truths)
}

/// `FROM:TO` within `0..=len`, FROM < TO; by default the last 1,440 steps.
pub fn plot_range(r: Option<&str>, len: usize) -> Result<(usize, usize)> {
    let Some(r) = r else {
        return Ok((len.saturating_sub(1440), len));
    };
    let bad = || Error::param("plot-range", format!("'{r}' is not FROM:TO"));
    let (a, b) = r.split_once(':').ok_or_else(bad)?;
    let (a, b): (usize, usize) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
    if a >= b || b > len {
        return Err(Error::param(
            "plot-range",
            format!("{a}:{b} is not a range within 0:{len}"),
        ));
    }
    Ok((a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_and_ranges() {
        let m = super::super::window::WindowSum::new(2, 1.0, 1.0, [0; 32]).expect("ok");
        let xs = [1.0, 0.0, 1.0];
        let est = vec![vec![2.0, 1.0, 0.0]]; // truth 1, 1, 1
        let (e, t) = errors(&m, &xs, &est);
        assert_eq!(t, vec![vec![1.0, 1.0, 1.0]]);
        assert!((e[0].rmse - (2.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!((e[0].max_abs_error, e[0].mean_true_value), (1.0, 1.0));
        assert_eq!(plot_range(None, 100).expect("ok"), (0, 100));
        assert_eq!(plot_range(Some("5:9"), 100).expect("ok"), (5, 9));
        for bad in ["9:5", "5", "a:b", "0:101"] {
            assert!(plot_range(Some(bad), 100).is_err(), "{bad}");
        }
    }
}
