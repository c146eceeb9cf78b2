//! The GPU device, opened at most once per process, and the helpers every kernel's host
//! side uses (written once here).
//!
//! The instance asks only for the primary backends (Vulkan, Metal, DX12) unless
//! `WGPU_BACKEND` says otherwise: the GL backend probes for a Wayland display, which makes
//! Mesa print `XDG_RUNTIME_DIR is invalid` on headless machines, and kinsey draws nothing.

use crate::error::KernelError;
use std::sync::{Arc, Mutex, OnceLock, mpsc};

/// Per-binding cap (the portable WebGPU default).
pub(crate) const MAX_BINDING: u64 = 128 << 20;
/// Max workgroups per dispatch dimension.
pub(crate) const MAX_WG: u64 = 65_535;

/// An open GPU device: adapter description, limits, device and queue. Cloning shares the
/// device.
#[derive(Clone)]
pub struct GpuContext {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) info: wgpu::AdapterInfo,
    pub(crate) limits: wgpu::Limits,
    /// What the device was opened with.
    features: wgpu::Features,
    /// What the adapter offers (a superset).
    pub(crate) adapter_features: wgpu::Features,
    health: Arc<Health>,
    /// The pipeline cache kept on disk, where the device and the environment allow one.
    cache: Option<Arc<super::cache::DiskCache>>,
}

impl std::fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GpuContext({})", self.describe())
    }
}

/// The one probe of this process: the device, or why there is none.
static SHARED: OnceLock<Result<GpuContext, KernelError>> = OnceLock::new();

/// Why a device can no longer be trusted: lost (the driver's reason), or an error no
/// kernel's error scope caught. wgpu drops device-lost errors without a word and panics on
/// uncaught ones by default; kinsey records the first and every later call on that device
/// fails with it ([`GpuContext::healthy`]), so a dead device is an error naming the cause,
/// never a panic in a worker thread or a wait that never ends.
#[derive(Debug, Default)]
struct Health(Mutex<Option<String>>);

impl Health {
    /// Record why the device broke (the first reason wins) and say it once in the log.
    fn mark(&self, why: String) {
        if let Ok(mut b) = self.0.lock()
            && b.is_none()
        {
            tracing::error!("GPU device unusable: {why}");
            *b = Some(why);
        }
    }

    /// `Ok` while the device works; the recorded reason once it was lost or broke.
    fn check(&self) -> Result<(), KernelError> {
        match self.0.lock().ok().and_then(|b| b.clone()) {
            None => Ok(()),
            Some(why) => Err(KernelError::Device(format!(
                "the GPU device is unusable: {why}"
            ))),
        }
    }
}

impl GpuContext {
    /// The process's GPU device, opened on first use (one adapter probe per process).
    pub fn shared() -> Result<Self, KernelError> {
        SHARED.get_or_init(Self::open).clone()
    }

