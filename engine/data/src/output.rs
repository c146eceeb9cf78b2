//! All-or-nothing output, also under concurrent runs and signals.
//!
//! - Files are written into a staging directory private to one run,
//!   `DIR/.kinsey-tmp.PID-START.N.RAND/NAME` (`PID-START`: [`process_tag`]) (the file keeps its name and extension, which some writers
//!   read), beside their target `DIR/NAME`, and renamed into place only when every one of
//!   them is complete ([`Outputs::commit`]).
//! - Each target is locked while it is staged (`DIR/.NAME.kinsey-lock`, created exclusively
//!   and holding the writer's process id): a second run that would write the same file is
//!   refused with the other run's pid, so two runs can never mix their files. A lock whose
//!   process is gone (a run killed with SIGKILL) is taken over.
//! - An existing target is replaced only when the process allowed it ([`set_overwrite`],
//!   the CLI's `--overwrite`); otherwise the run is refused before anything is written.
//! - If anything fails, or the value is dropped without `commit` (an error or a panic
//!   unwinding), the staging directories, the locks and the directories the run created are
//!   removed. Every live `Outputs` is listed in a process-wide registry so that a signal
//!   handler can do the same ([`abandon_all`]) before the process exits; `commit` holds the
//!   registry for its renames, so a signal arriving during a commit is served after it: the
//!   targets hold either the complete previous set or the complete new one. A run's private
//!   scratch (a classifier's spill) is registered too ([`register_scratch`]). (SIGKILL
//!   cannot be served: it can leave a staging or spill directory and a stale lock, never a
//!   half-written target, and only during the microseconds of the renames a mix of old and
//!   new files. The next run that stages or spills in that folder removes the directories of
//!   runs it can prove dead, by pid and start time: [`sweep_stale`].)
//! - Secrets at rest: a staging directory is created `0700` (its files are never readable
//!   by other users while staged), and [`Outputs::write_private`] creates a file `0600` at
//!   open, so a private key is never readable by anyone else at any moment: the rename keeps
//!   the mode, and nothing is chmod-ed afterwards (which would leave a window open).

