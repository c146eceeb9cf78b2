//! The privacy-budget ledger: every release charged against its data set's identity (a
//! digest of every byte of the input) and the total budget declared for that data set, so
//! that a budget spans commands and runs, not only one command.
//!
//! The file is JSON lines, one entry per charge. Each entry carries `prev`, the SHA-256 of
//! every byte before it, so an edited, reordered or truncated ledger is refused when read
//! (append-only, checked). A data set's budget is fixed by its first entry; a later run
//! cannot declare another.
//!
//! Concurrency and interruption: a charge takes an exclusive lock on the ledger's folder (an
//! OS file lock, `flock`, released if the process dies; the ledger itself cannot carry it,
//! since it is replaced by a rename), reads and checks the whole ledger, and writes
//! the old bytes plus the new entries to a temporary file that is synced and renamed over
//! the ledger: all or nothing. Two runs charging the same data set are serialised, so they
//! cannot both spend the last of a budget. Commands charge *before* drawing noise, so a
//! run that fails or is stopped after its charge has spent its budget: the conservative
//! side, since its noise may have been seen.

use kinsey_core::{Error, Result};
use kinsey_dp::DataDigest;
use ring::digest::{SHA256, digest};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The largest ledger read (about 200,000 entries).
pub const MAX_LEDGER_BYTES: u64 = 64 << 20;
/// Relative slack for float round-off when adding epsilons (0.1 + 0.2 against 0.3).
const SLACK: f64 = 1e-12;

/// One line of the ledger.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// 1, 2, ... in file order.
    pub seq: u64,
    /// Seconds since the Unix epoch when the charge was written.
    pub unix_time: u64,
    /// The data set's identity: SHA-256 of every byte of the input, hex.
    pub dataset: String,
    /// The input as the command named it (for people; the identity is `dataset`).
    pub input: String,
    /// What was released (`stats mean`, `histogram`, ...).
    pub command: String,
    /// Epsilon charged.
    pub epsilon: f64,
    /// Delta charged.
    pub delta: f64,
    /// The data set's total epsilon budget (fixed by its first entry).
    pub budget_epsilon: f64,
    /// The data set's total delta budget.
    pub budget_delta: f64,
    /// SHA-256 of every byte of the ledger before this line, hex.
    pub prev: String,
}

/// One release to charge.
#[derive(Debug, Clone)]
pub struct Charge {
    /// The data set's identity ([`crate::digest::of_files`] of the input).
    pub dataset: DataDigest,
    /// The input as named.
    pub input: String,
    /// What is released.
    pub command: String,
    /// Epsilon.
    pub epsilon: f64,
    /// Delta.
    pub delta: f64,
}

impl Charge {
    /// A charge for the file or directory `input`, identified by every byte of it.
    pub fn of_input(input: &Path, command: &str, epsilon: f64, delta: f64) -> Result<Self> {
        Ok(Self {
            dataset: crate::digest::of_files(input)?,
            input: input.display().to_string(),
            command: command.into(),
            epsilon,
            delta,
        })
    }
}

/// What is left of a data set's budget after a charge.
#[derive(Debug, Clone, PartialEq)]
pub struct Left {
    /// The input as named.
    pub input: String,
    /// Epsilon left.
    pub epsilon: f64,
    /// Delta left.
    pub delta: f64,
    /// The total budget.
    pub budget: (f64, f64),
}

/// A ledger file and the budget this run declares (`None`: the one recorded).
#[derive(Debug, Clone)]
pub struct Ledger {
    /// The ledger file.
    pub path: PathBuf,
    /// The total `(epsilon, delta)` declared for data sets the ledger has not seen.
    pub budget: Option<(f64, f64)>,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn sha_hex(b: &[u8]) -> String {
    hex(digest(&SHA256, b).as_ref())
}

/// Parse and check every entry of a ledger's bytes.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Vec<Entry>> {
    let bad = |line: usize, msg: String| {
        Error::format(
            path,
            format!(
                "line {line}: {msg}; the ledger is append-only and checked: restore it from \
                 a backup (kinsey never rewrites an entry)"
            ),
        )
    };
    let mut entries = Vec::new();
    let mut start = 0;
    for (i, line) in bytes.split_inclusive(|&b| b == b'\n').enumerate() {
        if !line.ends_with(b"\n") {
            return Err(bad(i + 1, "the last entry is incomplete".into()));
        }
        let e: Entry = serde_json::from_slice(line)
            .map_err(|e| bad(i + 1, format!("not a ledger entry ({e})")))?;
        if e.seq != i as u64 + 1 {
            return Err(bad(i + 1, format!("entry number {} out of order", e.seq)));
        }
        if e.prev != sha_hex(&bytes[..start]) {
            return Err(bad(
                i + 1,
                "its digest of the earlier entries does not match them".into(),
            ));
        }
        start += line.len();
        entries.push(e);
    }
    Ok(entries)
}

/// A budget pair checked.
fn check_budget(budget: (f64, f64)) -> Result<()> {
    kinsey_core::check_epsilon("ledger-budget", budget.0)?;
    kinsey_core::check_delta("ledger-budget delta", budget.1)
}

impl Ledger {
    /// The ledger at `path` with the declared budget, checked.
    pub fn new(path: PathBuf, budget: Option<(f64, f64)>) -> Result<Self> {
        if let Some(b) = budget {
            check_budget(b)?;
        }
        Ok(Self { path, budget })
    }

    /// The entries, checked (none if the file does not exist yet).
    pub fn entries(&self) -> Result<Vec<Entry>> {
        parse(&self.path, &self.bytes()?)
    }

