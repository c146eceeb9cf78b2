//! The privacy-budget ledger as the commands use it: `--ledger FILE`, `--ledger-budget`,
//! `--ledger-key` and `--ledger-dataset` (global flags, or `[privacy] ledger`,
//! `ledger_budget`, `ledger_key` in a train config), and [`charge`], which every releasing
//! command calls *before* its noise is drawn and before anything of its release is written
//! or printed: charge, then compute, then publish. A refused release never exists; a run
//! that fails or is stopped after its charge has spent it, and says so (its noise may
//! have been drawn). The ledger itself is the library's (`kinsey_data::ledger`), the same
//! one the Rust facade and Python charge.

use kinsey_core::Result;
use kinsey_data::ledger::Ledger;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A ledger, the budget declared for data sets it has not seen, its key and the data set's
/// name, any of them possibly unset.
#[derive(Debug, Clone, Default)]
pub(crate) struct LedgerSetting {
    /// The ledger file.
    pub(crate) path: Option<PathBuf>,
    /// `(epsilon, delta)`.
    pub(crate) budget: Option<(f64, f64)>,
    /// The key file (default: `LEDGER.key`).
    pub(crate) key: Option<PathBuf>,
    /// The data set's name (default: the input's resolved path).
    pub(crate) dataset: Option<String>,
}

/// The ledger flags of this process.
static LEDGER: Mutex<Option<LedgerSetting>> = Mutex::new(None);

/// Record the global ledger flags.
pub(crate) fn set_ledger(setting: LedgerSetting) {
    if let Ok(mut g) = LEDGER.lock() {
        *g = Some(setting);
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

/// The ledger the global flags name, if any (`kinsey ledger`).
pub(crate) fn current() -> Result<Option<Ledger>> {
    Ok(ledger(LedgerSetting::default())?.map(|(l, _)| l))
}

/// The ledger in force (the flags, else the config's) and the data set name.
fn ledger(config: LedgerSetting) -> Result<Option<(Ledger, Option<String>)>> {
    let flags = LEDGER
        .lock()
        .ok()
        .and_then(|g| g.clone())
        .unwrap_or_default();
    match flags.path.or(config.path) {
        Some(path) => Ok(Some((
            Ledger::with_key(
                path,
                flags.key.or(config.key),
                flags.budget.or(config.budget),
            )?,
            flags.dataset.or(config.dataset),
        ))),
        None => Ok(None),
    }
}

/// A charge recorded before a release: its line for the summary. Dropped before
/// [`Charged::summary`] (the run failed or panicked after its charge), it says on stderr
/// that the charge stands.
#[derive(Debug)]
pub(crate) struct Charged {
    line: Option<String>,
    published: bool,
}

impl Charged {
    /// `summary` with the ledger's line (what is left) after it.
    pub(crate) fn summary(mut self, summary: String) -> String {
        self.published = true;
        match self.line.take() {
            Some(line) if summary.is_empty() => line,
            Some(line) => format!("{summary}\n{line}"),
            None => summary,
        }
    }
}

impl Drop for Charged {
    fn drop(&mut self) {
        if !self.published
            && let Some(line) = &self.line
        {
            eprintln!(
                "note: this run was charged before it failed, and the charge stands (its \
                 noise may have been drawn): {line}"
            );
        }
    }
}

/// The summary's line: what is left of each data set charged.
fn left_line(path: &Path, left: &[kinsey_data::ledger::Left]) -> String {
    let parts: Vec<String> = left
        .iter()
        .map(|x| {
            let note = x
                .note
                .as_deref()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default();
            format!(
                "data set '{}': epsilon {:.6} of {} left{note}",
                x.dataset, x.epsilon, x.budget.0
            )
        })
        .collect();
    format!("ledger {}: {}", path.display(), parts.join("; "))
}

/// The ledger the global flags name as the facade's type, for a command that releases
/// through the facade (which charges it before drawing any noise).
pub(crate) fn facade() -> Result<Option<kinsey::ledger::Ledger>> {
    facade_with(LedgerSetting::default())
}

/// [`facade`] with a config's `[privacy]` ledger settings under the flags.
pub(crate) fn facade_with(config: LedgerSetting) -> Result<Option<kinsey::ledger::Ledger>> {
    let flags = LEDGER
        .lock()
        .ok()
        .and_then(|g| g.clone())
        .unwrap_or_default();
    let Some(path) = flags.path.or(config.path) else {
        return Ok(None);
    };
    let mut l = kinsey::ledger::Ledger::open(path)?;
    if let Some(k) = flags.key.or(config.key) {
        l = l.key(k)?;
    }
    if let Some((e, d)) = flags.budget.or(config.budget) {
        l = l.total(e, d)?;
    }
    if let Some(n) = flags.dataset.or(config.dataset) {
        l = l.dataset(&n)?;
    }
    Ok(Some(l))
}

/// A facade call's result and its charge: on success a [`Charged`] that puts what is left
/// into the summary (and, dropped before that, says the charge stands); on a failure after
/// the charge, that note at once.
pub(crate) fn settle<T>(
    ledger: Option<&kinsey::ledger::Ledger>,
    result: Result<T>,
) -> Result<(T, Charged)> {
    let line = ledger
        .map(|l| (l.path(), l.charged()))
        .filter(|(_, left)| !left.is_empty())
        .map(|(path, left)| left_line(&path, &left));
    let charged = Charged {
        published: line.is_none(),
        line,
    };
    result.map(|t| (t, charged))
}
