//! End-to-end tests of the `kinsey` binary: the main job, the config path, the data tools,
//! and bad inputs (clear error, nothing left behind).

use std::path::Path;
use std::process::{Command, Output};

/// A path as a command-line argument.
fn arg(p: &Path) -> &str {
    p.to_str().expect("utf8 path")
}

fn kinsey(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kinsey"))
        .args(args)
        .env("KINSEY_NO_PROGRESS", "1")
        .env("KINSEY_LOG", "warn")
        .output()
        .expect("kinsey runs")
}

fn ok(args: &[&str]) -> String {
    let o = kinsey(args);
    assert!(
        o.status.success(),
        "kinsey {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn fails(args: &[&str]) -> String {
    let o = kinsey(args);
    assert!(!o.status.success(), "kinsey {args:?} should fail");
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("file")).expect("json")
}

#[test]
fn demo_runs_and_reports() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("out");
    let stdout = ok(&["demo", "--out", arg(&out), "--device", "cpu", "--seed", "3"]);
    assert!(stdout.contains("test error"), "{stdout}");
    let r = json(&out.join("report.json"));
    assert_eq!(r["parties"].as_array().expect("parties").len(), 5);
    assert!(r["test_error"].as_f64().expect("test error") < 0.35);
    assert_eq!(r["rng"]["seed"]["value"], 3);
    assert!(
        r["rng"]["warning"]
            .as_str()
            .expect("warning")
            .contains("NOT differentially private")
    );
    assert_eq!(r["privacy"]["calibration"], "tight");
    assert!(r["theorem_4_2"]["holds"].as_bool().expect("bool"));
    // The demo runs the secure protocol with Paillier-2048, equal to the plaintext reference.
    assert_eq!(r["protocol"]["backend"]["name"], "paillier");
    assert_eq!(r["protocol"]["backend"]["key_bits"], 2048);
    assert_eq!(r["matches_plaintext_reference"], true);
    assert!(r["security_warning"].is_null());
    let stages = r["protocol"]["stages"].as_array().expect("stages");
    assert_eq!(stages.len(), 4);
    for p in r["protocol"]["participants"]
        .as_array()
        .expect("participants")
    {
        assert!(p["bytes_sent"].as_u64().expect("bytes") > 0);
    }
    for key in [
        "ingest_s",
        "local_training_s",
        "aggregation_s",
        "evaluation_s",
    ] {
        assert!(r["timings"][key].is_number(), "{key}");
    }
    // Same seed, same release; the model file predicts.
    let out2 = dir.path().join("out2");
    ok(&[
        "demo",
        "--out",
        arg(&out2),
        "--device",
        "cpu",
        "--seed",
        "3",
    ]);
    assert_eq!(
        json(&out.join("model.json"))["w"],
        json(&out2.join("model.json"))["w"]
    );
}

#[test]
fn generate_train_predict_round_trip() {
    let dir = tempfile::tempdir().expect("tmp");
    let parties = dir.path().join("parties");
    let p = arg(&parties);
    ok(&[
        "generate",
        "--parties",
        "3",
        "--rows",
        "30000",
        "--dim",
        "8",
        "--out",
        p,
        "--seed",
        "4",
    ]);
    let cfg = dir.path().join("train.toml");
    std::fs::write(
        &cfg,
        r#"
[data]
parties = ["parties/party-1.parquet", "parties/party-2.parquet", "parties/party-3.parquet"]
test = "parties/test.parquet"
[model]
lambda = 0.001
[privacy]
epsilon = 2.0
noise = "laplace"
[compute]
device = "cpu"
[output]
dir = "result"
"#,
    )
    .expect("write");
    let stdout = ok(&["train", "--config", arg(&cfg)]);
    assert!(stdout.contains("dp_aggregate"), "{stdout}");
    let result = dir.path().join("result");
    let r = json(&result.join("report.json"));
    assert_eq!(r["privacy"]["noise"], "laplace");
    assert_eq!(r["rng"]["seed"]["kind"], "os");
    assert_eq!(r["party_sizes"], serde_json::json!([10000, 10000, 10000]));
    let preds = dir.path().join("preds.csv");
    let s = ok(&[
        "predict",
        "--model",
        arg(&result.join("model.json")),
        "--input",
        arg(&parties.join("test.parquet")),
        "--out",
        arg(&preds),
    ]);
    assert!(s.contains("error rate"), "{s}");
    assert_eq!(
        std::fs::read_to_string(&preds)
            .expect("csv")
            .lines()
            .count(),
        6001
    );
}