use kinsey_core::{Error, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// The prefix of every staging directory.
pub const TMP_PREFIX: &str = ".kinsey-tmp.";
/// The suffix of every lock file (`.NAME.kinsey-lock`).
pub const LOCK_SUFFIX: &str = ".kinsey-lock";

static OVERWRITE: AtomicBool = AtomicBool::new(false);
static NEXT_ID: AtomicU64 = AtomicU64::new(0);
static REGISTRY: Mutex<BTreeMap<u64, Cleanup>> = Mutex::new(BTreeMap::new());
/// The folders this process has swept for stale scratch ([`sweep_stale`]), once each.
static SWEPT: Mutex<std::collections::BTreeSet<PathBuf>> =
    Mutex::new(std::collections::BTreeSet::new());

/// Allow (or forbid, the default) replacing files that exist before a run.
pub fn set_overwrite(allow: bool) {
    OVERWRITE.store(allow, Ordering::SeqCst);
}

/// Whether existing files may be replaced (see [`set_overwrite`]).
pub fn overwrite_allowed() -> bool {
    OVERWRITE.load(Ordering::SeqCst)
}

/// What one live `Outputs` must remove if it does not commit.
#[derive(Debug, Default, Clone)]
struct Cleanup {
    staging: Vec<PathBuf>,
    locks: Vec<PathBuf>,
    dirs: Vec<PathBuf>,
}

impl Cleanup {
    fn run(&self) {
        for s in &self.staging {
            remove_tree(s);
        }
        for l in &self.locks {
            let _ = std::fs::remove_file(l);
        }
        for d in self.dirs.iter().rev() {
            let _ = std::fs::remove_dir(d); // only removes it if empty
        }
    }
}

/// Remove a staging directory even while a writer is still creating files in it (the
/// directory is gone afterwards, so a writer that opens a new file there fails).
fn remove_tree(dir: &Path) {
    for _ in 0..20 {
        match std::fs::remove_dir_all(dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => continue,
            _ => return,
        }
    }
}

fn registry() -> MutexGuard<'static, BTreeMap<u64, Cleanup>> {
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

/// Remove every live run's staging directories, locks and created directories, and keep the
/// registry locked for the rest of the process (no commit can start afterwards). For a
/// signal handler, which then exits; it waits for a commit in progress to finish.
pub fn abandon_all() {
    let guard = registry();
    for c in guard.values() {
        c.run();
    }
    // Never unlocked: the process is about to exit, and nothing may be staged or committed.
    std::mem::forget(guard);
}

/// The prefix of a run's private scratch directory (a spill of a party's rows).
pub const SPILL_PREFIX: &str = ".kinsey-spill-";

/// When process `pid` started (clock ticks since boot, Linux `/proc/PID/stat` field 22);
/// `None` where that cannot be read.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name, which may hold spaces and parentheses: field 3 onwards.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// This process as scratch names carry it: `PID-START` (its pid and start time), so a later
/// run can prove the process that made a name is gone even when the pid was reused.
pub fn process_tag() -> String {
    let me = std::process::id();
    format!("{me}-{}", start_time(me).unwrap_or(0))
}

/// Whether the process of a `PID-START` tag is provably gone: no such pid, or a pid now
/// held by a process that started at another time. Unprovable (no `/proc`, an unreadable
/// entry, a tag without a start time) counts as alive.
fn tag_is_dead(tag: &str) -> bool {
    let Some((pid, start)) = tag.split_once('-') else {
        return false;
    };
    let (Ok(pid), Ok(start)) = (pid.parse::<u32>(), start.parse::<u64>()) else {
        return false;
    };
    if start == 0 || !Path::new("/proc/self/stat").exists() || pid == std::process::id() {
        return false;
    }
    if !Path::new(&format!("/proc/{pid}")).exists() {
        return true;
    }
    start_time(pid).is_some_and(|s| s != start)
}

/// Remove the staging and spill directories in `dir` left by runs that are provably dead
/// (killed with SIGKILL, or by a power cut): `.kinsey-tmp.PID-START.*` and
/// `.kinsey-spill-PID-START-*`. Each removal is reported as a warning (the names hold no
/// data). Returns what was removed.
pub fn sweep_stale(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let tag = if let Some(rest) = name.strip_prefix(TMP_PREFIX) {
            rest.split('.').next()
        } else if let Some(rest) = name.strip_prefix(SPILL_PREFIX) {
            rest.rsplit_once('-').map(|(tag, _)| tag)
        } else {
            None
        };
        if tag.is_some_and(tag_is_dead) && e.file_type().is_ok_and(|t| t.is_dir()) {
            let path = e.path();
            remove_tree(&path);
            tracing::warn!(
                "removed {}, left by a kinsey run that was killed (its process is gone)",
                path.display()
            );
            removed.push(path);
        }
    }
    removed
}

/// [`sweep_stale`] of `dir`, the first time this process uses it.
pub fn sweep_once(dir: &Path) {
    let first = SWEPT
        .lock()
        .map(|mut g| g.insert(dir.to_path_buf()))
        .unwrap_or(false);
    if first {
        sweep_stale(dir);
    }
}

/// Register a private scratch directory (a spill) that exists, or is about to, so that
/// [`abandon_all`] removes it too (and `made`, the folder the run created to hold it, if
/// that is then empty); [`remove_scratch`] removes it.
pub fn register_scratch(dir: &Path, made: Option<&Path>) -> u64 {
    let id = NEXT_ID.fetch_add(1, Ordering::SeqCst);
    registry().insert(
        id,
        Cleanup {
            staging: vec![dir.to_path_buf()],
            dirs: made.map(Path::to_path_buf).into_iter().collect(),
            ..Cleanup::default()
        },
    );
    id
}

/// Remove scratch directory `id` (see [`register_scratch`]) and forget it.
pub fn remove_scratch(id: u64) {
    let c = registry().remove(&id);
    if let Some(c) = c {
        c.run();
    }
}

/// Whether process `pid` is running (Linux `/proc`; without it every lock counts as live).
fn process_alive(pid: u32) -> bool {
    if !Path::new("/proc/self").exists() {
        return true;
    }
    Path::new(&format!("/proc/{pid}")).exists()
}

