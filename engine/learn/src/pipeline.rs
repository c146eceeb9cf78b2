//! The aggregate-classifier job end to end: local training per party, per-party noise,
//! aggregation, baselines and evaluation, with timings. Used by `kinsey train` (user's
//! Parquet parties) and `kinsey demo` (synthetic parties).

use crate::aggregate::{
    self, Aggregator, NoiseCalibration, PartyInput, PlaintextAggregator, PrivacySpec,
};
use crate::logreg::{self, Fit, Objective, SolverConfig};
use crate::passes::{MemoryPasses, Passes};
use crate::seeding::{NoiseKeys, Tag};
use kinsey_core::{Error, Progress, Result};
use kinsey_data::{Dataset, RowTransform};
use kinsey_dp::RngRecord;
use kinsey_dp::release::{Guarantee, GuaranteeKind, NeighbourRelation};
use kinsey_kernels::DevicePref;
use serde::Serialize;
use std::time::Instant;

/// Everything a run needs besides the data.
#[derive(Debug, Clone)]
pub struct JobSpec {
    /// The objective (lambda).
    pub objective: Objective,
    /// The solver's tolerance and sampling.
    pub solver: SolverConfig,
    /// Epsilon, calibration and noise law.
    pub privacy: PrivacySpec,
    /// Where the local fits run.
    pub device: DevicePref,
    /// The row transform every party applies.
    pub transform: RowTransform,
    /// The public constant `c` of an intercept: after the transform every row `x` becomes
    /// `(sqrt(1 - c^2) x, c)` ([`kinsey_data::append_intercept`]); `None`: no intercept.
    pub intercept: Option<f64>,
    /// How the noisy average is computed: the plaintext reference or the secure protocol.
    pub aggregation: std::sync::Arc<dyn Aggregator>,
    /// Accept K = 2 ([`check_parties`]).
    pub allow_two_parties: bool,
}

/// The protocol's design limit, made explicit: the party whose noise is selected (the
/// smallest) knows that noise, so it can compute `K (w_pub - eta) - w_own`, the exact sum of
/// the other parties' models; with K = 2 that is the other party's exact model. Two parties
/// are refused unless the job accepts this (`allow_two_parties`).
pub fn check_parties(k: usize, allow_two_parties: bool) -> Result<()> {
    if k == 2 && !allow_two_parties {
        return Err(Error::param(
            "allow_two_parties",
            "with K = 2 parties the smaller party knows its own noise and can compute the \
             other party's exact (non-private) model from the published one; set \
             allow_two_parties = true ([privacy], or [shared] in a session; \
             --allow-two-parties for demo and session init) to accept this, or add a party \
             (docs/protocol-deployment.md)",
        ));
    }
    Ok(())
}

#[derive(Debug, Clone, Serialize)]
/// One party's figures (diagnostics).
pub struct PartyReport {
    /// The party's number (1-based).
    pub party: usize,
    /// Where its data came from.
    pub source: String,
    /// Its rows.
    pub rows: usize,
    pub(crate) rows_transformed: usize,
    /// `J(w_j)` at its local model.
    pub objective: f64,
    /// `||grad J(w_j)||` reached.
    pub grad_norm: f64,
    pub(crate) newton_iterations: usize,
    pub(crate) data_passes: usize,
    /// Hessians evaluated.
    pub hessian_evaluations: usize,
    /// Rows in the Hessian subsample.
    pub hessian_rows: usize,
    /// Seconds of local training.
    pub seconds: f64,
    /// Where it ran.
    pub device: String,
    /// Its local model's test error, when a test set was given.
    pub test_error: Option<f64>,
    /// The noise calibrated to its size.
    pub noise: NoiseCalibration,
}

