//! The rows of a SuLQ analysis that reads its input more than once (k-means: one pass per
//! step), kept from the first pass so that later passes do not parse the input again:
//! held in memory while they fit the run's memory limit ([`Rows`]), else spilled as `f32`
//! and read back a block at a time ([`RowSpill`]).
//!
//! The spill is a file of the OS's temporary directory (`TMPDIR`), created `0600` under a
//! random name and unlinked at once: no other process can open it by name, and it is gone
//! when the run ends, however it ends.

use kinsey_core::{Error, Result};
use kinsey_data::table::MATRIX_BLOCK_ROWS;
use rand_core::RngCore;
use std::io::Write;
use std::path::PathBuf;

/// Rows of `d` columns written once, read back in blocks.
#[derive(Debug)]
pub struct RowSpill {
    file: std::fs::File,
    /// Bytes written, not yet in the file.
    pending: Vec<u8>,
    d: usize,
    rows: usize,
}

/// How errors name the spill (it has no name once unlinked).
fn spill_name() -> PathBuf {
    std::env::temp_dir().join("(kinsey SuLQ spill, unlinked)")
}

impl RowSpill {
    /// An empty spill for rows of `d` columns.
    pub(crate) fn create(d: usize) -> Result<Self> {
        let mut tag = [0u8; 8];
        kinsey_dp::rng::os_crypto_rng().fill_bytes(&mut tag);
        let name: String = tag.iter().map(|b| format!("{b:02x}")).collect();
        let path = std::env::temp_dir().join(format!(".kinsey-sulq-{name}"));
        let mut o = std::fs::OpenOptions::new();
        o.read(true).write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            o.mode(0o600);
        }
        let file = o.open(&path).map_err(|e| Error::io(&path, e))?;
        std::fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
        Ok(Self {
            file,
            pending: Vec::with_capacity(1 << 20),
            d,
            rows: 0,
        })
    }

    /// Append whole rows.
    pub(crate) fn append(&mut self, x: &[f32]) -> Result<()> {
        if self.d == 0 || !x.len().is_multiple_of(self.d) {
            return Err(Error::Numerical("a spill takes whole rows".into()));
        }
        // A piece at a time, so that the buffer stays about 1 MiB whatever is appended
        // (the held rows, moved here when they pass the limit, are the limit's size).
        for piece in x.chunks(1 << 18) {
            if cfg!(target_endian = "little") {
                // The file holds little-endian f32: on such a machine, the values' own bytes.
                self.pending.extend_from_slice(bytemuck::cast_slice(piece));
            } else {
                self.pending
                    .extend(piece.iter().flat_map(|v| v.to_le_bytes()));
            }
            if self.pending.len() >= 1 << 20 {
                self.flush()?;
            }
        }
        self.rows += x.len() / self.d;
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.file
            .write_all(&self.pending)
            .map_err(|e| Error::io(spill_name(), e))?;
        self.pending.clear();
        Ok(())
    }

    /// Done writing: what was appended is in the file.
    pub(crate) fn finish(&mut self) -> Result<()> {
        self.flush()
    }

    /// Every row, in order, [`MATRIX_BLOCK_ROWS`] at a time (the last block shorter).
    pub(crate) fn for_each_block(&self, f: &mut dyn FnMut(&[f32]) -> Result<()>) -> Result<()> {
        use std::os::unix::fs::FileExt;
        let row_bytes = self.d * 4;
        let mut x = vec![0f32; MATRIX_BLOCK_ROWS * self.d];
        let mut row0 = 0;
        while row0 < self.rows {
            let rows = (self.rows - row0).min(MATRIX_BLOCK_ROWS);
            let x = &mut x[..rows * self.d];
            // Read straight into the values' bytes, then put them in this machine's order.
            self.file
                .read_exact_at(bytemuck::cast_slice_mut(x), (row0 * row_bytes) as u64)
                .map_err(|e| Error::io(spill_name(), e))?;
            if cfg!(target_endian = "big") {
                for v in x.iter_mut() {
                    *v = f32::from_le_bytes(v.to_ne_bytes());
                }
            }
            f(x)?;
            row0 += rows;
        }
        Ok(())
    }
}

/// The first pass's rows: in memory while they fit `limit` bytes, then spilled (what was
/// held goes to the spill first). Blocks are [`MATRIX_BLOCK_ROWS`] rows either way, so a
/// sum over them is the same bits held or spilled.
#[derive(Debug)]
pub enum Rows {
    /// In memory, row-major.
    Held {
        /// The rows.
        x: Vec<f32>,
        /// Columns.
        d: usize,
        /// Bytes they may take.
        limit: u64,
    },
    /// In a spill file.
    Spilled(RowSpill),
}

