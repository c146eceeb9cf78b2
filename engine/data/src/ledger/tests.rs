use super::*;

fn digest_of(name: &str) -> DataDigest {
    let mut d = [0u8; 32];
    d[..name.len().min(32)].copy_from_slice(&name.as_bytes()[..name.len().min(32)]);
    DataDigest(d)
}

/// A charge of data set `name` whose bytes are `name` too.
fn charge(name: &str, eps: f64) -> Charge {
    Charge::of_digest(digest_of(name), name, name, "stats mean", (eps, 0.0)).expect("charge")
}

#[cfg(unix)]
fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).expect("stat").permissions().mode() & 0o777
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
    for p in [&path, &l.key_path, &l.head_path] {
        assert_eq!(mode(p), 0o600, "{} is owner-only", p.display());
    }
}

/// A release with a delta (a classifier's L2 noise states one of about 1e-60) against a
/// budget without one is refused saying so, its numbers short (not 60 decimals).
#[test]
fn a_delta_without_a_delta_budget_is_refused_with_the_fix() {
    let dir = tempfile::tempdir().expect("tmp");
    let l = Ledger::new(dir.path().join("l"), Some((2.0, 0.0))).expect("ledger");
    let c = Charge::of_digest(digest_of("a"), "a", "a", "train", (1.0, 2.3e-60)).expect("c");
    let msg = l.charge(&[c]).expect_err("no delta budget").to_string();
    assert!(
        msg.contains("delta 2.3e-60") && msg.contains("EPSILON:DELTA"),
        "{msg}"
    );
    let ok = Ledger::new(dir.path().join("m"), Some((2.0, 1e-9))).expect("ledger");
    let c = Charge::of_digest(digest_of("a"), "a", "a", "train", (1.0, 2.3e-60)).expect("c");
    ok.charge(&[c]).expect("a delta budget covers it");
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

/// Item 2 of the third privacy audit: every entry is keyed, the last one included, and the
/// head catches a ledger cut short.
#[test]
fn an_edited_reordered_truncated_or_rewritten_ledger_is_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("l");
    let l = Ledger::new(path.clone(), Some((3.0, 0.0))).expect("ledger");
    for _ in 0..3 {
        l.charge(&[charge("a", 0.5)]).expect("charge");
    }
    let good = std::fs::read_to_string(&path).expect("read");
    let lines: Vec<&str> = good.lines().collect();
    // The same entries keyed with another key: what rewriting with recomputed MACs gives.
    let forged = {
        let d2 = tempfile::tempdir().expect("tmp");
        let p2 = d2.path().join("l");
        let l2 = Ledger::new(p2.clone(), Some((3.0, 0.0))).expect("ledger");
        l2.charge(&[charge("a", 0.5)]).expect("charge");
        std::fs::read_to_string(&p2).expect("read")
    };
    let cases = [
        (
            "first edited",
            good.replacen("\"epsilon\":0.5", "\"epsilon\":0.05", 1),
        ),
        (
            "last edited",
            format!(
                "{}\n{}\n{}\n",
                lines[0],
                lines[1],
                lines[2].replace("\"epsilon\":0.5", "\"epsilon\":0.05")
            ),
        ),
        (
            "budget raised",
            good.replace("\"budget_epsilon\":3.0", "\"budget_epsilon\":30.0"),
        ),
        ("first removed", lines[1..].join("\n") + "\n"),
        ("middle removed", format!("{}\n{}\n", lines[0], lines[2])),
        ("last removed", format!("{}\n{}\n", lines[0], lines[1])),
        (
            "reordered",
            format!("{}\n{}\n{}\n", lines[1], lines[0], lines[2]),
        ),
        ("emptied", String::new()),
        ("cut mid-line", good[..good.len() - 10].to_string()),
        ("not JSON", format!("{good}hello\n")),
        ("rewritten under another key", forged),
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
    std::fs::write(&path, &good).expect("restore");
    assert_eq!(l.entries().expect("entries").len(), 3);
    // A head behind the ledger (a run stopped between its two renames) is accepted.
    let head = std::fs::read(&l.head_path).expect("head");
    l.charge(&[charge("a", 0.1)]).expect("charge");
    std::fs::write(&l.head_path, &head).expect("old head");
    assert_eq!(l.entries().expect("entries").len(), 4);
    // A head rewritten, or removed, is refused.
    std::fs::write(&l.head_path, "{\"seq\":4,\"mac\":\"00\"}\n").expect("forged head");
    assert!(l.entries().is_err());
    std::fs::remove_file(&l.head_path).expect("rm");
    assert!(l.entries().is_err());
}

#[test]
fn a_deleted_ledger_a_lost_key_a_shared_key_or_an_old_ledger_is_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("l");
    let l = Ledger::new(path.clone(), Some((1.0, 0.0))).expect("ledger");
    l.charge(&[charge("a", 0.5)]).expect("charge");
    let good = std::fs::read(&path).expect("read");
    std::fs::remove_file(&path).expect("rm");
    let e = l.charge(&[charge("a", 0.5)]).expect_err("deleted");
    assert!(e.to_string().contains("missing"), "{e}");
    std::fs::write(&path, &good).expect("restore");
    let key = std::fs::read(&l.key_path).expect("key");
    std::fs::remove_file(&l.key_path).expect("rm");
    let e = l.entries().expect_err("no key");
    assert!(e.to_string().contains("key"), "{e}");
    std::fs::write(&l.key_path, &key).expect("restore key");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&l.key_path, std::fs::Permissions::from_mode(0o644))
            .expect("chmod");
        let e = l.entries().expect_err("readable key");
        assert!(e.to_string().contains("owner-only"), "{e}");
        std::fs::set_permissions(&l.key_path, std::fs::Permissions::from_mode(0o600))
            .expect("chmod");
    }
    assert_eq!(l.entries().expect("entries").len(), 1);
    // A ledger of an earlier kinsey (unkeyed) is named as such.
    let old = dir.path().join("old");
    std::fs::write(
        &old,
        "{\"seq\":1,\"unix_time\":0,\"dataset\":\"ab\",\"input\":\"x\",\"command\":\"c\",\
         \"epsilon\":1.0,\"delta\":0.0,\"budget_epsilon\":1.0,\"budget_delta\":0.0,\"prev\":\"e3\"}\n",
    )
    .expect("old");
    let e = Ledger::new(old, None)
        .expect("ledger")
        .entries()
        .expect_err("old");
    assert!(e.to_string().contains("unkeyed"), "{e}");
}