    /// Open the first suitable adapter (high-performance preference; lavapipe qualifies).
    fn open() -> Result<Self, KernelError> {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
        if std::env::var_os("WGPU_BACKEND").is_none() {
            desc.backends = wgpu::Backends::PRIMARY;
        }
        let instance = wgpu::Instance::new(desc);
        let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            force_fallback_adapter: false,
            compatible_surface: None,
            apply_limit_buckets: false,
        }))
        .map_err(|e| KernelError::NoAdapter(e.to_string()))?;
        let info = adapter.get_info();
        let limits = adapter.limits();
        let adapter_features = adapter.features();
        // 64-bit floats (the window kernels' f64 sums) and 64-bit integers (the Montgomery
        // kernel's limbs program) where the adapter has them; kernels check `has_f64` and
        // `has_int64`.
        // Subgroup operations (the cooperative Montgomery programs' subgroup form); the
        // pipeline cache where the adapter keeps one (`gpu/cache.rs`).
        let features = adapter_features
            & (wgpu::Features::SHADER_F64
                | wgpu::Features::SHADER_INT64
                | wgpu::Features::SUBGROUP
                | wgpu::Features::PIPELINE_CACHE);
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("kinsey"),
            required_features: features,
            required_limits: limits.clone(),
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        }))
        .map_err(|e| KernelError::Device(e.to_string()))?;
        let health = Arc::new(Health::default());
        let on_lost = health.clone();
        device.set_device_lost_callback(move |reason, message| {
            on_lost.mark(format!("device lost ({reason:?}): {message}"));
        });
        let on_error = health.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            on_error.mark(format!("uncaught wgpu error: {e}"));
        }));
        let cache = super::cache::open(&device, &info, features).map(Arc::new);
        Ok(Self {
            device,
            queue,
            info,
            limits,
            features,
            adapter_features,
            health,
            cache,
        })
    }

    /// The device a kernel should use under `pref`: `Cpu` gives `None`; `Gpu` the device or
    /// an error; `Auto` a hardware GPU, or `None` when there is only a software rasteriser
    /// (lavapipe/llvmpipe: correct but slower than the CPU path) or no adapter at all.
    /// The first choice of a process is logged in one INFO line naming the device used.
    pub(crate) fn for_preference(
        pref: crate::device::DevicePref,
    ) -> Result<Option<Self>, KernelError> {
        use crate::device::DevicePref;
        let (chosen, why) = match pref {
            DevicePref::Cpu => (None, "device = cpu".to_string()),
            DevicePref::Gpu => (Some(Self::shared()?), "device = gpu".into()),
            DevicePref::Auto => match Self::shared() {
                Ok(c) if !c.is_software() => (Some(c), "device = auto".into()),
                Ok(c) => (
                    None,
                    format!(
                        "device = auto; the only GPU adapter, {}, is a software rasteriser \
                         (device = gpu uses it)",
                        c.describe()
                    ),
                ),
                Err(e) => (None, format!("device = auto; {e}")),
            },
        };
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| match &chosen {
            Some(c) => tracing::info!("compute device: GPU {} ({why})", c.describe()),
            None => tracing::info!("compute device: CPU ({why})"),
        });
        Ok(chosen)
    }

    /// "NVIDIA H100 (Vulkan, DiscreteGpu)" or "llvmpipe (Vulkan, Cpu)".
    pub fn describe(&self) -> String {
        format!(
            "{} ({:?}, {:?})",
            self.info.name, self.info.backend, self.info.device_type
        )
    }

    /// What the pipeline cache on disk did in this process (`None`: no cache; see
    /// `KINSEY_GPU_CACHE`).
    pub fn pipeline_cache(&self) -> Option<super::cache::CacheFacts> {
        self.cache.as_ref().map(|c| c.facts())
    }

    /// Whether shaders may use `f64` (the device was opened with `SHADER_F64`).
    pub fn has_f64(&self) -> bool {
        self.features.contains(wgpu::Features::SHADER_F64)
    }

    /// Whether shaders may use subgroup operations (the device was opened with `SUBGROUP`).
    pub fn has_subgroups(&self) -> bool {
        self.features.contains(wgpu::Features::SUBGROUP)
    }

    /// Whether shaders may use `u64`/`i64` (the device was opened with `SHADER_INT64`).
    pub fn has_int64(&self) -> bool {
        self.features.contains(wgpu::Features::SHADER_INT64)
    }

    /// Whether the adapter is a software rasteriser (lavapipe/llvmpipe).
    pub(crate) fn is_software(&self) -> bool {
        self.info.device_type == wgpu::DeviceType::Cpu
    }

    /// `Ok` while the device works; once it was lost or an error escaped every scope, the
    /// recorded reason (see [`Health`]).
    pub(crate) fn healthy(&self) -> Result<(), KernelError> {
        self.health.check()
    }

    /// The largest storage binding a kernel may use.
    pub(crate) fn binding_cap(&self) -> u64 {
        MAX_BINDING.min(self.limits.max_storage_buffer_binding_size)
    }
}

/// A compute-visible storage buffer entry.
pub(crate) fn storage_entry(binding: u32, read_only: bool) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }
}

