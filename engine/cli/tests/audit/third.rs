//! The third privacy audit (issue 52), through the binary and the facade: the budget ledger
//! as a security boundary (charge, then compute, then publish; one ledger for every front
//! door; data sets by name and bytes), spills that never outlive a run, and lines that
//! follow n only when asked. Each test fails on the code the audit found. A module of
//! `privacy_audit.rs`, so the audits share one test binary (one link less in CI).

use crate::common::{arg, kinsey, numbers, ok, toolbox_csv};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn quiet(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kinsey"));
    c.args(args)
        .env("KINSEY_NO_PROGRESS", "1")
        .env("KINSEY_LOG", "warn");
    c
}

/// The arguments as `&str`.
fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// `kinsey stats sum` of column `t` (0..=40) of `input`, charged to `ledger`, and `extra`.
fn stats_sum(input: &Path, out: &Path, ledger: &Path, eps: &str, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<&str> = vec![
        "stats",
        "sum",
        "--input",
        arg(input),
        "--column",
        "t",
        "--bounds",
        "0:40",
        "--neighbours",
        "unbounded",
        "--epsilon",
        eps,
        "--out",
        arg(out),
        "--ledger",
        arg(ledger),
    ];
    v.extend(extra);
    v.into_iter().map(String::from).collect()
}

/// Every entry under `dir`, hidden ones included.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            out.push(p.clone());
            if p.is_dir() {
                out.extend(walk(&p));
            }
        }
    }
    out
}

