//! One way to declare binary labels (issue 55): `--labels plus_minus_one|zero_one` reads
//! the same in `convert`, `tree` and `sulq perceptron` as `labels` in a train config and in
//! Python, and gives the same release as each command's older spelling.

mod common;

use common::ok;
use std::path::Path;

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).expect("read")
}

#[test]
fn zero_one_labels_are_declared_one_way_everywhere() {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    let mut csv = String::from("a,b,label\n");
    for i in 0..300 {
        csv.push_str(&format!(
            "{},{},{}\n",
            i % 2,
            (i / 2) % 2,
            u8::from(i % 3 == 0)
        ));
    }
    let input = d.join("t.csv");
    std::fs::write(&input, csv).expect("csv");
    let s = |p: &Path| p.to_str().expect("utf-8").to_string();
    let tree = |out: &str, extra: &[&str]| {
        let mut args = vec![
            "tree".to_string(),
            "--input".into(),
            s(&input),
            "--attributes".into(),
            "a,b".into(),
            "--epsilon".into(),
            "1".into(),
            "--neighbours".into(),
            "bounded".into(),
            "--seed".into(),
            "3".into(),
            "--out".into(),
            s(&d.join(out)),
        ];
        args.extend(extra.iter().map(|x| x.to_string()));
        ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
        read(&d.join(out).join("tree.json"))
    };
    assert_eq!(
        tree("t1", &["--classes", "0,1"]),
        tree("t2", &["--labels", "zero_one"])
    );
    let perceptron = |out: &str, flag: &[&str]| {
        let mut args = vec![
            "sulq",
            "perceptron",
            "--input",
            &s(&input),
            "--columns",
            "a,b",
            "--epsilon",
            "1",
            "--neighbours",
            "bounded",
            "--seed",
            "3",
            "--out",
        ]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
        args.push(s(&d.join(out)));
        args.extend(flag.iter().map(|x| x.to_string()));
        ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
        read(&d.join(out).join("model.json"))
    };
    assert_eq!(
        perceptron("p1", &["--zero-one"]),
        perceptron("p2", &["--labels", "zero_one"])
    );
}
