//! `kinsey._kinsey`, the compiled half of the Python package: conversions between Python
//! (Arrow tables through the PyCapsule interface, numbers, strings) and the `kinsey`
//! facade, nothing else. Releases come back as their JSON reports (the bytes the CLI
//! writes) and estimates as Arrow arrays; `kinsey/__init__.py` shapes them into the
//! Python API.
//!
//! Tables arrive through `__arrow_c_stream__` (pyarrow Tables and RecordBatchReaders,
//! Polars DataFrames, anything that speaks the Arrow C stream interface): the record
//! batches wrap the producer's buffers, no column is copied on the way in. Every long call
//! runs on a worker thread with the GIL released; the calling thread wakes ten times a
//! second to let Python's signal handlers run, so Ctrl-C raises `KeyboardInterrupt` at
//! once (the worker's result, when it comes, is dropped; these calls write no file).

use arrow::array::{Array, ArrayData, AsArray, Float64Array, RecordBatchReader};
use arrow::datatypes::{DataType, Float64Type};
use arrow::ffi_stream::RecordBatchStreamReader;
use arrow_pyarrow::{FromPyArrow, ToPyArrow};
use kinsey::classifier::{
    Backend, Job, ModelFile, NoiseKind, SensitivityDerivation, Trained, parse_bytes,
};
use kinsey::data::{
    ArrowTable, ColumnSpec, LabelEncoding, RowTransform, dataset_of_batches, read_parquet,
};
use kinsey::guarantee::Released;
use kinsey::ledger::Ledger;
use kinsey::stats::{Bound as SumBound, DecayedSum, Histogram};
use kinsey::{DevicePref, Error};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

mod remote;

create_exception!(
    _kinsey,
    KinseyError,
    PyValueError,
    "Every error kinsey raises: a bad parameter, table, column or value, or a failed \
     participant or stage, with the CLI's message."
);

create_exception!(
    _kinsey,
    ParameterError,
    KinseyError,
    "A parameter out of range, missing or contradicting another (the CLI's exit code 2)."
);
create_exception!(
    _kinsey,
    InputError,
    KinseyError,
    "The data: a malformed file, a missing or mistyped column, an unusable value; the \
     message names the file, column and row (exit code 3)."
);
create_exception!(
    _kinsey,
    BudgetExhausted,
    KinseyError,
    "The ledger's budget for the data set would be exceeded; nothing was released (exit \
     code 4)."
);
create_exception!(
    _kinsey,
    PrivacyRefused,
    KinseyError,
    "Refused for privacy: two parties without consent, a ledger whose integrity does not \
     check (exit code 5)."
);
create_exception!(
    _kinsey,
    BackendError,
    KinseyError,
    "A crypto backend, the secure protocol, its transport or a compute device failed; the \
     message names the participant and stage, or the device (exit code 6)."
);
create_exception!(
    _kinsey,
    NumericalError,
    KinseyError,
    "A numerical procedure did not reach its target (exit code 7)."
);
create_exception!(
    _kinsey,
    FileError,
    KinseyError,
    "A file that cannot be opened, read or written (exit code 8)."
);

/// A kinsey error as the Python exception of its kind (`docs/errors.md`), with the CLI's
/// message.
fn py_err(e: Error) -> PyErr {
    use kinsey::ErrorKind as K;
    let msg = e.to_string();
    match e.kind() {
        K::Parameter => ParameterError::new_err(msg),
        K::Input => InputError::new_err(msg),
        K::BudgetExhausted => BudgetExhausted::new_err(msg),
        K::PrivacyRefused => PrivacyRefused::new_err(msg),
        K::Backend => BackendError::new_err(msg),
        K::Numerical => NumericalError::new_err(msg),
        K::Io => FileError::new_err(msg),
        _ => KinseyError::new_err(msg),
    }
}

/// A parameter error (`name`: the Python argument).
pub(crate) fn param(name: &str, msg: impl Into<String>) -> PyErr {
    py_err(Error::param(name, msg.into()))
}

