use super::*;
use crate::output::Outputs;
use crate::sparse::read_libsvm_sparse;
use arrow::array::{Float64Builder, Int32Builder, Int64Array, ListBuilder, MapBuilder};

fn read(path: &Path, dim: usize, layout: &SparseLayout) -> Result<SparseDataset> {
    let labels = ("label", LabelEncoding::PlusMinusOne);
    read_sparse_parquet_within(path, (dim, layout), labels, &mut |_| Ok(()))
}

/// A file of whatever columns `cols` are (for the layouts and the bad files).
fn write_raw(path: &Path, cols: Vec<(&str, ArrayRef)>) {
    let batch = RecordBatch::try_from_iter(cols).expect("batch");
    let file = File::create(path).expect("file");
    let mut w = ArrowWriter::try_new(file, batch.schema(), None).expect("writer");
    w.write(&batch).expect("write");
    w.close().expect("close");
}

/// a9a written by `SparseParquetRows` (in two blocks, and as a directory of two files)
/// reads back as the CSR the LIBSVM reader makes; the map layout reads the same rows.
#[test]
fn a9a_round_trips_through_both_layouts() {
    let a9a = crate::testdata::shared_data_dir().join("a9a/a9a");
    let csr = read_libsvm_sparse(&a9a, 123, LabelEncoding::PlusMinusOne).expect("a9a");
    let tmp = tempfile::tempdir().expect("tmp");
    let (file, dir) = (tmp.path().join("a9a.parquet"), tmp.path().join("parts"));
    let half = csr.n() / 2;
    let part = |r: std::ops::Range<usize>| {
        let (a, b) = (csr.indptr[r.start], csr.indptr[r.end]);
        SparseDataset {
            indptr: csr.indptr[r.start..=r.end].iter().map(|p| p - a).collect(),
            indices: csr.indices[a..b].to_vec(),
            values: csr.values[a..b].to_vec(),
            y: csr.y[r].to_vec(),
            ..csr.clone()
        }
    };
    let mut o = Outputs::new();
    o.ensure_dir(&dir).expect("dir");
    let mut w = SparseParquetRows::create(&mut o, &file, "label").expect("create");
    w.write(&part(0..half)).expect("write");
    w.write(&part(half..csr.n())).expect("write");
    w.finish().expect("finish");
    for (j, r) in [(1, 0..half), (2, half..csr.n())] {
        let p = dir.join(format!("part-{j}.parquet"));
        let mut w = SparseParquetRows::create(&mut o, &p, "label").expect("create");
        w.write(&part(r)).expect("write");
        w.finish().expect("finish");
    }
    o.commit().expect("commit");
    let lists = SparseLayout::default();
    let back = read(&file, 123, &lists).expect("read");
    assert_eq!(
        (&back.indptr, &back.indices, &back.values, &back.y),
        (&csr.indptr, &csr.indices, &csr.values, &csr.y)
    );
    assert_eq!(back.features, csr.features);
    let both = read(&dir, 123, &lists).expect("dir");
    assert_eq!((&both.indices, &both.y), (&csr.indices, &csr.y));
    // The map layout: index -> value, Int32 keys and Float64 values.
    let mut m = MapBuilder::new(None, Int32Builder::new(), Float64Builder::new());
    for r in 0..csr.n() {
        for k in csr.indptr[r]..csr.indptr[r + 1] {
            m.keys().append_value(csr.indices[k] as i32);
            m.values().append_value(f64::from(csr.values[k]));
        }
        m.append(true).expect("row");
    }
    let map_file = tmp.path().join("map.parquet");
    let y = Arc::new(Float32Array::from(csr.y.clone())) as ArrayRef;
    write_raw(
        &map_file,
        vec![("label", y), ("x", Arc::new(m.finish()) as ArrayRef)],
    );
    let map = SparseLayout::Map { column: "x".into() };
    let back = read(&map_file, 123, &map).expect("map");
    assert_eq!(
        (&back.indptr, &back.indices, &back.values),
        (&csr.indptr, &csr.indices, &csr.values)
    );
}

