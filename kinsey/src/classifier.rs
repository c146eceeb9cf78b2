//! The DP aggregate classifier of seeds 000/001: every party fits an L2-regularised logistic
//! regression on its own rows, and the secure 3-stage protocol publishes their noisy
//! average without any party revealing its data, its size or its model.
//!
//! ```no_run
//! use kinsey::prelude::*;
//!
//! let job = Job::builder()
//!     .parquet_parties(["a.parquet", "b.parquet", "c.parquet"], "label")
//!     .epsilon(0.5)
//!     .lambda(1e-3)
//!     .backend(Backend::tfhe())
//!     .seed(42) // replays this release of these files only; NOT private against its holder
//!     .build()?;
//! let trained = job.run()?;
//! assert_eq!(trained.release().parties, 3);
//! # Ok::<(), kinsey::Error>(())
//! ```
//!
//! The same job through `kinsey train` (same parameters, same files, same seed) publishes
//! the same `report.json` and `model.json`, byte for byte.

use crate::DevicePref;
use kinsey_core::{Error, Result, Silent};
use kinsey_data::ledger::Charge;
use kinsey_data::parquet_blocks::{ParquetParty, PartyBlocks};
use kinsey_data::parquet_io::{ColumnSpec, read_parquet};
use kinsey_data::synth::SynthParty;
use kinsey_data::{Dataset, LabelEncoding, RowTransform};
/// The reference aggregation (no secrecy) and a job's privacy parameters.
pub use kinsey_learn::aggregate::{PlaintextAggregator, PrivacySpec};
use kinsey_learn::bounded::{self, MemoryBudget};
/// The local objective (its lambda is checked by [`Objective::new`]) and the solver's
/// settings.
pub use kinsey_learn::logreg::{Objective, SolverConfig};
use kinsey_learn::pipeline::{self, JobSpec};
/// A party whose rows are on a cluster (see [`JobBuilder::remote_parties`]), and what its
/// executors run on each partition.
pub use kinsey_learn::remote::{GroupWorker, RemoteParty};
use kinsey_learn::seeding::NoiseKeys;
use kinsey_learn::sparse_job::{SparseInput, run_sparse};
/// Backends by name with their options (what a config file's `[crypto]` section names).
pub use kinsey_protocol::registry::{BackendOptions, registry};
/// A bounded read of a small text file (configs, rosters).
pub use kinsey_protocol::session::roster::read_bounded;
/// The secure 3-stage protocol as an aggregator, and its settings.
pub use kinsey_protocol::{ProtocolConfig, SecureAggregator};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A size in bytes from text such as `512MiB`, `4GiB` or `1e9`, as `--memory-limit` reads
/// it (for [`JobBuilder::memory_limit`]).
pub use kinsey_core::limits::parse_bytes;
pub use kinsey_learn::aggregate::Aggregator;
/// The models' fixed point on the wire (`W = round(w 2^FIXED_POINT_BITS)`), as
/// python-paillier key files and ciphertexts exchanged with other tools need it.
pub use kinsey_learn::aggregate::{FIXED_POINT_BITS, encode_fixed};
pub use kinsey_learn::aggregate::{NoiseKind, SensitivityDerivation};
pub use kinsey_learn::model_file::ModelFile;
pub use kinsey_learn::pipeline::{Diagnostics, Release, Report};
pub use kinsey_learn::publish::Written;
/// How sparse parties' files store their rows (LIBSVM, or Parquet list or map columns).
pub use kinsey_learn::sparse_job::SparseFiles;
pub use kinsey_protocol::registry::describe_backends;

/// The memory a job may use unless told otherwise: half this machine's.
pub fn default_memory_limit() -> u64 {
    MemoryBudget::default_limit()
}