/// A set of output files committed together.
#[derive(Debug)]
pub struct Outputs {
    id: u64,
    /// (staged file, target)
    pending: Vec<(PathBuf, PathBuf)>,
    /// target directory -> its staging directory
    staging: BTreeMap<PathBuf, PathBuf>,
    committed: bool,
    /// Replace existing targets whatever [`overwrite_allowed`] says (a library caller's
    /// explicit choice for this set only, e.g. Python's `Model.save(overwrite=True)`).
    overwrite: bool,
}

impl Default for Outputs {
    fn default() -> Self {
        Self::new()
    }
}

impl Outputs {
    /// An empty set of outputs.
    pub fn new() -> Self {
        let id = NEXT_ID.fetch_add(1, Ordering::SeqCst);
        registry().insert(id, Cleanup::default());
        Self {
            id,
            pending: Vec::new(),
            staging: BTreeMap::new(),
            committed: false,
            overwrite: false,
        }
    }

    /// This set replaces existing targets (for this set only; the process-wide choice is
    /// [`set_overwrite`]).
    pub fn overwriting(mut self) -> Self {
        self.overwrite = true;
        self
    }

    fn with_cleanup<T>(&self, f: impl FnOnce(&mut Cleanup) -> T) -> T {
        let mut r = registry();
        f(r.entry(self.id).or_default())
    }

