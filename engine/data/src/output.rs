//! All-or-nothing output: files are written under temporary names (`.kinsey-tmp.NAME`,
//! keeping the extension, which some writers read) in their target
//! directory and renamed into place only when every one of them is complete. If anything
//! fails (or the value is dropped without `commit`), the temporaries are removed, so no
//! partial result is ever left behind.

use kinsey_core::{Error, Result};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// A set of output files committed together.
#[derive(Debug, Default)]
pub struct Outputs {
    pending: Vec<(PathBuf, PathBuf)>,
    created_dirs: Vec<PathBuf>,
    committed: bool,
}

impl Outputs {
    /// An empty set of outputs.
    pub fn new() -> Self {
        Self::default()
    }

    /// Make sure `dir` exists (remembering it, so a failed run removes a directory it created).
    pub fn ensure_dir(&mut self, dir: &Path) -> Result<()> {
        if !dir.exists() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
            self.created_dirs.push(dir.to_path_buf());
        }
        Ok(())
    }

    /// A temporary path to write `target` to; it becomes `target` on `commit`.
    pub fn stage(&mut self, target: &Path) -> Result<PathBuf> {
        let dir = target
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        self.ensure_dir(dir)?;
        let name = target.file_name().ok_or_else(|| {
            Error::param("output", format!("{} is not a file path", target.display()))
        })?;
        let tmp = dir.join(format!(".kinsey-tmp.{}", name.to_string_lossy()));
        if self.pending.iter().any(|(_, t)| t == target) {
            return Err(Error::param(
                "output",
                format!("{} would be written twice", target.display()),
            ));
        }
        self.pending.push((tmp.clone(), target.to_path_buf()));
        Ok(tmp)
    }

    /// Write bytes to a staged file.
    pub fn write(&mut self, target: &Path, bytes: &[u8]) -> Result<()> {
        let tmp = self.stage(target)?;
        std::fs::write(&tmp, bytes).map_err(|e| Error::io(&tmp, e))
    }

    /// Rename every staged file into place.
    pub fn commit(mut self) -> Result<Vec<PathBuf>> {
        let mut done = Vec::new();
        for (tmp, target) in &self.pending {
            std::fs::rename(tmp, target).map_err(|e| Error::io(target, e))?;
            done.push(target.clone());
        }
        self.committed = true;
        Ok(done)
    }
}

impl Drop for Outputs {
    fn drop(&mut self) {
        if self.committed {
            return;
        }
        for (tmp, _) in &self.pending {
            let _ = std::fs::remove_file(tmp);
        }
        for dir in self.created_dirs.iter().rev() {
            let _ = std::fs::remove_dir(dir); // only removes it if empty
        }
    }
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

    #[test]
    fn uncommitted_outputs_leave_nothing() {
        let root = tempfile::tempdir().expect("tmp");
        let dir = root.path().join("new");
        {
            let mut o = Outputs::new();
            o.write(&dir.join("a.txt"), b"x").expect("write");
        }
        assert!(!dir.exists(), "a failed run removes what it created");
        let mut o = Outputs::new();
        o.write(&dir.join("a.txt"), b"x").expect("write");
        o.commit().expect("commit");
        assert_eq!(std::fs::read(dir.join("a.txt")).expect("read"), b"x");
        assert_eq!(std::fs::read_dir(&dir).expect("ls").count(), 1);
    }
}
