//! A remote party emulated in process: a table cut into partitions at arbitrary rows,
//! each partition's whole groups computed by its own [`GroupWorker`] and the groups that
//! straddle partitions gathered to one worker first, as `kinsey.spark` does on a cluster.

use super::*;
use crate::aggregate::{NoiseKind, PlaintextAggregator, PrivacySpec, SensitivityDerivation};
use crate::logreg::{Objective, SolverConfig};
use arrow::array::{ArrayRef, Float32Array, Float64Array, RecordBatch};
use arrow::datatypes::{DataType, Field};
use kinsey_core::Silent;
use kinsey_data::{RowTransform, synth};

struct Emulated {
    name: String,
    schema: Schema,
    batch: RecordBatch,
    /// Partition boundaries (row positions, increasing, from 0 to n).
    cuts: Vec<usize>,
    /// Rows per batch within a partition.
    batch_rows: usize,
}

impl Emulated {
    fn new(ds: &Dataset, cuts: Vec<usize>, batch_rows: usize) -> Self {
        let n = ds.n();
        let mut fields = vec![Field::new("label", DataType::Float64, false)];
        let mut cols: Vec<ArrayRef> = vec![Arc::new(Float64Array::from(
            ds.y.iter().map(|&v| v as f64).collect::<Vec<_>>(),
        ))];
        for (j, f) in ds.features.iter().enumerate() {
            fields.push(Field::new(f, DataType::Float32, false));
            let col: Vec<f32> = (0..n).map(|i| ds.x[i * ds.d + j]).collect();
            cols.push(Arc::new(Float32Array::from(col)));
        }
        let schema = Schema::new(fields);
        let batch = RecordBatch::try_new(Arc::new(schema.clone()), cols).expect("batch");
        Self {
            name: "emulated".into(),
            schema,
            batch,
            cuts,
            batch_rows,
        }
    }

    /// Feed rows `a..b` to `w` in batches.
    fn feed(&self, w: &mut GroupWorker, a: usize, b: usize) -> Result<()> {
        let mut r = a;
        while r < b {
            let e = (r + self.batch_rows).min(b);
            w.add(&self.batch.slice(r, e - r), r as u64)?;
            r = e;
        }
        Ok(())
    }
}

impl RemoteParty for Emulated {
    fn name(&self) -> &str {
        &self.name
    }
    fn schema(&self) -> &Schema {
        &self.schema
    }
    fn rows(&self) -> usize {
        self.batch.num_rows()
    }
    fn run(&self, task: &str) -> Result<Vec<(u64, Vec<u8>)>> {
        let n = self.rows();
        let g = GROUP_ROWS;
        let mut out = Vec::new();
        // Each partition's whole groups.
        for c in self.cuts.windows(2) {
            let (a, b) = (c[0], c[1]);
            let first = a.div_ceil(g) * g;
            let last = if b == n { n } else { b / g * g };
            let mut w = GroupWorker::new(task)?;
            if first < last {
                self.feed(&mut w, first, last)?;
            }
            out.extend(w.finish()?);
        }
        // Groups cut by a boundary: their rows to one worker, in order.
        let straddling: std::collections::BTreeSet<usize> = self.cuts[1..self.cuts.len() - 1]
            .iter()
            .filter(|&&c| c % g != 0)
            .map(|&c| c / g)
            .collect();
        let mut w = GroupWorker::new(task)?;
        for s in straddling {
            self.feed(&mut w, s * g, ((s + 1) * g).min(n))?;
        }
        out.extend(w.finish()?);
        out.reverse();
        Ok(out)
    }
    fn describe(&self) -> String {
        "emulated".into()
    }
}

fn spec(intercept: Option<f64>) -> JobSpec {
    JobSpec {
        objective: Objective::new(1e-3).expect("lambda"),
        solver: SolverConfig {
            hessian_rows: 4096,
            ..SolverConfig::default()
        },
        privacy: PrivacySpec {
            epsilon: 1.0,
            calibration: SensitivityDerivation::Tight,
            noise: NoiseKind::L2,
        },
        device: kinsey_kernels::DevicePref::Cpu,
        transform: RowTransform::Scale(0.5),
        intercept,
        aggregation: Arc::new(PlaintextAggregator),
        allow_two_parties: false,
    }
}