    /// Make sure `dir` exists (remembering every directory it creates, so a failed run
    /// removes them).
    pub fn ensure_dir(&mut self, dir: &Path) -> Result<()> {
        let mut missing = Vec::new();
        let mut cur = Some(dir);
        while let Some(d) = cur.filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
            missing.push(d.to_path_buf());
            cur = d.parent();
        }
        // The first existing ancestor must be a directory (an output path through a file
        // failed later with "<file>/.x.kinsey-lock: Not a directory").
        if let Some(d) = cur.filter(|d| !d.as_os_str().is_empty() && !d.is_dir()) {
            return Err(not_a_directory(d));
        }
        for d in missing.into_iter().rev() {
            // Created and registered under the registry's lock, as the lock file is: a
            // signal between the two left an empty output directory in one CI run
            // (2026-11-29, an interrupted `experiment figure2`).
            let made = self.with_cleanup(|c| {
                let r = std::fs::create_dir(&d);
                if r.is_ok() {
                    c.dirs.push(d.clone());
                }
                r
            });
            match made {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && d.is_dir() => {}
                Err(e) => return Err(Error::io(&d, e)),
            }
        }
        Ok(())
    }

    /// Lock `target` for this run and check that it may be (re)written.
    fn claim(&mut self, dir: &Path, name: &str, target: &Path) -> Result<()> {
        if !dir.as_os_str().is_empty() && dir.exists() && !dir.is_dir() {
            return Err(not_a_directory(dir));
        }
        let lock = dir.join(format!(".{name}{LOCK_SUFFIX}"));
        let me = std::process::id();
        for attempt in 0..2 {
            // Created and registered under the registry's lock: a signal handler cleaning
            // up (it takes the same lock) sees either no lock file or a registered one. (A
            // signal between the two left a stale lock in one CI run.)
            let opened = self.with_cleanup(|c| {
                let r = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&lock);
                if r.is_ok() {
                    c.locks.push(lock.clone());
                }
                r
            });
            match opened {
                Ok(mut f) => {
                    use std::io::Write;
                    f.write_all(me.to_string().as_bytes())
                        .map_err(|e| Error::io(&lock, e))?;
                    break;
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let held = std::fs::read_to_string(&lock).unwrap_or_default();
                    let holder = held.trim().parse::<u32>().ok();
                    let age = std::fs::metadata(&lock)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.elapsed().ok())
                        .map_or(0, |d| d.as_secs());
                    let stale = match holder {
                        Some(pid) => pid != me && !process_alive(pid),
                        None => age > 10, // being written right now, or debris
                    };
                    if stale && attempt == 0 {
                        let _ = std::fs::remove_file(&lock);
                        continue;
                    }
                    let who = holder.map_or("another run".to_string(), |p| {
                        format!("another kinsey run (pid {p})")
                    });
                    return Err(Error::param(
                        "output",
                        format!(
                            "{} is being written by {who}; wait for it to finish, or remove {} if that run is gone",
                            target.display(),
                            lock.display()
                        ),
                    ));
                }
                Err(e) => return Err(Error::io(&lock, e)),
            }
        }
        if target.exists() && !self.overwrite && !overwrite_allowed() {
            return Err(Error::param(
                "output",
                format!(
                    "{} exists (an earlier result); pass --overwrite to replace it, or choose another output",
                    target.display()
                ),
            ));
        }
        Ok(())
    }

    /// This run's staging directory beside `dir`, created on first use.
    fn staging_dir(&mut self, dir: &Path) -> Result<PathBuf> {
        if let Some(s) = self.staging.get(dir) {
            return Ok(s.clone());
        }
        let nonce = {
            use std::hash::{BuildHasher, Hasher};
            std::collections::hash_map::RandomState::new()
                .build_hasher()
                .finish()
                & 0xffff_ffff
        };
        sweep_once(dir);
        let s = dir.join(format!(
            "{TMP_PREFIX}{}.{}.{nonce:08x}",
            process_tag(),
            self.id
        ));
        // Registered before it exists, so a signal between the two cannot miss it.
        self.with_cleanup(|c| c.staging.push(s.clone()));
        create_private_dir(&s).map_err(|e| Error::io(&s, e))?;
        self.staging.insert(dir.to_path_buf(), s.clone());
        Ok(s)
    }

    /// A temporary path to write `target` to; it becomes `target` on `commit`. Refused when
    /// another run is writing `target`, or when it exists and overwriting is not allowed.
    pub fn stage(&mut self, target: &Path) -> Result<PathBuf> {
        let dir = target
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        let name = target
            .file_name()
            .ok_or_else(|| {
                Error::param("output", format!("{} is not a file path", target.display()))
            })?
            .to_string_lossy()
            .into_owned();
        if self.pending.iter().any(|(_, t)| t == target) {
            return Err(Error::param(
                "output",
                format!("{} would be written twice", target.display()),
            ));
        }
        if target.is_dir() {
            return Err(Error::param(
                "output",
                format!("{} is a directory, not a file", target.display()),
            ));
        }
        self.ensure_dir(&dir)?;
        self.claim(&dir, &name, target)?;
        let tmp = self.staging_dir(&dir)?.join(&name);
        self.pending.push((tmp.clone(), target.to_path_buf()));
        Ok(tmp)
    }

    /// Write bytes to a staged file.
    pub fn write(&mut self, target: &Path, bytes: &[u8]) -> Result<()> {
        let tmp = self.stage(target)?;
        std::fs::write(&tmp, bytes).map_err(|e| Error::io(&tmp, e))
    }

    /// Write a secret (a private key) to a staged file created with mode `0600` at open,
    /// whatever the umask: readable by its owner only from its first byte to its rename.
    pub fn write_private(&mut self, target: &Path, bytes: &[u8]) -> Result<()> {
        use std::io::Write;
        let tmp = self.stage(target)?;
        let mut f = create_private_file(&tmp).map_err(|e| Error::io(&tmp, e))?;
        f.write_all(bytes).map_err(|e| Error::io(&tmp, e))?;
        f.sync_all().map_err(|e| Error::io(&tmp, e))
    }

    /// Rename every staged file into place (holding the registry, so a signal handler waits
    /// until all of them are in place), then remove the staging directories and locks.
    pub fn commit(mut self) -> Result<Vec<PathBuf>> {
        let mut reg = registry();
        let mut done = Vec::new();
        for (tmp, target) in &self.pending {
            // A diagnostic holds exact figures: owner-only, as keys and spills are. Set
            // while it is still in the 0700 staging directory, so it is never readable by
            // others in place.
            if is_not_private(target)
                && let Err(e) = make_owner_only(tmp)
            {
                drop(reg);
                return Err(Error::io(tmp, e));
            }
            if let Err(e) = std::fs::rename(tmp, target) {
                drop(reg);
                return Err(Error::io(target, e));
            }
            done.push(target.clone());
        }
        self.committed = true;
        if let Some(c) = reg.remove(&self.id) {
            c.staging.iter().for_each(|s| remove_tree(s));
            for l in &c.locks {
                let _ = std::fs::remove_file(l);
            }
        }
        Ok(done)
    }
}