/// How the parties' models are averaged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The secure protocol over Paillier + DGK with keys of this many bits (2048, 3072 or
    /// 4096; below 2048 needs [`JobBuilder::allow_insecure_test_keys`]).
    Paillier {
        /// Modulus size.
        key_bits: u32,
    },
    /// The secure protocol over TFHE (post-quantum).
    Tfhe,
    /// The protocol's message flow with NO encryption (trials only; the release says so).
    MockInsecure,
    /// The plaintext reference: the same noise and arithmetic, no secrecy between parties.
    PlaintextReference,
}

impl Backend {
    /// Paillier + DGK with `key_bits`-bit keys.
    pub fn paillier(key_bits: u32) -> Self {
        Self::Paillier { key_bits }
    }

    /// TFHE with its default parameters.
    pub fn tfhe() -> Self {
        Self::Tfhe
    }

    /// No encryption (trials only; the release carries a security warning).
    pub fn mock_insecure() -> Self {
        Self::MockInsecure
    }

    /// The plaintext reference (no secrecy between parties).
    pub fn plaintext_reference() -> Self {
        Self::PlaintextReference
    }
}

/// Where the parties' rows come from.
#[derive(Debug, Clone)]
enum Parties {
    /// One Parquet file or directory per party, read when the job runs.
    Parquet(Vec<PathBuf>),
    /// Rows already in memory.
    Loaded(Vec<Dataset>),
    /// Arrow tables in memory, read as their files would be when the job runs.
    Tables(Vec<kinsey_data::memory::ArrowTable>),
    /// Sparse files of `dim` features, kept as CSR, party by party.
    Sparse(Vec<PathBuf>, SparseFiles, usize),
    /// Synthetic parties, generated as they are read, and their test set.
    Synthetic(Vec<SynthParty>, Box<Dataset>),
    /// Parties whose rows are on clusters (`kinsey.spark`): every pass a job there.
    Remote(RemoteParties),
}

/// Parties on clusters ([`RemoteParty`]), named in `Debug`.
#[derive(Clone)]
struct RemoteParties(Vec<Arc<dyn RemoteParty>>);

impl std::fmt::Debug for RemoteParties {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.0.iter().map(|p| p.name()).collect();
        write!(f, "RemoteParties({names:?})")
    }
}

/// A caller's progress reporting (the CLI's bars), shared by the job's steps.
#[derive(Clone)]
struct Reporter(Arc<dyn kinsey_core::Progress>);

impl std::fmt::Debug for Reporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reporter")
    }
}

/// Builds a [`Job`]; every parameter has the default `kinsey train` has, except epsilon,
/// which must be given.
#[derive(Debug, Clone)]
pub struct JobBuilder {
    parties: Option<Parties>,
    test: Option<PathBuf>,
    columns: ColumnSpec,
    epsilon: Option<f64>,
    lambda: f64,
    solver: SolverConfig,
    derivation: SensitivityDerivation,
    noise: NoiseKind,
    transform: RowTransform,
    intercept: Option<f64>,
    device: DevicePref,
    backend: Backend,
    crypto_device: DevicePref,
    allow_two_parties: bool,
    allow_insecure_test_keys: bool,
    timeout: Option<Duration>,
    seed: Option<u64>,
    record_seed: bool,
    diagnostics: bool,
    memory: MemoryBudget,
    ledger: Option<crate::ledger::Ledger>,
    aggregator: Option<Arc<dyn Aggregator>>,
    progress: Option<Reporter>,
    name: &'static str,
}

impl Default for JobBuilder {
    fn default() -> Self {
        Self {
            parties: None,
            test: None,
            columns: ColumnSpec::default(),
            epsilon: None,
            lambda: 1e-3,
            solver: SolverConfig::default(),
            derivation: SensitivityDerivation::default(),
            noise: NoiseKind::default(),
            transform: RowTransform::None,
            intercept: None,
            device: DevicePref::Auto,
            backend: Backend::paillier(2048),
            crypto_device: DevicePref::Cpu,
            allow_two_parties: false,
            allow_insecure_test_keys: false,
            timeout: None,
            seed: None,
            record_seed: false,
            diagnostics: false,
            memory: MemoryBudget::default_for(std::env::temp_dir()),
            ledger: None,
            aggregator: None,
            progress: None,
            name: "train",
        }
    }
}

