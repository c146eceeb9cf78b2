//! Figure 2 of seed 001 on disk: the figures `kinsey::bench::figure2` computes as CSV,
//! JSON, a markdown summary and one chart per (lambda, calibration).

use crate::plot::{Chart, Series, write_chart};
use kinsey::bench::figure2::{Figure2Result, Point};
use kinsey_core::{Error, Result};
use kinsey_data::output::Outputs;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Write CSV, JSON, a markdown summary and one chart per (lambda, calibration) into `dir`.
pub(crate) fn write(r: &Figure2Result, dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Outputs::new();
    out.ensure_dir(dir)?;
    out.write(&dir.join("figure2.csv"), r.to_csv().as_bytes())?;
    let json = serde_json::to_vec_pretty(r).map_err(|e| Error::Numerical(e.to_string()))?;
    out.write(&dir.join("figure2.json"), &json)?;
    let mut md = String::from("# Figure 2 (seed 001) on a9a: mean test error over noise draws\n\n");
    for &lambda in &r.config.lambdas {
        for cal in ["paper", "tight"] {
            let _ = writeln!(md, "## lambda = {lambda}, calibration = {cal}\n");
            md.push_str(&r.markdown(lambda, cal, f64::INFINITY));
            md.push('\n');
            let narrow = chart(r, lambda, cal, 0.4, false);
            let stem = dir.join(format!("figure2_lambda{lambda:e}_{cal}"));
            write_chart(&mut out, &stem, &narrow)?;
            let wide = chart(r, lambda, cal, f64::INFINITY, true);
            let stem = dir.join(format!("figure2_wide_lambda{lambda:e}_{cal}"));
            write_chart(&mut out, &stem, &wide)?;
        }
    }
    md.push_str("## Theorem 4.2: ||w_hat - w*|| <= (K-1)/(n(1) lambda)\n\n| lambda | split | distance | bound | ratio | test error of the unperturbed average |\n|---|---|---|---|---|---|\n");
    for c in &r.theorem_4_2 {
        let _ = writeln!(
            md,
            "| {} | {} | {:.3e} | {:.3e} | {:.4} | {:.4} |",
            c.lambda, c.split, c.distance, c.bound, c.ratio, c.average_test_error
        );
    }
    out.write(&dir.join("figure2.md"), md.as_bytes())?;
    out.commit()
}

fn chart(r: &Figure2Result, lambda: f64, calibration: &str, eps_max: f64, log_x: bool) -> Chart {
    let mut series: Vec<Series> = Vec::new();
    let eps_max = eps_max + 1e-12;
    if let Some(np) = r
        .points
        .iter()
        .find(|p| p.lambda == lambda && p.epsilon.is_none())
    {
        let xs: Vec<f64> = r
            .config
            .epsilons
            .iter()
            .copied()
            .filter(|&e| e <= eps_max)
            .collect();
        series.push(Series {
            name: np.series.clone(),
            points: xs.iter().map(|&e| (e, np.mean_test_error)).collect(),
            err: None,
            dashed: true,
        });
    }
    let names = r.series_names(lambda, calibration);
    for name in names {
        let pts: Vec<&Point> = r
            .points
            .iter()
            .filter(|p| p.lambda == lambda && p.calibration == calibration && p.series == name)
            .filter(|p| p.epsilon.is_some_and(|e| e <= eps_max))
            .collect();
        series.push(Series {
            name,
            points: pts
                .iter()
                .map(|p| (p.epsilon.unwrap_or(0.0), p.mean_test_error))
                .collect(),
            err: Some(pts.iter().map(|p| p.std_test_error).collect()),
            dashed: false,
        });
    }
    Chart {
        title: format!("a9a, K = 5, lambda = {lambda}, {calibration} calibration"),
        x_label: "epsilon".into(),
        y_label: "test error".into(),
        series,
        log_x,
        x_axis: crate::plot::XAxis::Numbers,
        bars: false,
    }
}