impl Drop for Outputs {
    fn drop(&mut self) {
        let mut reg = registry();
        if let Some(c) = reg.remove(&self.id)
            && !self.committed
        {
            c.run();
        }
    }
}

/// Whether `target` is a NOT PRIVATE file (diagnostics, non-private baselines and plots:
/// `NOT-PRIVATE` in its name).
pub fn is_not_private(target: &Path) -> bool {
    target
        .file_name()
        .is_some_and(|n| n.to_string_lossy().contains("NOT-PRIVATE"))
}

/// Owner read and write only (`0600` on Unix).
fn make_owner_only(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// A directory only its owner can enter (`0700` on Unix, set at creation).
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
}

/// A new file only its owner can read or write (`0600` on Unix, set at creation: the umask
/// can only remove bits, so the file never has more).
pub fn create_private_file(path: &Path) -> std::io::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    o.open(path)
}

/// An output path that runs through a file.
fn not_a_directory(path: &Path) -> Error {
    Error::param(
        "output",
        format!(
            "{} is a file, not a directory: give an output path in a directory (or a new one)",
            path.display()
        ),
    )
}

/// Write a serialisable value as pretty JSON through `Outputs`.
pub fn write_json<T: Serialize>(o: &mut Outputs, path: &Path, v: &T) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(v).map_err(|e| Error::Numerical(e.to_string()))?;
    o.write(path, &bytes)
}

/// Write diagnostics to `path` (first field NOT PRIVATE).
pub fn write_diagnostics<T: Serialize>(o: &mut Outputs, path: &Path, v: &T) -> Result<()> {
    write_json(o, path, &kinsey_dp::release::NotPrivate::new(v))
}