impl JobBuilder {
    /// One Parquet file (or directory of them) per party, with the label column `label`
    /// (labels +1/-1; see [`labels`](Self::labels)) and every other numeric column a feature.
    pub fn parquet_parties<P: AsRef<Path>>(
        mut self,
        paths: impl IntoIterator<Item = P>,
        label: &str,
    ) -> Self {
        let paths = paths
            .into_iter()
            .map(|p| p.as_ref().to_path_buf())
            .collect();
        self.parties = Some(Parties::Parquet(paths));
        self.columns.label = label.into();
        self
    }

    /// One sparse file (LIBSVM, or Parquet with each row's non-zeros in list or map
    /// columns: `files` says which) per party, of `dim` features, kept as CSR and trained
    /// party by party; labels as [`labels`](Self::labels) says (LIBSVM: +1/-1 by default).
    pub fn sparse_parties<P: AsRef<Path>>(
        mut self,
        paths: impl IntoIterator<Item = P>,
        files: SparseFiles,
        dim: usize,
    ) -> Self {
        let paths = paths
            .into_iter()
            .map(|p| p.as_ref().to_path_buf())
            .collect();
        if let SparseFiles::Parquet { label, .. } = &files {
            self.columns.label = label.clone();
        }
        self.parties = Some(Parties::Sparse(paths, files, dim));
        self
    }

    /// Synthetic parties, each generated as it is read (whole, or a block at a time past
    /// the memory limit), with their test set: `kinsey demo`'s (`kinsey_data::synth`).
    /// Their data is public, so nothing is charged to a ledger.
    pub fn synthetic_parties(mut self, parties: Vec<SynthParty>, test: Dataset) -> Self {
        self.parties = Some(Parties::Synthetic(parties, Box::new(test)));
        self
    }

    /// One party per cluster (`kinsey.spark`'s DataFrames), with the label column `label`:
    /// each party's rows stay on its cluster, every pass of its solver is a job there, and
    /// the release is the one the same rows give on one machine, byte for byte
    /// ([`kinsey_learn::remote`]).
    pub fn remote_parties(mut self, parties: Vec<Arc<dyn RemoteParty>>, label: &str) -> Self {
        self.parties = Some(Parties::Remote(RemoteParties(parties)));
        self.columns.label = label.into();
        self
    }

    /// The job's name in the release and in its noise keys' description (`train` by
    /// default; `kinsey demo` runs `demo`).
    pub fn name(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }

    /// Aggregate with `aggregator` instead of [`backend`](Self::backend)'s (a backend
    /// made with options the [`Backend`] names do not carry, e.g. a GPU batch threshold).
    pub fn aggregator(mut self, aggregator: Arc<dyn Aggregator>) -> Self {
        self.aggregator = Some(aggregator);
        self
    }

    /// Report the job's long steps to `progress` (reading, fitting, the protocol's stages).
    pub fn progress(mut self, progress: Arc<dyn kinsey_core::Progress>) -> Self {
        self.progress = Some(Reporter(progress));
        self
    }

    /// One Arrow table per party (a library caller's data, e.g. from Python), with the
    /// label column `label`; read with the checks and messages of
    /// [`parquet_parties`](Self::parquet_parties), each table's name in its errors.
    pub fn table_parties(
        mut self,
        tables: Vec<kinsey_data::memory::ArrowTable>,
        label: &str,
    ) -> Self {
        self.parties = Some(Parties::Tables(tables));
        self.columns.label = label.into();
        self
    }

    /// The label column's name, as the model file records it (for [`parties`](Self::parties)
    /// read by the caller; `parquet_parties` and `table_parties` set it themselves).
    pub fn label_name(mut self, label: &str) -> Self {
        self.columns.label = label.into();
        self
    }

