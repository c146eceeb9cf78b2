//! Device buffers reused across batches: a batch takes buffers of a usage and at least a
//! size, and gives them back once its results are read, so a stream of batches of the same
//! shape allocates on the device once instead of once per batch. Uploads go through
//! `queue.write_buffer` into a taken buffer (every pooled buffer is `COPY_DST`).
//!
//! A free buffer is reused for a request of its usage when it is at most twice the size
//! asked (kernels bind whole buffers and bound their loops by counts, not by buffer
//! lengths). Free buffers above [`KEEP_BYTES`] in all are dropped, the oldest first.

use std::sync::{Arc, Mutex};

/// Most bytes of free buffers a pool keeps.
pub(crate) const KEEP_BYTES: u64 = 1 << 30;

/// A pool of buffers on one device.
#[derive(Clone, Default, Debug)]
pub(crate) struct BufferPool {
    free: Arc<Mutex<Vec<wgpu::Buffer>>>,
}

impl BufferPool {
    /// A buffer of `usage | COPY_DST` and at least `size` bytes (rounded up to 4): a free
    /// one of the same usage and at most twice the size, else a new one.
    pub(crate) fn take(
        &self,
        device: &wgpu::Device,
        label: &str,
        size: u64,
        usage: wgpu::BufferUsages,
    ) -> wgpu::Buffer {
        let usage = usage | wgpu::BufferUsages::COPY_DST;
        let size = size.max(4).next_multiple_of(4);
        if let Ok(mut free) = self.free.lock()
            && let Some(k) = free
                .iter()
                .position(|b| b.usage() == usage && b.size() >= size && b.size() <= 2 * size)
        {
            return free.remove(k);
        }
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage,
            mapped_at_creation: false,
        })
    }

    /// A buffer holding `bytes` (written through the queue before the next submission).
    pub(crate) fn upload(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        label: &str,
        bytes: &[u8],
        usage: wgpu::BufferUsages,
    ) -> wgpu::Buffer {
        let buf = self.take(device, label, bytes.len() as u64, usage);
        if bytes.len().is_multiple_of(4) {
            queue.write_buffer(&buf, 0, bytes);
        } else {
            let mut padded = bytes.to_vec();
            padded.resize(bytes.len().next_multiple_of(4), 0);
            queue.write_buffer(&buf, 0, &padded);
        }
        buf
    }

    /// [`upload`](Self::upload) with the bytes copied into wgpu's staging memory on every
    /// core (a large upload; one copy, no intermediate vector). The serial way
    /// ([`super::stream::serial`]) uses `write_buffer`, as before.
    pub(crate) fn upload_par(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        label: &str,
        bytes: &[u8],
        usage: wgpu::BufferUsages,
    ) -> wgpu::Buffer {
        use rayon::prelude::*;
        /// Bytes per parallel piece.
        const PIECE: usize = 1 << 20;
        let size = wgpu::BufferSize::new(bytes.len() as u64);
        if super::stream::serial() || bytes.len() < 2 * PIECE || !bytes.len().is_multiple_of(4) {
            return self.upload(device, queue, label, bytes, usage);
        }
        let buf = self.take(device, label, bytes.len() as u64, usage);
        let Some(mut view) = size.and_then(|n| queue.write_buffer_with(&buf, 0, n)) else {
            // Refused (the error scope of the submission says why): the plain path.
            queue.write_buffer(&buf, 0, bytes);
            return buf;
        };
        // Whole pieces as sized arrays (which may cross threads), the tail here.
        let (pieces, mut tail) = view.slice(..).into_chunks::<PIECE>();
        let whole = bytes.len() / PIECE * PIECE;
        tail.copy_from_slice(&bytes[whole..]);
        let pieces: Vec<_> = pieces.into_iter().zip(bytes.chunks_exact(PIECE)).collect();
        pieces.into_par_iter().for_each(|(dst, src)| {
            let mut dst: wgpu::WriteOnly<'_, [u8]> = dst.into();
            dst.copy_from_slice(src);
        });
        // Dropping the view schedules the copy into `buf` before the next submission.
        drop(view);
        buf
    }

    /// Give buffers back once the device no longer uses them.
    pub(crate) fn give(&self, bufs: impl IntoIterator<Item = wgpu::Buffer>) {
        let Ok(mut free) = self.free.lock() else {
            return;
        };
        free.extend(bufs);
        let mut total: u64 = free.iter().map(wgpu::Buffer::size).sum();
        while total > KEEP_BYTES && !free.is_empty() {
            total -= free.remove(0).size();
        }
    }

    /// Free buffers held (for tests).
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.free.lock().map_or(0, |f| f.len())
    }
}
