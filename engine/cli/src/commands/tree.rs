//! `kinsey tree`: DP decision trees (seed 002).

use super::common::*;
use kinsey::dp::Neighbours;
use kinsey::dp::release::NOT_PRIVATE_PREFIX;
use kinsey::stats::{Tree, TreeOutput};
use kinsey_core::Result;
use kinsey_data::output::Outputs;
use kinsey_data::output::write_json;
use serde_json::json;
use std::path::PathBuf;

#[derive(clap::Args, Debug, Clone)]
pub(crate) struct Args {
    /// Training data, Parquet or CSV.
    #[arg(long)]
    pub input: PathBuf,
    #[arg(long, default_value = "label")]
    /// The class column.
    pub label: String,
    /// The declared class values of the label column.
    #[arg(
        long,
        value_delimiter = ',',
        allow_hyphen_values = true,
        default_value = "-1,1"
    )]
    pub classes: Vec<f64>,
    /// The binary spelling every other command uses: plus_minus_one (classes -1,1) or
    /// zero_one (classes 0,1); instead of --classes.
    #[arg(long, conflicts_with = "classes", value_parser = super::common::parse_labels)]
    pub labels: Option<kinsey::data::LabelEncoding>,
    /// Attributes: NAME (0/1) or NAME:LO:HI:BINS; default every other column, as 0/1.
    #[arg(long, value_delimiter = ',')]
    pub attributes: Vec<String>,
    #[arg(long, default_value_t = 5)]
    /// Maximum depth of the tree.
    pub depth: usize,
    /// exponential | laplace | none (the non-private tree)
    #[arg(long, default_value = "exponential")]
    pub selection: String,
    /// info_gain | gini | max
    #[arg(long, default_value = "info_gain")]
    pub score: String,
    #[arg(long)]
    /// Privacy budget of the tree (required unless --selection none).
    pub epsilon: Option<f64>,
    #[arg(long, value_parser = parse_neighbours)]
    /// bounded (one row replaced; n public) or unbounded (one row added or removed).
    pub neighbours: Neighbours,
    /// Public bound on the rows (needed for info_gain under unbounded neighbours). Under
    /// unbounded neighbours the tree reads at most this many rows (the first ones; n is
    /// never compared with it), and every sensitivity is then the replace-one one.
    #[arg(long)]
    pub row_bound: Option<usize>,
    /// Test data (same columns) for the accuracy in the report.
    #[arg(long)]
    pub test: Option<PathBuf>,
    /// Output directory: tree.json, report.json (with `--selection none`, the non-private
    /// tree: tree.NOT-PRIVATE.json and report.NOT-PRIVATE.json).
    #[arg(long)]
    pub out: PathBuf,
    /// Compute the NOT PRIVATE diagnostics (test accuracy on --test) and write them to
    /// run.NOT-PRIVATE.diagnostics.json.
    #[arg(long)]
    pub diagnostics: bool,
    /// Seed the noise (reproducible; NOT private against whoever knows it).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Write the seed's value into the report (by default it says only that one was used).
    #[arg(long)]
    pub record_seed: bool,
}

fn run_tree(a: &Args) -> Result<Done> {
    // The diagram needs a font: refused before the ledger is charged, not after.
    crate::plot::check_fonts()?;
    let classes = match a.labels {
        Some(kinsey::data::LabelEncoding::ZeroOne) => vec![0.0, 1.0],
        Some(kinsey::data::LabelEncoding::PlusMinusOne) => vec![-1.0, 1.0],
        None => a.classes.clone(),
    };
    let mut t = Tree::new(&a.label, a.neighbours)
        .classes(&classes)
        .attributes(&a.attributes)
        .depth(a.depth)
        .selection(&a.selection)
        .score(&a.score);
    if let Some(e) = a.epsilon {
        t = t.epsilon(e);
    }
    if let Some(b) = a.row_bound {
        t = t.row_bound(b);
    }
    if let Some(p) = &a.test {
        t = t.test(p);
    }
    if a.diagnostics {
        t = t.diagnostics();
    }
    if let Some(seed) = a.seed {
        t = t.seed(seed);
    }
    if a.record_seed {
        t = t.record_seed();
    }
    warn_seed(a.seed);
    let ledger = super::ledger::facade()?;
    if let Some(l) = &ledger {
        t = t.ledger(l);
    }
    let (out, charged) = super::ledger::settle(ledger.as_ref(), t.of_file(&a.input))?;
    let test_acc = out.test_accuracy_not_private;
    let private = out.is_private();
    let TreeOutput {
        outcome, tree_file, ..
    } = out;
    let (res, cfg, report) = (&outcome.result, &outcome.config, &outcome.report);
    let mut o = Outputs::new();
    o.ensure_dir(&a.out)?;
    if !private {
        // The non-private tree is exact data: it is a diagnostic, never a release.
        kinsey_data::output::write_diagnostics(
            &mut o,
            &a.out.join("tree.NOT-PRIVATE.json"),
            &res.root,
        )?;
        let report = json!({
            "kind": "kinsey.tree_non_private.v1",
            "input": a.input, "attributes": outcome.data.names,
            "classes": outcome.data.class_labels,
            "config": res.config, "leaves": res.leaves, "test": a.test,
            "test_accuracy": test_acc,
        });
        kinsey_data::output::write_diagnostics(
            &mut o,
            &a.out.join("report.NOT-PRIVATE.json"),
            &report,
        )?;
        let written = o.commit()?;
        let summary = format!(
            "{} non-private tree (--selection none), depth {}, {} leaves: written as NOT PRIVATE diagnostics{}",
            NOT_PRIVATE_PREFIX,
            a.depth,
            res.leaves,
            test_acc
                .map(|v| format!("; test accuracy {v:.4}"))
                .unwrap_or_default()
        );
        return Ok(Done { summary, written });
    }
    write_json(&mut o, &a.out.join("tree.json"), &tree_file)?;
    crate::tree_chart::write_tree_chart(
        &mut o,
        &a.out.join("tree"),
        &tree_file,
        &format!(
            "DP tree of '{}' (noisy counts), eps = {}, {} neighbours",
            a.label,
            cfg.epsilon,
            a.neighbours.as_str()
        ),
    )?;
    let summary = format!(
        "{} tree, depth {}, {} leaves, score {}, {} neighbours, eps = {} ({} per \
         mechanism)",
        a.selection,
        a.depth,
        res.leaves,
        toml_name(&cfg.score),
        a.neighbours.as_str(),
        cfg.epsilon,
        res.epsilon_per_mechanism
    );
    let diagnostics = a.diagnostics.then(|| {
        (
            json!({"test": a.test, "test_accuracy": test_acc}),
            test_acc
                .iter()
                .map(|v| format!("test accuracy {v:.4}"))
                .collect(),
        )
    });
    let summary = charged.summary(summary);
    finish_split(o, &a.out, report, summary, diagnostics)
}

/// Runs `kinsey tree`.
pub(crate) fn run(a: Args) -> Result<()> {
    report_done(run_tree(&a)?)
}
