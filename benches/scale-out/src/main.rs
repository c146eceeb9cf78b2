//! One full-data pass of kinsey's solver (the logistic loss and gradient sums at a point
//! `w`) three ways over the same Parquet file of one party, each timed as the median of
//! three runs, with the sums compared:
//!
//! * `datafusion`: an aggregate function (`logistic_sums(label, f1, ..., fd)`) in an
//!   in-process DataFusion session over the file, one partition per core; each record
//!   batch goes through kinsey's own kernel (`LogisticSums`), the partial sums are merged
//!   by DataFusion (in the order its partitions finish);
//! * `kinsey-parquet`: kinsey's block reader (`ParquetParty`), decoding the file every
//!   pass, and the same kernel;
//! * `kinsey-spill`: kinsey's bounded-memory pass, reading the rows it spilled once
//!   (`Spill`, what `kinsey train --memory-limit` does after the first pass).
//!
//! Usage: `kinsey-scale-out-prototype FILE.parquet SPILL_DIR` (the label column is
//! `label`, every other column a feature; prints one JSON line per way).

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BinaryArray};
use datafusion::arrow::datatypes::{DataType, Float32Type};
use datafusion::common::{Result as DfResult, ScalarValue};
use datafusion::logical_expr::{Accumulator, Volatility, create_udaf};
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext, ident};
use kinsey_data::parquet_blocks::ParquetParty;
use kinsey_data::parquet_io::ColumnSpec;
use kinsey_kernels::logistic::cpu::LogisticSums;
use kinsey_learn::passes::Passes;
use kinsey_learn::spill::{Spill, SpillDir, SpillWriter};
use std::sync::Arc;
use std::time::Instant;

/// The aggregate's state: the loss sum, then the gradient sums, over the rows seen.
#[derive(Debug)]
struct SumsAccumulator {
    w: Arc<Vec<f64>>,
    sums: Vec<f64>,
    x: Vec<f32>,
    y: Vec<f32>,
}

fn df_err(e: impl std::fmt::Display) -> datafusion::error::DataFusionError {
    datafusion::error::DataFusionError::Execution(e.to_string())
}

fn encode(v: &[f64]) -> ScalarValue {
    ScalarValue::Binary(Some(v.iter().flat_map(|x| x.to_le_bytes()).collect()))
}

fn add_encoded(into: &mut [f64], bytes: &[u8]) {
    for (s, b) in into.iter_mut().zip(bytes.chunks_exact(8)) {
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        *s += f64::from_le_bytes(a);
    }
}

impl Accumulator for SumsAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> DfResult<()> {
        let d = self.w.len();
        let m = values[0].len();
        self.y.clear();
        self.y
            .extend_from_slice(values[0].as_primitive::<Float32Type>().values());
        self.x.clear();
        self.x.resize(m * d, 0.0);
        for (j, col) in values[1..].iter().enumerate() {
            for (row, &v) in self
                .x
                .chunks_exact_mut(d)
                .zip(col.as_primitive::<Float32Type>().values())
            {
                row[j] = v;
            }
        }
        let mut s = LogisticSums::new(&self.w, d, false).map_err(df_err)?;
        s.add_block(&self.x, &self.y).map_err(df_err)?;
        let r = s.finish();
        self.sums[0] += r.loss;
        for (a, g) in self.sums[1..].iter_mut().zip(&r.grad) {
            *a += g;
        }
        Ok(())
    }

    fn evaluate(&mut self) -> DfResult<ScalarValue> {
        Ok(encode(&self.sums))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + 4 * (self.x.capacity() + self.y.capacity())
    }

    fn state(&mut self) -> DfResult<Vec<ScalarValue>> {
        Ok(vec![encode(&self.sums)])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> DfResult<()> {
        let parts = states[0]
            .as_any()
            .downcast_ref::<BinaryArray>()
            .ok_or_else(|| df_err("state is not binary"))?;
        for i in 0..parts.len() {
            add_encoded(&mut self.sums, parts.value(i));
        }
        Ok(())
    }
}

