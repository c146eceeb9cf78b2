//! The SuLQ analyses through the facade: a seed replays a release, the ledger charges each
//! analysis before its noise and refuses one past the budget.

use super::*;
use kinsey_dp::Neighbours;
use std::path::Path;

fn table(dir: &Path) -> std::path::PathBuf {
    let csv = dir.join("t.csv");
    let rows: String = (0..400)
        .map(|i| {
            format!(
                "{},{},{}\n",
                (i % 10) as f64 / 10.0,
                (i % 7) as f64 / 7.0,
                i % 2
            )
        })
        .collect();
    std::fs::write(&csv, format!("a,b,label\n{rows}")).expect("csv");
    csv
}

fn kmeans(path: &Path, seed: u64) -> Kmeans {
    let mut options = Options::new(1.0, 1e-6, Neighbours::Bounded);
    options.budget.seed = Some(seed);
    let mut input = Input::new(path);
    input.columns = vec!["a".into(), "b".into()];
    Kmeans {
        input,
        k: 2,
        iterations: 3,
        device: crate::DevicePref::Cpu,
        memory_limit: None,
        options,
    }
}

#[test]
fn a_seed_replays_a_kmeans_release_and_another_seed_does_not() {
    let dir = tempfile::tempdir().expect("tmp");
    let csv = table(dir.path());
    let write = |seed: u64, name: &str| {
        let out = dir.path().join(name);
        let run = kmeans(&csv, seed).run().expect("run");
        assert_eq!(run.names, ["a", "b"]);
        run.output.write(&out, |_| Ok(())).expect("write");
        std::fs::read(out.join("centers.csv")).expect("centres")
    };
    assert_eq!(write(3, "x"), write(3, "y"));
    assert_ne!(write(3, "w"), write(4, "z"));
    assert!(dir.path().join("x/report.json").exists());
    assert!(
        !dir.path()
            .join("x/run.NOT-PRIVATE.diagnostics.json")
            .exists()
    );
}

#[test]
fn the_ledger_charges_an_analysis_and_refuses_one_past_the_budget() {
    let dir = tempfile::tempdir().expect("tmp");
    let csv = table(dir.path());
    let ledger = crate::ledger::Ledger::open(dir.path().join("ledger.json"))
        .expect("open")
        .total(1.5, 1e-5)
        .expect("total");
    let mut k = kmeans(&csv, 1);
    k.options.ledger = Some(ledger.clone());
    k.run().expect("the first release fits the budget");
    assert_eq!(ledger.charged().len(), 1);
    let e = k.run().expect_err("the second does not");
    assert_eq!(e.kind(), kinsey_core::ErrorKind::BudgetExhausted, "{e}");
    let mut stat = Stat {
        input: Input::new(&csv),
        label: "label".into(),
        zero_one: true,
        tau: None,
        options: k.options.clone(),
    };
    stat.input.columns = vec!["a".into()];
    assert!(
        stat.run().is_err(),
        "the budget is spent for every analysis"
    );
}
