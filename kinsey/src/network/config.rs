//! TOML configuration of one participant of a network session (`kinsey party`,
//! `kinsey curator`; `kinsey session init` writes one per participant, and
//! `examples/session/` annotates them). Unknown keys are errors; relative paths are resolved
//! against the config file's directory. The `[shared]` section must be identical in every
//! participant's file: its canonical form is hashed in the TLS handshake and a mismatch names
//! the parameter and the peer.

use crate::classifier::{NoiseKind, SensitivityDerivation};
use crate::config::{ComputeConfig, CryptoConfig, DataConfig, ModelConfig, PrivacyConfig};
use kinsey_core::{Error, Result};
use kinsey_data::LabelEncoding;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One participant's file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ParticipantConfig {
    /// `[session]`: the roster and this participant's name in it.
    pub session: SessionSection,
    /// `[tls]`: the session CA and this participant's certificate and key.
    pub tls: TlsSection,
    /// `[shared]`: the job's public parameters, identical in every participant's file.
    pub shared: Shared,
    /// A party's data (the curator has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<PartyData>,
    /// A party's own noise seed (the curator draws no noise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub privacy: Option<PartySeed>,
    #[serde(default)]
    /// `[compute]`: where this participant's local fit runs.
    pub compute: ComputeConfig,
    /// Where this participant's own backend batches run (not shared).
    #[serde(default, skip_serializing_if = "LocalCrypto::is_default")]
    pub crypto: LocalCrypto,
    /// `[output]`: where this participant writes.
    pub output: SessionOutput,
}

/// `[crypto]`: this participant's own choice of device for its crypto backend's batches.
/// Not part of `[shared]`: the device changes no byte a peer sees (the GPU and CPU paths
/// give identical ciphertexts), so each participant picks what its machine has.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LocalCrypto {
    /// "cpu" (default), "gpu" (every batch; an error without an adapter) or "auto".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Under device = "auto", the smallest batch sent to the GPU (`None`: each operation's
    /// threshold measured at start on this machine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_min_batch: Option<usize>,
}

impl LocalCrypto {
    fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// `[session]`: the roster and this participant's place in it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SessionSection {
    /// The roster file (identical at every participant).
    pub roster: PathBuf,
    /// This participant's name in the roster: `curator` or `party-J`.
    pub me: String,
    /// Seconds within which every peer must connect (participants may start in any order).
    #[serde(default = "default_window")]
    pub connect_window_s: u64,
    /// Seconds any one receive may wait before the peer is declared silent.
    #[serde(default = "default_timeout")]
    pub timeout_s: u64,
}

fn default_window() -> u64 {
    600
}
fn default_timeout() -> u64 {
    300
}

/// `[tls]`: PEM files.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TlsSection {
    /// The session CA's certificate.
    pub ca: PathBuf,
    /// This participant's certificate (chain).
    pub cert: PathBuf,
    /// Its private key.
    pub key: PathBuf,
}

/// `[shared]`: the job's public parameters, identical everywhere.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Shared {
    /// Names the release; with a DP seed, `demo` reproduces `kinsey demo --seed`.
    #[serde(default = "default_job")]
    pub job: String,
    /// The feature columns, in order (every party reads exactly these).
    pub features: Vec<String>,
    #[serde(default = "default_label")]
    /// The label column.
    pub label: String,
    /// The L2 regulariser lambda.
    pub lambda: f64,
    #[serde(default = "default_tol")]
    /// The solver's gradient tolerance (the public gradient bound).
    pub tolerance: f64,
    #[serde(default = "default_iters")]
    /// Newton iterations before a party gives up.
    pub max_iterations: usize,
    #[serde(default = "default_hessian_rows")]
    /// Rows of the Hessian subsample (0: all rows).
    pub hessian_rows: usize,
    /// The release's epsilon.
    pub epsilon: f64,
    /// Accept K = 2, where the smaller party can compute the other's exact model.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_two_parties: bool,
    #[serde(default)]
    /// How the sensitivity is derived.
    pub calibration: SensitivityDerivation,
    #[serde(default)]
    /// The noise's distribution.
    pub noise: NoiseKind,
    #[serde(default = "default_transform")]
    /// The rows' transform into the unit ball (`none`, `clip`, `scale`).
    pub row_transform: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The scale of `row_transform = "scale"`.
    pub row_scale: Option<f64>,
    /// The intercept's public constant c in (0, 1), when the model has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intercept: Option<f64>,
    /// The crypto backend every participant uses.
    #[serde(default = "default_backend")]
    pub backend: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The crypto backend's key size in bits.
    pub key_bits: Option<u32>,
    #[serde(default)]
    /// Accept keys below the backend's minimum (tests only).
    pub allow_insecure_test_keys: bool,
    #[serde(default)]
    /// Accept a backend that does not encrypt (`mock`, tests only).
    pub allow_insecure: bool,
}

