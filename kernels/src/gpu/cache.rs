//! The pipeline cache kept on disk between processes: a driver compiles kinsey's shaders
//! (the limbs program's unrolled products above all) once per machine and driver, not once
//! per process. Every `kinsey` command is its own process, so without it each one pays
//! every compile again.
//!
//! Where: `KINSEY_GPU_CACHE` (a directory, or `off`), else `$XDG_CACHE_HOME/kinsey/gpu`,
//! else `$HOME/.cache/kinsey/gpu`; one file per adapter (wgpu's
//! [`wgpu::util::pipeline_cache_key`]: Vulkan only; other backends run without one). The
//! directory is created 0700 and the file 0600, written to a temporary name and renamed,
//! so a reader never sees half a file.
//!
//! The file is `MAGIC`, the SHA-256 of the payload, the payload (what
//! [`wgpu::PipelineCache::get_data`] returned). A file whose digest does not match (cut
//! short, corrupted) is ignored and rewritten: only bytes the driver itself produced reach
//! it. This is the one place kinsey calls `unsafe` wgpu: see [`open`].

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The file's first bytes (a format change renames it).
const MAGIC: &[u8; 16] = b"kinsey-gpucache1";
/// Largest cache file read back (a driver's cache of kinsey's shaders is a few MB).
const MAX_FILE: u64 = 512 << 20;

/// The environment variable naming the cache directory (or `off`).
pub const CACHE_ENV: &str = "KINSEY_GPU_CACHE";

/// The device's pipeline cache and the file it is saved to.
#[derive(Debug)]
pub(crate) struct DiskCache {
    pub(crate) cache: wgpu::PipelineCache,
    path: PathBuf,
    /// Payload bytes read from the file at start-up (0: none or ignored).
    loaded: usize,
    /// Payload bytes in the file now.
    saved: Mutex<usize>,
}

/// What the pipeline cache did in this process, for `bench gpu-probe`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheFacts {
    /// The file.
    pub path: String,
    /// Bytes read back at start-up (0 when there was no valid file).
    pub loaded_bytes: usize,
    /// Bytes in the file after the last save.
    pub saved_bytes: usize,
}

/// The cache directory the environment asks for, `None` when off or unknown.
fn directory() -> Option<PathBuf> {
    match std::env::var_os(CACHE_ENV) {
        Some(v) if v == "off" => None,
        Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ => std::env::var_os("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
            .map(|base| base.join("kinsey").join("gpu")),
    }
}

/// The payload of a cache file's bytes, `None` unless the magic and the digest match.
pub(crate) fn payload(file: &[u8]) -> Option<&[u8]> {
    let rest = file.strip_prefix(MAGIC.as_slice())?;
    let (digest, data) = rest.split_at_checked(32)?;
    let want = ring::digest::digest(&ring::digest::SHA256, data);
    (want.as_ref() == digest).then_some(data)
}

/// A cache file's bytes for `data`.
pub(crate) fn encode(data: &[u8]) -> Vec<u8> {
    let digest = ring::digest::digest(&ring::digest::SHA256, data);
    let mut out = Vec::with_capacity(MAGIC.len() + 32 + data.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(digest.as_ref());
    out.extend_from_slice(data);
    out
}

/// Write `bytes` to `path` through a temporary file in the same directory (0600 from
/// creation), renamed over the old one.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("cache"),
        std::process::id()
    ));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// The payload of the file at `path`, when it is a valid cache file.
fn read(path: &Path) -> Option<Vec<u8>> {
    let len = std::fs::metadata(path).ok()?.len();
    if len > MAX_FILE {
        tracing::warn!(
            "ignoring the GPU pipeline cache {}: {len} bytes",
            path.display()
        );
        return None;
    }
    let bytes = std::fs::read(path).ok()?;
    let data = payload(&bytes);
    if data.is_none() {
        tracing::warn!(
            "ignoring the GPU pipeline cache {}: not a kinsey cache file or damaged (it \
             will be rewritten)",
            path.display()
        );
    }
    data.map(<[u8]>::to_vec)
}