    /// Parties already in memory (their label column is named `label` in the model file
    /// unless [`label_name`](Self::label_name) says otherwise).
    pub fn parties(mut self, parties: Vec<Dataset>) -> Self {
        self.parties = Some(Parties::Loaded(parties));
        self
    }

    /// Only these feature columns, in this order (default: every numeric column but the
    /// label).
    pub fn features<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.columns.features = names.into_iter().map(Into::into).collect();
        self
    }

    /// How the label column is written (default +1/-1).
    pub fn labels(mut self, labels: LabelEncoding) -> Self {
        self.columns.labels = labels;
        self
    }

    /// A test table with the parties' columns (its errors are diagnostics).
    pub fn test(mut self, path: impl AsRef<Path>) -> Self {
        self.test = Some(path.as_ref().to_path_buf());
        self
    }

    /// The privacy parameter of the release (required).
    pub fn epsilon(mut self, epsilon: f64) -> Self {
        self.epsilon = Some(epsilon);
        self
    }

    /// The regulariser lambda of `J(w) = (1/n) sum log(1 + exp(-y w.x)) + lambda w.w`.
    pub fn lambda(mut self, lambda: f64) -> Self {
        self.lambda = lambda;
        self
    }

    /// The solver: the public gradient bound every party must reach, and its iterations.
    pub fn solver(mut self, solver: SolverConfig) -> Self {
        self.solver = solver;
        self
    }

    /// Which sensitivity derivation calibrates the noise (default: the tight one).
    pub fn sensitivity(mut self, derivation: SensitivityDerivation) -> Self {
        self.derivation = derivation;
        self
    }

    /// Which noise law (default: L2-Laplace).
    pub fn noise(mut self, noise: NoiseKind) -> Self {
        self.noise = noise;
        self
    }

    /// The row transform every party applies (rows must lie in the unit ball).
    pub fn row_transform(mut self, transform: RowTransform) -> Self {
        self.transform = transform;
        self
    }

    /// Give the model an intercept: a public constant feature `c` in (0, 1) appended to
    /// every row after the row transform, the rest scaled by `sqrt(1 - c^2)` so rows stay
    /// in the unit ball (the sensitivity is unchanged; the bias is regularised like every
    /// weight). 0.5 suits features in [0, 1]; default: no intercept.
    pub fn intercept(mut self, c: f64) -> Self {
        self.intercept = Some(c);
        self
    }

    /// Where the local fits run (default: a GPU if there is one).
    pub fn device(mut self, device: DevicePref) -> Self {
        self.device = device;
        self
    }

    /// How the models are averaged (default: Paillier with 2048-bit keys).
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }

    /// Where the Paillier backend's batches run (default: the CPU; the same bytes anywhere).
    pub fn crypto_device(mut self, device: DevicePref) -> Self {
        self.crypto_device = device;
        self
    }

    /// Accept K = 2, where the smaller party can compute the other's exact model.
    pub fn allow_two_parties(mut self) -> Self {
        self.allow_two_parties = true;
        self
    }

    /// Accept keys below the backend's minimum (tests only).
    pub fn allow_insecure_test_keys(mut self) -> Self {
        self.allow_insecure_test_keys = true;
        self
    }

    /// How long a participant waits for one protocol message (default 600 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Derive the noise from a seed, the job's parameters and every party's data: the same
    /// job on the same data replays the same release. NOT private against whoever knows the
    /// seed; for trials.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Write the seed's value into the release (by default it says only that one was used).
    pub fn record_seed(mut self) -> Self {
        self.record_seed = true;
        self
    }

    /// Also compute the NOT PRIVATE diagnostics (party sizes, fits, baselines, timings).
    pub fn diagnostics(mut self) -> Self {
        self.diagnostics = true;
        self
    }

    /// The memory the run may use, in bytes (default half this machine's, as `kinsey
    /// train`). Parquet parties that do not fit together are read and fitted one by one,
    /// each streamed from a private spill folder when it does not fit alone; the release
    /// is the same bytes. Parties given in memory are already held.
    pub fn memory_limit(mut self, bytes: u64) -> Self {
        self.memory.limit = bytes;
        self
    }

    /// Where a run in bounded memory makes its private spill folder (default: the system's
    /// temporary directory); the folder is removed when the run ends.
    pub fn spill_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.memory.spill_base = dir.into();
        self
    }

    /// Charge every party's data set the classifier's guarantee in `ledger`, before any
    /// noise is drawn (refused past a data set's budget: nothing is trained). Parties read
    /// from files are named by their paths; parties in memory need the ledger's data set
    /// name, and are charged as `NAME/party 1`, `NAME/party 2`, ...
    pub fn ledger(mut self, ledger: &crate::ledger::Ledger) -> Self {
        self.ledger = Some(ledger.clone());
        self
    }

    /// The aggregator a [`Backend`] names.
    fn backend_aggregator(
        backend: Backend,
        allow_insecure_test_keys: bool,
        crypto_device: DevicePref,
        timeout: Option<Duration>,
    ) -> Result<Arc<dyn Aggregator>> {
        let (name, key_bits, allow_insecure) = match backend {
            Backend::PlaintextReference => return Ok(Arc::new(PlaintextAggregator)),
            Backend::Paillier { key_bits } => ("paillier", Some(key_bits), false),
            Backend::Tfhe => ("tfhe", None, false),
            _ => ("mock", None, true),
        };
        let options = kinsey_protocol::registry::BackendOptions {
            key_bits,
            allow_insecure_test_keys,
            allow_insecure,
            device: Some(crypto_device),
            gpu_min_batch: None,
        };
        let backend = kinsey_protocol::registry::registry().create(name, &options)?;
        let mut config = ProtocolConfig::default();
        if let Some(t) = timeout {
            config = config.with_timeout(t);
        }
        Ok(Arc::new(SecureAggregator::new(backend, config)))
    }

    /// The job, with every parameter checked and the backend's keys made.
    pub fn build(self) -> Result<Job> {
        let parties = self.parties.ok_or_else(|| {
            Error::param(
                "parties",
                "no parties: call parquet_parties(...) or parties(...)",
            )
        })?;
        let epsilon = crate::required_epsilon(self.epsilon)?;
        if self.test.is_some() && !self.diagnostics {
            // Read only for its error rate, a diagnostic: without one asked for it would be
            // read for nothing.
            return Err(Error::param(
                "test",
                "a test set is read only for its error rate, a NOT PRIVATE diagnostic: ask \
                 for diagnostics (--diagnostics), or leave the test set out",
            ));
        }
        let aggregation: Arc<dyn Aggregator> = match (self.aggregator, self.backend) {
            (Some(a), _) => a,
            (None, b) => Self::backend_aggregator(
                b,
                self.allow_insecure_test_keys,
                self.crypto_device,
                self.timeout,
            )?,
        };
        let spec = JobSpec {
            objective: Objective::new(self.lambda)?,
            solver: self.solver,
            privacy: PrivacySpec {
                epsilon,
                calibration: self.derivation,
                noise: self.noise,
            },
            device: self.device,
            transform: self.transform,
            intercept: self.intercept,
            aggregation,
            allow_two_parties: self.allow_two_parties,
        };
        pipeline::check_parties(
            match &parties {
                Parties::Parquet(p) => p.len(),
                Parties::Loaded(p) => p.len(),
                Parties::Tables(p) => p.len(),
                Parties::Sparse(p, _, _) => p.len(),
                Parties::Synthetic(p, _) => p.len(),
                Parties::Remote(p) => p.0.len(),
            },
            spec.allow_two_parties,
        )?;
        Ok(Job {
            parties,
            test: self.test,
            columns: self.columns,
            spec,
            seed: self.seed,
            record_seed: self.record_seed,
            diagnostics: self.diagnostics,
            memory: self.memory,
            ledger: self.ledger,
            progress: self.progress,
            name: self.name,
        })
    }
}