#[derive(Debug, Clone, Serialize)]
/// A model's objective and errors (diagnostics).
pub struct ModelEval {
    /// `dp_aggregate`, `non_private_average` or `non_private_pooled`.
    pub name: String,
    /// J(w) on the pooled training data.
    pub objective: f64,
    /// Excess objective over the pooled optimum w*.
    pub(crate) excess_objective: f64,
    /// Test error, when a test set was given.
    pub test_error: Option<f64>,
    pub(crate) train_error: f64,
}

#[derive(Debug, Clone, Serialize)]
/// Theorem 4.2 of seed 001: the distance between the average and the pooled model against its
/// bound.
pub struct Theorem42 {
    /// `||w_hat - w*||` (unperturbed average vs pooled optimum).
    pub distance: f64,
    /// `(K - 1) / (n_(1) lambda)`.
    pub bound: f64,
    /// `distance / bound`.
    pub ratio: f64,
    /// Whether the bound holds.
    pub holds: bool,
}

#[derive(Debug, Clone, Serialize)]
/// Seconds per phase (diagnostics: they depend on the data).
pub struct Timings {
    /// Reading the data.
    pub ingest_s: f64,
    /// Every party's local fit.
    pub local_training_s: f64,
    /// SensitivityDerivation, noise and aggregation.
    pub aggregation_s: f64,
    pub(crate) baselines_s: f64,
    /// Evaluating the models.
    pub evaluation_s: f64,
    pub(crate) total_s: f64,
}

/// The release (written as report.json beside model.json): the published classifier, its
/// guarantee and public parameters only. No party size, per-party figure, baseline,
/// timing or noise scale (the scale would reveal the smallest party's size).
#[derive(Debug, Clone, Serialize)]
pub struct Release {
    pub(crate) kinsey_version: String,
    /// The command that made it (`demo`, `train`).
    pub command: String,
    /// The objective, as a formula.
    pub objective: String,
    /// The regulariser.
    pub lambda: f64,
    pub(crate) strong_convexity: f64,
    /// The solver settings (public).
    pub solver: SolverConfig,
    /// Epsilon, calibration and noise law.
    pub privacy: PrivacySpec,
    /// The public bound g on every party's `||grad J||` (`model.tolerance`); it enters the
    /// sensitivity, and a party that cannot reach it ends the run with an error.
    pub(crate) gradient_bound: f64,
    /// The row transform every party applied.
    pub row_transform: RowTransform,
    /// The intercept's public constant `c`, when the job has one: `w`'s last weight
    /// multiplies it (the feature `(intercept)`), the others multiply `sqrt(1 - c^2) x`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intercept: Option<f64>,
    /// K, the number of parties (public).
    pub parties: usize,
    /// Dimension.
    pub dim: usize,
    /// Feature names.
    pub features: Vec<String>,
    /// Which aggregator computed it.
    pub aggregator: String,
    /// The crypto backend's description, when the secure protocol ran.
    pub backend: Option<kinsey_backend::BackendInfo>,
    /// Set when the backend is insecure (mock, or test-size keys).
    pub security_warning: Option<String>,
    /// What the release guarantees.
    pub guarantee: Guarantee,
    /// Fixed-point bits of every aggregated value.
    pub fixed_point_bits: u32,
    /// How the noise generator was keyed.
    pub rng: RngRecord,
    /// The published classifier.
    pub w: Vec<f64>,
}

/// Diagnostics (written only when asked, NOT PRIVATE): every figure computed from the
/// parties' exact data.
#[derive(Debug, Clone, Serialize)]
pub struct Diagnostics {
    /// Every party's rows.
    pub party_sizes: Vec<usize>,
    /// Every party's figures.
    pub parties: Vec<PartyReport>,
    /// The calibration of the noise that was published (it holds n_(1)).
    pub(crate) published_noise: NoiseCalibration,
    /// The secure protocol's report (per-stage time, operations, traffic).
    pub protocol: Option<serde_json::Value>,
    /// The protocol's report as terminal lines.
    #[serde(skip)]
    pub(crate) protocol_summary: Vec<String>,
    /// The secure result equals the plaintext reference with the same noise, bit for bit.
    pub matches_plaintext_reference: Option<bool>,
    pub(crate) compute_device: String,
    /// The published model and both non-private baselines.
    pub models: Vec<ModelEval>,
    /// Theorem 4.2 on this run.
    pub theorem_4_2: Theorem42,
    /// Test rows, when a test set was given.
    pub test_rows: Option<usize>,
    /// The published model's test error.
    pub test_error: Option<f64>,
    /// Seconds per phase.
    pub timings: Timings,
}