/// Run `f` on a worker thread with the GIL released, waking to run Python's signal
/// handlers: Ctrl-C raises `KeyboardInterrupt` here without waiting for `f`.
pub(crate) fn detached<T: Send + 'static>(
    py: Python<'_>,
    f: impl FnOnce() -> kinsey::Result<T> + Send + 'static,
) -> PyResult<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("kinsey-call".into())
        .spawn(move || {
            let _ = tx.send(f());
        })
        .map_err(|e| KinseyError::new_err(format!("could not start the worker thread: {e}")))?;
    let mut rx = rx;
    loop {
        let (got, back) = py.detach(move || (rx.recv_timeout(Duration::from_millis(100)), rx));
        rx = back;
        match got {
            Ok(result) => return result.map_err(py_err),
            Err(mpsc::RecvTimeoutError::Timeout) => py.check_signals()?,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(KinseyError::new_err(
                    "the computation stopped without a result (an internal error: please report it)",
                ));
            }
        }
    }
}

/// A `kinsey.Ledger` as the Python side passes it: its path, the total budget of a data set
/// it has not seen, its key file and the data set's name.
type LedgerArgs = (PathBuf, Option<(f64, f64)>, Option<PathBuf>, Option<String>);

/// The facade's ledger of a call's `ledger` keyword.
fn ledger_of(args: Option<LedgerArgs>) -> PyResult<Option<Ledger>> {
    let Some((path, total, key, dataset)) = args else {
        return Ok(None);
    };
    let mut l = Ledger::open(path).map_err(py_err)?;
    if let Some(k) = key {
        l = l.key(k).map_err(py_err)?;
    }
    if let Some((e, d)) = total {
        l = l.total(e, d).map_err(py_err)?;
    }
    if let Some(n) = dataset {
        l = l.dataset(&n).map_err(py_err)?;
    }
    Ok(Some(l))
}

/// Charge a release from `src` to the ledger, if any, before its noise is drawn.
fn charge(
    ledger: &Option<Ledger>,
    src: &Source,
    command: &str,
    budget: (f64, f64),
) -> kinsey::Result<()> {
    match (ledger, src) {
        (None, _) => Ok(()),
        (Some(l), Source::File(p)) => l.charge_file(p, command, budget).map(drop),
        (Some(l), Source::Table(t)) => l.charge_table(t, command, budget).map(drop),
    }
}

/// The ledger's entries, checked against its key (JSON list).
#[pyfunction]
fn ledger_entries(ledger: LedgerArgs) -> PyResult<String> {
    let l = ledger_of(Some(ledger))?.ok_or_else(|| param("ledger", "no ledger"))?;
    json(&l.entries().map_err(py_err)?)
}

/// Create an empty ledger and its key.
#[pyfunction]
fn ledger_init(ledger: LedgerArgs) -> PyResult<()> {
    let l = ledger_of(Some(ledger))?.ok_or_else(|| param("ledger", "no ledger"))?;
    l.init().map_err(py_err)
}

/// An Arrow C stream (`__arrow_c_stream__`) and the name errors give it.
fn stream(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<(String, RecordBatchStreamReader)> {
    if !obj.hasattr("__arrow_c_stream__")? {
        return Err(py_err(Error::format(
            Path::new(name),
            format!(
                "a {} is not an Arrow table (pass a pyarrow Table or RecordBatchReader, a Polars \
                 or pandas DataFrame, or any object with __arrow_c_stream__)",
                obj.get_type().name()?
            ),
        )));
    }
    Ok((
        name.to_string(),
        RecordBatchStreamReader::from_pyarrow_bound(obj)?,
    ))
}

/// A table through the Arrow C stream interface, named `name` in errors and reports. The
/// batches are read (not copied) while the GIL is held: a producer may need it.
fn table(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<ArrowTable> {
    let (_, reader) = stream(obj, name)?;
    let schema = reader.schema();
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| py_err(Error::format(Path::new(name), e.to_string())))?;
    ArrowTable::new(name, schema, batches).map_err(py_err)
}

/// A party: a Parquet file or directory (read as `kinsey train` reads it), or a stream.
enum Party {
    File(PathBuf),
    Stream((String, RecordBatchStreamReader)),
}

/// A table, or a path to a CSV or Parquet file (the CLI's input, read the CLI's way).
enum Source {
    Table(ArrowTable),
    File(PathBuf),
}

/// A statistic's input: a [`Source`], or a table on a cluster (`kinsey.spark`).
enum StatSource {
    Here(Source),
    Remote(remote::PyRemoteParty),
}

impl StatSource {
    fn of(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        if obj.hasattr("_kinsey_remote")? {
            return remote::PyRemoteParty::of(obj).map(StatSource::Remote);
        }
        source(obj, "<table>").map(StatSource::Here)
    }

    /// Where a table on a cluster keeps the Python exception a job raised.
    fn failure(&self) -> Option<remote::Failure> {
        match self {
            StatSource::Remote(r) => Some(r.failure.clone()),
            StatSource::Here(_) => None,
        }
    }
}

/// The error of a call over `failure`'s table: the Python exception a job raised, if any.
fn with_failure(e: PyErr, failure: Option<remote::Failure>) -> PyErr {
    failure
        .and_then(|f| remote::first_failure(&[f]))
        .unwrap_or(e)
}

fn source(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Source> {
    if let Ok(p) = obj.extract::<PathBuf>() {
        return Ok(Source::File(p));
    }
    table(obj, name).map(Source::Table)
}

/// A device preference by name.
fn device(name: &str, which: &str) -> PyResult<DevicePref> {
    name.parse::<DevicePref>()
        .map_err(|e| param(which, e.to_string()))
}

/// A serde enum by its TOML name (`l2`, `tight`, `zero_one`), the parameter named in errors.
fn named<T: serde::de::DeserializeOwned>(which: &str, value: &str, allowed: &str) -> PyResult<T> {
    serde_json::from_value(serde_json::Value::String(value.into()))
        .map_err(|_| param(which, format!("'{value}' is not one of {allowed}")))
}

fn json<T: serde::Serialize>(v: &T) -> PyResult<String> {
    serde_json::to_string(v).map_err(|e| KinseyError::new_err(format!("JSON: {e}")))
}

/// What `train` returns: the release, the model file, the NOT PRIVATE diagnostics (when
/// asked) and the guarantee, as JSON texts.
type Trainings = (String, String, Option<String>, String);

/// The trained classifier's release, model file, diagnostics and guarantee, as JSON texts.
#[pyfunction]
#[pyo3(signature = (parties, *, label, epsilon, lam, labels, row_transform, row_scale,
    features, backend, key_bits, aggregation, noise, calibration, device_name, seed,
    diagnostics, intercept, memory_limit, spill_dir, ledger=None, allow_two_parties=false))]
