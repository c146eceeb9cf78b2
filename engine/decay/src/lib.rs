//! Decayed sums under continual observation (seed 004, `../shared/docs/decayed-sums.md`):
//! after every step `j` of a stream of bounded non-negative values `x_i <= B`, a private
//! estimate of `F(j) = sum_{i <= j} g(j - i) x_i`, eps-DP for the whole output sequence with
//! respect to changing one `x_i`.
//!
//! Every mechanism keeps noisy counters on the nodes of a dyadic forest (`tree::Forest`): a node
//! (level `k`, index `m`) covers steps `[m 2^k, (m + 1) 2^k - 1]`; nodes are numbered in the
//! order they complete (at each step, the levels that close, bottom up), which is also their
//! noise id ([`noise::KeyedNoise`]). The online path (`push` one value, get the estimate) and
//! the bulk path (`bulk`, whole series, parallel and in chunks) run the same code on the
//! same numbers, so under one key they agree bit for bit.
//!
//! Mechanisms and their sensitivities (derived here, checked in the tests):
//! * [`WindowSum`] (`g = 1` on the last `W` steps): blocks of `W' = 2^h >= W` steps, a tree of
//!   `h + 1` levels per block. Each `x_i` lies in exactly one node per level, so the counters
//!   have L1 sensitivity `(h + 1) B`; a window is at most two partial blocks, at most `2h`
//!   nodes, so the error is `O(h^1.5 B / eps)` whatever `j` is.
//! * [`ExponentialSum`] (`g(i) = alpha^i`): one unbounded tree; a left node `[l, u]` holds
//!   `sum alpha^(u - i) x_i` and a prefix `[0, j]` is the left nodes of `j + 1`'s binary digits.
//!   `x_i` is in at most one left node per level and its `k`-th left ancestor (k = 1, 2, ...)
//!   ends at `u_k >= i + 2^(k - 1) - 1` (seed Assertion 2), so the L1 sensitivity is at most
//!   `B sum_k alpha^(2^(k-1) - 1)`, summed numerically to convergence (the seed's closed-form
//!   bound is looser). Right nodes are never released and get no noise.
//! * `RunningSum` (`g = 1`): the binary mechanism (Chan, Shi, Song 2011): exponential with
//!   `alpha = 1` over a declared horizon `T`, `ceil(log2 T) + 1` levels, sensitivity
//!   `(ceil(log2 T) + 1) B`.

pub mod blt;
pub mod evaluate;
pub mod gauss;
pub mod kary;
mod model;
pub mod noise;
pub mod release;
pub mod smooth;
mod tree;
pub mod zcdp;

pub use allwindow::AllWindowSum;
pub use exponential::ExponentialSum;
pub use laplace::LaplaceWindow;
pub use model::{CalibrationReport, DecayedSum, ModelParams, Public, mechanism_param, push_each};
pub use polynomial::PolynomialSum;
pub use release::{DecayRelease, KeyOrigin, Query, SeriesSource};
pub use rr::RandomizedResponse;
pub use window::WindowSum;

use kinsey_core::{Error, Result};
use kinsey_kernels::DevicePref;

/// Builds one model from its parameters.
pub type Builder = fn(&ModelParams, &Public) -> Result<Box<dyn DecayedSum>>;

