//! `kinsey bench sulq`: fit times of SuLQ k-means and PCA on a Parquet/CSV matrix (the
//! load is timed apart), with the released centres and components so that a peer script
//! can score both libraries with one metric (`benches/sulq_vs_diffprivlib.sh`).

use super::{GaussianCalibration, SulqDb, kmeans, pca};
use kinsey_core::Result;
use kinsey_data::table::{Range, read_matrix};
use kinsey_dp::{Neighbours, NoiseRng};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Instant;

/// Run both fits once and return one JSON object.
pub fn run(
    input: &Path,
    k: usize,
    iters: usize,
    components: usize,
    epsilon: f64,
    delta: f64,
    device: kinsey_kernels::DevicePref,
) -> Result<Value> {
    let t = Instant::now();
    let m = read_matrix(input, &[], &[], Range::Unit, true)?;
    let load_s = t.elapsed().as_secs_f64();
    let mut rng = NoiseRng::from_os();
    let nb = Neighbours::Bounded;

    let t = Instant::now();
    let cfg = kmeans::KmeansConfig { k, iters };
    let init = kmeans::random_centers(k, m.d, &mut rng);
    let plan = kmeans::plan(&cfg, m.d, epsilon, delta, GaussianCalibration::Zcdp, nb)?;
    let mut db = SulqDb::new(plan, rng.fork());
    let kernel = kinsey_kernels::kmeans::select(device, &m.x, m.d)?;
    let km = kmeans::run_kernel(&m, &cfg, &init, &mut db, kernel.as_ref())?;
    let kmeans_s = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let pcfg = pca::PcaConfig {
        components,
        center: true,
    };
    let plan = pca::plan(&pcfg, m.d, epsilon, delta, GaussianCalibration::Zcdp, nb)?;
    let mut db = SulqDb::new(plan, rng.fork());
    let pc = pca::run(&m, &pcfg, &mut db)?;
    let pca_s = t.elapsed().as_secs_f64();

    Ok(json!({
        "rows": m.n, "dim": m.d, "threads": rayon::current_num_threads(),
        "epsilon": epsilon, "delta": delta, "load_s": load_s,
        "kmeans_s": kmeans_s, "kmeans_device": kernel.describe(), "kmeans_iters": iters, "centers": km.centers,
        "pca_s": pca_s, "components": pc.components,
    }))
}