#[allow(clippy::too_many_arguments)]
fn train(
    py: Python<'_>,
    parties: Vec<Bound<'_, PyAny>>,
    label: String,
    epsilon: f64,
    lam: f64,
    labels: &str,
    row_transform: &str,
    row_scale: Option<f64>,
    features: Option<Vec<String>>,
    backend: &str,
    key_bits: u32,
    aggregation: &str,
    noise: &str,
    calibration: &str,
    device_name: &str,
    seed: Option<u64>,
    diagnostics: bool,
    intercept: Option<f64>,
    memory_limit: Option<String>,
    spill_dir: Option<PathBuf>,
    ledger: Option<LedgerArgs>,
    allow_two_parties: bool,
) -> PyResult<Trainings> {
    // Each party streams batch by batch into the engine's row-major buffer on the worker
    // (a producer that needs the GIL takes it): no party is held twice.
    // A path is read by the engine's Parquet reader, as `kinsey train` reads it.
    let remote = parties
        .iter()
        .map(|p| p.hasattr("_kinsey_remote"))
        .collect::<PyResult<Vec<bool>>>()?;
    let readers = if remote.iter().any(|&r| r) {
        Vec::new()
    } else {
        parties
            .iter()
            .enumerate()
            .map(|(i, t)| match t.extract::<PathBuf>() {
                Ok(path) => Ok(Party::File(path)),
                Err(_) => stream(t, &format!("<party {}>", i + 1)).map(Party::Stream),
            })
            .collect::<PyResult<Vec<_>>>()?
    };
    let spec = ColumnSpec {
        label: label.clone(),
        features: features.clone().unwrap_or_default(),
        labels: named::<LabelEncoding>("labels", labels, "plus_minus_one, zero_one")?,
    };
    let transform = match (row_transform, row_scale) {
        ("none", None) => RowTransform::None,
        ("clip", None) => RowTransform::Clip,
        ("scale", Some(c)) => RowTransform::Scale(c),
        ("scale", None) => return Err(param("row_scale", "row_transform='scale' needs row_scale")),
        ("none" | "clip", Some(_)) => {
            return Err(param(
                "row_scale",
                "row_scale is only for row_transform='scale'",
            ));
        }
        (other, _) => {
            return Err(param(
                "row_transform",
                format!("'{other}' is not one of none, clip, scale"),
            ));
        }
    };
    let backend = match (aggregation, backend) {
        ("plaintext", _) => Backend::plaintext_reference(),
        ("secure", "paillier") => Backend::paillier(key_bits),
        ("secure", "tfhe") => Backend::tfhe(),
        ("secure", "mock") => Backend::mock_insecure(),
        ("secure", other) => {
            return Err(param(
                "backend",
                format!("'{other}' is not one of paillier, tfhe, mock"),
            ));
        }
        (other, _) => {
            return Err(param(
                "aggregation",
                format!("'{other}' is not one of secure, plaintext"),
            ));
        }
    };
    let mut job = Job::builder()
        .label_name(&label)
        .epsilon(epsilon)
        .lambda(lam)
        .labels(spec.labels)
        .row_transform(transform)
        .noise(named::<NoiseKind>("noise", noise, "l2, laplace")?)
        .sensitivity(named::<SensitivityDerivation>(
            "calibration",
            calibration,
            "tight, paper",
        )?)
        .backend(backend)
        .device(device(device_name, "device")?);
    if let Some(f) = features {
        job = job.features(f);
    }
    if let Some(s) = seed {
        job = job.seed(s);
    }
    if let Some(c) = intercept {
        job = job.intercept(c);
    }
    if diagnostics {
        job = job.diagnostics();
    }
    if allow_two_parties {
        job = job.allow_two_parties();
    }
    if let Some(m) = memory_limit {
        job = job.memory_limit(parse_bytes(&m).map_err(|e| param("memory_limit", e))?);
    }
    if let Some(d) = spill_dir {
        job = job.spill_dir(d);
    }
    if let Some(l) = ledger_of(ledger)? {
        job = job.ledger(&l);
    }
    // Parties on clusters (`kinsey.spark`): every pass a job there, run from this call.
    if remote.iter().any(|&r| r) {
        if !remote.iter().all(|&r| r) {
            return Err(param(
                "parties",
                "parties on a cluster and parties here cannot be mixed in one call: run each \
                 as a network party (kinsey.spark.party and kinsey party) instead",
            ));
        }
        let parties = parties
            .iter()
            .map(remote::PyRemoteParty::of)
            .collect::<PyResult<Vec<_>>>()?;
        let failures: Vec<remote::Failure> = parties.iter().map(|p| p.failure.clone()).collect();
        let parties: Vec<Arc<dyn kinsey::classifier::RemoteParty>> = parties
            .into_iter()
            .map(|p| Arc::new(p) as Arc<dyn kinsey::classifier::RemoteParty>)
            .collect();
        let job = job.remote_parties(parties, &label);
        return match detached(py, move || job.build()?.run()) {
            Ok(trained) => outputs(&trained),
            Err(e) => Err(remote::first_failure(&failures).unwrap_or(e)),
        };
    }
    // Parties that are all paths are opened by their footers and read whole or party by
    // party within the memory limit, as `kinsey train` reads them.
    let paths: Option<Vec<PathBuf>> = readers
        .iter()
        .map(|p| match p {
            Party::File(path) => Some(path.clone()),
            Party::Stream(_) => None,
        })
        .collect();
    if let Some(paths) = paths {
        let job = job.parquet_parties(paths, &label);
        let trained = detached(py, move || job.build()?.run())?;
        return outputs(&trained);
    }
    let trained = detached(py, move || {
        let datasets = readers
            .into_iter()
            .map(|party| match party {
                Party::File(path) => read_parquet(&path, &spec),
                Party::Stream((name, reader)) => {
                    let schema = reader.schema();
                    let ds = dataset_of_batches(Path::new(&name), &schema, reader, &spec, 0)?;
                    ds.check_nonempty()?;
                    Ok(ds)
                }
            })
            .collect::<kinsey::Result<Vec<_>>>()?;
        job.parties(datasets).build()?.run()
    })?;
    outputs(&trained)
}

