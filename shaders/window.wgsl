// The `window` kernel (kernels/src/window/): the sliding-window sums of one chunk of a
// dyadic tree mechanism. Pass `level` (one dispatch per level k = 0..h, in order) forms
// each node's true value from its two children, exactly as the CPU forest adds them (left
// + right), and releases it on the grid: gamma (round(v / gamma) + z), round half away
// from zero as Rust's f64::round; pass `sums` adds, for every step, the released nodes of
// its window's canonical decomposition left to right. f64 throughout (SHADER_F64): the
// same IEEE operations in the same order as the CPU twin, so the same bits.
// Steps and nodes are relative to the chunk's first step `from` (a multiple of 2^h).
//
// The decayed running sums' segments (`running_level`, `running_sums` and, for weights
// other than 1, the `exp_` passes; host side kernels/src/window/running.rs) share the
// bindings: segments of 2^h steps whose levels 0..h form here, left nodes below h released
// with draw ids offset per segment, the level-h nodes (and the last segment's latest left
// releases) read back for the host to run the levels above, then per step the Horner sum
// of its left nodes from the host's per-segment start value. The running sum (weights 1)
// only adds, so one pass each. An exponential sum multiplies and adds (`w * left + right`,
// `acc * pow + r`), and WGSL lets a device fuse those into one rounding: each product is
// stored by its own dispatch and the add is another, so every device rounds twice, as the
// CPU does.

struct Params {
    // steps in the chunk, h, window W (below 2^32 here), the level of a `level` pass
    len: u32,
    h: u32,
    w: u32,
    k: u32,
    // first output step (relative), outputs, workgroups in x, unused
    out_from: u32,
    outs: u32,
    gx: u32,
    pad: u32,
    // running: segments, index in `offs` of the first segment's id base, index in `grid`
    // of the first segment's (start value, last output), 1 when the left child's weighted
    // value is already in the node's slot (exp_level_mul ran)
    nseg: u32,
    segs_at: u32,
    pairs_at: u32,
    weighted: u32,
}

@group(0) @binding(0) var<uniform> P: Params;
// gamma, 1 / gamma (running sums: then the weights alpha^(2^k) of levels 0..=h, then per
// segment its start value and last output)
@group(0) @binding(1) var<storage, read> grid: array<f64>;
@group(0) @binding(2) var<storage, read> xs: array<f64>;
// node draws in completion order, as (low, high) words of an i64
@group(0) @binding(3) var<storage, read> z: array<vec2<u32>>;
// offset of level k's nodes in `val` and `rel` (running sums: then each segment's first
// draw id relative to the chunk's)
@group(0) @binding(4) var<storage, read> offs: array<u32>;
@group(0) @binding(5) var<storage, read_write> val: array<f64>;
@group(0) @binding(6) var<storage, read_write> rel: array<f64>;
@group(0) @binding(7) var<storage, read_write> out: array<f64>;

fn index(gid: vec3<u32>) -> u32 {
    return gid.y * (P.gx * 64u) + gid.x;
}

// Rust's f64::round: half away from zero, from conversions to u32 and exact IEEE steps
// only: lavapipe's f64 trunc/round return their argument unchanged above 2^24, and it
// folds (a + 2^52) - 2^52 to a. For a < 2^52: hi = floor(a / 2^32) (scaling by a power of
// two is exact, the conversion truncates), the rest below 2^32 (exact), its floor, then
// t = floor(a) and a - t exact; a fraction of at least 1/2 rounds up.
fn round_away(x: f64) -> f64 {
    let a = abs(x);
    let two32 = f64(65536u) * f64(65536u);
    if a >= two32 * f64(1048576u) {
        return x;
    }
    let hi = f64(u32(a / two32)) * two32;
    let t = hi + f64(u32(a - hi));
    let r = select(t, t + f64(1.0), a - t >= f64(0.5));
    return select(r, -r, x < f64(0.0));
}

// An i64 below 2^53 in magnitude, exactly.
fn to_f64(v: vec2<u32>) -> f64 {
    return f64(bitcast<i32>(v.y)) * f64(65536u) * f64(65536u) + f64(v.x);
}

// Node m of level k: its value (level 0 the step's; above, its left child, or with
// `weighted` the left child's weighted value already in the node's slot, plus its right
// child), stored in `val` and returned.
fn form_node(m: u32, k: u32, weighted: bool) -> f64 {
    var v: f64;
    if k == 0u {
        v = xs[m];
    } else {
        let below = offs[k - 1u] + 2u * m;
        // A branch, not `select`: select evaluates (loads) both sides.
        var left: f64;
        if weighted {
            left = val[offs[k] + m];
        } else {
            left = val[below];
        }
        v = left + val[below + 1u];
    }
    val[offs[k] + m] = v;
    return v;
}