#[test]
fn convert_and_split_a9a() {
    let data = kinsey::testdata::shared_data_dir().join("a9a/a9a");
    let dir = tempfile::tempdir().expect("tmp");
    let pq = dir.path().join("a9a.parquet");
    ok(&[
        "convert",
        "--libsvm",
        arg(&data),
        "--dim",
        "123",
        "--out",
        arg(&pq),
    ]);
    let parts = dir.path().join("parts");
    ok(&[
        "split",
        "--input",
        arg(&pq),
        "--sizes",
        "4884,6512,6512,6512,8141",
        "--out",
        arg(&parts),
        "--seed",
        "7",
    ]);
    let s = json(&parts.join("split.json"));
    assert_eq!(s["seed"], 7);
    assert_eq!(s["rows_in"], 32561);
    let ds =
        kinsey::data::parquet_io::read_parquet(&parts.join("party-1.parquet"), &Default::default())
            .expect("party 1");
    assert_eq!((ds.n(), ds.d), (4884, 123));
    // Too many rows requested: an error, and no directory is left behind.
    let bad = dir.path().join("bad");
    let e = fails(&[
        "split",
        "--input",
        arg(&pq),
        "--sizes",
        "30000,30000",
        "--out",
        arg(&bad),
    ]);
    assert!(e.contains("32561"), "{e}");
    assert!(!bad.exists());
}

#[test]
fn bad_inputs_fail_clearly_and_leave_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let parties = dir.path().join("parties");
    ok(&[
        "generate",
        "--parties",
        "2",
        "--rows",
        "2000",
        "--dim",
        "4",
        "--out",
        arg(&parties),
    ]);
    let cfg = dir.path().join("c.toml");
    let write_cfg = |body: &str| std::fs::write(&cfg, body).expect("write");
    let base = r#"
[data]
parties = ["parties/party-1.parquet", "parties/party-2.parquet"]
[privacy]
epsilon = 1.0
[output]
dir = "out"
"#;
    let out = dir.path().join("out");
    let c = arg(&cfg);

    write_cfg(&base.replace("epsilon = 1.0", "epsilon = 0.0"));
    assert!(fails(&["train", "--config", c]).contains("epsilon"));

    // A corrupted party file: the error names it, and no report is written.
    std::fs::write(parties.join("party-2.parquet"), b"garbage").expect("corrupt");
    write_cfg(base);
    let e = fails(&["train", "--config", c]);
    assert!(e.contains("party-2.parquet"), "{e}");
    assert!(!out.exists());

    // Rows outside the unit ball without a declared transform.
    let big = dir.path().join("big");
    ok(&[
        "generate",
        "--parties",
        "2",
        "--rows",
        "2000",
        "--dim",
        "4",
        "--out",
        arg(&big),
    ]);
    let mut ds =
        kinsey::data::parquet_io::read_parquet(&big.join("party-1.parquet"), &Default::default())
            .expect("read");
    ds.x.iter_mut().for_each(|v| *v *= 10.0);
    let mut o = kinsey::data::output::Outputs::new();
    kinsey::data::parquet_io::write_parquet(&mut o, &big.join("party-1.parquet"), &ds, "label")
        .expect("write");
    o.commit().expect("commit");
    write_cfg(&base.replace("parties/", "big/"));
    let e = fails(&["train", "--config", c]);
    assert!(
        e.contains("unit ball") && e.contains("party-1.parquet"),
        "{e}"
    );
    write_cfg(
        &base
            .replace("parties/", "big/")
            .replace("[privacy]", "[privacy]\n")
            .replace("parties = [", "row_transform = \"clip\"\nparties = ["),
    );
    ok(&["train", "--config", c]);
    assert!(out.join("report.json").exists());

    // Unknown keys and devices are named.
    write_cfg(&base.replace("epsilon = 1.0", "epsilon = 1.0\nepsylon = 2"));
    assert!(fails(&["train", "--config", c]).contains("epsylon"));
    write_cfg(&format!("{base}\n[compute]\ndevice = \"quantum\""));
    assert!(fails(&["train", "--config", c]).contains("quantum"));
    assert!(
        fails(&[
            "convert",
            "--libsvm",
            "/nonexistent/file",
            "--dim",
            "3",
            "--out",
            "x.parquet"
        ])
        .contains("/nonexistent/file")
    );
}

