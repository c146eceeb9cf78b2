//! Applying the models the toolbox publishes to new rows: the decision tree
//! (`tree.json`, with its attributes' bins), the SuLQ perceptron and the SuLQ k-means
//! centres (`model.json`, with the declared column boxes). The aggregate classifier's
//! `model.json` is applied by `kinsey_learn::model_file::ModelFile`.
//!
//! Applying a published model to rows is post-processing of a release: it spends no
//! budget, and its output concerns the rows given, not the training data.

use kinsey_core::{Error, Result};
use kinsey_data::attributes::AttributeSpec;
use kinsey_data::memory::ColumnSource;
use kinsey_data::table::{ColumnBounds, Range, read_matrix};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The kind of a tree model file.
pub const TREE_KIND: &str = "kinsey.tree.v2";
/// The kind of a SuLQ perceptron model file.
pub const PERCEPTRON_KIND: &str = "kinsey.sulq_perceptron.v2";
/// The kind of a SuLQ k-means model file.
pub const KMEANS_KIND: &str = "kinsey.sulq_kmeans.v1";

/// A node of a tree file: the released tree's own node type.
pub use crate::tree::Node as TreeNode;

/// A published decision tree: what it reads and how it splits.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TreeModel {
    /// [`TREE_KIND`].
    pub kind: String,
    /// The class column it was trained on.
    pub label: String,
    /// The class values, by class code.
    pub classes: Vec<f64>,
    /// The attributes (0/1 or binned `LO:HI:BINS`), by attribute index.
    pub attributes: Vec<AttributeSpec>,
    /// The tree.
    pub root: TreeNode,
}

/// A published linear classifier over declared boxes (the SuLQ perceptron).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PerceptronModel {
    /// [`PERCEPTRON_KIND`].
    pub kind: String,
    /// The columns and their declared boxes, mapped onto `[-1, 1]`.
    pub columns: Vec<ColumnBounds>,
    /// Whether a constant 1 follows the columns (the last weight is then the intercept).
    #[serde(default)]
    pub intercept: bool,
    /// The weights, one per column (and the intercept's last).
    pub w: Vec<f64>,
    /// The rule, in words.
    pub rule: String,
}

/// Published k-means centres over declared boxes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct KmeansModel {
    /// [`KMEANS_KIND`].
    pub kind: String,
    /// The columns and their declared boxes, mapped onto `[0, 1]`.
    pub columns: Vec<ColumnBounds>,
    /// The centres in the mapped `[0, 1]` scale (where distances are measured).
    pub centres: Vec<Vec<f64>>,
    /// The same centres in the columns' own units.
    pub centres_original: Vec<Vec<f64>>,
}

/// A model file of the toolbox.
#[derive(Debug, Clone, PartialEq)]
pub enum Published {
    /// `kinsey tree`'s `tree.json`.
    Tree(TreeModel),
    /// `kinsey sulq perceptron`'s `model.json`.
    Perceptron(PerceptronModel),
    /// `kinsey sulq kmeans`'s `model.json`.
    Kmeans(KmeansModel),
}

/// What a model says about each row.
#[derive(Debug, Clone, PartialEq)]
pub struct Predictions {
    /// The name of the predicted quantity (`class`, `cluster`).
    pub what: &'static str,
    /// The prediction of each row, as text.
    pub predicted: Vec<String>,
    /// Per row: a score (the perceptron's margin, the distance to the nearest centre).
    pub score: Option<(&'static str, Vec<f64>)>,
    /// Class probabilities (the tree's noisy leaf proportions): names and one row each.
    pub probabilities: Option<(Vec<String>, Vec<Vec<f64>>)>,
    /// The columns the model read, in order.
    pub features: Vec<String>,
}

/// Map every `[lo, hi]` box back: `lo + c (hi - lo)` (a column without a box: `c`).
pub fn to_original(columns: &[ColumnBounds], centre: &[f64]) -> Vec<f64> {
    columns
        .iter()
        .zip(centre)
        .map(|(col, &c)| match col.bounds {
            Some((lo, hi)) => lo + c * (hi - lo),
            None => c,
        })
        .collect()
}

impl Published {
    /// What the model is, in words: `decision tree`, `SuLQ perceptron`, `SuLQ k-means`.
    pub fn what(&self) -> &'static str {
        match self {
            Published::Tree(_) => "decision tree",
            Published::Perceptron(_) => "SuLQ perceptron",
            Published::Kmeans(_) => "SuLQ k-means",
        }
    }

