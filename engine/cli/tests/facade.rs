//! The library facade and the commands publish the same bytes: a seeded job through
//! `kinsey::` and the same job through `kinsey train`, `kinsey decay` and
//! `kinsey histogram` write identical releases. Each command's release is assembled in the
//! libraries (`Report::write`, `DecayRelease`, `HistogramQuery`), so a difference here is
//! a command that added, dropped or reordered a field the library did not.

mod common;

use common::{arg, ok};
use kinsey::classifier::ModelFile;
use kinsey::data::{Dataset, RowTransform};
use kinsey::prelude::*;
use std::path::Path;

fn same_file(a: &Path, b: &Path) {
    let (x, y) = (std::fs::read(a).expect("a"), std::fs::read(b).expect("b"));
    assert!(
        x == y,
        "{} and {} differ:\n{}\n---\n{}",
        a.display(),
        b.display(),
        String::from_utf8_lossy(&x),
        String::from_utf8_lossy(&y)
    );
}

#[test]
fn a_seeded_training_job_publishes_the_same_bytes_as_kinsey_train() {
    let dir = tempfile::tempdir().expect("tmp");
    let parties =
        kinsey::data::synthetic_parties(&dir.path().join("p"), 3, 400, 4).expect("parties");
    let list: Vec<String> = parties.iter().map(|p| format!("{:?}", arg(p))).collect();
    let cfg = dir.path().join("train.toml");
    std::fs::write(
        &cfg,
        format!(
            "[data]\nparties = [{}]\n[model]\nlambda = 0.01\n[privacy]\nepsilon = 0.7\n\
             seed = 11\n[compute]\ndevice = \"cpu\"\n[crypto]\nbackend = \"mock\"\n\
             allow_insecure = true\n",
            list.join(", ")
        ),
    )
    .expect("config");
    let cli = dir.path().join("cli");
    ok(&["train", "--config", arg(&cfg), "--out", arg(&cli)]);
    let lib = dir.path().join("lib");
    let trained = Job::builder()
        .parquet_parties(&parties, "label")
        .epsilon(0.7)
        .lambda(0.01)
        .device(DevicePref::Cpu)
        .backend(Backend::mock_insecure())
        .seed(11)
        .build()
        .expect("job")
        .run()
        .expect("run");
    let written = trained.write(&lib).expect("write");
    assert!(written.diagnostics.is_none());
    same_file(&cli.join("report.json"), &written.report);
    same_file(&cli.join("model.json"), &written.model);
    // Another seed is another release.
    let other = Job::builder()
        .parquet_parties(&parties, "label")
        .epsilon(0.7)
        .lambda(0.01)
        .device(DevicePref::Cpu)
        .backend(Backend::mock_insecure())
        .seed(12)
        .build()
        .expect("job")
        .run()
        .expect("run");
    assert_ne!(other.release().w, trained.release().w);
}

/// A library job whose Parquet parties do not fit its memory limit together fits them one
/// by one, streamed through a spill folder it removes, and publishes the in-memory job's
/// bytes.
#[test]
fn a_memory_limited_library_job_publishes_the_same_bytes() {
    let dir = tempfile::tempdir().expect("tmp");
    let parties =
        kinsey::data::synthetic_parties(&dir.path().join("p"), 3, 100_000, 4).expect("parties");
    let spill = dir.path().join("spill");
    std::fs::create_dir(&spill).expect("spill");
    let run = |limit: Option<u64>| {
        let mut b = Job::builder()
            .parquet_parties(&parties, "label")
            .epsilon(0.7)
            .device(DevicePref::Cpu)
            .backend(Backend::plaintext_reference())
            .seed(11)
            .diagnostics()
            .spill_dir(&spill);
        if let Some(l) = limit {
            b = b.memory_limit(l);
        }
        let out = dir.path().join(format!("out-{limit:?}"));
        b.build()
            .expect("job")
            .run()
            .expect("run")
            .write(&out)
            .expect("write")
    };
    // 3 x 100,000 rows of 5 floats (6 MB, twice with the diagnostics) above the engine's
    // 96 MiB: streaming one takes about 101 MiB (its 2 MB row group read, blocks of 4,096
    // rows, a Hessian subsample), so none is held whole.
    let (held, streamed) = (run(None), run(Some(102 << 20)));
    let diag = |w: &kinsey::classifier::Written| {
        std::fs::read_to_string(w.diagnostics.as_ref().expect("diagnostics")).expect("read")
    };
    assert!(!diag(&held).contains("streamed from disk"));
    assert!(diag(&streamed).contains("streamed from disk"));
    same_file(&held.report, &streamed.report);
    same_file(&held.model, &streamed.model);
    assert_eq!(std::fs::read_dir(&spill).expect("spill").count(), 0);
    let err = Job::builder()
        .parquet_parties(&parties, "label")
        .epsilon(0.7)
        .memory_limit(1 << 20)
        .build()
        .expect("job")
        .run()
        .expect_err("1 MiB cannot hold a block");
    assert!(err.to_string().contains("memory_limit"), "{err}");
}

