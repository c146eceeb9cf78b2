//! Line charts for reports, as SVG and PNG. Both backends lay out their labels with a
//! TrueType font found on the system ([`FONT_PATHS`]); commands that plot call
//! [`check_fonts`] before any long computation. Output goes through [`Outputs`], so a
//! failed plot leaves no partial file.

use kinsey_core::{Error, Result};
use kinsey_data::output::Outputs;
use plotters::prelude::*;
use std::path::Path;
use std::sync::OnceLock;

/// One line: name, points (x, y), and optional +/- error per point.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub err: Option<Vec<f64>>,
    pub dashed: bool,
}

/// A chart description.
#[derive(Debug, Clone)]
pub(crate) struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    pub log_x: bool,
}

/// Where a sans-serif TrueType font is looked for (Debian: fonts-dejavu-core).
pub(crate) const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/Library/Fonts/Arial.ttf",
];

/// Register a system sans-serif font once; false if none was found.
fn font_ready() -> bool {
    static READY: OnceLock<bool> = OnceLock::new();
    *READY.get_or_init(|| {
        for p in FONT_PATHS {
            if let Ok(bytes) = std::fs::read(p) {
                let leaked: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if plotters::style::register_font("sans-serif", FontStyle::Normal, leaked).is_ok() {
                    return true;
                }
            }
        }
        false
    })
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    chart: &Chart,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let perr = |e: &dyn std::fmt::Display| Error::Numerical(format!("plotting failed: {e}"));
    root.fill(&WHITE).map_err(|e| perr(&e))?;
    let tx = |x: f64| if chart.log_x { x.log10() } else { x };
    let all: Vec<(f64, f64)> = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .collect();
    if all.is_empty() {
        return Err(Error::Numerical("nothing to plot".into()));
    }
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for s in &chart.series {
        for (i, &(x, y)) in s.points.iter().enumerate() {
            let e = s.err.as_ref().map_or(0.0, |e| e[i]);
            x0 = x0.min(tx(x));
            x1 = x1.max(tx(x));
            y0 = y0.min(y - e);
            y1 = y1.max(y + e);
        }
    }
    let pad = ((y1 - y0) * 0.08).max(1e-3);
    let mut cc = ChartBuilder::on(&root)
        .caption(&chart.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1.max(x0 + 1e-9), (y0 - pad)..(y1 + pad))
        .map_err(|e| perr(&e))?;
    let log_x = chart.log_x;
    cc.configure_mesh()
        .x_desc(&chart.x_label)
        .y_desc(&chart.y_label)
        .x_label_formatter(&|v| {
            if log_x {
                format!("{:.3}", 10f64.powf(*v))
            } else {
                format!("{v:.2}")
            }
        })
        .draw()
        .map_err(|e| perr(&e))?;
    for (i, s) in chart.series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let pts: Vec<(f64, f64)> = s.points.iter().map(|&(x, y)| (tx(x), y)).collect();
        let style = color.stroke_width(2);
        if s.dashed {
            cc.draw_series(DashedLineSeries::new(pts.clone(), 6, 4, style))
                .map_err(|e| perr(&e))?
                .label(&s.name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        } else {
            cc.draw_series(LineSeries::new(pts.clone(), style))
                .map_err(|e| perr(&e))?
                .label(&s.name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        }
        if pts.len() <= 200 {
            // Markers only where they can be told apart.
            cc.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
                .map_err(|e| perr(&e))?;
        }
        if let Some(err) = &s.err {
            cc.draw_series(
                pts.iter()
                    .zip(err)
                    .map(|(&(x, y), &e)| PathElement::new(vec![(x, y - e), (x, y + e)], color)),
            )
            .map_err(|e| perr(&e))?;
        }
    }
    cc.configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(|e| perr(&e))?;
    root.present().map_err(|e| perr(&e))?;
    Ok(())
}

/// Error unless a font for chart labels is available.
pub(crate) fn check_fonts() -> Result<()> {
    if font_ready() {
        Ok(())
    } else {
        Err(Error::param(
            "plot",
            format!(
                "no TrueType font for chart labels; install one (Debian: apt-get install \
                 fonts-dejavu-core), looked in {}",
                FONT_PATHS.join(", ")
            ),
        ))
    }
}

/// Write `<stem>.svg` and `<stem>.png`. Returns the paths written.
pub(crate) fn write_chart(
    outputs: &mut Outputs,
    stem: &Path,
    chart: &Chart,
) -> Result<Vec<std::path::PathBuf>> {
    check_fonts()?;
    let mut written = Vec::new();
    let svg_target = stem.with_extension("svg");
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 560)).into_drawing_area();
        draw(root, chart)?;
    }
    outputs.write(&svg_target, svg.as_bytes())?;
    written.push(svg_target);
    let png_target = stem.with_extension("png");
    let tmp = outputs.stage(&png_target)?;
    {
        let root = BitMapBackend::new(&tmp, (900, 560)).into_drawing_area();
        draw(root, chart)?;
    }
    written.push(png_target);
    Ok(written)
}
/// True vs private over `range` for the first output column.
pub(crate) fn truth_vs_private(
    title: String,
    column: &str,
    est: &[f64],
    truth: &[f64],
    range: (usize, usize),
) -> Chart {
    let pts =
        |v: &[f64]| -> Vec<(f64, f64)> { (range.0..range.1).map(|i| (i as f64, v[i])).collect() };
    let line = |name: &str, v: &[f64]| Series {
        name: name.into(),
        points: pts(v),
        err: None,
        dashed: false,
    };
    Chart {
        title,
        x_label: "step".into(),
        y_label: column.into(),
        series: vec![
            line("private estimate", est),
            line("true (not released)", truth),
        ],
        log_x: false,
    }
}
