//! The privacy-budget ledger every front door charges: `kinsey --ledger`, this facade and
//! Python write the same keyed file (`kinsey_data::ledger`), so a data set's budget spans
//! commands, programs and languages. A release is charged *before* its noise is drawn: a
//! refused one never exists, and one that fails after its charge has spent it.
//!
//! ```no_run
//! use kinsey::prelude::*;
//!
//! let ledger = Ledger::open("budget.jsonl")?
//!     .total(2.0, 0.0)? // the budget of a data set the ledger has not seen yet
//!     .dataset("hospital-a")?; // by default, the input's resolved path
//! let hist = Histogram::count()
//!     .epsilon(0.5)
//!     .neighbours(Neighbours::Unbounded)
//!     .ledger(&ledger)
//!     .of_column("admissions.parquet", "age")?;
//! # Ok::<(), kinsey::Error>(())
//! ```

use kinsey_core::{Error, Result};
use kinsey_data::ledger::Charge;
pub use kinsey_data::ledger::{Entry, Left};
use kinsey_dp::DataDigest;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A ledger file, its key, the total budget declared for data sets it has not seen, and
/// the name of the data set this program releases from.
#[derive(Debug, Clone)]
pub struct Ledger {
    path: PathBuf,
    key: Option<PathBuf>,
    total: Option<(f64, f64)>,
    dataset: Option<String>,
    /// What this handle and its clones charged, in order (for a front door to say what is
    /// left, or that a failed run's charge stands).
    charged: Arc<Mutex<Vec<Left>>>,
}

impl Ledger {
    /// The ledger at `path` (created with its key, `PATH.key`, `0600`, by its first
    /// charge).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let l = Self {
            path: path.as_ref().to_path_buf(),
            key: None,
            total: None,
            dataset: None,
            charged: Arc::default(),
        };
        l.inner()?;
        Ok(l)
    }

    /// Its key file, where the owner keeps it (default `PATH.key` beside the ledger).
    pub fn key(mut self, path: impl AsRef<Path>) -> Result<Self> {
        self.key = Some(path.as_ref().to_path_buf());
        self.inner()?;
        Ok(self)
    }

    /// The total budget of a data set the ledger has not seen yet (its first charge fixes
    /// it; a different one for a known data set is refused).
    pub fn total(mut self, epsilon: f64, delta: f64) -> Result<Self> {
        self.total = Some((epsilon, delta));
        self.inner()?;
        Ok(self)
    }

    /// The data set's name (by default a file's resolved path; a table in memory needs
    /// one). The same bytes under any name are charged to the data set they were first
    /// charged to.
    pub fn dataset(mut self, name: &str) -> Result<Self> {
        kinsey_data::ledger::check_name(name)?;
        self.dataset = Some(name.to_string());
        Ok(self)
    }

    /// Create an empty ledger and its key (refused if either exists).
    pub fn init(&self) -> Result<()> {
        self.inner()?.init()
    }

    /// Every entry, checked against the key.
    pub fn entries(&self) -> Result<Vec<Entry>> {
        self.inner()?.entries()
    }

    fn inner(&self) -> Result<kinsey_data::ledger::Ledger> {
        kinsey_data::ledger::Ledger::with_key(self.path.clone(), self.key.clone(), self.total)
    }

    /// Charge a release of `(epsilon, delta)` from the file or directory `input`.
    pub fn charge_file(&self, input: &Path, command: &str, budget: (f64, f64)) -> Result<Left> {
        let c = Charge::of_input(input, self.dataset.as_deref(), command, budget.0, budget.1)?;
        self.one(c)
    }

    /// Charge one release from several files or directories, each its own data set, all
    /// or none (a data set's name, when set, names one input only).
    pub fn charge_files(
        &self,
        inputs: &[&Path],
        command: &str,
        budget: (f64, f64),
    ) -> Result<Vec<Left>> {
        if self.dataset.is_some() && inputs.len() > 1 {
            return Err(Error::param(
                "ledger-dataset",
                format!(
                    "{command} reads {} inputs, each its own data set; --ledger-dataset names \
                     the data set of a command's one input (these are named by their paths)",
                    inputs.len()
                ),
            ));
        }
        let charges = inputs
            .iter()
            .map(|p| Charge::of_input(p, self.dataset.as_deref(), command, budget.0, budget.1))
            .collect::<Result<Vec<_>>>()?;
        self.charge_all(&charges)
    }

    /// Charge a release from data in memory whose digest is `digest` (the data set needs a
    /// name: [`dataset`](Self::dataset)).
    pub fn charge_digest(
        &self,
        digest: DataDigest,
        input: &str,
        command: &str,
        budget: (f64, f64),
    ) -> Result<Left> {
        let name = self.needs_name(input)?;
        self.one(Charge::of_digest(digest, name, input, command, budget)?)
    }

    /// The data set's name, which data in memory needs.
    fn needs_name(&self, input: &str) -> Result<&str> {
        self.dataset.as_deref().ok_or_else(|| {
            Error::param(
                "dataset",
                format!(
                    "{input} is data in memory: name its data set for the ledger \
                     (Ledger::dataset, or dataset= in Python)"
                ),
            )
        })
    }

    /// Charge a release from a table in memory (the data set needs a name:
    /// [`dataset`](Self::dataset); its identity is every cell of every column).
    pub fn charge_table(
        &self,
        table: &kinsey_data::memory::ArrowTable,
        command: &str,
        budget: (f64, f64),
    ) -> Result<Left> {
        use kinsey_data::memory::ColumnSource;
        let input = table.name().display().to_string();
        self.needs_name(&input)?;
        self.charge_digest(table.identity()?, &input, command, budget)
    }

    /// Charge several releases at once, all or none (a classifier's parties).
    pub fn charge_all(&self, charges: &[Charge]) -> Result<Vec<Left>> {
        let left = self.inner()?.charge(charges)?;
        if let Ok(mut c) = self.charged.lock() {
            c.extend(left.iter().cloned());
        }
        Ok(left)
    }

    /// What this handle and its clones have charged so far, oldest first: a builder given
    /// `.ledger(&l)` charges through a clone, so the caller reads here what is left.
    pub fn charged(&self) -> Vec<Left> {
        self.charged.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// The ledger file, symbolic links resolved (as given if it cannot be).
    pub fn path(&self) -> PathBuf {
        self.inner()
            .map(|l| l.path)
            .unwrap_or_else(|_| self.path.clone())
    }

    /// The name charges default to (`None`: each input's path).
    pub fn dataset_name(&self) -> Option<&str> {
        self.dataset.as_deref()
    }

    fn one(&self, c: Charge) -> Result<Left> {
        self.charge_all(&[c])?
            .pop()
            .ok_or_else(|| Error::Numerical("the ledger recorded no charge".into()))
    }
}
