use super::*;

fn charge(name: &str, eps: f64) -> Charge {
    let mut d = [0u8; 32];
    d[..name.len().min(32)].copy_from_slice(&name.as_bytes()[..name.len().min(32)]);
    Charge {
        dataset: DataDigest(d),
        input: name.into(),
        command: "stats mean".into(),
        epsilon: eps,
        delta: 0.0,
    }
}

#[test]
fn a_charge_over_the_budget_is_refused_naming_what_is_left_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("ledger.jsonl");
    let l = Ledger::new(path.clone(), Some((1.0, 0.0))).expect("ledger");
    let left = l.charge(&[charge("a", 0.6)]).expect("first");
    assert!((left[0].epsilon - 0.4).abs() < 1e-12);
    let before = std::fs::read(&path).expect("read");
    let e = l.charge(&[charge("a", 0.5)]).expect_err("over");
    let msg = e.to_string();
    assert!(
        msg.contains("epsilon 0.4") && msg.contains("budget 1"),
        "{msg}"
    );
    assert_eq!(std::fs::read(&path).expect("read"), before);
    // Another data set has its own budget; 0.1 + 0.2 + ... round-off does not refuse.
    l.charge(&[charge("b", 0.1), charge("b", 0.2), charge("b", 0.7)])
        .expect("exactly the budget");
    // All or nothing across charges: one over refuses them all.
    assert!(l.charge(&[charge("c", 0.5), charge("a", 0.5)]).is_err());
    let entries = l.entries().expect("entries");
    assert_eq!(entries.len(), 4);
    assert!(entries.iter().all(|e| e.input != "c"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).expect("stat").permissions().mode();
        assert_eq!(mode & 0o077, 0, "the ledger is owner-only");
    }
}

#[test]
fn the_first_entry_fixes_a_data_sets_budget() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("l");
    let none = Ledger::new(path.clone(), None).expect("ledger");
    let e = none.charge(&[charge("a", 0.1)]).expect_err("no budget");
    assert!(e.to_string().contains("--ledger-budget"), "{e}");
    Ledger::new(path.clone(), Some((2.0, 0.0)))
        .expect("ledger")
        .charge(&[charge("a", 0.1)])
        .expect("declared");
    none.charge(&[charge("a", 0.1)]).expect("recorded budget");
    let other = Ledger::new(path, Some((5.0, 0.0))).expect("ledger");
    let e = other.charge(&[charge("a", 0.1)]).expect_err("raised");
    assert!(e.to_string().contains("cannot change"), "{e}");
    assert!(Ledger::new("x".into(), Some((0.0, 0.0))).is_err());
}

#[test]
fn an_edited_reordered_or_truncated_ledger_is_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("l");
    let l = Ledger::new(path.clone(), Some((3.0, 0.0))).expect("ledger");
    for _ in 0..3 {
        l.charge(&[charge("a", 0.5)]).expect("charge");
    }
    let good = std::fs::read_to_string(&path).expect("read");
    let lines: Vec<&str> = good.lines().collect();
    let cases = [
        (
            "edited",
            good.replacen("\"epsilon\":0.5", "\"epsilon\":0.05", 1),
        ),
        ("first removed", lines[1..].join("\n") + "\n"),
        ("middle removed", format!("{}\n{}\n", lines[0], lines[2])),
        ("cut mid-line", good[..good.len() - 10].to_string()),
        ("not JSON", format!("{good}hello\n")),
    ];
    for (what, text) in cases {
        std::fs::write(&path, &text).expect("write");
        let e = l.charge(&[charge("a", 0.1)]).expect_err(what);
        assert!(e.to_string().contains("append-only"), "{what}: {e}");
        assert_eq!(
            std::fs::read_to_string(&path).expect("read"),
            text,
            "{what}"
        );
    }
    // The last entry removed is undetectable by the chain alone (a prefix is a valid
    // ledger): that is the rollback a backup restore does, stated in docs/privacy.md.
    std::fs::write(&path, &good).expect("restore");
    assert_eq!(l.entries().expect("entries").len(), 3);
}

/// Sixteen threads race to spend 0.25 each of a budget of 1: exactly four win, and the
/// ledger they leave is valid.
#[test]
fn concurrent_charges_never_overspend() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("l");
    let wins: usize = std::thread::scope(|s| {
        let handles: Vec<_> = (0..16)
            .map(|_| {
                let path = path.clone();
                s.spawn(move || {
                    let l = Ledger::new(path, Some((1.0, 0.0))).expect("ledger");
                    l.charge(&[charge("a", 0.25)]).is_ok()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| usize::from(h.join().expect("thread")))
            .sum()
    });
    assert_eq!(wins, 4);
    let l = Ledger::new(path, None).expect("ledger");
    assert_eq!(l.entries().expect("valid").len(), 4);
}

/// A run stopped after writing its temporary file but before the rename leaves the old
/// ledger whole; the stale file does not disturb the next charge.
#[test]
fn an_interrupted_write_leaves_the_old_ledger() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("l");
    let l = Ledger::new(path.clone(), Some((1.0, 0.0))).expect("ledger");
    l.charge(&[charge("a", 0.5)]).expect("charge");
    let before = std::fs::read(&path).expect("read");
    std::fs::write(dir.path().join(".l.999999.tmp"), b"half an entr").expect("stale");
    assert_eq!(std::fs::read(&path).expect("read"), before);
    l.charge(&[charge("a", 0.5)]).expect("next charge");
    assert_eq!(l.entries().expect("valid").len(), 2);
}