/// Item 1: a release was staged on disk (its noisy values readable) while its charge
/// waited on the ledger's lock, and removed only after the refusal. Now the charge comes
/// first: while the run waits on the lock of an exhausted ledger, nothing of its release
/// exists anywhere, and after the refusal nothing does either.
#[test]
fn a_refused_release_is_never_written_anywhere() {
    let dir = tempfile::tempdir().expect("tmp");
    let input = toolbox_csv(dir.path(), 20_000, "t.csv");
    let ledgers = dir.path().join("ledgers");
    std::fs::create_dir(&ledgers).expect("mkdir");
    let ledger = ledgers.join("l.jsonl");
    let first = stats_sum(
        &input,
        &dir.path().join("first"),
        &ledger,
        "1",
        &["--ledger-budget", "1"],
    );
    ok(&refs(&first));
    // Hold the ledger's lock (its folder's), as a concurrent charge would.
    let lock = std::fs::File::open(&ledgers).expect("open the folder");
    lock.lock().expect("lock");
    let refused = dir.path().join("refused");
    let mut child = quiet(&refs(&stats_sum(&input, &refused, &ledger, "0.5", &[])))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(1500) {
        let staged: Vec<PathBuf> = walk(dir.path())
            .into_iter()
            .filter(|p| {
                let name = p.to_string_lossy();
                name.contains(".kinsey-tmp") || name.contains("refused")
            })
            .collect();
        assert!(staged.is_empty(), "written before its charge: {staged:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        child.try_wait().expect("wait").is_none(),
        "it waits on the lock"
    );
    drop(lock);
    let o = child.wait_with_output().expect("wait");
    assert!(!o.status.success());
    assert!(text(&o).contains("budget exceeded"), "{}", text(&o));
    assert!(!refused.exists());
    assert!(
        !walk(dir.path())
            .iter()
            .any(|p| p.to_string_lossy().contains(".kinsey-tmp")),
        "no staging left"
    );
}

/// Item 4: the data set is its bytes, not its file's name: a byte-identical copy is charged
/// to the first data set; a data set named by its owner keeps its budget when its file
/// changes, and the run says so.
#[test]
fn a_copy_is_the_same_data_set_and_a_named_data_set_keeps_its_budget() {
    let dir = tempfile::tempdir().expect("tmp");
    let input = toolbox_csv(dir.path(), 3000, "a.csv");
    let ledger = dir.path().join("l.jsonl");
    let a = stats_sum(
        &input,
        &dir.path().join("oa"),
        &ledger,
        "0.75",
        &["--ledger-budget", "1"],
    );
    ok(&refs(&a));
    let copy = dir.path().join("renamed-copy.csv");
    std::fs::copy(&input, &copy).expect("copy");
    let b = stats_sum(
        &copy,
        &dir.path().join("ob"),
        &ledger,
        "0.5",
        &["--ledger-budget", "1"],
    );
    let o = kinsey(&refs(&b));
    assert!(!o.status.success(), "a copy has no fresh budget");
    let t = text(&o);
    assert!(t.contains("budget exceeded") && t.contains("a.csv"), "{t}");
    // Named by its owner: a changed file under the name is charged to it, said.
    let other = toolbox_csv(dir.path(), 2000, "h.csv");
    let named = ["--ledger-budget", "1", "--ledger-dataset", "hospital-a"];
    ok(&refs(&stats_sum(
        &other,
        &dir.path().join("oh"),
        &ledger,
        "0.6",
        &named,
    )));
    let mut bytes = std::fs::read(&other).expect("read");
    bytes.extend_from_slice(b"1,0,7,1\n");
    std::fs::write(&other, bytes).expect("append a row");
    let h2 = stats_sum(&other, &dir.path().join("oh2"), &ledger, "0.6", &named[2..]);
    let o = kinsey(&refs(&h2));
    assert!(!o.status.success(), "0.6 + 0.6 is past 1: {}", text(&o));
    let h3 = stats_sum(&other, &dir.path().join("oh3"), &ledger, "0.3", &named[2..]);
    let said = ok(&refs(&h3));
    assert!(said.contains("changed since its last release"), "{said}");
    // A command of two inputs takes no single name.
    let im = dir.path().join("im");
    let o = kinsey(&[
        "sulq",
        "implication",
        "--a",
        arg(&input),
        "--alpha",
        "a",
        "--b",
        arg(&copy),
        "--beta",
        "label>=1",
        "--epsilon",
        "1",
        "--neighbours",
        "bounded",
        "--out",
        arg(&im),
        "--ledger",
        arg(&ledger),
        "--ledger-dataset",
        "x",
    ]);
    assert!(text(&o).contains("ledger-dataset"), "{}", text(&o));
}

/// Item 4: a release made through the Rust facade is charged to the same ledger as the CLI
/// (and Python: python/tests): the budget spans front doors.
#[test]
fn the_facade_and_the_cli_charge_one_ledger() {
    use kinsey::prelude::*;
    let dir = tempfile::tempdir().expect("tmp");
    let input = toolbox_csv(dir.path(), 3000, "a.csv");
    let ledger_path = dir.path().join("l.jsonl");
    let ledger = Ledger::open(&ledger_path)
        .and_then(|l| l.total(1.0, 0.0))
        .expect("ledger");
    Histogram::count()
        .epsilon(0.6)
        .neighbours(Neighbours::Unbounded)
        .ledger(&ledger)
        .of_column(&input, "t")
        .expect("charged and released");
    let o = kinsey(&refs(&stats_sum(
        &input,
        &dir.path().join("o"),
        &ledger_path,
        "0.5",
        &[],
    )));
    assert!(
        text(&o).contains("budget exceeded"),
        "the CLI sees the facade's charge: {}",
        text(&o)
    );
    let e = Histogram::count()
        .epsilon(0.5)
        .neighbours(Neighbours::Unbounded)
        .ledger(&ledger)
        .of_column(&input, "t")
        .expect_err("the facade refuses past the budget");
    assert!(e.to_string().contains("budget exceeded"), "{e}");
    let entries = ledger.entries().expect("entries");
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].command, "count");
    // Decayed sums through the facade: charged before the noise, refused past the budget.
    let series = dir.path().join("s.csv");
    std::fs::write(&series, "value\n1\n0\n2\n1\n").expect("series");
    let out = DecayedSum::running()
        .epsilon(1.0)
        .bound(Bound::clamp(1.0).expect("bound"))
        .device(DevicePref::Cpu)
        .ledger(&ledger)
        .over_file(&series, "value")
        .expect("a fresh data set");
    // Item 7: its Debug form shows no NOT PRIVATE count.
    let shown = format!("{out:?}");
    assert!(!shown.contains("clamped"), "{shown}");
    assert!(
        DecayedSum::running()
            .epsilon(0.1)
            .bound(Bound::clamp(1.0).expect("bound"))
            .ledger(&ledger)
            .over_file(&series, "value")
            .is_err()
    );
}

/// `kill -SIG pid` (the workspace denies unsafe code: no libc::kill).
fn signal(pid: u32, sig: &str) {
    let _ = Command::new("kill").args([sig, &pid.to_string()]).status();
}

/// The spill folders under `dir`.
fn spills(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(".kinsey-spill-"))
                .collect()
        })
        .unwrap_or_default()
}

