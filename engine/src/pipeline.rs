//! The aggregate-classifier job end to end: local training per party, per-party noise,
//! aggregation, baselines and evaluation, with timings. Used by `kinsey train` (user's
//! Parquet parties) and `kinsey demo` (synthetic parties).

use crate::aggregate::{
    self, Aggregator, NoiseCalibration, PartyInput, PlaintextAggregator, PrivacySpec,
};
use crate::data::{Dataset, RowTransform};
use crate::dp::{NoiseRng, RngRecord};
use crate::error::{Error, Result};
use crate::logreg::{self, Fit, Objective, SolverConfig};
use crate::protocol::{ProtocolReport, SecureAggregator};
use kinsey_kernels::{DevicePref, LogisticKernel, cpu::CpuLogistic};
use serde::Serialize;
use std::time::Instant;

/// How the noisy average is computed.
#[derive(Debug, Clone)]
pub enum Aggregation {
    /// The reference computation in one place (no secrecy between parties).
    Plaintext,
    /// The secure 3-stage protocol over a crypto backend.
    Secure(SecureAggregator),
}

/// Everything a run needs besides the data.
#[derive(Debug, Clone)]
pub struct JobSpec {
    pub objective: Objective,
    pub solver: SolverConfig,
    pub privacy: PrivacySpec,
    pub device: DevicePref,
    pub transform: RowTransform,
    pub aggregation: Aggregation,
}

#[derive(Debug, Clone, Serialize)]
pub struct PartyReport {
    pub party: usize,
    pub source: String,
    pub rows: usize,
    pub rows_transformed: usize,
    pub objective: f64,
    pub grad_norm: f64,
    pub newton_iterations: usize,
    pub data_passes: usize,
    pub hessian_evaluations: usize,
    pub hessian_rows: usize,
    pub seconds: f64,
    pub device: String,
    pub test_error: Option<f64>,
    pub noise: NoiseCalibration,
}

