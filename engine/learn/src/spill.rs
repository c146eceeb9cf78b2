//! A party's rows spilled to disk, for parties larger than the memory a run may use.
//!
//! The first pass decodes the party's Parquet file a block at a time, applies the row
//! transform and the intercept, and writes the rows as the solver reads them: `f32` in the
//! machine's byte order, features and labels in two files, in a private directory (`0700`,
//! files `0600`: they are the party's data) that is removed when the run ends, however it
//! ends. Every later full-data pass reads them back a block at a time with plain buffered
//! reads: no decoding, no transform, and no file mapping (a mapped file's touched pages
//! count in the process's resident memory; read pages stay in the kernel's cache, which it
//! reclaims). Blocks are whole numbers of `GROUP_ROWS` rows, so the sums have the fixed
//! order of the in-memory kernel and the same bits.

use crate::passes::{Passes, misclassified};
use kinsey_core::{Error, Result};
use kinsey_kernels::logistic::cpu::{GROUP_ROWS, LogisticSums};
use kinsey_kernels::{LossSums, Rows};
use rand_core::RngCore;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// A private directory for spilled rows, removed (with everything in it) on drop.
#[derive(Debug)]
pub struct SpillDir {
    path: PathBuf,
    /// Its entry in the process's clean-up registry (removed on a signal too).
    scratch: u64,
}