/// A trained job's release, model file, NOT PRIVATE diagnostics and guarantee, as JSON
/// texts.
fn outputs(trained: &Trained) -> PyResult<Trainings> {
    Ok((
        json(trained.release())?,
        json(&trained.model())?,
        trained
            .diagnostics()
            .map(|d| json(&kinsey::dp::release::NotPrivate::new(d)))
            .transpose()?,
        json(&trained.guarantee())?,
    ))
}

/// A model file's text checked field by field (`where_` names it in errors).
fn model_of(text: &str, where_: &str) -> PyResult<ModelFile> {
    ModelFile::parse(Path::new(where_), text).map_err(py_err)
}

/// The scores `x . w` of a table's rows, or of a Parquet file's (read as `kinsey predict`
/// reads it: a CSV path gets its advice), under a model (its features read by name, its
/// row transform and intercept applied), as a pyarrow float64 array.
#[pyfunction]
fn score<'py>(
    py: Python<'py>,
    model_json: &str,
    data: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let m = model_of(model_json, "<model>")?;
    let t = source(data, "<table>")?;
    let spec = ColumnSpec {
        label: String::new(),
        features: m.input_features().to_vec(),
        labels: LabelEncoding::PlusMinusOne,
    };
    let scores = detached(py, move || {
        let mut ds = match t {
            Source::Table(t) => t.dataset(&spec)?,
            Source::File(path) => read_parquet(&path, &spec)?,
        };
        m.prepare(&mut ds)?;
        Ok(m.scores(&ds))
    })?;
    Float64Array::from(scores).into_data().to_pyarrow(py)
}

