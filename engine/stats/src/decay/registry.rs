//! Every model by the name users write, and the one function that builds it.

use super::model::{DecayedSum, ModelParams, Public};
use kinsey_core::{Error, Result};

/// Builds one model from its parameters.
pub type Builder = fn(&ModelParams, &Public) -> Result<Box<dyn DecayedSum>>;

/// Every model, by the name users write (`--model`, TOML `model = "..."`). Adding a
/// mechanism: its own file implementing [`DecayedSum`] with a `build` function, and one
/// line here.
pub const MODELS: &[(&str, Builder)] = &[
    ("window", super::window::build),
    ("allwindow", super::allwindow::build),
    ("exponential", super::exponential::build),
    ("running", super::exponential::build_running),
    ("polynomial", super::polynomial::build),
    ("laplace", super::laplace::build),
    ("rr", super::rr::build),
];

/// The model named `model`, built from `params`.
pub fn build(model: &str, params: &ModelParams, public: &Public) -> Result<Box<dyn DecayedSum>> {
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
