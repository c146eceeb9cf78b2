//! `kinsey predict`: apply a published model to a data set: the aggregate classifier
//! (`model.json` of `train` and `demo`), the decision tree (`tree.json`), the SuLQ perceptron
//! and the SuLQ k-means centres (`model.json` of `sulq perceptron` / `sulq kmeans`).

use super::common::*;
use kinsey_core::{Error, Result};
use kinsey_data::LabelEncoding;
use kinsey_data::memory::ColumnSource;
use kinsey_data::output::Outputs;
use kinsey_data::parquet_io::ColumnSpec;
use kinsey_learn::pipeline::ModelFile;
use kinsey_stats::apply::{Predictions, Published};
use std::path::{Path, PathBuf};

/// Apply a published model to a data set; prints the error rate if labels are present.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The model file: model.json of train, demo, sulq perceptron or sulq kmeans, or
    /// tree.json of tree.
    #[arg(long)]
    model: PathBuf,
    /// Rows to score: Parquet or CSV (LIBSVM text with --dim, for the classifier).
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
    let text = ModelFile::read_text(&a.model)?;
    // A file that is not JSON (or holds a number JSON cannot) gets the classifier's
    // reader's message; otherwise the kind chooses the reader.
    let kind = serde_json::from_str::<serde_json::Value>(&text)
        .map(|v| v.get("kind").and_then(|k| k.as_str()).map(String::from));
    let (table, summary) = match kind {
        Err(_) => classifier(&a, &ModelFile::parse(&a.model, &text)?)?,
        Ok(Some(k)) if k == ModelFile::KIND => classifier(&a, &ModelFile::parse(&a.model, &text)?)?,
        Ok(_) => toolbox(&a, &Published::parse(&a.model, &text)?)?,
    };
    println!("{summary}");
    if let Some(out) = &a.out {
        let mut o = Outputs::new();
        o.write(out, &table)?;
        o.commit()?;
        println!("wrote {}", out.display());
    }
    Ok(())
}

/// The `--id` column's values, one per row, when asked for.
fn ids(a: &Args, rows: usize) -> Result<Option<Vec<String>>> {
    let Some(id) = &a.id else {
        return Ok(None);
    };
    if a.dim.is_some() {
        return Err(Error::param(
            "id",
            "LIBSVM rows have no named columns: give a Parquet or CSV input for --id",
        ));
    }
    let v = a.input.as_path().categorical(id)?;
    if v.len() != rows {
        return Err(Error::Schema {
            path: a.input.clone(),
            column: id.clone(),
            msg: format!("{} values for {rows} rows", v.len()),
        });
    }
    Ok(Some(v))
}

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The aggregate classifier: score `x . w`, probability of +1 `1 / (1 + e^-score)`.
fn classifier(a: &Args, m: &ModelFile) -> Result<(Vec<u8>, String)> {
    let spec = ColumnSpec {
        label: m.label.clone(),
        features: if a.dim.is_some() {
            Vec::new()
        } else {
            m.input_features().to_vec()
        },
        labels: LabelEncoding::PlusMinusOne,
    };
    let mut ds = load(&a.input, &spec, a.dim)?;
    m.prepare(&mut ds)?;
    let err = kinsey_learn::logreg::error_rate(&m.w, &ds.x, &ds.y, ds.d);
    let scores = m.scores(&ds);
    let ids = ids(a, scores.len())?;
    let mut csv = String::from(if ids.is_some() {
        "row,id,score,probability,prediction\n"
    } else {
        "row,score,probability,prediction\n"
    });
    for (i, z) in scores.iter().enumerate() {
        let id = ids.as_ref().map(|v| format!("{},", field(&v[i])));
        let p = 1.0 / (1.0 + (-z).exp());
        csv.push_str(&format!(
            "{i},{}{z},{p},{}\n",
            id.unwrap_or_default(),
            if *z > 0.0 { 1 } else { -1 }
        ));
    }
    let summary = format!(
        "aggregate classifier{}, {}\nrows: {}  error rate: {err:.4}",
        m.intercept
            .map(|c| format!(" with an intercept (constant {c})"))
            .unwrap_or_default(),
        features_line(m.input_features()),
        ds.n()
    );
    Ok((csv.into_bytes(), summary))
}

/// A toolbox model: the tree, the perceptron or k-means.
fn toolbox(a: &Args, model: &Published) -> Result<(Vec<u8>, String)> {
    if a.dim.is_some() {
        return Err(Error::param(
            "dim",
            "only the aggregate classifier reads LIBSVM; give this model a Parquet or CSV input",
        ));
    }
    let p = model.predict(a.input.as_path())?;
    let n = p.predicted.len();
    let ids = ids(a, n)?;
    let mut header = vec!["row".to_string()];
    header.extend(ids.as_ref().map(|_| "id".to_string()));
    header.extend(p.score.as_ref().map(|(name, _)| name.to_string()));
    if let Some((names, _)) = &p.probabilities {
        header.extend(names.iter().map(|c| format!("p_{c}")));
    }
    header.push(p.what.to_string());
    let mut csv = header.join(",") + "\n";
    for i in 0..n {
        let mut row = vec![i.to_string()];
        row.extend(ids.as_ref().map(|v| field(&v[i])));
        row.extend(p.score.as_ref().map(|(_, s)| s[i].to_string()));
        if let Some((_, probs)) = &p.probabilities {
            row.extend(probs[i].iter().map(|x| x.to_string()));
        }
        row.push(field(&p.predicted[i]));
        csv.push_str(&(row.join(",") + "\n"));
    }
    let (name, accuracy) = match model {
        Published::Tree(t) => ("decision tree", error_rate(&a.input, &t.label, &p)?),
        Published::Perceptron(_) => ("SuLQ perceptron", None),
        Published::Kmeans(_) => ("SuLQ k-means", None),
    };
    let mut summary = format!("{name}, {}\nrows: {n}", features_line(&p.features));
    if let Some(e) = accuracy {
        summary.push_str(&format!("  error rate: {e:.4}"));
    }
    Ok((csv.into_bytes(), summary))
}

/// The error rate against the label column, when the input has it.
fn error_rate(input: &Path, label: &str, p: &Predictions) -> Result<Option<f64>> {
    if !input.numeric_columns()?.iter().any(|c| c == label) {
        return Ok(None);
    }
    let y = input.numeric(label)?;
    let wrong = y
        .iter()
        .zip(&p.predicted)
        .filter(|(v, pred)| pred.parse::<f64>().ok() != Some(**v))
        .count();
    Ok(Some(wrong as f64 / y.len().max(1) as f64))
}