/// A model file read from `path` and checked (as JSON). A tree's or a SuLQ model's file
/// is refused by name, with where it is applied.
#[pyfunction]
fn load_model(path: PathBuf) -> PyResult<String> {
    match kinsey::predict::PublishedModel::open(&path).map_err(py_err)? {
        kinsey::predict::PublishedModel::Classifier(m) => json(&m),
        kinsey::predict::PublishedModel::Toolbox(p) => Err(param(
            "path",
            format!(
                "{} is a {}, not the aggregate classifier's model.json that kinsey.Model \
                 loads; apply it with `kinsey predict --model {} --input DATA`",
                path.display(),
                p.what(),
                path.display()
            ),
        )),
    }
}

/// Write a model file to `path` as `kinsey train` writes `model.json`, all or nothing; an
/// existing file is replaced only when `overwrite`.
#[pyfunction]
#[pyo3(signature = (model_json, path, overwrite=false))]
fn save_model(model_json: &str, path: PathBuf, overwrite: bool) -> PyResult<()> {
    let m = model_of(model_json, "<model>")?;
    if !overwrite && path.exists() {
        return Err(param(
            "path",
            format!(
                "{} exists; pass overwrite=True to replace it, or choose another path",
                path.display()
            ),
        ));
    }
    kinsey::data::write_json_to(&path, &m, overwrite).map_err(py_err)
}

/// A histogram release's report (JSON).
#[pyfunction]
#[pyo3(signature = (data, *, column, bins, categories, where_, epsilon, neighbours, seed,
    ledger=None))]
#[allow(clippy::too_many_arguments)]
fn histogram(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    column: String,
    bins: Option<(f64, f64, usize)>,
    categories: Option<Vec<String>>,
    where_: Option<String>,
    epsilon: f64,
    neighbours: &str,
    seed: Option<u64>,
    ledger: Option<LedgerArgs>,
) -> PyResult<(String, String)> {
    let h = match (bins, categories) {
        (Some((lo, hi, n)), None) => Histogram::numeric(lo, hi, n).map_err(py_err)?,
        (None, Some(c)) => Histogram::categories(&c).map_err(py_err)?,
        (None, None) => Histogram::count(),
        (Some(_), Some(_)) => {
            return Err(param("bins", "give bins or categories, not both"));
        }
    };
    let mut h = h
        .epsilon(epsilon)
        .neighbours(neighbours.parse().map_err(py_err)?);
    if let Some(w) = &where_ {
        h = h.filter(w);
    }
    if let Some(s) = seed {
        h = h.seed(s);
    }
    if let Some(l) = ledger_of(ledger)? {
        h = h.ledger(&l);
    }
    let src = StatSource::of(data)?;
    let failure = src.failure();
    let report = detached(py, move || match src {
        StatSource::Here(Source::File(p)) => h.of_column(&p, &column),
        StatSource::Here(Source::Table(t)) => h.of_table(&t, &column),
        StatSource::Remote(r) => h.of_remote(&r, &column),
    })
    .map_err(|e| with_failure(e, failure))?;
    Ok((json(&report)?, json(&report.guarantee())?))
}

/// A DP sum, mean, variance or quantiles release of one bounded column: `kinsey stats`'s
/// `report.json` (JSON).
#[pyfunction]
#[pyo3(signature = (data, *, column, statistic, levels, bounds, epsilon, neighbours,
    candidates, seed, ledger=None))]
