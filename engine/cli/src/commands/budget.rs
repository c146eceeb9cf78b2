//! `kinsey ledger`: create a privacy-budget ledger with its key where the data owner says,
//! and show what a ledger holds, checked against its key. The ledger is named by the global
//! `--ledger` (and `--ledger-key`) flags, as every releasing command names it.

use clap::Subcommand;
use kinsey_core::{Error, Result};
use std::collections::BTreeMap;

/// Create a ledger, or show what one holds.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[command(subcommand)]
    cmd: Which,
}

#[derive(Subcommand, Debug)]
enum Which {
    /// Create an empty ledger (--ledger) and its secret key (--ledger-key, default
    /// LEDGER.key), 0600 from creation; refused if either exists.
    Init,
    /// Check the ledger against its key and print each data set's releases, spending and
    /// budget.
    Show,
}

/// What a data set has spent, as the ledger records it.
struct Spent<'a> {
    releases: usize,
    epsilon: f64,
    delta: f64,
    budget: (f64, f64),
    /// The digests of its bytes, one per version.
    versions: Vec<&'a str>,
}

/// Runs `kinsey ledger`.
pub(crate) fn run(a: Args) -> Result<()> {
    let l = super::ledger::current()?.ok_or_else(|| {
        Error::param(
            "ledger",
            "name the ledger: kinsey --ledger FILE [--ledger-key KEY] ledger init|show",
        )
    })?;
    match a.cmd {
        Which::Init => {
            l.init()?;
            println!(
                "created the ledger {} (empty) and its key {} (0600: keep it where only the \
                 data owner can read it)",
                l.path.display(),
                l.key_path.display()
            );
        }
        Which::Show => {
            let entries = l.entries()?;
            let mut sets: BTreeMap<&str, Spent<'_>> = BTreeMap::new();
            for e in &entries {
                let s = sets.entry(&e.dataset).or_insert(Spent {
                    releases: 0,
                    epsilon: 0.0,
                    delta: 0.0,
                    budget: (e.budget_epsilon, e.budget_delta),
                    versions: Vec::new(),
                });
                s.releases += 1;
                s.epsilon += e.epsilon;
                s.delta += e.delta;
                if !s.versions.contains(&e.digest.as_str()) {
                    s.versions.push(&e.digest);
                }
            }
            println!(
                "ledger {}: {} release(s) of {} data set(s), every entry checked against {}",
                l.path.display(),
                entries.len(),
                sets.len(),
                l.key_path.display()
            );
            for (name, s) in sets {
                println!(
                    "  '{name}': {} release(s), epsilon {:.6} of {} spent (delta {:e} of {:e}){}",
                    s.releases,
                    s.epsilon,
                    s.budget.0,
                    s.delta,
                    s.budget.1,
                    if s.versions.len() > 1 {
                        format!("; its bytes changed {} time(s)", s.versions.len() - 1)
                    } else {
                        String::new()
                    }
                );
            }
        }
    }
    Ok(())
}
