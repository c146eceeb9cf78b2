//! The zCDP family of decayed sums (`--privacy zcdp --rho R`): exact discrete Gaussian noise
//! ([`super::gauss`]) on the dyadic or k-ary tree's counters (`tree`, the Gaussian binary
//! tree; `kary`; both with optimal estimates), on the smooth tree's (`smooth`, running sums),
//! the buffered square-root factorization (`blt`, [`super::blt`]) or, for window sums, the
//! window's own square-root factorization (`sqrt`, [`super::blt::root`]); `best` picks the
//! one with the least stated mean variance from public parameters only.
//! A release states `rho` and the (epsilon, delta) it implies at the declared delta (CKS
//! Corollary 13, [`kinsey_dp::exact::zcdp_epsilon`]).

use super::blt::BltSum;
use super::blt::root::WindowRoot;
use super::kary::{self, KarySum, Kind};
pub use super::model::{DEFAULT_DELTA, Zcdp};
use super::model::{DecayedSum, ModelParams, Public};
use kinsey_core::{Error, Result};

/// The mechanisms `--privacy zcdp` takes.
pub const ZCDP_MECHANISMS: [&str; 6] = ["tree", "kary", "smooth", "blt", "sqrt", "best"];

/// The horizon a factorization needs: the declared one (the series' public length by
/// default).
fn horizon_of(model: &str, p: &ModelParams) -> Result<u64> {
    p.need(model, "horizon", &p.horizon)
}

/// `model` under `--privacy zcdp` with the mechanism its parameters name (default: the
/// Gaussian tree).
pub(super) fn build(
    model: &str,
    p: &ModelParams,
    public: &Public,
    z: Zcdp,
) -> Result<Box<dyn DecayedSum>> {
    let kind = kary::kind_of(model, p).map_err(|_| {
        Error::param(
            "privacy",
            format!("--privacy zcdp computes running, exponential and window sums, not '{model}'"),
        )
    })?;
    let (bound, key) = (public.bound, public.key);
    match p.mechanism.as_deref() {
        None | Some("tree") => Ok(Box::new(KarySum::gaussian(kind, 2, z, bound, key)?)),
        Some("kary") => {
            let tree = kary::best_gaussian_arity(kind, p.arity)?;
            Ok(Box::new(KarySum::gaussian_shaped(
                kind, tree, z, bound, key,
            )?))
        }
        Some("smooth") => super::smooth::build(model, p, public),
        Some("blt") => Ok(Box::new(BltSum::new(
            kind,
            horizon_of(model, p)?,
            bound,
            z,
            key,
        )?)),
        Some("sqrt") => match kind {
            Kind::Window { w } => Ok(Box::new(WindowRoot::new(
                w,
                horizon_of(model, p)?,
                bound,
                z,
                key,
            )?)),
            _ => Err(Error::param(
                "mechanism",
                format!(
                    "sqrt is the window's own factorization: it computes window sums, not '{model}'"
                ),
            )),
        },
        Some("best") => best(kind, model, p, public, z),
        Some(other) => Err(Error::param(
            "mechanism",
            format!(
                "unknown mechanism '{other}' under --privacy zcdp (one of: {})",
                ZCDP_MECHANISMS.join(", ")
            ),
        )),
    }
}

/// The least stated mean variance among the Gaussian trees (binary and the best k-ary),
/// the smooth tree for running sums and, when a horizon is known, the factorization.
fn best(
    kind: Kind,
    model: &str,
    p: &ModelParams,
    public: &Public,
    z: Zcdp,
) -> Result<Box<dyn DecayedSum>> {
    let (bound, key) = (public.bound, public.key);
    let n = kary::public_steps(p);
    let shape = kary::best_gaussian_arity(kind, None)?;
    let tree = KarySum::gaussian_shaped(kind, shape, z, bound, key)?;
    let mut others = Vec::new();
    if model == "running" {
        others.push(super::smooth::build(model, p, public)?);
    }
    let trees = kary::least_variance(Box::new(tree), others, n);
    let Some(horizon) = p.horizon else {
        return Ok(trees);
    };
    let mut best = (kary::mean_variance(trees.as_ref(), n), trees);
    let blt = BltSum::new(kind, horizon, bound, z, key)?;
    if blt.mean_variance() < best.0 {
        best = (blt.mean_variance(), Box::new(blt));
    }
    if let Kind::Window { w } = kind
        && horizon <= super::blt::root::MAX_HORIZON
        && let Ok(root) = WindowRoot::new(w, horizon, bound, z, key)
        && root.mean_variance() < best.0
    {
        best = (root.mean_variance(), Box::new(root));
    }
    Ok(best.1)
}
