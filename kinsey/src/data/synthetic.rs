//! Synthetic parties from a planted logistic model, written block by block (any size the
//! disk holds): `kinsey generate`, the demo's parties and a trial session's data.

use kinsey_core::{Error, Progress, Result};
use kinsey_data::Dataset;
use kinsey_data::output::{Outputs, write_json};
use kinsey_data::parquet_blocks::PartyBlocks;
use kinsey_data::parquet_io::ParquetRows;
use kinsey_data::synth::{self, Planted, SynthParty};
use std::path::{Path, PathBuf};

/// Blocks of [`synth::GEN_BLOCK`] rows generated (in parallel) and written at a time:
/// memory is about `BLOCKS_AT_ONCE * 8192 * dim * 4` bytes twice over (rows and the Arrow
/// batch), whatever the number of rows.
const BLOCKS_AT_ONCE: usize = 16;

/// Largest output accepted: the files hold about 4 bytes a value (random floats do not
/// compress), written block by block, so the limit is the disk's, not memory's.
const MAX_OUTPUT_BYTES: u128 = 1 << 40;

/// Refuses sizes whose files would pass 1 TiB before anything is written (`param` names
/// the parameter in the error).
pub fn check_size(param: &str, rows: usize, test_rows: usize, dim: usize) -> Result<()> {
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

/// One file of `party`'s rows, a few generator blocks at a time, each block reported to
/// `progress`.
fn write_blocks(
    o: &mut Outputs,
    path: &Path,
    party: &SynthParty,
    progress: &dyn Progress,
) -> Result<()> {
    let mut writer = None;
    party.for_each_block(BLOCKS_AT_ONCE * synth::GEN_BLOCK, &mut |ds| {
        let w = match &mut writer {
            Some(w) => w,
            None => writer.insert(ParquetRows::create(o, path, ds, "label")?),
        };
        w.write(ds)?;
        progress.advance(ds.n().div_ceil(synth::GEN_BLOCK) as u64);
        Ok(())
    })?;
    writer.map_or(Ok(()), ParquetRows::finish)
}

/// One file of `party`'s rows into the output set `o`, a few blocks at a time.
pub fn write_party(o: &mut Outputs, path: &Path, party: &SynthParty) -> Result<()> {
    write_blocks(o, path, party, &kinsey_core::Silent)
}

/// The demo's synthetic parties: K parties of `rows`, 1.5 `rows`, 2 `rows`, ... rows in
/// dimension `d` (planted model of norm 8, fixed seed), generated as read, and a test set
/// of 20,000 rows.
pub fn demo_parties(k: usize, d: usize, rows: usize) -> Result<(Vec<SynthParty>, Dataset)> {
    kinsey_core::limits::check_dim("--dim", d)?;
    // Streamed, the rows are limited by the disk their spill (or a session's files) takes.
    let total = (0..k).fold(0usize, |acc, j| {
        acc.saturating_add(rows.saturating_add(j.saturating_mul(rows) / 2))
    });
    check_size("--smallest-party", total, 20_000, d)?;
    let data_seed = 2010;
    let parties = (0..k)
        .map(|j| {
            let n = rows.saturating_add(j.saturating_mul(rows) / 2);
            let model = Planted::new(d, 8.0, 0.0, data_seed, j as u64 + 1);
            SynthParty::new(model, n, format!("synthetic party {}", j + 1).into())
        })
        .collect();
    let test = synth::generate(20_000, d, 8.0, data_seed, 0, "synthetic test".into());
    Ok((parties, test))
}

/// Synthetic parties from a planted logistic model, and a test set: `kinsey generate`.
#[derive(Debug, Clone)]
pub struct Generate {
    /// Parties (one Parquet file each).
    pub parties: usize,
    /// Total training rows, split evenly across the parties.
    pub rows: usize,
    /// Features.
    pub dim: usize,
    /// Seed of the generated data (public synthetic data, not noise).
    pub seed: u64,
    /// Test rows (default: rows / 5).
    pub test_rows: Option<usize>,
    /// Norm of the planted model.
    pub signal: f64,
    /// AR(1) correlation between neighbouring features, in [0, 1).
    pub correlation: f64,
}

impl Generate {
    /// Write `out/party-1.parquet`, ..., `out/test.parquet` and `out/generate.json` (the
    /// parameters and the planted model), all or nothing, each block reported to
    /// `progress`.
    pub fn write(&self, out: &Path, progress: &dyn Progress) -> Result<Vec<PathBuf>> {
        let (parties, rows, dim) = (self.parties, self.rows, self.dim);
        let (seed, signal, correlation) = (self.seed, self.signal, self.correlation);
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
        check_size("--rows", rows, self.test_rows.unwrap_or(rows / 5), dim)?;
        if !(signal.is_finite() && signal >= 0.0) {
            return Err(Error::param("signal", "must be finite and >= 0"));
        }
        let mut o = Outputs::new();
        o.ensure_dir(out)?;
        let mut sizes = vec![rows / parties; parties];
        sizes[parties - 1] += rows % parties;
        let test_n = self.test_rows.unwrap_or(rows / 5).max(1);
        let total_blocks: usize = sizes
            .iter()
            .chain([&test_n])
            .map(|n| n.div_ceil(synth::GEN_BLOCK))
            .sum();
        let mut files: Vec<(PathBuf, SynthParty)> = sizes
            .iter()
            .enumerate()
            .map(|(j, &n)| {
                let path = out.join(format!("party-{}.parquet", j + 1));
                let model = Planted::new(dim, signal, correlation, seed, j as u64 + 1);
                (path.clone(), SynthParty::new(model, n, path))
            })
            .collect();
        // The test set: isotropic rows on stream 0 of the same planted model.
        let test_model = Planted::new(dim, signal, 0.0, seed, 0);
        let test_path = out.join("test.parquet");
        files.push((
            test_path.clone(),
            SynthParty::new(test_model, test_n, test_path),
        ));
        progress.begin("generating", Some(total_blocks as u64));
        let written = (|| {
            for (path, party) in &files {
                write_blocks(&mut o, path, party, progress)?;
            }
            write_json(
                &mut o,
                &out.join("generate.json"),
                &serde_json::json!({"seed": seed, "signal": signal, "correlation": correlation, "dim": dim, "party_rows": sizes, "test_rows": test_n, "planted_w": synth::planted_w(dim, signal, seed)}),
            )
        })();
        progress.end();
        written?;
        o.commit()
    }
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
        let model = Planted::new(3, 4.0, 0.2, 7, 2);
        let mut o = Outputs::new();
        let party = SynthParty::new(model, n, path.clone());
        write_party(&mut o, &path, &party).expect("write");
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