/// Rows of two features in [0, 1] labelled by a boundary away from the origin
/// (x1 + x2 > 1.2), which a model without an intercept cannot draw.
fn shifted(n: usize, seed: u64, source: &str) -> Dataset {
    let mut s = seed;
    let mut u = move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 40) as f32 / (1u64 << 24) as f32
    };
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for _ in 0..n {
        let (a, b) = (u(), u());
        x.extend([a, b]);
        y.push(if a + b > 1.2 { 1.0 } else { -1.0 });
    }
    Dataset {
        x,
        y,
        d: 2,
        features: vec!["a".into(), "b".into()],
        source: source.into(),
    }
}

/// Error rate of a published model on `test`, applied as `kinsey predict` applies it.
fn error_of(model: &ModelFile, test: &Dataset) -> f64 {
    let mut t = test.clone();
    model.prepare(&mut t).expect("prepare");
    let s = model.scores(&t);
    let wrong = s
        .iter()
        .zip(&t.y)
        .filter(|(z, y)| (**z > 0.0) != (**y > 0.0));
    wrong.count() as f64 / t.n() as f64
}

/// The intercept (issue 37): a public constant feature keeps rows in the unit ball, so the
/// guarantee is the one without it, and it lets the model draw a boundary away from the
/// origin. A seeded job with one publishes the CLI's bytes; predict applies it as trained.
#[test]
fn an_intercept_draws_a_shifted_boundary_and_the_cli_publishes_the_same_model() {
    let parties: Vec<Dataset> = (0..3).map(|j| shifted(3000, j + 1, "p")).collect();
    let test = shifted(4000, 99, "t");
    let train = |c: Option<f64>| {
        let mut b = Job::builder()
            .parties(parties.clone())
            .epsilon(20.0)
            .lambda(1e-4)
            .row_transform(RowTransform::Scale(0.7))
            .device(DevicePref::Cpu)
            .backend(Backend::plaintext_reference())
            .seed(5);
        if let Some(c) = c {
            b = b.intercept(c);
        }
        b.build().expect("job").run().expect("run")
    };
    let (without, with) = (train(None), train(Some(0.5)));
    let (e0, e1) = (
        error_of(&without.model(), &test),
        error_of(&with.model(), &test),
    );
    assert!(
        e1 < 0.08 && e0 > 0.2,
        "error {e1} with an intercept, {e0} without"
    );
    let m = with.model();
    assert_eq!(m.features, ["a", "b", "(intercept)"]);
    assert_eq!((m.intercept, with.release().dim), (Some(0.5), 3));
    // The same guarantee: only d, in the fixed point's rounding term, differs.
    let (g1, g0) = (&with.release().guarantee, &without.release().guarantee);
    assert_eq!(
        (g1.epsilon, g1.delta, g1.neighbours),
        (g0.epsilon, g0.delta, g0.neighbours)
    );
    assert_eq!(g1.sensitivity.replace("d = 3", "d = 2"), g0.sensitivity);
    eprintln!("error on the shifted boundary: {e1} with an intercept, {e0} without");

    let dir = tempfile::tempdir().expect("tmp");
    let paths = kinsey::data::synthetic_parties(&dir.path().join("p"), 3, 300, 3).expect("p");
    let list: Vec<String> = paths.iter().map(|p| format!("{:?}", arg(p))).collect();
    let cfg = dir.path().join("train.toml");
    std::fs::write(
        &cfg,
        format!(
            "[data]\nparties = [{}]\nintercept = 0.25\n[privacy]\nepsilon = 1.0\nseed = 3\n\
             [compute]\ndevice = \"cpu\"\n[crypto]\nbackend = \"mock\"\nallow_insecure = true\n",
            list.join(", ")
        ),
    )
    .expect("config");
    let cli = dir.path().join("cli");
    ok(&["train", "--config", arg(&cfg), "--out", arg(&cli)]);
    let lib = Job::builder()
        .parquet_parties(&paths, "label")
        .epsilon(1.0)
        .intercept(0.25)
        .device(DevicePref::Cpu)
        .backend(Backend::mock_insecure())
        .seed(3)
        .build()
        .expect("job")
        .run()
        .expect("run")
        .write(dir.path().join("lib"))
        .expect("write");
    same_file(&cli.join("report.json"), &lib.report);
    same_file(&cli.join("model.json"), &lib.model);
    let model = std::fs::read_to_string(&lib.model).expect("model");
    assert!(model.contains("\"intercept\": 0.25"), "{model}");
    // predict reads the three input columns and applies the intercept.
    let pred = dir.path().join("pred.csv");
    let t = ok(&[
        "predict",
        "--model",
        arg(&lib.model),
        "--input",
        arg(&paths[0]),
        "--out",
        arg(&pred),
    ]);
    assert!(t.contains("with an intercept (constant 0.25)"), "{t}");
}

