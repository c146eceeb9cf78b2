//! The published model file (`model.json`, what `kinsey predict` reads): written by the
//! curator or the in-process job, read back with every field checked.

use kinsey_core::{Error, Result};
use kinsey_data::RowTransform;
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
