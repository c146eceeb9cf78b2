//! The `kinsey` command-line tool: the only crate that knows about terminals (progress
//! bars, log output), TOML configuration and plots. Each subcommand lives in its own file
//! under [`commands`]; the libraries below it report progress through
//! [`kinsey_core::Progress`] and never print.

mod benchmarks;
mod commands;
mod config;
mod experiment;
mod figures;
#[cfg(feature = "paillier")]
mod keyfiles;
mod plot;
mod session_config;
mod term;

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
    let cli = Cli::parse();
    kinsey_data::output::set_overwrite(cli.overwrite);
    clean_up_on_signals();
    if let Err(e) = cli.cmd.run() {
        eprintln!("error: {e}");
        let mut src = std::error::Error::source(&e);
        while let Some(s) = src {
            eprintln!("  caused by: {s}");
            src = s.source();
        }
        std::process::exit(1);
    }
}
