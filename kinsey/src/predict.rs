//! Apply a published model to a data set, as `kinsey predict` does: the aggregate
//! classifier (`model.json` of `train` and `demo`), the decision tree (`tree.json`), the
//! SuLQ perceptron and the SuLQ k-means centres. A model is public, so everything here is:
//! the predictions, and the error rate where the data has the model's label column.

use kinsey_core::{Error, Result};
use kinsey_data::memory::ColumnSource;
use kinsey_data::parquet_io::{ColumnSpec, read_parquet};
use kinsey_data::{Dataset, LabelEncoding};
use kinsey_learn::pipeline::ModelFile;
use kinsey_stats::apply::{Predictions, Published};
use std::path::Path;

/// A published model read from its file.
#[derive(Debug, Clone)]
pub enum PublishedModel {
    /// The aggregate classifier.
    Classifier(ModelFile),
    /// A tree, a perceptron or k-means centres.
    Toolbox(Published),
}

/// A model applied to a data set.
#[derive(Debug, Clone)]
pub struct Applied {
    /// What the model is: `aggregate classifier`, `decision tree`, `SuLQ perceptron`,
    /// `SuLQ k-means`.
    pub model: &'static str,
    /// The classifier's intercept constant, if it has one.
    pub intercept: Option<f64>,
    /// The input columns the model reads, in order.
    pub features: Vec<String>,
    /// Rows predicted.
    pub rows: usize,
    /// The fraction of rows predicted wrong, where the data has the model's label column.
    pub error_rate: Option<f64>,
    /// The predictions as CSV: `row`, `id` (when asked), the score or probabilities, the
    /// prediction.
    pub csv: Vec<u8>,
}

impl PublishedModel {
    /// Read a model file: its `kind` chooses the reader (a file that is not JSON gets the
    /// classifier reader's message).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = ModelFile::read_text(path)?;
        let kind = serde_json::from_str::<serde_json::Value>(&text)
            .map(|v| v.get("kind").and_then(|k| k.as_str()).map(String::from));
        Ok(match kind {
            Err(_) => Self::Classifier(ModelFile::parse(path, &text)?),
            Ok(Some(k)) if k == ModelFile::KIND => Self::Classifier(ModelFile::parse(path, &text)?),
            Ok(_) => Self::Toolbox(Published::parse(path, &text)?),
        })
    }

    /// Apply the model to `input` (Parquet; CSV for a tree or a SuLQ model; LIBSVM of
    /// dimension `dim` for the classifier), with the column `id` copied into each
    /// prediction's row when given.
    pub fn apply(&self, input: &Path, dim: Option<usize>, id: Option<&str>) -> Result<Applied> {
        match self {
            Self::Classifier(m) => classifier(m, input, dim, id),
            Self::Toolbox(p) => toolbox(p, input, dim, id),
        }
    }
}

/// The values of column `id` of `input`, one per row.
fn ids(
    input: &Path,
    dim: Option<usize>,
    id: Option<&str>,
    rows: usize,
) -> Result<Option<Vec<String>>> {
    let Some(id) = id else {
        return Ok(None);
    };
    if dim.is_some() {
        return Err(Error::param(
            "id",
            "LIBSVM rows have no named columns: give a Parquet or CSV input for --id",
        ));
    }
    let v = input.categorical(id)?;
    if v.len() != rows {
        return Err(Error::Schema {
            path: input.to_path_buf(),
            column: id.to_string(),
            msg: format!("{} values for {rows} rows", v.len()),
        });
    }
    Ok(Some(v))
}

/// A CSV field, quoted when it must be.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn classifier(
    m: &ModelFile,
    input: &Path,
    dim: Option<usize>,
    id: Option<&str>,
) -> Result<Applied> {
    let spec = ColumnSpec {
        label: m.label.clone(),
        features: if dim.is_some() {
            Vec::new()
        } else {
            m.input_features().to_vec()
        },
        labels: LabelEncoding::PlusMinusOne,
    };
    let mut ds: Dataset = match dim {
        Some(d) => kinsey_data::libsvm::read_libsvm(input, d, spec.labels)?,
        None => read_parquet(input, &spec)?,
    };
    m.prepare(&mut ds)?;
    let err = kinsey_learn::logreg::error_rate(&m.w, &ds.x, &ds.y, ds.d);
    let scores = m.scores(&ds);
    let ids = ids(input, dim, id, scores.len())?;
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
    Ok(Applied {
        model: "aggregate classifier",
        intercept: m.intercept,
        features: m.input_features().to_vec(),
        rows: ds.n(),
        error_rate: Some(err),
        csv: csv.into_bytes(),
    })
}

fn toolbox(
    model: &Published,
    input: &Path,
    dim: Option<usize>,
    id: Option<&str>,
) -> Result<Applied> {
    if dim.is_some() {
        return Err(Error::param(
            "dim",
            "only the aggregate classifier reads LIBSVM; give this model a Parquet or CSV input",
        ));
    }
    let p = model.predict(input)?;
    let n = p.predicted.len();
    let ids = ids(input, dim, id, n)?;
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
    let (name, error_rate) = match model {
        Published::Tree(t) => (model.what(), tree_error_rate(input, &t.label, &p)?),
        Published::Perceptron(_) | Published::Kmeans(_) => (model.what(), None),
    };
    Ok(Applied {
        model: name,
        intercept: None,
        features: p.features.clone(),
        rows: n,
        error_rate,
        csv: csv.into_bytes(),
    })
}

/// A tree's error rate on `input`, if it has the label column.
fn tree_error_rate(input: &Path, label: &str, p: &Predictions) -> Result<Option<f64>> {
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
