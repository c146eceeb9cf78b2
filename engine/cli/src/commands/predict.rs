//! `kinsey predict`: apply a published model to a data set: the aggregate classifier
//! (`model.json` of `train` and `demo`), the decision tree (`tree.json`), the SuLQ perceptron
//! and the SuLQ k-means centres (`model.json` of `sulq perceptron` / `sulq kmeans`).

use super::common::features_line;
use kinsey::predict::PublishedModel;
use kinsey_core::Result;
use kinsey_data::output::Outputs;
use std::path::PathBuf;

/// Apply a published model to a data set; prints the error rate if labels are present.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The model file: model.json of train, demo, sulq perceptron or sulq kmeans, or
    /// tree.json of tree.
    #[arg(long)]
    model: PathBuf,
    /// Rows to score: Parquet; CSV for a tree's or a SuLQ model; LIBSVM text with --dim for
    /// the classifier (which reads no CSV: write it as Parquet first).
    #[arg(long)]
    input: PathBuf,
    /// CSV of each row's prediction: row, the --id column, then the model's score,
    /// probabilities and prediction.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Dimension, for LIBSVM input.
    #[arg(long)]
    dim: Option<usize>,
    /// A column copied into the output beside each row (an identifier; never a feature).
    #[arg(long)]
    id: Option<String>,
}

/// Runs `kinsey predict`.
pub(crate) fn run(a: Args) -> Result<()> {
    let model = PublishedModel::open(&a.model)?;
    let p = model.apply(&a.input, a.dim, a.id.as_deref())?;
    let mut summary = format!(
        "{}{}, {}\nrows: {}",
        p.model,
        p.intercept
            .map(|c| format!(" with an intercept (constant {c})"))
            .unwrap_or_default(),
        features_line(&p.features),
        p.rows
    );
    if let Some(e) = p.error_rate {
        summary.push_str(&format!("  error rate: {e:.4}"));
    }
    println!("{summary}");
    if let Some(out) = &a.out {
        let mut o = Outputs::new();
        o.write(out, &p.csv)?;
        o.commit()?;
        println!("wrote {}", out.display());
    } else {
        println!(
            "predictions not written: give --out FILE.csv for each row's score, probability \
             and prediction"
        );
    }
    Ok(())
}
