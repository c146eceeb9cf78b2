//! `kinsey predict`: apply a published model to a data set.

use super::common::*;
use kinsey_core::Result;
use kinsey_data::LabelEncoding;
use kinsey_data::output::Outputs;
use kinsey_data::parquet_io::ColumnSpec;
use kinsey_learn::pipeline::ModelFile;
use std::path::PathBuf;

/// Apply a published model to a data set; prints the error rate if labels are present.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[arg(long)]
    /// The model file (model.json of kinsey train).
    model: PathBuf,
    #[arg(long)]
    /// Rows to score: Parquet, or LIBSVM text with --dim.
    input: PathBuf,
    /// CSV of (row, score, prediction).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Dimension, for LIBSVM input.
    #[arg(long)]
    dim: Option<usize>,
}

/// Runs `kinsey predict`.
pub(crate) fn run(a: Args) -> Result<()> {
    let Args {
        model,
        input,
        out,
        dim,
    } = a;
    let m = ModelFile::load(&model)?;
    let spec = ColumnSpec {
        label: m.label.clone(),
        features: if dim.is_some() {
            Vec::new()
        } else {
            m.features.clone()
        },
        labels: LabelEncoding::PlusMinusOne,
    };
    let mut ds = load(&input, &spec, dim)?;
    m.prepare(&mut ds)?;
    let err = kinsey_learn::logreg::error_rate(&m.w, &ds.x, &ds.y, ds.d);
    println!("rows: {}  error rate: {err:.4}", ds.n());
    if let Some(out) = out {
        let mut csv = String::from("row,score,prediction\n");
        for (i, z) in m.scores(&ds).into_iter().enumerate() {
            csv.push_str(&format!("{i},{z},{}\n", if z > 0.0 { 1 } else { -1 }));
        }
        let mut o = Outputs::new();
        o.write(&out, csv.as_bytes())?;
        o.commit()?;
        println!("wrote {}", out.display());
    }
    Ok(())
}
