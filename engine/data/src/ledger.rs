//! The privacy-budget ledger: every release is charged to a data set, against the total
//! budget declared for that data set, before its noise is drawn. The same ledger serves
//! every front door (the CLI, the Rust facade, Python): a budget spans commands, runs and
//! languages.
//!
//! # What it holds against
//! The ledger is a security boundary against the person who runs the commands, so it is
//! checked, not trusted:
//! - **Keyed.** Every entry carries an HMAC-SHA256 (`mac`) of its own bytes and of the
//!   entry before it, under a 256-bit key drawn from the OS when the ledger is created and
//!   kept in a key file, `0600` from creation (`LEDGER.key`, or a path the owner names).
//!   An edited, reordered, removed or rewritten entry, the last one included, is refused;
//!   recomputing the MACs needs the key.
//! - **A keyed head.** `LEDGER.head` holds the number of entries and a MAC over it and the
//!   last entry's MAC, so a ledger cut short (its last entries removed) is refused. (A head
//!   behind the ledger is accepted: a run stopped between the two renames has spent more,
//!   never less.) Rolling back *both* files to an earlier copy is not detected: only
//!   storage the analyst cannot rewrite can stop that (docs/privacy.md).
//! - **One ledger per file.** The path is resolved once, symbolic links included; every
//!   path naming the same file names one ledger, one key and one lock.
//! - **Data sets by their owner's name and their bytes.** A charge names its data set
//!   (the owner's name, or by default the input's resolved path) and carries the digest of
//!   its bytes ([`crate::digest::identity_of_files`]: no file name enters it). Bytes the
//!   ledger has seen are charged to the data set they were first charged to, whatever
//!   their name or path now; changed bytes under a known name are charged to that name,
//!   and the charge says so.
//! - A missing ledger whose key or head is still there is refused (it was deleted).
//!
//! # Concurrency and interruption
//! A charge takes an exclusive lock on the ledger's folder (an OS file lock, `flock`,
//! released if the process dies; the ledger itself cannot carry it, since it is replaced by
//! a rename), reads and checks the whole ledger, writes the old bytes plus the new entries
//! to a temporary file that is synced and renamed over the ledger, then does the same for
//! the head: all or nothing. Two runs charging the same data set are serialised, so they
//! cannot both spend the last of a budget. Every front door charges *before* drawing
//! noise, so a run that fails or is stopped after its charge has spent its budget: the
//! conservative side, since its noise may have been seen.

use kinsey_core::{Error, Result};
use kinsey_dp::DataDigest;
mod files;

pub use files::resolve;
use files::{ENTRY_DOMAIN, HEAD_DOMAIN, Key, folder, hex, replace_atomically, sibling, unhex};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The largest ledger read (about 200,000 entries).
pub const MAX_LEDGER_BYTES: u64 = 64 << 20;
/// Relative slack for float round-off when adding epsilons (0.1 + 0.2 against 0.3).
const SLACK: f64 = 1e-12;
/// Where the MAC starts in a line: the entry's last field.
const MAC_FIELD: &[u8] = b",\"mac\":\"";
/// The longest data set name.
pub const MAX_NAME_CHARS: usize = 256;

/// One line of the ledger.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// 1, 2, ... in file order.
    pub seq: u64,
    /// Seconds since the Unix epoch when the charge was written.
    pub unix_time: u64,
    /// The data set charged: its owner's name, or its input's resolved path.
    pub dataset: String,
    /// SHA-256 of the bytes released from, hex ([`crate::digest::identity_of_files`]).
    pub digest: String,
    /// The input as the command named it (for people).
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
    /// HMAC-SHA256 of this line before this field and of the previous entry's MAC, hex.
    pub mac: String,
}

/// One release to charge.
#[derive(Debug, Clone)]
pub struct Charge {
    /// The digest of the bytes released from ([`crate::digest::identity_of_files`]).
    pub digest: DataDigest,
    /// The data set's name (owner-given, or the input's resolved path).
    pub dataset: String,
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
    /// A charge for the file or directory `input`, identified by its bytes and named
    /// `dataset` (by default the input's resolved path).
    pub fn of_input(
        input: &Path,
        dataset: Option<&str>,
        command: &str,
        epsilon: f64,
        delta: f64,
    ) -> Result<Self> {
        let name = match dataset {
            Some(n) => n.to_string(),
            None => std::fs::canonicalize(input)
                .map_err(|e| Error::io(input, e))?
                .display()
                .to_string(),
        };
        Self::of_digest(
            crate::digest::identity_of_files(input)?,
            &name,
            &input.display().to_string(),
            command,
            (epsilon, delta),
        )
    }