/// A checked aggregate-classifier job, ready to run.
#[derive(Debug)]
pub struct Job {
    parties: Parties,
    test: Option<PathBuf>,
    columns: ColumnSpec,
    spec: JobSpec,
    seed: Option<u64>,
    record_seed: bool,
    diagnostics: bool,
    memory: MemoryBudget,
    ledger: Option<crate::ledger::Ledger>,
    progress: Option<Reporter>,
    name: &'static str,
}

impl Job {
    /// A builder with `kinsey train`'s defaults.
    pub fn builder() -> JobBuilder {
        JobBuilder::default()
    }

    /// The feature columns every party will be read with (public: the schema; for Parquet
    /// parties their footers are read, no row), so a caller can show them before the
    /// model is published.
    pub fn features(&self) -> Result<Vec<String>> {
        Ok(match &self.parties {
            Parties::Parquet(paths) => match paths.first() {
                Some(p) => ParquetParty::open(p, &self.columns)?.features().to_vec(),
                None => Vec::new(),
            },
            Parties::Loaded(p) => p.first().map(|d| d.features.clone()).unwrap_or_default(),
            Parties::Tables(t) => match t.first() {
                Some(t) => t.dataset(&self.columns)?.features,
                None => Vec::new(),
            },
            Parties::Sparse(_, _, dim) => Dataset::default_feature_names(*dim),
            Parties::Synthetic(p, _) => {
                p.first().map(|p| p.features().to_vec()).unwrap_or_default()
            }
            Parties::Remote(p) => kinsey_learn::remote::features(&p.0, &self.columns)?,
        })
    }

