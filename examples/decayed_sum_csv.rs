//! A private sliding-window sum over one column of a CSV file: after every step, the sum of
//! the last 30 days' (720 hourly) values, epsilon-DP for the whole output sequence (seed 004).
//!
//!     cargo run --release --example decayed_sum_csv -- hour.csv cnt
//!
//! Without arguments it writes a small CSV of hourly counts to a temporary folder.
use kinsey::prelude::*;
use std::path::PathBuf;

fn main() -> kinsey::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = std::env::temp_dir().join(format!("kinsey-example-{}", std::process::id()));
    let (csv, column) = match (args.next(), args.next()) {
        (Some(path), Some(column)) => (PathBuf::from(path), column),
        _ => {
            std::fs::create_dir_all(&dir).map_err(|e| kinsey::Error::io(&dir, e))?;
            let csv = dir.join("hourly.csv");
            let rows: String = (0..2_000)
                .map(|h| format!("{}\n", (h * 37) % 400))
                .collect();
            std::fs::write(&csv, format!("cnt\n{rows}")).map_err(|e| kinsey::Error::io(&csv, e))?;
            (csv, "cnt".to_string())
        }
    };
    // Each hour counts at most 500 rentals: larger values are clamped (a diagnostic).
    let out = DecayedSum::window(720)
        .epsilon(1.0)
        .bound(Bound::clamp(500.0)?)
        .over_file(&csv, &column)?;
    let last = out.estimates().last().copied().unwrap_or_default();
    println!(
        "{} steps; last 30 days' sum ~ {last:.0} (noise std {:.1}); {}",
        out.release.steps,
        out.release.std_at_last_step,
        out.release.guarantee.short()
    );
    out.write(dir.join("window.csv"))
}