#[allow(clippy::too_many_arguments)]
fn summary(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    column: String,
    statistic: &str,
    levels: Vec<f64>,
    bounds: (f64, f64),
    epsilon: f64,
    neighbours: &str,
    candidates: usize,
    seed: Option<u64>,
    ledger: Option<LedgerArgs>,
) -> PyResult<(String, String)> {
    use kinsey::stats::Summary;
    let mut s = Summary::named(statistic, &levels)
        .map_err(py_err)?
        .bounds(bounds.0, bounds.1)
        .epsilon(epsilon)
        .neighbours(neighbours.parse().map_err(py_err)?)
        .candidates(candidates);
    if let Some(seed) = seed {
        s = s.seed(seed);
    }
    if let Some(l) = ledger_of(ledger)? {
        s = s.ledger(&l);
    }
    let src = StatSource::of(data)?;
    let failure = src.failure();
    let report = detached(py, move || {
        let out = match &src {
            StatSource::Here(Source::File(p)) => s.of_column(p, &column)?,
            StatSource::Here(Source::Table(t)) => s.of_table(t, &column)?,
            StatSource::Remote(r) => s.of_remote(r, &column)?,
        };
        Ok(out)
    })
    .map_err(|e| with_failure(e, failure))?;
    Ok((json(&report.report)?, json(&report.guarantee())?))
}

/// The f64 values of an Arrow array (`__arrow_c_array__`: pyarrow arrays, and numpy arrays
/// the Python side wraps without a copy); a float64 array without nulls is not copied.
fn values_of(obj: &Bound<'_, PyAny>) -> PyResult<Float64Array> {
    let data = ArrayData::from_pyarrow_bound(obj)?;
    let array = arrow::array::make_array(data);
    if array.null_count() > 0 {
        return Err(param("values", "null values (fill or drop them first)"));
    }
    let array = match array.data_type() {
        DataType::Float64 => array,
        t if t.is_numeric() => arrow::compute::cast(&array, &DataType::Float64)
            .map_err(|e| param("values", e.to_string()))?,
        t => return Err(param("values", format!("type {t}, expected numbers"))),
    };
    Ok(array.as_primitive::<Float64Type>().clone())
}

/// What `decay` returns: the report (JSON), column names, estimates (pyarrow arrays), the
/// advice when the stated error makes them say little, the guarantee (JSON) and each
/// estimate's stated std (pyarrow arrays, as the estimates).
type Decayed<'py> = (
    String,
    Vec<String>,
    Vec<Bound<'py, PyAny>>,
    Option<String>,
    String,
    Vec<Bound<'py, PyAny>>,
);

/// A decayed-sum release: its report (JSON), column names, estimates (pyarrow arrays), the
/// advice when the stated error makes them say little, and its guarantee.
#[pyfunction]
#[pyo3(signature = (data, *, column, model, epsilon, window, windows, alpha, c, beta, bound,
    seed, mechanism, arity, rho, delta, ledger=None))]
#[allow(clippy::too_many_arguments)]
fn decay<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    column: Option<String>,
    model: &str,
    epsilon: Option<f64>,
    window: Option<u64>,
    windows: Option<Vec<u64>>,
    alpha: Option<f64>,
    c: Option<f64>,
    beta: Option<f64>,
    bound: f64,
    seed: Option<u64>,
    mechanism: Option<String>,
    arity: Option<u32>,
    rho: Option<f64>,
    delta: Option<f64>,
    ledger: Option<LedgerArgs>,
) -> PyResult<Decayed<'py>> {
    let need = |v: Option<f64>, name: &str| {
        v.ok_or_else(|| param(name, format!("model '{model}' needs {name}")))
    };
    let mut b = match model {
        "window" => DecayedSum::window(
            window.ok_or_else(|| param("window", "model 'window' needs window"))?,
        ),
        "allwindow" => DecayedSum::all_windows(
            windows.ok_or_else(|| param("windows", "model 'allwindow' needs windows"))?,
        ),
        "exponential" => DecayedSum::exponential(need(alpha, "alpha")?),
        "polynomial" => DecayedSum::polynomial(need(c, "c")?),
        "running" => DecayedSum::running(),
        other => {
            return Err(param(
                "model",
                format!(
                    "'{other}' is not one of window, allwindow, exponential, polynomial, running"
                ),
            ));
        }
    }
    .bound(SumBound::clamp(bound).map_err(py_err)?);
    if let Some(e) = epsilon {
        b = b.epsilon(e);
    }
    if let Some(rho) = rho {
        b = b.zcdp(rho, delta);
    } else if delta.is_some() {
        return Err(param("delta", "delta states a zCDP release: give rho"));
    }
    if let Some(beta) = beta {
        b = b.beta(beta);
    }
    if let Some(s) = seed {
        b = b.seed(s);
    }
    if let Some(m) = &mechanism {
        b = b.mechanism(m);
    }
    if let Some(k) = arity {
        b = b.arity(k);
    }
    if let Some(l) = ledger_of(ledger)? {
        b = b.ledger(&l);
    }
    let out = if let Ok(path) = data.extract::<PathBuf>() {
        // A file of bits has one series: its column is named as the CLI names it.
        let bits = path.extension().is_some_and(|e| e == "txt");
        let column = match column {
            Some(c) => c,
            None if bits => "value".into(),
            None => return Err(param("column", "a file's series needs column")),
        };
        detached(py, move || b.over_file(&path, &column))?
    } else {
        if column.is_some() {
            return Err(param(
                "column",
                "column is for a file's series, not for values",
            ));
        }
        let values = values_of(data)?;
        detached(py, move || b.over_values(values.values()))?
    };
    let guarantee = json(&out.guarantee())?;
    let stds = out
        .stds
        .into_iter()
        .map(|v| Float64Array::from(v).into_data().to_pyarrow(py))
        .collect::<PyResult<Vec<_>>>()?;
    let arrays = out
        .values
        .into_iter()
        .map(|v| Float64Array::from(v).into_data().to_pyarrow(py))
        .collect::<PyResult<Vec<_>>>()?;
    Ok((
        json(&out.release)?,
        out.columns,
        arrays,
        out.advice,
        guarantee,
        stds,
    ))
}

