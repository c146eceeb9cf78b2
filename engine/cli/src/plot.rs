//! Line and bar charts for reports, as SVG and PNG. Both backends lay out their labels with a
//! TrueType font found on the system ([`FONT_PATHS`]); commands that plot call
//! [`check_fonts`] before any long computation. Output goes through [`Outputs`], so a
//! failed plot leaves no partial file.

use kinsey_core::{Error, Result};
use kinsey_data::output::Outputs;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
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

/// What the x axis shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) enum XAxis {
    /// Numbers, ticks where plotters puts them.
    #[default]
    Numbers,
    /// Whole numbers (steps, indices): ticks only at integers, written without decimals.
    Integers,
    /// Named categories at 0, 1, 2, ...: each tick carries its name.
    Categories(Vec<String>),
}

/// A chart description.
#[derive(Debug, Clone)]
pub(crate) struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    pub log_x: bool,
    /// The x axis.
    pub x_axis: XAxis,
    /// Draw each series as bars (from 0) rather than lines.
    pub bars: bool,
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
    if chart.bars {
        y0 = y0.min(0.0);
        y1 = y1.max(0.0);
    }
    let categories = match &chart.x_axis {
        XAxis::Categories(c) => Some(c.as_slice()),
        _ => None,
    };
    if let Some(c) = categories {
        (x0, x1) = (-0.5, c.len() as f64 - 0.5);
    } else if chart.bars {
        (x0, x1) = (x0 - 0.5, x1 + 0.5);
    }
    // Long or many category names are written upright, with room below the axis.
    let upright = categories.is_some_and(|c| c.len() > 8 || c.iter().any(|n| n.len() > 10));
    let longest = categories.map_or(0, |c| {
        c.iter().map(|n| n.chars().count()).max().unwrap_or(0)
    });
    let pad = ((y1 - y0) * 0.08).max(1e-3);
    let mut cc = ChartBuilder::on(&root)
        .caption(&chart.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(if upright {
            30 + 7 * longest.min(24) as u32
        } else {
            40
        })
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1.max(x0 + 1e-9), (y0 - pad)..(y1 + pad))
        .map_err(|e| perr(&e))?;
    let log_x = chart.log_x;
    let x_format = |v: &f64| x_tick(&chart.x_axis, log_x, *v);
    let mut mesh = cc.configure_mesh();
    mesh.x_desc(&chart.x_label)
        .y_desc(&chart.y_label)
        .x_label_formatter(&x_format)
        .y_label_formatter(&|v| trim(*v));
    if let Some(c) = categories {
        mesh.x_labels(c.len() + 1);
    }
    if chart.bars {
        mesh.light_line_style(TRANSPARENT);
    }
    if upright {
        // Names are drawn below, turned a quarter clockwise (plotters' own labels would be
        // centred on the axis line).
        mesh.x_labels(0);
    }
    mesh.draw().map_err(|e| perr(&e))?;
    if let (true, Some(names)) = (upright, categories) {
        let at: Vec<(i32, i32)> = (0..names.len())
            .map(|i| cc.backend_coord(&(i as f64, y0 - pad)))
            .collect();
        upright_names(&root, &at, names).map_err(|e| perr(&e))?;
    }
    let m = chart.series.len().max(1) as f64;
    for (i, s) in chart.series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let pts: Vec<(f64, f64)> = s.points.iter().map(|&(x, y)| (tx(x), y)).collect();
        // Wide strokes of plotters join sharp turns with long mitre spikes that cross the
        // axes and the title: dense series get one-pixel lines.
        let style = color.stroke_width(if pts.len() > 200 { 1 } else { 2 });
        if chart.bars {
            // Series side by side within 0.8 of a unit around each x.
            let (w, left) = (0.8 / m, -0.4 + 0.8 * i as f64 / m);
            cc.draw_series(pts.iter().map(|&(x, y)| {
                Rectangle::new(
                    [(x + left, 0.0), (x + left + w, y)],
                    color.mix(0.75).filled(),
                )
            }))
            .map_err(|e| perr(&e))?
            .label(&s.name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.filled()));
            if let Some(err) = &s.err {
                let mid = left + w / 2.0;
                cc.draw_series(pts.iter().zip(err).map(|(&(x, y), &e)| {
                    PathElement::new(
                        vec![(x + mid, y - e), (x + mid, y + e)],
                        BLACK.stroke_width(1),
                    )
                }))
                .map_err(|e| perr(&e))?;
            }
            continue;
        }
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

/// Category names below the axis at the pixel positions `at`, turned a quarter clockwise,
/// each centred on its tick and running downwards.
fn upright_names<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    at: &[(i32, i32)],
    names: &[String],
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let style = TextStyle::from(("sans-serif", 12).into_font())
        .transform(FontTransform::Rotate90)
        .pos(Pos::new(HPos::Left, VPos::Top));
    for (&(px, py), name) in at.iter().zip(names) {
        root.draw(&Text::new(name.clone(), (px + 6, py + 6), style.clone()))?;
    }
    Ok(())
}

