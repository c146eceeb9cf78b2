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
    /// The intercept's public constant `c`, when the model has one: the last feature is
    /// `(intercept)`, and a row `x` is scored as `(sqrt(1 - c^2) T(x), c) . w`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intercept: Option<f64>,
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
        let named = m
            .features
            .iter()
            .position(|f| f == kinsey_data::INTERCEPT_FEATURE);
        match (m.intercept, named) {
            (Some(c), Some(i)) if i + 1 == m.features.len() => {
                kinsey_data::check_intercept("intercept", c).map_err(|e| bad(e.to_string()))?;
            }
            (None, None) => {}
            (Some(_), _) => {
                return Err(bad(format!(
                    "a model with an intercept has '{}' as its last feature",
                    kinsey_data::INTERCEPT_FEATURE
                )));
            }
            (None, Some(_)) => {
                return Err(bad(format!(
                    "feature '{}' without an intercept constant",
                    kinsey_data::INTERCEPT_FEATURE
                )));
            }
        }
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

    /// The columns a row to score is read from, in order: the features without the
    /// intercept's constant.
    pub fn input_features(&self) -> &[String] {
        let n = self.features.len() - usize::from(self.intercept.is_some());
        &self.features[..n]
    }

    /// Make `ds` (read with [`input_features`](Self::input_features), in order) ready to
    /// score: the number of features checked, the model's row transform and intercept
    /// applied as in training.
    pub fn prepare(&self, ds: &mut Dataset) -> Result<()> {
        let want = self.input_features().len();
        if ds.d != want {
            return Err(Error::Schema {
                path: ds.source.clone(),
                column: "<features>".into(),
                msg: format!("the model reads {want} features but the input has {}", ds.d),
            });
        }
        if self.row_transform != RowTransform::None {
            self.row_transform.apply(ds)?;
        }
        if let Some(c) = self.intercept {
            kinsey_data::append_intercept(ds, c)?;
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
            ("\"f2\"]", "\"(intercept)\"]", "without an intercept"),
            (
                "\"epsilon\": 1.0",
                "\"epsilon\": 1.0, \"intercept\": 0.5",
                "last feature",
            ),
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

    const WITH_INTERCEPT: &str = r#"{"kind": "kinsey.dp_aggregate_logistic.v1",
        "features": ["f1", "(intercept)"], "label": "label", "row_transform": {"kind": "none"},
        "intercept": 0.5, "w": [1.0, 2.0], "epsilon": 1.0}"#;

    /// A model with an intercept reads one column and scores `(s x, c) . w`.
    #[test]
    fn an_intercept_is_applied_as_in_training() {
        let m = ModelFile::parse(Path::new("m.json"), WITH_INTERCEPT).expect("good");
        assert_eq!(m.input_features(), ["f1".to_string()]);
        let mut ds = Dataset {
            x: vec![0.6, -1.0],
            y: vec![1.0, 1.0],
            d: 1,
            features: vec!["f1".into()],
            source: "t".into(),
        };
        m.prepare(&mut ds).expect("prepared");
        let s = m.scores(&ds);
        assert!((s[0] - (0.6 * 0.75f64.sqrt() + 1.0)).abs() < 1e-6, "{s:?}");
        assert!((s[1] - (-(0.75f64.sqrt()) + 1.0)).abs() < 1e-6, "{s:?}");
        let bad = WITH_INTERCEPT.replace("0.5,", "1.5,");
        let e = ModelFile::parse(Path::new("m.json"), &bad).expect_err("refused");
        assert!(e.to_string().contains("(0, 1)"), "{e}");
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
        kinsey_fuzz::fuzz_text("model file", &[GOOD, WITH_INTERCEPT], |t| {
            if let Ok(m) = ModelFile::parse(Path::new("m.json"), t)
                && (m.w.len() != m.features.len() || m.w.iter().any(|v| !v.is_finite()))
            {
                return Err(format!("accepted {m:?}"));
            }
            Ok(())
        });
    }
}