    /// Parse a toolbox model file's text by its `kind`, and check it.
    pub fn parse(path: &Path, text: &str) -> Result<Self> {
        let bad = |m: String| Error::format(path, m);
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| bad(format!("not JSON: {e}")))?;
        let kind = v.get("kind").and_then(|k| k.as_str()).unwrap_or_default();
        let parsed = match kind {
            TREE_KIND => Published::Tree(de(path, v)?),
            PERCEPTRON_KIND => Published::Perceptron(de(path, v)?),
            KMEANS_KIND => Published::Kmeans(de(path, v)?),
            "split" | "leaf" => {
                return Err(bad(
                    "a tree file from before kinsey recorded the attributes' bins: train the \
                     tree again to get a tree.json that predict can apply"
                        .into(),
                ));
            }
            "kinsey.sulq_perceptron.v1" => {
                return Err(bad(
                    "a perceptron file from before kinsey recorded the columns' boxes: run \
                     `kinsey sulq perceptron` again"
                        .into(),
                ));
            }
            other => {
                return Err(bad(format!(
                    "kind '{other}' is not a model kinsey applies ({}, {TREE_KIND}, \
                     {PERCEPTRON_KIND}, {KMEANS_KIND})",
                    "kinsey.dp_aggregate_logistic.v1"
                )));
            }
        };
        parsed.check(path)?;
        Ok(parsed)
    }

    fn check(&self, path: &Path) -> Result<()> {
        let bad = |m: String| Err(Error::format(path, m));
        match self {
            Published::Tree(t) => {
                if t.classes.len() < 2 || t.attributes.is_empty() {
                    return bad("a tree needs two classes and an attribute".into());
                }
                check_node(path, t, &t.root)
            }
            Published::Perceptron(p) => {
                if p.columns.is_empty() || p.w.len() != p.columns.len() + usize::from(p.intercept) {
                    return bad(format!(
                        "{} weights for {} columns",
                        p.w.len(),
                        p.columns.len()
                    ));
                }
                if p.w.iter().any(|w| !w.is_finite()) {
                    return bad("a weight is not finite".into());
                }
                Ok(())
            }
            Published::Kmeans(k) => {
                let d = k.columns.len();
                if d == 0 || k.centres.is_empty() {
                    return bad("no columns or no centres".into());
                }
                for c in &k.centres {
                    if c.len() != d || c.iter().any(|x| !x.is_finite()) {
                        return bad(format!("a centre is not {d} finite numbers"));
                    }
                }
                Ok(())
            }
        }
    }

    /// Apply the model to `input`'s rows.
    pub fn predict<S: ColumnSource + ?Sized>(&self, input: &S) -> Result<Predictions> {
        match self {
            Published::Tree(t) => predict_tree(t, input),
            Published::Perceptron(p) => {
                let m = read_matrix(input, &p.columns, &[], Range::Signed, true)?;
                let bias = if p.intercept { p.w[m.d] } else { 0.0 };
                let scores: Vec<f64> = (0..m.n)
                    .map(|i| {
                        bias + m
                            .row(i)
                            .iter()
                            .zip(&p.w)
                            .map(|(&x, w)| f64::from(x) * w)
                            .sum::<f64>()
                    })
                    .collect();
                Ok(Predictions {
                    what: "class",
                    predicted: scores
                        .iter()
                        .map(|&s| if s > 0.0 { "1" } else { "-1" }.to_string())
                        .collect(),
                    score: Some(("margin", scores)),
                    probabilities: None,
                    features: m.names,
                })
            }
            Published::Kmeans(k) => {
                let m = read_matrix(input, &k.columns, &[], Range::Unit, true)?;
                let (mut cluster, mut dist) = (Vec::with_capacity(m.n), Vec::with_capacity(m.n));
                for i in 0..m.n {
                    let row = m.row(i);
                    let (best, d2) = k
                        .centres
                        .iter()
                        .map(|c| {
                            c.iter()
                                .zip(row)
                                .map(|(a, &x)| (a - f64::from(x)).powi(2))
                                .sum::<f64>()
                        })
                        .enumerate()
                        .fold(
                            (0, f64::INFINITY),
                            |b, (j, d)| if d < b.1 { (j, d) } else { b },
                        );
                    cluster.push(best.to_string());
                    dist.push(d2.sqrt());
                }
                Ok(Predictions {
                    what: "cluster",
                    predicted: cluster,
                    score: Some(("distance_in_unit_box", dist)),
                    probabilities: None,
                    features: m.names,
                })
            }
        }
    }
}

