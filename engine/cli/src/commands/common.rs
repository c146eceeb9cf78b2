//! What several subcommands share: crypto and column flags, value parsers, loading, and
//! writing an aggregate-classifier job's outputs.

use kinsey_core::{Error, Result};
use kinsey_data::libsvm::read_libsvm;
use kinsey_data::output::{Outputs, write_json};
use kinsey_data::parquet_io::{ColumnSpec, read_parquet};
use kinsey_data::{Dataset, LabelEncoding};
use kinsey_dp::Neighbours;

use kinsey::classifier::NoiseKind;
use std::path::{Path, PathBuf};

/// The `[crypto]` section as command-line flags (demo).
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct CryptoArgs {
    /// "secure" (the 3-stage protocol) or "plaintext" (reference, no secrecy).
    #[arg(long, default_value = "secure")]
    pub(crate) aggregation: String,
    /// Crypto backend ("paillier", "tfhe" or "mock"; see `kinsey backends`).
    #[arg(long, default_value = "paillier")]
    pub(crate) backend: String,
    /// Key size in bits (backend default: 2048 for Paillier).
    #[arg(long)]
    pub(crate) key_bits: Option<u32>,
    /// Accept a backend that does not encrypt (mock).
    #[arg(long)]
    pub(crate) allow_insecure: bool,
    /// Accept keys below the backend's minimum.
    #[arg(long)]
    pub(crate) allow_insecure_test_keys: bool,
    /// Where the backend's batches run (Paillier): cpu, gpu (every batch) or auto (a
    /// hardware GPU for large batches).
    #[arg(long, default_value = "cpu")]
    pub(crate) crypto_device: String,
}

impl CryptoArgs {
    pub(crate) fn config(&self) -> crate::config::CryptoConfig {
        crate::config::CryptoConfig {
            aggregation: self.aggregation.clone(),
            backend: self.backend.clone(),
            key_bits: self.key_bits,
            allow_insecure_test_keys: self.allow_insecure_test_keys,
            allow_insecure: self.allow_insecure,
            device: Some(self.crypto_device.clone()),
            gpu_min_batch: None,
        }
    }
}

#[derive(clap::Args, Debug, Clone)]
pub(crate) struct ColumnArgs {
    #[arg(long, default_value = "label")]
    /// The label column.
    pub(crate) label: String,
    #[arg(long, value_parser = parse_labels, default_value = "plus_minus_one")]
    /// How the labels are written: plus_minus_one (-1/+1) or zero_one (0/1, mapped to
    /// -1/+1), as `labels` in a train config and `labels=` in Python (pm1 and 01 also read).
    pub(crate) labels: LabelEncoding,
}

impl ColumnArgs {
    pub(crate) fn spec(&self) -> ColumnSpec {
        ColumnSpec {
            label: self.label.clone(),
            features: Vec::new(),
            labels: self.labels,
        }
    }
}

pub(crate) fn parse_labels(s: &str) -> std::result::Result<LabelEncoding, String> {
    match s {
        "pm1" | "plus_minus_one" => Ok(LabelEncoding::PlusMinusOne),
        "01" | "zero_one" => Ok(LabelEncoding::ZeroOne),
        o => Err(format!(
            "unknown label encoding '{o}' (plus_minus_one or zero_one, as everywhere else)"
        )),
    }
}

pub(crate) fn parse_noise(s: &str) -> std::result::Result<NoiseKind, String> {
    match s {
        "l2" => Ok(NoiseKind::L2),
        "laplace" => Ok(NoiseKind::Laplace),
        o => Err(format!("unknown noise '{o}' (l2 or laplace)")),
    }
}

/// Parquet (file or directory) by default; LIBSVM when a dimension is given.
pub(crate) fn load(path: &Path, spec: &ColumnSpec, dim: Option<usize>) -> Result<Dataset> {
    match dim {
        Some(d) => read_libsvm(path, d, spec.labels),
        None => read_parquet(path, spec),
    }
}

pub(crate) fn finish_job(
    report: &kinsey::classifier::Report,
    out: &Path,
    label: &str,
) -> Result<()> {
    let written = report.write(out, label)?;
    print!("{}", crate::summary::classifier(report));
    println!(
        "  wrote {} and {}",
        written.report.display(),
        written.model.display()
    );
    if let Some(d) = &written.diagnostics {
        crate::term::print_diagnostic(&format!("wrote {}", d.display()));
    }
    Ok(())
}

pub(crate) fn parse_neighbours(s: &str) -> std::result::Result<Neighbours, String> {
    s.parse().map_err(|e: Error| e.to_string())
}

/// What every command prints and returns.
#[derive(Debug, Clone)]
pub(crate) struct Done {
    pub(crate) summary: String,
    pub(crate) written: Vec<PathBuf>,
}

pub(crate) fn finish(
    o: Outputs,
    out: &Path,
    report: &impl serde::Serialize,
    summary: String,
) -> Result<Done> {
    finish_split(o, out, report, summary, None)
}

/// Write the release report, and the diagnostics (first field NOT PRIVATE) when given; the
/// diagnostic lines join the summary, each marked NOT PRIVATE.
pub(crate) fn finish_split(
    mut o: Outputs,
    out: &Path,
    report: &impl serde::Serialize,
    mut summary: String,
    diagnostics: Option<(serde_json::Value, Vec<String>)>,
) -> Result<Done> {
    write_json(&mut o, &out.join("report.json"), report)?;
    if let Some((d, lines)) = diagnostics {
        let path = kinsey_data::output::diagnostics_path(out, "run");
        kinsey_data::output::write_diagnostics(&mut o, &path, &d)?;
        for l in lines
            .into_iter()
            .chain(std::iter::once(format!("wrote {}", path.display())))
        {
            summary.push('\n');
            summary.push_str(kinsey_dp::release::NOT_PRIVATE_PREFIX);
            summary.push(' ');
            summary.push_str(&l);
        }
    }
    let written = o.commit()?;
    Ok(Done { summary, written })
}

/// Say once on stderr that a user seed makes the release reproducible (and so NOT private
/// against whoever knows the seed).
pub(crate) fn warn_seed(seed: Option<u64>) {
    if seed.is_some() && kinsey_dp::rng::first_seed_warning() {
        eprintln!("warning: {}", kinsey_dp::rng::USER_SEED_WARNING);
    }
}

/// Print a finished command's summary and the files it wrote.
pub(crate) fn report_done(d: Done) -> Result<()> {
    println!("{}", d.summary);
    for p in &d.written {
        println!("  wrote {}", p.display());
    }
    Ok(())
}

/// An enum value as users write it in TOML and flags, and as reports serialise it
/// (`info_gain`, `tight`), never Rust's `Debug` form (`InfoGain`, `Tight`).
pub(crate) fn toml_name<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(e) => format!("<{e}>"),
    }
}

/// The features read, in order (the first ten and the last of a long list).
pub(crate) fn features_line(features: &[String]) -> String {
    let shown = if features.len() > 12 {
        format!(
            "{}, ..., {}",
            features[..10].join(", "),
            features[features.len() - 1]
        )
    } else {
        features.join(", ")
    };
    format!("features ({}): {shown}", features.len())
}
