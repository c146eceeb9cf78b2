//! The library facade and the commands publish the same bytes: a seeded job through
//! `kinsey::` and the same job through `kinsey train`, `kinsey decay` and
//! `kinsey histogram` write identical releases. Each command's release is assembled in the
//! libraries (`Report::write`, `DecayRelease`, `HistogramQuery`), so a difference here is
//! a command that added, dropped or reordered a field the library did not.

mod common;

use common::{arg, ok};
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