/// Median of three timed runs of `f`, and its last result.
fn median3<T>(mut f: impl FnMut() -> T) -> (f64, T) {
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..3 {
        let t = Instant::now();
        last = Some(f());
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    (times[1], last.expect("three runs"))
}

fn datafusion_pass(path: &str, features: &[String], w: &Arc<Vec<f64>>) -> Vec<f64> {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .build()
        .expect("tokio");
    rt.block_on(async {
        let ctx =
            SessionContext::new_with_config(SessionConfig::new().with_target_partitions(threads));
        let df = ctx
            .read_parquet(path, ParquetReadOptions::default())
            .await
            .expect("open");
        let w2 = Arc::clone(w);
        let d = w.len();
        let udaf = create_udaf(
            "logistic_sums",
            vec![DataType::Float32; d + 1],
            Arc::new(DataType::Binary),
            Volatility::Immutable,
            Arc::new(move |_| {
                Ok(Box::new(SumsAccumulator {
                    w: Arc::clone(&w2),
                    sums: vec![0.0; d + 1],
                    x: Vec::new(),
                    y: Vec::new(),
                }))
            }),
            Arc::new(vec![DataType::Binary]),
        );
        // SELECT logistic_sums(label, f1, ..., fd) FROM party
        let args: Vec<_> = std::iter::once(ident("label"))
            .chain(features.iter().map(ident))
            .collect();
        let batches = df
            .aggregate(vec![], vec![udaf.call(args)])
            .expect("plan")
            .collect()
            .await
            .expect("run");
        let out = batches[0]
            .column(0)
            .as_any()
            .downcast_ref::<BinaryArray>()
            .expect("binary")
            .value(0)
            .to_vec();
        let mut sums = vec![0.0; d + 1];
        add_encoded(&mut sums, &out);
        sums
    })
}

fn kinsey_parquet_pass(party: &ParquetParty, w: &[f64]) -> Vec<f64> {
    let mut s = LogisticSums::new(w, w.len(), false).expect("sums");
    party
        .for_each_block(1 << 16, |b| Ok(s.add_block(&b.x, &b.y)?))
        .expect("pass");
    let r = s.finish();
    std::iter::once(r.loss).chain(r.grad).collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (path, spill_base) = match args.as_slice() {
        [_, p, s] => (p.clone(), s.clone()),
        _ => {
            eprintln!("usage: kinsey-scale-out-prototype FILE.parquet SPILL_DIR");
            std::process::exit(2);
        }
    };
    let party = ParquetParty::open(path.as_ref(), &ColumnSpec::default()).expect("open");
    let d = party.d();
    let w: Arc<Vec<f64>> = Arc::new((0..d).map(|j| 0.01 * (j % 7) as f64 - 0.03).collect());
    let report = |way: &str, s: f64, sums: &[f64], reference: &[f64]| {
        let rel = sums
            .iter()
            .zip(reference)
            .map(|(a, b)| (a - b).abs() / b.abs().max(1e-300))
            .fold(0.0f64, f64::max);
        println!(
            "{}",
            serde_json::json!({"way": way, "rows": party.rows(), "dim": d, "pass_seconds": s,
                "max_relative_difference_from_kinsey_parquet": rel})
        );
    };
    let (s_kp, reference) = median3(|| kinsey_parquet_pass(&party, &w));
    report("kinsey-parquet", s_kp, &reference, &reference);
    let (s_df, df) = median3(|| datafusion_pass(&path, party.features(), &w));
    report("datafusion", s_df, &df, &reference);
    let dir = SpillDir::create(spill_base.as_ref()).expect("spill dir");
    let mut out = SpillWriter::create(&dir, "party", d).expect("spill");
    party
        .for_each_block(1 << 16, |b| out.append(&b.x, &b.y))
        .expect("spill pass");
    let spill = Spill::new(vec![out.finish().expect("finish")], 1 << 16).expect("spill");
    let (s_sp, sp) = median3(|| {
        let r = spill.sums(&w, false).expect("pass");
        std::iter::once(r.loss).chain(r.grad).collect::<Vec<f64>>()
    });
    report("kinsey-spill", s_sp, &sp, &reference);
}
