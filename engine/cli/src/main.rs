//! The `kinsey` command-line tool: the only crate that knows about terminals (progress
//! bars, log output), TOML configuration and plots. Each subcommand lives in its own file
//! under [`commands`]; the libraries below it report progress through
//! [`kinsey_core::Progress`] and never print.

mod benchmarks;
mod commands;
use kinsey::config;
mod experiment;
#[cfg(feature = "paillier")]
mod keyfiles;
mod plot;
use kinsey::network::config as session_config;
mod summary;
mod term;
mod tree_chart;

use clap::Parser;

#[derive(Parser, Debug)]
#[command(
    name = "kinsey",
    version,
    about = "Differentially private statistics with secrecy"
)]
struct Cli {
    /// Replace files that an earlier run wrote (without it, a command whose output exists
    /// is refused and the earlier result is kept).
    #[arg(long, global = true)]
    overwrite: bool,
    /// Privacy-budget ledger (keyed JSON lines): every release is charged to its data set
    /// before its noise is drawn, and refused if the data set's total budget would be
    /// exceeded.
    #[arg(long, global = true, value_name = "FILE")]
    ledger: Option<std::path::PathBuf>,
    /// With --ledger: its secret key file (default LEDGER.key, created 0600 with the
    /// ledger; `kinsey ledger init` creates one where the owner says).
    #[arg(long, global = true, value_name = "FILE")]
    ledger_key: Option<std::path::PathBuf>,
    /// With --ledger: the name of the data set a command's input is charged to (default
    /// the input's resolved path; the same bytes under any name are one data set).
    #[arg(long, global = true, value_name = "NAME")]
    ledger_dataset: Option<String>,
    /// With --ledger: the total budget EPSILON[:DELTA] of a data set the ledger has not
    /// seen yet (its first release fixes it).
    #[arg(long, global = true, value_name = "EPSILON[:DELTA]", value_parser = commands::parse_budget)]
    ledger_budget: Option<(f64, f64)>,
    #[command(subcommand)]
    cmd: commands::Cmd,
}

/// Mesa's Vulkan device-selection layer (an implicit layer installed with
/// `mesa-vulkan-drivers`) connects to a Wayland display whenever an application enables the
/// Wayland surface extension, as wgpu does; on a headless machine libwayland then prints
/// `error: XDG_RUNTIME_DIR is invalid or not set` on every GPU probe. kinsey draws nothing
/// and picks its adapter itself, so it turns the layer off unless the user configured it.
fn quiet_vulkan_device_select_layer() {
    if std::env::var_os("NODEVICE_SELECT").is_none()
        && std::env::var_os("MESA_VK_DEVICE_SELECT").is_none()
    {
        // SAFETY: called first thing in `main`, before any other thread exists, so no
        // concurrent reader or writer of the environment can be running.
        #[allow(unsafe_code)]
        unsafe {
            std::env::set_var("NODEVICE_SELECT", "1");
        }
    }
}

/// Serve SIGINT, SIGTERM and SIGHUP on a thread: remove every unfinished output (staging
/// directories, locks, directories this run created; a commit in progress finishes first),
/// then exit with 128 + the signal's number, as the shell reports a process killed by it.
fn clean_up_on_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    match signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
        Ok(mut signals) => {
            std::thread::spawn(move || {
                if let Some(sig) = signals.forever().next() {
                    kinsey_data::output::abandon_all();
                    eprintln!("kinsey: stopped by signal {sig}; unfinished outputs removed");
                    std::process::exit(128 + sig);
                }
            });
        }
        Err(e) => tracing::warn!("signals will not clean up unfinished outputs: {e}"),
    }
}

