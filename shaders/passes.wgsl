// Training's full-data passes in f64 (kinsey-kernels, GPU path; needs SHADER_F64).
// CPU twin: kernels/src/passes/cpu.rs, the same IEEE operations in the same order (every
// multiply-add an explicit fma, every sum in a fixed order, no division): the same bits
// where the device rounds fma once, as hardware's fused multiply-add does. WGSL lets fma
// round twice, and lavapipe does at its compiler's choice, so the test
// `passes::gpu::tests::gpu_matches_twin` compares the two there within 1e-12 of the
// terms' magnitudes (the f32 kernel's agreement is 1e-5) and checks that the device gives
// the same bits run after run (the reduction order is fixed).
//
// The rows stay resident in f32 (exactly representable in f64); everything computed from
// them is f64: the margins x.w, the per-row terms with a software exp and log1p (WGSL has
// no f64 transcendental functions), the chunk sums and their reduction.
//
// Passes per block of rows:
//   margins_gradient: one workgroup per chunk of `chunk` (256) rows, one read of the rows:
//             each row's margin and terms -> workgroup memory (and the Hessian weight ->
//             dws[i]), then one thread per column j -> gpart[c * (d + 1) + j] = sum over the
//             chunk's rows in order of coef_i x_ij (column d: the chunk's loss sum)
//   hessian : 16 x 16 tiles of X^T D X over a chunk of rows, the rows in order (upper tiles
//             only) -> hpart[c * d * d + j * d + k]
//   reduce_grad, reduce_hess: per entry and group of up to `red_group` chunks, the chunks'
//             partial sums added in chunk order -> red[g * len + l]; the host adds the
//             groups, then the blocks, in order.
// No loop runs past d, chunk, hess_chunk or red_group iterations (lavapipe's loop budget).

