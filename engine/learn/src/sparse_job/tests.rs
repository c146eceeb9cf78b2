use super::*;
use crate::aggregate::{NoiseKind, PlaintextAggregator, PrivacySpec, SensitivityDerivation};
use crate::logreg::{Objective, SolverConfig};
use kinsey_core::Silent as NoProgress;
use kinsey_data::{RowTransform, synth};
use std::path::Path;

fn spec(hessian_rows: usize, intercept: Option<f64>) -> JobSpec {
    JobSpec {
        objective: Objective::new(1e-3).expect("lambda"),
        solver: SolverConfig {
            hessian_rows,
            ..SolverConfig::default()
        },
        privacy: PrivacySpec {
            epsilon: 1.0,
            calibration: SensitivityDerivation::Tight,
            noise: NoiseKind::L2,
        },
        device: kinsey_kernels::DevicePref::Cpu,
        transform: RowTransform::Scale(0.5),
        intercept,
        aggregation: std::sync::Arc::new(PlaintextAggregator),
        allow_two_parties: false,
    }
}

/// Three parties as LIBSVM files, about a quarter of each row's features set (the rest
/// zero, so not written), the second of more than one 65,536-row read block.
fn parties(dir: &Path, d: usize) -> Vec<PathBuf> {
    [20_001usize, 70_001, 12_345]
        .iter()
        .enumerate()
        .map(|(j, &n)| {
            let ds = synth::generate(n, d, 4.0, 11, j as u64 + 1, "p".into());
            let mut text = String::new();
            for (i, row) in ds.x.chunks(d).enumerate() {
                text.push_str(if ds.y[i] > 0.0 { "+1" } else { "-1" });
                for (c, v) in row.iter().enumerate() {
                    if (i + 3 * c + j) % 4 == 0 && *v != 0.0 {
                        text.push_str(&format!(" {}:{v}", c + 1));
                    }
                }
                text.push('\n');
            }
            let p = dir.join(format!("party-{}.libsvm", j + 1));
            std::fs::write(&p, text).expect("write");
            p
        })
        .collect()
}

fn input(paths: &[PathBuf], d: usize) -> SparseInput {
    SparseInput {
        command: "train",
        parties: paths.to_vec(),
        files: SparseFiles::Libsvm,
        dim: d,
        labels: LabelEncoding::PlusMinusOne,
        test: None,
    }
}

/// Sparse parties publish the model of the same rows read dense, under one seed: the same
/// noise (the tags are the dense twins' digests) on the same local models to rounding,
/// with and without a Hessian subsample and an intercept; the diagnostics agree too, and
/// name the sparse passes. A party read with a different seed gets other noise.
#[test]
fn sparse_parties_publish_the_dense_model() {
    let tmp = tempfile::tempdir().expect("tmp");
    let d = 12;
    let paths = parties(tmp.path(), d);
    for (hessian_rows, intercept) in [(4096, None), (0, Some(0.5))] {
        let spec = spec(hessian_rows, intercept);
        let keys = NoiseKeys::new(Some(5), false, "job".into());
        let dense = pipeline::run(
            pipeline::RunInput {
                command: "train",
                parties: paths
                    .iter()
                    .map(|p| {
                        kinsey_data::libsvm::read_libsvm(p, d, LabelEncoding::PlusMinusOne)
                            .expect("dense")
                    })
                    .collect(),
                test: None,
                ingest_s: 0.0,
            },
            &spec,
            &keys,
            true,
            &NoProgress,
        )
        .expect("dense run");
        let sparse = run_sparse(input(&paths, d), &spec, &keys, true, u64::MAX, &NoProgress)
            .expect("sparse run");
        let (a, b) = (&sparse.release, &dense.release);
        assert_eq!(a.features, b.features);
        assert_eq!(
            serde_json::to_string(&a.guarantee).expect("json"),
            serde_json::to_string(&b.guarantee).expect("json")
        );
        assert_eq!(a.w.len(), b.w.len());
        for (x, y) in a.w.iter().zip(&b.w) {
            assert!((x - y).abs() <= 1e-9 * (1.0 + y.abs()), "{x} {y}");
        }
        let (da, db) = (
            sparse.diagnostics.expect("diagnostics"),
            dense.diagnostics.expect("diagnostics"),
        );
        assert_eq!(da.party_sizes, db.party_sizes);
        assert!(
            da.parties[0].device.contains("CSR"),
            "{}",
            da.parties[0].device
        );
        for (x, y) in da.models.iter().zip(&db.models) {
            assert!((x.objective - y.objective).abs() <= 1e-9 * y.objective.abs());
            assert_eq!(x.train_error, y.train_error);
        }
        let other = NoiseKeys::new(Some(6), false, "job".into());
        let moved = run_sparse(
            input(&paths, d),
            &spec,
            &other,
            false,
            u64::MAX,
            &NoProgress,
        )
        .expect("other seed");
        let gap: f64 = moved
            .release
            .w
            .iter()
            .zip(&b.w)
            .map(|(x, y)| (x - y).abs())
            .sum();
        assert!(gap > 1e-3, "another seed gave the same noise ({gap})");
    }
}

/// A limit the first party cannot fit in is refused as it is read, naming the party, its
/// file and the limit; one that holds one party at a time but not all of them refuses the
/// diagnostics (which keep every party) at the second party, and runs without them.
#[test]
fn a_limit_stops_the_read_naming_the_party() {
    let tmp = tempfile::tempdir().expect("tmp");
    let d = 12;
    let paths = parties(tmp.path(), d);
    let keys = NoiseKeys::new(None, false, "job".into());
    let spec = spec(4096, None);
    let e = run_sparse(
        input(&paths, d),
        &spec,
        &keys,
        false,
        PROCESS_BYTES + (256 << 10),
        &NoProgress,
    )
    .expect_err("a quarter of a megabyte past the engine cannot hold party 1")
    .to_string();
    for needle in ["memory_limit", "party 1", "party-1.libsvm", "96 MiB"] {
        assert!(e.contains(needle), "{needle}: {e}");
    }
    assert!(!e.contains("diagnostics"), "{e}");
    // Rows of about 3 non-zeros hold about 36 bytes each, with a 0.4 MB Hessian subsample:
    // party 2 alone needs under 3 MB, with party 1 kept about 3.7 MB.
    let limit = PROCESS_BYTES + 3_300_000;
    let e = run_sparse(input(&paths, d), &spec, &keys, true, limit, &NoProgress)
        .expect_err("every party kept")
        .to_string();
    assert!(
        e.contains("party 2") && e.contains("without --diagnostics"),
        "{e}"
    );
    run_sparse(input(&paths, d), &spec, &keys, false, limit, &NoProgress)
        .expect("one party at a time fits");
}

/// A limit below what the engine itself needs is refused before the party's file is
/// opened (a file that does not exist is not reached).
#[test]
fn a_limit_below_the_engine_is_refused_before_reading() {
    let keys = NoiseKeys::new(None, false, "job".into());
    let missing = vec![PathBuf::from("/nonexistent/party-1.libsvm"); 3];
    let e = run_sparse(
        input(&missing, 4),
        &spec(4096, None),
        &keys,
        false,
        1 << 20,
        &NoProgress,
    )
    .expect_err("1 MiB")
    .to_string();
    assert!(e.contains("memory_limit") && e.contains("1 MiB"), "{e}");
}