/// A SuLQ release (`analysis`: kmeans or pca) of a table's or a file's columns, as
/// `kinsey sulq` writes its `release.json` (JSON).
#[pyfunction]
#[pyo3(signature = (data, *, analysis, columns, k, iterations, components, center, epsilon,
    delta, neighbours, calibration, clip, device_name, seed, ledger=None))]
#[allow(clippy::too_many_arguments)]
fn sulq(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    analysis: &str,
    columns: Vec<String>,
    k: usize,
    iterations: usize,
    components: usize,
    center: bool,
    epsilon: f64,
    delta: f64,
    neighbours: &str,
    calibration: &str,
    clip: bool,
    device_name: &str,
    seed: Option<u64>,
    ledger: Option<LedgerArgs>,
) -> PyResult<(String, String)> {
    use kinsey::sulq as q;
    let budget = q::Budget {
        epsilon,
        delta,
        neighbours: neighbours.parse().map_err(py_err)?,
        calibration: calibration
            .parse()
            .map_err(|e: Error| param("calibration", e.to_string()))?,
        seed,
        record_seed: false,
    };
    let device = device(device_name, "device")?;
    let analysis = analysis.to_string();
    let src = source(data, "<table>")?;
    let ledger = ledger_of(ledger)?;
    detached(py, move || {
        if analysis == "kmeans" {
            // Public parameters before the charge.
            q::check_kmeans(k, iterations)?;
        }
        if matches!(analysis.as_str(), "kmeans" | "pca") {
            let command = format!("sulq {analysis}");
            charge(&ledger, &src, &command, (budget.epsilon, budget.delta))?;
        }
        let input: &dyn kinsey::data::ColumnSource = match &src {
            Source::File(p) => p,
            Source::Table(t) => t,
        };
        let text =
            |v: serde_json::Result<String>| v.map_err(|e| Error::Numerical(format!("JSON: {e}")));
        match analysis.as_str() {
            "kmeans" => {
                let r = q::kmeans_release(input, &columns, clip, (k, iterations), &budget, device)?;
                Ok((
                    text(serde_json::to_string(&r))?,
                    text(serde_json::to_string(&r.guarantee()))?,
                ))
            }
            "pca" => {
                let r = q::pca_release(input, &columns, clip, (components, center), &budget)?;
                Ok((
                    text(serde_json::to_string(&r))?,
                    text(serde_json::to_string(&r.guarantee()))?,
                ))
            }
            other => Err(Error::param(
                "analysis",
                format!("'{other}' is not one of kmeans, pca"),
            )),
        }
    })
}

/// A DP decision tree of a table's or a file's columns: `kinsey tree`'s `report.json` and
/// `tree.json` (JSON). The non-private baseline (`selection = "none"`) is exact data, a
/// diagnostic, and is refused here.
#[pyfunction]
#[pyo3(signature = (data, *, label, classes, attributes, depth, selection, score, epsilon,
    neighbours, row_bound, seed, ledger=None))]
