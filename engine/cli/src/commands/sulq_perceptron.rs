//! `kinsey sulq perceptron`: the flags as the facade's [`Perceptron`] (which reads the
//! rows once, held or spilled past the memory limit, charges the ledger and runs); this
//! prints.

use super::common::*;
use super::sulq_common::*;
use kinsey::Result;
use kinsey::sulq::Perceptron;
use std::path::PathBuf;

#[derive(clap::Args, Debug, Clone)]
pub(crate) struct PerceptronArgs {
    #[command(flatten)]
    pub input: SulqInput,
    #[arg(long, default_value = "label")]
    /// The label column (values -1 and +1).
    pub label: String,
    #[arg(long, value_parser = super::common::parse_labels, default_value = "plus_minus_one")]
    /// How the labels are written: plus_minus_one (-1/+1) or zero_one (0/1, mapped to
    /// -1/+1), as `labels` in a train config and `labels=` in Python (pm1 and 01 also read).
    pub labels: kinsey::data::LabelEncoding,
    /// The same as --labels zero_one (kept for scripts that use it).
    #[arg(long, hide = true)]
    pub zero_one: bool,
    #[arg(long, default_value_t = 10)]
    /// Training rounds (each spends budget).
    pub rounds: usize,
    /// Append a constant-1 feature (a bias through the origin's hyperplane).
    #[arg(long)]
    pub intercept: bool,
    /// Test data (same columns) for the accuracy in the report.
    #[arg(long)]
    pub test: Option<PathBuf>,
    /// The memory the rows may take, e.g. 512MiB (default half this machine's): past it
    /// they are spilled to a private temporary file and each round reads them back a block
    /// at a time; the release is the same.
    #[arg(long, value_parser = kinsey_core::limits::parse_bytes, value_name = "BYTES")]
    pub memory_limit: Option<u64>,
    #[command(flatten)]
    pub common: SulqCommon,
}

pub(crate) fn run_perceptron(a: &PerceptronArgs) -> Result<Done> {
    let c = &a.common;
    let p = Perceptron {
        input: a.input.input(),
        label: a.label.clone(),
        zero_one: a.zero_one || a.labels == kinsey::data::LabelEncoding::ZeroOne,
        rounds: a.rounds,
        intercept: a.intercept,
        test: a.test.clone(),
        memory_limit: a.memory_limit,
        options: c.options()?,
    };
    let (run, charged) = super::ledger::settle(p.options.ledger.as_ref(), p.run())?;
    if c.diagnostics && run.spilled_not_private() {
        // Whether the rows fit follows their number: a diagnostic, only when asked.
        let limit = a
            .memory_limit
            .unwrap_or_else(kinsey_core::limits::default_memory_limit);
        crate::term::print_diagnostic(&format!(
            "the rows do not fit the memory limit of {}: spilled to a private temporary \
             file, read back a block at a time each round",
            kinsey_core::limits::show_bytes(limit)
        ));
    }
    let res = &run.output.run.result;
    let summary = format!(
        "SuLQ perceptron: {} rounds run of {} ({}), kept round {}, {} x {} features; eps spent {:.4} (delta {})",
        res.rounds_run,
        a.rounds,
        if res.stopped_early {
            "stopped: few misclassified rows left"
        } else {
            "all planned"
        },
        res.kept_round,
        run.rows,
        run.d,
        res.guarantee.epsilon_spent,
        c.delta,
    );
    finish_sulq(&c.out, run.output, charged, summary, Vec::new())
}