#[derive(Debug, Clone, Serialize)]
pub struct ModelEval {
    pub name: String,
    /// J(w) on the pooled training data.
    pub objective: f64,
    /// Excess objective over the pooled optimum w*.
    pub excess_objective: f64,
    pub test_error: Option<f64>,
    pub train_error: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Theorem42 {
    /// `||w_hat - w*||` (unperturbed average vs pooled optimum).
    pub distance: f64,
    /// `(K - 1) / (n_(1) lambda)`.
    pub bound: f64,
    pub ratio: f64,
    pub holds: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Timings {
    pub ingest_s: f64,
    pub local_training_s: f64,
    pub aggregation_s: f64,
    pub baselines_s: f64,
    pub evaluation_s: f64,
    pub total_s: f64,
}

/// The run report (written as report.json).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub kinsey_version: String,
    pub command: String,
    pub objective: String,
    pub lambda: f64,
    pub strong_convexity: f64,
    pub solver: SolverConfig,
    pub privacy: PrivacySpec,
    pub gradient_bound_used: f64,
    pub row_transform: RowTransform,
    pub parties: Vec<PartyReport>,
    pub party_sizes: Vec<usize>,
    pub dim: usize,
    pub features: Vec<String>,
    pub aggregator: String,
    /// The secure protocol's report (backend, per-stage crypto time, operations, traffic).
    pub protocol: Option<ProtocolReport>,
    /// The secure result equals the plaintext reference with the same noise, bit for bit.
    pub matches_plaintext_reference: Option<bool>,
    /// Set when the backend is insecure (mock, or test-size keys).
    pub security_warning: Option<String>,
    pub published_noise: NoiseCalibration,
    pub fixed_point_bits: u32,
    pub rng: RngRecord,
    pub compute_device: String,
    pub models: Vec<ModelEval>,
    pub theorem_4_2: Theorem42,
    pub test_rows: Option<usize>,
    pub test_error: Option<f64>,
    pub timings: Timings,
    /// The published classifier.
    pub w: Vec<f64>,
}

/// Train on one data set with the chosen device.
pub fn fit(ds: &Dataset, spec: &JobSpec) -> Result<Fit> {
    logreg::fit_rows(ds.rows()?, spec.device, &spec.objective, &spec.solver)
}

fn concat(parts: &[Dataset]) -> Dataset {
    let mut x = Vec::with_capacity(parts.iter().map(|p| p.x.len()).sum());
    let mut y = Vec::with_capacity(parts.iter().map(|p| p.n()).sum());
    for p in parts {
        x.extend_from_slice(&p.x);
        y.extend_from_slice(&p.y);
    }
    Dataset {
        x,
        y,
        d: parts[0].d,
        features: parts[0].features.clone(),
        source: "<pooled>".into(),
    }
}

/// Run the whole job. `parties` and `test` are transformed in place by `spec.transform`.
pub fn run(
    command: &str,
    mut parties: Vec<Dataset>,
    mut test: Option<Dataset>,
    spec: &JobSpec,
    rng: &mut NoiseRng,
    ingest_s: f64,
) -> Result<Report> {
    let t0 = Instant::now();
    let first = parties
        .first()
        .ok_or_else(|| Error::param("parties", "no parties"))?;
    let d = first.d;
    for p in &parties {
        p.check_nonempty()?;
        parties[0].check_same_features(p)?;
    }
    if let Some(t) = &test {
        parties[0].check_same_features(t)?;
    }
    let mut transformed = Vec::new();
    for p in parties.iter_mut() {
        transformed.push(spec.transform.apply(p)?);
    }
    if let Some(t) = test.as_mut() {
        // The test set is not protected by the release, but it must see the same features.
        if spec.transform != RowTransform::None {
            spec.transform.apply(t)?;
        }
    }
    let k = parties.len();
    let bar = crate::cli_support::bar(k as u64, "training local classifiers");
    let mut fits = Vec::with_capacity(k);
    for p in &parties {
        fits.push(fit(p, spec)?);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let t_local = t0.elapsed().as_secs_f64();

    // Aggregation: each party calibrates to its own size and draws its own noise.
    let t1 = Instant::now();
    let g = fits
        .iter()
        .map(|f| f.grad_norm)
        .fold(spec.solver.tolerance, f64::max);
    let mut inputs = Vec::with_capacity(k);
    let mut calibrations = Vec::with_capacity(k);
    for (p, f) in parties.iter().zip(&fits) {
        let cal = aggregate::calibrate(&spec.objective, &spec.privacy, p.n(), k, d, g)?;
        let mut party_rng = rng.fork();
        inputs.push(PartyInput {
            n: p.n(),
            w: f.w.clone(),
            noise: cal.sample(&mut party_rng),
        });
        calibrations.push(cal);
    }
    // The protocol's randomness is its own stream, so the other draws do not depend on the
    // aggregation mode or the backend.
    let mut protocol_rng = rng.fork();
    let reference = PlaintextAggregator.aggregate(&inputs)?;
    let (agg, aggregator_name, protocol, matches) = match &spec.aggregation {
        Aggregation::Plaintext => (reference, PlaintextAggregator.name(), None, None),
        Aggregation::Secure(sec) => {
            let bar = crate::cli_support::spinner("secure aggregation protocol");
            let out = sec.run(&inputs, &mut protocol_rng);
            bar.finish_and_clear();
            let out = out?;
            let same = out.w == reference.w;
            if !same {
                return Err(Error::Numerical(
                    "the secure protocol's result differs from the plaintext reference".into(),
                ));
            }
            let name = format!(
                "secure 3-stage protocol ({}, {}-bit keys)",
                out.report.backend.name, out.report.backend.key_bits
            );
            (
                aggregate::Aggregate {
                    w: out.w,
                    aggregator: name.clone(),
                },
                name,
                Some(out.report),
                Some(same),
            )
        }
    };
    let security_warning = protocol.as_ref().and_then(|p| {
        p.backend.insecure.then(|| {
            format!(
                "INSECURE crypto backend '{}': {}",
                p.backend.name, p.backend.notes
            )
        })
    });
    let smallest = aggregate::smallest_party(&inputs)?;
    let t_agg = t1.elapsed().as_secs_f64();

    // Baselines on the pooled data.
    let t2 = Instant::now();
    let pooled = concat(&parties);
    let pooled_fit = fit(&pooled, spec)?;
    let pooled_cal = aggregate::calibrate(
        &spec.objective,
        &spec.privacy,
        pooled.n(),
        1,
        d,
        pooled_fit.grad_norm.max(spec.solver.tolerance),
    )?;
    let dp_pooled: Vec<f64> = pooled_fit
        .w
        .iter()
        .zip(pooled_cal.sample(&mut rng.fork()))
        .map(|(a, b)| a + b)
        .collect();
    let t_base = t2.elapsed().as_secs_f64();

    // Evaluation.
    let t3 = Instant::now();
    let ws: Vec<&[f64]> = fits.iter().map(|f| f.w.as_slice()).collect();
    let avg = aggregate::average(&ws);
    let pooled_kernel = CpuLogistic::new(pooled.rows()?);
    let objective_at = |w: &[f64]| -> Result<f64> {
        let s = pooled_kernel.eval(w, false)?;
        Ok(spec.objective.value(s.loss, pooled.n(), w))
    };
    let j_star = pooled_fit.objective;
    let mut models = Vec::new();
    for (name, w) in [
        ("dp_aggregate", agg.w.as_slice()),
        ("non_private_average", avg.as_slice()),
        ("non_private_pooled", pooled_fit.w.as_slice()),
        ("dp_pooled", dp_pooled.as_slice()),
    ] {
        let obj = objective_at(w)?;
        models.push(ModelEval {
            name: name.into(),
            objective: obj,
            excess_objective: obj - j_star,
            test_error: test.as_ref().map(|t| logreg::error_rate(w, &t.x, &t.y, d)),
            train_error: logreg::error_rate(w, &pooled.x, &pooled.y, d),
        });
    }
    let n_min = parties.iter().map(Dataset::n).min().unwrap_or(0);
    let dist = aggregate::distance(&avg, &pooled_fit.w);
    let bound = aggregate::theorem_4_2_bound(k, n_min, spec.objective.lambda);
    let party_reports = parties
        .iter()
        .zip(&fits)
        .zip(calibrations)
        .zip(transformed)
        .enumerate()
        .map(|(j, (((p, f), cal), tr))| PartyReport {
            party: j + 1,
            source: p.source.display().to_string(),
            rows: p.n(),
            rows_transformed: tr,
            objective: f.objective,
            grad_norm: f.grad_norm,
            newton_iterations: f.iterations,
            data_passes: f.passes,
            hessian_evaluations: f.hessian_evaluations,
            hessian_rows: f.hessian_rows,
            seconds: f.seconds,
            device: f.device.clone(),
            test_error: test
                .as_ref()
                .map(|t| logreg::error_rate(&f.w, &t.x, &t.y, d)),
            noise: cal,
        })
        .collect::<Vec<_>>();
    let t_eval = t3.elapsed().as_secs_f64();
    let published_noise = party_reports[smallest].noise.clone();
    Ok(Report {
        kinsey_version: env!("CARGO_PKG_VERSION").into(),
        command: command.into(),
        objective: "J(w) = (1/n) sum log(1 + exp(-y w.x)) + lambda w.w  (seed 001 eq. 2)".into(),
        lambda: spec.objective.lambda,
        strong_convexity: spec.objective.strong_convexity(),
        solver: spec.solver,
        privacy: spec.privacy,
        gradient_bound_used: g,
        row_transform: spec.transform,
        party_sizes: parties.iter().map(Dataset::n).collect(),
        parties: party_reports,
        dim: d,
        features: parties[0].features.clone(),
        aggregator: aggregator_name,
        protocol,
        matches_plaintext_reference: matches,
        security_warning,
        published_noise,
        fixed_point_bits: aggregate::FIXED_POINT_BITS,
        rng: rng.record(),
        compute_device: fits[0].device.clone(),
        test_rows: test.as_ref().map(Dataset::n),
        test_error: models[0].test_error,
        models,
        theorem_4_2: Theorem42 {
            distance: dist,
            bound,
            ratio: dist / bound,
            holds: dist <= bound,
        },
        timings: Timings {
            ingest_s,
            local_training_s: t_local,
            aggregation_s: t_agg,
            baselines_s: t_base,
            evaluation_s: t_eval,
            total_s: ingest_s + t0.elapsed().as_secs_f64(),
        },
        w: agg.w,
    })
}

/// The published model file (what `kinsey predict` reads).
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct ModelFile {
    pub kind: String,
    pub features: Vec<String>,
    pub label: String,
    pub row_transform: RowTransform,
    pub w: Vec<f64>,
    pub epsilon: f64,
}

impl Report {
    /// A short human summary for the terminal.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        s.push_str(&format!(
            "kinsey: DP aggregate classifier, K = {} parties, d = {}, sizes {:?}\n",
            self.parties.len(),
            self.dim,
            self.party_sizes
        ));
        s.push_str(&format!(
            "  privacy: epsilon = {}, calibration = {:?}, noise = {:?}, L2 sensitivity = {:.3e}, E||eta|| = {:.3e}\n",
            self.privacy.epsilon,
            self.privacy.calibration,
            self.privacy.noise,
            self.published_noise.l2_sensitivity,
            self.published_noise.expected_noise_norm
        ));
        s.push_str(&format!("  device: {}\n", self.compute_device));
        s.push_str(&format!("  aggregation: {}\n", self.aggregator));
        if let Some(p) = &self.protocol {
            s.push_str(&format!(
                "  protocol: {:.2} s, {} homomorphic operations, {:.1} KiB sent in all; {}\n",
                p.wall_seconds,
                p.homomorphic_operations,
                p.total_bytes as f64 / 1024.0,
                p.comparison
            ));
            s.push_str(&p.stage_lines("    "));
            if self.matches_plaintext_reference == Some(true) {
                s.push_str(
                    "  secure result = plaintext reference with the same noise (bit for bit)\n",
                );
            }
        }
        if let Some(w) = &self.security_warning {
            s.push_str(&format!("  WARNING: {w}\n"));
        }
        for m in &self.models {
            s.push_str(&format!(
                "  {:<22} objective {:.6}  train error {:.4}{}\n",
                m.name,
                m.objective,
                m.train_error,
                m.test_error
                    .map(|e| format!("  test error {e:.4}"))
                    .unwrap_or_default()
            ));
        }
        s.push_str(&format!(
            "  Theorem 4.2: ||w_hat - w*|| = {:.3e} <= bound {:.3e} (ratio {:.3})\n",
            self.theorem_4_2.distance, self.theorem_4_2.bound, self.theorem_4_2.ratio
        ));
        s.push_str(&format!("  total time {:.2} s\n", self.timings.total_s));
        if let Some(w) = &self.rng.warning {
            s.push_str(&format!("  WARNING: {w}\n"));
        }
        s
    }
}
