//! `kinsey generate`: synthetic parties from a planted logistic model.

use kinsey_core::{Error, Result};
use kinsey_data::output::{Outputs, write_json};
use kinsey_data::parquet_blocks::PartyBlocks;
use kinsey_data::parquet_io::ParquetRows;
use kinsey_data::synth::{self, SynthParty};
use std::path::{Path, PathBuf};

/// Blocks of [`synth::GEN_BLOCK`] rows generated (in parallel) and written at a time:
/// memory is about `BLOCKS_AT_ONCE * 8192 * dim * 4` bytes twice over (rows and the Arrow
/// batch), whatever the number of rows.
const BLOCKS_AT_ONCE: usize = 16;

/// Largest output accepted: the files hold about 4 bytes a value (random floats do not
/// compress), written block by block, so the limit is the disk's, not memory's.
const MAX_OUTPUT_BYTES: u128 = 1 << 40;

/// Refuses sizes whose files would pass [`MAX_OUTPUT_BYTES`] before anything is written.
pub(crate) fn check_size(param: &str, rows: usize, test_rows: usize, dim: usize) -> Result<()> {
    let bytes = (rows as u128 + test_rows as u128) * (dim as u128 + 1) * 4;
    if bytes > MAX_OUTPUT_BYTES {
        return Err(Error::param(
            param,
            format!(
                "{rows} rows and {test_rows} test rows x {dim} features would write about \
                 {:.0} GiB; the limit is {} GiB",
                bytes as f64 / f64::from(1u32 << 30),
                MAX_OUTPUT_BYTES >> 30
            ),
        ));
    }
    Ok(())
}

/// One file of `party`'s rows, [`BLOCKS_AT_ONCE`] generator blocks at a time.
pub(crate) fn write_blocks(
    o: &mut Outputs,
    path: &Path,
    party: &SynthParty,
    bar: &indicatif::ProgressBar,
) -> Result<()> {
    let mut writer = None;
    party.for_each_block(BLOCKS_AT_ONCE * synth::GEN_BLOCK, &mut |ds| {
        let w = match &mut writer {
            Some(w) => w,
            None => writer.insert(ParquetRows::create(o, path, ds, "label")?),
        };
        w.write(ds)?;
        bar.inc(ds.n().div_ceil(synth::GEN_BLOCK) as u64);
        Ok(())
    })?;
    writer.map_or(Ok(()), ParquetRows::finish)
}

/// One file of `party`'s rows, a few blocks at a time (any size within the disk), quietly.
pub(crate) fn write_party(o: &mut Outputs, path: &Path, party: &SynthParty) -> Result<()> {
    write_blocks(o, path, party, &indicatif::ProgressBar::hidden())
}

/// Synthetic parties from a planted logistic model (plus a test set).
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[arg(long)]
    /// Parties (one Parquet file each).
    parties: usize,
    /// Total training rows, split evenly across the parties.
    #[arg(long)]
    rows: usize,
    #[arg(long, value_parser = kinsey_core::limits::parse_dim)]
    /// Features.
    dim: usize,
    #[arg(long)]
    /// Output directory (party-1.parquet, ..., test.parquet).
    out: PathBuf,
    #[arg(long, default_value_t = 0)]
    /// Seed of the generated data (public synthetic data, not noise).
    seed: u64,
    /// Test rows (default: rows / 5).
    #[arg(long)]
    test_rows: Option<usize>,
    /// Norm of the planted model.
    #[arg(long, default_value_t = 4.0)]
    signal: f64,
    /// AR(1) correlation between neighbouring features, in [0, 1).
    #[arg(long, default_value_t = 0.0)]
    correlation: f64,
}

/// Runs `kinsey generate`.
pub(crate) fn run(a: Args) -> Result<()> {
    let Args {
        parties,
        rows,
        dim,
        out,
        seed,
        test_rows,
        signal,
        correlation,
    } = a;
    if !(0.0..1.0).contains(&correlation) {
        return Err(Error::param(
            "correlation",
            format!("must be in [0, 1), got {correlation}"),
        ));
    }
    if parties == 0 || rows < parties || dim == 0 {
        return Err(Error::param(
            "generate",
            "need parties >= 1, rows >= parties, dim >= 1",
        ));
    }
    check_size("--rows", rows, test_rows.unwrap_or(rows / 5), dim)?;
    if !(signal.is_finite() && signal >= 0.0) {
        return Err(Error::param("signal", "must be finite and >= 0"));
    }
    let mut o = Outputs::new();
    o.ensure_dir(&out)?;
    let mut sizes = vec![rows / parties; parties];
    sizes[parties - 1] += rows % parties;
    let test_n = test_rows.unwrap_or(rows / 5).max(1);
    let total_blocks: usize = sizes
        .iter()
        .chain([&test_n])
        .map(|n| n.div_ceil(synth::GEN_BLOCK))
        .sum();
    let bar = crate::term::bar(total_blocks as u64, "generating");
    let mut files: Vec<(PathBuf, SynthParty)> = sizes
        .iter()
        .enumerate()
        .map(|(j, &n)| {
            let path = out.join(format!("party-{}.parquet", j + 1));
            let model = synth::Planted::new(dim, signal, correlation, seed, j as u64 + 1);
            (path.clone(), SynthParty::new(model, n, path))
        })
        .collect();
    // The test set: isotropic rows on stream 0 of the same planted model.
    let test_model = synth::Planted::new(dim, signal, 0.0, seed, 0);
    let test_path = out.join("test.parquet");
    files.push((
        test_path.clone(),
        SynthParty::new(test_model, test_n, test_path),
    ));
    for (path, party) in &files {
        write_blocks(&mut o, path, party, &bar)?;
    }
    write_json(
        &mut o,
        &out.join("generate.json"),
        &serde_json::json!({"seed": seed, "signal": signal, "correlation": correlation, "dim": dim, "party_rows": sizes, "test_rows": test_n, "planted_w": synth::planted_w(dim, signal, seed)}),
    )?;
    bar.finish_and_clear();
    o.commit()?;
    println!(
        "wrote {parties} parties ({rows} rows, d = {dim}) and test.parquet to {}",
        out.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kinsey_data::parquet_io::{ColumnSpec, read_parquet};

    /// A party longer than one write (17 blocks and 5 rows) reads back as the rows the
    /// in-memory generator makes, in order.
    #[test]
    fn a_party_written_in_blocks_is_the_whole_party() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("p.parquet");
        let n = (BLOCKS_AT_ONCE + 1) * synth::GEN_BLOCK + 5;
        let model = synth::Planted::new(3, 4.0, 0.2, 7, 2);
        let mut o = Outputs::new();
        let bar = indicatif::ProgressBar::hidden();
        let party = SynthParty::new(model, n, path.clone());
        write_blocks(&mut o, &path, &party, &bar).expect("write");
        o.commit().expect("commit");
        let back = read_parquet(&path, &ColumnSpec::default()).expect("read");
        let whole = synth::generate_correlated(n, 3, 4.0, 0.2, 7, 2, "w".into());
        assert_eq!(back.n(), n);
        assert_eq!(back.x, whole.x);
        assert_eq!(back.y, whole.y);
    }

    #[test]
    fn sizes_past_the_disk_limit_are_refused_before_writing() {
        let e = check_size("--rows", 2_000_000_000, 0, 1000).expect_err("too large");
        assert!(e.to_string().contains("GiB"), "{e}");
        // 20M x 123 (issue 39's size) is accepted: about 9 GiB, written in blocks.
        check_size("--rows", 20_000_000, 4_000_000, 123).expect("20M x 123");
    }
}
