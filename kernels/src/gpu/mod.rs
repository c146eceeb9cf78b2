//! What every GPU kernel shares: the process-wide device ([`GpuContext`], probed once),
//! bind-group entries, pipeline creation with validation errors caught, reading results
//! back, and a pool of device buffers reused across batches. Each kernel's own host side lives in its folder (`logistic/gpu.rs`,
//! `kmeans/gpu.rs`) beside its CPU twin.

pub(crate) mod bounded;
mod cache;
mod context;
mod pool;
pub mod probe;
pub mod stream;

pub use cache::{CACHE_ENV, CacheFacts};
pub use context::GpuContext;
pub(crate) use context::{
    MAX_WG, Output, build_bounded_pipelines, build_pipelines, dispatch, dispatch_at, grid,
    grid_256, read_pod, read_pod_after, read_with_after, storage_entry, uniform_dynamic_entry,
    uniform_entry,
};
pub(crate) use pool::BufferPool;
