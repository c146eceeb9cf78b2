//! `kinsey predict` applies every model kinsey publishes, through the binary: the decision
//! tree (with its bins), the SuLQ perceptron (with its boxes and intercept) and the SuLQ
//! k-means centres, with `--id` passed through. The aggregate classifier's own test is in
//! `cli.rs` (`train_then_predict`).

use std::path::Path;
use std::process::Command;

fn ok(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_kinsey"))
        .args(args)
        .env("KINSEY_NO_PROGRESS", "1")
        .env("KINSEY_LOG", "warn")
        .output()
        .expect("run");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "kinsey {args:?}: {text}");
    text
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// 400 rows: an identifier, a 0/1 attribute, an age, two features in [0, 1], labels.
fn table(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("t.csv");
    let mut text = String::from("id,a,age,x1,x2,label,cls\n");
    for i in 0..400u32 {
        let (x1, x2) = (f64::from(i % 20) / 20.0, f64::from(i % 7) / 7.0);
        let label = if x1 + 0.3 * x2 > 0.6 { 1 } else { -1 };
        text.push_str(&format!(
            "p{i:04},{},{},{x1},{x2},{label},{}\n",
            i % 2,
            i % 90,
            u32::from(i % 90 > 40)
        ));
    }
    std::fs::write(&p, text).expect("write");
    p
}

fn rows(path: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .expect("csv")
        .lines()
        .map(|l| l.split(',').map(String::from).collect())
        .collect()
}

#[test]
fn every_toolbox_model_applies_with_ids() {
    let dir = tempfile::tempdir().expect("tmp");
    let t = table(dir.path());
    let common = ["--epsilon", "5", "--neighbours", "bounded"];

    let tree = dir.path().join("tree");
    let mut args = vec![
        "tree",
        "--input",
        s(&t),
        "--label",
        "cls",
        "--classes",
        "0,1",
    ];
    args.extend(["--attributes", "a,age:0:100:4", "--out", s(&tree)]);
    args.extend(common);
    ok(&args);
    // The diagram beside tree.json (issue 55): every leaf's class, the title's guarantee.
    let svg = std::fs::read_to_string(tree.join("tree.svg")).expect("diagram");
    assert!(tree.join("tree.png").exists());
    let leaves = std::fs::read_to_string(tree.join("tree.json"))
        .expect("tree")
        .matches("\"leaf\"")
        .count();
    let drawn = svg.matches("class ").count();
    assert!(
        leaves >= 1 && drawn == leaves,
        "{leaves} leaves, {drawn} drawn"
    );
    assert!(svg.contains("DP tree of &apos;cls&apos;"), "{svg}");
    let out = dir.path().join("tree.csv");
    let said = ok(&[
        "predict",
        "--model",
        s(&tree.join("tree.json")),
        "--input",
        s(&t),
        "--id",
        "id",
        "--out",
        s(&out),
    ]);
    assert!(
        said.contains("features (2): a, age") && said.contains("error rate"),
        "{said}"
    );
    let r = rows(&out);
    assert_eq!(r[0], ["row", "id", "p_0", "p_1", "class"]);
    assert_eq!(r.len(), 401);
    assert_eq!(r[5][1], "p0004");
    for row in &r[1..] {
        let p: f64 = row[2].parse::<f64>().expect("p") + row[3].parse::<f64>().expect("p");
        assert!((p - 1.0).abs() < 1e-9 && (row[4] == "0" || row[4] == "1"));
    }

    let perceptron = dir.path().join("perceptron");
    let mut args = vec!["sulq", "perceptron", "--input", s(&t), "--columns", "x1,x2"];
    args.extend(["--label", "label", "--intercept", "--out", s(&perceptron)]);
    args.extend(common);
    ok(&args);
    let out = dir.path().join("perceptron.csv");
    ok(&[
        "predict",
        "--model",
        s(&perceptron.join("model.json")),
        "--input",
        s(&t),
        "--id",
        "id",
        "--out",
        s(&out),
    ]);
    let r = rows(&out);
    assert_eq!(r[0], ["row", "id", "margin", "class"]);
    for row in &r[1..] {
        let margin: f64 = row[2].parse().expect("margin");
        assert_eq!(row[3], if margin > 0.0 { "1" } else { "-1" });
    }

    let kmeans = dir.path().join("kmeans");
    let mut args = vec![
        "sulq",
        "kmeans",
        "--input",
        s(&t),
        "--columns",
        "x1,x2,age:0:100",
    ];
    args.extend(["--k", "3", "--out", s(&kmeans)]);
    args.extend(common);
    ok(&args);
    // The centres come out in the columns' units: the age column's within [0, 100], and
    // at least one of them outside [0, 1].
    let centres = rows(&kmeans.join("centers.csv"));
    assert_eq!(centres[0], ["center", "noisy_size", "x1", "x2", "age"]);
    let ages: Vec<f64> = centres[1..]
        .iter()
        .map(|r| r[4].parse().expect("age"))
        .collect();
    assert!(ages.iter().all(|a| (0.0..=100.0).contains(a)), "{ages:?}");
    assert!(ages.iter().any(|&a| a > 1.0), "{ages:?}");
    let out = dir.path().join("kmeans.csv");
    ok(&[
        "predict",
        "--model",
        s(&kmeans.join("model.json")),
        "--input",
        s(&t),
        "--out",
        s(&out),
    ]);
    let r = rows(&out);
    assert_eq!(r[0], ["row", "distance_in_unit_box", "cluster"]);
    assert!(
        r[1..]
            .iter()
            .all(|row| ["0", "1", "2"].contains(&row[2].as_str()))
    );
}