/// The text of an x tick at `v`.
fn x_tick(axis: &XAxis, log_x: bool, v: f64) -> String {
    let whole = (v - v.round()).abs() < 1e-6;
    match axis {
        XAxis::Categories(c) if whole && v.round() >= 0.0 => {
            c.get(v.round() as usize).cloned().unwrap_or_default()
        }
        XAxis::Categories(_) => String::new(),
        XAxis::Integers if whole => format!("{}", v.round() as i64),
        XAxis::Integers => String::new(),
        XAxis::Numbers if log_x => log_tick(v),
        XAxis::Numbers => trim(v),
    }
}

/// The text of a log-axis tick at `10^e`: whole decades as plain numbers (`1000`,
/// `0.001`), other ticks to three significant digits (`31.6`, `3160`).
fn log_tick(e: f64) -> String {
    let v = 10f64.powf(e);
    if (e - e.round()).abs() < 1e-6 {
        return trim(10f64.powi(e.round() as i32));
    }
    let decimals = (2 - v.log10().floor() as i32).max(0) as usize;
    let rounded: f64 = format!("{v:.decimals$}").parse().unwrap_or(v);
    let digits = v.log10().floor() as i32 - 2;
    if digits > 0 {
        let p = 10f64.powi(digits);
        return trim((v / p).round() * p);
    }
    trim(rounded)
}

/// A tick value without trailing zeros: `2`, `0.5`, `1.25e6` (at most 4 significant digits
/// after the point).
fn trim(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e12 {
        return format!("{}", v as i64);
    }
    if v != 0.0 && (v.abs() >= 1e6 || v.abs() < 1e-3) {
        return format!("{v:.2e}");
    }
    let s = format!("{v:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.into() }
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

/// Write `<stem>.svg` and `<stem>.png` (the extensions appended to the stem). Returns the
/// paths written.
pub(crate) fn write_chart(
    outputs: &mut Outputs,
    stem: &Path,
    chart: &Chart,
) -> Result<Vec<std::path::PathBuf>> {
    check_fonts()?;
    let mut written = Vec::new();
    // Appended, not replaced: a stem may hold dots (`explained_variance.NOT-PRIVATE`).
    let with = |ext: &str| std::path::PathBuf::from(format!("{}.{ext}", stem.display()));
    let svg_target = with("svg");
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 560)).into_drawing_area();
        draw(root, chart)?;
    }
    outputs.write(&svg_target, svg.as_bytes())?;
    written.push(svg_target);
    let png_target = with("png");
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
        x_axis: XAxis::Integers,
        bars: false,
    }
}

/// A decayed sum's release over its range, between two dashed lines two stated noise stds
/// either side (publishable: no exact data).
pub(crate) fn release_band(c: &kinsey::decay::ReleaseChart<'_>) -> Chart {
    let (from, _) = c.range;
    let line = |name: &str, sign: f64, dashed: bool| Series {
        name: name.into(),
        points: c
            .estimates
            .iter()
            .zip(c.stds)
            .enumerate()
            .map(|(i, (e, s))| ((from + i) as f64, e + sign * 2.0 * s))
            .collect(),
        err: None,
        dashed,
    };
    Chart {
        title: {
            // The model's name and parameters, without the mechanism's details.
            let name = c.model.split(':').next().unwrap_or("");
            let short = name.split(", level").next().unwrap_or(name);
            format!("{short} ({}): release +/- 2 stated std", c.guarantee)
        },
        x_label: "step".into(),
        y_label: c.column.into(),
        series: vec![
            line("released estimate", 0.0, false),
            line("+ 2 stated std (public)", 1.0, true),
            line("- 2 stated std (public)", -1.0, true),
        ],
        log_x: false,
        x_axis: XAxis::Integers,
        bars: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_carry_no_useless_decimals() {
        assert_eq!(trim(2.0), "2");
        assert_eq!(trim(0.5), "0.5");
        assert_eq!(trim(-0.0), "0");
        assert_eq!(trim(1_000_000.0), "1000000");
        assert_eq!(trim(0.123456), "0.1235");
        assert_eq!(trim(2.5e-5), "2.50e-5");
    }

    /// A bar chart with named categories writes every name (upright when there are many)
    /// and no half-step tick.
    #[test]
    fn bar_charts_name_their_categories() {
        check_fonts().expect("a TrueType font (scripts/test.sh installs fonts-dejavu-core)");
        for n in [4usize, 20] {
            let names: Vec<String> = (0..n).map(|i| format!("[{i}0, {}0)", i + 1)).collect();
            let chart = Chart {
                title: "t".into(),
                x_label: "x".into(),
                y_label: "y".into(),
                series: vec![Series {
                    name: "s".into(),
                    points: (0..n).map(|i| (i as f64, i as f64 * 3.0)).collect(),
                    err: Some(vec![1.0; n]),
                    dashed: false,
                }],
                log_x: false,
                x_axis: XAxis::Categories(names.clone()),
                bars: true,
            };
            let mut svg = String::new();
            {
                let root = SVGBackend::with_string(&mut svg, (900, 560)).into_drawing_area();
                draw(root, &chart).expect("draw");
            }
            for name in &names {
                assert!(svg.contains(name.as_str()), "{n} bars: '{name}' missing");
            }
            assert!(
                !svg.contains(">0.50<") && !svg.contains(">1.50<"),
                "half-step ticks"
            );
            assert!(svg.matches("<rect").count() >= n, "one bar per category");
        }
    }
}