/// The device's pipeline cache, seeded from its file; `None` where the device has no
/// `PIPELINE_CACHE`, the backend has no cache key or no directory is known.
pub(crate) fn open(
    device: &wgpu::Device,
    info: &wgpu::AdapterInfo,
    features: wgpu::Features,
) -> Option<DiskCache> {
    if !features.contains(wgpu::Features::PIPELINE_CACHE) {
        return None;
    }
    let path = directory()?.join(wgpu::util::pipeline_cache_key(info)?);
    let data = read(&path);
    // SAFETY: wgpu requires `data` to come from `PipelineCache::get_data`. It does: kinsey
    // writes the file only from `get_data` (`DiskCache::save`) with the payload's SHA-256,
    // and `read` hands it on only when that digest matches (a damaged or foreign file is
    // dropped). wgpu checks the header it put there (adapter key, version, size) and the
    // driver its own (vendor, device, driver UUID), falling back to an empty cache
    // (`fallback: true`) when either differs.
    #[allow(unsafe_code)]
    let cache = unsafe {
        device.create_pipeline_cache(&wgpu::PipelineCacheDescriptor {
            label: Some("kinsey pipelines"),
            data: data.as_deref(),
            fallback: true,
        })
    };
    let loaded = data.map_or(0, |d| d.len());
    Some(DiskCache {
        cache,
        path,
        loaded,
        saved: Mutex::new(loaded),
    })
}

impl DiskCache {
    /// Save the cache when it grew since the last save (after new pipelines were built).
    /// A cache that cannot be written costs the next process its compiles, nothing else:
    /// a warning, not an error.
    pub(crate) fn save(&self) {
        let Some(data) = self.cache.get_data() else {
            return;
        };
        let Ok(mut saved) = self.saved.lock() else {
            return;
        };
        if data.len() == *saved {
            return;
        }
        match write_atomically(&self.path, &encode(&data)) {
            Ok(()) => *saved = data.len(),
            Err(e) => tracing::warn!(
                "could not save the GPU pipeline cache {}: {e}",
                self.path.display()
            ),
        }
    }

    /// What the cache did so far.
    pub(crate) fn facts(&self) -> CacheFacts {
        CacheFacts {
            path: self.path.display().to_string(),
            loaded_bytes: self.loaded,
            saved_bytes: self.saved.lock().map_or(0, |s| *s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_intact_files_reach_the_driver() {
        let data = b"pipeline bytes from the driver".to_vec();
        let file = encode(&data);
        assert_eq!(payload(&file), Some(data.as_slice()));
        // Cut short, one bit flipped, another format: all ignored.
        assert_eq!(payload(&file[..file.len() - 1]), None);
        let mut flipped = file.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert_eq!(payload(&flipped), None);
        let mut digest_flipped = file.clone();
        digest_flipped[MAGIC.len()] ^= 0x80;
        assert_eq!(payload(&digest_flipped), None);
        assert_eq!(payload(b"kinsey-gpucache0"), None);
        assert_eq!(payload(&file[..MAGIC.len() + 10]), None);
        assert_eq!(payload(&encode(&[])), Some(&[][..]));
    }

    #[test]
    fn the_file_is_private_and_replaced_whole() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("kinsey-cache-test-{}", std::process::id()));
        let path = dir.join("sub").join("cache");
        write_atomically(&path, b"first").expect("write");
        write_atomically(&path, b"second").expect("rewrite");
        assert_eq!(std::fs::read(&path).expect("read"), b"second");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "file mode {mode:o}");
        let dmode = std::fs::metadata(path.parent().expect("dir"))
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(dmode & 0o777, 0o700, "directory mode {dmode:o}");
        let leftovers = std::fs::read_dir(path.parent().expect("dir"))
            .expect("list")
            .count();
        assert_eq!(leftovers, 1, "no temporary file left behind");
        std::fs::remove_dir_all(&dir).expect("clean");
    }
}