    /// Whether Parquet parties fit the memory limit together (else they are trained one
    /// by one, each streamed through a private spill). NOT PRIVATE: it follows their sizes.
    pub fn fits_in_memory_not_private(&self) -> Result<bool> {
        let paths = match &self.parties {
            Parties::Parquet(paths) => paths,
            Parties::Synthetic(p, _) => {
                return Ok(bounded::fits_in_memory(
                    p,
                    &self.spec,
                    self.diagnostics,
                    self.memory.limit,
                ));
            }
            _ => return Ok(true),
        };
        let opened = paths
            .iter()
            .map(|p| ParquetParty::open(p, &self.columns))
            .collect::<Result<Vec<_>>>()?;
        Ok(bounded::fits_in_memory(
            &opened,
            &self.spec,
            self.diagnostics,
            self.memory.limit,
        ))
    }

    /// The memory limit and the folder spills go under.
    pub fn memory(&self) -> (u64, &Path) {
        (self.memory.limit, &self.memory.spill_base)
    }

    /// Read the parties, fit every local model, aggregate under the chosen backend and
    /// return the release (and the diagnostics, when asked for).
    pub fn run(self) -> Result<Trained> {
        let t = Instant::now();
        let silent = Reporter(Arc::new(Silent));
        let progress = self.progress.clone().unwrap_or(silent);
        let progress: &dyn kinsey_core::Progress = progress.0.as_ref();
        let read_test = || {
            self.test
                .as_ref()
                .map(|p| read_parquet(p, &self.columns))
                .transpose()
        };
        let parties = match self.parties {
            Parties::Parquet(paths) => {
                // The footers only, then whole reads or party by party within the budget.
                let opened = paths
                    .iter()
                    .map(|p| ParquetParty::open(p, &self.columns))
                    .collect::<Result<Vec<_>>>()?;
                let d = opened.first().map_or(0, |p| p.features().len());
                charge_files(&self.ledger, &self.spec, &paths, d)?;
                let keys = keys_for(
                    self.name,
                    &self.spec,
                    opened.first().map(|p| p.features()),
                    (self.seed, self.record_seed),
                );
                let input = bounded::FilesInput {
                    command: self.name,
                    parties: opened,
                    test: read_test()?,
                };
                let ctx = (&self.spec, &keys);
                let report = bounded::run_parquet(
                    input,
                    &self.columns,
                    ctx,
                    self.diagnostics,
                    &self.memory,
                    progress,
                )?;
                return Ok(Trained {
                    report,
                    label: self.columns.label,
                });
            }
            Parties::Sparse(paths, files, dim) => {
                charge_files(&self.ledger, &self.spec, &paths, dim)?;
                let features = Dataset::default_feature_names(dim);
                let keys = keys_for(
                    self.name,
                    &self.spec,
                    Some(&features),
                    (self.seed, self.record_seed),
                );
                let test = self
                    .test
                    .as_ref()
                    .map(|p| files.read_test(p, dim, self.columns.labels))
                    .transpose()?;
                let input = SparseInput {
                    command: self.name,
                    parties: paths,
                    files,
                    dim,
                    labels: self.columns.labels,
                    test,
                };
                let report = run_sparse(
                    input,
                    &self.spec,
                    &keys,
                    self.diagnostics,
                    self.memory.limit,
                    progress,
                )?;
                return Ok(Trained {
                    report,
                    label: self.columns.label,
                });
            }
            Parties::Synthetic(parties, test) => {
                let features = parties.first().map(|p| p.features().to_vec());
                let keys = keys_for(
                    self.name,
                    &self.spec,
                    features.as_deref(),
                    (self.seed, self.record_seed),
                );
                let fits = bounded::fits_in_memory(
                    &parties,
                    &self.spec,
                    self.diagnostics,
                    self.memory.limit,
                );
                let report = if fits {
                    let input = pipeline::RunInput {
                        command: self.name,
                        parties: parties.iter().map(SynthParty::generate).collect(),
                        test: Some(*test),
                        ingest_s: t.elapsed().as_secs_f64(),
                    };
                    pipeline::run(input, &self.spec, &keys, self.diagnostics, progress)?
                } else {
                    let input = bounded::FilesInput {
                        command: self.name,
                        parties,
                        test: Some(*test),
                    };
                    bounded::run_bounded(
                        input,
                        &self.spec,
                        &keys,
                        self.diagnostics,
                        &self.memory,
                        progress,
                    )?
                };
                return Ok(Trained {
                    report,
                    label: self.columns.label,
                });
            }
            Parties::Remote(parties) => {
                if self.ledger.is_some() {
                    return Err(Error::param(
                        "ledger",
                        "parties on clusters are not charged to a ledger yet: leave the ledger out \
                         (a later version charges them by their digests)",
                    ));
                }
                let features = kinsey_learn::remote::features(&parties.0, &self.columns)?;
                let keys = keys_for(
                    self.name,
                    &self.spec,
                    Some(&features),
                    (self.seed, self.record_seed),
                );
                let input = kinsey_learn::remote::RemoteInput {
                    command: self.name,
                    parties: parties.0,
                    columns: self.columns.clone(),
                    test: read_test()?,
                };
                let report = kinsey_learn::remote::run(
                    input,
                    &self.spec,
                    &keys,
                    self.diagnostics,
                    progress,
                )?;
                return Ok(Trained {
                    report,
                    label: self.columns.label,
                });
            }
            Parties::Loaded(p) => p,
            Parties::Tables(tables) => tables
                .iter()
                .map(|t| t.dataset(&self.columns))
                .collect::<Result<Vec<_>>>()?,
        };
        if let Some(l) = &self.ledger {
            let d = parties.first().map_or(0, |p| p.d);
            let (eps, delta) = job_guarantee(&self.spec, parties.len(), d)?;
            let name = l.dataset_name().ok_or_else(|| {
                Error::param(
                    "dataset",
                    "parties in memory: name their data set for the ledger \
                     (Ledger::dataset, or dataset= in Python)",
                )
            })?;
            let charges = parties
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let party = format!("{name}/party {}", i + 1);
                    let digest = kinsey_data::digest::of_dataset(p);
                    let input = p.source.display().to_string();
                    Charge::of_digest(digest, &party, &input, "train", (eps, delta))
                })
                .collect::<Result<Vec<_>>>()?;
            l.charge_all(&charges)?;
        }
        let test = read_test()?;
        let features = parties.first().map(|p| p.features.as_slice());
        let keys = keys_for(
            self.name,
            &self.spec,
            features,
            (self.seed, self.record_seed),
        );
        let input = pipeline::RunInput {
            command: self.name,
            parties,
            test,
            ingest_s: t.elapsed().as_secs_f64(),
        };
        let report = pipeline::run(input, &self.spec, &keys, self.diagnostics, progress)?;
        Ok(Trained {
            report,
            label: self.columns.label,
        })
    }
}

