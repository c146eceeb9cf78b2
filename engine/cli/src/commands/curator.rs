//! `kinsey curator`: the curator of a network session, through the facade's
//! [`kinsey::network`]. It holds no data; it writes the published model and its release
//! report once every participant has said goodbye.

use super::participant::{Hooks, join};
use kinsey::Result;
use kinsey::network::Role;
use std::path::PathBuf;

/// Run the curator of a session from its TOML config (see `kinsey session init`).
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The session file (TOML) of this participant.
    #[arg(long)]
    config: PathBuf,
    #[command(flatten)]
    hooks: Hooks,
}

/// Runs `kinsey curator`.
pub(crate) fn run(a: Args) -> Result<()> {
    let (cfg, j) = join(&a.config, Role::Curator, &a.hooks)?;
    let (k, d) = (j.parties(), j.dim());
    eprintln!(
        "curator: waiting for {k} parties (connect window {} s)",
        cfg.session.connect_window_s
    );
    let out = &cfg.output.dir;
    let c = j.run_curator(out, cfg.output.diagnostics)?;
    println!(
        "kinsey curator: published the DP aggregate classifier of {k} parties (d = {d}, {})",
        c.release.guarantee.short()
    );
    println!("  aggregation: {}", c.release.aggregator);
    // Timings follow the parties' sizes only loosely, but they are measured, not public.
    crate::term::print_diagnostic(&format!(
        "protocol: {:.2} s, {:.1} KiB sent by the curator",
        c.seconds,
        c.bytes_sent as f64 / 1024.0
    ));
    println!("  wrote {} and {}", c.report.display(), c.model.display());
    if let Some(diag) = &c.diagnostics {
        crate::term::print_diagnostic(&format!("wrote {}", diag.display()));
    }
    Ok(())
}
