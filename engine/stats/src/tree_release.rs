//! One DP decision tree (seed 002) as the library releases it, for `kinsey tree` and every
//! library caller alike: the query (its public parameters), the release's generator (from
//! the OS, or from a seed bound to the query and its input's digest), the tree, and the
//! report `kinsey tree` writes as `report.json`. Files, the terminal and the exact test
//! accuracy (a diagnostic) are the caller's.

use crate::tree::{self, Score, Selection, TreeConfig, TreeResult};
use kinsey_core::{Error, Result};
use kinsey_data::attributes::{AttributeSpec, CatData, read_categorical_data};
use kinsey_data::memory::ColumnSource;
use kinsey_dp::{Neighbours, NoiseRng};
use serde_json::json;

/// The public parameters of a tree release (the flags of `kinsey tree`).
#[derive(Debug, Clone)]
pub struct TreeQuery {
    /// The class column.
    pub label: String,
    /// The class values, in order.
    pub classes: Vec<f64>,
    /// Attributes: `NAME` (0/1) or `NAME:LO:HI:BINS`, as written; empty: every numeric
    /// column but the label, as binary.
    pub attributes: Vec<String>,
    /// Maximum depth.
    pub depth: usize,
    /// `exponential`, `noisy_max` or `none` (the non-private baseline, a diagnostic).
    pub selection: String,
    /// `info_gain` or `gini`.
    pub score: String,
    /// Epsilon (required unless the selection is `none`).
    pub epsilon: Option<f64>,
    /// The neighbour definition.
    pub neighbours: Neighbours,
    /// Under unbounded neighbours: read at most this many rows (replace-one sensitivities).
    pub row_bound: Option<usize>,
}

/// A trained tree: the report (the release, or under `selection = none` the NOT PRIVATE
/// report), the tree itself, and what was read.
#[derive(Debug)]
pub struct TreeOutcome {
    /// The parsed attribute specifications.
    pub specs: Vec<AttributeSpec>,
    /// The tree and its accounting.
    pub result: TreeResult,
    /// The rows read (NOT PRIVATE: for the test accuracy of the diagnostics).
    pub data: CatData,
    /// The configuration trained under.
    pub config: TreeConfig,
    /// `report.json` of `kinsey tree` (without `test` and `test_accuracy`, which only the
    /// non-private report carries).
    pub report: serde_json::Value,
    /// A private tree's guarantee (also in the report); `None` for the non-private baseline.
    pub guarantee: Option<kinsey_dp::release::Guarantee>,
}

impl TreeQuery {
    /// The selection, its epsilon (infinite for the non-private baseline) and the config.
    pub fn config(&self) -> Result<TreeConfig> {
        let selection: Selection = self.selection.parse()?;
        let epsilon = match (selection, self.epsilon) {
            (Selection::None, _) => self.epsilon.unwrap_or(f64::INFINITY),
            (_, Some(e)) => e,
            (_, None) => {
                return Err(Error::param("epsilon", "a private tree needs --epsilon"));
            }
        };
        let config = TreeConfig {
            depth: self.depth,
            selection,
            score: self.score.parse::<Score>()?,
            epsilon,
            neighbours: self.neighbours,
            row_bound: self.row_bound,
        };
        crate::tree::check_config(&config)?;
        Ok(config)
    }

    /// The attribute specifications.
    pub fn specs(&self) -> Result<Vec<AttributeSpec>> {
        self.attributes.iter().map(|s| s.parse()).collect()
    }

    /// Train on `input` (a file, or a table in memory) with the generator a seeded release
    /// derives from the query's label and the input's digest (or the OS's).
    pub fn train<S: ColumnSource + ?Sized>(
        &self,
        input: &S,
        seed: Option<u64>,
        record_seed: bool,
    ) -> Result<TreeOutcome> {
        let config = self.config()?;
        let specs = self.specs()?;
        let data = read_categorical_data(input, &specs, &self.label, &self.classes)?;
        let label = crate::sulq::query::release_label(
            "tree",
            &json!({"label": self.label, "classes": self.classes, "attributes": self.attributes,
                "depth": self.depth, "selection": self.selection, "score": self.score,
                "epsilon": config.epsilon, "neighbours": self.neighbours.as_str(),
                "row_bound": self.row_bound}),
        );
        let mut columns: Vec<&str> = data.names.iter().map(String::as_str).collect();
        columns.push(&self.label);
        let mut rng =
            NoiseRng::for_release_recorded(seed, record_seed, &label, || input.digest(&columns))?;
        let result = tree::train(&data, &config, &mut rng)?;
        let guarantee = (config.selection != Selection::None).then(|| stated(&result, self));
        let mut report = json!({
            "kind": "kinsey.dp_tree.v1",
            "input": input.name(), "attributes": data.names, "classes": data.class_labels,
            "config": result.config, "epsilon_per_mechanism": result.epsilon_per_mechanism,
            "score_sensitivity": result.score_sensitivity,
            "count_sensitivity": result.count_sensitivity,
            "rows_read": match (self.neighbours, self.row_bound) {
                (Neighbours::Unbounded, Some(b)) => format!(
                    "at most the first {b} rows of the input (a neighbour changes at most one \
                     replaced row of them: replace-one sensitivities)"
                ),
                _ => "every row of the input".to_string(),
            },
            "leaves": result.leaves, "accountant": result.accountant, "rng": rng.record(),
        });
        if let Some(g) = &guarantee {
            report["guarantee"] = serde_json::to_value(g)
                .map_err(|e| Error::Numerical(format!("tree guarantee: {e}")))?;
        }
        Ok(TreeOutcome {
            specs,
            result,
            data,
            config,
            report,
            guarantee,
        })
    }
}

impl TreeQuery {
    /// The tree file of a release (what `kinsey tree` writes as `tree.json` and `kinsey
    /// predict` applies): the tree with its class column, classes and attributes, binned
    /// ones with their public `LO:HI:BINS` ([`crate::apply::TreeModel`]).
    pub fn tree_file(&self, outcome: &TreeOutcome) -> serde_json::Value {
        let attributes: Vec<AttributeSpec> = if outcome.specs.is_empty() {
            outcome
                .data
                .names
                .iter()
                .map(|name| AttributeSpec {
                    name: name.clone(),
                    bins: None,
                })
                .collect()
        } else {
            outcome.specs.clone()
        };
        serde_json::json!({
            "kind": crate::apply::TREE_KIND,
            "label": self.label,
            "classes": self.classes,
            "attributes": attributes,
            "root": outcome.result.root,
        })
    }
}

/// A private tree's guarantee, as every release states it: the selections and the leaf
/// counts compose to epsilon; the noise std stated is a leaf count's.
fn stated(result: &TreeResult, q: &TreeQuery) -> kinsey_dp::release::Guarantee {
    let eps1 = result.epsilon_per_mechanism;
    let scale = result.count_sensitivity / eps1;
    kinsey_dp::release::Guarantee {
        kind: kinsey_dp::release::GuaranteeKind::Pure,
        epsilon: result.config.epsilon,
        delta: 0.0,
        neighbours: q.neighbours.relation(),
        mechanism: format!(
            "{} selection of each split by {} score, Laplace noise on each leaf's class \
             counts; epsilon {eps1} per mechanism, composed over the tree",
            q.selection, q.score
        ),
        sensitivity: format!(
            "split score {}, leaf counts {} (L1)",
            result.score_sensitivity, result.count_sensitivity
        ),
        sensitivity_value: None,
        rho: None,
        noise_std: Some(std::f64::consts::SQRT_2 * scale),
    }
}
