//! The `kinsey` command-line tool: the only crate that knows about terminals (progress
//! bars, log output), TOML configuration and plots. Each subcommand lives in its own file
//! under [`commands`]; the libraries below it report progress through
//! [`kinsey_core::Progress`] and never print.

mod commands;
mod config;
mod experiment;
mod plot;
mod term;

use clap::Parser;

#[derive(Parser, Debug)]
#[command(
    name = "kinsey",
    version,
    about = "Differentially private statistics with secrecy"
)]
struct Cli {
    #[command(subcommand)]
    cmd: commands::Cmd,
}

fn main() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("KINSEY_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,kinsey=info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
    let cli = Cli::parse();
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