/// Item 5: SIGINT, SIGTERM and SIGHUP during a memory-limited `train` removed the staged
/// outputs but left every party's raw rows in `OUT/.kinsey-spill-*`. Now each signal removes
/// the spill too; after SIGKILL (which no process can serve) the next run in that folder
/// removes the dead run's spill and says so.
#[test]
fn spills_never_outlive_a_run() {
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = crate::common::three_parties_config(dir.path(), "1000000", "40", "");
    let out = dir.path().join("out");
    let train = || {
        quiet(&[
            "train",
            "--config",
            arg(&cfg),
            "--out",
            arg(&out),
            "--memory-limit",
            "200MiB",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn")
    };
    for sig in ["-INT", "-TERM", "-HUP", "-KILL"] {
        let _ = std::fs::remove_dir_all(&out);
        let child = train();
        let t = Instant::now();
        while spills(&out).is_empty() && t.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(!spills(&out).is_empty(), "{sig}: the run spills");
        signal(child.id(), sig);
        let o = child.wait_with_output().expect("wait");
        assert!(!o.status.success(), "{sig}");
        if sig == "-KILL" {
            assert_eq!(spills(&out).len(), 1, "SIGKILL cannot be served");
        } else {
            assert!(
                !out.exists() || spills(&out).is_empty(),
                "{sig}: {:?} left: {}",
                spills(&out),
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }
    // The next run in that folder removes the dead run's spill, and says so.
    let dead = spills(&out);
    let o = quiet(&[
        "train",
        "--config",
        arg(&cfg),
        "--out",
        arg(&out),
        "--memory-limit",
        "200MiB",
    ])
    .output()
    .expect("runs");
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains(&dead[0]) && text(&o).contains("killed"),
        "{}",
        text(&o)
    );
    assert!(spills(&out).is_empty());
}

/// Every number in `text` with half a unit of its last printed digit: the distance within
/// which a value printed to that precision reads the same.
fn printed_numbers(text: &str) -> Vec<(f64, f64)> {
    text.split(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E')))
        .filter_map(|t| {
            let t = t.trim_matches(|c| c == '.' || c == '+');
            let x = t.parse::<f64>().ok()?;
            let (mantissa, exp) = match t.split_once(['e', 'E']) {
                Some((m, e)) => (m, e.parse::<i32>().ok()?),
                None => (t, 0),
            };
            let decimals = mantissa.split_once('.').map_or(0, |(_, d)| d.len()) as i32;
            Some((x, 0.5 * 10f64.powi(exp - decimals) * (1.0 + 1e-9)))
        })
        .collect()
}

/// What a run printed (stdout and stderr) with every number found in its release files, to
/// its printed precision, masked as `#`: what it says beyond the release.
fn said_beyond_release(out: &Path, printed: &str) -> String {
    let released: Vec<f64> = walk(out)
        .iter()
        .filter(|p| p.is_file())
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .flat_map(|t| numbers(&t))
        .collect();
    let is_num = |c: char| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E');
    let mut masked = String::new();
    let mut rest = printed;
    while let Some(start) = rest.find(is_num) {
        masked.push_str(&rest[..start]);
        let end = rest[start..]
            .find(|c| !is_num(c))
            .map_or(rest.len(), |e| start + e);
        let token = &rest[start..end];
        let in_release = printed_numbers(token)
            .first()
            .is_some_and(|(x, tol)| released.iter().any(|r| (x.abs() - r.abs()).abs() <= *tol));
        masked.push_str(if in_release { "#" } else { token });
        rest = &rest[end..];
    }
    masked.push_str(rest);
    masked
}

/// Item 6: `sulq kmeans` and `perceptron` (and `train`, for party sizes) printed whether
/// the rows fit the memory limit without `--diagnostics`, before the charge: bisecting
/// `--memory-limit` gave the exact n for no budget. Now every command run without
/// `--diagnostics` on tables of 3,000 and 300,000 rows (n private: unbounded neighbours,
/// one seed, a memory limit that the smaller table's rows fit and the larger one's do
/// not) prints the same text but for the numbers of its release.
#[test]
fn no_line_follows_n_without_diagnostics() {
    let dir = tempfile::tempdir().expect("tmp");
    let small = toolbox_csv(dir.path(), 3000, "small.csv");
    let large = toolbox_csv(dir.path(), 300_000, "large.csv");
    let commands: Vec<Vec<&str>> = vec![
        vec!["stats", "sum", "--column", "t", "--bounds", "0:40"],
        vec!["stats", "mean", "--column", "t", "--bounds", "0:40"],
        vec!["stats", "quantiles", "--column", "t", "--bounds", "0:40"],
        vec!["histogram", "--column", "t", "--bins", "0:40:4"],
        vec!["histogram", "--column", "t"],
        vec!["tree", "--attributes", "a,b", "--score", "gini"],
        vec![
            "sulq",
            "kmeans",
            "--columns",
            "a,b,t:0:40",
            "--k",
            "2",
            "--device",
            "cpu",
            "--memory-limit",
            "2MiB",
        ],
        vec!["sulq", "pca", "--columns", "a,b,t:0:40"],
        vec!["sulq", "stat", "--columns", "a,b"],
        vec![
            "sulq",
            "perceptron",
            "--columns",
            "a,b",
            "--memory-limit",
            "2MiB",
        ],
    ];
    for (i, cmd) in commands.into_iter().enumerate() {
        let tag = char::from(b'a' + i as u8);
        let run = |input: &Path, name: &str| {
            let out = dir.path().join(format!("{tag}-{name}"));
            let mut a: Vec<&str> = cmd.clone();
            a.extend([
                "--input",
                arg(input),
                "--epsilon",
                "2",
                "--neighbours",
                "unbounded",
                "--seed",
                "9",
                "--out",
                arg(&out),
            ]);
            let o = kinsey(&a);
            assert!(o.status.success(), "{a:?}: {}", text(&o));
            let printed = text(&o).replace(arg(&out), "OUT").replace(arg(input), "IN");
            said_beyond_release(&out, &printed)
        };
        let (a, b) = (run(&small, "small"), run(&large, "large"));
        assert_eq!(a, b, "{cmd:?} prints what follows n");
    }
}

/// Item 7: NOT PRIVATE diagnostics were written with the umask (0644 under 022): now
/// owner-only whatever the umask.
#[cfg(unix)]
#[test]
fn diagnostics_are_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tmp");
    let input = toolbox_csv(dir.path(), 500, "t.csv");
    let out = dir.path().join("o");
    let o = Command::new("sh")
        .arg("-c")
        .arg("umask 000 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_kinsey"))
        .args([
            "stats",
            "mean",
            "--input",
            arg(&input),
            "--column",
            "t",
            "--bounds",
            "0:40",
            "--epsilon",
            "1",
            "--neighbours",
            "bounded",
            "--diagnostics",
            "--out",
            arg(&out),
        ])
        .env("KINSEY_NO_PROGRESS", "1")
        .output()
        .expect("sh");
    assert!(o.status.success(), "{}", text(&o));
    let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(&out.join("run.NOT-PRIVATE.diagnostics.json")), 0o600);
    assert_eq!(
        mode(&out.join("stats.csv")),
        0o666,
        "a release keeps the umask's"
    );
}

/// Item 7: `decay --model exponential --mechanism kary` built its tree from the series'
/// length with `--evaluate` (a NOT PRIVATE flag) and from no horizon without it: another
/// release for the same seed and data. Now the release is the same bytes.
#[test]
fn a_decay_release_does_not_depend_on_evaluate() {
    let dir = tempfile::tempdir().expect("tmp");
    let series = dir.path().join("s.csv");
    let mut s = String::from("value\n");
    for i in 0..3000 {
        s.push_str(&format!("{}\n", i % 3));
    }
    std::fs::write(&series, s).expect("series");
    for mechanism in ["kary", "best"] {
        let run = |name: &str, extra: &[&str]| {
            let out = dir.path().join(format!("{mechanism}-{name}.csv"));
            let mut a = vec![
                "decay",
                "--input",
                arg(&series),
                "--model",
                "exponential",
                "--alpha",
                "0.9",
                "--mechanism",
                mechanism,
                "--epsilon",
                "1",
                "--bound",
                "2",
                "--seed",
                "4",
                "--device",
                "cpu",
                "--out",
                arg(&out),
            ];
            a.extend(extra);
            ok(&a);
            let report = PathBuf::from(format!("{}.report.json", out.display()));
            (
                std::fs::read(&out).expect("estimates"),
                std::fs::read_to_string(report).expect("report"),
            )
        };
        let (plain, rp) = run("plain", &[]);
        let (evaluated, re) = run("evaluated", &["--evaluate"]);
        assert!(plain == evaluated, "{mechanism}: the estimates differ");
        let strip = |r: &str| r.replace("evaluated", "plain");
        assert_eq!(strip(&rp), strip(&re), "{mechanism}");
    }
    // Issue 57's mechanisms: the smooth tree (running sums) and the window's square root
    // (zCDP) take the series' length as their horizon with and without --evaluate.
    for (name, model) in [
        (
            "smooth",
            &[
                "--model",
                "running",
                "--mechanism",
                "smooth",
                "--epsilon",
                "1",
            ][..],
        ),
        (
            "sqrt",
            &[
                "--model",
                "window",
                "--window",
                "40",
                "--mechanism",
                "sqrt",
                "--privacy",
                "zcdp",
                "--rho",
                "0.5",
            ][..],
        ),
    ] {
        let run = |tag: &str, extra: &[&str]| {
            let out = dir.path().join(format!("{name}-{tag}.csv"));
            let mut a = vec![
                "decay",
                "--input",
                arg(&series),
                "--bound",
                "2",
                "--seed",
                "4",
            ];
            a.extend(model);
            a.extend(["--out", arg(&out)]);
            a.extend(extra);
            ok(&a);
            std::fs::read(&out).expect("estimates")
        };
        assert!(
            run("plain", &[]) == run("evaluated", &["--evaluate"]),
            "{name}"
        );
    }
}

/// A run that fails after its charge says that the charge stands (its noise may have been
/// drawn), and the ledger keeps it.
#[test]
fn a_run_that_fails_after_its_charge_says_the_charge_stands() {
    let dir = tempfile::tempdir().expect("tmp");
    let input = toolbox_csv(dir.path(), 500, "t.csv");
    let ledger = dir.path().join("l.jsonl");
    // The output path runs through a file: found only when the release is written.
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "x").expect("w");
    let a = stats_sum(
        &input,
        &blocker.join("out"),
        &ledger,
        "0.5",
        &["--ledger-budget", "1"],
    );
    let o = kinsey(&refs(&a));
    assert!(!o.status.success());
    assert!(text(&o).contains("charge stands"), "{}", text(&o));
    let entries = std::fs::read_to_string(&ledger).expect("ledger");
    assert_eq!(entries.lines().count(), 1);
}

