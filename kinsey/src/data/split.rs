//! A data set shuffled and split into one Parquet file per party (trials).

use kinsey_core::Result;
use kinsey_data::Dataset;
use kinsey_data::output::{Outputs, write_json};
use kinsey_data::parquet_io::write_parquet;
use kinsey_data::split::{SplitSpec, split};
use kinsey_dp::NoiseRng;
use std::path::{Path, PathBuf};

/// What a split wrote.
#[derive(Debug, Clone)]
pub struct SplitDone {
    /// The parties' files, `party-1.parquet`, ...
    pub files: Vec<PathBuf>,
    /// The shuffle's seed (recorded in `split.json`; drawn from the OS when not given).
    pub seed: u64,
}

/// Shuffle `ds` with `seed` (from the OS when `None`; it is recorded either way) and split
/// it by `spec` into `out/party-1.parquet`, ... with the label column `label`, and
/// `out/split.json` (the input, the seed and each party's rows): all or nothing.
pub fn split_into_parties(
    ds: &Dataset,
    input: &Path,
    spec: SplitSpec,
    seed: Option<u64>,
    out: &Path,
    label: &str,
) -> Result<SplitDone> {
    let seed = seed.unwrap_or_else(|| NoiseRng::from_os().next_u64());
    let parts = split(ds, &spec, &mut NoiseRng::from_seed_quiet(seed))?;
    let mut o = Outputs::new();
    o.ensure_dir(out)?;
    let mut files = Vec::new();
    let mut listed = Vec::new();
    for (j, p) in parts.iter().enumerate() {
        let f = out.join(format!("party-{}.parquet", j + 1));
        write_parquet(&mut o, &f, p, label)?;
        listed.push(serde_json::json!({"file": f, "rows": p.n()}));
        files.push(f);
    }
    write_json(
        &mut o,
        &out.join("split.json"),
        &serde_json::json!({"input": input, "seed": seed, "rows_in": ds.n(), "parties": listed}),
    )?;
    o.commit()?;
    Ok(SplitDone { files, seed })
}