/// A compute-visible uniform buffer entry.
pub(crate) fn uniform_entry(binding: u32) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Uniform,
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }
}

/// A compute-visible uniform buffer entry bound at a dynamic offset: one buffer holds the
/// parameters of every dispatch of a submission ([`GpuContext::params`]), one bind group
/// serves them all.
pub(crate) fn uniform_dynamic_entry(binding: u32) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Uniform,
            has_dynamic_offset: true,
            min_binding_size: None,
        },
        count: None,
    }
}

/// One WGSL module, its bind group layout and a compute pipeline per entry point, with
/// validation errors turned into `KernelError::Validation`.
pub(crate) fn build_pipelines(
    ctx: &GpuContext,
    label: &str,
    wgsl: &str,
    entries: &[wgpu::BindGroupLayoutEntry],
    entry_points: &[&str],
) -> Result<(wgpu::BindGroupLayout, Vec<wgpu::ComputePipeline>), KernelError> {
    let desc = wgpu::ShaderModuleDescriptor {
        label: Some(label),
        source: wgpu::ShaderSource::Wgsl(wgsl.into()),
    };
    build_module(ctx, label, Module::Checked(desc), entries, entry_points)
}

/// [`build_pipelines`] for a source whose loops provably end, compiled without wgpu's
/// per-iteration loop counters (bounds and division checks stay on).
pub(crate) fn build_bounded_pipelines(
    ctx: &GpuContext,
    label: &str,
    wgsl: &super::bounded::BoundedWgsl,
    entries: &[wgpu::BindGroupLayoutEntry],
    entry_points: &[&str],
) -> Result<(wgpu::BindGroupLayout, Vec<wgpu::ComputePipeline>), KernelError> {
    let desc = wgpu::ShaderModuleDescriptor {
        label: Some(label),
        source: wgpu::ShaderSource::Wgsl(wgsl.source().into()),
    };
    build_module(ctx, label, Module::Bounded(desc), entries, entry_points)
}

/// A shader module to create: with every runtime check, or without loop counters.
enum Module<'a> {
    Checked(wgpu::ShaderModuleDescriptor<'a>),
    Bounded(wgpu::ShaderModuleDescriptor<'a>),
}

fn build_module(
    ctx: &GpuContext,
    label: &str,
    module: Module<'_>,
    entries: &[wgpu::BindGroupLayoutEntry],
    entry_points: &[&str],
) -> Result<(wgpu::BindGroupLayout, Vec<wgpu::ComputePipeline>), KernelError> {
    let device = &ctx.device;
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let module = match module {
        Module::Checked(desc) => device.create_shader_module(desc),
        // SAFETY: with `force_loop_bounding` off, wgpu requires that no loop of the shader
        // runs forever. A `Module::Bounded` is made only from a `BoundedWgsl`, whose
        // constructor runs `gpu/bounded.rs::loops_end` on the source: every loop is
        // `for (var V = INIT; V < BOUND; V++)` with a fixed bound and `V` untouched in the
        // body, and there is no `loop` or `while`. Every other check stays on.
        #[allow(unsafe_code)]
        Module::Bounded(desc) => unsafe {
            device.create_shader_module_trusted(
                desc,
                wgpu::ShaderRuntimeChecks {
                    force_loop_bounding: false,
                    ..wgpu::ShaderRuntimeChecks::checked()
                },
            )
        },
    };
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some(label),
        entries,
    });
    let pl = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some(label),
        bind_group_layouts: &[Some(&layout)],
        immediate_size: 0,
    });
    let pipes = entry_points
        .iter()
        .map(|entry| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: Some(&pl),
                module: &module,
                entry_point: Some(entry),
                compilation_options: Default::default(),
                cache: ctx.cache.as_deref().map(|c| &c.cache),
            })
        })
        .collect();
    if let Some(err) = pollster::block_on(scope.pop()) {
        return Err(KernelError::Validation(err.to_string()));
    }
    // A driver that fails to compile a pipeline reports the device lost (silently in wgpu).
    ctx.healthy()?;
    if let Some(c) = &ctx.cache {
        c.save();
    }
    Ok((layout, pipes))
}