fn default_job() -> String {
    "session".into()
}
fn default_label() -> String {
    "label".into()
}
fn default_tol() -> f64 {
    ModelConfig::default().tolerance
}
fn default_iters() -> usize {
    ModelConfig::default().max_iterations
}
fn default_hessian_rows() -> usize {
    ModelConfig::default().hessian_rows
}
fn default_transform() -> String {
    "none".into()
}
fn default_backend() -> String {
    "paillier".into()
}

/// `[data]` (parties only).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PartyData {
    /// The party's Parquet file or directory.
    pub path: PathBuf,
    #[serde(default)]
    /// How the labels are written.
    pub labels: LabelEncoding,
}

/// `[privacy]` (parties only).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PartySeed {
    /// Reproducible noise for trials: whoever knows it can remove this party's noise.
    #[serde(default)]
    pub seed: Option<u64>,
}

/// `[output]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SessionOutput {
    /// The directory this participant writes to.
    pub dir: PathBuf,
    /// Also write this participant's NOT PRIVATE report (its traffic, timings and, for a
    /// party, its own fit and noise calibration: its own data).
    #[serde(default)]
    pub diagnostics: bool,
}

impl Shared {
    /// The sections of `kinsey train` these parameters stand for.
    pub fn model(&self) -> ModelConfig {
        ModelConfig {
            lambda: self.lambda,
            tolerance: self.tolerance,
            max_iterations: self.max_iterations,
            hessian_rows: self.hessian_rows,
        }
    }

    /// The shared privacy parameters as a `kinsey train` config's `[privacy]`.
    pub fn privacy(&self) -> PrivacyConfig {
        PrivacyConfig {
            epsilon: self.epsilon,
            calibration: self.calibration,
            noise: self.noise,
            seed: None,
            allow_two_parties: self.allow_two_parties,
            ledger: None,
            ledger_budget: None,
            ledger_key: None,
        }
    }

    /// The `[crypto]` section of `kinsey train` these parameters and a participant's own
    /// device choice stand for.
    pub fn crypto(&self, local: &LocalCrypto) -> CryptoConfig {
        CryptoConfig {
            aggregation: "secure".into(),
            backend: self.backend.clone(),
            key_bits: self.key_bits,
            allow_insecure_test_keys: self.allow_insecure_test_keys,
            allow_insecure: self.allow_insecure,
            device: local.device.clone(),
            gpu_min_batch: local.gpu_min_batch,
        }
    }

    /// The columns and row transform, as `kinsey train`'s `[data]` holds them.
    pub fn data(&self, path: PathBuf, labels: LabelEncoding) -> DataConfig {
        DataConfig {
            parties: vec![path],
            test: None,
            label: self.label.clone(),
            features: self.features.clone(),
            labels,
            row_transform: self.row_transform.clone(),
            row_scale: self.row_scale,
            intercept: self.intercept,
            format: "parquet".into(),
            dim: None,
            indices: None,
            values: None,
            map: None,
        }
    }

