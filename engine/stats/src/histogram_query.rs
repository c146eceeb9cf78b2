//! A DP histogram or count of one column, end to end, for the CLI and the library alike:
//! the public query ([`HistogramQuery`]), the row filter and the counting, the seeded-noise
//! label, and the typed report ([`HistogramReport`]). The CLI only writes files and charts.

use crate::histogram::{self, Binning, HistogramRelease};
use kinsey_core::{Error, Result};
use kinsey_data::blocks::{Cells, Want};
use kinsey_data::memory::ColumnSource;
use kinsey_data::series::Predicate;
use kinsey_dp::{Neighbours, NoiseRng, RngRecord};
use serde::Serialize;
use std::path::PathBuf;

/// Which bins: public, declared before the data is read.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bins {
    /// One bin holding every (kept) row: a count.
    Count,
    /// Declared numeric or categorical bins.
    Binned(Binning),
}

/// Every public parameter of one histogram release.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct HistogramQuery {
    /// The column counted.
    pub column: String,
    /// The bins.
    pub bins: Bins,
    /// A public row filter, as the user wrote it (`delay>=15`).
    pub predicate: Option<String>,
    /// Privacy parameter.
    pub epsilon: f64,
    /// The neighbour definition the guarantee is for.
    pub neighbours: Neighbours,
}

/// The release report of a histogram (`report.json`). Fields in alphabetical order, the
/// order the report has always had.
#[derive(Debug, Clone, Serialize)]
pub struct HistogramReport {
    /// The bins (a count is one category, `count`).
    pub binning: Binning,
    /// The column counted.
    pub column: String,
    /// The input, as the caller named it.
    pub input: PathBuf,
    /// [`HistogramQuery::KIND`].
    pub kind: &'static str,
    /// The noisy counts and their guarantee.
    pub release: HistogramRelease,
    /// How the noise generator was keyed.
    pub rng: RngRecord,
    /// The row filter.
    #[serde(rename = "where")]
    pub predicate: Option<String>,
}

impl HistogramReport {
    /// `histogram.csv`: one line per bin with its label, its noisy count and the count
    /// released for it (both noisy), as every front door writes it.
    pub fn csv(&self) -> Vec<u8> {
        let r = &self.release;
        let mut s = String::from("bin,noisy_count,count\n");
        for ((l, v), c) in r.labels.iter().zip(&r.noisy).zip(&r.counts) {
            s.push_str(&format!("\"{l}\",{v},{c}\n"));
        }
        s.into_bytes()
    }
}

impl HistogramQuery {
    /// The report's kind.
    pub const KIND: &'static str = "kinsey.histogram.v1";
    /// The seeded-noise label encoding's version.
    pub const LABEL_VERSION: &'static str = "kinsey.histogram.v2";

    /// Refuse bad parameters before any data is read.
    pub fn check(&self) -> Result<()> {
        kinsey_core::check_epsilon("epsilon", self.epsilon)?;
        if let Some(p) = &self.predicate {
            Predicate::parse(p)?;
        }
        Ok(())
    }

    /// Whether this is a count (one bin) rather than a histogram.
    pub fn is_count(&self) -> bool {
        self.bins == Bins::Count
    }

    /// The canonical seeded-noise label: the version, then the query as JSON.
    pub fn label(&self) -> Result<String> {
        let json = serde_json::to_string(self)
            .map_err(|e| Error::Numerical(format!("histogram label: {e}")))?;
        Ok(format!("{}|{json}", Self::LABEL_VERSION))
    }

    /// The exact bin counts of `input` (NOT PRIVATE: the release's input), with their labels,
    /// read a block of rows at a time (memory holds one block, whatever the input's length).
    pub fn count<S: ColumnSource + ?Sized>(&self, input: &S) -> Result<(Vec<String>, Vec<u64>)> {
        let predicate = self
            .predicate
            .as_deref()
            .map(Predicate::parse)
            .transpose()?;
        let (want, labels, mut counts) = match &self.bins {
            Bins::Count => (Want::Count, vec!["count".to_string()], vec![0u64]),
            Bins::Binned(b @ Binning::Numeric { .. }) => {
                (Want::Numeric, b.labels(), b.count_numeric(&[])?)
            }
            Bins::Binned(b @ Binning::Categories(_)) => {
                (Want::Categorical, b.labels(), b.count_categories(&[])?)
            }
        };
        let mut columns = vec![(self.column.as_str(), want)];
        if let Some(p) = &predicate {
            columns.push((p.column.as_str(), Want::Numeric));
        }
        input.for_each_block(&columns, &mut |cells| {
            let keep: Option<Vec<bool>> = match (&predicate, cells.get(1)) {
                (Some(p), Some(c)) => Some(c.numeric()?.iter().map(|&x| p.holds(x)).collect()),
                _ => None,
            };
            let kept = |i: usize| {
                keep.as_ref()
                    .is_none_or(|k| k.get(i).copied().unwrap_or(false))
            };
            let block = match (&self.bins, &cells[0]) {
                (Bins::Count, c) => vec![(0..c.len()).filter(|&i| kept(i)).count() as u64],
                (Bins::Binned(b), Cells::Numeric(v)) => b.count_numeric(
                    &v.iter()
                        .enumerate()
                        .filter_map(|(i, &v)| kept(i).then_some(v))
                        .collect::<Vec<f64>>(),
                )?,
                (Bins::Binned(b), c) => b.count_categories(
                    &c.categorical()?
                        .iter()
                        .enumerate()
                        .filter(|&(i, _)| kept(i))
                        .map(|(_, v)| v.clone())
                        .collect::<Vec<String>>(),
                )?,
            };
            for (t, c) in counts.iter_mut().zip(block) {
                *t += c;
            }
            Ok(())
        })?;
        Ok((labels, counts))
    }