/// Read a mapped staging buffer as plain values (f32 partial sums, u32 assignments).
pub(crate) fn read_pod<T: bytemuck::Pod>(
    ctx: &GpuContext,
    buf: &wgpu::Buffer,
) -> Result<Vec<T>, KernelError> {
    read_pod_after(ctx, buf, buf.size(), None)
}

/// The first `bytes` of a staging buffer as plain values, once submission `after` (or
/// everything submitted, with `None`) has finished: later submissions keep running.
pub(crate) fn read_pod_after<T: bytemuck::Pod>(
    ctx: &GpuContext,
    buf: &wgpu::Buffer,
    bytes: u64,
    after: Option<wgpu::SubmissionIndex>,
) -> Result<Vec<T>, KernelError> {
    read_with_after(ctx, buf, bytes, after, <[T]>::to_vec)
}

/// [`read_pod_after`] handing the mapped values to `f` instead of copying them into a new
/// vector (values the caller copies on, into its own slices). The streaming kernels'
/// serial way ([`super::stream::serial`]) waits on all submitted work, as before.
pub(crate) fn read_with_after<T: bytemuck::Pod, R>(
    ctx: &GpuContext,
    buf: &wgpu::Buffer,
    bytes: u64,
    after: Option<wgpu::SubmissionIndex>,
    f: impl FnOnce(&[T]) -> R,
) -> Result<R, KernelError> {
    ctx.healthy()?;
    let device = &ctx.device;
    let (tx, rx) = mpsc::channel();
    buf.slice(..bytes).map_async(wgpu::MapMode::Read, move |r| {
        let _ = tx.send(r);
    });
    // A device lost while the work ran fails the wait or the mapping; the loss (recorded
    // by the callback the wait runs) says why rather than how.
    let waited = device.poll(wgpu::PollType::Wait {
        submission_index: after.filter(|_| !super::stream::serial()),
        timeout: None,
    });
    let mapped = waited
        .map_err(|e| e.to_string())
        .and_then(|_| rx.recv().map_err(|e| e.to_string()))
        .and_then(|r| r.map_err(|e| e.to_string()));
    if let Err(e) = mapped {
        // One more turn of the device's upkeep runs a pending device-lost callback.
        let _ = device.poll(wgpu::PollType::Poll);
        ctx.healthy()?;
        return Err(KernelError::Map(e));
    }
    let out = {
        let view = buf
            .get_mapped_range(..bytes)
            .map_err(|e| KernelError::Map(e.to_string()))?;
        // Mapped ranges are aligned for every plain value on every backend wgpu has; a
        // misaligned one is copied first rather than trusted.
        match bytemuck::try_cast_slice::<u8, T>(&view) {
            Ok(vals) => f(vals),
            Err(_) => f(&view
                .chunks_exact(size_of::<T>())
                .map(bytemuck::pod_read_unaligned)
                .collect::<Vec<T>>()),
        }
    };
    buf.unmap();
    Ok(out)
}

/// A storage buffer a shader writes and its mappable twin for reading it back.
#[derive(Debug)]
pub(crate) struct Output {
    /// Bound to the shader.
    pub(crate) gpu: wgpu::Buffer,
    /// Mapped by [`read_pod`] after [`Output::copy_back`].
    pub(crate) read: wgpu::Buffer,
}

impl Output {
    /// Queue the copy of the shader's output into the mappable twin.
    pub(crate) fn copy_back(&self, enc: &mut wgpu::CommandEncoder) {
        enc.copy_buffer_to_buffer(&self.gpu, 0, &self.read, 0, None);
    }
}