    /// A charge for data already digested (a table or values in memory), named `dataset`.
    pub fn of_digest(
        digest: DataDigest,
        dataset: &str,
        input: &str,
        command: &str,
        (epsilon, delta): (f64, f64),
    ) -> Result<Self> {
        check_name(dataset)?;
        Ok(Self {
            digest,
            dataset: dataset.into(),
            input: input.into(),
            command: command.into(),
            epsilon,
            delta,
        })
    }
}

/// A data set name: 1 to [`MAX_NAME_CHARS`] characters, none of them a control character.
pub fn check_name(name: &str) -> Result<()> {
    let n = name.chars().count();
    if n == 0 || n > MAX_NAME_CHARS || name.chars().any(char::is_control) {
        return Err(Error::param(
            "ledger-dataset",
            format!(
                "a data set name has 1 to {MAX_NAME_CHARS} characters and no control \
                 characters (got {n} characters)"
            ),
        ));
    }
    Ok(())
}

/// What is left of a data set's budget after a charge.
#[derive(Debug, Clone, PartialEq)]
pub struct Left {
    /// The data set charged.
    pub dataset: String,
    /// The input as named.
    pub input: String,
    /// Epsilon left.
    pub epsilon: f64,
    /// Delta left.
    pub delta: f64,
    /// The total budget.
    pub budget: (f64, f64),
    /// Why the charge went to another data set than the one named, or that the data set's
    /// bytes changed (public: the names and the fact of a change, never the data).
    pub note: Option<String>,
}

/// A ledger file, its key and the budget this run declares (`None`: the one recorded).
#[derive(Debug, Clone)]
pub struct Ledger {
    /// The ledger file, symbolic links resolved.
    pub path: PathBuf,
    /// The key file.
    pub key_path: PathBuf,
    /// The head file (`LEDGER.head`).
    pub head_path: PathBuf,
    /// The total `(epsilon, delta)` declared for data sets the ledger has not seen.
    pub budget: Option<(f64, f64)>,
}

/// The head file: how many entries the ledger had, keyed.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Head {
    seq: u64,
    mac: String,
}

/// The refusal of a ledger that does not check.
fn tampered(path: &Path, line: Option<usize>, msg: &str) -> Error {
    let at = line.map(|l| format!("line {l}: ")).unwrap_or_default();
    Error::refused(
        path.display().to_string(),
        format!(
            "{at}{msg}; the ledger is append-only and keyed: restore it (and its .head) from \
             a backup; kinsey never rewrites an entry"
        ),
    )
}

/// The refusal of a ledger written before entries were keyed.
fn unkeyed(path: &Path) -> Error {
    Error::refused(
        path.display().to_string(),
        "an unkeyed ledger written by kinsey before its third privacy audit; it cannot be \
         checked: keep it as a record and start a new ledger file (declaring each data \
         set's budget less what the old one lists)",
    )
}

/// Parse and check every entry of a ledger's bytes under `key`; the last entry's MAC.
fn parse(path: &Path, key: &Key, bytes: &[u8]) -> Result<(Vec<Entry>, Vec<u8>)> {
    let mut entries = Vec::new();
    let mut prev: Vec<u8> = Vec::new();
    for (i, line) in bytes.split_inclusive(|&b| b == b'\n').enumerate() {
        let no = Some(i + 1);
        if !line.ends_with(b"\"}\n") {
            return Err(tampered(path, no, "the entry is incomplete"));
        }
        let Some(cut) = line.windows(MAC_FIELD.len()).rposition(|w| w == MAC_FIELD) else {
            return Err(if line.windows(8).any(|w| w == b"\"prev\":\"") {
                unkeyed(path)
            } else {
                tampered(path, no, "the entry has no MAC")
            });
        };
        let e: Entry = serde_json::from_slice(line)
            .map_err(|e| tampered(path, no, &format!("not a ledger entry ({e})")))?;
        let tag = unhex(&e.mac).filter(|t| t.len() == 32);
        let len = (prev.len() as u64).to_le_bytes();
        let ok = tag
            .as_ref()
            .is_some_and(|t| key.verify(&[ENTRY_DOMAIN, &len, &prev, &line[..cut]], t));
        if !ok {
            return Err(tampered(
                path,
                no,
                "its MAC does not match it and the entries before it (edited, reordered, \
                 removed or written without the key)",
            ));
        }
        if e.seq != i as u64 + 1 {
            return Err(tampered(
                path,
                no,
                &format!("entry number {} out of order", e.seq),
            ));
        }
        prev = tag.unwrap_or_default();
        entries.push(e);
    }
    Ok((entries, prev))
}