/// The diagnostics path beside a release file: `<stem>.NOT-PRIVATE.diagnostics.json`.
pub fn diagnostics_path(dir: &Path, stem: &str) -> std::path::PathBuf {
    dir.join(format!("{stem}.NOT-PRIVATE.diagnostics.json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .expect("ls")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn uncommitted_outputs_leave_nothing() {
        let root = tempfile::tempdir().expect("tmp");
        let dir = root.path().join("new").join("deeper");
        {
            let mut o = Outputs::new();
            o.write(&dir.join("a.txt"), b"x").expect("write");
            assert!(
                dir.join(".a.txt.kinsey-lock").exists(),
                "locked while staged"
            );
        }
        assert!(
            !root.path().join("new").exists(),
            "a failed run removes every directory it created"
        );
        let mut o = Outputs::new();
        o.write(&dir.join("a.txt"), b"x").expect("write");
        o.commit().expect("commit");
        assert_eq!(std::fs::read(dir.join("a.txt")).expect("read"), b"x");
        assert_eq!(names(&dir), vec!["a.txt"], "no staging or lock left");
    }

    /// Both policies in one test: the overwrite switch is process-wide.
    #[test]
    fn concurrent_runs_are_refused_and_earlier_results_kept_unless_overwrite() {
        let root = tempfile::tempdir().expect("tmp");
        let t = root.path().join("r.json");
        let mut a = Outputs::new();
        a.write(&t, b"a").expect("first run stages");
        let mut b = Outputs::new();
        let e = b.write(&t, b"b").expect_err("second run refused");
        assert!(e.to_string().contains("being written by"), "{e}");
        drop(b);
        a.commit().expect("commit");
        let mut c = Outputs::new();
        let e = c.write(&t, b"c").expect_err("earlier result kept");
        assert!(e.to_string().contains("--overwrite"), "{e}");
        drop(c);
        assert_eq!(std::fs::read(&t).expect("read"), b"a");
        set_overwrite(true);
        let mut d = Outputs::new();
        d.write(&t, b"d").expect("overwrite allowed");
        d.commit().expect("commit");
        set_overwrite(false);
        assert_eq!(std::fs::read(&t).expect("read"), b"d");
        assert_eq!(names(root.path()), vec!["r.json"]);
    }

    #[test]
    fn a_lock_left_by_a_dead_process_is_taken_over() {
        let root = tempfile::tempdir().expect("tmp");
        // Past Linux's largest pid (2^22): no such process.
        std::fs::write(root.path().join(".x.csv.kinsey-lock"), "4294967294").expect("w");
        let mut o = Outputs::new();
        o.write(&root.path().join("x.csv"), b"1")
            .expect("stale lock taken over");
        o.commit().expect("commit");
        assert_eq!(names(root.path()), vec!["x.csv"]);
    }

    /// Item 5 of the second privacy audit: private files are `0600` from creation and
    /// staging directories `0700`. (Whatever the umask: it can only remove bits. The CLI's
    /// tests run `keys generate` and `session init` under `umask 000`.)
    #[cfg(unix)]
    #[test]
    fn private_files_are_owner_only_from_creation() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
        let root = tempfile::tempdir().expect("tmp");
        let mut o = Outputs::new();
        o.write_private(&root.path().join("key.pem"), b"secret")
            .expect("write");
        let staging = o.staging.values().next().cloned().expect("staged");
        assert_eq!(mode(&staging) & 0o077, 0, "staging directory");
        assert_eq!(
            mode(&staging.join("key.pem")) & 0o077,
            0,
            "the key while staged"
        );
        o.write(&root.path().join("public.json"), b"{}").expect("w");
        o.commit().expect("commit");
        assert_eq!(
            mode(&root.path().join("key.pem")),
            0o600,
            "the key in place"
        );
    }

    /// Item 7 of the third privacy audit: NOT PRIVATE files are owner-only in place,
    /// whatever the umask and whichever writer made them.
    #[cfg(unix)]
    #[test]
    fn not_private_files_are_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
        let root = tempfile::tempdir().expect("tmp");
        let mut o = Outputs::new();
        let diag = diagnostics_path(root.path(), "run");
        write_diagnostics(&mut o, &diag, &1).expect("w");
        let plot = root.path().join("a.NOT-PRIVATE.plot.svg");
        let staged = o.stage(&plot).expect("stage");
        std::fs::write(&staged, b"<svg/>").expect("plotter");
        std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        o.write(&root.path().join("report.json"), b"{}").expect("w");
        o.commit().expect("commit");
        assert_eq!(mode(&diag), 0o600);
        assert_eq!(mode(&plot), 0o600);
        assert_ne!(
            mode(&root.path().join("report.json")) & 0o044,
            0,
            "a release is not"
        );
    }

    /// Item 5: a spill left by a dead run (its pid gone) is swept; a live one is not.
    #[test]
    fn stale_scratch_of_dead_runs_is_swept_and_live_scratch_kept() {
        let root = tempfile::tempdir().expect("tmp");
        let dead = root
            .path()
            .join(format!("{SPILL_PREFIX}4294967294-77-abcd"));
        let live = root
            .path()
            .join(format!("{SPILL_PREFIX}{}-ef01", process_tag()));
        let staging = root
            .path()
            .join(format!("{TMP_PREFIX}4294967294-77.3.0000abcd"));
        let unprovable = root.path().join(format!("{SPILL_PREFIX}0123456789abcdef"));
        for d in [&dead, &live, &staging, &unprovable] {
            std::fs::create_dir(d).expect("mkdir");
            std::fs::write(d.join("x.f32"), b"rows").expect("w");
        }
        let removed = sweep_stale(root.path());
        assert_eq!(removed.len(), 2, "{removed:?}");
        assert!(!dead.exists() && !staging.exists());
        assert!(live.exists() && unprovable.exists());
        if Path::new("/proc/self/stat").exists() {
            assert!(!process_tag().ends_with("-0"), "{}", process_tag());
        }
    }

    #[test]
    fn abandon_removes_staged_files_of_every_live_run() {
        let root = tempfile::tempdir().expect("tmp");
        let mut o = Outputs::new();
        let tmp = o.stage(&root.path().join("big.bin")).expect("stage");
        std::fs::write(&tmp, b"partial").expect("w");
        // What the signal handler does, without keeping the registry locked.
        registry().get(&o.id).expect("registered").run();
        assert!(names(root.path()).is_empty(), "{:?}", names(root.path()));
        assert!(
            std::fs::write(&tmp, b"late").is_err(),
            "a writer cannot recreate a staged file once its directory is gone"
        );
        drop(o);
    }
}