impl GpuContext {
    /// A buffer holding `bytes`.
    pub(crate) fn upload(
        &self,
        label: &str,
        bytes: &[u8],
        usage: wgpu::BufferUsages,
    ) -> wgpu::Buffer {
        use wgpu::util::DeviceExt;
        self.device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: bytes,
                usage,
            })
    }

    /// An uninitialised buffer of `size` bytes.
    pub(crate) fn buffer(&self, label: &str, size: u64, usage: wgpu::BufferUsages) -> wgpu::Buffer {
        self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage,
            mapped_at_creation: false,
        })
    }

    /// A shader output of `size` bytes and its read-back twin.
    pub(crate) fn output(&self, label: &str, size: u64) -> Output {
        Output {
            gpu: self.buffer(
                label,
                size,
                wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            ),
            read: self.buffer(
                label,
                size,
                wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            ),
        }
    }

    /// The bytes between two dispatches' parameters in one uniform buffer (the adapter's
    /// offset alignment, at least `size`).
    pub(crate) fn params_stride(&self, size: usize) -> usize {
        size.next_multiple_of(self.limits.min_uniform_buffer_offset_alignment.max(4) as usize)
    }

    /// The parameter blocks `blocks` laid out at [`params_stride`](Self::params_stride) in
    /// one byte vector (uploaded once; dispatch `i` binds offset `i * stride`).
    pub(crate) fn params<P: bytemuck::Pod>(&self, blocks: &[P]) -> (Vec<u8>, u32) {
        let stride = self.params_stride(size_of::<P>());
        let mut bytes = vec![0u8; stride * blocks.len().max(1)];
        for (i, b) in blocks.iter().enumerate() {
            bytes[i * stride..][..size_of::<P>()].copy_from_slice(bytemuck::bytes_of(b));
        }
        (bytes, stride as u32)
    }

    /// A bind group with the first `params_size` bytes of `params` at binding 0 (a dynamic
    /// offset chooses the block) and `buffers[i]` at binding `i + 1`.
    pub(crate) fn bind_params(
        &self,
        label: &str,
        layout: &wgpu::BindGroupLayout,
        (params, params_size): (&wgpu::Buffer, u64),
        buffers: &[&wgpu::Buffer],
    ) -> wgpu::BindGroup {
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 0,
            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: params,
                offset: 0,
                size: wgpu::BufferSize::new(params_size),
            }),
        }];
        entries.extend(
            buffers
                .iter()
                .enumerate()
                .map(|(i, b)| wgpu::BindGroupEntry {
                    binding: i as u32 + 1,
                    resource: b.as_entire_binding(),
                }),
        );
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(label),
            layout,
            entries: &entries,
        })
    }

    /// A bind group with `buffers[i]` at binding `i`.
    pub(crate) fn bind(
        &self,
        label: &str,
        layout: &wgpu::BindGroupLayout,
        buffers: &[&wgpu::Buffer],
    ) -> wgpu::BindGroup {
        let entries: Vec<wgpu::BindGroupEntry<'_>> = buffers
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: b.as_entire_binding(),
            })
            .collect();
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(label),
            layout,
            entries: &entries,
        })
    }

    /// Record commands into one encoder with `record` and submit them, inside a validation
    /// error scope (an error the device reports becomes `KernelError::Validation`); the
    /// submission's index, for reading its results back while later work runs.
    pub(crate) fn submit(
        &self,
        label: &str,
        record: impl FnOnce(&mut wgpu::CommandEncoder),
    ) -> Result<wgpu::SubmissionIndex, KernelError> {
        self.scoped(
            wgpu::ErrorFilter::Validation,
            || {
                let mut enc = self
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) });
                record(&mut enc);
                self.queue.submit([enc.finish()])
            },
            KernelError::Validation,
        )
    }

    /// Wait until the submission `index` has run on the device (a lost device is an
    /// error naming why).
    pub(crate) fn wait(&self, index: wgpu::SubmissionIndex) -> Result<(), KernelError> {
        self.device
            .poll(wgpu::PollType::Wait {
                submission_index: Some(index),
                timeout: None,
            })
            .map_err(|e| KernelError::Map(e.to_string()))?;
        self.healthy()
    }

    /// Run `f` (buffer creation, command recording and submission) inside a wgpu error
    /// scope of `filter`; an error the device reports becomes `err(message)`.
    pub(crate) fn scoped<T>(
        &self,
        filter: wgpu::ErrorFilter,
        f: impl FnOnce() -> T,
        err: impl FnOnce(String) -> KernelError,
    ) -> Result<T, KernelError> {
        self.healthy()?;
        let scope = self.device.push_error_scope(filter);
        let out = f();
        match pollster::block_on(scope.pop()) {
            Some(e) => Err(err(e.to_string())),
            None => self.healthy().map(|()| out),
        }
    }
}