fn write_train_config(dir: &Path, crypto: &str) -> std::path::PathBuf {
    let cfg = dir.join(format!("train-{}.toml", crypto.len()));
    std::fs::write(
        &cfg,
        format!(
            r#"
[data]
parties = ["parties/party-1.parquet", "parties/party-2.parquet"]
[model]
lambda = 0.01
[privacy]
epsilon = 1.0
seed = 11
[compute]
device = "cpu"
{crypto}
"#
        ),
    )
    .expect("write");
    cfg
}

#[test]
fn switching_the_backend_changes_nothing_else() {
    let dir = tempfile::tempdir().expect("tmp");
    ok(&[
        "generate",
        "--parties",
        "2",
        "--rows",
        "4000",
        "--dim",
        "5",
        "--out",
        arg(&dir.path().join("parties")),
        "--seed",
        "2",
    ]);
    let paillier = write_train_config(dir.path(), "[crypto]\nbackend = \"paillier\"");
    let mock = write_train_config(
        dir.path(),
        "[crypto]\nbackend = \"mock\"\nallow_insecure = true",
    );
    let plain = write_train_config(dir.path(), "[crypto]\naggregation = \"plaintext\"");
    let (a, b, c) = (
        dir.path().join("a"),
        dir.path().join("b"),
        dir.path().join("c"),
    );
    ok(&["train", "--config", arg(&paillier), "--out", arg(&a)]);
    let s = ok(&["train", "--config", arg(&mock), "--out", arg(&b)]);
    assert!(s.contains("WARNING: INSECURE crypto backend 'mock'"), "{s}");
    ok(&["train", "--config", arg(&plain), "--out", arg(&c)]);
    let (ra, rb, rc) = (
        json(&a.join("report.json")),
        json(&b.join("report.json")),
        json(&c.join("report.json")),
    );
    assert_eq!(ra["w"], rb["w"]);
    assert_eq!(ra["w"], rc["w"]);
    assert_eq!(ra["models"], rb["models"]);
    assert_eq!(rb["protocol"]["backend"]["insecure"], true);
    assert!(
        rb["security_warning"]
            .as_str()
            .expect("warning")
            .contains("INSECURE")
    );
    assert!(rc["protocol"].is_null());
    // Refusals name the problem and leave nothing behind.
    let refused = write_train_config(dir.path(), "[crypto]\nbackend = \"mock\"");
    let e = fails(&[
        "train",
        "--config",
        arg(&refused),
        "--out",
        arg(&dir.path().join("d")),
    ]);
    assert!(e.contains("allow_insecure"), "{e}");
    let unknown = write_train_config(dir.path(), "[crypto]\nbackend = \"tfhe-gpu\"");
    let e = fails(&[
        "train",
        "--config",
        arg(&unknown),
        "--out",
        arg(&dir.path().join("e")),
    ]);
    assert!(e.contains("available: mock, paillier"), "{e}");
    assert!(!dir.path().join("d").exists() && !dir.path().join("e").exists());
}

#[test]
fn backends_and_keys_commands() {
    let s = ok(&["backends"]);
    assert!(
        s.contains("paillier") && s.contains("112 bits") && s.contains("DGK"),
        "{s}"
    );
    assert!(s.contains("mock") && s.contains("INSECURE"), "{s}");
    let dir = tempfile::tempdir().expect("tmp");
    let keys = dir.path().join("keys");
    let e = fails(&["keys", "generate", "--out", arg(&keys), "--bits", "1024"]);
    assert!(e.contains("allow_insecure_test_keys"), "{e}");
    ok(&[
        "keys",
        "generate",
        "--out",
        arg(&keys),
        "--bits",
        "1024",
        "--allow-insecure-test-keys",
    ]);
    let ct = ok(&[
        "keys",
        "encrypt",
        "--public",
        arg(&keys.join("public.json")),
        "-0.5",
        "--allow-insecure-test-keys",
    ]);
    let ctf = dir.path().join("ct.json");
    std::fs::write(&ctf, &ct).expect("write");
    let v = ok(&[
        "keys",
        "decrypt",
        "--private",
        arg(&keys.join("private.json")),
        arg(&ctf),
        "--allow-insecure-test-keys",
    ]);
    assert_eq!(v.trim(), "-0.5");
    let ex = dir.path().join("phe");
    ok(&[
        "keys",
        "export",
        "--private",
        arg(&keys.join("private.json")),
        "--out",
        arg(&ex),
    ]);
    let back = dir.path().join("back");
    ok(&[
        "keys",
        "import",
        "--private",
        arg(&ex.join("private.json")),
        "--out",
        arg(&back),
    ]);
    std::fs::write(&ctf, "{\"v\": \"0\", \"e\": -8}").expect("write");
    let e = fails(&[
        "keys",
        "decrypt",
        "--private",
        arg(&back.join("private.json")),
        arg(&ctf),
        "--allow-insecure-test-keys",
    ]);
    assert!(e.contains("outside"), "{e}");
}

