use super::*;
use crate::columns::{count_rows, read_categorical, read_numeric};
use arrow::array::{Float64Array, Int64Array, StringArray};
use arrow::datatypes::{Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use std::sync::Arc;

/// A Parquet file of columns x (f64, `None` a null), k (i64) and t (text), in row groups
/// of `group` rows.
fn parquet(path: &Path, x: &[Option<f64>], group: usize) {
    let n = x.len();
    let schema = Arc::new(Schema::new(vec![
        Field::new("x", DataType::Float64, true),
        Field::new("k", DataType::Int64, false),
        Field::new("t", DataType::Utf8, false),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Float64Array::from(x.to_vec())),
            Arc::new(Int64Array::from(
                (0..n as i64).map(|i| i % 3).collect::<Vec<_>>(),
            )),
            Arc::new(StringArray::from(
                (0..n).map(|i| format!("c{}", i % 4)).collect::<Vec<_>>(),
            )),
        ],
    )
    .expect("batch");
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(group))
        .build();
    let f = File::create(path).expect("create");
    let mut w = ArrowWriter::try_new(f, schema, Some(props)).expect("writer");
    w.write(&batch).expect("write");
    w.close().expect("close");
}

/// Every block of `columns` of `path` at `block_rows`, concatenated per column.
fn read_all(path: &Path, columns: &[(&str, Want)], block_rows: usize) -> Result<Vec<Cells>> {
    let mut b = ColumnBlocks::open(path, columns, block_rows)?;
    let mut all: Vec<Cells> = columns
        .iter()
        .map(|(_, w)| match w {
            Want::Numeric => Cells::Numeric(vec![]),
            Want::Categorical => Cells::Categorical(vec![]),
            Want::Count => Cells::Rows(0),
        })
        .collect();
    while let Some(cells) = b.next_block()? {
        assert!(cells.iter().all(|c| c.len() <= block_rows));
        for (a, c) in all.iter_mut().zip(cells) {
            match (a, c) {
                (Cells::Numeric(a), Cells::Numeric(c)) => a.extend(c),
                (Cells::Categorical(a), Cells::Categorical(c)) => a.extend(c),
                (Cells::Rows(a), Cells::Rows(c)) => *a += c,
                (a, c) => panic!("{a:?} then {c:?}"),
            }
        }
    }
    Ok(all)
}

fn row_of(e: &Error) -> (String, usize, String) {
    match e {
        Error::Value {
            column, row, msg, ..
        } => (column.clone(), *row, msg.clone()),
        other => panic!("not a value error: {other:?}"),
    }
}

#[test]
fn blocks_of_any_size_read_what_the_whole_column_readers_read() {
    let dir = tempfile::tempdir().expect("tmp");
    let csv = dir.path().join("a.csv");
    // A blank line and CRLF line ends: skipped and stripped as the whole readers do.
    let mut text = String::from("x,k,t\r\n");
    for i in 0..23 {
        text.push_str(&format!(
            "{}, {} ,c{}\r\n",
            i as f64 * 0.5 - 3.0,
            i % 3,
            i % 4
        ));
        if i == 10 {
            text.push_str("  \r\n");
        }
    }
    std::fs::write(&csv, text).expect("write");
    let pq = dir.path().join("a.parquet");
    let xs: Vec<Option<f64>> = (0..23).map(|i| Some(i as f64 * 0.5 - 3.0)).collect();
    parquet(&pq, &xs, 5);
    for path in [&csv, &pq] {
        let want = [
            ("x", Want::Numeric),
            ("t", Want::Categorical),
            ("k", Want::Count),
            ("k", Want::Categorical),
        ];
        for block_rows in [1, 2, 4, 7, 23, 100] {
            let all = read_all(path, &want, block_rows).expect("blocks");
            assert_eq!(all[0], Cells::Numeric(read_numeric(path, "x").expect("x")));
            assert_eq!(
                all[1],
                Cells::Categorical(read_categorical(path, "t").expect("t"))
            );
            assert_eq!(all[2], Cells::Rows(count_rows(path, "k").expect("k")));
            assert_eq!(
                all[3],
                Cells::Categorical(read_categorical(path, "k").expect("k"))
            );
        }
    }
}