/// A budget pair checked.
fn check_budget(budget: (f64, f64)) -> Result<()> {
    kinsey_core::check_epsilon("ledger-budget", budget.0)?;
    kinsey_core::check_delta("ledger-budget delta", budget.1)
}

/// The files of a ledger as found on disk.
struct State {
    key: Option<Key>,
    entries: Vec<Entry>,
    bytes: Vec<u8>,
    last_mac: Vec<u8>,
}

impl Ledger {
    /// The ledger at `path` (symbolic links resolved), its key beside it (`LEDGER.key`),
    /// with the declared budget, checked.
    pub fn new(path: PathBuf, budget: Option<(f64, f64)>) -> Result<Self> {
        Self::with_key(path, None, budget)
    }

    /// The ledger at `path` with its key at `key` (default `LEDGER.key` beside it).
    pub fn with_key(
        path: PathBuf,
        key: Option<PathBuf>,
        budget: Option<(f64, f64)>,
    ) -> Result<Self> {
        if let Some(b) = budget {
            check_budget(b)?;
        }
        let path = resolve(&path)?;
        let key_path = match key {
            Some(k) => resolve(&k)?,
            None => sibling(&path, ".key"),
        };
        Ok(Self {
            head_path: sibling(&path, ".head"),
            key_path,
            path,
            budget,
        })
    }

    /// The entries, checked (none if the ledger does not exist yet).
    pub fn entries(&self) -> Result<Vec<Entry>> {
        Ok(self.state()?.entries)
    }

    /// Create an empty ledger with a new key (refused if any of its files exists): the way
    /// an owner provisions a ledger whose key lives in a path of their choosing.
    pub fn init(&self) -> Result<()> {
        self.locked(|| {
            for p in [&self.path, &self.key_path, &self.head_path] {
                if std::fs::symlink_metadata(p).is_ok() {
                    return Err(Error::param(
                        "ledger",
                        format!("{} exists; a ledger is created once", p.display()),
                    ));
                }
            }
            let key = Key::create(&self.key_path)?;
            replace_atomically(&self.path, b"")?;
            self.write_head(&key, 0, &[])
        })
    }

    /// The ledger's bytes (none if it does not exist yet), its size checked before reading.
    fn bytes(&self) -> Result<Option<Vec<u8>>> {
        match std::fs::metadata(&self.path) {
            Ok(m) if m.len() > MAX_LEDGER_BYTES => Err(Error::format(
                &self.path,
                format!(
                    "{} bytes is more than a ledger may hold ({MAX_LEDGER_BYTES})",
                    m.len()
                ),
            )),
            Ok(_) => std::fs::read(&self.path)
                .map(Some)
                .map_err(|e| Error::io(&self.path, e)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(&self.path, e)),
        }
    }

    /// Read and check the ledger, its key and its head.
    fn state(&self) -> Result<State> {
        let exists = |p: &Path| std::fs::symlink_metadata(p).is_ok();
        let Some(bytes) = self.bytes()? else {
            if exists(&self.head_path) || exists(&self.key_path) {
                return Err(tampered(
                    &self.path,
                    None,
                    &format!(
                        "the ledger is missing but its {} is there (deleted, or a first \
                         charge died before writing it; remove the key and head only to \
                         start a new ledger, and every budget with it)",
                        if exists(&self.head_path) {
                            "head"
                        } else {
                            "key"
                        }
                    ),
                ));
            }
            return Ok(State {
                key: None,
                entries: Vec::new(),
                bytes: Vec::new(),
                last_mac: Vec::new(),
            });
        };
        if !exists(&self.key_path) {
            let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
            if first.windows(8).any(|w| w == b"\"prev\":\"") {
                return Err(unkeyed(&self.path));
            }
            if !bytes.is_empty()
                && (serde_json::from_slice::<Entry>(first).is_err()
                    || !first.windows(MAC_FIELD.len()).any(|w| w == MAC_FIELD))
            {
                return Err(tampered(&self.path, Some(1), "not a ledger entry"));
            }
            return Err(Error::format(
                &self.key_path,
                format!(
                    "the key of the ledger {} is missing; without it the ledger cannot be \
                     checked (restore it from a backup)",
                    self.path.display()
                ),
            ));
        }
        let key = Key::read(&self.key_path)?;
        let (entries, last_mac) = parse(&self.path, &key, &bytes)?;
        self.check_head(&key, &entries)?;
        Ok(State {
            key: Some(key),
            entries,
            bytes,
            last_mac,
        })
    }