#[allow(clippy::too_many_arguments)]
fn tree(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    label: String,
    classes: Vec<f64>,
    attributes: Vec<String>,
    depth: usize,
    selection: String,
    score: String,
    epsilon: f64,
    neighbours: &str,
    row_bound: Option<usize>,
    seed: Option<u64>,
    ledger: Option<LedgerArgs>,
) -> PyResult<(String, String, String)> {
    if selection == "none" {
        return Err(param(
            "selection",
            "'none' trains the non-private baseline, which is no release (kinsey tree \
             --selection none writes it as a NOT PRIVATE diagnostic)",
        ));
    }
    let neighbours = neighbours.parse().map_err(py_err)?;
    let mut b = kinsey::stats::Tree::new(&label, neighbours)
        .classes(&classes)
        .attributes(&attributes)
        .depth(depth)
        .selection(&selection)
        .score(&score)
        .epsilon(epsilon);
    if let Some(r) = row_bound {
        b = b.row_bound(r);
    }
    if let Some(s) = seed {
        b = b.seed(s);
    }
    if let Some(l) = ledger_of(ledger)? {
        b = b.ledger(&l);
    }
    let src = source(data, "<table>")?;
    detached(py, move || {
        let out = match &src {
            Source::File(p) => b.of_file(p)?,
            Source::Table(t) => b.of_table(t)?,
        };
        let text =
            |v: serde_json::Result<String>| v.map_err(|e| Error::Numerical(format!("JSON: {e}")));
        Ok((
            text(serde_json::to_string(&out.outcome.report))?,
            text(serde_json::to_string(&out.tree_file))?,
            text(serde_json::to_string(&out.guarantee()))?,
        ))
    })
}

/// The address of the first value of each column in each record batch of a table, as the
/// engine sees it after the import: the producer's addresses when no column was copied on
/// the way in (what the tests check; primitive columns only, others give 0).
#[pyfunction]
fn _buffer_addresses(data: &Bound<'_, PyAny>) -> PyResult<Vec<Vec<usize>>> {
    let t = table(data, "<table>")?;
    Ok((0..t.schema().fields().len())
        .map(|c| {
            t.batches()
                .iter()
                .map(|b| {
                    let d = b.column(c).to_data();
                    match (
                        d.data_type().is_primitive(),
                        d.data_type().primitive_width(),
                    ) {
                        (true, Some(w)) => d
                            .buffers()
                            .first()
                            .map_or(0, |x| x.as_ptr() as usize + d.offset() * w),
                        _ => 0,
                    }
                })
                .collect()
        })
        .collect())
}

/// The crypto backends: (name, what it is and how secure).
#[pyfunction]
fn backends() -> Vec<(String, String)> {
    kinsey::classifier::describe_backends()
}

/// The compiled module.
#[pymodule]
fn _kinsey(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("KinseyError", m.py().get_type::<KinseyError>())?;
    m.add("ParameterError", m.py().get_type::<ParameterError>())?;
    m.add("InputError", m.py().get_type::<InputError>())?;
    m.add("BudgetExhausted", m.py().get_type::<BudgetExhausted>())?;
    m.add("PrivacyRefused", m.py().get_type::<PrivacyRefused>())?;
    m.add("BackendError", m.py().get_type::<BackendError>())?;
    m.add("NumericalError", m.py().get_type::<NumericalError>())?;
    m.add("FileError", m.py().get_type::<FileError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(train, m)?)?;
    m.add_class::<remote::GroupWorker>()?;
    m.add_function(wrap_pyfunction!(remote::remote_party, m)?)?;
    m.add_function(wrap_pyfunction!(score, m)?)?;
    m.add_function(wrap_pyfunction!(load_model, m)?)?;
    m.add_function(wrap_pyfunction!(save_model, m)?)?;
    m.add_function(wrap_pyfunction!(histogram, m)?)?;
    m.add_function(wrap_pyfunction!(decay, m)?)?;
    m.add_function(wrap_pyfunction!(backends, m)?)?;
    m.add_function(wrap_pyfunction!(sulq, m)?)?;
    m.add_function(wrap_pyfunction!(tree, m)?)?;
    m.add_function(wrap_pyfunction!(summary, m)?)?;
    m.add_function(wrap_pyfunction!(_buffer_addresses, m)?)?;
    m.add_function(wrap_pyfunction!(ledger_entries, m)?)?;
    m.add_function(wrap_pyfunction!(ledger_init, m)?)?;
    Ok(())
}