/// Every bad row is refused naming its file, its column and its row (from 0).
#[test]
fn bad_rows_name_their_column_and_row() {
    let tmp = tempfile::tempdir().expect("tmp");
    let list = |rows: Vec<Option<Vec<Option<i64>>>>| -> ArrayRef {
        let mut b = ListBuilder::new(arrow::array::Int64Builder::new());
        for r in rows {
            match r {
                Some(items) => {
                    for i in items {
                        b.values().append_option(i);
                    }
                    b.append(true);
                }
                None => b.append(false),
            }
        }
        Arc::new(b.finish())
    };
    let ok_vals = |n: usize, len: usize| list(vec![Some(vec![Some(1); len]); n]);
    let y = |n: usize| Arc::new(Float32Array::from(vec![1f32; n])) as ArrayRef;
    let cases: Vec<(&str, ArrayRef, ArrayRef, &str, &str)> = vec![
        (
            "outside",
            list(vec![Some(vec![Some(0)]), Some(vec![Some(5)])]),
            ok_vals(2, 1),
            "row 1",
            "outside 0..5",
        ),
        (
            "negative",
            list(vec![Some(vec![Some(-1)])]),
            ok_vals(1, 1),
            "row 0",
            "outside 0..5",
        ),
        (
            "unsorted",
            list(vec![Some(vec![]), Some(vec![Some(3), Some(1)])]),
            list(vec![Some(vec![]), Some(vec![Some(1), Some(1)])]),
            "row 1",
            "strictly ascending",
        ),
        (
            "repeated",
            list(vec![Some(vec![Some(2), Some(2)])]),
            ok_vals(1, 2),
            "row 0",
            "strictly ascending",
        ),
        (
            "lengths",
            list(vec![Some(vec![Some(0)]), Some(vec![Some(1)])]),
            list(vec![Some(vec![Some(1)]), Some(vec![])]),
            "row 1",
            "1 indices but 0 values",
        ),
        (
            "null row",
            list(vec![Some(vec![Some(0)]), None]),
            ok_vals(2, 1),
            "row 1",
            "null row",
        ),
        (
            "null element",
            list(vec![Some(vec![Some(0)]), Some(vec![Some(1), None])]),
            ok_vals(2, 2),
            "row 1",
            "null element",
        ),
    ];
    for (name, idx, vals, row, msg) in cases {
        let p = tmp.path().join(format!("{name}.parquet"));
        let n = idx.len();
        write_raw(
            &p,
            vec![("label", y(n)), ("indices", idx), ("values", vals)],
        );
        let e = read(&p, 5, &SparseLayout::default())
            .expect_err(name)
            .to_string();
        assert!(
            e.contains(row)
                && e.contains(msg)
                && e.contains("indices")
                && e.contains(&format!("{name}.parquet")),
            "{name}: {e}"
        );
    }
    // A non-finite value names the row its list is in; a flat column is not a list.
    let p = tmp.path().join("nan.parquet");
    let idx = list(vec![Some(vec![Some(0)]), Some(vec![Some(0), Some(1)])]);
    let mut vb = ListBuilder::new(Float64Builder::new());
    vb.values().append_value(0.5);
    vb.append(true);
    vb.values().append_value(0.5);
    vb.values().append_value(f64::NAN);
    vb.append(true);
    write_raw(
        &p,
        vec![
            ("label", y(2)),
            ("indices", idx),
            ("values", Arc::new(vb.finish())),
        ],
    );
    let e = read(&p, 5, &SparseLayout::default())
        .expect_err("nan")
        .to_string();
    assert!(
        e.contains("values") && e.contains("row 1") && e.contains("non-finite"),
        "{e}"
    );
    let p = tmp.path().join("flat.parquet");
    let flat = Arc::new(Int64Array::from(vec![0i64, 1])) as ArrayRef;
    write_raw(
        &p,
        vec![("label", y(2)), ("indices", flat.clone()), ("values", flat)],
    );
    let e = read(&p, 5, &SparseLayout::default())
        .expect_err("flat")
        .to_string();
    assert!(e.contains("expected a list"), "{e}");
    let e = read(
        &p,
        5,
        &SparseLayout::Map {
            column: "indices".into(),
        },
    )
    .expect_err("map")
    .to_string();
    assert!(e.contains("expected a map"), "{e}");
    let e = read(
        &p,
        5,
        &SparseLayout::Lists {
            indices: "idx".into(),
            values: "values".into(),
        },
    )
    .expect_err("missing")
    .to_string();
    assert!(e.contains("idx") && e.contains("the columns are"), "{e}");
}
