//! What a GPU machine can do, measured rather than assumed: the adapter's features and
//! limits as wgpu reports them (the ones kinsey's kernels choose by), and the bandwidth of
//! the host link and of device memory. `kinsey bench gpu-probe` prints them; the GPU
//! figures run records them first, so that every later figure can be read against them.

use super::GpuContext;
use super::stream::scatter_into;
use crate::error::KernelError;
use std::time::Instant;

/// The adapter as wgpu sees it.
#[derive(Debug, Clone)]
pub struct AdapterFacts {
    /// "NVIDIA H200 (Vulkan, DiscreteGpu)".
    pub describe: String,
    /// The driver and its version, as the adapter reports them.
    pub driver: String,
    /// Whether the adapter has each feature kinsey's kernels may choose by.
    pub features: Vec<(&'static str, bool)>,
    /// Lanes of a subgroup: least and most (0 where the adapter does not say).
    pub subgroup_sizes: (u32, u32),
    /// Limits that size kinsey's batches.
    pub limits: Vec<(&'static str, u64)>,
}

/// Features kinsey's kernels choose by, with their names.
const FEATURES: [(&str, wgpu::Features); 9] = [
    ("SHADER_F64", wgpu::Features::SHADER_F64),
    ("SHADER_INT64", wgpu::Features::SHADER_INT64),
    ("SUBGROUP", wgpu::Features::SUBGROUP),
    ("SUBGROUP_BARRIER", wgpu::Features::SUBGROUP_BARRIER),
    ("PIPELINE_CACHE", wgpu::Features::PIPELINE_CACHE),
    (
        "MAPPABLE_PRIMARY_BUFFERS",
        wgpu::Features::MAPPABLE_PRIMARY_BUFFERS,
    ),
    ("TIMESTAMP_QUERY", wgpu::Features::TIMESTAMP_QUERY),
    ("PASSTHROUGH_SHADERS", wgpu::Features::PASSTHROUGH_SHADERS),
    (
        "SHADER_INT64_ATOMIC_ALL_OPS",
        wgpu::Features::SHADER_INT64_ATOMIC_ALL_OPS,
    ),
];

impl GpuContext {
    /// The adapter's facts (see [`AdapterFacts`]).
    pub fn facts(&self) -> AdapterFacts {
        let l = &self.limits;
        AdapterFacts {
            describe: self.describe(),
            driver: format!("{} {}", self.info.driver, self.info.driver_info)
                .trim()
                .to_string(),
            features: FEATURES
                .iter()
                .map(|&(n, f)| (n, self.adapter_features.contains(f)))
                .collect(),
            subgroup_sizes: (self.info.subgroup_min_size, self.info.subgroup_max_size),
            limits: vec![
                ("max_buffer_size", l.max_buffer_size),
                (
                    "max_storage_buffer_binding_size",
                    l.max_storage_buffer_binding_size,
                ),
                (
                    "max_compute_workgroup_storage_size",
                    u64::from(l.max_compute_workgroup_storage_size),
                ),
                (
                    "max_compute_invocations_per_workgroup",
                    u64::from(l.max_compute_invocations_per_workgroup),
                ),
                (
                    "max_compute_workgroups_per_dimension",
                    u64::from(l.max_compute_workgroups_per_dimension),
                ),
                (
                    "min_uniform_buffer_offset_alignment",
                    u64::from(l.min_uniform_buffer_offset_alignment),
                ),
            ],
        }
    }
}

/// One transfer measured: what moved, how many bytes, the best of its repetitions in
/// seconds, and the rate in GB/s (1e9 bytes).
#[derive(Debug, Clone)]
pub struct Transfer {
    /// "host to device, write_buffer" and so on.
    pub what: &'static str,
    /// Bytes moved.
    pub bytes: u64,
    /// Seconds of the best repetition.
    pub seconds: f64,
    /// Bytes per second / 1e9.
    pub gb_per_s: f64,
}

/// The host link and device memory on `ctx` with buffers of `bytes` (a multiple of 4,
/// within the device's buffer limits), best of `reps`: host to device through
/// `write_buffer` (one thread) and through wgpu's staging memory filled on every core;
/// device to host through a mapped buffer copied out on every core; a copy within the
/// device (read plus write, counted once). Every transfer is waited for.
pub fn transfers(ctx: &GpuContext, bytes: u64, reps: usize) -> Result<Vec<Transfer>, KernelError> {
    if bytes == 0 || !bytes.is_multiple_of(4) || bytes > ctx.limits.max_buffer_size {
        return Err(KernelError::Input(format!(
            "transfer probe of {bytes} bytes (a multiple of 4, at most {})",
            ctx.limits.max_buffer_size
        )));
    }
    let pool = super::BufferPool::default();
    let (dev, queue) = (&ctx.device, &ctx.queue);
    let host: Vec<u8> = (0..bytes).map(|i| (i * 31 % 251) as u8).collect();
    let st = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC;
    let target = ctx.buffer("probe target", bytes, st | wgpu::BufferUsages::COPY_DST);
    let other = ctx.buffer("probe copy", bytes, st | wgpu::BufferUsages::COPY_DST);
    let read = ctx.buffer(
        "probe read",
        bytes,
        wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
    );
    let wait = |index: wgpu::SubmissionIndex| -> Result<(), KernelError> {
        dev.poll(wgpu::PollType::Wait {
            submission_index: Some(index),
            timeout: None,
        })
        .map(|_| ())
        .map_err(|e| KernelError::Map(e.to_string()))?;
        ctx.healthy()
    };
    let mut best = [f64::INFINITY; 4];
    let mut out = vec![0u8; bytes as usize];
    for _ in 0..reps.max(1) {
        let t = Instant::now();
        queue.write_buffer(&target, 0, &host);
        wait(ctx.submit("probe h2d", |_| {})?)?;
        best[0] = best[0].min(t.elapsed().as_secs_f64());

        let t = Instant::now();
        let up = pool.upload_par(dev, queue, "probe h2d staged", &host, st);
        wait(ctx.submit("probe h2d staged", |_| {})?)?;
        best[1] = best[1].min(t.elapsed().as_secs_f64());
        pool.give([up]);

        let t = Instant::now();
        let index = ctx.submit("probe d2h", |enc| {
            enc.copy_buffer_to_buffer(&target, 0, &read, 0, Some(bytes));
        })?;
        super::read_with_after::<u8, _>(ctx, &read, bytes, Some(index), |v| {
            scatter_into(v, vec![&mut out[..]]);
        })?;
        best[2] = best[2].min(t.elapsed().as_secs_f64());

        let t = Instant::now();
        wait(ctx.submit("probe d2d", |enc| {
            enc.copy_buffer_to_buffer(&target, 0, &other, 0, Some(bytes));
        })?)?;
        best[3] = best[3].min(t.elapsed().as_secs_f64());
    }
    if out != host {
        return Err(KernelError::Map(
            "transfer probe: the bytes read back differ from those written".into(),
        ));
    }
    let whats = [
        "host to device, write_buffer (one thread)",
        "host to device, staging filled on every core",
        "device to host, mapped and copied out on every core",
        "within the device, buffer copy",
    ];
    Ok(whats
        .iter()
        .zip(best)
        .map(|(&what, seconds)| Transfer {
            what,
            bytes,
            seconds,
            gb_per_s: bytes as f64 / seconds / 1e9,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probe names the features kinsey chooses by and measures every transfer with
    /// the bytes intact; a size that is no multiple of 4 is refused. Fails without an
    /// adapter (lavapipe in CI).
    #[test]
    fn the_probe_reports_features_and_transfers() {
        let ctx = GpuContext::shared().expect("a GPU adapter (lavapipe in CI)");
        let f = ctx.facts();
        assert!(f.features.iter().any(|(n, _)| *n == "SHADER_INT64"));
        assert!(f.limits.iter().all(|(_, v)| *v > 0), "{:?}", f.limits);
        let t = transfers(&ctx, 3 << 20, 2).expect("transfers");
        assert_eq!(t.len(), 4);
        assert!(t.iter().all(|x| x.gb_per_s > 0.0 && x.bytes == 3 << 20));
        assert!(transfers(&ctx, 6, 1).is_err());
    }
}

/// One shader compiled and timed.
#[derive(Debug, Clone)]
pub struct Compile {
    /// What was compiled ("limbs program, 128 words (4 entries)").
    pub what: String,
    /// Seconds of the first build in this process (from the disk cache when it had the
    /// pipelines, see [`GpuContext::pipeline_cache`]).
    pub first_seconds: f64,
    /// Seconds of a second build of the same source (the driver's in-memory cache).
    pub again_seconds: f64,
}

/// Compile kinsey's heaviest shaders and time each twice: the limbs program at each of
/// `limbs_words` (where the device has 64-bit integers) and the f64 training passes (where
/// it has 64-bit floats). The first compile in a process with an empty disk cache is what
/// a first batch pays; the cache saves it for the next process.
/// Each result goes to `each` as soon as it is measured (a run cut short keeps them).
pub fn compiles(
    ctx: &GpuContext,
    limbs_words: &[usize],
    each: &mut dyn FnMut(&Compile),
) -> Result<(), KernelError> {
    let timed = |f: &dyn Fn() -> Result<(), KernelError>| -> Result<f64, KernelError> {
        let t = Instant::now();
        f()?;
        Ok(t.elapsed().as_secs_f64())
    };
    if ctx.has_int64() {
        for &w in limbs_words {
            if !(1..=crate::montgomery::MAX_WORDS).contains(&w) {
                return Err(KernelError::Input(format!(
                    "limbs program sizes are 1 to {} words, not {w}",
                    crate::montgomery::MAX_WORDS
                )));
            }
            let build = || crate::montgomery::limbs_build(ctx, w).map(|_| ());
            each(&Compile {
                what: format!("limbs program, {w} words (4 entries)"),
                first_seconds: timed(&build)?,
                again_seconds: timed(&build)?,
            });
        }
    }
    if ctx.has_f64() {
        let build = || crate::passes::gpu::Pipelines::new(ctx).map(|_| ());
        each(&Compile {
            what: "training passes, f64 (4 entries)".into(),
            first_seconds: timed(&build)?,
            again_seconds: timed(&build)?,
        });
    }
    Ok(())
}
