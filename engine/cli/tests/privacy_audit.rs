//! The second privacy audit (issue 33), through the binary: secrets at rest, refusals that
//! depend only on public values, seeds that replay the same data only, and every sampler
//! exact at every accepted epsilon. Each test fails on the code the audit found.

use std::path::Path;
use std::process::{Command, Output};

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

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("file")).expect("json")
}

/// `kinsey ARGS` under `umask 000`: a file gets exactly the mode it was created with.
#[cfg(unix)]
fn ok_umask0(args: &[&str]) {
    let o = Command::new("sh")
        .arg("-c")
        .arg("umask 000 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_kinsey"))
        .args(args)
        .env("KINSEY_NO_PROGRESS", "1")
        .env("KINSEY_LOG", "warn")
        .output()
        .expect("sh runs");
    assert!(
        o.status.success(),
        "kinsey {args:?} failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[cfg(unix)]
fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).expect("stat").permissions().mode() & 0o777
}

/// Item 5: `keys generate`, `export`, `import` and `session init` wrote private keys 0644
/// (and `session init` chmod-ed them after the rename). Under a umask that removes nothing,
/// every private key is 0600 and the public files keep what the umask gives.
#[cfg(unix)]
#[test]
fn private_key_files_are_owner_only_under_a_permissive_umask() {
    let dir = tempfile::tempdir().expect("tmp");
    let keys = dir.path().join("keys");
    ok_umask0(&[
        "keys",
        "generate",
        "--out",
        arg(&keys),
        "--bits",
        "1024",
        "--allow-insecure-test-keys",
    ]);
    assert_eq!(mode(&keys.join("private.json")), 0o600);
    assert_eq!(
        mode(&keys.join("public.json")),
        0o666,
        "public: the umask's"
    );
    let phe = dir.path().join("phe");
    ok_umask0(&[
        "keys",
        "export",
        "--private",
        arg(&keys.join("private.json")),
        "--out",
        arg(&phe),
    ]);
    assert_eq!(mode(&phe.join("private.json")), 0o600);
    let back = dir.path().join("back");
    ok_umask0(&[
        "keys",
        "import",
        "--private",
        arg(&phe.join("private.json")),
        "--out",
        arg(&back),
    ]);
    assert_eq!(mode(&back.join("private.json")), 0o600);
    let session = dir.path().join("session");
    ok_umask0(&[
        "session",
        "init",
        "--parties",
        "2",
        "--out",
        arg(&session),
        "--dim",
        "3",
        "--rows",
        "50",
    ]);
    for who in ["curator", "party-1", "party-2"] {
        assert_eq!(mode(&session.join(who).join("key.pem")), 0o600, "{who}");
    }
}

/// A table of `n` rows: binary attributes `a`, `b`, an integer `t` in 0..=40 and a label
/// that follows `a` 90% of the time.
fn toolbox_csv(dir: &Path, n: usize, name: &str) -> std::path::PathBuf {
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

/// Item 7: `tree --row-bound B` under unbounded neighbours refused exactly when B < n, so
/// bisecting exit codes recovered n. Now every bound runs (the tree reads at most the first
/// B rows) and the report states the rule, never whether it cut anything.
#[test]
fn a_row_bound_below_n_is_not_an_oracle_for_n() {
    let dir = tempfile::tempdir().expect("tmp");
    let csv = toolbox_csv(dir.path(), 600, "t.csv");
    let mut reports = Vec::new();
    for bound in ["100", "599", "600", "601", "5000"] {
        let out = dir.path().join(format!("tree{bound}"));
        ok(&[
            "tree",
            "--input",
            arg(&csv),
            "--attributes",
            "a,b",
            "--epsilon",
            "1",
            "--neighbours",
            "unbounded",
            "--row-bound",
            bound,
            "--out",
            arg(&out),
        ]);
        let r = json(&out.join("report.json"));
        assert_eq!(r["count_sensitivity"].as_f64(), Some(2.0), "{bound}");
        let rule = r["rows_read"].as_str().expect("rule").to_string();
        assert!(rule.contains(&format!("first {bound} rows")), "{rule}");
        reports.push(rule.replace(bound, "B"));
    }
    reports.dedup();
    assert_eq!(
        reports.len(),
        1,
        "the report does not depend on n: {reports:?}"
    );
}