#[test]
fn a_protocol_failure_names_stage_and_participant_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    for (fault, needles) in [
        (
            "party3:2:garbage",
            ["stage 2 (oblivious noise selection)", "party 3"],
        ),
        (
            "curator:3:abort",
            ["stage 3 (additive shares)", "the curator"],
        ),
    ] {
        let out = dir.path().join("out");
        let e = fails(&[
            "demo",
            "--out",
            arg(&out),
            "--device",
            "cpu",
            "--backend",
            "mock",
            "--allow-insecure",
            "--inject-fault",
            fault,
        ]);
        for n in needles {
            assert!(e.contains(n), "{fault}: {e}");
        }
        assert!(!out.exists(), "{fault}: output left behind");
    }
}

#[test]
fn decay_window_bulk_and_online_agree_and_bad_input_fails() {
    let dir = tempfile::tempdir().expect("tmp");
    let input = dir.path().join("s.csv");
    let mut text = String::from("minute,count\n");
    for i in 0..5000 {
        text.push_str(&format!("{i},{}\n", (i * 7919) % 5));
    }
    std::fs::write(&input, text).expect("write");
    let run = |out: &Path, extra: &[&str]| {
        let mut args = vec![
            "decay",
            "--input",
            arg(&input),
            "--column",
            "count",
            "--model",
            "window",
            "--window",
            "60",
            "--epsilon",
            "1",
            "--bound",
            "4",
            "--seed",
            "5",
            "--out",
            arg(out),
        ];
        args.extend_from_slice(extra);
        ok(&args)
    };
    let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
    let s = run(&a, &["--evaluate"]);
    assert!(s.contains("evaluation (estimate): RMSE"), "{s}");
    run(&b, &["--online"]);
    assert_eq!(std::fs::read(&a).expect("a"), std::fs::read(&b).expect("b"));
    assert!(
        dir.path().join("a.csv.plot.svg").exists() && dir.path().join("a.csv.plot.png").exists()
    );
    let r = json(&dir.path().join("a.csv.report.json"));
    assert_eq!(r["clamped_steps"], 0);
    assert_eq!(r["steps"], 5000);
    assert!(r["evaluation"]["rmse"].as_f64().expect("rmse") > 0.0);
    assert!(r["warning"].as_str().expect("seed warning").contains("NOT"));
    let lines = std::fs::read_to_string(&a).expect("a");
    assert_eq!(lines.lines().count(), 5001);
    // All windows from one tree: one column per window, each evaluated.
    let c = dir.path().join("c.parquet");
    let s = ok(&[
        "decay",
        "--input",
        arg(&input),
        "--column",
        "count",
        "--model",
        "allwindow",
        "--windows",
        "60,1440",
        "--epsilon",
        "1",
        "--bound",
        "4",
        "--out",
        arg(&c),
        "--evaluate",
    ]);
    assert!(
        s.contains("(window_60)") && s.contains("(window_1440)"),
        "{s}"
    );
    let r = json(&dir.path().join("c.parquet.report.json"));
    assert_eq!(r["evaluation"].as_array().expect("per window").len(), 2);
    // Bad parameters and input: clear errors, nothing written.
    let bad = dir.path().join("bad.csv");
    for (extra, needle) in [
        (vec!["--model", "window", "--window", "0"], "window"),
        (
            vec!["--model", "window", "--window", "5", "--epsilon", "0"],
            "epsilon",
        ),
        (vec!["--model", "exponential", "--alpha", "1.5"], "alpha"),
        (vec!["--model", "wave"], "unknown model"),
    ] {
        let mut args = vec![
            "decay",
            "--input",
            arg(&input),
            "--column",
            "count",
            "--epsilon",
            "1",
            "--out",
            arg(&bad),
        ];
        // later flags win: the bad value overrides the default
        args.extend(extra);
        let e = fails(&args);
        assert!(e.contains(needle), "{needle}: {e}");
        assert!(!bad.exists());
    }
    std::fs::write(&input, "count\n1\n-3\n").expect("write");
    let e = fails(&[
        "decay",
        "--input",
        arg(&input),
        "--column",
        "count",
        "--model",
        "window",
        "--window",
        "2",
        "--epsilon",
        "1",
        "--out",
        arg(&bad),
    ]);
    assert!(e.contains("row 1") && e.contains("non-negative"), "{e}");
}