/// Charge one release on each party file (named by its path, or by the ledger's data set
/// name when there is one party) before anything is computed.
fn charge_files(
    ledger: &Option<crate::ledger::Ledger>,
    spec: &JobSpec,
    paths: &[PathBuf],
    d: usize,
) -> Result<()> {
    let Some(l) = ledger else {
        return Ok(());
    };
    let (eps, delta) = job_guarantee(spec, paths.len(), d)?;
    let name = l.dataset_name();
    if name.is_some() && paths.len() > 1 {
        return Err(Error::param(
            "ledger-dataset",
            format!(
                "train reads {} inputs, each its own data set; a ledger's data set name \
                 (--ledger-dataset, Ledger::dataset, dataset= in Python) names the data \
                 set of a command's one input (these are named by their paths)",
                paths.len()
            ),
        ));
    }
    let charges = paths
        .iter()
        .map(|p| Charge::of_input(p, name, "train", eps, delta))
        .collect::<Result<Vec<_>>>()?;
    l.charge_all(&charges)?;
    Ok(())
}

/// The `(epsilon, delta)` of the release of `k` parties with `features` columns: public,
/// so it is charged before anything is computed.
fn job_guarantee(spec: &JobSpec, k: usize, features: usize) -> Result<(f64, f64)> {
    let d = features + usize::from(spec.intercept.is_some());
    let g = pipeline::guarantee(spec, k, d)?;
    Ok((g.epsilon, g.delta))
}

