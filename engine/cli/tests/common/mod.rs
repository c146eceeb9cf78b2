//! Helpers the end-to-end test files share: running the `kinsey` binary, reading what it
//! wrote, and a small labelled table.
#![allow(dead_code)] // each test file uses its own subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A path as a command-line argument.
pub(crate) fn arg(p: &Path) -> &str {
    p.to_str().expect("utf8 path")
}

/// `kinsey ARGS`, quiet.
pub(crate) fn kinsey(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kinsey"))
        .args(args)
        .env("KINSEY_NO_PROGRESS", "1")
        .env("KINSEY_LOG", "warn")
        .output()
        .expect("kinsey runs")
}

/// `kinsey ARGS`, which must succeed: its stdout.
pub(crate) fn ok(args: &[&str]) -> String {
    let o = kinsey(args);
    assert!(
        o.status.success(),
        "kinsey {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `kinsey ARGS`, which must fail: its stderr.
pub(crate) fn fails(args: &[&str]) -> String {
    let o = kinsey(args);
    assert!(!o.status.success(), "kinsey {args:?} should fail");
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A JSON file.
pub(crate) fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("file")).expect("json")
}

/// A table of `n` rows in `dir/name`: binary attributes `a`, `b`, an integer `t` in
/// 0..=40 and a label that follows `a` 90% of the time.
pub(crate) fn toolbox_csv(dir: &Path, n: usize, name: &str) -> PathBuf {
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
    let p = dir.join(name);
    std::fs::write(&p, s).expect("write");
    p
}

/// Three synthetic Parquet parties of `rows` rows and `dim` features (`kinsey generate`,
/// seed 5) under `dir/parties`, and a `train` config of them in `dir/t.toml`: plaintext
/// aggregation on the CPU, epsilon 1, and `privacy` (more `[privacy]` lines) added.
pub(crate) fn three_parties_config(dir: &Path, rows: &str, dim: &str, privacy: &str) -> PathBuf {
    let parties = dir.join("parties");
    ok(&[
        "generate",
        "--parties",
        "3",
        "--rows",
        rows,
        "--dim",
        dim,
        "--out",
        arg(&parties),
        "--seed",
        "5",
    ]);
    let list: Vec<String> = (1..=3)
        .map(|j| {
            format!(
                "\"{}\"",
                parties.join(format!("party-{j}.parquet")).display()
            )
        })
        .collect();
    let cfg = dir.join("t.toml");
    std::fs::write(
        &cfg,
        format!(
            "[data]\nparties = [{}]\n[privacy]\nepsilon = 1.0\n{privacy}[compute]\n\
             device = \"cpu\"\n[crypto]\naggregation = \"plaintext\"\n",
            list.join(", ")
        ),
    )
    .expect("config");
    cfg
}

/// Every number written in `text` (integers, decimals, exponents).
pub(crate) fn numbers(text: &str) -> Vec<f64> {
    text.split(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E')))
        .filter_map(|t| t.trim_matches(|c| c == '.' || c == '+').parse::<f64>().ok())
        .collect()
}