    /// The canonical `name = value` lines hashed in the handshake (sorted names, JSON
    /// values), with K and the roster's digest appended by the caller.
    pub fn canonical(&self) -> Result<String> {
        let v = serde_json::to_value(self)
            .map_err(|e| Error::param("shared", format!("cannot serialise: {e}")))?;
        let serde_json::Value::Object(map) = v else {
            return Err(Error::param("shared", "not a table"));
        };
        let mut keys: Vec<&String> = map.keys().collect();
        keys.sort();
        Ok(keys
            .into_iter()
            .map(|k| format!("{k} = {}\n", map[k]))
            .collect())
    }
}

impl ParticipantConfig {
    /// Parse, resolve paths and validate.
    pub fn load(path: &Path) -> Result<Self> {
        let text = crate::classifier::read_bounded(path, 1 << 20)?;
        let mut cfg: Self = toml::from_str(&text).map_err(|e| Error::Config {
            path: path.to_path_buf(),
            msg: e.to_string(),
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        let fix = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        fix(&mut cfg.session.roster);
        fix(&mut cfg.tls.ca);
        fix(&mut cfg.tls.cert);
        fix(&mut cfg.tls.key);
        fix(&mut cfg.output.dir);
        if let Some(d) = cfg.data.as_mut() {
            fix(&mut d.path);
        }
        cfg.validate().map_err(|e| match e {
            Error::Param { name, msg } => Error::Config {
                path: path.to_path_buf(),
                msg: format!("{name}: {msg}"),
            },
            other => other,
        })?;
        Ok(cfg)
    }

    fn validate(&self) -> Result<()> {
        if let Some(d) = &self.crypto.device {
            d.parse::<kinsey_kernels::DevicePref>()
                .map_err(|e| Error::param("crypto.device", e.to_string()))?;
        }
        if self.crypto.gpu_min_batch == Some(0) {
            return Err(Error::param("crypto.gpu_min_batch", "must be >= 1"));
        }
        let s = &self.shared;
        kinsey_core::check_epsilon("shared.epsilon", s.epsilon)?;
        crate::classifier::Objective::new(s.lambda)?;
        if !(s.tolerance.is_finite() && s.tolerance > 0.0) {
            return Err(Error::param("shared.tolerance", "must be > 0"));
        }
        if s.features.is_empty() {
            return Err(Error::param(
                "shared.features",
                "list the feature columns (every party reads exactly these, in this order)",
            ));
        }
        let data = s.data(PathBuf::new(), LabelEncoding::default());
        data.transform()?;
        data.intercept()?;
        if self.session.connect_window_s == 0 || self.session.timeout_s == 0 {
            return Err(Error::param(
                "session.timeout_s",
                "connect_window_s and timeout_s must be at least 1",
            ));
        }
        Ok(())
    }

    /// Connect window and receive timeout.
    pub fn durations(&self) -> (Duration, Duration) {
        (
            Duration::from_secs(self.session.connect_window_s),
            Duration::from_secs(self.session.timeout_s),
        )
    }
}

/// A participant's config as the facade's session types.
impl ParticipantConfig {
    /// This participant ([`super::Participant`]: roster, name, TLS files, time limits,
    /// backend, device and the job's public parameters), without stage hooks or test
    /// tampering; `join` it as the roster's role for it.
    pub fn participant(&self) -> Result<super::Participant> {
        let backend = match self.shared.crypto(&self.crypto).aggregation()? {
            crate::config::Aggregation::Secure(s) => s,
            crate::config::Aggregation::Plaintext => {
                return Err(Error::param(
                    "shared.backend",
                    "a session needs a crypto backend",
                ));
            }
        };
        let shared = &self.shared;
        let data = shared.data(Default::default(), Default::default());
        let (connect_window, timeout) = self.durations();
        Ok(super::Participant {
            roster: self.session.roster.clone(),
            me: self.session.me.clone(),
            ca: self.tls.ca.clone(),
            cert: self.tls.cert.clone(),
            key: self.tls.key.clone(),
            connect_window,
            timeout,
            backend,
            device: self.compute.device,
            job: super::SessionJob {
                name: shared.job.clone(),
                features: shared.features.clone(),
                label: shared.label.clone(),
                lambda: shared.lambda,
                solver: shared.model().solver(),
                privacy: shared.privacy().spec(),
                epsilon: shared.epsilon,
                transform: data.transform()?,
                intercept: data.intercept()?,
                allow_two_parties: shared.allow_two_parties,
                params: shared.canonical()?,
            },
            on_stage: None,
            tamper: None,
        })
    }

    /// A party's data and outputs ([`super::PartyData`]): its `[data]` file read with the
    /// session's columns, its own seed, its output folder.
    pub fn party_data(&self) -> Result<super::PartyData> {
        let data = self
            .data
            .as_ref()
            .ok_or_else(|| Error::param("data", "a party's config needs [data] path = ..."))?;
        Ok(super::PartyData {
            path: data.path.clone(),
            columns: self.shared.data(data.path.clone(), data.labels).columns(),
            seed: self.privacy.as_ref().and_then(|p| p.seed),
            out: self.output.dir.clone(),
            diagnostics: self.output.diagnostics,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARTY: &str = r#"
[session]
roster = "roster.toml"
me = "party-1"
[tls]
ca = "ca.pem"
cert = "party-1/cert.pem"
key = "party-1/key.pem"
[shared]
features = ["x1", "x2"]
lambda = 0.001
epsilon = 1.0
[data]
path = "party-1/data.parquet"
[output]
dir = "party-1/out"
"#;

    /// A participant's TOML file: what loads has a canonical [shared] section and a valid
    /// epsilon; nothing panics.
    #[test]
    fn fuzz_participant_config() {
        // `load` = read (bounded) + this + path resolution; in memory, a case costs
        // microseconds instead of a file write.
        kinsey_fuzz::fuzz_text("participant config (TOML)", &[PARTY], |t| {
            let parsed = toml::from_str::<ParticipantConfig>(t)
                .ok()
                .filter(|c| c.validate().is_ok());
            if let Some(c) = parsed {
                c.shared
                    .canonical()
                    .map_err(|e| format!("accepted a [shared] with no canonical form: {e}"))?;
                if !(1e-6..=100.0).contains(&c.shared.epsilon) {
                    return Err(format!("accepted epsilon {}", c.shared.epsilon));
                }
            }
            Ok(())
        });
    }

    fn parse(text: &str) -> Result<ParticipantConfig> {
        let dir = tempfile::tempdir().map_err(|e| Error::io("tmp", e))?;
        let p = dir.path().join("p.toml");
        std::fs::write(&p, text).map_err(|e| Error::io(&p, e))?;
        ParticipantConfig::load(&p)
    }

    #[test]
    fn a_party_file_parses_with_defaults_and_resolved_paths() {
        let c = parse(PARTY).expect("valid");
        assert!(c.tls.ca.is_absolute());
        assert_eq!(c.shared.backend, "paillier");
        assert_eq!(c.session.timeout_s, 300);
        let text = c.shared.canonical().expect("canonical");
        assert!(text.contains("epsilon = 1.0\n"), "{text}");
        assert!(text.lines().count() >= 14);
    }

    #[test]
    fn bad_files_name_the_key() {
        for (bad, needle) in [
            (PARTY.replace("epsilon = 1.0", "epsilon = 0"), "epsilon"),
            (PARTY.replace("[\"x1\", \"x2\"]", "[]"), "shared.features"),
            (PARTY.replace("lambda = 0.001", "lamda = 0.001"), "lamda"),
            (
                PARTY.replace("me = \"party-1\"", "me = \"party-1\"\ntimeout_s = 0"),
                "timeout_s",
            ),
            (PARTY.replace("[output]", "[output]\nsecret = 1"), "secret"),
        ] {
            let e = parse(&bad).expect_err(needle).to_string();
            assert!(e.contains(needle), "{needle}: {e}");
        }
    }
}