/// One compute pass running `pipe` with `bind` on a `(x, y)` grid of workgroups.
pub(crate) fn dispatch(
    enc: &mut wgpu::CommandEncoder,
    pipe: &wgpu::ComputePipeline,
    bind: &wgpu::BindGroup,
    (gx, gy): (u32, u32),
) {
    let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: None,
        timestamp_writes: None,
    });
    pass.set_pipeline(pipe);
    pass.set_bind_group(0, bind, &[]);
    pass.dispatch_workgroups(gx, gy, 1);
}

/// [`dispatch`] with the parameters at dynamic offset `offset` (see
/// [`GpuContext::bind_params`]).
pub(crate) fn dispatch_at(
    enc: &mut wgpu::CommandEncoder,
    pipe: &wgpu::ComputePipeline,
    bind: &wgpu::BindGroup,
    (gx, gy): (u32, u32),
    offset: u32,
) {
    let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: None,
        timestamp_writes: None,
    });
    pass.set_pipeline(pipe);
    pass.set_bind_group(0, bind, &[offset]);
    pass.dispatch_workgroups(gx, gy, 1);
}

/// Workgroups `(x, y)` covering `n` invocations of 256 each within the per-dimension limit.
pub(crate) fn grid_256(n: u32) -> (u32, u32) {
    let groups = n.div_ceil(256);
    let gx = groups.min(MAX_WG as u32).max(1);
    (gx, groups.div_ceil(gx))
}

/// Workgroups `(x, y)` of `per_group` invocations covering `n` (at least one) within the
/// per-dimension limit.
pub(crate) fn grid(n: u64, per_group: u64) -> (u32, u32) {
    let groups = n.div_ceil(per_group).max(1);
    let gx = groups.min(MAX_WG);
    (gx as u32, groups.div_ceil(gx) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first reason a device broke is the one every later call reports.
    #[test]
    fn the_first_reason_wins() {
        let h = Health::default();
        assert!(h.check().is_ok());
        h.mark("device lost (Unknown): first".into());
        h.mark("uncaught wgpu error: second".into());
        let e = h.check().expect_err("broken").to_string();
        assert!(e.contains("unusable") && e.contains("first"), "{e}");
        assert!(!e.contains("second"), "{e}");
    }

    /// A device lost under a kernel (here destroyed on purpose, as a driver fault loses it
    /// on hardware) makes the kernel's next call an error that names the loss: no panic
    /// in wgpu's default handler, no wait that never ends. A private device, so the
    /// shared one the other tests use stays up (lavapipe in CI: fails without an adapter).
    #[test]
    fn a_lost_device_is_an_error_naming_the_loss() {
        let ctx = GpuContext::open().expect("a GPU adapter (lavapipe in CI)");
        let g = crate::montgomery::gpu::GpuMontgomery::new(ctx.clone());
        let m = crate::montgomery::Modulus::new(vec![0xffff_fff1, 0xffff_ffff, 0x7fff_ffff, 1])
            .expect("modulus");
        let a = [3u32, 0, 0, 0];
        assert_eq!(g.mul(&m, &a, &a).expect("a working device").len(), 4);
        ctx.device.destroy();
        let e = g
            .mul(&m, &a, &a)
            .expect_err("a destroyed device")
            .to_string();
        assert!(e.contains("unusable") && e.contains("lost"), "{e}");
        let e = ctx.healthy().expect_err("recorded").to_string();
        assert!(e.contains("Destroyed"), "{e}");
    }
}
