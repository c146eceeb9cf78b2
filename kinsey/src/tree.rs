//! DP decision trees (seed 002) as `kinsey tree` releases them: the one builder the
//! command and library callers share.

use kinsey_core::{Error, Result};
use kinsey_data::attributes::{AttributeSpec, read_categorical_data};
use kinsey_data::memory::{ArrowTable, ColumnSource};
use kinsey_dp::Neighbours;
use kinsey_stats::tree::{self, Selection};
use kinsey_stats::tree_release::{TreeOutcome, TreeQuery};
use std::path::{Path, PathBuf};

/// A tree's release, built up from its public parameters.
///
/// ```no_run
/// use kinsey::prelude::*;
/// use kinsey::stats::Tree;
///
/// let out = Tree::new("label", Neighbours::Bounded)
///     .attributes(&["age:0:90:9", "sex"])
///     .epsilon(1.0)
///     .of_file("patients.csv")?;
/// println!("{} leaves", out.outcome.result.leaves);
/// # Ok::<(), kinsey::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Tree {
    query: TreeQuery,
    seed: Option<u64>,
    record_seed: bool,
    test: Option<PathBuf>,
    diagnostics: bool,
    ledger: Option<crate::ledger::Ledger>,
}

/// A tree's release: the tree file, the report and, only when asked, the NOT PRIVATE test
/// accuracy. Under `selection = "none"` the tree is exact data, every part of it a
/// diagnostic ([`is_private`](Self::is_private) is false).
#[derive(Debug)]
pub struct TreeOutput {
    /// The tree, its accounting and its report.
    pub outcome: TreeOutcome,
    /// The tree file (`tree.json`, what `kinsey predict` applies).
    pub tree_file: serde_json::Value,
    /// NOT PRIVATE: the accuracy on the test file, when one was given with diagnostics.
    pub test_accuracy_not_private: Option<f64>,
}

impl TreeOutput {
    /// Whether this is a DP release (`false`: the non-private baseline).
    pub fn is_private(&self) -> bool {
        self.outcome.config.selection != Selection::None
    }
}

impl Tree {
    /// A tree predicting the class column `label` under `neighbours`, with `kinsey tree`'s
    /// defaults: classes -1 and 1, every other column an attribute, depth 5, exponential
    /// selection by information gain.
    pub fn new(label: &str, neighbours: Neighbours) -> Self {
        Self {
            query: TreeQuery {
                label: label.into(),
                classes: vec![-1.0, 1.0],
                attributes: Vec::new(),
                depth: 5,
                selection: "exponential".into(),
                score: "info_gain".into(),
                epsilon: None,
                neighbours,
                row_bound: None,
            },
            seed: None,
            record_seed: false,
            test: None,
            diagnostics: false,
            ledger: None,
        }
    }

    /// The class values (each maps to a class in order).
    pub fn classes(mut self, classes: &[f64]) -> Self {
        self.query.classes = classes.to_vec();
        self
    }

    /// The attributes: `NAME` (categorical) or `NAME:LO:HI:BINS` (binned).
    pub fn attributes<S: AsRef<str>>(mut self, attributes: &[S]) -> Self {
        self.query.attributes = attributes.iter().map(|a| a.as_ref().to_string()).collect();
        self
    }

    /// The largest depth.
    pub fn depth(mut self, depth: usize) -> Self {
        self.query.depth = depth;
        self
    }

    /// How a split is chosen: `exponential`, `permute_flip`, `laplace` or `none` (the
    /// non-private baseline, a diagnostic).
    pub fn selection(mut self, selection: &str) -> Self {
        self.query.selection = selection.into();
        self
    }

    /// The split score: `info_gain`, `gini` or `max`.
    pub fn score(mut self, score: &str) -> Self {
        self.query.score = score.into();
        self
    }

    /// Privacy parameter (required for a private tree).
    pub fn epsilon(mut self, epsilon: f64) -> Self {
        self.query.epsilon = Some(epsilon);
        self
    }

    /// Under unbounded neighbours, read at most the first `rows` rows.
    pub fn row_bound(mut self, rows: usize) -> Self {
        self.query.row_bound = Some(rows);
        self
    }

    /// Derive the noise from a seed, the parameters and the data (NOT private against
    /// whoever knows it).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Write the seed's value into the report.
    pub fn record_seed(mut self) -> Self {
        self.record_seed = true;
        self
    }

    /// A test file for the accuracy, a NOT PRIVATE diagnostic (a private tree takes one
    /// only with [`diagnostics`](Self::diagnostics)).
    pub fn test(mut self, path: impl AsRef<Path>) -> Self {
        self.test = Some(path.as_ref().to_path_buf());
        self
    }

    /// Compute the NOT PRIVATE diagnostics (the test accuracy).
    pub fn diagnostics(mut self) -> Self {
        self.diagnostics = true;
        self
    }

    /// Charge the release to `ledger` before its noise is drawn.
    pub fn ledger(mut self, ledger: &crate::ledger::Ledger) -> Self {
        self.ledger = Some(ledger.clone());
        self
    }

    /// The release of a tree trained on the Parquet or CSV file `path`.
    pub fn of_file(self, path: impl AsRef<Path>) -> Result<TreeOutput> {
        let path = path.as_ref();
        self.release(path, &|l, e| {
            l.charge_file(path, "tree", (e, 0.0)).map(drop)
        })
    }

    /// The release of a tree trained on a table in memory (a ledger charges it under its
    /// data set's name, which a table needs).
    pub fn of_table(self, table: &ArrowTable) -> Result<TreeOutput> {
        self.release(table, &|l, e| {
            l.charge_table(table, "tree", (e, 0.0)).map(drop)
        })
    }

    /// Charge, train on `source`, and make the tree file (and the test accuracy, asked).
    fn release<S: ColumnSource + ?Sized>(
        self,
        source: &S,
        charge: &dyn Fn(&crate::ledger::Ledger, f64) -> Result<()>,
    ) -> Result<TreeOutput> {
        let config = self.query.config()?;
        let private = config.selection != Selection::None;
        if self.test.is_some() && !self.diagnostics && private {
            return Err(Error::param(
                "test",
                "--test is read only for the test accuracy, a NOT PRIVATE diagnostic: add \
                 --diagnostics, or leave --test out",
            ));
        }
        // Charge, then draw the noise, then publish (the non-private baseline is no
        // release and is not charged).
        if let (Some(l), true) = (&self.ledger, private) {
            charge(l, config.epsilon)?;
        }
        let outcome = self.query.train(source, self.seed, self.record_seed)?;
        let tree_file = self.query.tree_file(&outcome);
        // A test file given is read (and refused if unreadable); its accuracy is computed
        // only under diagnostics.
        let test_accuracy_not_private = match &self.test {
            Some(t) => {
                let specs: Vec<AttributeSpec> = if outcome.specs.is_empty() {
                    outcome
                        .data
                        .names
                        .iter()
                        .map(|n| AttributeSpec {
                            name: n.clone(),
                            bins: None,
                        })
                        .collect()
                } else {
                    outcome.specs.clone()
                };
                let test = read_categorical_data(
                    t.as_path(),
                    &specs,
                    &self.query.label,
                    &self.query.classes,
                )?;
                self.diagnostics
                    .then(|| tree::accuracy(&outcome.result.root, &test))
            }
            None => None,
        };
        Ok(TreeOutput {
            outcome,
            tree_file,
            test_accuracy_not_private,
        })
    }
}
