//! The second privacy audit (issue 33), through the binary: secrets at rest, refusals that
//! depend only on public values, seeds that replay the same data only, and every sampler
//! exact at every accepted epsilon. Each test fails on the code the audit found.

mod common;
/// The third audit (issue 52).
#[path = "audit/third.rs"]
mod third;

use common::{arg, fails, json, ok, toolbox_csv};
use std::path::Path;
use std::process::Command;

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
    // export (kinsey's key to pheutil's) then import (back): each writes a private key.
    let mut from = keys.join("private.json");
    for (cmd, name) in [("export", "phe"), ("import", "back")] {
        let out = dir.path().join(name);
        ok_umask0(&["keys", cmd, "--private", arg(&from), "--out", arg(&out)]);
        from = out.join("private.json");
        assert_eq!(mode(&from), 0o600, "{cmd}");
    }
    let session = dir.path().join("session");
    ok_umask0(&[
        "session",
        "init",
        "--allow-two-parties",
        "--parties",
        "2",
        "--out",
        arg(&session),
        "--dim",
        "3",
        "--smallest-party",
        "50",
    ]);
    for who in ["curator", "party-1", "party-2"] {
        assert_eq!(mode(&session.join(who).join("key.pem")), 0o600, "{who}");
    }
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

/// Numbers of a CSV column (by header name).
fn csv_column(path: &Path, name: &str) -> Vec<f64> {
    let text = std::fs::read_to_string(path).expect("csv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let at = header.iter().position(|h| *h == name).expect("column");
    lines
        .map(|l| {
            l.split(',')
                .nth(at)
                .expect("cell")
                .trim_matches('"')
                .parse()
                .expect("number")
        })
        .collect()
}

/// Write `text` to `dir/data.csv` (one path for every table, as in the audit: the old key
/// bound the path, not the data) and run `kinsey ARGS --input dir/data.csv --out dir/OUT`;
/// returns the output path.
fn on_data(dir: &Path, text: &str, args: &[&str], out: &str) -> std::path::PathBuf {
    let input = write(dir, "data.csv", text);
    let out = dir.join(out);
    let mut a = args.to_vec();
    a.extend(["--input", arg(&input), "--out", arg(&out)]);
    ok(&a);
    out
}

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

/// Item 2 (histogram): `--seed 42 --epsilon 0.1` on a table and on the same table with one
/// row removed gave releases differing by exactly the removed row's bin. Now the noise of
/// neighbouring data is unrelated, and the same data replays.
#[test]
fn a_seed_gives_neighbouring_histograms_unrelated_noise() {
    let dir = tempfile::tempdir().expect("tmp");
    let rows: Vec<u32> = (0..1000u32).map(|i| (i * 7919) % 10).collect();
    let table = |skip: Option<usize>| -> String {
        let mut s = String::from("x\n");
        for (i, v) in rows.iter().enumerate() {
            if Some(i) != skip {
                s.push_str(&format!("{v}\n"));
            }
        }
        s
    };
    let noisy = |text: &str, out: &str| -> Vec<f64> {
        let out = on_data(
            dir.path(),
            text,
            &[
                "histogram",
                "--column",
                "x",
                "--bins",
                "0:10:10",
                "--epsilon",
                "0.1",
                "--neighbours",
                "unbounded",
                "--seed",
                "42",
            ],
            out,
        );
        json(&out.join("report.json"))["release"]["noisy"]
            .as_array()
            .expect("noisy")
            .iter()
            .map(|v| v.as_f64().expect("number"))
            .collect()
    };
    let a = noisy(&table(None), "a");
    let b = noisy(&table(Some(500)), "b");
    assert_eq!(a, noisy(&table(None), "a2"), "the same data replays");
    let exact_diff: Vec<f64> = (0..a.len())
        .map(|i| f64::from(u8::from(i == 1 + rows[500] as usize)))
        .collect();
    let diff: Vec<f64> = a.iter().zip(&b).map(|(x, y)| x - y).collect();
    assert_ne!(
        diff, exact_diff,
        "the noise cancelled: the removed row's bin shows"
    );
    let same = a
        .iter()
        .zip(&b)
        .zip(&exact_diff)
        .filter(|((x, y), e)| *x - *y == **e)
        .count();
    assert!(same <= 2, "{same} of {} bins kept their noise", a.len());
}

/// Item 2 (tree): the leaf counts of a seeded tree on neighbouring tables differed by
/// exactly the removed row.
#[test]
fn a_seed_gives_neighbouring_trees_unrelated_noise() {
    let dir = tempfile::tempdir().expect("tmp");
    let text = std::fs::read_to_string(toolbox_csv(dir.path(), 800, "t.csv")).expect("csv");
    let mut lines: Vec<&str> = text.lines().collect();
    lines.remove(400);
    let less = lines.join("\n") + "\n";
    let counts = |text: &str, out: &str| -> Vec<f64> {
        let out = on_data(
            dir.path(),
            text,
            &[
                "tree",
                "--attributes",
                "a,b",
                "--depth",
                "0",
                "--score",
                "gini",
                "--epsilon",
                "0.5",
                "--neighbours",
                "unbounded",
                "--seed",
                "42",
            ],
            out,
        );
        json(&out.join("tree.json"))["root"]["counts"]
            .as_array()
            .expect("leaf counts")
            .iter()
            .map(|v| v.as_f64().expect("number"))
            .collect()
    };
    let a = counts(&text, "a");
    let b = counts(&less, "b");
    assert_eq!(a, counts(&text, "a2"), "the same data replays");
    let diff: Vec<f64> = a.iter().zip(&b).map(|(x, y)| x - y).collect();
    assert!(
        !(diff.iter().all(|d| *d == 0.0 || *d == 1.0) && diff.iter().sum::<f64>() == 1.0),
        "the counts differ by exactly the removed row: {diff:?}"
    );
}

/// Item 2 (SuLQ): k-means under bounded neighbours on a table and on the same table with one
/// cell changed: the noisy cluster size was the same number (same count, same noise).
#[test]
fn a_seed_gives_neighbouring_sulq_releases_unrelated_noise() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut s = String::from("a,b\n");
    for i in 0..300u32 {
        s.push_str(&format!(
            "{:.4},{:.4}\n",
            f64::from(i % 17) / 17.0,
            f64::from(i % 11) / 11.0
        ));
    }
    let changed = s.replacen("0.0000,0.0000", "0.0010,0.0000", 1);
    let size = |text: &str, out: &str| -> f64 {
        let out = on_data(
            dir.path(),
            text,
            &[
                "sulq",
                "kmeans",
                "--columns",
                "a,b",
                "--k",
                "1",
                "--iterations",
                "1",
                "--epsilon",
                "1",
                "--neighbours",
                "bounded",
                "--seed",
                "3",
            ],
            out,
        );
        csv_column(&out.join("centers.csv"), "noisy_size")[0]
    };
    let a = size(&s, "a");
    assert_eq!(a, size(&s, "a2"), "the same data replays");
    assert_ne!(a, size(&changed, "b"), "one changed cell kept the noise");
}