    /// The head must name an entry of the ledger (a ledger cut short is refused).
    fn check_head(&self, key: &Key, entries: &[Entry]) -> Result<()> {
        let text = match std::fs::read(&self.head_path) {
            Ok(t) if t.len() <= 1024 => t,
            Ok(_) => return Err(tampered(&self.head_path, None, "not a ledger head")),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(tampered(&self.path, None, "its head file is missing"));
            }
            Err(e) => return Err(Error::io(&self.head_path, e)),
        };
        let head: Head = serde_json::from_slice(&text)
            .map_err(|e| tampered(&self.head_path, None, &format!("not a ledger head ({e})")))?;
        let n = entries.len() as u64;
        if head.seq > n {
            return Err(tampered(
                &self.path,
                None,
                &format!(
                    "its head counts {} entries, the ledger has {n} (cut short)",
                    head.seq
                ),
            ));
        }
        let last = match head.seq {
            0 => Vec::new(),
            s => unhex(&entries[s as usize - 1].mac).unwrap_or_default(),
        };
        let tag = unhex(&head.mac).unwrap_or_default();
        if !key.verify(&[HEAD_DOMAIN, &head.seq.to_le_bytes(), &last], &tag) {
            return Err(tampered(
                &self.head_path,
                None,
                "its MAC does not match the ledger (written without the key)",
            ));
        }
        Ok(())
    }

    fn write_head(&self, key: &Key, seq: u64, last: &[u8]) -> Result<()> {
        let head = Head {
            seq,
            mac: hex(&key.head_mac(seq, last)),
        };
        let mut b = serde_json::to_vec(&head).map_err(|e| Error::Numerical(e.to_string()))?;
        b.push(b'\n');
        replace_atomically(&self.head_path, &b)
    }

    /// Run `f` holding the exclusive lock of the ledger's folder.
    fn locked<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let dir = folder(&self.path);
        let lock = std::fs::File::open(&dir).map_err(|e| Error::io(&dir, e))?;
        lock.lock().map_err(|e| Error::io(&dir, e))?;
        let result = f();
        // Closing the folder releases the lock.
        drop(lock);
        result
    }

    /// Record `charges` (all or none) if every data set's budget allows them; otherwise
    /// refuse, naming the data set and what is left. Serialised with every other charge to
    /// the same ledger.
    pub fn charge(&self, charges: &[Charge]) -> Result<Vec<Left>> {
        self.locked(|| self.charge_locked(charges))
    }

    fn charge_locked(&self, charges: &[Charge]) -> Result<Vec<Left>> {
        let State {
            key,
            mut entries,
            mut bytes,
            mut last_mac,
        } = self.state()?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let mut left = Vec::new();
        let first_new = entries.len();
        for c in charges {
            kinsey_core::check_epsilon("epsilon", c.epsilon)?;
            kinsey_core::check_delta("delta", c.delta)?;
            check_name(&c.dataset)?;
            let digest = c.digest.hex();
            let (name, note) = dataset_of(&entries, &digest, &c.dataset);
            let budget = self.budget_of(&entries, &name, &c.input)?;
            let (se, sd) = entries
                .iter()
                .filter(|e| e.dataset == name)
                .fold((0.0, 0.0), |(a, b), e| (a + e.epsilon, b + e.delta));
            let count = entries.iter().filter(|e| e.dataset == name).count();
            if se + c.epsilon > budget.0 * (1.0 + SLACK)
                || sd + c.delta > budget.1 * (1.0 + SLACK) + f64::MIN_POSITIVE
            {
                let n = kinsey_core::short;
                let hint = if budget.1 == 0.0 && c.delta > 0.0 {
                    "; the data set's budget has no delta and this release's guarantee has \
                     one: declare the budget as EPSILON:DELTA (--ledger-budget, \
                     ledger_budget, budget=(epsilon, delta) in Python) when the data set is \
                     first charged"
                } else {
                    ""
                };
                return Err(Error::Budget(format!(
                    "{}: {} asks for epsilon {} (delta {}), but the ledger {} has epsilon {} \
                     (delta {}) left of the budget {} (delta {}) of data set '{name}' \
                     after {count} release(s); nothing was released{hint}",
                    c.input,
                    c.command,
                    n(c.epsilon),
                    n(c.delta),
                    self.path.display(),
                    n((budget.0 - se).max(0.0)),
                    n((budget.1 - sd).max(0.0)),
                    n(budget.0),
                    n(budget.1)
                )));
            }
            let entry = Entry {
                seq: entries.len() as u64 + 1,
                unix_time: now,
                dataset: name.clone(),
                digest,
                input: c.input.clone(),
                command: c.command.clone(),
                epsilon: c.epsilon,
                delta: c.delta,
                budget_epsilon: budget.0,
                budget_delta: budget.1,
                mac: String::new(),
            };
            left.push(Left {
                dataset: name,
                input: c.input.clone(),
                epsilon: (budget.0 - se - c.epsilon).max(0.0),
                delta: (budget.1 - sd - c.delta).max(0.0),
                budget,
                note,
            });
            entries.push(entry);
        }
        let key = match key {
            Some(k) => k,
            None => Key::create(&self.key_path)?,
        };
        for entry in &entries[first_new..] {
            let mut body = serde_json::to_vec(&Body::of(entry))
                .map_err(|e| Error::Numerical(format!("ledger entry: {e}")))?;
            body.pop(); // the closing brace: the MAC is the last field
            let mac = key.entry_mac(&last_mac, &body);
            body.extend_from_slice(MAC_FIELD);
            body.extend_from_slice(hex(&mac).as_bytes());
            body.extend_from_slice(b"\"}\n");
            bytes.extend_from_slice(&body);
            last_mac = mac;
        }
        replace_atomically(&self.path, &bytes)?;
        self.write_head(&key, entries.len() as u64, &last_mac)?;
        Ok(left)
    }

    /// The budget of data set `name`: the recorded one, which a declared one must equal, or
    /// the declared one for a data set the ledger has not seen.
    fn budget_of(&self, entries: &[Entry], name: &str, input: &str) -> Result<(f64, f64)> {
        let recorded = entries
            .iter()
            .find(|e| e.dataset == name)
            .map(|e| (e.budget_epsilon, e.budget_delta));
        match (recorded, self.budget) {
            (Some(r), Some(d)) if r != d => Err(Error::param(
                "ledger-budget",
                format!(
                    "{input}: the ledger {} fixed the budget of data set '{name}' at \
                     epsilon {} (delta {}) on its first release; --ledger-budget {} (delta \
                     {}) cannot change it",
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
                    "{input}: the ledger {} has no budget for data set '{name}' yet; declare \
                     its total with --ledger-budget EPSILON[:DELTA] (or [privacy] \
                     ledger_budget)",
                    self.path.display()
                ),
            )),
        }
    }
}