#[test]
fn a_bad_cell_in_a_later_block_is_named_at_its_row_as_the_whole_reader_names_it() {
    let dir = tempfile::tempdir().expect("tmp");
    for (cell, expect) in [
        ("abc", "not a number"),
        ("NaN", "finite"),
        ("", "not a number"),
    ] {
        let csv = dir.path().join("b.csv");
        let mut text = String::from("x,t\n");
        for i in 0..20 {
            let x = if i == 13 {
                cell.to_string()
            } else {
                i.to_string()
            };
            text.push_str(&format!("{x},t{i}\n"));
        }
        std::fs::write(&csv, text).expect("write");
        let whole = row_of(&read_numeric(&csv, "x").expect_err("bad"));
        let e =
            read_all(&csv, &[("t", Want::Categorical), ("x", Want::Numeric)], 4).expect_err("bad");
        assert_eq!(row_of(&e), whole, "{cell}");
        assert_eq!(whole.1, 13);
        assert!(whole.2.contains(expect), "{}", whole.2);
        // The counted column refuses NaN only.
        let counted = read_all(&csv, &[("x", Want::Count)], 4);
        assert_eq!(counted.is_err(), cell == "NaN", "{cell}");
    }
    // Parquet: a null and a NaN in the third row group, named at their file row.
    let pq = dir.path().join("b.parquet");
    let mut xs: Vec<Option<f64>> = (0..20).map(|i| Some(i as f64)).collect();
    xs[12] = None;
    parquet(&pq, &xs, 5);
    let whole = row_of(&read_numeric(&pq, "x").expect_err("null"));
    let e = read_all(&pq, &[("x", Want::Numeric)], 3).expect_err("null");
    assert_eq!((row_of(&e), whole.1), (whole, 12));
    xs[12] = Some(1.0);
    xs[17] = Some(f64::NAN);
    parquet(&pq, &xs, 5);
    let e = read_all(&pq, &[("x", Want::Count)], 3).expect_err("NaN");
    assert_eq!(row_of(&e).1, 17);
    // A float column is no category.
    let e = read_all(&pq, &[("x", Want::Categorical)], 3).expect_err("float");
    assert!(e.to_string().contains("not categorical"), "{e}");
}

#[test]
fn a_directory_is_read_file_by_file_and_a_missing_column_is_named_before_any_block() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path().join("parts");
    std::fs::create_dir(&d).expect("dir");
    let first: Vec<Option<f64>> = (0..7).map(|i| Some(i as f64)).collect();
    let mut second: Vec<Option<f64>> = (7..16).map(|i| Some(i as f64)).collect();
    parquet(&d.join("part-0.parquet"), &first, 4);
    parquet(&d.join("part-1.parquet"), &second, 4);
    let all = read_all(&d, &[("x", Want::Numeric)], 3).expect("dir");
    assert_eq!(all[0], Cells::Numeric((0..16).map(f64::from).collect()));
    // An error names the file it is in and the row there.
    second[5] = None;
    parquet(&d.join("part-1.parquet"), &second, 4);
    match read_all(&d, &[("x", Want::Numeric)], 3).expect_err("null") {
        Error::Value { path, row, .. } => {
            assert_eq!((path, row), (d.join("part-1.parquet"), 5));
        }
        other => panic!("{other:?}"),
    }
    for path in [d.clone(), d.join("part-0.parquet")] {
        let e = ColumnBlocks::open(&path, &[("x", Want::Numeric), ("nope", Want::Numeric)], 3)
            .expect_err("missing");
        assert!(
            e.to_string()
                .contains("column not found; the columns are: x, k, t"),
            "{e}"
        );
    }
    let csv = dir.path().join("c.csv");
    std::fs::write(&csv, "x,k\n1,2\n").expect("write");
    let e = ColumnBlocks::open(&csv, &[("nope", Want::Count)], 3).expect_err("missing");
    assert!(e.to_string().contains("the columns are: x, k"), "{e}");
    assert!(ColumnBlocks::open(&csv, &[("x", Want::Count)], 0).is_err());
}

/// Quoted categories (as R and pandas write them) read unquoted: a histogram over "Lyon"
/// counts Lyon, not "(other)"; a quoted header and a byte-order mark read as the names.
#[test]
fn quoted_categories_and_headers_read_as_their_text() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("c.csv");
    std::fs::write(
        &p,
        "\u{feff}\"city\",\"n\"\r\n\"Lyon\",1\r\n\"Paris, 75\",2\r\nLyon,3\r\n",
    )
    .expect("w");
    for block_rows in [1, 2, 100] {
        let all = read_all(
            &p,
            &[("city", Want::Categorical), ("n", Want::Numeric)],
            block_rows,
        )
        .expect("read");
        match (&all[0], &all[1]) {
            (Cells::Categorical(c), Cells::Numeric(n)) => {
                assert_eq!(c, &["Lyon", "Paris, 75", "Lyon"]);
                assert_eq!(n, &[1.0, 2.0, 3.0]);
            }
            other => panic!("{other:?}"),
        }
    }
}

/// A file whose quotes start deep inside (after plain lines, in the middle of a block)
/// reads every row once, in order, at any block size: the lines before by the parallel
/// split, the rest as CSV records.
#[test]
fn a_quote_deep_in_the_file_switches_to_records_without_losing_a_row() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("d.csv");
    let mut text = String::from("x,label\n");
    let mut want = Vec::new();
    for i in 0..3000 {
        text.push_str(&format!("{},plain\n", i % 10));
        want.push((i % 10) as f64);
    }
    for i in 0..500 {
        text.push_str(&format!("{},\"quoted, \"\"{i}\"\"\nline\"\n", i % 7));
        want.push((i % 7) as f64);
    }
    std::fs::write(&p, text).expect("w");
    for block_rows in [1, 7, 1000, 1 << 16] {
        let all = read_all(
            &p,
            &[("x", Want::Numeric), ("label", Want::Categorical)],
            block_rows,
        )
        .expect("read");
        match (&all[0], &all[1]) {
            (Cells::Numeric(x), Cells::Categorical(l)) => {
                assert_eq!(x, &want, "block {block_rows}");
                assert_eq!(l[2999], "plain");
                assert_eq!(l[3000], "quoted, \"0\"\nline");
            }
            other => panic!("{other:?}"),
        }
    }
}
