use super::*;

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

fn tree_text(root: &str) -> String {
    format!(
        r#"{{"kind":"{TREE_KIND}","label":"y","classes":[0.0,1.0],
        "attributes":[{{"name":"a","bins":null}},{{"name":"age","bins":[0.0,100.0,4]}}],
        "root":{root}}}"#
    )
}

const LEAF0: &str = r#"{"kind":"leaf","class":0,"counts":[9.0,1.0]}"#;
const LEAF1: &str = r#"{"kind":"leaf","class":1,"counts":[-2.0,6.0]}"#;

#[test]
fn a_tree_applies_with_its_bins_and_gives_leaf_proportions() {
    let dir = tempfile::tempdir().expect("tmp");
    let root = format!(
        r#"{{"kind":"split","attribute":1,"name":"age","count":20.0,"children":[{LEAF0},{LEAF0},
        {{"kind":"split","attribute":0,"name":"a","count":8.0,"children":[{LEAF0},{LEAF1}]}},{LEAF1}]}}"#
    );
    let model = Published::parse(Path::new("tree.json"), &tree_text(&root)).expect("parse");
    let input = write(
        dir.path(),
        "t.csv",
        "a,age\n0,10\n1,60\n0,60\n1,250\n0,-5\n",
    );
    let p = model.predict(input.as_path()).expect("predict");
    assert_eq!(p.predicted, ["0", "1", "0", "1", "0"]);
    let (names, probs) = p.probabilities.expect("probabilities");
    assert_eq!(names, ["0", "1"]);
    assert_eq!(probs[0], [0.9, 0.1]);
    assert_eq!(probs[1], [0.0, 1.0], "a negative noisy count is read as 0");
    let bad = write(dir.path(), "b.csv", "a,age\n2,60\n");
    let e = model.predict(bad.as_path()).expect_err("a is 0/1");
    assert!(e.to_string().contains("row 0"), "{e}");
}

#[test]
fn malformed_or_old_model_files_are_refused_naming_the_fix() {
    let p = Path::new("m.json");
    let three_children = format!(
        r#"{{"kind":"split","attribute":0,"name":"a","count":1.0,"children":[{LEAF0},{LEAF0},{LEAF0}]}}"#
    );
    for (text, words) in [
        (tree_text(&three_children), "3 children"),
        (
            tree_text(r#"{"kind":"leaf","class":5,"counts":[1.0,1.0]}"#),
            "class 5",
        ),
        (LEAF0.to_string(), "train the tree again"),
        (
            r#"{"kind":"kinsey.sulq_perceptron.v1","w":[1]}"#.into(),
            "again",
        ),
        (r#"{"kind":"nope"}"#.into(), "not a model kinsey applies"),
        (
            format!(
                r#"{{"kind":"{KMEANS_KIND}","columns":[{{"name":"x","bounds":null}}],"centres":[[0.1,0.2]],"centres_original":[]}}"#
            ),
            "finite numbers",
        ),
    ] {
        let e = Published::parse(p, &text).expect_err(words);
        assert!(e.to_string().contains(words), "{words}: {e}");
    }
}

#[test]
fn perceptron_and_kmeans_map_the_declared_boxes_like_training() {
    let dir = tempfile::tempdir().expect("tmp");
    let input = write(dir.path(), "t.csv", "hr,temp\n0,0.9\n23,0.1\n12,0.5\n");
    let cols = r#"[{"name":"hr","bounds":[0.0,23.0]},{"name":"temp","bounds":null}]"#;
    let perceptron =
        format!(r#"{{"kind":"{PERCEPTRON_KIND}","columns":{cols},"w":[1.0,0.0],"rule":"sign"}}"#);
    let p = Published::parse(Path::new("m"), &perceptron)
        .expect("parse")
        .predict(input.as_path())
        .expect("predict");
    // hr 0 maps to -1, 23 to +1.
    assert_eq!(
        p.predicted,
        ["-1", "1", "1"],
        "hr 0, 23, 12 map to -1, 1, 0.04"
    );
    let shifted = format!(
        r#"{{"kind":"{PERCEPTRON_KIND}","columns":{cols},"intercept":true,"w":[1.0,0.0,-0.5],"rule":"sign"}}"#
    );
    let p = Published::parse(Path::new("m"), &shifted)
        .expect("parse")
        .predict(input.as_path())
        .expect("predict");
    assert_eq!(
        p.predicted,
        ["-1", "1", "-1"],
        "the intercept shifts the margin"
    );
    let kmeans = format!(
        r#"{{"kind":"{KMEANS_KIND}","columns":{cols},"centres":[[0.0,0.9],[1.0,0.1]],
        "centres_original":[[0.0,0.9],[23.0,0.1]]}}"#
    );
    let k = Published::parse(Path::new("m"), &kmeans)
        .expect("parse")
        .predict(input.as_path())
        .expect("predict");
    assert_eq!(k.predicted, ["0", "1", "1"]);
    assert_eq!(k.features, ["hr", "temp"]);
    let cols: Vec<ColumnBounds> = serde_json::from_str(cols).expect("cols");
    assert_eq!(to_original(&cols, &[0.5, 0.25]), [11.5, 0.25]);
}