/// The lines an error prints: `error: MESSAGE`, then each cause whose text the lines above
/// do not already say ("caused by: X" under "error: file: X" repeated X).
fn error_lines(e: &(dyn std::error::Error + 'static)) -> Vec<String> {
    let mut said = e.to_string();
    let mut lines = vec![format!("error: {said}")];
    let mut src = e.source();
    while let Some(s) = src {
        let text = s.to_string();
        if !said.contains(&text) {
            lines.push(format!("  caused by: {text}"));
            said.push_str(&text);
        }
        src = s.source();
    }
    lines
}

/// Every subcommand's flags take negative numbers as values (`--epsilon -1` reaches the
/// range check and its message, instead of "unexpected argument '-1'").
fn cli_command() -> clap::Command {
    fn walk(c: clap::Command) -> clap::Command {
        c.allow_negative_numbers(true).mut_subcommands(walk)
    }
    walk(<Cli as clap::CommandFactory>::command())
}

/// The arguments, parsed with [`cli_command`]; clap prints help and errors and exits.
fn parse_args() -> Cli {
    let matches = cli_command().get_matches();
    <Cli as clap::FromArgMatches>::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

fn main() {
    quiet_vulkan_device_select_layer();
    let filter = tracing_subscriber::EnvFilter::try_from_env("KINSEY_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,kinsey=info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .without_time()
        .with_target(false)
        .init();
    let cli = parse_args();
    kinsey_data::output::set_overwrite(cli.overwrite);
    let ledger_given = cli.ledger.is_some()
        || cli.ledger_budget.is_some()
        || cli.ledger_key.is_some()
        || cli.ledger_dataset.is_some();
    commands::set_ledger(commands::LedgerSetting {
        path: cli.ledger,
        budget: cli.ledger_budget,
        key: cli.ledger_key,
        dataset: cli.ledger_dataset,
    });
    clean_up_on_signals();
    // Spills and staging left in this folder by runs killed with SIGKILL (provably dead).
    kinsey_data::output::sweep_once(std::path::Path::new("."));
    // A ledger given to a command that releases nothing would be silently ignored.
    let result = if ledger_given && !cli.cmd.charges_releases() {
        Err(kinsey_core::Error::param(
            "ledger",
            "this command releases nothing to charge: --ledger, --ledger-key, \
             --ledger-dataset and --ledger-budget are for train, histogram, stats, tree, sulq, \
             decay and ledger; remove them",
        ))
    } else {
        cli.cmd.run()
    };
    if let Err(e) = result {
        for line in error_lines(&e) {
            eprintln!("{line}");
        }
        // The error's kind as the exit code (docs/errors.md): a script can branch on it.
        std::process::exit(e.kind().exit_code());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every flag and positional of every subcommand, with the path to it, that `--help`
    /// shows without a line of its own; and help text that names internal seed numbers.
    fn undocumented(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
        for a in cmd.get_arguments() {
            if a.is_hide_set() || a.get_id() == "help" || a.get_id() == "version" {
                continue;
            }
            let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
            if help.trim().is_empty() {
                out.push(format!("{path} --{}", a.get_id()));
            }
            if help.contains("seed 00") {
                out.push(format!("{path} --{}: names a seed number", a.get_id()));
            }
        }
        for s in cmd.get_subcommands() {
            let about = s.get_about().map(|h| h.to_string()).unwrap_or_default();
            if about.trim().is_empty() || about.contains("seed 00") {
                out.push(format!(
                    "{path} {}: no about line, or a seed number",
                    s.get_name()
                ));
            }
            undocumented(s, &format!("{path} {}", s.get_name()), out);
        }
    }

    /// Every flag has a help line (issue 37: a user reads `--help`, not the source).
    #[test]
    fn every_flag_has_a_help_line() {
        let mut missing = Vec::new();
        undocumented(&cli_command(), "kinsey", &mut missing);
        assert!(
            missing.is_empty(),
            "{} without help:\n{}",
            missing.len(),
            missing.join("\n")
        );
    }

    /// A cause is printed only when it adds words: an I/O error whose message already
    /// quotes it gets one line, not the same text twice.
    #[test]
    fn error_chains_do_not_repeat_their_cause() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file");
        let e = kinsey_core::Error::io(std::path::Path::new("a.csv"), io);
        let lines = error_lines(&e);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains("a.csv") && lines[0].contains("No such file"));
    }

    /// A negative number is a value, not a flag: `--epsilon -1` reaches the range check.
    #[test]
    fn negative_numbers_are_values() {
        let m = cli_command().try_get_matches_from([
            "kinsey",
            "histogram",
            "--input",
            "x.csv",
            "--column",
            "c",
            "--epsilon",
            "-1",
            "--neighbours",
            "bounded",
            "--out",
            "o",
        ]);
        let cli = m.and_then(|m| <Cli as clap::FromArgMatches>::from_arg_matches(&m));
        assert!(cli.is_ok(), "{cli:?}");
    }
}
