//! The privacy-budget ledger as the commands use it: `--ledger FILE` and `--ledger-budget`
//! (global flags, or `[privacy] ledger` / `ledger_budget` in a train config), and [`charged`], which every
//! releasing command calls once its release is computed in memory and before anything is
//! written or printed: a refused release is discarded unseen, a bad input costs nothing,
//! and a run stopped after its charge has spent it (the conservative side).

use kinsey_core::Result;
use kinsey_data::ledger::{Charge, Ledger};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A ledger and the budget declared for data sets it has not seen, either possibly unset.
#[derive(Debug, Clone, Default)]
pub(crate) struct LedgerSetting {
    /// The ledger file.
    pub(crate) path: Option<PathBuf>,
    /// `(epsilon, delta)`.
    pub(crate) budget: Option<(f64, f64)>,
}

/// The ledger flags of this process.
static LEDGER: Mutex<Option<LedgerSetting>> = Mutex::new(None);

/// Record the global `--ledger` and `--ledger-budget` flags.
pub(crate) fn set_ledger(path: Option<PathBuf>, budget: Option<(f64, f64)>) {
    if let Ok(mut g) = LEDGER.lock() {
        *g = Some(LedgerSetting { path, budget });
    }
}

/// `EPSILON[:DELTA]`.
pub(crate) fn parse_budget(s: &str) -> std::result::Result<(f64, f64), String> {
    let (e, d) = s.split_once(':').unwrap_or((s, "0"));
    let num = |t: &str| {
        t.trim()
            .parse::<f64>()
            .map_err(|_| format!("'{t}' in '{s}' is not a number (EPSILON or EPSILON:DELTA)"))
    };
    Ok((num(e)?, num(d)?))
}

/// The ledger in force: the flags, else the config's.
fn ledger(config: LedgerSetting) -> Result<Option<Ledger>> {
    let flags = LEDGER
        .lock()
        .ok()
        .and_then(|g| g.clone())
        .unwrap_or_default();
    match flags.path.or(config.path) {
        Some(path) => Ok(Some(Ledger::new(path, flags.budget.or(config.budget))?)),
        None => Ok(None),
    }
}

/// Charge one release of `epsilon` (and `delta`) on each of `inputs` to the ledger, if
/// one is in force, and add what is left to the command's `summary`.
pub(crate) fn charged(
    summary: String,
    inputs: &[&Path],
    command: &str,
    epsilon: f64,
    delta: f64,
) -> Result<String> {
    Ok(
        match charge_with(inputs, command, epsilon, delta, LedgerSetting::default())? {
            Some(line) => format!("{summary}\n{line}"),
            None => summary,
        },
    )
}

/// A charge with a config's `[privacy] ledger` and `ledger_budget` under the flags.
pub(crate) fn charge_with(
    inputs: &[&Path],
    command: &str,
    epsilon: f64,
    delta: f64,
    config: LedgerSetting,
) -> Result<Option<String>> {
    let Some(l) = ledger(config)? else {
        return Ok(None);
    };
    let charges = inputs
        .iter()
        .map(|p| Charge::of_input(p, command, epsilon, delta))
        .collect::<Result<Vec<_>>>()?;
    let left = l.charge(&charges)?;
    let parts: Vec<String> = left
        .iter()
        .map(|x| {
            format!(
                "{}: epsilon {:.6} of {} left",
                x.input, x.epsilon, x.budget.0
            )
        })
        .collect();
    Ok(Some(format!(
        "ledger {}: {}",
        l.path.display(),
        parts.join("; ")
    )))
}