struct Params {
    rows: u32,        // rows in this block
    d: u32,           // columns
    chunk: u32,       // rows per gradient partial (256: the workgroup arrays below)
    chunks: u32,      // gradient partials in this block
    hess_chunk: u32,  // rows per Hessian partial (multiple of 16)
    hess_chunks: u32, // Hessian partials in this block
    red_group: u32,   // partials per reduction group
    pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> y: array<f32>;
@group(0) @binding(3) var<storage, read> w: array<f64>;
@group(0) @binding(4) var<storage, read_write> dws: array<f64>;
@group(0) @binding(5) var<storage, read_write> gpart: array<f64>;
@group(0) @binding(6) var<storage, read_write> hpart: array<f64>;
@group(0) @binding(7) var<storage, read_write> gred: array<f64>;
@group(0) @binding(8) var<storage, read_write> hred: array<f64>;

// exp(a) for a <= 0 (twin: `cpu::exp_neg`): a = -k ln2 + r with |r| <= ln2 / 2 (Cody and
// Waite's two-part ln2, k below 2^11 so k ln2_hi is exact), exp(r) by its Taylor series to
// r^13 (truncation below 5e-18), times 2^-k. Below -707 the result is 0 (exp(-707) is
// 1e-307: nothing a loss or a gradient sum can see), so 2^-k stays a normal number and the
// scaling is exact.
const LN2_HI: f64 = 0.6931471803691238;
const LN2_LO: f64 = 1.9082149292705877e-10;
const INV_LN2: f64 = 1.4426950408889634;
const EXP_FLOOR: f64 = -707.0;
const EXP0: f64 = 1.0;
const EXP1: f64 = 1.0;
const EXP2: f64 = 0.5;
const EXP3: f64 = 0.16666666666666666;
const EXP4: f64 = 0.041666666666666664;
const EXP5: f64 = 0.008333333333333333;
const EXP6: f64 = 0.001388888888888889;
const EXP7: f64 = 0.0001984126984126984;
const EXP8: f64 = 2.48015873015873e-05;
const EXP9: f64 = 2.7557319223985893e-06;
const EXP10: f64 = 2.755731922398589e-07;
const EXP11: f64 = 2.505210838544172e-08;
const EXP12: f64 = 2.08767569878681e-09;
const EXP13: f64 = 1.6059043836821613e-10;

fn exp_neg(a: f64) -> f64 {
    if (a < EXP_FLOOR) {
        return f64(0.0);
    }
    // k = round(-a / ln2) >= 0: the conversion truncates a positive number (lavapipe's
    // f64 rounding functions are not trusted; conversions are exact IEEE steps).
    let k = i32(fma(-a, INV_LN2, f64(0.5)));
    let kf = f64(k);
    let r = fma(kf, LN2_LO, fma(kf, LN2_HI, a));
    var p = EXP13;
    p = fma(p, r, EXP12);
    p = fma(p, r, EXP11);
    p = fma(p, r, EXP10);
    p = fma(p, r, EXP9);
    p = fma(p, r, EXP8);
    p = fma(p, r, EXP7);
    p = fma(p, r, EXP6);
    p = fma(p, r, EXP5);
    p = fma(p, r, EXP4);
    p = fma(p, r, EXP3);
    p = fma(p, r, EXP2);
    p = fma(p, r, EXP1);
    p = fma(p, r, EXP0);
    return ldexp(p, -k);
}

// log(1 + e) for 0 <= e <= 1 (twin: `cpu::log1p_small`): 2 atanh(s) with s = e / (2 + e)
// in [0, 1/3] (no division: `recip`), the series 2 s sum_n s^(2n) / (2n + 1) to n = 16 (truncation below 2e-18).
const LOG0: f64 = 1.0;
const LOG1: f64 = 0.3333333333333333;
const LOG2: f64 = 0.2;
const LOG3: f64 = 0.14285714285714285;
const LOG4: f64 = 0.1111111111111111;
const LOG5: f64 = 0.09090909090909091;
const LOG6: f64 = 0.07692307692307693;
const LOG7: f64 = 0.06666666666666667;
const LOG8: f64 = 0.058823529411764705;
const LOG9: f64 = 0.05263157894736842;
const LOG10: f64 = 0.047619047619047616;
const LOG11: f64 = 0.043478260869565216;
const LOG12: f64 = 0.04;
const LOG13: f64 = 0.037037037037037035;
const LOG14: f64 = 0.034482758620689655;
const LOG15: f64 = 0.03225806451612903;
const LOG16: f64 = 0.030303030303030304;

// 1 / q for 1 <= q <= 2 (twin: `cpu::recip`) without a division: drivers may lower an
// f64 division to a reciprocal and a product (lavapipe does), which rounds differently
// from IEEE division. A linear first guess (relative error below 1/17), then five Newton
// steps of multiply-adds (four reach 2e-20): within an ulp, whether fma rounds once or
// twice.
const RCP_A: f64 = 1.411764705882353;
const RCP_B: f64 = 0.47058823529411764;

fn recip(q: f64) -> f64 {
    var r = fma(-RCP_B, q, RCP_A);
    r = fma(r, fma(-q, r, f64(1.0)), r);
    r = fma(r, fma(-q, r, f64(1.0)), r);
    r = fma(r, fma(-q, r, f64(1.0)), r);
    r = fma(r, fma(-q, r, f64(1.0)), r);
    r = fma(r, fma(-q, r, f64(1.0)), r);
    return r;
}

fn log1p_small(e: f64) -> f64 {
    // e / (2 + e) = (e / 2) / (1 + e / 2), halving exact.
    let h = f64(0.5) * e;
    let s = h * recip(f64(1.0) + h);
    let s2 = s * s;
    var q = LOG16;
    q = fma(q, s2, LOG15);
    q = fma(q, s2, LOG14);
    q = fma(q, s2, LOG13);
    q = fma(q, s2, LOG12);
    q = fma(q, s2, LOG11);
    q = fma(q, s2, LOG10);
    q = fma(q, s2, LOG9);
    q = fma(q, s2, LOG8);
    q = fma(q, s2, LOG7);
    q = fma(q, s2, LOG6);
    q = fma(q, s2, LOG5);
    q = fma(q, s2, LOG4);
    q = fma(q, s2, LOG3);
    q = fma(q, s2, LOG2);
    q = fma(q, s2, LOG1);
    q = fma(q, s2, LOG0);
    return f64(2.0) * s * q;
}

// (loss, gradient coefficient, Hessian weight) at margin z with label yi (twin:
// `cpu::row_terms`; the same formulas as `row_terms` in kernels/src/logistic/kernel.rs).
fn row_terms(z: f64, yi: f64) -> vec3<f64> {
    let t = -yi * z;
    let e = exp_neg(-abs(t));
    let loss = max(t, f64(0.0)) + log1p_small(e);
    let rq = recip(f64(1.0) + e);
    var s: f64;
    if (t >= f64(0.0)) {
        s = rq;
    } else {
        s = e * rq;
    }
    return vec3<f64>(loss, -yi * s, s * (f64(1.0) - s));
}

var<workgroup> wg_coef: array<f64, 256>;
var<workgroup> wg_loss: array<f64, 256>;

@compute @workgroup_size(64)
fn margins_gradient(@builtin(workgroup_id) wid: vec3<u32>,
                    @builtin(local_invocation_id) lid: vec3<u32>,
                    @builtin(num_workgroups) nwg: vec3<u32>) {
    let c = wid.x + wid.y * nwg.x;
    let start = c * params.chunk;
    if (start >= params.rows) {
        return;       // uniform for the whole workgroup
    }
    let m = min(params.chunk, params.rows - start);
    let d = params.d;
    for (var r: u32 = lid.x; r < m; r = r + 64u) {
        let i = start + r;
        let base = i * d;
        var z = f64(0.0);
        for (var j: u32 = 0u; j < d; j = j + 1u) {
            z = fma(f64(x[base + j]), w[j], z);
        }
        let t = row_terms(z, f64(y[i]));
        dws[i] = t.z;
        wg_coef[r] = t.y;
        wg_loss[r] = t.x;
    }
    workgroupBarrier();
    for (var j: u32 = lid.x; j <= d; j = j + 64u) {
        var sum = f64(0.0);
        if (j == d) {
            for (var r: u32 = 0u; r < m; r = r + 1u) {
                sum = sum + wg_loss[r];
            }
        } else {
            for (var r: u32 = 0u; r < m; r = r + 1u) {
                sum = fma(wg_coef[r], f64(x[(start + r) * d + j]), sum);
            }
        }
        gpart[c * (d + 1u) + j] = sum;
    }
}

var<workgroup> tile_a: array<array<f64, 16>, 16>;
var<workgroup> tile_b: array<array<f64, 16>, 16>;

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
    var acc = f64(0.0);
    for (var r0: u32 = start; r0 < end; r0 = r0 + 16u) {
        // Thread (tj, tk) loads row r0 + tj, columns bj*16 + tk and bk*16 + tk; rows past
        // the end load zeros, and fma(0, 0, acc) leaves acc as it is.
        let row = r0 + tj;
        var a = f64(0.0);
        var b = f64(0.0);
        if (row < end) {
            let ca = bj * 16u + tk;
            let cb = bk * 16u + tk;
            if (ca < d) {
                a = f64(x[row * d + ca]) * dws[row];
            }
            if (cb < d) {
                b = f64(x[row * d + cb]);
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

// One invocation per entry (x, y: entries in groups of 64) and group of chunks (z).
@compute @workgroup_size(64)
fn reduce_grad(@builtin(workgroup_id) wid: vec3<u32>,
               @builtin(local_invocation_id) lid: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>) {
    let l = (wid.x + wid.y * nwg.x) * 64u + lid.x;
    let len = params.d + 1u;
    if (l < len) {
        let c0 = wid.z * params.red_group;
        let c1 = min(c0 + params.red_group, params.chunks);
        var sum = f64(0.0);
        for (var c: u32 = c0; c < c1; c = c + 1u) {
            sum = sum + gpart[c * len + l];
        }
        gred[wid.z * len + l] = sum;
    }
}

@compute @workgroup_size(64)
fn reduce_hess(@builtin(workgroup_id) wid: vec3<u32>,
               @builtin(local_invocation_id) lid: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>) {
    let l = (wid.x + wid.y * nwg.x) * 64u + lid.x;
    let len = params.d * params.d;
    if (l < len) {
        let c0 = wid.z * params.red_group;
        let c1 = min(c0 + params.red_group, params.hess_chunks);
        var sum = f64(0.0);
        for (var c: u32 = c0; c < c1; c = c + 1u) {
            sum = sum + hpart[c * len + l];
        }
        hred[wid.z * len + l] = sum;
    }
}