/// Declares each mechanism's module (one file implementing [`DecayedSum`]) and registers
/// its builders in [`MODELS`] under the names users write.
macro_rules! mechanisms {
    ($($(#[$meta:meta])* $module:ident: [$($name:literal => $builder:ident),+ $(,)?],)*) => {
        $($(#[$meta])* pub mod $module;)*

        /// Every model, by the name users write (`--model`, TOML `model = "..."`).
        pub const MODELS: &[(&str, Builder)] = &[$($(($name, $module::$builder),)+)*];
    };
}

// Adding a mechanism: a new file implementing `DecayedSum` with a `build` function, and
// one line here.
mechanisms! {
    /// The sliding-window sum of the last `W` steps.
    window: ["window" => build],
    /// Window sums for several window sizes from one tree.
    allwindow: ["allwindow" => build],
    /// Exponentially decayed sums, and the binary mechanism for running sums.
    exponential: ["exponential" => build, "running" => build_running],
    /// Polynomially decayed sums through window instances.
    polynomial: ["polynomial" => build],
    /// Baseline: per-output Laplace noise on each window sum.
    laplace: ["laplace" => build],
    /// Baseline: randomized response on bits.
    rr: ["rr" => build],
}

/// The mechanisms `--mechanism` names.
pub const MECHANISMS: [&str; 4] = ["tree", "kary", "smooth", "best"];

/// The model named `model` with the mechanism its parameters name (default: the tree),
/// built from `params`.
pub fn build(model: &str, params: &ModelParams, public: &Public) -> Result<Box<dyn DecayedSum>> {
    if params.arity.is_some() && params.mechanism.as_deref() != Some("kary") {
        return Err(Error::param("arity", "--arity is for --mechanism kary"));
    }
    if let Some(z) = public.zcdp {
        return zcdp::build(model, params, public, z);
    }
    match params.mechanism.as_deref() {
        Some(m @ ("blt" | "sqrt")) => Err(Error::param(
            "mechanism",
            format!("{m} adds Gaussian noise: it needs --privacy zcdp --rho R"),
        )),
        None | Some("tree") => build_tree(model, params, public),
        Some("kary") => kary::build(model, params, public),
        Some("smooth") => smooth::build(model, params, public),
        Some("best") => best(model, params, public),
        Some(other) => Err(Error::param(
            "mechanism",
            format!(
                "unknown mechanism '{other}' (one of: {})",
                MECHANISMS.join(", ")
            ),
        )),
    }
}

/// Refuse a parameter that `model` would ignore (`--alpha` with a window, `--window` with
/// a running sum), rather than release something the caller did not ask for. The horizon
/// applies to the running and polynomial sums, to every zCDP mechanism and to `best` (its
/// choice weighs the public number of steps). Unknown models are left to [`build`].
pub fn check_params_apply(model: &str, p: &ModelParams) -> Result<()> {
    const OWNERS: [(&str, &[&str]); 4] = [
        ("window", &["window", "laplace", "rr"]),
        ("windows", &["allwindow"]),
        ("alpha", &["exponential"]),
        ("c", &["polynomial"]),
    ];
    if !MODELS.iter().any(|(name, _)| *name == model) {
        return Ok(());
    }
    let given = [
        ("window", p.window.is_some()),
        ("windows", p.windows.is_some()),
        ("alpha", p.alpha.is_some()),
        ("c", p.c.is_some()),
    ];
    for ((name, owners), (_, is_given)) in OWNERS.iter().zip(given) {
        if is_given && !owners.contains(&model) {
            return Err(Error::param(
                *name,
                format!(
                    "{name} is a parameter of model {}, not of model '{model}': remove it \
                     (or choose that model)",
                    owners.join(" or ")
                ),
            ));
        }
    }
    let horizon_applies = matches!(model, "running" | "polynomial")
        || p.rho.is_some()
        || p.mechanism.as_deref() == Some("best");
    if p.horizon.is_some() && !horizon_applies {
        return Err(Error::param(
            "horizon",
            format!(
                "model '{model}' does not read a horizon (it is for the running and \
                 polynomial sums, zCDP mechanisms and --mechanism best): remove it"
            ),
        ));
    }
    Ok(())
}

/// `--mechanism best`: among the tree, the k-ary tree (each at its best arity) and, for
/// running sums, the smooth tree, the one with the least stated mean variance over the
/// public number of steps; for models the k-ary tree does not compute, the tree. Public
/// parameters only decide.
fn best(model: &str, params: &ModelParams, public: &Public) -> Result<Box<dyn DecayedSum>> {
    let tree = build_tree(model, params, public)?;
    if kary::kind_of(model, params).is_err() {
        return Ok(tree);
    }
    let n = kary::public_steps(params);
    let mut others = vec![kary::build(model, params, public)?];
    if model == "running" {
        others.push(smooth::build(model, params, public)?);
    }
    Ok(kary::least_variance(tree, others, n))
}

/// The model named `model` on the dyadic tree of seed 004 (or its own baseline).
fn build_tree(model: &str, params: &ModelParams, public: &Public) -> Result<Box<dyn DecayedSum>> {
    match MODELS.iter().find(|(name, _)| *name == model) {
        Some((_, b)) => b(params, public),
        None => Err(Error::param(
            "model",
            format!(
                "unknown model '{model}' (one of: {})",
                MODELS
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

impl Query {
    /// The mechanism for a series of `n` steps (when known: it is the default horizon),
    /// keyed by `key`, its bulk noise on `device`; with the device used, in words.
    pub fn mechanism(
        &self,
        n: Option<u64>,
        key: [u8; 32],
        device: DevicePref,
    ) -> Result<(Box<dyn DecayedSum>, String)> {
        let mut params = self.params.clone();
        params.horizon = params.horizon.or(n.filter(|_| self.takes_length()));
        let public = Public {
            epsilon: self.epsilon,
            bound: self.bound,
            key,
            zcdp: self.zcdp()?,
        };
        let mut m = build(&self.model, &params, &public)?;
        let used = m.use_device(device).map_err(|e| match e {
            Error::Param { name, msg } => {
                Error::param(name, format!("model '{}': {msg}", self.model))
            }
            e => e,
        })?;
        Ok((m, used.map_or_else(|| "CPU".into(), |g| format!("GPU {g}"))))
    }
}

impl Query {
    /// Whether the mechanism takes the series' (public) length as its horizon when none is
    /// declared: the running and polynomial sums, and every zCDP mechanism (the
    /// factorization needs one). Every other model builds the same mechanism whatever the
    /// length offered, so a release cannot depend on whether a caller knew it (a file
    /// streamed, a series loaded whole for a NOT PRIVATE evaluation, values in memory).
    pub fn takes_length(&self) -> bool {
        self.params.horizon.is_none()
            && (matches!(self.model.as_str(), "running" | "polynomial")
                || self.params.rho.is_some())
    }

    /// The zCDP budget its parameters declare (`--rho`, stated at `--delta`), or `None`
    /// for pure DP; a delta without a rho is refused.
    pub fn zcdp(&self) -> Result<Option<zcdp::Zcdp>> {
        match (self.params.rho, self.params.delta) {
            (Some(rho), delta) => zcdp::Zcdp::new(rho, delta).map(Some),
            (None, Some(_)) => Err(Error::param(
                "delta",
                "--delta states a zCDP release's (epsilon, delta): give --privacy zcdp --rho R",
            )),
            (None, None) => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_params;
