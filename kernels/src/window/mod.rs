//! The `window` kernel: the sliding-window sums of one chunk of the decayed sums' dyadic
//! tree ([`WindowChunk`]): every node's true value (children added left + right), its
//! release on the grid `gamma Z` with its noise draw, and per step the released nodes of its
//! window added left to right. The kernel knows nothing of privacy: the caller calibrated
//! `gamma` and drew `z` (the `dyadic` kernel).
//!
//! CPU twin [`cpu::window_sums`] (plain), its fast path [`blocks::Blocks`] (block by block,
//! what the decayed sums run); GPU twin [`gpu::GpuWindow`] (`shaders/window.wgsl`, f64
//! arithmetic through `SHADER_F64`). The same IEEE operations in the same order: the same
//! bits.
//!
//! The binary mechanism's segments share the shader ([`running`]: the running sums' level
//! passes and per-step sums, CPU twin beside them).

pub mod blocks;
pub mod cpu;
#[cfg(feature = "gpu")]
pub mod gpu;
#[cfg(feature = "gpu")]
mod probe;
pub mod running;
mod spec;

pub use spec::WindowChunk;