/// A run's outcome: the release, and the diagnostics when they were asked for.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// What may be published.
    pub release: Release,
    /// What may not (only when asked).
    pub diagnostics: Option<Diagnostics>,
}

/// What a finished aggregation publishes, besides the job's public parameters.
#[derive(Debug, Clone)]
pub struct Published {
    /// The published classifier.
    pub w: Vec<f64>,
    /// Which aggregator computed it.
    pub aggregator: String,
    /// The crypto backend, when the secure protocol ran.
    pub backend: Option<kinsey_backend::BackendInfo>,
    /// Feature names, in the order of `w`.
    pub features: Vec<String>,
    /// The public gradient bound g.
    pub gradient_bound: f64,
    /// K.
    pub parties: usize,
    /// How the noise generators were keyed.
    pub rng: RngRecord,
}

/// The release of an aggregate-classifier job: the published classifier with its guarantee
/// and public parameters (in-process runs and the curator of a network session).
pub fn release(command: &str, spec: &JobSpec, p: Published) -> Result<Release> {
    let security_warning = p.backend.as_ref().and_then(|b| {
        b.insecure
            .then(|| format!("INSECURE crypto backend '{}': {}", b.name, b.notes))
    });
    let d = p.w.len();
    let guarantee = guarantee(spec, p.parties, d)?;
    Ok(Release {
        kinsey_version: env!("CARGO_PKG_VERSION").into(),
        command: command.into(),
        objective: "J(w) = (1/n) sum log(1 + exp(-y w.x)) + lambda w.w  (seed 001 eq. 2)".into(),
        lambda: spec.objective.lambda,
        strong_convexity: spec.objective.strong_convexity(),
        solver: spec.solver,
        privacy: spec.privacy,
        gradient_bound: p.gradient_bound,
        row_transform: spec.transform,
        intercept: spec.intercept,
        parties: p.parties,
        dim: d,
        features: p.features,
        aggregator: p.aggregator,
        backend: p.backend,
        security_warning,
        guarantee,
        fixed_point_bits: aggregate::FIXED_POINT_BITS,
        rng: p.rng,
        w: p.w,
    })
}