/// A small CSV for the toolbox commands: binary a, b; numeric t in [0, 40]; label in
/// {-1, +1} equal to +1 mostly when a = 1.
fn toolbox_csv(dir: &Path, n: usize) -> std::path::PathBuf {
    let mut s = String::from("a,b,t,label\n");
    let mut x: u64 = 88172645463325252;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..n {
        let a = next() % 2;
        let b = next() % 2;
        let t = next() % 41;
        let agree = next() % 10 != 0;
        let label = if (a == 1) == agree { 1 } else { -1 };
        s.push_str(&format!("{a},{b},{t},{label}\n"));
    }
    let p = dir.join("toolbox.csv");
    std::fs::write(&p, s).expect("write");
    p
}

#[test]
fn histogram_records_the_neighbour_definition_and_refuses_bad_input() {
    let dir = tempfile::tempdir().expect("tmp");
    let csv = toolbox_csv(dir.path(), 2000);
    let out = dir.path().join("h");
    let s = ok(&[
        "histogram",
        "--input",
        arg(&csv),
        "--column",
        "t",
        "--bins",
        "-10:50:6",
        "--epsilon",
        "1",
        "--neighbours",
        "bounded",
        "--out",
        arg(&out),
    ]);
    assert!(
        s.contains("sensitivity 2") && s.contains("total 2000"),
        "{s}"
    );
    let r = json(&out.join("report.json"));
    assert_eq!(r["release"]["neighbours"], "bounded");
    assert_eq!(r["release"]["labels"].as_array().expect("bins").len(), 8);
    assert!(out.join("histogram.png").exists() && out.join("histogram.csv").exists());
    let out2 = dir.path().join("h2");
    let s = ok(&[
        "histogram",
        "--input",
        arg(&csv),
        "--column",
        "a",
        "--categories",
        "0,1",
        "--epsilon",
        "1",
        "--neighbours",
        "unbounded",
        "--out",
        arg(&out2),
        "--where",
        "t>=20",
    ]);
    assert!(s.contains("sensitivity 1") && s.contains("(noisy)"), "{s}");
    for (bad, what) in [
        (vec!["--epsilon", "0"], "epsilon"),
        (vec!["--epsilon", "1", "--column", "nope"], "nope"),
        (vec!["--epsilon", "NaN"], "epsilon"),
    ] {
        let bad_out = dir.path().join("bad");
        let mut a = vec![
            "histogram",
            "--input",
            arg(&csv),
            "--neighbours",
            "bounded",
            "--out",
            arg(&bad_out),
            "--bins",
            "0:1:2",
        ];
        if !bad.contains(&"--column") {
            a.extend(["--column", "t"]);
        }
        a.extend(bad.iter().copied());
        let e = fails(&a);
        assert!(e.contains(what), "{a:?}: {e}");
        assert!(!bad_out.exists(), "nothing written on error");
    }
    let e = fails(&[
        "histogram",
        "--input",
        arg(&csv),
        "--column",
        "t",
        "--epsilon",
        "1",
        "--neighbours",
        "swap",
        "--out",
        arg(&dir.path().join("x")),
    ]);
    assert!(e.contains("swap"), "{e}");
}