/// The data set a charge of `digest` named `name` goes to: the one these bytes were first
/// charged to; else `name`, noting when its bytes changed since its last release.
fn dataset_of(entries: &[Entry], digest: &str, name: &str) -> (String, Option<String>) {
    if let Some(e) = entries.iter().find(|e| e.digest == digest) {
        let note = (e.dataset != name).then(|| {
            format!(
                "the same bytes were charged as data set '{}': charged to it",
                e.dataset
            )
        });
        return (e.dataset.clone(), note);
    }
    let note = entries.iter().any(|e| e.dataset == name).then(|| {
        format!(
            "data set '{name}' changed since its last release: the new bytes are charged \
             to its budget"
        )
    });
    (name.to_string(), note)
}

/// An entry without its MAC, in the field order of [`Entry`].
#[derive(Serialize)]
struct Body<'a> {
    seq: u64,
    unix_time: u64,
    dataset: &'a str,
    digest: &'a str,
    input: &'a str,
    command: &'a str,
    epsilon: f64,
    delta: f64,
    budget_epsilon: f64,
    budget_delta: f64,
}

impl<'a> Body<'a> {
    fn of(e: &'a Entry) -> Self {
        Self {
            seq: e.seq,
            unix_time: e.unix_time,
            dataset: &e.dataset,
            digest: &e.digest,
            input: &e.input,
            command: &e.command,
            epsilon: e.epsilon,
            delta: e.delta,
            budget_epsilon: e.budget_epsilon,
            budget_delta: e.budget_delta,
        }
    }
}

#[cfg(test)]
mod tests;
