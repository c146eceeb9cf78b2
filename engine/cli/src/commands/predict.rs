//! `kinsey predict`: apply a published model to a data set.

use super::common::*;
use kinsey_core::{Error, Result};
use kinsey_data::output::Outputs;
use kinsey_data::parquet_io::ColumnSpec;
use kinsey_data::{LabelEncoding, RowTransform};
use kinsey_learn::pipeline::ModelFile;
use std::path::PathBuf;

/// Apply a published model to a data set; prints the error rate if labels are present.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[arg(long)]
    model: PathBuf,
    #[arg(long)]
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
    // 2^20 weights (the dimension limit) in JSON are about 26 MB.
    const MAX_MODEL_FILE: u64 = 64 << 20;
    let len = std::fs::metadata(&model)
        .map_err(|e| Error::io(&model, e))?
        .len();
    if len > MAX_MODEL_FILE {
        return Err(Error::format(
            &model,
            format!("{len} bytes; a model file is at most {MAX_MODEL_FILE}"),
        ));
    }
    let text = std::fs::read_to_string(&model).map_err(|e| Error::io(&model, e))?;
    let m = ModelFile::parse(&model, &text)?;
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
    if ds.d != m.w.len() {
        return Err(Error::Schema {
            path: input.clone(),
            column: "<features>".into(),
            msg: format!(
                "the model has {} weights but the input has {} features",
                m.w.len(),
                ds.d
            ),
        });
    }
    if m.row_transform != RowTransform::None {
        m.row_transform.apply(&mut ds)?;
    }
    let err = kinsey_learn::logreg::error_rate(&m.w, &ds.x, &ds.y, ds.d);
    println!("rows: {}  error rate: {err:.4}", ds.n());
    if let Some(out) = out {
        let mut csv = String::from("row,score,prediction\n");
        for i in 0..ds.n() {
            let z: f64 = ds.row(i).iter().zip(&m.w).map(|(&a, b)| a as f64 * b).sum();
            csv.push_str(&format!("{i},{z},{}\n", if z > 0.0 { 1 } else { -1 }));
        }
        let mut o = Outputs::new();
        o.write(&out, csv.as_bytes())?;
        o.commit()?;
        println!("wrote {}", out.display());
    }
    Ok(())
}