/// The guarantee of the aggregate classifier under `spec`. The sensitivity is printed from
/// the expression the calibration evaluates (`aggregate::sensitivity`), never retyped.
pub fn guarantee(spec: &JobSpec, k: usize, d: usize) -> Result<Guarantee> {
    let tol = spec.solver.tolerance;
    // Public whatever the parties' sizes: the samplers' stated gap and the clamp's chance.
    let delta = aggregate::public_delta(&spec.objective, &spec.privacy, k, d, tol)?;
    let exact = aggregate::exact_law(spec.privacy.noise, d);
    let (mechanism, sens) = match (spec.privacy.noise, exact) {
        (aggregate::NoiseKind::L2, false) => (
            "L2-Laplace (density proportional to exp(-eps ||z||_2 / Delta2)), each party's \
             draw on the grid 2^-32 / K by integer arithmetic, the smallest party's selected; \
             delta bounds the sampler's total variation from the ideal law and the chance of \
             a clamp at the fixed point's capacity, times 1 + e^eps",
            "L2",
        ),
        (aggregate::NoiseKind::L2, true) => (
            "discrete Laplace (exact sampler; at d = 1 the L2-Laplace is the Laplace law) in \
             steps of 2^-32 / K, the smallest party's selected",
            "L2 = L1",
        ),
        (aggregate::NoiseKind::Laplace, _) => (
            "per-coordinate discrete Laplace (exact sampler) in steps of 2^-32 / K, \
             calibrated to the L1 sensitivity sqrt(d) Delta2, the smallest party's selected",
            "L1 = sqrt(d) x L2",
        ),
    };
    let expr = aggregate::sensitivity(&spec.objective, spec.privacy.calibration, k, d, tol);
    let bindings: Vec<String> = expr
        .bindings()
        .iter()
        .map(|(n, v)| {
            if v.fract() == 0.0 && v.abs() < 1e15 {
                format!("{n} = {v}")
            } else {
                format!("{n} = {v:e}")
            }
        })
        .collect();
    let formula = format!(
        "{sens} sensitivity Delta2 = {expr}{}, with {}, and n_(1) the smallest party's size \
         (secret: no participant learns it)",
        if spec.privacy.calibration == aggregate::SensitivityDerivation::Paper {
            " (the published scale)"
        } else {
            ""
        },
        bindings.join(", ")
    );
    Ok(Guarantee {
        kind: if delta > 0.0 {
            GuaranteeKind::Approximate
        } else {
            GuaranteeKind::Pure
        },
        epsilon: spec.privacy.epsilon,
        delta,
        neighbours: NeighbourRelation::ReplaceOneRowOfOneParty,
        mechanism: if exact && delta > 0.0 {
            format!(
                "{mechanism}; delta: the chance of a clamp at the fixed point's capacity, \
                 times 1 + e^eps"
            )
        } else {
            mechanism.into()
        },
        sensitivity: formula,
        // It depends on n_(1), which no participant learns.
        sensitivity_value: None,
    })
}