/// Item 2 (decayed sums): a window sum over a bit series and the same series with one step
/// flipped: exactly the 64 estimates whose window holds the step changed, each by -1.
#[test]
fn a_seed_gives_neighbouring_series_unrelated_noise() {
    let dir = tempfile::tempdir().expect("tmp");
    let bits: Vec<u8> = (0..2000u32)
        .map(|i| u8::from(i.wrapping_mul(2654435761) >> 31 == 1))
        .collect();
    let series = |flip: Option<usize>| -> String {
        let mut s = String::from("count\n");
        for (i, b) in bits.iter().enumerate() {
            let v = if Some(i) == flip { 1 - b } else { *b };
            s.push_str(&format!("{v}\n"));
        }
        s
    };
    // Every mechanism (issue 38) and the models the k-ary tree computes.
    for (mech, model) in [
        ("tree", &["--model", "window", "--window", "64"][..]),
        ("kary", &["--model", "window", "--window", "64"][..]),
        ("kary", &["--model", "running"][..]),
        ("best", &["--model", "exponential", "--alpha", "0.9"][..]),
        ("zcdp:tree", &["--model", "window", "--window", "64"][..]),
        ("zcdp:blt", &["--model", "running"][..]),
        (
            "zcdp:blt",
            &["--model", "exponential", "--alpha", "0.9"][..],
        ),
    ] {
        let (budget, mech) = match mech.strip_prefix("zcdp:") {
            Some(m) => (&["--privacy", "zcdp", "--rho", "0.5"][..], m),
            None => (&["--epsilon", "1"][..], mech),
        };
        let run = |text: &str, out: &str| -> Vec<f64> {
            let mut args = vec!["decay", "--column", "count", "--mechanism", mech];
            args.extend_from_slice(model);
            args.extend_from_slice(budget);
            args.extend_from_slice(&["--bound", "1", "--seed", "42"]);
            let out = on_data(
                dir.path(),
                text,
                &args,
                &format!("{mech}-{}-{}-{out}", budget[1], model[1]),
            );
            csv_column(&out, "estimate")
        };
        let a = run(&series(None), "a.csv");
        assert_eq!(a, run(&series(None), "a2.csv"), "the same series replays");
        let b = run(&series(Some(1000)), "b.csv");
        let changed = a.iter().zip(&b).filter(|(x, y)| x != y).count();
        assert!(
            changed > 1900,
            "{mech} {model:?}: only {changed} of 2000 estimates changed: the noise was kept"
        );
    }
}

/// `1 - |cos|` of two vectors: 0 when one is a multiple of the other.
fn off_line(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let n = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    1.0 - (dot / (n(a) * n(b))).abs()
}

fn model_weights(path: &Path) -> Vec<f64> {
    json(path)["w"]
        .as_array()
        .expect("w")
        .iter()
        .map(|v| v.as_f64().expect("number"))
        .collect()
}

