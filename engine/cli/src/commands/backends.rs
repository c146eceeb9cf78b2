//! `kinsey backends`: the crypto backends compiled into this build.

use kinsey_core::Result;

/// The crypto backends compiled into this build, with their security description.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {}

/// Prints every registered backend and its description.
pub(crate) fn run(_: Args) -> Result<()> {
    for (name, d) in kinsey::classifier::describe_backends() {
        println!("{name}\n  {d}");
    }
    Ok(())
}
