//! The published model file (`model.json`, what `kinsey predict` reads): written by the
//! curator or the in-process job, read back with every field checked.

use kinsey_core::{Error, Result};
use kinsey_data::{Dataset, RowTransform};
use serde::Serialize;
use std::path::Path;

/// Largest model a file may declare (the dimension limit of every input).
const MAX_WEIGHTS: usize = kinsey_core::limits::MAX_DIM;

/// The published model file (what `kinsey predict` reads).
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ModelFile {
    /// [`ModelFile::KIND`].
    pub kind: String,
    /// Feature names, in the order of `w`.
    pub features: Vec<String>,
    /// The label column.
    pub label: String,
    /// The row transform to apply before scoring.
    pub row_transform: RowTransform,
    /// The published classifier.
    pub w: Vec<f64>,
    /// Epsilon of its guarantee.
    pub epsilon: f64,
}

impl ModelFile {
    /// The `kind` of every model file kinsey writes.
    pub const KIND: &'static str = "kinsey.dp_aggregate_logistic.v1";

    /// Parse and check a model file's text (`path` names it in errors): its kind, one
    /// finite weight per distinct non-empty feature name, at most the dimension limit, and
    /// an epsilon in the accepted range.
    pub fn parse(path: &Path, text: &str) -> Result<Self> {
        let bad = |msg: String| Error::format(path, msg);
        let m: ModelFile =
            serde_json::from_str(text).map_err(|e| bad(format!("not a kinsey model file: {e}")))?;
        if m.kind != Self::KIND {
            return Err(bad(format!(
                "kind '{}' is not a model kinsey reads ({})",
                m.kind,
                Self::KIND
            )));
        }
        if m.w.is_empty() || m.w.len() > MAX_WEIGHTS {
            return Err(bad(format!(
                "{} weights; a model has 1 to {MAX_WEIGHTS}",
                m.w.len()
            )));
        }
        if m.features.len() != m.w.len() {
            return Err(bad(format!(
                "{} feature names for {} weights",
                m.features.len(),
                m.w.len()
            )));
        }
        if let Some(i) = m.w.iter().position(|v| !v.is_finite()) {
            return Err(bad(format!("weight {i} is not finite")));
        }
        let mut names: Vec<&str> = m.features.iter().map(String::as_str).collect();
        names.sort_unstable();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(bad(format!("feature '{}' is named twice", w[0])));
        }
        if names.first().is_some_and(|n| n.is_empty()) || m.label.is_empty() {
            return Err(bad("an empty feature or label name".into()));
        }
        if let RowTransform::Scale(c) = m.row_transform
            && !(c.is_finite() && c > 0.0)
        {
            return Err(bad(format!(
                "row_transform scale factor {c} is not a positive number"
            )));
        }
        kinsey_core::check_epsilon("epsilon", m.epsilon).map_err(|e| bad(e.to_string()))?;
        Ok(m)
    }

    /// Read and check the model file at `path` (at most 64 MiB: 2^20 weights, the
    /// dimension limit, in JSON are about 26 MB).
    pub fn load(path: &Path) -> Result<Self> {
        Self::parse(path, &Self::read_text(path)?)
    }

    /// The largest model file read.
    pub const MAX_FILE: u64 = 64 << 20;

    /// The text of a model file (any kinsey model), at most [`MAX_FILE`](Self::MAX_FILE).
    pub fn read_text(path: &Path) -> Result<String> {
        kinsey_data::read_text_at_most(path, Self::MAX_FILE, "model file")
    }

    /// Make `ds` (read with this model's features, in order) ready to score: the number of
    /// features checked, the model's row transform applied.
    pub fn prepare(&self, ds: &mut Dataset) -> Result<()> {
        if ds.d != self.w.len() {
            return Err(Error::Schema {
                path: ds.source.clone(),
                column: "<features>".into(),
                msg: format!(
                    "the model has {} weights but the input has {} features",
                    self.w.len(),
                    ds.d
                ),
            });
        }
        if self.row_transform != RowTransform::None {
            self.row_transform.apply(ds)?;
        }
        Ok(())
    }

    /// The score `x . w` of every row of a [`prepare`](Self::prepare)d data set (in f64);
    /// the predicted label is +1 where the score is positive, else -1.
    pub fn scores(&self, ds: &Dataset) -> Vec<f64> {
        (0..ds.n())
            .map(|i| {
                ds.row(i)
                    .iter()
                    .zip(&self.w)
                    .map(|(&a, b)| f64::from(a) * b)
                    .sum()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"kind": "kinsey.dp_aggregate_logistic.v1", "features": ["f1", "f2"],
        "label": "label", "row_transform": {"kind": "none"}, "w": [0.5, -1.25], "epsilon": 1.0}"#;

    #[test]
    fn a_model_file_is_checked_field_by_field() {
        let p = Path::new("m.json");
        let m = ModelFile::parse(p, GOOD).expect("good");
        assert_eq!(m.w, vec![0.5, -1.25]);
        for (from, to, says) in [
            ("\"f2\"]", "\"f1\"]", "named twice"),
            ("-1.25", "1e999", "m.json"),
            ("[0.5, -1.25]", "[0.5]", "1 weights"),
            ("logistic.v1", "logistic.v0", "kind"),
            ("\"epsilon\": 1.0", "\"epsilon\": 1e308", "epsilon"),
            (
                "\"epsilon\": 1.0",
                "\"epsilon\": 1.0, \"extra\": 2",
                "extra",
            ),
        ] {
            let e = ModelFile::parse(p, &GOOD.replace(from, to)).expect_err(says);
            assert!(e.to_string().contains(says), "{from} -> {to}: {e}");
        }
    }

    /// Weights come back bit for bit: a model re-read (by `kinsey predict`, or Python's
    /// `Model.save`) is the published one, not one a rounding away (serde_json's default
    /// float parser is off by an ulp on some values; kinsey turns on its exact parser).
    #[test]
    fn weights_round_trip_bit_for_bit() {
        // splitmix64: values of every exponent and sign, no dependency for it.
        let mut state = 5u64;
        let mut next = move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        let mut m = ModelFile::parse(Path::new("m.json"), GOOD).expect("good");
        m.features = (0..2003).map(|i| format!("f{i}")).collect();
        m.w = (0..2000)
            .map(|_| f64::from_bits(next()))
            .map(|v| if v.is_finite() { v } else { 0.5 })
            .chain([
                -0.24702683109790086,
                -1.1724901775829495,
                -1.0930503454990685,
            ])
            .collect();
        m.features.truncate(m.w.len());
        let text = serde_json::to_string_pretty(&m).expect("json");
        let back = ModelFile::parse(Path::new("m.json"), &text).expect("parses");
        for (a, b) in m.w.iter().zip(&back.w) {
            assert_eq!(a.to_bits(), b.to_bits(), "{a:e} came back as {b:e}");
        }
    }

    /// What parses is a usable model: finite weights, one per feature, within the limits.
    #[test]
    fn fuzz_model_file() {
        kinsey_fuzz::fuzz_text("model file", &[GOOD], |t| {
            if let Ok(m) = ModelFile::parse(Path::new("m.json"), t)
                && (m.w.len() != m.features.len() || m.w.iter().any(|v| !v.is_finite()))
            {
                return Err(format!("accepted {m:?}"));
            }
            Ok(())
        });
    }
}