/// Item 3: a ledger reached through a symbolic link stays one ledger.
#[cfg(unix)]
#[test]
fn a_ledger_through_a_link_is_the_same_ledger() {
    let dir = tempfile::tempdir().expect("tmp");
    let real = dir.path().join("real.jsonl");
    let other = tempfile::tempdir().expect("tmp");
    let link = other.path().join("link.jsonl");
    let l = Ledger::new(real.clone(), Some((1.0, 0.0))).expect("ledger");
    l.charge(&[charge("a", 0.5)]).expect("charge");
    std::os::unix::fs::symlink(&real, &link).expect("link");
    let via = Ledger::new(link.clone(), None).expect("ledger");
    assert_eq!(via.path, std::fs::canonicalize(&real).expect("real"));
    via.charge(&[charge("a", 0.5)])
        .expect("charge through the link");
    assert!(
        std::fs::symlink_metadata(&link)
            .expect("stat")
            .file_type()
            .is_symlink(),
        "the link is still a link"
    );
    let e = l.charge(&[charge("a", 0.1)]).expect_err("spent");
    assert!(e.to_string().contains("budget exceeded"), "{e}");
    // A link to nothing is refused.
    let dangling = other.path().join("nothing.jsonl");
    std::os::unix::fs::symlink(dir.path().join("absent"), &dangling).expect("link");
    assert!(Ledger::new(dangling, None).is_err());
}

/// Item 4: data sets by name and bytes.
#[test]
fn the_same_bytes_are_one_data_set_and_changed_bytes_keep_their_name() {
    let dir = tempfile::tempdir().expect("tmp");
    let l = Ledger::new(dir.path().join("l"), Some((1.0, 0.0))).expect("ledger");
    let first = Charge::of_digest(digest_of("bytes"), "hospital", "a.csv", "c", (0.5, 0.0))
        .expect("charge");
    assert_eq!(l.charge(&[first]).expect("charge")[0].note, None);
    // The same bytes under another name: the first data set's budget.
    let copy =
        Charge::of_digest(digest_of("bytes"), "copy", "b.csv", "c", (0.3, 0.0)).expect("charge");
    let left = l.charge(std::slice::from_ref(&copy)).expect("charge");
    assert_eq!(left[0].dataset, "hospital");
    assert!(
        left[0]
            .note
            .as_deref()
            .is_some_and(|n| n.contains("hospital"))
    );
    assert!(l.charge(&[copy]).is_err(), "0.8 + 0.3 is past 1");
    // Changed bytes under the known name: its budget, said.
    let changed = Charge::of_digest(digest_of("new bytes"), "hospital", "a.csv", "c", (0.2, 0.0))
        .expect("charge");
    let left = l.charge(&[changed]).expect("charge");
    assert!(
        left[0]
            .note
            .as_deref()
            .is_some_and(|n| n.contains("changed"))
    );
    assert!(left[0].epsilon.abs() < 1e-12);
    assert!(Charge::of_digest(digest_of("x"), "", "x", "c", (0.1, 0.0)).is_err());
}

#[test]
fn init_creates_an_empty_ledger_with_a_key_where_the_owner_says() {
    let dir = tempfile::tempdir().expect("tmp");
    let keys = tempfile::tempdir().expect("tmp");
    let key = keys.path().join("owner.key");
    let l = Ledger::with_key(dir.path().join("l"), Some(key.clone()), Some((1.0, 0.0)))
        .expect("ledger");
    l.init().expect("init");
    assert!(l.init().is_err(), "created once");
    assert!(key.exists() && !dir.path().join("l.key").exists());
    assert_eq!(l.entries().expect("empty").len(), 0);
    l.charge(&[charge("a", 0.5)]).expect("charge");
    // Without the owner's key, the ledger cannot be read.
    let e = Ledger::new(dir.path().join("l"), None)
        .expect("ledger")
        .entries()
        .expect_err("no key beside it");
    assert!(e.to_string().contains("key"), "{e}");
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
