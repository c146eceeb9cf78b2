//! Synthetic parties for trials and kinsey's way of writing a JSON file.

use kinsey_core::Result;
use kinsey_data::output::Outputs;
use std::path::{Path, PathBuf};

/// `k` synthetic parties of `rows` rows each in dimension `d` (rows in the unit ball, labels
/// from a planted logistic model, column `label`), written as `party-1.parquet`, ... in
/// `dir`; their paths. The data is public and fixed (seeded), for trials and examples only.
pub fn synthetic_parties(dir: &Path, k: usize, rows: usize, d: usize) -> Result<Vec<PathBuf>> {
    kinsey_core::limits::check_dim("d", d)?;
    kinsey_core::limits::check_dense("rows", rows.saturating_mul(k), d)?;
    let mut o = Outputs::new();
    o.ensure_dir(dir)?;
    let paths: Vec<PathBuf> = (1..=k)
        .map(|j| dir.join(format!("party-{j}.parquet")))
        .collect();
    for (j, p) in paths.iter().enumerate() {
        let ds = kinsey_data::synth::generate(rows, d, 4.0, 0, j as u64 + 1, p.clone());
        kinsey_data::parquet_io::write_parquet(&mut o, p, &ds, "label")?;
    }
    o.commit()?;
    Ok(paths)
}

/// Write `value` as JSON to `path` the way kinsey writes every report and model file
/// (pretty-printed, staged and renamed into place: all or nothing; an existing file is
/// replaced only when overwriting was allowed, as `kinsey --overwrite` allows it).
pub fn write_json_file<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    write_json_to(path, value, false)
}

/// [`write_json_file`], replacing an existing `path` when `overwrite` (for this file only,
/// whatever the process-wide `--overwrite` says); refused as there otherwise.
pub fn write_json_to<T: serde::Serialize>(path: &Path, value: &T, overwrite: bool) -> Result<()> {
    let mut o = if overwrite {
        Outputs::new().overwriting()
    } else {
        Outputs::new()
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        o.ensure_dir(dir)?;
    }
    kinsey_data::output::write_json(&mut o, path, value)?;
    o.commit()?;
    Ok(())
}