fn de<T: serde::de::DeserializeOwned>(path: &Path, v: serde_json::Value) -> Result<T> {
    serde_json::from_value(v).map_err(|e| Error::format(path, format!("not a kinsey model: {e}")))
}

fn check_node(path: &Path, t: &TreeModel, node: &TreeNode) -> Result<()> {
    let bad = |m: String| Err(Error::format(path, m));
    match node {
        TreeNode::Leaf { class, counts } => {
            if *class >= t.classes.len() || counts.len() != t.classes.len() {
                return bad(format!(
                    "a leaf's class {class} or counts do not fit the classes"
                ));
            }
            Ok(())
        }
        TreeNode::Split {
            attribute,
            children,
            ..
        } => {
            let Some(spec) = t.attributes.get(*attribute) else {
                return bad(format!(
                    "a split on attribute {attribute}, which is not listed"
                ));
            };
            if children.len() != spec.domain() {
                return bad(format!(
                    "a split on '{}' has {} children for {} values",
                    spec.name,
                    children.len(),
                    spec.domain()
                ));
            }
            children.iter().try_for_each(|c| check_node(path, t, c))
        }
    }
}

fn predict_tree<S: ColumnSource + ?Sized>(t: &TreeModel, input: &S) -> Result<Predictions> {
    let columns = t
        .attributes
        .iter()
        .map(|a| input.numeric(&a.name))
        .collect::<Result<Vec<_>>>()?;
    let n = columns.first().map_or(0, Vec::len);
    let classes: Vec<String> = t.classes.iter().map(|c| c.to_string()).collect();
    let (mut predicted, mut probs) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for row in 0..n {
        let mut node = &t.root;
        while let TreeNode::Split {
            attribute,
            children,
            ..
        } = node
        {
            let spec = &t.attributes[*attribute];
            let x = columns[*attribute].get(row).copied().unwrap_or(f64::NAN);
            let code = spec.code(x).ok_or_else(|| Error::Value {
                path: input.name().to_path_buf(),
                column: spec.name.clone(),
                row,
                msg: "the value is not 0 or 1, as this 0/1 attribute needs".into(),
            })?;
            node = &children[usize::from(code)];
        }
        if let TreeNode::Leaf { class, counts } = node {
            predicted.push(classes[*class].clone());
            let clamped: Vec<f64> = counts.iter().map(|c| c.max(0.0)).collect();
            let total: f64 = clamped.iter().sum();
            probs.push(if total > 0.0 {
                clamped.iter().map(|c| c / total).collect()
            } else {
                vec![1.0 / classes.len() as f64; classes.len()]
            });
        }
    }
    Ok(Predictions {
        what: "class",
        predicted,
        score: None,
        probabilities: Some((classes, probs)),
        features: t.attributes.iter().map(|a| a.name.clone()).collect(),
    })
}

#[cfg(test)]
mod tests;
