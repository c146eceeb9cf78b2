//! Shuffle a data set with a recorded seed and cut it into party data sets.

use super::Dataset;
use kinsey_core::{Error, Result};
use kinsey_dp::NoiseRng;

/// How to cut: explicit sizes, or fractions of the rows.
#[derive(Debug, Clone, PartialEq)]
pub enum SplitSpec {
    /// Rows per party.
    Sizes(Vec<usize>),
    /// Fractions of the rows per party (they must sum to at most 1).
    Fractions(Vec<f64>),
}

impl SplitSpec {
    /// Party sizes for `n` rows. Fractions are rounded down; the remainder goes to the last
    /// party only when the fractions sum to 1.
    pub fn sizes(&self, n: usize) -> Result<Vec<usize>> {
        let sizes = match self {
            SplitSpec::Sizes(s) => s.clone(),
            SplitSpec::Fractions(f) => {
                if let Some(bad) = f.iter().find(|v| !(v.is_finite() && **v > 0.0)) {
                    return Err(Error::param(
                        "fractions",
                        format!("each fraction must be > 0, got {bad}"),
                    ));
                }
                let total: f64 = f.iter().sum();
                if total > 1.0 + 1e-9 {
                    return Err(Error::param(
                        "fractions",
                        format!("fractions sum to {total} > 1"),
                    ));
                }
                let mut s: Vec<usize> = f.iter().map(|v| (v * n as f64).floor() as usize).collect();
                if (total - 1.0).abs() <= 1e-9 {
                    let rest = n - s.iter().sum::<usize>();
                    if let Some(last) = s.last_mut() {
                        *last += rest;
                    }
                }
                s
            }
        };
        if sizes.is_empty() {
            return Err(Error::param("sizes", "at least one party is needed"));
        }
        if let Some(i) = sizes.iter().position(|&s| s == 0) {
            return Err(Error::param(
                "sizes",
                format!("party {} would have zero rows", i + 1),
            ));
        }
        let total: usize = sizes.iter().sum();
        if total > n {
            return Err(Error::param(
                "sizes",
                format!("the sizes add up to {total} rows but the input has only {n}"),
            ));
        }
        Ok(sizes)
    }
}

/// Shuffle with `rng` and cut. Rows beyond the sum of the sizes are dropped.
pub fn split(ds: &Dataset, spec: &SplitSpec, rng: &mut NoiseRng) -> Result<Vec<Dataset>> {
    let sizes = spec.sizes(ds.n())?;
    let mut idx: Vec<usize> = (0..ds.n()).collect();
    rng.shuffle(&mut idx);
    let mut out = Vec::with_capacity(sizes.len());
    let mut start = 0;
    for (j, s) in sizes.iter().enumerate() {
        let src = ds.source.with_file_name(format!("party-{}", j + 1));
        out.push(ds.select(&idx[start..start + s], src));
        start += s;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_fractions() {
        assert_eq!(
            SplitSpec::Sizes(vec![2, 3]).sizes(5).expect("ok"),
            vec![2, 3]
        );
        assert!(SplitSpec::Sizes(vec![2, 4]).sizes(5).is_err());
        assert!(SplitSpec::Sizes(vec![0, 4]).sizes(5).is_err());
        assert_eq!(
            SplitSpec::Fractions(vec![0.5, 0.5]).sizes(7).expect("ok"),
            vec![3, 4]
        );
        assert_eq!(
            SplitSpec::Fractions(vec![0.25, 0.25]).sizes(8).expect("ok"),
            vec![2, 2]
        );
        assert!(SplitSpec::Fractions(vec![0.7, 0.7]).sizes(8).is_err());
    }

    #[test]
    fn split_is_a_seeded_partition() {
        let ds = super::super::synth::generate_one(100, 3, 1.0, 1, "in".into());
        let parts = split(
            &ds,
            &SplitSpec::Sizes(vec![30, 70]),
            &mut NoiseRng::from_seed_quiet(4),
        )
        .expect("split");
        let again = split(
            &ds,
            &SplitSpec::Sizes(vec![30, 70]),
            &mut NoiseRng::from_seed_quiet(4),
        )
        .expect("split");
        assert_eq!(parts[0].x, again[0].x);
        let mut all: Vec<u32> = parts
            .iter()
            .flat_map(|p| p.x.iter().map(|v| v.to_bits()))
            .collect();
        let mut orig: Vec<u32> = ds.x.iter().map(|v| v.to_bits()).collect();
        all.sort_unstable();
        orig.sort_unstable();
        assert_eq!(all, orig, "every row lands in exactly one party");
    }
}