/// The noise keys of a job over parties with `features`: its description is `kinsey
/// train`'s, so the same job replays the same noise.
fn keys_for(
    name: &str,
    spec: &JobSpec,
    features: Option<&[String]>,
    (seed, record_seed): (Option<u64>, bool),
) -> NoiseKeys {
    let job = pipeline::job_description(name, spec, features.unwrap_or_default());
    NoiseKeys::new(seed, record_seed, job)
}

/// A finished job: the release, and the NOT PRIVATE diagnostics when they were asked for.
#[derive(Debug, Clone)]
pub struct Trained {
    report: Report,
    label: String,
}

impl Trained {
    /// What may be published: the classifier, its guarantee and public parameters.
    pub fn release(&self) -> &Release {
        &self.report.release
    }

    /// What may not (NOT PRIVATE), when asked for.
    pub fn diagnostics(&self) -> Option<&Diagnostics> {
        self.report.diagnostics.as_ref()
    }

    /// The whole report: the release and the diagnostics (for a front door's summary).
    pub fn report(&self) -> &Report {
        &self.report
    }

    /// The model file (`model.json`, what `kinsey predict` reads).
    pub fn model(&self) -> ModelFile {
        ModelFile::of(&self.report.release, &self.label)
    }

    /// Write `report.json`, `model.json` and (when computed) the diagnostics into `dir`,
    /// all or nothing: the files `kinsey train` writes.
    pub fn write(&self, dir: impl AsRef<Path>) -> Result<Written> {
        self.report.write(dir.as_ref(), &self.label)
    }
}