    /// The release of `input`'s column: counted, then noised by `rng` (OS-keyed, or
    /// derived from a seed with [`label`](Self::label) and the input's digest).
    pub fn release<S: ColumnSource + ?Sized>(
        &self,
        input: &S,
        rng: &mut NoiseRng,
    ) -> Result<HistogramReport> {
        self.check()?;
        let (labels, exact) = self.count(input)?;
        self.release_counts(labels, &exact, input.name().to_path_buf(), rng)
    }

    /// The release of exact bin `counts` (with their `labels`, as [`count`](Self::count)
    /// gives them) of the input named `input`, noised by `rng`: a cluster's executors count
    /// their rows and the driver adds the counts.
    pub fn release_counts(
        &self,
        labels: Vec<String>,
        exact: &[u64],
        input: std::path::PathBuf,
        rng: &mut NoiseRng,
    ) -> Result<HistogramReport> {
        let filtered = self.predicate.is_some();
        let release =
            histogram::release(exact, labels, self.neighbours, self.epsilon, filtered, rng)?;
        Ok(HistogramReport {
            binning: match &self.bins {
                Bins::Count => Binning::Categories(vec!["count".into()]),
                Bins::Binned(b) => b.clone(),
            },
            column: self.column.clone(),
            input,
            kind: Self::KIND,
            release,
            rng: rng.record(),
            predicate: self.predicate.clone(),
        })
    }

    /// The generator of this release of `input`: from the OS, or derived from `seed`, the
    /// label and a digest of every byte of `input` (recorded in the report only when
    /// `record_seed`).
    pub fn rng<S: ColumnSource + ?Sized>(
        &self,
        input: &S,
        seed: Option<u64>,
        record_seed: bool,
    ) -> Result<NoiseRng> {
        let columns = self.digest_columns()?;
        let columns: Vec<&str> = columns.iter().map(String::as_str).collect();
        self.rng_from(seed, record_seed, || input.digest(&columns))
    }

    /// The columns a seeded release's digest covers: the column, and the filter's.
    pub fn digest_columns(&self) -> Result<Vec<String>> {
        let mut columns = vec![self.column.clone()];
        if let Some(p) = self
            .predicate
            .as_deref()
            .map(Predicate::parse)
            .transpose()?
        {
            columns.push(p.column);
        }
        Ok(columns)
    }

    /// [`rng`](Self::rng) with the input's digest (of [`digest_columns`](Self::digest_columns))
    /// from `digest`, called only when seeded.
    pub fn rng_from(
        &self,
        seed: Option<u64>,
        record_seed: bool,
        digest: impl FnOnce() -> Result<kinsey_dp::DataDigest>,
    ) -> Result<NoiseRng> {
        let label = self.label()?;
        NoiseRng::for_release_recorded(seed, record_seed, &label, digest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(bins: Bins) -> HistogramQuery {
        HistogramQuery {
            column: "x".into(),
            bins,
            predicate: None,
            epsilon: 1.0,
            neighbours: Neighbours::Bounded,
        }
    }

    #[test]
    fn counts_follow_the_filter_and_the_bins() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("t.csv");
        std::fs::write(&p, "x,y\n0.5,1\n1.5,0\n2.5,1\n9,1\n").expect("write");
        let binned = query(Bins::Binned(Binning::numeric("0:3:3").expect("bins")));
        let (labels, c) = binned.count(&p).expect("count");
        assert_eq!(labels.len(), c.len());
        assert_eq!(c, vec![0, 1, 1, 1, 1]);
        let mut filtered = binned.clone();
        filtered.predicate = Some("y>=1".into());
        assert_eq!(filtered.count(&p).expect("count").1, vec![0, 1, 0, 1, 1]);
        let mut count = query(Bins::Count);
        count.predicate = Some("y==0".into());
        assert_eq!(count.count(&p).expect("count").1, vec![1]);
        assert!(count.label().expect("label") != filtered.label().expect("label"));
        let mut bad = query(Bins::Count);
        bad.epsilon = f64::NAN;
        assert!(bad.release(&p, &mut NoiseRng::from_os()).is_err());
    }

    #[test]
    fn a_seed_replays_the_same_file_only() {
        let dir = tempfile::tempdir().expect("tmp");
        let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
        std::fs::write(&a, "x\n1\n2\n").expect("write");
        std::fs::write(&b, "x\n1\n3\n").expect("write");
        let q = query(Bins::Binned(Binning::numeric("0:4:4").expect("bins")));
        let run = |p: &std::path::Path| {
            let mut rng = q.rng(p, Some(9), false).expect("rng");
            q.release(p, &mut rng).expect("release").release.noisy
        };
        assert_eq!(run(&a), run(&a));
        assert_ne!(run(&a), run(&b));
    }
}
