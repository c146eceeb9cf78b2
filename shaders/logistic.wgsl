// Logistic-regression sums over rows (kinsey-kernels, GPU path).
// CPU twin: kernels/src/lib.rs `row_terms` and kernels/src/cpu.rs; the test
// `gpu::tests::gpu_matches_cpu` compares the two on the same data.
//
// Layout: x is row-major f32 (rows x d), y in {-1, +1}, w has d entries.
// Three passes per block of rows:
//   margins : one thread per row      -> stats[i] = (loss, coef, hess weight, 0)
//   gradient: one thread per column j -> gpart[c * (d + 1) + j] = sum over chunk c of coef_i x_ij
//             (column j = d carries the chunk's loss sum)
//   hessian : 16 x 16 tiles of X^T D X over a chunk of rows (upper tiles only)
//             -> hpart[c * d * d + j * d + k]
// The host adds the partial sums in f64.

struct Params {
    rows: u32,       // rows in this block
    d: u32,          // columns
    grad_chunk: u32, // rows per gradient partial
    hess_chunk: u32, // rows per Hessian partial (multiple of 16)
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> y: array<f32>;
@group(0) @binding(3) var<storage, read> w: array<f32>;
@group(0) @binding(4) var<storage, read_write> stats: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> gpart: array<f32>;
@group(0) @binding(6) var<storage, read_write> hpart: array<f32>;

// Twin of `row_terms` in kernels/src/lib.rs.
fn row_terms(z: f32, yi: f32) -> vec3<f32> {
    let t = -yi * z;
    let e = exp(-abs(t));
    let loss = max(t, 0.0) + log(1.0 + e);
    var s: f32;
    if (t >= 0.0) {
        s = 1.0 / (1.0 + e);
    } else {
        s = e / (1.0 + e);
    }
    let coef = -yi * s;
    let dw = s * (1.0 - s);
    return vec3<f32>(loss, coef, dw);
}

@compute @workgroup_size(256)
fn margins(@builtin(global_invocation_id) gid: vec3<u32>,
           @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= params.rows) {
        return;
    }
    let d = params.d;
    let base = i * d;
    var z: f32 = 0.0;
    for (var j: u32 = 0u; j < d; j = j + 1u) {
        z = fma(x[base + j], w[j], z);
    }
    let r = row_terms(z, y[i]);
    stats[i] = vec4<f32>(r.x, r.y, r.z, 0.0);
}

@compute @workgroup_size(64)
fn gradient(@builtin(workgroup_id) wid: vec3<u32>,
            @builtin(local_invocation_id) lid: vec3<u32>) {
    let d = params.d;
    let j = wid.x * 64u + lid.x;
    let c = wid.y;
    if (j > d) {
        return;
    }
    let start = c * params.grad_chunk;
    let end = min(start + params.grad_chunk, params.rows);
    // Kahan summation keeps the f32 partial accurate over the chunk.
    var sum: f32 = 0.0;
    var comp: f32 = 0.0;
    for (var i: u32 = start; i < end; i = i + 1u) {
        var term: f32;
        if (j == d) {
            term = stats[i].x;
        } else {
            term = stats[i].y * x[i * d + j];
        }
        let yk = term - comp;
        let t = sum + yk;
        comp = (t - sum) - yk;
        sum = t;
    }
    gpart[c * (d + 1u) + j] = sum;
}

var<workgroup> tile_a: array<array<f32, 16>, 16>;
var<workgroup> tile_b: array<array<f32, 16>, 16>;

@compute @workgroup_size(16, 16)
fn hessian(@builtin(workgroup_id) wid: vec3<u32>,
           @builtin(local_invocation_id) lid: vec3<u32>) {
    let d = params.d;
    let bj = wid.y;   // tile row (j block)
    let bk = wid.x;   // tile column (k block)
    let c = wid.z;    // row chunk
    if (bj > bk) {
        return;       // uniform for the whole workgroup: only upper tiles are computed
    }
    let tj = lid.y;
    let tk = lid.x;
    let j = bj * 16u + tj;
    let k = bk * 16u + tk;
    let start = c * params.hess_chunk;
    let end = min(start + params.hess_chunk, params.rows);
    var acc: f32 = 0.0;
    for (var r0: u32 = start; r0 < end; r0 = r0 + 16u) {
        // Thread (tj, tk) loads row r0 + tj, columns bj*16 + tk and bk*16 + tk.
        let row = r0 + tj;
        var a: f32 = 0.0;
        var b: f32 = 0.0;
        if (row < end) {
            let ca = bj * 16u + tk;
            let cb = bk * 16u + tk;
            let dw = stats[row].z;
            if (ca < d) {
                a = x[row * d + ca] * dw;
            }
            if (cb < d) {
                b = x[row * d + cb];
            }
        }
        tile_a[tj][tk] = a;
        tile_b[tj][tk] = b;
        workgroupBarrier();
        for (var r: u32 = 0u; r < 16u; r = r + 1u) {
            acc = fma(tile_a[r][tj], tile_b[r][tk], acc);
        }
        workgroupBarrier();
    }
    if (j < d && k < d) {
        hpart[c * d * d + j * d + k] = acc;
    }
}