/// Three parties cut into partitions at rows that do and do not fall on group
/// boundaries (and partitions shorter than a group) publish the release one machine
/// publishes from the same rows under one seed, byte for byte; the tags agree, so the
/// digest is the data's, not the partitioning's.
#[test]
fn a_partitioned_party_publishes_the_local_release() {
    let sizes = [20_001usize, 3 * GROUP_ROWS, 9_000];
    let data: Vec<Dataset> = sizes
        .iter()
        .enumerate()
        .map(|(j, &n)| synth::generate(n, 4, 4.0, 11, j as u64 + 1, "p".into()))
        .collect();
    let cols = ColumnSpec::default();
    for intercept in [None, Some(0.5)] {
        let spec = spec(intercept);
        let keys = NoiseKeys::new(Some(9), false, "job".into());
        let local = pipeline::run(
            pipeline::RunInput {
                command: "train",
                parties: data.clone(),
                test: None,
                ingest_s: 0.0,
            },
            &spec,
            &keys,
            false,
            &Silent,
        )
        .expect("local");
        let cuttings: [&dyn Fn(usize) -> Vec<usize>; 3] = [
            &|n| vec![0, n],
            &|n| vec![0, 100, 4_100, 4_101, 9_999, n],
            &|n| (0..n).step_by(3_333).chain([n]).collect(),
        ];
        for (c, cut) in cuttings.iter().enumerate() {
            let parties: Vec<Arc<dyn RemoteParty>> = data
                .iter()
                .map(|ds| Arc::new(Emulated::new(ds, cut(ds.n()), 1_000)) as Arc<dyn RemoteParty>)
                .collect();
            let remote = run(
                RemoteInput {
                    command: "train",
                    parties,
                    columns: cols.clone(),
                    test: None,
                },
                &spec,
                &keys,
                false,
                &Silent,
            )
            .expect("remote");
            assert_eq!(
                serde_json::to_string(&remote.release).expect("json"),
                serde_json::to_string(&local.release).expect("json"),
                "cutting {c}, intercept {intercept:?}"
            );
        }
    }
}

/// A partition that hands a group's rows out of order, or not all of them, is refused,
/// naming the row; a cluster that returns a group twice or misses one is refused.
#[test]
fn out_of_place_rows_and_missing_groups_are_refused() {
    let ds = synth::generate(2 * GROUP_ROWS + 10, 3, 4.0, 1, 1, "p".into());
    let e = Emulated::new(&ds, vec![0, ds.n()], 500);
    let spec = spec(None);
    let plan = plan(&e, &ColumnSpec::default(), &spec).expect("plan");
    let task = serde_json::to_string(&Task {
        plan: plan.clone(),
        work: Work::Misclassified { w: vec![0.0; 3] },
    })
    .expect("json");
    let mut w = GroupWorker::new(&task).expect("worker");
    let err = w
        .add(&e.batch.slice(5, 10), 5)
        .expect_err("mid-group start");
    assert!(err.to_string().contains("row 5"), "{err}");
    let mut w = GroupWorker::new(&task).expect("worker");
    w.add(&e.batch.slice(0, 10), 0).expect("start");
    assert!(w.finish().is_err(), "an open group at the end");
    struct Twice(Emulated);
    impl RemoteParty for Twice {
        fn name(&self) -> &str {
            self.0.name()
        }
        fn schema(&self) -> &Schema {
            self.0.schema()
        }
        fn rows(&self) -> usize {
            self.0.rows()
        }
        fn run(&self, task: &str) -> Result<Vec<(u64, Vec<u8>)>> {
            let mut v = self.0.run(task)?;
            v[0] = v[1].clone();
            Ok(v)
        }
        fn describe(&self) -> String {
            String::new()
        }
    }
    let p = RemotePasses::new(
        Arc::new(Twice(Emulated::new(&ds, vec![0, ds.n()], 500))),
        plan,
    );
    let err = p.misclassified(&[0.0; 3]).expect_err("a group twice");
    assert!(err.to_string().contains("other row groups"), "{err}");
}
