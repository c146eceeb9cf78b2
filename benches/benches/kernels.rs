//! Criterion benches of the logistic kernels: loss+gradient and loss+gradient+Hessian,
//! CPU (rayon + faer) and, where an adapter exists, GPU (wgpu). Throughput is reported in
//! rows per second. Run: `cargo bench -p kinsey-benches --bench kernels`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kinsey_benches::bench_rows;
use kinsey_kernels::logistic::{cpu::CpuLogistic, gpu::GpuLogistic};
use kinsey_kernels::{LogisticKernel, Rows};
use std::hint::black_box;

fn kernels(c: &mut Criterion) {
    for &(n, d) in &[(100_000usize, 123usize), (1_000_000, 123)] {
        let ds = bench_rows(n, d);
        let rows = Rows::new(&ds.x, &ds.y, d).expect("shape");
        let w: Vec<f64> = (0..d).map(|j| (j as f64 * 0.37).sin()).collect();
        let mut g = c.benchmark_group(format!("logistic n={n} d={d}"));
        g.throughput(Throughput::Elements(n as u64));
        g.sample_size(10);
        let cpu = CpuLogistic::new(rows);
        g.bench_function("cpu loss+grad", |b| {
            b.iter(|| black_box(cpu.eval(&w, false).expect("eval")))
        });
        g.bench_function("cpu loss+grad+hess", |b| {
            b.iter(|| black_box(cpu.eval(&w, true).expect("eval")))
        });
        match GpuLogistic::new(rows) {
            Ok(gpu) => {
                let name = gpu.describe();
                g.bench_function(format!("{name} loss+grad"), |b| {
                    b.iter(|| black_box(gpu.eval(&w, false).expect("eval")))
                });
                g.bench_function(format!("{name} loss+grad+hess"), |b| {
                    b.iter(|| black_box(gpu.eval(&w, true).expect("eval")))
                });
            }
            Err(e) => eprintln!("no GPU adapter, GPU benches skipped: {e}"),
        }
        g.finish();
    }
}

// criterion_group! generates an undocumented function; the lint cannot reach it.
#[allow(missing_docs)]
mod group {
    use super::*;
    criterion_group!(benches, kernels);
}
criterion_main!(group::benches);