/// The key where the owner names it: `kinsey ledger init` creates the ledger and its key
/// there, releases charge it with `--ledger-key`, `kinsey ledger show` checks every entry
/// against it, and without the key the ledger cannot be used.
#[test]
fn a_ledger_with_its_key_where_the_owner_says() {
    let dir = tempfile::tempdir().expect("tmp");
    let input = toolbox_csv(dir.path(), 500, "t.csv");
    let keys = dir.path().join("owner-only");
    std::fs::create_dir(&keys).expect("mkdir");
    let ledger = dir.path().join("l.jsonl");
    let key = keys.join("ledger.key");
    let with_key = ["--ledger", arg(&ledger), "--ledger-key", arg(&key)];
    let mut init = with_key.to_vec();
    init.extend(["ledger", "init"]);
    assert!(ok(&init).contains("created"));
    assert!(!kinsey(&init).status.success(), "created once");
    let mut a = stats_sum(
        &input,
        &dir.path().join("o"),
        &ledger,
        "0.25",
        &["--ledger-budget", "1"],
    );
    a.extend(["--ledger-key".to_string(), arg(&key).to_string()]);
    ok(&refs(&a));
    let mut show = with_key.to_vec();
    show.extend(["ledger", "show"]);
    let shown = ok(&show);
    assert!(
        shown.contains("1 release(s) of 1 data set(s)") && shown.contains("epsilon 0.250000 of 1"),
        "{shown}"
    );
    // Without the owner's key (none beside the ledger) nothing is charged.
    let o = kinsey(&refs(&stats_sum(
        &input,
        &dir.path().join("o2"),
        &ledger,
        "0.25",
        &[],
    )));
    assert!(
        !o.status.success() && text(&o).contains("key"),
        "{}",
        text(&o)
    );
    assert!(!dir.path().join("o2").exists());
}