/// The public gradient bound: `model.tolerance`. Every party must have reached it; one that
/// did not ends the run (its norm is never used, so the noise cannot follow the data).
pub fn public_gradient_bound(fits: &[Fit], solver: &SolverConfig) -> Result<f64> {
    if let Some(j) = fits
        .iter()
        .position(|f| f.grad_norm.is_nan() || f.grad_norm > solver.tolerance)
    {
        return Err(Error::param(
            "model.max_iterations",
            format!(
                "party {} did not reach the public gradient bound ||grad J|| <= {:e} \
                 (model.tolerance) within {} Newton iterations; raise model.max_iterations \
                 (the bound enters the noise calibration, so it cannot adapt to the data)",
                j + 1,
                solver.tolerance,
                solver.max_iterations
            ),
        ));
    }
    Ok(solver.tolerance)
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

/// The job's public description, which a seeded run binds into every party's noise key
/// (with K, d and the data): the command and every parameter that enters the computation.
/// A network session's parties build it from `[shared]`, so it must not name files.
pub fn job_description(command: &str, spec: &JobSpec, features: &[String]) -> String {
    let params = serde_json::json!({
        "objective": spec.objective,
        "solver": spec.solver,
        "privacy": spec.privacy,
        "transform": spec.transform,
        "features": features,
    });
    // Jobs without an intercept keep the description (and so the seeded noise) they had.
    match spec.intercept {
        Some(c) => format!("{command}|{params}|intercept={c:e}"),
        None => format!("{command}|{params}"),
    }
}

/// What one run is given besides the job's parameters.
#[derive(Debug, Clone)]
pub struct RunInput {
    /// The job's name in the release and in its seeded description (`demo`, `train`).
    pub command: &'static str,
    /// The parties' data sets, transformed in place by `spec.transform`.
    pub parties: Vec<Dataset>,
    /// A test set with the parties' columns (its errors are diagnostics).
    pub test: Option<Dataset>,
    /// Seconds the caller spent reading the data (a diagnostic timing).
    pub ingest_s: f64,
}

/// Run the whole job. Each party's noise generator is keyed by `keys` (`seeding`: the OS,
/// or a seed bound to every party's data). Diagnostics (baselines, per-party figures,
/// evaluation) are computed only when `diagnostics` is set.
pub fn run(
    input: RunInput,
    spec: &JobSpec,
    keys: &NoiseKeys,
    diagnostics: bool,
    progress: &dyn Progress,
) -> Result<Report> {
    let RunInput {
        command,
        mut parties,
        mut test,
        ingest_s,
    } = input;
    let t0 = Instant::now();
    check_parties(parties.len(), spec.allow_two_parties)?;
    // Tags of the data sets as read (before the row transform), as a network party makes.
    let (k, d0) = (parties.len(), parties.first().map_or(0, |p| p.d));
    let tags: Vec<Tag> = parties
        .iter()
        .enumerate()
        .map(|(j, p)| keys.tag(k, d0, j, p))
        .collect();
    let (d, transformed) = prepare(&mut parties, test.as_mut(), spec)?;
    let fits = train_locally(&parties, spec, progress)?;
    let t_local = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let sizes: Vec<usize> = parties.iter().map(Dataset::n).collect();
    let noisy = aggregate_noisy(&sizes, &fits, spec, (keys, &tags), progress)?;
    let agg = noisy.aggregate;
    let smallest = aggregate::smallest_party(&noisy.inputs)?;
    let t_agg = t1.elapsed().as_secs_f64();
    let release = release(
        command,
        spec,
        Published {
            w: agg.w,
            aggregator: agg.aggregator,
            backend: agg.backend,
            features: parties[0].features.clone(),
            gradient_bound: noisy.gradient_bound,
            parties: k,
            rng: keys.record(),
        },
    )?;
    if !diagnostics {
        return Ok(Report {
            release,
            diagnostics: None,
        });
    }
    let facts: Vec<PartyFacts> = parties
        .iter()
        .map(|p| PartyFacts {
            source: p.source.display().to_string(),
            n: p.n(),
        })
        .collect();
    let pooled = concat(&parties);
    drop(parties);
    let pooled_passes = MemoryPasses::new(pooled.rows()?);
    let job = Job {
        parties: &facts,
        pooled: &pooled_passes,
        test: test.as_ref(),
        fits: &fits,
        spec,
        d,
    };
    let aggregation = AggregationFacts {
        calibrations: noisy.calibrations,
        transformed,
        smallest,
        protocol: agg.report,
        protocol_summary: agg.summary,
        matches: noisy.matches,
    };
    let timings = Timings {
        ingest_s,
        local_training_s: t_local,
        aggregation_s: t_agg,
        baselines_s: 0.0,
        evaluation_s: 0.0,
        total_s: 0.0,
    };
    let mut diagnostics = diagnose(&job, &release, aggregation, timings)?;
    diagnostics.timings.total_s = ingest_s + t0.elapsed().as_secs_f64();
    Ok(Report {
        release,
        diagnostics: Some(diagnostics),
    })
}

/// Check the parties and the test set against each other and apply the row transform and
/// the intercept. Returns the dimension (with the intercept) and, per party, how many rows
/// the transform changed.
pub(crate) fn prepare(
    parties: &mut [Dataset],
    test: Option<&mut Dataset>,
    spec: &JobSpec,
) -> Result<(usize, Vec<usize>)> {
    let first = parties
        .first()
        .ok_or_else(|| Error::param("parties", "no parties"))?;
    let d = first.d + usize::from(spec.intercept.is_some());
    for p in parties.iter() {
        p.check_nonempty()?;
        parties[0].check_same_features(p)?;
    }
    if let Some(t) = test.as_deref() {
        parties[0].check_same_features(t)?;
    }
    let mut transformed = Vec::new();
    for p in parties.iter_mut() {
        transformed.push(spec.transform.apply(p)?);
        if let Some(c) = spec.intercept {
            kinsey_data::append_intercept(p, c)?;
        }
    }
    if let Some(t) = test {
        transform_test(t, spec)?;
    }
    Ok((d, transformed))
}

/// The test set is not protected by the release, but it must see the same features.
fn transform_test(t: &mut Dataset, spec: &JobSpec) -> Result<()> {
    if spec.transform != RowTransform::None {
        spec.transform.apply(t)?;
    }
    if let Some(c) = spec.intercept {
        kinsey_data::append_intercept(t, c)?;
    }
    Ok(())
}

/// Check a test set's columns against the parties' features (as read) and transform it as
/// the parties' rows are.
pub(crate) fn prepare_test(features: &[String], t: &mut Dataset, spec: &JobSpec) -> Result<()> {
    if t.features != features {
        return Err(Error::format(
            &t.source,
            format!(
                "the test set has other features ({}) than the parties ({})",
                t.d,
                features.len()
            ),
        ));
    }
    transform_test(t, spec)
}

/// Every party's local model, one after another (each fit is parallel inside).
fn train_locally(parties: &[Dataset], spec: &JobSpec, progress: &dyn Progress) -> Result<Vec<Fit>> {
    let k = parties.len();
    progress.begin("training local classifiers", Some(k as u64));
    let fits = parties
        .iter()
        .map(|p| {
            let f = fit(p, spec);
            progress.advance(1);
            f
        })
        .collect::<Result<Vec<_>>>();
    progress.end();
    let fits = fits?;
    Ok(fits)
}

/// The aggregation's inputs and outcome.
pub(crate) struct Noisy {
    pub(crate) gradient_bound: f64,
    pub(crate) inputs: Vec<PartyInput>,
    pub(crate) calibrations: Vec<NoiseCalibration>,
    pub(crate) aggregate: aggregate::Aggregate,
    pub(crate) matches: Option<bool>,
}

/// Each party calibrates to its own size and draws its own noise; the chosen aggregator
/// computes the noisy average, checked against the plaintext reference.
pub(crate) fn aggregate_noisy(
    sizes: &[usize],
    fits: &[Fit],
    spec: &JobSpec,
    (keys, tags): (&NoiseKeys, &[Tag]),
    progress: &dyn Progress,
) -> Result<Noisy> {
    let (k, d) = (sizes.len(), fits.first().map_or(0, |f| f.w.len()));
    let g = public_gradient_bound(fits, &spec.solver)?;
    let mut inputs = Vec::with_capacity(k);
    let mut calibrations = Vec::with_capacity(k);
    for (j, (&n, f)) in sizes.iter().zip(fits).enumerate() {
        let cal = aggregate::calibrate(&spec.objective, &spec.privacy, n, k, d, g)?;
        let mut party_rng = keys.party_rng(d, tags, j);
        inputs.push(PartyInput {
            n,
            w: f.w.clone(),
            noise: cal.sample(&mut party_rng),
        });
        calibrations.push(cal);
    }
    let reference = PlaintextAggregator.aggregate(&inputs)?;
    let (agg, matches) = if spec.aggregation.is_reference() {
        (reference, None)
    } else {
        let out = spec
            .aggregation
            .aggregate_with_progress(&inputs, progress)?;
        if out.w != reference.w {
            return Err(Error::Numerical(
                "the secure protocol's result differs from the plaintext reference".into(),
            ));
        }
        (out, Some(true))
    };
    Ok(Noisy {
        gradient_bound: g,
        inputs,
        calibrations,
        aggregate: agg,
        matches,
    })
}

/// A party as the diagnostics name it: its source and size.
pub(crate) struct PartyFacts {
    pub(crate) source: String,
    pub(crate) n: usize,
}

/// What the diagnostics read: the parties, the pooled rows, the fits and the job.
pub(crate) struct Job<'a> {
    pub(crate) parties: &'a [PartyFacts],
    /// Every party's rows, in party order (in memory, or streamed from the spill).
    pub(crate) pooled: &'a dyn Passes,
    pub(crate) test: Option<&'a Dataset>,
    pub(crate) fits: &'a [Fit],
    pub(crate) spec: &'a JobSpec,
    pub(crate) d: usize,
}

