//! The ledger's files: its key (drawn from the OS, `0600` from creation, checked on every
//! read), paths resolved through links, and all-or-nothing replacement by rename.

use kinsey_core::{Error, Result};
use ring::hmac;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Domain of an entry's MAC.
pub(super) const ENTRY_DOMAIN: &[u8] = b"kinsey ledger entry v2\0";
/// Domain of the head's MAC.
pub(super) const HEAD_DOMAIN: &[u8] = b"kinsey ledger head v2\0";

pub(super) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub(super) fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

/// `path` with `suffix` appended to its file name.
pub(super) fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

/// `path` with symbolic links resolved: the file itself when it exists, else its folder
/// resolved and its name. A link to nothing is refused (where would the ledger be?).
pub fn resolve(path: &Path) -> Result<PathBuf> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => {
            let real = std::fs::canonicalize(path).map_err(|e| {
                Error::param(
                    "ledger",
                    format!(
                        "{} is a link to nothing ({e}); name the ledger file itself",
                        path.display()
                    ),
                )
            })?;
            if !real.is_file() {
                return Err(Error::param(
                    "ledger",
                    format!("{} is not a file", real.display()),
                ));
            }
            Ok(real)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let name = path.file_name().ok_or_else(|| {
                Error::param("ledger", format!("{} is not a file path", path.display()))
            })?;
            let dir = folder(path);
            let dir = std::fs::canonicalize(&dir).map_err(|e| Error::io(&dir, e))?;
            Ok(dir.join(name))
        }
        Err(e) => Err(Error::io(path, e)),
    }
}

/// The ledger's secret key, read and checked.
pub(super) struct Key(pub(super) hmac::Key);

impl Key {
    pub(super) fn read(path: &Path) -> Result<Self> {
        let bad = |msg: String| Error::format(path, format!("ledger key: {msg}"));
        let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
        if meta.len() > 1024 {
            return Err(bad(format!("{} bytes is not a key", meta.len())));
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(bad(format!(
                    "mode {mode:03o} lets other users read it; it must be owner-only \
                     (chmod 600), or anyone who reads it can rewrite the ledger"
                )));
            }
        }
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        match unhex(text.trim()) {
            Some(k) if k.len() == 32 => Ok(Self(hmac::Key::new(hmac::HMAC_SHA256, &k))),
            _ => Err(bad("not 64 hexadecimal digits".into())),
        }
    }

    /// A new key from the OS's generator, written `0600` from creation (never replacing a
    /// file).
    pub(super) fn create(path: &Path) -> Result<Self> {
        use ring::rand::SecureRandom;
        let mut k = [0u8; 32];
        ring::rand::SystemRandom::new()
            .fill(&mut k)
            .map_err(|_| Error::Numerical("the OS random generator failed".into()))?;
        let write = || -> std::io::Result<()> {
            let mut f = crate::output::create_private_file(path)?;
            f.write_all(format!("{}\n", hex(&k)).as_bytes())?;
            f.sync_all()?;
            std::fs::File::open(folder(path))?.sync_all()
        };
        write().map_err(|e| Error::io(path, e))?;
        Ok(Self(hmac::Key::new(hmac::HMAC_SHA256, &k)))
    }

    pub(super) fn entry_mac(&self, prev: &[u8], body: &[u8]) -> Vec<u8> {
        let mut c = hmac::Context::with_key(&self.0);
        c.update(ENTRY_DOMAIN);
        c.update(&(prev.len() as u64).to_le_bytes());
        c.update(prev);
        c.update(body);
        c.sign().as_ref().to_vec()
    }

    pub(super) fn head_mac(&self, seq: u64, last: &[u8]) -> Vec<u8> {
        let mut c = hmac::Context::with_key(&self.0);
        c.update(HEAD_DOMAIN);
        c.update(&seq.to_le_bytes());
        c.update(last);
        c.sign().as_ref().to_vec()
    }

    /// Constant-time check of `tag` against the MAC of `parts`.
    pub(super) fn verify(&self, parts: &[&[u8]], tag: &[u8]) -> bool {
        let mut msg = Vec::new();
        for p in parts {
            msg.extend_from_slice(p);
        }
        hmac::verify(&self.0, &msg, tag).is_ok()
    }
}

/// The folder holding the ledger (`.` for a bare file name).
pub(super) fn folder(path: &Path) -> PathBuf {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Write `bytes` to a temporary file (`0600` from creation) beside `path`, sync it, rename
/// it over `path` and sync the directory: a reader sees the old file or the new one, never
/// a mixture.
pub(super) fn replace_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut name = std::ffi::OsString::from(".");
    name.push(path.file_name().unwrap_or_default());
    name.push(format!(".{}.tmp", std::process::id()));
    let tmp = path.with_file_name(name);
    let write = || -> std::io::Result<()> {
        let _ = std::fs::remove_file(&tmp);
        let mut f = crate::output::create_private_file(&tmp)?;
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
