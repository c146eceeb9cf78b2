//! Parties whose rows are on a cluster (`kinsey.spark`): the executors' side
//! ([`GroupWorker`], run by `mapInArrow` on each partition) and the driver's
//! ([`PyRemoteParty`], whose passes call back into Python to run a Spark job).

use crate::{KinseyError, py_err};
use arrow::array::{Array, AsArray, BinaryBuilder, Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::ffi_stream::RecordBatchStreamReader;
use arrow_pyarrow::{FromPyArrow, ToPyArrow};
use kinsey::Error;
use kinsey::classifier::RemoteParty;
use pyo3::prelude::*;
use std::path::Path;
use std::sync::Arc;

/// One partition's work on an executor: `add` its rows (a run of consecutive rows, the
/// first's position given), then `finish` for each complete group's payload, as a
/// pyarrow RecordBatch of `group` (int64) and `payload` (binary).
#[pyclass(module = "kinsey._kinsey")]
pub(crate) struct GroupWorker(Option<Worker>);

/// A classifier party's worker, or a table's (the task says which).
enum Worker {
    Rows(kinsey::classifier::GroupWorker),
    Columns(kinsey::cluster::ColumnWorker),
}

#[pymethods]
impl GroupWorker {
    #[new]
    fn new(task: &str) -> PyResult<Self> {
        let is_party = serde_json::from_str::<serde_json::Value>(task)
            .map_err(|e| crate::param("task", format!("not JSON: {e}")))?
            .get("plan")
            .is_some();
        let w = if is_party {
            kinsey::classifier::GroupWorker::new(task).map(Worker::Rows)
        } else {
            kinsey::cluster::ColumnWorker::new(task).map(Worker::Columns)
        };
        w.map(|w| Self(Some(w))).map_err(py_err)
    }

    /// Rows `first`, `first + 1`, ... of the party, as a pyarrow RecordBatch.
    fn add(&mut self, batch: &Bound<'_, PyAny>, first: u64) -> PyResult<()> {
        let batch = RecordBatch::from_pyarrow_bound(batch)?;
        let w = self
            .0
            .as_mut()
            .ok_or_else(|| KinseyError::new_err("the worker has finished"))?;
        match w {
            Worker::Rows(w) => w.add(&batch, first),
            Worker::Columns(w) => w.add(&batch, first),
        }
        .map_err(py_err)
    }

    /// Every complete group's payload.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let w = self
            .0
            .take()
            .ok_or_else(|| KinseyError::new_err("the worker has finished"))?;
        let out = match w {
            Worker::Rows(w) => w.finish(),
            Worker::Columns(w) => w.finish(),
        }
        .map_err(py_err)?;
        let groups = Int64Array::from_iter_values(out.iter().map(|(g, _)| *g as i64));
        let mut payloads = BinaryBuilder::new();
        for (_, p) in &out {
            payloads.append_value(p);
        }
        let schema = Schema::new(vec![
            Field::new("group", DataType::Int64, false),
            Field::new("payload", DataType::Binary, false),
        ]);
        let batch = RecordBatch::try_new(
            Arc::new(schema),
            vec![Arc::new(groups), Arc::new(payloads.finish())],
        )
        .map_err(|e| KinseyError::new_err(e.to_string()))?;
        batch.to_pyarrow(py)
    }
}

/// A party on a cluster as the driver sees it: its name, schema and rows, and a Python
/// object whose `run(task)` runs a job over every partition and returns a table of
/// `group` and `payload`, and whose `describe()` says where.
pub(crate) struct PyRemoteParty {
    name: String,
    schema: Schema,
    rows: usize,
    driver: Py<PyAny>,
    description: String,
    /// The Python exception a job raised (a Spark failure, turned into a `KinseyError` by
    /// `kinsey.spark`, or a `KeyboardInterrupt`): raised as it is when the call returns.
    pub(crate) failure: Failure,
}

/// Where a party's driver keeps the Python exception that stopped a job.
pub(crate) type Failure = Arc<std::sync::Mutex<Option<PyErr>>>;

/// The first failure kept by any of `failures`, if any.
pub(crate) fn first_failure(failures: &[Failure]) -> Option<PyErr> {
    failures
        .iter()
        .find_map(|f| f.lock().ok().and_then(|mut g| g.take()))
}