/// What the aggregation left for the diagnostics.
pub(crate) struct AggregationFacts {
    pub(crate) calibrations: Vec<NoiseCalibration>,
    pub(crate) transformed: Vec<usize>,
    pub(crate) smallest: usize,
    pub(crate) protocol: Option<serde_json::Value>,
    pub(crate) protocol_summary: Vec<String>,
    pub(crate) matches: Option<bool>,
}

/// The NOT PRIVATE diagnostics: baselines on the pooled data, evaluation, per-party figures.
pub(crate) fn diagnose(
    job: &Job<'_>,
    release: &Release,
    facts: AggregationFacts,
    mut timings: Timings,
) -> Result<Diagnostics> {
    let Job {
        parties,
        pooled,
        test,
        fits,
        spec,
        d,
    } = *job;
    let k = parties.len();
    // Diagnostics: baselines on the pooled data, evaluation, per-party figures.
    let t2 = Instant::now();
    let pooled_fit = logreg::fit_passes(pooled, spec.device, &spec.objective, &spec.solver)?;
    let t_base = t2.elapsed().as_secs_f64();
    let t3 = Instant::now();
    let ws: Vec<&[f64]> = fits.iter().map(|f| f.w.as_slice()).collect();
    let avg = aggregate::average(&ws);
    let n_pooled = pooled.shape().0;
    let objective_at = |w: &[f64]| -> Result<f64> {
        let s = pooled.sums(w, false)?;
        Ok(spec.objective.value(s.loss, n_pooled, w))
    };
    let j_star = pooled_fit.objective;
    let mut models = Vec::new();
    for (name, w) in [
        ("dp_aggregate", release.w.as_slice()),
        ("non_private_average", avg.as_slice()),
        ("non_private_pooled", pooled_fit.w.as_slice()),
    ] {
        let obj = objective_at(w)?;
        models.push(ModelEval {
            name: name.into(),
            objective: obj,
            excess_objective: obj - j_star,
            test_error: test.map(|t| logreg::error_rate(w, &t.x, &t.y, d)),
            train_error: pooled.misclassified(w)? as f64 / n_pooled.max(1) as f64,
        });
    }
    let n_min = parties.iter().map(|p| p.n).min().unwrap_or(0);
    let dist = aggregate::distance(&avg, &pooled_fit.w);
    let bound = aggregate::theorem_4_2_bound(k, n_min, spec.objective.lambda);
    let party_reports = parties
        .iter()
        .zip(fits)
        .zip(facts.calibrations)
        .zip(facts.transformed)
        .enumerate()
        .map(|(j, (((p, f), cal), tr))| PartyReport {
            party: j + 1,
            source: p.source.clone(),
            rows: p.n,
            rows_transformed: tr,
            objective: f.objective,
            grad_norm: f.grad_norm,
            newton_iterations: f.iterations,
            data_passes: f.passes,
            hessian_evaluations: f.hessian_evaluations,
            hessian_rows: f.hessian_rows,
            seconds: f.seconds,
            device: f.device.clone(),
            test_error: test.map(|t| logreg::error_rate(&f.w, &t.x, &t.y, d)),
            noise: cal,
        })
        .collect::<Vec<_>>();
    timings.baselines_s = t_base;
    timings.evaluation_s = t3.elapsed().as_secs_f64();
    let published_noise = party_reports[facts.smallest].noise.clone();
    let diagnostics = Diagnostics {
        party_sizes: parties.iter().map(|p| p.n).collect(),
        parties: party_reports,
        published_noise,
        protocol: facts.protocol,
        protocol_summary: facts.protocol_summary,
        matches_plaintext_reference: facts.matches,
        compute_device: fits[0].device.clone(),
        test_rows: test.map(Dataset::n),
        test_error: models[0].test_error,
        models,
        theorem_4_2: Theorem42 {
            distance: dist,
            bound,
            ratio: dist / bound,
            holds: dist <= bound,
        },
        timings,
    };
    Ok(diagnostics)
}

pub use crate::model_file::ModelFile;
