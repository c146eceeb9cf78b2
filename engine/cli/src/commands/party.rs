//! `kinsey party`: one party of a network session, through the facade's
//! [`kinsey::network`]: it reads only its own data, trains its local model, draws its own
//! noise and takes part in the protocol; nothing but protocol messages leaves the process.
//! It writes the published model, and (when asked) its own NOT PRIVATE report.

use super::participant::{Hooks, join};
use kinsey::Result;
use kinsey::network::Role;
use std::path::PathBuf;

/// Run one party of a session from its TOML config (see `kinsey session init`).
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The session file (TOML) of this participant.
    #[arg(long)]
    config: PathBuf,
    #[command(flatten)]
    hooks: Hooks,
}

/// Runs `kinsey party`.
pub(crate) fn run(a: Args) -> Result<()> {
    let (cfg, j) = join(&a.config, Role::Party, &a.hooks)?;
    let party = cfg.party_data()?;
    let me = j.me();
    let device = j.backend_device();
    let outcome = j.run_party(&party, &|train_s| {
        // The training time follows the party's size: a diagnostic, on its own terminal.
        crate::term::print_diagnostic(&format!("{me}: trained its local model in {train_s:.2} s"));
        eprintln!("{me}: joining the session (crypto backend on {device})");
    })?;
    println!(
        "kinsey {me}: session finished; the published model is in {}",
        outcome.model.display()
    );
    if let Some(diag) = &outcome.diagnostics {
        crate::term::print_diagnostic(&format!(
            "{me}: sent {:.1} KiB in {} messages; wrote {}",
            outcome.bytes_sent as f64 / 1024.0,
            outcome.messages_sent,
            diag.display()
        ));
    }
    Ok(())
}