/// A release's own parameters are checked before its charge: a refused parameter costs
/// nothing (the ledger is not even created).
#[test]
fn a_bad_parameter_costs_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let input = toolbox_csv(dir.path(), 500, "t.csv");
    let ledger = dir.path().join("l.jsonl");
    let out = dir.path().join("o");
    let cases: [&[&str]; 4] = [
        &[
            "sulq",
            "kmeans",
            "--columns",
            "a,b",
            "--k",
            "0",
            "--neighbours",
            "bounded",
        ],
        &["tree", "--attributes", "a,b", "--neighbours", "unbounded"],
        &[
            "tree",
            "--attributes",
            "a,b",
            "--depth",
            "100",
            "--neighbours",
            "bounded",
        ],
        &[
            "stats",
            "sum",
            "--column",
            "t",
            "--bounds",
            "5:1",
            "--neighbours",
            "bounded",
        ],
    ];
    for case in cases {
        let mut a = case.to_vec();
        a.extend([
            "--input",
            arg(&input),
            "--epsilon",
            "1",
            "--out",
            arg(&out),
            "--ledger",
            arg(&ledger),
            "--ledger-budget",
            "1",
        ]);
        let o = kinsey(&a);
        assert!(!o.status.success(), "{case:?}");
        assert!(
            !text(&o).contains("charge stands"),
            "{case:?}: {}",
            text(&o)
        );
        assert!(!ledger.exists(), "{case:?} was charged");
    }
}