impl SpillDir {
    /// A new directory `.kinsey-spill-PID-START-<random>` under `base` (created `0700`;
    /// `base` is created if missing, and removed again on drop if it is then empty, so a
    /// failed run leaves no folder behind). It is removed on drop (an error, a panic
    /// unwinding) and by the signal handler (`kinsey_data::output::abandon_all`); a spill
    /// left by a run killed with SIGKILL is removed by the next run that spills or stages
    /// in `base`, once its process is provably gone.
    pub fn create(base: &Path) -> Result<Self> {
        let made_base = (!base.exists()).then(|| base.to_path_buf());
        std::fs::create_dir_all(base).map_err(|e| Error::io(base, e))?;
        kinsey_data::output::sweep_once(base);
        let mut tag = [0u8; 8];
        kinsey_dp::rng::os_crypto_rng().fill_bytes(&mut tag);
        let name: String = tag.iter().map(|b| format!("{b:02x}")).collect();
        let path = base.join(format!(
            "{}{}-{name}",
            kinsey_data::output::SPILL_PREFIX,
            kinsey_data::output::process_tag()
        ));
        // Registered before it exists, so a signal between the two cannot miss it.
        let scratch = kinsey_data::output::register_scratch(&path, made_base.as_deref());
        if let Err(e) = kinsey_data::output::create_private_dir(&path) {
            kinsey_data::output::remove_scratch(scratch);
            return Err(Error::io(&path, e));
        }
        Ok(Self { path, scratch })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for SpillDir {
    fn drop(&mut self) {
        // Removes the base too when this run made it and it is empty (the run's outputs
        // may be there by now).
        kinsey_data::output::remove_scratch(self.scratch);
        if self.path.exists() {
            tracing::warn!("could not remove {}", self.path.display());
        }
    }
}

/// One spilled data set: its two files and shape.
#[derive(Debug, Clone)]
pub struct SpillPart {
    x: PathBuf,
    y: PathBuf,
    n: usize,
    d: usize,
}

impl SpillPart {
    /// Rows.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Call `f` on the labels alone, in order, `block` at a time (the digest of a data
    /// set takes every row before any label).
    pub fn for_each_label_block(&self, block: usize, mut f: impl FnMut(&[f32])) -> Result<()> {
        let mut file = File::open(&self.y).map_err(|e| Error::io(&self.y, e))?;
        let mut buf = vec![0f32; block.clamp(1, self.n.max(1))];
        let mut left = self.n;
        while left > 0 {
            let take = left.min(buf.len());
            file.read_exact(bytemuck::cast_slice_mut(&mut buf[..take]))
                .map_err(|e| Error::io(&self.y, e))?;
            f(&buf[..take]);
            left -= take;
        }
        Ok(())
    }

    /// Remove the files (a part no longer needed frees its disk space early).
    pub fn remove(&self) {
        for p in [&self.x, &self.y] {
            if let Err(e) = std::fs::remove_file(p) {
                tracing::warn!("could not remove {}: {e}", p.display());
            }
        }
    }
}

/// Writes a data set's rows to a [`SpillDir`], a block at a time.
#[derive(Debug)]
pub struct SpillWriter {
    x: BufWriter<File>,
    y: BufWriter<File>,
    part: SpillPart,
}

impl SpillWriter {
    /// New files `<name>.x` and `<name>.y` in `dir` for rows of `d` columns.
    pub fn create(dir: &SpillDir, name: &str, d: usize) -> Result<Self> {
        let open = |p: &Path| {
            kinsey_data::output::create_private_file(p)
                .map(|f| BufWriter::with_capacity(1 << 20, f))
                .map_err(|e| Error::io(p, e))
        };
        let (xp, yp) = (
            dir.path().join(format!("{name}.x")),
            dir.path().join(format!("{name}.y")),
        );
        Ok(Self {
            x: open(&xp)?,
            y: open(&yp)?,
            part: SpillPart {
                x: xp,
                y: yp,
                n: 0,
                d,
            },
        })
    }

    /// Append rows (row-major, `d` columns) and their labels.
    pub fn append(&mut self, x: &[f32], y: &[f32]) -> Result<()> {
        let p = &self.part;
        if x.len() != y.len() * p.d {
            return Err(Error::Numerical(format!(
                "spill: {} values are not {} rows of {} columns",
                x.len(),
                y.len(),
                p.d
            )));
        }
        self.x
            .write_all(bytemuck::cast_slice(x))
            .map_err(|e| Error::io(&p.x, e))?;
        self.y
            .write_all(bytemuck::cast_slice(y))
            .map_err(|e| Error::io(&p.y, e))?;
        self.part.n += y.len();
        Ok(())
    }

    /// Flush and close: the part, ready to read.
    pub fn finish(mut self) -> Result<SpillPart> {
        self.x.flush().map_err(|e| Error::io(&self.part.x, e))?;
        self.y.flush().map_err(|e| Error::io(&self.part.y, e))?;
        Ok(self.part)
    }
}

/// A buffer of up to `y.len()` rows, `rows` of them filled.
struct Block {
    x: Vec<f32>,
    y: Vec<f32>,
    rows: usize,
}

impl Block {
    fn new(rows: usize, d: usize) -> Self {
        Self {
            x: vec![0.0; rows * d],
            y: vec![0.0; rows],
            rows: 0,
        }
    }
}

/// Spilled parts read as one data set (a party: one part; the pooled baseline: every
/// party's), a block of rows at a time.
#[derive(Debug, Clone)]
pub struct Spill {
    parts: Vec<SpillPart>,
    n: usize,
    d: usize,
    block_rows: usize,
}

impl Spill {
    /// The parts, in order, read in blocks of `block_rows` rows (a positive multiple of
    /// `GROUP_ROWS`, so a block's sums keep the in-memory order).
    pub fn new(parts: Vec<SpillPart>, block_rows: usize) -> Result<Self> {
        let d = parts.first().map_or(0, |p| p.d);
        if parts.is_empty() || parts.iter().any(|p| p.d != d) {
            return Err(Error::Numerical("spill: parts of different widths".into()));
        }
        if block_rows == 0 || !block_rows.is_multiple_of(GROUP_ROWS) {
            return Err(Error::Numerical(format!(
                "spill: blocks of {block_rows} rows are not whole groups of {GROUP_ROWS}"
            )));
        }
        let n = parts.iter().map(|p| p.n).sum();
        Ok(Self {
            parts,
            n,
            d,
            block_rows,
        })
    }

    /// Call `f` on every block in order (each full but the last), with the index of its
    /// first row. A reader thread fills the next block while `f` works on this one (two
    /// buffers), so a pass costs about the larger of reading and summing, not their sum.
    pub fn for_each_block(
        &self,
        mut f: impl FnMut(usize, &[f32], &[f32]) -> Result<()>,
    ) -> Result<()> {
        let rows = self.block_rows.min(self.n).max(1);
        let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<Result<Block>>(1);
        let (free_tx, free_rx) = std::sync::mpsc::sync_channel::<Block>(2);
        for _ in 0..2 {
            // The receiver is alive: these sends cannot fail.
            let _ = free_tx.send(Block::new(rows, self.d));
        }
        // Everything moves into the scope: when `f` fails, the consumer's ends of both
        // channels are dropped before the scope waits for the reader, which then stops.
        std::thread::scope(move |scope| {
            scope.spawn(move || self.read_blocks(&free_rx, &full_tx));
            let mut row0 = 0usize;
            for block in full_rx {
                let block = block?;
                let m = block.rows;
                f(row0, &block.x[..m * self.d], &block.y[..m])?;
                row0 += m;
                // The reader may have finished: a buffer it no longer needs is dropped.
                let _ = free_tx.send(block);
            }
            Ok(())
        })
    }

    /// The reader thread of [`for_each_block`](Self::for_each_block): fills free buffers
    /// from the parts in order and hands them over; stops at the end, at an error (handed
    /// over), or when the consumer stops taking blocks.
    fn read_blocks(
        &self,
        free: &std::sync::mpsc::Receiver<Block>,
        full: &std::sync::mpsc::SyncSender<Result<Block>>,
    ) {
        let d = self.d;
        let Ok(mut block) = free.recv() else {
            return;
        };
        for part in &self.parts {
            let open = |p: &Path| File::open(p).map_err(|e| Error::io(p, e));
            let (mut xf, mut yf) = match (open(&part.x), open(&part.y)) {
                (Ok(x), Ok(y)) => (x, y),
                (Err(e), _) | (_, Err(e)) => {
                    let _ = full.send(Err(e));
                    return;
                }
            };
            let mut left = part.n;
            while left > 0 {
                let at = block.rows;
                let take = left.min(block.y.len() - at);
                let read = xf
                    .read_exact(bytemuck::cast_slice_mut(
                        &mut block.x[at * d..(at + take) * d],
                    ))
                    .map_err(|e| Error::io(&part.x, e))
                    .and_then(|()| {
                        yf.read_exact(bytemuck::cast_slice_mut(&mut block.y[at..at + take]))
                            .map_err(|e| Error::io(&part.y, e))
                    });
                if let Err(e) = read {
                    let _ = full.send(Err(e));
                    return;
                }
                block.rows += take;
                left -= take;
                if block.rows == block.y.len() {
                    if full.send(Ok(block)).is_err() {
                        return;
                    }
                    block = match free.recv() {
                        Ok(mut b) => {
                            b.rows = 0;
                            b
                        }
                        Err(_) => return,
                    };
                }
            }
        }
        if block.rows > 0 {
            let _ = full.send(Ok(block));
        }
    }

    /// Every row in memory (a party that fits the budget is fitted in memory).
    pub fn load(&self) -> Result<(Vec<f32>, Vec<f32>)> {
        let mut x = Vec::new();
        x.try_reserve_exact(self.n * self.d)
            .map_err(|_| Error::Numerical("spill: cannot allocate the rows".into()))?;
        let mut y = Vec::with_capacity(self.n);
        self.for_each_block(|_, xb, yb| {
            x.extend_from_slice(xb);
            y.extend_from_slice(yb);
            Ok(())
        })?;
        Ok((x, y))
    }
}

impl Passes for Spill {
    fn shape(&self) -> (usize, usize) {
        (self.n, self.d)
    }

    fn sums(&self, w: &[f64], hessian: bool) -> Result<LossSums> {
        let mut s = LogisticSums::new(w, self.d, hessian)?;
        self.for_each_block(|_, x, y| Ok(s.add_block(x, y)?))?;
        Ok(s.finish())
    }

    fn misclassified(&self, w: &[f64]) -> Result<usize> {
        let mut wrong = 0;
        self.for_each_block(|_, x, y| {
            wrong += misclassified(w, x, y, self.d);
            Ok(())
        })?;
        Ok(wrong)
    }

    fn gather(&self, idx: &[usize]) -> Result<(Vec<f32>, Vec<f32>)> {
        let d = self.d;
        let (mut x, mut y) = (
            Vec::with_capacity(idx.len() * d),
            Vec::with_capacity(idx.len()),
        );
        let mut next = 0usize;
        self.for_each_block(|row0, xb, yb| {
            while next < idx.len() && idx[next] < row0 + yb.len() {
                let i = idx[next]
                    .checked_sub(row0)
                    .ok_or_else(|| Error::Numerical("spill: row indices must increase".into()))?;
                x.extend_from_slice(&xb[i * d..(i + 1) * d]);
                y.push(yb[i]);
                next += 1;
            }
            Ok(())
        })?;
        if next != idx.len() {
            return Err(Error::Numerical(format!(
                "spill: row {} is past the {} rows",
                idx[next], self.n
            )));
        }
        Ok((x, y))
    }

    fn in_memory(&self) -> Option<Rows<'_>> {
        None
    }

    fn describe(&self) -> String {
        format!(
            "cpu (rayon, {} threads, faer), streamed from disk in blocks of {} rows",
            rayon::current_num_threads(),
            self.block_rows
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::MemoryPasses;

    /// Spilled rows give the in-memory passes' bits: sums with and without the Hessian,
    /// errors, gathered rows; across parts and with a partial last block. The directory is
    /// private and gone after the drop.
    #[test]
    fn spilled_passes_equal_in_memory_passes() {
        let base = tempfile::tempdir().expect("tmp");
        let fresh = base.path().join("out");
        drop(SpillDir::create(&fresh).expect("dir"));
        assert!(!fresh.exists(), "a base folder the run made is left behind");
        let dir = SpillDir::create(base.path()).expect("dir");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path())
                .expect("meta")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o700);
        }
        let a = kinsey_data::synth::generate_one(3 * GROUP_ROWS + 17, 6, 3.0, 1, "a".into());
        let b = kinsey_data::synth::generate_one(GROUP_ROWS + 5, 6, 3.0, 2, "b".into());
        let mut parts = Vec::new();
        for (name, ds) in [("a", &a), ("b", &b)] {
            let mut w = SpillWriter::create(&dir, name, 6).expect("writer");
            for (x, y) in ds.x.chunks(1000 * 6).zip(ds.y.chunks(1000)) {
                w.append(x, y).expect("append");
            }
            parts.push(w.finish().expect("finish"));
        }
        let (mut x, mut y) = (a.x.clone(), a.y.clone());
        x.extend_from_slice(&b.x);
        y.extend_from_slice(&b.y);
        let mem = MemoryPasses::new(Rows::new(&x, &y, 6).expect("rows"));
        let w = [0.3, -0.2, 0.1, 0.0, 0.5, -0.7];
        for block in [GROUP_ROWS, 2 * GROUP_ROWS] {
            let spill = Spill::new(parts.clone(), block).expect("spill");
            assert_eq!(spill.shape(), mem.shape());
            for hessian in [false, true] {
                assert_eq!(
                    spill.sums(&w, hessian).expect("spilled"),
                    mem.sums(&w, hessian).expect("memory")
                );
            }
            assert_eq!(
                spill.misclassified(&w).expect("e"),
                mem.misclassified(&w).expect("e")
            );
            let idx = [0, 5, GROUP_ROWS, 3 * GROUP_ROWS + 20, y.len() - 1];
            assert_eq!(spill.gather(&idx).expect("g"), mem.gather(&idx).expect("g"));
            assert!(spill.gather(&[y.len()]).is_err());
            assert_eq!(spill.load().expect("load"), (x.clone(), y.clone()));
        }
        let mut labels = Vec::new();
        parts[0]
            .for_each_label_block(1000, |l| labels.extend_from_slice(l))
            .expect("labels");
        assert_eq!(labels, a.y);
        // A failing consumer stops the reader (no deadlock) and its error comes back.
        let spill = Spill::new(parts.clone(), GROUP_ROWS).expect("spill");
        let mut calls = 0;
        let e = spill.for_each_block(|_, _, _| {
            calls += 1;
            Err(Error::Numerical("stop".into()))
        });
        assert!(e.is_err() && calls == 1);
        assert!(Spill::new(parts, GROUP_ROWS + 1).is_err());
        let path = dir.path().to_path_buf();
        drop(dir);
        assert!(!path.exists(), "the spill directory outlives its run");
    }
}
