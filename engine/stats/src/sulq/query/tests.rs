use super::*;
use kinsey_data::table::MATRIX_BLOCK_ROWS;
use kinsey_kernels::kmeans::cpu::CpuKmeans;

/// A CSV of more than two 65,536-row blocks in three clusters, one column in its own
/// units with a declared box (and a few values outside it, clipped).
fn table(dir: &Path) -> std::path::PathBuf {
    let n = 2 * MATRIX_BLOCK_ROWS + 4321;
    let mut text = String::from("a,b,c\n");
    for i in 0..n {
        let g = (i % 3) as f64;
        let jitter = ((i * 7919) % 1000) as f64 / 10_000.0;
        let c = if i % 5000 == 0 { 130.0 } else { 20.0 * g + 5.0 };
        text.push_str(&format!(
            "{},{},{c}\n",
            0.2 + 0.3 * g + jitter,
            0.9 - 0.3 * g + jitter
        ));
    }
    let p = dir.join("t.csv");
    std::fs::write(&p, text).expect("write");
    p
}

fn budget(seed: u64) -> Budget {
    Budget {
        epsilon: 1.0,
        delta: 1e-6,
        neighbours: Neighbours::Bounded,
        calibration: GaussianCalibration::Zcdp,
        seed: Some(seed),
        record_seed: false,
    }
}

fn columns() -> Columns {
    Columns {
        specs: vec!["a".into(), "b".into(), "c:0:100".into()],
        clip: false,
    }
}

/// On the CPU, k-means reads the file once and each step reads its rows a block at a time
/// (held, or from the spill past a memory limit), and releases, under one seed, exactly
/// what the same steps on the rows held whole release: the same centres and noisy sizes
/// to the bit (the sums are added in the kernel's order either way). Another seed gives
/// other noise.
#[test]
fn streamed_kmeans_is_the_whole_run() {
    let tmp = tempfile::tempdir().expect("tmp");
    let path = table(tmp.path());
    let cfg = KmeansConfig { k: 3, iters: 4 };
    // Past a 1 MiB limit the rows go to the spill; within the default they are held.
    let within = (DevicePref::Cpu, 1 << 20);
    let (a, init) =
        kmeans_within(&budget(9), path.as_path(), &columns(), &cfg, within).expect("spilled");
    assert!(a.matrix.is_none(), "the rows were held whole");
    assert!(a.spilled);
    let (held, _) = kmeans(
        &budget(9),
        path.as_path(),
        &columns(),
        &cfg,
        DevicePref::Cpu,
    )
    .expect("held");
    assert!(!held.spilled);
    // The release's words do not say which (it follows n).
    assert_eq!(held.run.about.device, a.run.about.device);
    assert_eq!(held.run.result.centers, a.run.result.centers);
    assert_eq!(held.run.result.size_history, a.run.result.size_history);
    // The same release from the rows held whole.
    let m = columns().read(path.as_path(), Range::Unit).expect("whole");
    assert_eq!(m.shape(), a.shape);
    assert!(m.clipped[2] > 0, "the box clips");
    let plan = kmeans::plan(
        &cfg,
        m.d,
        1.0,
        1e-6,
        GaussianCalibration::Zcdp,
        Neighbours::Bounded,
    )
    .expect("plan");
    let (mut rng, mut db) = open_table(
        &budget(9),
        path.as_path(),
        &m.shape(),
        plan,
        kmeans_run(&columns(), &cfg),
    )
    .expect("db");
    let init_whole = kmeans::random_centers(cfg.k, m.d, &mut rng);
    assert_eq!(init, init_whole);
    let cpu = CpuKmeans { x: &m.x, d: m.d };
    let whole = kmeans::run_kernel(&m, &cfg, &init_whole, &mut db, &cpu).expect("whole");
    assert_eq!(a.run.result.centers, whole.centers);
    assert_eq!(a.run.result.size_history, whole.size_history);
    let (other, _) = kmeans(
        &budget(10),
        path.as_path(),
        &columns(),
        &cfg,
        DevicePref::Cpu,
    )
    .expect("other");
    assert_ne!(other.run.result.size_history, whole.size_history);
}

/// PCA reads the file once, a block at a time, into exact Gram sums: the release under a
/// seed is that of the rows held whole (`pca::run`), centred or not.
#[test]
fn streamed_pca_is_the_whole_run() {
    let tmp = tempfile::tempdir().expect("tmp");
    let path = table(tmp.path());
    for center in [true, false] {
        let cfg = PcaConfig {
            components: 2,
            center,
        };
        let a = pca(&budget(4), path.as_path(), &columns(), &cfg).expect("streamed");
        let m = columns().read(path.as_path(), Range::Unit).expect("whole");
        let plan = pca::plan(
            &cfg,
            m.d,
            1.0,
            1e-6,
            GaussianCalibration::Zcdp,
            Neighbours::Bounded,
        )
        .expect("plan");
        let (_, mut db) = open_table(
            &budget(4),
            path.as_path(),
            &m.shape(),
            plan,
            pca_run(&columns(), &cfg),
        )
        .expect("db");
        let whole = pca::run(&m, &cfg, &mut db).expect("whole");
        assert_eq!(
            a.run.result.eigenvalues, whole.eigenvalues,
            "center {center}"
        );
        assert_eq!(a.run.result.components, whole.components);
        assert_eq!(a.run.result.mean, whole.mean);
    }
}

/// A bad cell past the first block stops the analysis before any noise is drawn, naming
/// its row, as reading the rows whole does.
#[test]
fn a_bad_cell_in_a_later_block_is_named() {
    let tmp = tempfile::tempdir().expect("tmp");
    let path = table(tmp.path());
    let text = std::fs::read_to_string(&path).expect("read");
    let mut lines: Vec<&str> = text.lines().collect();
    lines[100_001] = "1.7,0.5,20";
    std::fs::write(&path, lines.join("\n") + "\n").expect("write");
    let cfg = KmeansConfig { k: 3, iters: 2 };
    let e = kmeans(
        &budget(1),
        path.as_path(),
        &columns(),
        &cfg,
        DevicePref::Cpu,
    )
    .expect_err("1.7 is outside [0, 1]")
    .to_string();
    assert!(e.contains("row 100000") && e.contains("'a'"), "{e}");
    let e = pca(
        &budget(1),
        path.as_path(),
        &columns(),
        &PcaConfig {
            components: 1,
            center: true,
        },
    )
    .expect_err("1.7")
    .to_string();
    assert!(e.contains("row 100000"), "{e}");
}