    /// The ledger's bytes (none if it does not exist yet), its size checked before reading.
    fn bytes(&self) -> Result<Vec<u8>> {
        match std::fs::metadata(&self.path) {
            Ok(m) if m.len() > MAX_LEDGER_BYTES => Err(Error::format(
                &self.path,
                format!(
                    "{} bytes is more than a ledger may hold ({MAX_LEDGER_BYTES})",
                    m.len()
                ),
            )),
            Ok(_) => std::fs::read(&self.path).map_err(|e| Error::io(&self.path, e)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(Error::io(&self.path, e)),
        }
    }

    /// Record `charges` (all or none) if every data set's budget allows them; otherwise
    /// refuse, naming the data set and what is left. Serialised with every other charge to
    /// the same ledger.
    pub fn charge(&self, charges: &[Charge]) -> Result<Vec<Left>> {
        let dir = folder(&self.path);
        let lock = std::fs::File::open(&dir).map_err(|e| Error::io(&dir, e))?;
        lock.lock().map_err(|e| Error::io(&dir, e))?;
        let result = self.charge_locked(charges);
        // Closing the folder releases the lock.
        drop(lock);
        result
    }

    fn charge_locked(&self, charges: &[Charge]) -> Result<Vec<Left>> {
        let old = self.bytes()?;
        let mut entries = parse(&self.path, &old)?;
        let mut bytes = old;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let mut left = Vec::new();
        for c in charges {
            kinsey_core::check_epsilon("epsilon", c.epsilon)?;
            kinsey_core::check_delta("delta", c.delta)?;
            let id = c.dataset.hex();
            let budget = self.budget_of(&entries, &id, &c.input)?;
            let (se, sd) = entries
                .iter()
                .filter(|e| e.dataset == id)
                .fold((0.0, 0.0), |(a, b), e| (a + e.epsilon, b + e.delta));
            let count = entries.iter().filter(|e| e.dataset == id).count();
            if se + c.epsilon > budget.0 * (1.0 + SLACK)
                || sd + c.delta > budget.1 * (1.0 + SLACK) + f64::MIN_POSITIVE
            {
                return Err(Error::Budget(format!(
                    "{}: {} asks for epsilon {} (delta {}), but the ledger {} has epsilon {} \
                     (delta {}) left of this data set's budget {} (delta {}) after {count} \
                     release(s); nothing was released",
                    c.input,
                    c.command,
                    c.epsilon,
                    c.delta,
                    self.path.display(),
                    (budget.0 - se).max(0.0),
                    (budget.1 - sd).max(0.0),
                    budget.0,
                    budget.1
                )));
            }
            let entry = Entry {
                seq: entries.len() as u64 + 1,
                unix_time: now,
                dataset: id,
                input: c.input.clone(),
                command: c.command.clone(),
                epsilon: c.epsilon,
                delta: c.delta,
                budget_epsilon: budget.0,
                budget_delta: budget.1,
                prev: sha_hex(&bytes),
            };
            let mut line = serde_json::to_vec(&entry)
                .map_err(|e| Error::Numerical(format!("ledger entry: {e}")))?;
            line.push(b'\n');
            bytes.extend_from_slice(&line);
            left.push(Left {
                input: c.input.clone(),
                epsilon: (budget.0 - se - c.epsilon).max(0.0),
                delta: (budget.1 - sd - c.delta).max(0.0),
                budget,
            });
            entries.push(entry);
        }
        replace_atomically(&self.path, &bytes)?;
        Ok(left)
    }

    /// The budget of data set `id`: the recorded one, which a declared one must equal, or
    /// the declared one for a data set the ledger has not seen.
    fn budget_of(&self, entries: &[Entry], id: &str, input: &str) -> Result<(f64, f64)> {
        let recorded = entries
            .iter()
            .find(|e| e.dataset == id)
            .map(|e| (e.budget_epsilon, e.budget_delta));
        match (recorded, self.budget) {
            (Some(r), Some(d)) if r != d => Err(Error::param(
                "ledger-budget",
                format!(
                    "{input}: the ledger {} fixed this data set's budget at epsilon {} (delta \
                     {}) on its first release; --ledger-budget {} (delta {}) cannot change it",
                    self.path.display(),
                    r.0,
                    r.1,
                    d.0,
                    d.1
                ),
            )),
            (Some(r), _) => Ok(r),
            (None, Some(d)) => Ok(d),
            (None, None) => Err(Error::param(
                "ledger-budget",
                format!(
                    "{input}: the ledger {} has no budget for this data set yet; declare its \
                     total with --ledger-budget EPSILON[:DELTA] (or [privacy] ledger_budget)",
                    self.path.display()
                ),
            )),
        }
    }
}

/// The folder holding the ledger (`.` for a bare file name).
fn folder(path: &Path) -> PathBuf {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Owner-only permissions on files this module creates.
trait PrivateMode {
    fn mode_private(&mut self) -> &mut Self;
}

impl PrivateMode for std::fs::OpenOptions {
    fn mode_private(&mut self) -> &mut Self {
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            self.mode(0o600);
        }
        self
    }
}

/// Write `bytes` to a temporary file beside `path`, sync it, rename it over `path` and
/// sync the directory: a reader sees the old ledger or the new one, never a mixture.
fn replace_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut name = std::ffi::OsString::from(".");
    name.push(path.file_name().unwrap_or_default());
    name.push(format!(".{}.tmp", std::process::id()));
    let tmp = path.with_file_name(name);
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .mode_private()
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(folder(path))?.sync_all()
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(path, e)
    })
}

#[cfg(test)]
mod tests;
