//! The subcommands, one file each. Adding a subcommand is one new file with a clap
//! `Args` struct and `fn run(Args) -> Result<()>`, plus one line in [`subcommands!`] below
//! (which declares the module, the clap variant and the dispatch).

mod common;
mod ledger;
mod participant;
mod sulq_common;
mod sulq_perceptron;

pub(crate) use ledger::{LedgerSetting, parse_budget, set_ledger};

/// Declares each subcommand's module, the clap enum [`Cmd`] and its dispatch.
macro_rules! subcommands {
    ($($(#[$meta:meta])* $variant:ident => $module:ident,)*) => {
        $(pub(crate) mod $module;)*

        /// Every subcommand of `kinsey` (parsed once per run: the largest's size costs
        /// nothing worth a box).
        #[allow(clippy::large_enum_variant)]
        #[derive(clap::Subcommand, Debug)]
        pub(crate) enum Cmd {
            $($(#[$meta])* $variant($module::Args),)*
        }

        impl Cmd {
            /// Whether the subcommand releases what a ledger charges (or manages the
            /// ledger itself): the global `--ledger` flags are refused elsewhere.
            pub(crate) fn charges_releases(&self) -> bool {
                matches!(
                    self,
                    Cmd::Train(_)
                        | Cmd::Decay(_)
                        | Cmd::Histogram(_)
                        | Cmd::Stats(_)
                        | Cmd::Tree(_)
                        | Cmd::Sulq(_)
                        | Cmd::Ledger(_)
                )
            }

            /// Run the chosen subcommand.
            pub(crate) fn run(self) -> kinsey_core::Result<()> {
                match self {
                    $(Cmd::$variant(a) => $module::run(a),)*
                }
            }
        }
    };
}

subcommands! {
    /// The main job on built-in synthetic data: 5 parties, train, aggregate privately, evaluate.
    Demo => demo,
    /// Train the DP aggregate classifier on the parties listed in a TOML config.
    Train => train,
    /// Apply a published model to a data set; prints the error rate if labels are present.
    Predict => predict,
    /// Convert a LIBSVM text file to Parquet (features f1..fD, label).
    Convert => convert,
    /// Shuffle a data set (recorded seed) and split it into one Parquet file per party.
    Split => split,
    /// Synthetic parties from a planted logistic model (plus a test set).
    Generate => generate,
    /// Reproduce a published experiment (Figure 2 of Pathak, Rane & Raj, NIPS 2010).
    Experiment => experiment,
    /// Throughput benchmarks.
    Bench => bench,
    /// Private window, exponentially decayed or running sums of a time series, released
    /// under continual observation (Chan, Shi & Song; Bolot et al.).
    Decay => decay,
    /// DP histogram or count of a column, under bounded or unbounded neighbours.
    Histogram => histogram,
    /// DP sum, mean, variance and quantiles of a numeric column with declared bounds.
    Stats => stats,
    /// DP decision tree: ID3 with a private split choice (Friedman & Schuster).
    Tree => tree,
    /// SuLQ algorithms (Blum, Dwork, McSherry & Nissim): noisy sums with a bounded number
    /// of queries.
    Sulq => sulq,
    /// The crypto backends compiled into this build, with their security description.
    Backends => backends,
    /// Paillier keys and ciphertexts in python-paillier's formats.
    Keys => keys,
    /// One party of a network session (its own process, TLS to the others).
    Party => party,
    /// The curator of a network session.
    Curator => curator,
    /// Set up a network session: CA, certificates, roster and one config per participant.
    Session => session,
    /// The privacy-budget ledger: create one with its key where the owner says, or show
    /// what one holds (checked against its key).
    Ledger => budget,
}