impl PyRemoteParty {
    /// The party behind a `kinsey.spark` party object (`name`, `schema` as pyarrow,
    /// `rows`, `run`, `describe`).
    pub(crate) fn of(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        let schema = Schema::from_pyarrow_bound(&obj.getattr("schema")?)?;
        Ok(Self {
            name: obj.getattr("name")?.extract()?,
            schema,
            rows: obj.getattr("rows")?.extract()?,
            driver: obj.clone().unbind(),
            description: obj.call_method0("describe")?.extract()?,
            failure: Failure::default(),
        })
    }

    fn collect(&self, table: &Bound<'_, PyAny>) -> kinsey::Result<Vec<(u64, Vec<u8>)>> {
        let bad = |what: String| Error::format(Path::new(&self.name), what);
        let reader = RecordBatchStreamReader::from_pyarrow_bound(table)
            .map_err(|e| bad(format!("a job's result is not an Arrow table: {e}")))?;
        let mut out = Vec::new();
        for batch in reader {
            let batch = batch.map_err(|e| bad(e.to_string()))?;
            let (Some(g), Some(p)) = (
                batch.column_by_name("group"),
                batch.column_by_name("payload"),
            ) else {
                return Err(bad(
                    "a job's result lacks its group or payload column".into()
                ));
            };
            let g = g
                .as_primitive_opt::<arrow::datatypes::Int64Type>()
                .ok_or_else(|| bad("a job's group column is not int64".into()))?;
            let payloads: Vec<&[u8]> = match p.data_type() {
                DataType::Binary => p
                    .as_binary::<i32>()
                    .iter()
                    .map(|v| v.unwrap_or(&[]))
                    .collect(),
                DataType::LargeBinary => p
                    .as_binary::<i64>()
                    .iter()
                    .map(|v| v.unwrap_or(&[]))
                    .collect(),
                other => {
                    return Err(bad(format!(
                        "a job's payload column is {other}, not binary"
                    )));
                }
            };
            if g.null_count() > 0 {
                return Err(bad("a job's group column has nulls".into()));
            }
            for (gi, pi) in g.values().iter().zip(payloads) {
                out.push((*gi as u64, pi.to_vec()));
            }
        }
        Ok(out)
    }
}

impl RemoteParty for PyRemoteParty {
    fn name(&self) -> &str {
        &self.name
    }

    fn schema(&self) -> &Schema {
        &self.schema
    }

    fn rows(&self) -> usize {
        self.rows
    }

    fn run(&self, task: &str) -> kinsey::Result<Vec<(u64, Vec<u8>)>> {
        Python::attach(|py| {
            let table = match self.driver.bind(py).call_method1("run", (task,)) {
                Ok(t) => t,
                Err(e) => {
                    let msg = format!("{}: a job on the cluster failed: {e}", self.name);
                    if let Ok(mut slot) = self.failure.lock() {
                        slot.get_or_insert(e);
                    }
                    return Err(Error::format(Path::new(&self.name), msg));
                }
            };
            self.collect(&table)
        })
    }

    fn describe(&self) -> String {
        self.description.clone()
    }
}

/// What a network party on a cluster returns: its published model's path, its NOT
/// PRIVATE report's path (when asked for), and the bytes and messages it sent.
type PartyOutcome = (String, Option<String>, usize, usize);

/// Run one party of a network session (`kinsey party`'s config file) whose rows are on a
/// cluster: its fit runs there, its noise, tag and protocol messages here.
#[pyfunction]
#[pyo3(signature = (party, *, config, label=None))]
pub(crate) fn remote_party(
    py: Python<'_>,
    party: &Bound<'_, PyAny>,
    config: std::path::PathBuf,
    label: Option<String>,
) -> PyResult<PartyOutcome> {
    use kinsey::network::{Role, config::ParticipantConfig};
    let cfg = ParticipantConfig::load(&config).map_err(py_err)?;
    let data = cfg.party_data().map_err(py_err)?;
    let participant = cfg.participant().map_err(py_err)?;
    if let Some(l) = label
        && l != participant.job.label
    {
        return Err(crate::param(
            "label",
            format!(
                "'{l}' is not the session's label column '{}' ({})",
                participant.job.label,
                config.display()
            ),
        ));
    }
    let remote = PyRemoteParty::of(party)?;
    let failure = remote.failure.clone();
    let remote: Arc<dyn RemoteParty> = Arc::new(remote);
    let done = crate::detached(py, move || {
        let joined = participant.join(Role::Party)?;
        let o = joined.run_remote_party(remote, &data, &|_| {})?;
        Ok((
            o.model.display().to_string(),
            o.diagnostics.map(|d| d.display().to_string()),
            o.bytes_sent,
            o.messages_sent,
        ))
    });
    done.map_err(|e| first_failure(&[failure]).unwrap_or(e))
}