#[test]
fn a_seeded_decayed_sum_publishes_the_same_bytes_as_kinsey_decay() {
    let dir = tempfile::tempdir().expect("tmp");
    let csv = dir.path().join("s.csv");
    let rows: String = (0..300).map(|i| format!("{}\n", (i * 7) % 5)).collect();
    std::fs::write(&csv, format!("value\n{rows}")).expect("csv");
    let cli = dir.path().join("cli.csv");
    ok(&[
        "decay",
        "--input",
        arg(&csv),
        "--column",
        "value",
        "--model",
        "window",
        "--window",
        "16",
        "--epsilon",
        "1",
        "--bound",
        "2",
        "--seed",
        "5",
        "--out",
        arg(&cli),
    ]);
    let lib = dir.path().join("lib.csv");
    let out = DecayedSum::window(16)
        .epsilon(1.0)
        .bound(Bound::clamp(2.0).expect("bound"))
        .seed(5)
        .over_file(&csv, "value")
        .expect("run");
    assert!(out.clamped_steps_not_private() > 0);
    out.write(&lib).expect("write");
    same_file(&cli, &lib);
    let report = |p: &Path| Path::new(&format!("{}.report.json", p.display())).to_path_buf();
    // The reports name their own outputs' inputs: the same input, the same bytes.
    same_file(&report(&cli), &report(&lib));
    // Refusing instead of clamping releases nothing.
    let refused = DecayedSum::window(16)
        .epsilon(1.0)
        .bound(Bound::refuse(2.0).expect("bound"))
        .over_file(&csv, "value")
        .expect_err("a value above the bound is refused");
    assert!(
        refused.to_string().contains("exceeds the bound"),
        "{refused}"
    );
}

#[test]
fn a_seeded_histogram_publishes_the_same_bytes_as_kinsey_histogram() {
    let dir = tempfile::tempdir().expect("tmp");
    let table = common::toolbox_csv(dir.path(), 500, "t.csv");
    let cli = dir.path().join("cli");
    ok(&[
        "histogram",
        "--input",
        arg(&table),
        "--column",
        "t",
        "--bins",
        "0:40:8",
        "--where",
        "a>=1",
        "--epsilon",
        "0.5",
        "--neighbours",
        "bounded",
        "--seed",
        "3",
        "--out",
        arg(&cli),
    ]);
    let report = Histogram::numeric(0.0, 40.0, 8)
        .expect("bins")
        .epsilon(0.5)
        .neighbours(Neighbours::Bounded)
        .filter("a>=1")
        .seed(3)
        .of_column(&table, "t")
        .expect("release");
    let lib = serde_json::to_vec_pretty(&report).expect("json");
    let cli_bytes = std::fs::read(cli.join("report.json")).expect("report");
    assert!(lib == cli_bytes, "{}", String::from_utf8_lossy(&lib));
}
