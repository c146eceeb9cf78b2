//! TOML configuration of `kinsey train` (annotated example: `examples/train.toml`).
//! Unknown keys are errors (a typo must not silently fall back to a default). Relative
//! paths are resolved against the config file's directory.

use crate::classifier::{
    Aggregator, NoiseKind, PlaintextAggregator, PrivacySpec, ProtocolConfig, SecureAggregator,
    SensitivityDerivation, SolverConfig, SparseFiles,
};
use kinsey_core::{Error, Result};
use kinsey_data::parquet_io::ColumnSpec;
use kinsey_data::sparse_parquet::SparseLayout;
use kinsey_data::{LabelEncoding, RowTransform};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
/// `kinsey train`'s config file.
pub struct TrainConfig {
    /// `[data]`: the parties' files and how their rows are read.
    pub data: DataConfig,
    #[serde(default)]
    /// `[model]`: the regulariser and the solver.
    pub model: ModelConfig,
    /// `[privacy]`: the guarantee and its calibration.
    pub privacy: PrivacyConfig,
    #[serde(default)]
    /// `[compute]`: where the local fits run, and in how much memory.
    pub compute: ComputeConfig,
    #[serde(default)]
    /// `[output]`: where the release (and the diagnostics) go.
    pub output: OutputConfig,
    #[serde(default)]
    /// `[crypto]`: how the aggregate is computed.
    pub crypto: CryptoConfig,
}

/// `[crypto]`: how the aggregate is computed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CryptoConfig {
    /// "secure" (the 3-stage protocol) or "plaintext" (the reference, no secrecy between
    /// parties: for experiments).
    #[serde(default = "default_aggregation")]
    pub aggregation: String,
    /// A registered backend: "paillier" (default) or "mock" (insecure, tests only).
    #[serde(default = "default_backend")]
    pub backend: String,
    /// Key size in bits (Paillier: 2048 default, 3072, 4096).
    #[serde(default)]
    pub key_bits: Option<u32>,
    /// Accept keys below the backend's minimum (tests only).
    #[serde(default)]
    pub allow_insecure_test_keys: bool,
    /// Accept a backend that does not encrypt (`mock`).
    #[serde(default)]
    pub allow_insecure: bool,
    /// Where the backend's batches run (Paillier): "cpu" (default), "gpu" (every batch;
    /// an error without an adapter) or "auto" (a hardware GPU for large batches).
    #[serde(default)]
    pub device: Option<String>,
    /// Under device = "auto", the smallest batch sent to the GPU (`None`: each operation's
    /// threshold measured at start on this machine).
    #[serde(default)]
    pub gpu_min_batch: Option<usize>,
}

fn default_aggregation() -> String {
    "secure".into()
}
fn default_backend() -> String {
    "paillier".into()
}

impl Default for CryptoConfig {
    fn default() -> Self {
        Self {
            aggregation: default_aggregation(),
            backend: default_backend(),
            key_bits: None,
            allow_insecure_test_keys: false,
            allow_insecure: false,
            device: None,
            gpu_min_batch: None,
        }
    }
}

/// How the noisy average is computed, as the config chose it.
#[derive(Debug, Clone)]
pub enum Aggregation {
    /// The reference computation in one place (no secrecy between parties).
    Plaintext,
    /// The secure 3-stage protocol over a crypto backend.
    Secure(SecureAggregator),
}

impl Aggregation {
    /// The aggregator the job runs.
    pub fn into_aggregator(self) -> std::sync::Arc<dyn Aggregator> {
        match self {
            Self::Plaintext => std::sync::Arc::new(PlaintextAggregator),
            Self::Secure(s) => std::sync::Arc::new(s),
        }
    }
}