#[test]
fn tree_and_sulq_commands_run_with_their_guarantee_and_refuse_bad_input() {
    let dir = tempfile::tempdir().expect("tmp");
    let csv = toolbox_csv(dir.path(), 4000);
    let out = dir.path().join("tree");
    let s = ok(&[
        "tree",
        "--input",
        arg(&csv),
        "--attributes",
        "a,b,t:0:40:4",
        "--test",
        arg(&csv),
        "--epsilon",
        "2",
        "--depth",
        "2",
        "--neighbours",
        "bounded",
        "--out",
        arg(&out),
    ]);
    assert!(s.contains("test accuracy"), "{s}");
    let r = json(&out.join("report.json"));
    assert!(r["test_accuracy"].as_f64().expect("acc") > 0.8, "{r}");
    let spent: f64 = r["accountant"]["ledger"]
        .as_array()
        .expect("ledger")
        .iter()
        .map(|s| s["epsilon"].as_f64().expect("eps"))
        .sum();
    assert!(spent <= 2.0 + 1e-9 && spent > 0.0);
    let e = fails(&[
        "tree",
        "--input",
        arg(&csv),
        "--epsilon",
        "1",
        "--neighbours",
        "bounded",
        "--out",
        arg(&dir.path().join("t2")),
    ]);
    assert!(
        e.contains("'t'") && e.contains("BINS"),
        "t is not binary: {e}"
    );
    assert!(!dir.path().join("t2").exists());

    let common = |o: &Path| {
        vec![
            "--epsilon".to_string(),
            "2".into(),
            "--neighbours".into(),
            "bounded".into(),
            "--out".into(),
            arg(o).into(),
            "--evaluate".into(),
        ]
    };
    let run = |sub: &[&str], o: &Path| {
        let mut a: Vec<String> = sub.iter().map(|s| s.to_string()).collect();
        a.extend(common(o));
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        ok(&refs)
    };
    let km = dir.path().join("km");
    run(
        &[
            "sulq",
            "kmeans",
            "--input",
            arg(&csv),
            "--columns",
            "a,b,t:0:40",
            "--k",
            "2",
        ],
        &km,
    );
    let r = json(&km.join("report.json"));
    assert_eq!(r["result"]["centers"].as_array().expect("centres").len(), 2);
    assert!(
        r["result"]["guarantee"]["epsilon_spent"]
            .as_f64()
            .expect("eps")
            <= 2.0
    );
    assert!(km.join("centers.png").exists());
    let pca = dir.path().join("pca");
    run(
        &[
            "sulq",
            "pca",
            "--input",
            arg(&csv),
            "--columns",
            "a,b,t:0:40",
        ],
        &pca,
    );
    assert!(pca.join("explained_variance.svg").exists());
    let pc = dir.path().join("pc");
    let s = run(
        &[
            "sulq",
            "perceptron",
            "--input",
            arg(&csv),
            "--columns",
            "a,b",
            "--intercept",
            "--test",
            arg(&csv),
        ],
        &pc,
    );
    assert!(s.contains("test accuracy"), "{s}");
    let st = dir.path().join("st");
    let s = run(
        &["sulq", "stat", "--input", arg(&csv), "--columns", "a,b"],
        &st,
    );
    assert!(s.contains("'a'"), "a predicts the label: {s}");
    let im = dir.path().join("im");
    run(
        &[
            "sulq",
            "implication",
            "--a",
            arg(&csv),
            "--alpha",
            "a",
            "--b",
            arg(&csv),
            "--beta",
            "label>=1",
        ],
        &im,
    );
    assert!(
        json(&im.join("report.json"))["evaluation"]["delta_exact"]
            .as_f64()
            .expect("d")
            > 0.3
    );
    // out of [0, 1] without declared bounds: the row is named, nothing is written
    let bad = dir.path().join("bad");
    let mut a: Vec<String> = ["sulq", "kmeans", "--input", arg(&csv), "--columns", "t"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    a.extend(common(&bad));
    let refs: Vec<&str> = a.iter().map(String::as_str).collect();
    let e = fails(&refs);
    assert!(e.contains("row") && e.contains("t:LO:HI"), "{e}");
    assert!(!bad.exists());
    // a tau the budget cannot reach is refused up front
    let e = fails(&[
        "sulq",
        "stat",
        "--input",
        arg(&csv),
        "--columns",
        "a,b",
        "--tau",
        "0.0001",
        "--epsilon",
        "1",
        "--neighbours",
        "bounded",
        "--out",
        arg(&bad),
    ]);
    assert!(e.contains("accuracy"), "{e}");
}
