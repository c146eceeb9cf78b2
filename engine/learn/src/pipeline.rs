//! The aggregate-classifier job end to end: local training per party, per-party noise,
//! aggregation, baselines and evaluation, with timings. Used by `kinsey train` (user's
//! Parquet parties) and `kinsey demo` (synthetic parties).

use crate::aggregate::{
    self, Aggregator, NoiseCalibration, PartyInput, PlaintextAggregator, PrivacySpec,
};
use crate::logreg::{self, Fit, Objective, SolverConfig};
use crate::passes::Passes;
pub use crate::report::{Diagnostics, ModelEval, PartyReport, Theorem42, Timings};
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
        return Err(Error::refused(
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
    pub gradient_bound: f64,
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
        // It depends on n_(1), which no participant learns; so does the noise's scale.
        sensitivity_value: None,
        rho: None,
        noise_std: None,
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
    let local = Local {
        command,
        fits,
        tags,
        transformed,
        parties: parties
            .iter()
            .map(|p| PartyFacts {
                source: p.source.display().to_string(),
                n: p.n(),
            })
            .collect(),
        features: parties[0].features.clone(),
        d,
        ingest_s,
        local_s: t0.elapsed().as_secs_f64(),
    };
    // The pooled rows are built only for the diagnostics, and the parties' copies dropped.
    let pooled = move || -> Result<Dataset> { Ok(concat(&parties)) };
    let (ctx, test) = ((spec, keys, progress), test.as_ref());
    let mut report = conclude(local, ctx, diagnostics.then_some(pooled), test)?;
    if let Some(dg) = report.diagnostics.as_mut() {
        dg.timings.total_s = ingest_s + t0.elapsed().as_secs_f64();
    }
    Ok(report)
}

/// What a run's local phase leaves for the rest (in memory, or in bounded memory).
pub(crate) struct Local {
    pub(crate) command: &'static str,
    pub(crate) fits: Vec<Fit>,
    /// Every party's noise tag, in party order.
    pub(crate) tags: Vec<Tag>,
    pub(crate) transformed: Vec<usize>,
    pub(crate) parties: Vec<PartyFacts>,
    /// The model's features (with the intercept's).
    pub(crate) features: Vec<String>,
    pub(crate) d: usize,
    pub(crate) ingest_s: f64,
    pub(crate) local_s: f64,
}

/// Aggregate the local models with noise, build the release, and, when `pooled` is given,
/// the NOT PRIVATE diagnostics over the pooled rows it builds.
pub(crate) fn conclude<P: Passes>(
    local: Local,
    (spec, keys, progress): (&JobSpec, &NoiseKeys, &dyn Progress),
    pooled: Option<impl FnOnce() -> Result<P>>,
    test: Option<&Dataset>,
) -> Result<Report> {
    let t1 = Instant::now();
    let sizes: Vec<usize> = local.parties.iter().map(|p| p.n).collect();
    let noisy = aggregate_noisy(&sizes, &local.fits, spec, (keys, &local.tags), progress)?;
    let agg = noisy.aggregate;
    let smallest = aggregate::smallest_party(&noisy.inputs)?;
    let t_agg = t1.elapsed().as_secs_f64();
    let release = release(
        local.command,
        spec,
        Published {
            w: agg.w,
            aggregator: agg.aggregator,
            backend: agg.backend,
            features: local.features,
            gradient_bound: noisy.gradient_bound,
            parties: local.parties.len(),
            rng: keys.record(),
        },
    )?;
    let Some(pooled) = pooled else {
        return Ok(Report {
            release,
            diagnostics: None,
        });
    };
    let pooled = pooled()?;
    let job = Job {
        parties: &local.parties,
        pooled: &pooled,
        test,
        fits: &local.fits,
        spec,
        d: local.d,
    };
    let aggregation = AggregationFacts {
        calibrations: noisy.calibrations,
        transformed: local.transformed,
        smallest,
        protocol: agg.report,
        matches: noisy.matches,
    };
    let timings = Timings {
        ingest_s: local.ingest_s,
        local_training_s: local.local_s,
        aggregation_s: t_agg,
        baselines_s: 0.0,
        evaluation_s: 0.0,
        total_s: 0.0,
    };
    let diagnostics = diagnose(&job, &release, aggregation, timings)?;
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