impl Rows {
    /// No rows yet, `d` columns, held up to `limit` bytes.
    pub fn new(d: usize, limit: u64) -> Self {
        Rows::Held {
            x: Vec::new(),
            d,
            limit,
        }
    }

    /// Append whole rows.
    pub fn append(&mut self, more: &[f32]) -> Result<()> {
        match self {
            Rows::Held { x, d, limit } => {
                let cap = (*limit / 4) as usize;
                if x.len() + more.len() <= cap {
                    // Doubling, but never past the limit: the vector's capacity is what
                    // the rows take.
                    if x.capacity() < x.len() + more.len() {
                        let want = (2 * x.capacity()).clamp(x.len() + more.len(), cap);
                        x.reserve_exact(want - x.len());
                    }
                    x.extend_from_slice(more);
                    return Ok(());
                }
                let mut s = RowSpill::create(*d)?;
                s.append(x)?;
                s.append(more)?;
                *self = Rows::Spilled(s);
                Ok(())
            }
            Rows::Spilled(s) => s.append(more),
        }
    }

    /// Done appending.
    pub fn finish(&mut self) -> Result<()> {
        match self {
            Rows::Held { x, .. } => {
                x.shrink_to_fit();
                Ok(())
            }
            Rows::Spilled(s) => s.finish(),
        }
    }

    /// Whether they were spilled.
    pub fn spilled(&self) -> bool {
        matches!(self, Rows::Spilled(_))
    }

    /// Every row, in order, [`MATRIX_BLOCK_ROWS`] at a time.
    pub fn for_each_block(&self, f: &mut dyn FnMut(&[f32]) -> Result<()>) -> Result<()> {
        match self {
            Rows::Held { x, d, .. } => x
                .chunks(MATRIX_BLOCK_ROWS * (*d).max(1))
                .try_for_each(&mut *f),
            Rows::Spilled(s) => s.for_each_block(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows come back as written, in blocks of [`MATRIX_BLOCK_ROWS`], whatever pieces they
    /// were appended in; the file has no name left in the temporary directory.
    #[test]
    fn rows_come_back_in_blocks() {
        let d = 3;
        let n = MATRIX_BLOCK_ROWS + 777;
        let x: Vec<f32> = (0..n * d).map(|i| (i % 1013) as f32 / 1013.0).collect();
        let before: Vec<_> = std::fs::read_dir(std::env::temp_dir())
            .expect("tmp")
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with(".kinsey-sulq-"))
            .collect();
        let mut s = RowSpill::create(d).expect("spill");
        for piece in x.chunks(d * 1000) {
            s.append(piece).expect("append");
        }
        s.finish().expect("finish");
        let after = std::fs::read_dir(std::env::temp_dir())
            .expect("tmp")
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with(".kinsey-sulq-"))
            .count();
        assert_eq!(after, before.len(), "the spill keeps a name");
        let (mut back, mut sizes) = (Vec::new(), Vec::new());
        s.for_each_block(&mut |b| {
            sizes.push(b.len() / d);
            back.extend_from_slice(b);
            Ok(())
        })
        .expect("read");
        assert_eq!(sizes, vec![MATRIX_BLOCK_ROWS, 777]);
        assert_eq!(back, x);
        assert!(s.append(&[1.0]).is_err(), "not a whole row");
    }

    /// Rows held and rows spilled past the limit give the same blocks.
    #[test]
    fn held_and_spilled_rows_give_the_same_blocks() {
        let d = 2;
        let x: Vec<f32> = (0..(2 * MATRIX_BLOCK_ROWS + 9) * d)
            .map(|i| (i % 977) as f32)
            .collect();
        let blocks = |limit: u64| {
            let mut r = Rows::new(d, limit);
            for piece in x.chunks(d * 5000) {
                r.append(piece).expect("append");
            }
            r.finish().expect("finish");
            let mut out = Vec::new();
            r.for_each_block(&mut |b| {
                out.push(b.to_vec());
                Ok(())
            })
            .expect("read");
            (r.spilled(), out)
        };
        let (held, a) = blocks(u64::MAX);
        let (spilled, b) = blocks(100_000);
        assert!(!held && spilled);
        assert_eq!(a, b);
        assert_eq!(a.len(), 3);
        // Rows held at a limit of exactly their size: their vector never grew past it.
        let exact = (x.len() * 4) as u64;
        let mut r = Rows::new(d, exact);
        for piece in x.chunks(d * 5000) {
            r.append(piece).expect("append");
        }
        match &r {
            Rows::Held { x: held, .. } => assert!(held.capacity() as u64 * 4 <= exact),
            Rows::Spilled(_) => panic!("rows that fit the limit were spilled"),
        }
    }
}