@compute @workgroup_size(64)
fn level(@builtin(global_invocation_id) gid: vec3<u32>) {
    let m = index(gid);
    let k = P.k;
    if m >= (P.len >> k) {
        return;
    }
    let v = form_node(m, k, false);
    // Its draw: the nodes completing before its last step, then the levels below it there.
    let t = ((m + 1u) << k) - 1u;
    var id = k;
    for (var j = 0u; j <= P.h; j++) {
        id += t >> j;
    }
    let g = grid[0];
    rel[offs[k] + m] = g * (round_away(v * grid[1]) + to_f64(z[id]));
}

@compute @workgroup_size(64)
fn sums(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = index(gid);
    if i >= P.outs {
        return;
    }
    let u = P.out_from + i;
    // The window [l, u] (the host checks that it starts inside the chunk).
    var at = u + 1u - min(u + 1u, P.w);
    var s = f64(0.0);
    while at <= u {
        let fits = 31u - countLeadingZeros(u - at + 1u);
        let k = min(min(countTrailingZeros(at), P.h), fits);
        s += rel[offs[k] + (at >> k)];
        at += 1u << k;
    }
    out[i] = s;
}

// Running sums, level `P.k` of the segments of 2^h steps: node values as `level` does; a
// left node below h is released (its draw: the segment's id base, then the nodes
// completing before its last step in the segment's own levels, then the levels below it);
// the level-h nodes go to out[segment], and the last segment's latest left release of
// level k to out[nseg + k].
@compute @workgroup_size(64)
fn running_level(@builtin(global_invocation_id) gid: vec3<u32>) {
    let m = index(gid);
    let k = P.k;
    let l = P.h;
    let count = P.len >> k;
    if m >= count {
        return;
    }
    let v = form_node(m, k, P.weighted == 1u);
    if k == l {
        out[m] = v;
        return;
    }
    if (m & 1u) != 0u {
        return;
    }
    let s = m >> (l - k);
    let t = (((m + 1u) << k) - 1u) - (s << l);
    var id = offs[P.segs_at + s] + k;
    for (var j = 0u; j < l; j++) {
        id += t >> j;
    }
    let g = grid[0];
    let r = g * (round_away(v * grid[1]) + to_f64(z[id]));
    rel[offs[k] + m] = r;
    if m + 2u == count {
        out[P.nseg + k] = r;
    }
}

// Running sums, every step: the segment's start value (the levels from h up), then its
// left nodes below h, highest first; the segment's last step takes the host's value.
@compute @workgroup_size(64)
fn running_sums(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = index(gid);
    if i >= P.len {
        return;
    }
    let l = P.h;
    let s = i >> l;
    let mask = (1u << l) - 1u;
    let tl = i & mask;
    if tl == mask {
        out[i] = grid[P.pairs_at + 2u * s + 1u];
        return;
    }
    let n = tl + 1u;
    var acc = grid[P.pairs_at + 2u * s];
    for (var k = l; k > 0u; k--) {
        let b = k - 1u;
        if ((n >> b) & 1u) != 0u {
            acc = acc + rel[offs[b] + (s << (l - b)) + (n >> b) - 1u];
        }
    }
    out[i] = acc;
}

// Exponential sums, level `P.k` >= 1: the left child times its weight, stored in the node's
// slot for `running_level` (with `weighted`) to add the right child in the next dispatch.
@compute @workgroup_size(64)
fn exp_level_mul(@builtin(global_invocation_id) gid: vec3<u32>) {
    let m = index(gid);
    let k = P.k;
    if m >= (P.len >> k) {
        return;
    }
    val[offs[k] + m] = grid[1u + k] * val[offs[k - 1u] + 2u * m];
}

// Exponential sums, every step: its segment's start value (or, at a segment's last step,
// the host's output), then for each left node below h, highest first, `exp_sums_mul` and
// `exp_sums_add` of its level `P.k` in two dispatches.
@compute @workgroup_size(64)
fn exp_sums_init(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = index(gid);
    if i >= P.len {
        return;
    }
    let mask = (1u << P.h) - 1u;
    let last = select(0u, 1u, (i & mask) == mask);
    out[i] = grid[P.pairs_at + 2u * (i >> P.h) + last];
}

// The step's bit `P.k` of n = t + 1 within its segment, or none at a segment's last step.
fn exp_bit(i: u32) -> bool {
    let mask = (1u << P.h) - 1u;
    let tl = i & mask;
    return tl != mask && (((tl + 1u) >> P.k) & 1u) != 0u;
}

@compute @workgroup_size(64)
fn exp_sums_mul(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = index(gid);
    if i >= P.len || !exp_bit(i) {
        return;
    }
    out[i] = out[i] * grid[2u + P.k];
}

@compute @workgroup_size(64)
fn exp_sums_add(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = index(gid);
    if i >= P.len || !exp_bit(i) {
        return;
    }
    let l = P.h;
    let b = P.k;
    let s = i >> l;
    let n = (i & ((1u << l) - 1u)) + 1u;
    out[i] = out[i] + rel[offs[b] + (s << (l - b)) + (n >> b) - 1u];
}
