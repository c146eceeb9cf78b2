//! A DP histogram of one numeric column, with public bins, under bounded neighbours
//! (replace one row: sensitivity 2).
//!
//!     cargo run --release --example dp_histogram -- table.parquet age
//!
//! Without arguments it writes a small CSV to a temporary folder.
use kinsey::prelude::*;
use std::path::PathBuf;

fn main() -> kinsey::Result<()> {
    let mut args = std::env::args().skip(1);
    let (table, column) = match (args.next(), args.next()) {
        (Some(path), Some(column)) => (PathBuf::from(path), column),
        _ => {
            let dir = std::env::temp_dir().join(format!("kinsey-example-{}", std::process::id()));
            std::fs::create_dir_all(&dir).map_err(|e| kinsey::Error::io(&dir, e))?;
            let csv = dir.join("ages.csv");
            let rows: String = (0..5_000)
                .map(|i| format!("{}\n", 18 + (i * 7919) % 70))
                .collect();
            std::fs::write(&csv, format!("age\n{rows}")).map_err(|e| kinsey::Error::io(&csv, e))?;
            (csv, "age".to_string())
        }
    };
    let report = Histogram::numeric(0.0, 100.0, 10)?
        .epsilon(0.5)
        .neighbours(Neighbours::Bounded)
        .of_column(&table, &column)?;
    let rel = &report.release;
    for (label, count) in rel.labels.iter().zip(&rel.counts) {
        println!("{label:>12}  {count}");
    }
    println!(
        "noise std {:.2} per bin, {} neighbours",
        rel.noise_std,
        rel.neighbours.as_str()
    );
    Ok(())
}
