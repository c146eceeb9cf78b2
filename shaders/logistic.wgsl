// Logistic-regression sums over rows (kinsey-kernels, GPU path).
// CPU twin: `row_terms` in kernels/src/logistic/kernel.rs and kernels/src/logistic/cpu.rs;
// the test `logistic::gpu::tests::gpu_matches_cpu` compares the two on the same data
// (within 1e-5: this shader computes in f32, the twin in f64).
//
// Layout: x is row-major f32 (rows x d), y in {-1, +1}, w has d entries.
// Passes per block of rows:
//   margins_gradient: one workgroup per chunk of 256 rows, one read of the rows: each row's
//             terms -> stats[i] = (loss, coef, hess weight, 0) and workgroup memory, then one
//             thread per column j -> gpart[c * (d + 1) + j] = sum over chunk c of coef_i x_ij
//             (column j = d carries the chunk's loss sum); the second touch of the chunk's
//             rows (126 KB at d = 123) comes from cache, not from memory
//   hessian : 16 x 16 tiles of X^T D X over a chunk of rows (upper tiles only)
//             -> hpart[c * d * d + j * d + k]
//   reduce_grad, reduce_hess: the chunks' partial sums added on the device, per entry and
//             group of up to `red_group` chunks, compensated (Kahan): red = (sum, correction)
//             pairs; the host adds the few groups' pairs in f64 instead of reading every
//             chunk's partials back (at 10M x 123, 590 MB of Hessian partials per pass).

struct Params {
    rows: u32,        // rows in this block
    d: u32,           // columns
    grad_chunk: u32,  // rows per gradient partial (256: the workgroup arrays below)
    hess_chunk: u32,  // rows per Hessian partial (multiple of 16)
    grad_chunks: u32, // gradient partials in this block
    hess_chunks: u32, // Hessian partials in this block
    red_group: u32,   // partials per reduction group
    pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> y: array<f32>;
@group(0) @binding(3) var<storage, read> w: array<f32>;
@group(0) @binding(4) var<storage, read_write> stats: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> gpart: array<f32>;
@group(0) @binding(6) var<storage, read_write> hpart: array<f32>;
@group(0) @binding(7) var<storage, read_write> gred: array<f32>;
@group(0) @binding(8) var<storage, read_write> hred: array<f32>;

// Twin of `row_terms` in kernels/src/logistic/kernel.rs.
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

var<workgroup> wg_coef: array<f32, 256>;
var<workgroup> wg_loss: array<f32, 256>;

@compute @workgroup_size(64)
fn margins_gradient(@builtin(workgroup_id) wid: vec3<u32>,
                    @builtin(local_invocation_id) lid: vec3<u32>,
                    @builtin(num_workgroups) nwg: vec3<u32>) {
    let c = wid.x + wid.y * nwg.x;
    let start = c * params.grad_chunk;
    if (start >= params.rows) {
        return;       // uniform for the whole workgroup
    }
    let end = min(start + params.grad_chunk, params.rows);
    let d = params.d;
    for (var r: u32 = lid.x; r < params.grad_chunk; r = r + 64u) {
        let i = start + r;
        var coef: f32 = 0.0;
        var loss: f32 = 0.0;
        if (i < end) {
            let base = i * d;
            var z: f32 = 0.0;
            for (var j: u32 = 0u; j < d; j = j + 1u) {
                z = fma(x[base + j], w[j], z);
            }
            let t = row_terms(z, y[i]);
            stats[i] = vec4<f32>(t.x, t.y, t.z, 0.0);
            coef = t.y;
            loss = t.x;
        }
        wg_coef[r] = coef;
        wg_loss[r] = loss;
    }
    workgroupBarrier();
    for (var j: u32 = lid.x; j <= d; j = j + 64u) {
        // Kahan summation keeps the f32 partial accurate over the chunk.
        var sum: f32 = 0.0;
        var comp: f32 = 0.0;
        for (var r: u32 = 0u; r < end - start; r = r + 1u) {
            var term: f32;
            if (j == d) {
                term = wg_loss[r];
            } else {
                term = wg_coef[r] * x[(start + r) * d + j];
            }
            let yk = term - comp;
            let t = sum + yk;
            comp = (t - sum) - yk;
            sum = t;
        }
        gpart[c * (d + 1u) + j] = sum;
    }
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

// Entry l of groups g of partials: sum over chunks g * red_group .. of parts[c * len + l],
// compensated; written as (sum, correction) at red[2 (g len + l)].
fn reduce_entry(l: u32, g: u32, len: u32, chunks: u32, hess: bool) {
    let c0 = g * params.red_group;
    let c1 = min(c0 + params.red_group, chunks);
    var sum: f32 = 0.0;
    var comp: f32 = 0.0;
    for (var c: u32 = c0; c < c1; c = c + 1u) {
        var term: f32;
        if (hess) {
            term = hpart[c * len + l];
        } else {
            term = gpart[c * len + l];
        }
        let yk = term - comp;
        let t = sum + yk;
        comp = (t - sum) - yk;
        sum = t;
    }
    let at = 2u * (g * len + l);
    if (hess) {
        hred[at] = sum;
        hred[at + 1u] = -comp;
    } else {
        gred[at] = sum;
        gred[at + 1u] = -comp;
    }
}

// One invocation per entry (x, y: entries in groups of 64) and group of chunks (z).
@compute @workgroup_size(64)
fn reduce_grad(@builtin(workgroup_id) wid: vec3<u32>,
               @builtin(local_invocation_id) lid: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>) {
    let l = (wid.x + wid.y * nwg.x) * 64u + lid.x;
    if (l <= params.d) {
        reduce_entry(l, wid.z, params.d + 1u, params.grad_chunks, false);
    }
}

@compute @workgroup_size(64)
fn reduce_hess(@builtin(workgroup_id) wid: vec3<u32>,
               @builtin(local_invocation_id) lid: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>) {
    let l = (wid.x + wid.y * nwg.x) * 64u + lid.x;
    if (l < params.d * params.d) {
        reduce_entry(l, wid.z, params.d * params.d, params.hess_chunks, true);
    }
}