/// Item 2 (demo): `demo --seed 7` with 300 and 301 rows per party gave models on one line
/// (the same noise direction, scaled by the sizes), so `w1 - (s1/s2) w2` cancelled the
/// noise. At a small epsilon the models are mostly noise: now they point anywhere.
#[test]
fn a_seed_gives_demos_on_other_data_unrelated_noise() {
    let dir = tempfile::tempdir().expect("tmp");
    let demo = |rows: &str, out: &str| -> Vec<f64> {
        let out = dir.path().join(out);
        ok(&[
            "demo",
            "--out",
            arg(&out),
            "--seed",
            "7",
            "--smallest-party",
            rows,
            "--parties",
            "3",
            "--epsilon",
            "0.001",
            "--backend",
            "mock",
            "--allow-insecure",
            "--no-diagnostics",
        ]);
        model_weights(&out.join("model.json"))
    };
    let a = demo("300", "a");
    assert_eq!(a, demo("300", "a2"), "the same data replays");
    let b = demo("301", "b");
    assert!(
        off_line(&a, &b) > 1e-3,
        "the two models share their noise direction"
    );
}

/// Item 2 (train): one row replaced at a party that is not the smallest. Only the smallest
/// party's noise is published, so binding each party's noise to its own data would not do:
/// the published noise must change with any party's data.
#[test]
fn a_seed_gives_a_row_changed_at_another_party_unrelated_noise() {
    let dir = tempfile::tempdir().expect("tmp");
    let libsvm = |n: usize, shift: usize, change: bool| -> String {
        (0..n)
            .map(|i| {
                let v = ((i + shift) % 10) as f64 / 20.0;
                let w = if change && i == 5 { 0.45 } else { 0.3 };
                let y = if (i + shift).is_multiple_of(3) {
                    "-1"
                } else {
                    "+1"
                };
                format!("{y} 1:{v} 2:{w}\n")
            })
            .collect()
    };
    let convert = |name: &str, text: String| {
        let src = write(dir.path(), &format!("{name}.txt"), &text);
        let out = dir.path().join(format!("{name}.parquet"));
        ok(&[
            "convert",
            "--libsvm",
            arg(&src),
            "--dim",
            "2",
            "--out",
            arg(&out),
            "--overwrite",
        ]);
    };
    let train = |changed: bool, out: &str| -> Vec<f64> {
        convert("p1", libsvm(200, 0, false)); // the smallest party
        convert("p2", libsvm(400, 1, changed));
        convert("p3", libsvm(500, 2, false));
        let cfg = write(
            dir.path(),
            "train.toml",
            &format!(
                "[data]\nparties = [\"p1.parquet\", \"p2.parquet\", \"p3.parquet\"]\n\
                 [model]\nlambda = 0.01\n[privacy]\nepsilon = 0.001\nseed = 11\n\
                 [compute]\ndevice = \"cpu\"\n[crypto]\naggregation = \"plaintext\"\n\
                 [output]\ndir = \"{out}\"\n"
            ),
        );
        ok(&["train", "--config", arg(&cfg)]);
        model_weights(&dir.path().join(out).join("model.json"))
    };
    let a = train(false, "a");
    assert_eq!(a, train(false, "a2"), "the same data replays");
    let b = train(true, "b");
    assert!(
        off_line(&a, &b) > 1e-3,
        "the smallest party's noise survived the change: {a:?} {b:?}"
    );
}

/// The sweep of refusals: under unbounded neighbours an empty table and a one-row table are
/// neighbours, so refusing "zero rows" told them apart (tree, SuLQ). Every toolbox command
/// now runs on it (noise only); under bounded neighbours, where n is public, it is refused.
#[test]
fn an_empty_table_is_refused_only_where_n_is_public() {
    let dir = tempfile::tempdir().expect("tmp");
    let empty = write(dir.path(), "empty.csv", "a,b,label\n");
    let one = write(dir.path(), "one.csv", "a,b,label\n1,0,1\n");
    for (nb, input) in [("unbounded", &empty), ("unbounded", &one)] {
        let out = |name: &str| {
            dir.path()
                .join(format!("{name}-{}", input.display().to_string().len()))
        };
        for args in [
            vec!["histogram", "--column", "a", "--bins", "0:1:2"],
            vec!["tree", "--attributes", "a,b", "--score", "gini"],
            vec!["sulq", "kmeans", "--columns", "a,b", "--k", "2"],
            vec!["sulq", "pca", "--columns", "a,b", "--components", "1"],
        ] {
            let o = out(args[0..2].join("-").as_str());
            let mut a = args.clone();
            a.extend(["--input", arg(input), "--epsilon", "1", "--neighbours", nb]);
            a.extend(["--out", arg(&o)]);
            ok(&a);
        }
    }
    let e = fails(&[
        "tree",
        "--input",
        arg(&empty),
        "--attributes",
        "a,b",
        "--score",
        "gini",
        "--epsilon",
        "1",
        "--neighbours",
        "bounded",
        "--out",
        arg(&dir.path().join("b")),
    ]);
    assert!(e.contains("zero rows"), "{e}");
}