impl CryptoConfig {
    /// The aggregation this section asks for; creating the backend checks the name, the key
    /// size and the insecure flags.
    pub fn aggregation(&self) -> Result<Aggregation> {
        match self.aggregation.as_str() {
            "plaintext" => Ok(Aggregation::Plaintext),
            "secure" => {
                let backend = crate::classifier::registry().create(
                    &self.backend,
                    &crate::classifier::BackendOptions {
                        key_bits: self.key_bits,
                        allow_insecure_test_keys: self.allow_insecure_test_keys,
                        allow_insecure: self.allow_insecure,
                        device: self.device.as_deref().map(str::parse).transpose().map_err(
                            |e: kinsey_core::device::UnknownDevice| {
                                Error::param("crypto.device", e.to_string())
                            },
                        )?,
                        gpu_min_batch: self.gpu_min_batch,
                    },
                )?;
                Ok(Aggregation::Secure(SecureAggregator::new(
                    backend,
                    ProtocolConfig::default(),
                )))
            }
            other => Err(Error::param(
                "crypto.aggregation",
                format!("unknown aggregation '{other}' (expected secure or plaintext)"),
            )),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
/// `[data]`: the parties' files, their columns and the rows' transform.
pub struct DataConfig {
    /// One Parquet file or directory per party.
    pub parties: Vec<PathBuf>,
    /// Optional test set (same columns).
    #[serde(default)]
    pub test: Option<PathBuf>,
    #[serde(default = "default_label")]
    /// The label column.
    pub label: String,
    /// Empty: every numeric column except the label.
    #[serde(default)]
    pub features: Vec<String>,
    #[serde(default)]
    /// How the labels are written (`plus_minus_one` or `zero_one`).
    pub labels: LabelEncoding,
    /// "none" (rows must be in the unit ball), "scale" (with row_scale) or "clip".
    #[serde(default = "default_transform")]
    pub row_transform: String,
    #[serde(default)]
    /// The scale of `row_transform = "scale"`.
    pub row_scale: Option<f64>,
    /// The intercept's public constant c in (0, 1): rows become (sqrt(1 - c^2) x, c).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intercept: Option<f64>,
    /// "parquet" (the default: one Parquet file or directory per party, rows held dense),
    /// "libsvm" (one LIBSVM text file per party) or "sparse-parquet" (Parquet with each
    /// row's non-zeros in list or map columns); the last two keep the rows sparse, so a
    /// pass costs O(non-zeros).
    #[serde(default = "default_format", skip_serializing_if = "is_parquet")]
    pub format: String,
    /// LIBSVM and sparse Parquet: the number of features (public; the features are
    /// `f1 ..= f<dim>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dim: Option<usize>,
    /// Sparse Parquet: the list column of each row's 0-based feature indices
    /// (default "indices").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub indices: Option<String>,
    /// Sparse Parquet: the list column of their values (default "values").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<String>,
    /// Sparse Parquet: a map column (0-based index to value) instead of the two lists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map: Option<String>,
}

fn default_format() -> String {
    "parquet".into()
}
fn is_parquet(f: &str) -> bool {
    f == "parquet"
}

fn default_label() -> String {
    "label".into()
}
fn default_transform() -> String {
    "none".into()
}

impl DataConfig {
    /// The columns every party is read with.
    pub fn columns(&self) -> ColumnSpec {
        ColumnSpec {
            label: self.label.clone(),
            features: self.features.clone(),
            labels: self.labels,
        }
    }

    /// `Some((dim, files))` when the parties are sparse (LIBSVM or sparse Parquet) files of
    /// `dim` features, `None` for dense Parquet; an error for an unknown format, a sparse
    /// job without `dim` or with keys its format does not read, and sparse keys given to
    /// dense Parquet.
    pub fn sparse(&self) -> Result<Option<(usize, SparseFiles)>> {
        let sparse_keys = [
            ("data.dim", self.dim.is_some()),
            ("data.indices", self.indices.is_some()),
            ("data.values", self.values.is_some()),
            ("data.map", self.map.is_some()),
        ];
        let refuse = |keys: &[(&'static str, bool)], why: &str| -> Result<()> {
            match keys.iter().find(|k| k.1) {
                Some((key, _)) => Err(Error::param(*key, why.to_string())),
                None => Ok(()),
            }
        };
        let dim = |format: &str| -> Result<usize> {
            let d = self.dim.ok_or_else(|| {
                Error::param(
                    "data.dim",
                    format!("format = \"{format}\" needs dim, the number of features"),
                )
            })?;
            kinsey_core::limits::parse_dim(&d.to_string()).map_err(|e| Error::param("data.dim", e))
        };
        let files = match self.format.as_str() {
            "parquet" => {
                refuse(
                    &sparse_keys,
                    "dim, indices, values and map are only used with format = \"libsvm\" or \
                     \"sparse-parquet\" (dense Parquet files name their columns)",
                )?;
                return Ok(None);
            }
            "libsvm" => {
                let d = dim("libsvm")?;
                let label = ("data.label", self.label != default_label());
                let features = ("data.features", !self.features.is_empty());
                refuse(
                    &[
                        features,
                        label,
                        sparse_keys[1],
                        sparse_keys[2],
                        sparse_keys[3],
                    ],
                    &format!(
                        "label, features, indices, values and map name Parquet columns; a \
                         LIBSVM file's label is each line's first field and its features are \
                         f1 ..= f{d}"
                    ),
                )?;
                (d, SparseFiles::Libsvm)
            }
            "sparse-parquet" => {
                let d = dim("sparse-parquet")?;
                refuse(
                    &[("data.features", !self.features.is_empty())],
                    &format!(
                        "a sparse Parquet file's features are f1 ..= f{d}, by their 0-based \
                         indices in its rows"
                    ),
                )?;
                let layout = match &self.map {
                    Some(column) => {
                        refuse(
                            &sparse_keys[1..3],
                            "map is instead of the indices and values lists",
                        )?;
                        SparseLayout::Map {
                            column: column.clone(),
                        }
                    }
                    None => SparseLayout::Lists {
                        indices: self.indices.clone().unwrap_or_else(|| "indices".into()),
                        values: self.values.clone().unwrap_or_else(|| "values".into()),
                    },
                };
                let files = SparseFiles::Parquet {
                    label: self.label.clone(),
                    layout,
                };
                (d, files)
            }
            other => {
                return Err(Error::param(
                    "data.format",
                    format!(
                        "unknown format '{other}' (expected parquet, libsvm or sparse-parquet)"
                    ),
                ));
            }
        };
        Ok(Some(files))
    }

    /// The intercept's constant, checked.
    pub fn intercept(&self) -> Result<Option<f64>> {
        if let Some(c) = self.intercept {
            kinsey_data::check_intercept("data.intercept", c)?;
        }
        Ok(self.intercept)
    }

    /// The rows' transform into the unit ball (checked against `row_scale`).
    pub fn transform(&self) -> Result<RowTransform> {
        match (self.row_transform.as_str(), self.row_scale) {
            ("none", None) => Ok(RowTransform::None),
            ("clip", None) => Ok(RowTransform::Clip),
            ("scale", Some(c)) if c.is_finite() && c > 0.0 => Ok(RowTransform::Scale(c)),
            ("scale", Some(c)) => Err(Error::param(
                "data.row_scale",
                format!("must be a finite number > 0, got {c}"),
            )),
            ("scale", None) => Err(Error::param(
                "data.row_scale",
                "row_transform = \"scale\" needs row_scale",
            )),
            ("none" | "clip", Some(_)) => Err(Error::param(
                "data.row_scale",
                "row_scale is only used with row_transform = \"scale\"",
            )),
            (other, _) => Err(Error::param(
                "data.row_transform",
                format!("unknown transform '{other}' (expected none, scale or clip)"),
            )),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
/// `[model]`: the regulariser and the Newton solver's settings.
pub struct ModelConfig {
    /// lambda of seed 001 eq. (2): J(w) = mean loss + lambda w.w
    pub lambda: f64,
    #[serde(default = "default_tol")]
    /// Stop when the gradient's norm is at most this.
    pub tolerance: f64,
    #[serde(default = "default_iters")]
    /// Newton iterations before giving up.
    pub max_iterations: usize,
    /// Rows in the Hessian subsample (0 = all rows); see `SolverConfig::hessian_rows`.
    #[serde(default = "default_hessian_rows")]
    pub hessian_rows: usize,
}

fn default_hessian_rows() -> usize {
    SolverConfig::default().hessian_rows
}

fn default_tol() -> f64 {
    SolverConfig::default().tolerance
}
fn default_iters() -> usize {
    SolverConfig::default().max_iterations
}

impl Default for ModelConfig {
    fn default() -> Self {
        Self {
            lambda: 1e-3,
            tolerance: default_tol(),
            max_iterations: default_iters(),
            hessian_rows: default_hessian_rows(),
        }
    }
}

impl ModelConfig {
    /// The solver's settings.
    pub fn solver(&self) -> SolverConfig {
        SolverConfig {
            tolerance: self.tolerance,
            max_iterations: self.max_iterations,
            hessian_rows: self.hessian_rows,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
/// `[privacy]`: epsilon, the sensitivity's derivation and the noise.
pub struct PrivacyConfig {
    /// The release's epsilon.
    pub epsilon: f64,
    #[serde(default)]
    /// How the sensitivity is derived (`tight` or `paper`).
    pub calibration: SensitivityDerivation,
    #[serde(default)]
    /// The noise's distribution (`l2` or `laplace`).
    pub noise: NoiseKind,
    /// Reproducible noise for audits; the release is then NOT private against whoever knows it.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Accept K = 2, where the smaller party can compute the other's exact model.
    #[serde(default)]
    pub allow_two_parties: bool,
    /// The privacy-budget ledger every party's data set is charged in (`--ledger` wins).
    #[serde(default)]
    pub ledger: Option<std::path::PathBuf>,
    /// The total budget `[epsilon, delta]` of a data set the ledger has not seen
    /// (`--ledger-budget` wins).
    #[serde(default)]
    pub ledger_budget: Option<(f64, f64)>,
    /// The ledger's key file (`--ledger-key` wins; default LEDGER.key beside it).
    #[serde(default)]
    pub ledger_key: Option<std::path::PathBuf>,
}

impl PrivacyConfig {
    /// The privacy parameters of a job.
    pub fn spec(&self) -> PrivacySpec {
        PrivacySpec {
            epsilon: self.epsilon,
            calibration: self.calibration,
            noise: self.noise,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
/// `[compute]`: the device of the local fits, and the memory limit.
pub struct ComputeConfig {
    /// "auto" | "cpu" | "gpu", parsed once when the file is read.
    #[serde(default, with = "device_name")]
    pub device: kinsey_kernels::DevicePref,
    /// The memory `train` may use ("512MiB", "4GiB"; default half the machine's): parties
    /// that do not fit together are trained one by one, streamed from disk.
    #[serde(default)]
    pub memory_limit: Option<String>,
    /// Where rows are spilled in bounded memory (default: the output directory).
    #[serde(default)]
    pub spill_dir: Option<PathBuf>,
}

impl Default for ComputeConfig {
    fn default() -> Self {
        Self {
            device: kinsey_kernels::DevicePref::Auto,
            memory_limit: None,
            spill_dir: None,
        }
    }
}

impl ComputeConfig {
    /// `memory_limit` in bytes, if set.
    pub fn memory_limit(&self) -> Result<Option<u64>> {
        self.memory_limit
            .as_deref()
            .map(|s| {
                kinsey_core::limits::parse_bytes(s)
                    .map_err(|e| Error::param("compute.memory_limit", e))
            })
            .transpose()
    }
}

/// `DevicePref` as the name users write, in TOML.
mod device_name {
    use kinsey_kernels::DevicePref;
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub(super) fn serialize<S: Serializer>(d: &DevicePref, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(d.as_str())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DevicePref, D::Error> {
        String::deserialize(d)?.parse().map_err(D::Error::custom)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
/// `[output]`: the release's directory and whether diagnostics are written.
pub struct OutputConfig {
    #[serde(default = "default_out")]
    /// The directory the release is written to.
    pub dir: PathBuf,
}

fn default_out() -> PathBuf {
    PathBuf::from("kinsey-out")
}

impl Default for OutputConfig {
    fn default() -> Self {
        Self { dir: default_out() }
    }
}

impl TrainConfig {
    /// Parse and validate a TOML file; relative paths become relative to its directory.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let mut cfg = Self::parse(&text).map_err(|e| match e {
            Error::Config { msg, .. } => Error::Config {
                path: path.to_path_buf(),
                msg,
            },
            other => other,
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        let fix = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        cfg.data.parties.iter_mut().for_each(fix);
        if let Some(t) = cfg.data.test.as_mut() {
            fix(t);
        }
        fix(&mut cfg.output.dir);
        Ok(cfg)
    }

    /// Parse TOML text and check parameter ranges.
    pub fn parse(text: &str) -> Result<Self> {
        let cfg: TrainConfig = toml::from_str(text).map_err(|e| Error::Config {
            path: PathBuf::from("<config>"),
            msg: e.to_string(),
        })?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Check every value and every combination before anything runs.
    pub fn validate(&self) -> Result<()> {
        if self.data.parties.is_empty() {
            return Err(Error::param(
                "data.parties",
                "list at least one party data set",
            ));
        }
        kinsey_core::check_epsilon("privacy.epsilon", self.privacy.epsilon)?;
        crate::classifier::Objective::new(self.model.lambda)?;
        if !(self.model.tolerance.is_finite() && self.model.tolerance > 0.0) {
            return Err(Error::param("model.tolerance", "must be > 0"));
        }
        self.data.transform()?;
        self.data.sparse()?;
        self.crypto.aggregation()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[data]
parties = ["a.parquet", "b.parquet"]
row_transform = "scale"
row_scale = 0.25
[model]
lambda = 0.01
[privacy]
epsilon = 0.5
calibration = "paper"
noise = "laplace"
"#;

    /// The TOML config: whatever parses holds a valid epsilon, lambda, tolerance and row
    /// transform (`parse` validates; this checks that nothing slips past it or panics).
    #[test]
    fn fuzz_train_config() {
        kinsey_fuzz::fuzz_text("train config (TOML)", &[GOOD], |t| {
            if let Ok(c) = TrainConfig::parse(t) {
                let eps = c.privacy.epsilon;
                if !(1e-6..=100.0).contains(&eps)
                    || c.model.lambda.is_nan()
                    || c.model.lambda <= 0.0
                {
                    return Err(format!("accepted epsilon {eps}, lambda {}", c.model.lambda));
                }
                if let Ok(RowTransform::Scale(f)) = c.data.transform()
                    && !(f.is_finite() && f > 0.0)
                {
                    return Err(format!("accepted scale {f}"));
                }
            }
            Ok(())
        });
    }

    #[test]
    fn parses_and_defaults() {
        let c = TrainConfig::parse(GOOD).expect("valid");
        assert_eq!(c.privacy.calibration, SensitivityDerivation::Paper);
        assert_eq!(c.privacy.noise, NoiseKind::Laplace);
        assert_eq!(c.data.transform().expect("ok"), RowTransform::Scale(0.25));
        assert_eq!(c.compute.device, kinsey_kernels::DevicePref::Auto);
        assert_eq!(c.model.tolerance, 1e-10);
        assert_eq!(c.crypto.backend, "paillier");
        let mock = TrainConfig::parse(&format!(
            "{GOOD}\n[crypto]\nbackend = \"mock\"\nallow_insecure = true"
        ))
        .expect("mock allowed");
        match mock.crypto.aggregation().expect("ok") {
            crate::config::Aggregation::Secure(s) => assert!(s.backend().info().insecure),
            crate::config::Aggregation::Plaintext => panic!("secure by default"),
        }
    }

    #[test]
    fn bad_configs_are_named() {
        for (bad, needle) in [
            (GOOD.replace("epsilon = 0.5", "epsilon = -1"), "epsilon"),
            (GOOD.replace("epsilon = 0.5", "epsilon = nan"), "epsilon"),
            (GOOD.replace("\"paper\"", "\"loose\""), "loose"),
            (GOOD.replace("lambda = 0.01", "lambda = 0"), "lambda"),
            (GOOD.replace("row_scale = 0.25", ""), "row_scale"),
            (GOOD.replace("[model]", "[model]\nlamda = 1"), "lamda"),
            (GOOD.replace("\"scale\"", "\"squash\""), "squash"),
            (format!("{GOOD}\n[compute]\ndevice = \"tpu\""), "tpu"),
            (
                format!("{GOOD}\n[crypto]\nbackend = \"rsa\""),
                "unknown crypto backend 'rsa'; available: mock, paillier",
            ),
            (
                format!("{GOOD}\n[crypto]\nbackend = \"mock\""),
                "allow_insecure",
            ),
            (
                format!("{GOOD}\n[crypto]\nkey_bits = 1024"),
                "allow_insecure_test_keys",
            ),
            (
                format!("{GOOD}\n[crypto]\naggregation = \"magic\""),
                "magic",
            ),
        ] {
            let e = TrainConfig::parse(&bad).expect_err(needle).to_string();
            assert!(e.contains(needle), "{needle}: {e}");
        }
    }

    #[test]
    fn example_config_parses() {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/train.toml");
        TrainConfig::load(&p).expect("examples/train.toml is valid");
    }
}
