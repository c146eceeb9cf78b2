// k-means assignment (kinsey-kernels, GPU path of the SuLQ k-means step).
// CPU twin: `nearest` in kernels/src/kmeans/sums.rs (same f32 arithmetic, same order:
// columns summed left to right, centres scanned in order, ties to the lowest index); the
// test `kmeans::gpu::tests::gpu_assignments_match_cpu` compares the two.
//
// One thread per row: assign[i] = index of the nearest centre, dist[i] = its squared
// distance. The host accumulates sizes and coordinate sums in f64 (O(n d)); the GPU does
// the O(n k d) part.

struct Params {
    rows: u32, // rows in this block
    d: u32,    // columns
    k: u32,    // centres
    pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> centers: array<f32>;
@group(0) @binding(3) var<storage, read_write> assign: array<u32>;
@group(0) @binding(4) var<storage, read_write> dist: array<f32>;

@compute @workgroup_size(256)
fn assign_rows(@builtin(global_invocation_id) gid: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= params.rows) {
        return;
    }
    let d = params.d;
    var best = 0u;
    var best_dist = 3.4028235e38;
    for (var j = 0u; j < params.k; j = j + 1u) {
        var s = 0.0;
        for (var t = 0u; t < d; t = t + 1u) {
            let diff = x[i * d + t] - centers[j * d + t];
            s = s + diff * diff;
        }
        if (s < best_dist) {
            best_dist = s;
            best = j;
        }
    }
    assign[i] = best;
    dist[i] = best_dist;
}
