// The subgroup form of the cooperative Montgomery programs (kinsey_kernels::montgomery::coop):
// one item per subgroup of S lanes, its operands in registers (limb j = k S + l in lane l,
// register k), operand scanning with the multiplier's limb broadcast by a shuffle, the
// running sum kept as two u64 accumulators per limb (the low and high halves of the
// partial products) and shifted down one limb per step by shuffles; no workgroup memory,
// no barrier. The same bindings and entry points as coop.wgsl; `coop::gpu::source`
// replaces the sizes between the two markers and appends bindings.wgsl; the sizes here let
// naga check the file with it.
// @sizes begin
const W: u32 = 8u;
const S: u32 = 8u;
const K: u32 = 1u;
const IPW: u32 = 8u;
const WG: u32 = 64u;
// @sizes end
// W: limbs; S: lanes of a subgroup (one item each); K = ceil(W / S) registers per lane;
// IPW = WG / S items per workgroup.

// Params and the bindings: bindings.wgsl.

var<private> x: array<u32, K>;
var<private> y: array<u32, K>;
var<private> md: array<u32, K>;
var<private> lo: array<u64, K>;
var<private> hi: array<u64, K>;
var<private> LANE: u32;

fn shuf64(v: u64, src: u32) -> u64 {
    let l32 = subgroupShuffle(u32(v), src);
    let h32 = subgroupShuffle(u32(v >> 32u), src);
    return (u64(h32) << 32u) | u64(l32);
}

// x = (the accumulators' value) mod m, for a value below 2 m: the carries limb by limb in
// order (each lane in turn, the carry passed by a shuffle), then m subtracted under a mask.
fn finish() {
    let l = LANE;
    var c = 0lu;
    for (var k = 0u; k < K; k++) {
        for (var r = 0u; r < S; r++) {
            var cn = c;
            if l == r && k * S + r < W {
                let v = lo[k] + c;
                x[k] = u32(v);
                cn = (v >> 32u) + hi[k];
            }
            c = shuf64(cn, r);
        }
    }
    var borrow = 0u;
    var d: array<u32, K>;
    for (var k = 0u; k < K; k++) {
        for (var r = 0u; r < S; r++) {
            var bn = borrow;
            if l == r && k * S + r < W {
                let v = u64(x[k]) - u64(md[k]) - u64(borrow);
                d[k] = u32(v);
                bn = u32(v >> 63u);
            }
            borrow = subgroupShuffle(bn, r);
        }
    }
    let keep = select(0u, 0xffffffffu, c == 0lu && borrow == 1u);
    for (var k = 0u; k < K; k++) {
        x[k] = (x[k] & keep) | (d[k] & ~keep);
    }
}

// x = x y R^-1 mod m.
fn montmul() {
    let l = LANE;
    let n0 = consts[W];
    for (var k = 0u; k < K; k++) {
        lo[k] = 0lu;
        hi[k] = 0lu;
    }
    for (var i = 0u; i < W; i++) {
        let yi = subgroupShuffle(y[i / S], i % S);
        for (var k = 0u; k < K; k++) {
            let p = u64(x[k]) * u64(yi);
            lo[k] += p & 0xfffffffflu;
            hi[k] += p >> 32u;
        }
        let q = subgroupShuffle(u32(lo[0]) * n0, 0u);
        for (var k = 0u; k < K; k++) {
            let p = u64(md[k]) * u64(q);
            lo[k] += p & 0xfffffffflu;
            hi[k] += p >> 32u;
        }
        // Limb 0 is now a multiple of 2^32: shift down one limb, its carry into the next.
        let c0 = (lo[0] >> 32u) + hi[0];
        for (var k = 0u; k < K; k++) {
            let up_lo = shuf64(lo[k], (l + 1u) % S);
            let up_hi = shuf64(hi[k], (l + 1u) % S);
            var next_lo = 0lu;
            var next_hi = 0lu;
            if k + 1u < K {
                next_lo = shuf64(lo[k + 1u], 0u);
                next_hi = shuf64(hi[k + 1u], 0u);
            }
            let last = l == S - 1u;
            lo[k] = select(up_lo, next_lo, last);
            hi[k] = select(up_hi, next_hi, last);
        }
        if l == 0u {
            lo[0] += c0;
        }
    }
    finish();
}

// x = x + y mod m for x, y below m.
fn addmod() {
    for (var k = 0u; k < K; k++) {
        lo[k] = u64(x[k]) + u64(y[k]);
        hi[k] = 0lu;
    }
    finish();
}

fn item(wid: vec3<u32>, sid: u32) -> u32 {
    return (wid.x + wid.y * P.gx) * IPW + sid;
}

// Lane l's limbs of a W-limb number at `at` in a buffer, 0 for a dead item.
fn load_a(at: u32, live: bool) {
    for (var k = 0u; k < K; k++) {
        let j = k * S + LANE;
        x[k] = select(0u, a[at + j], live && j < W);
    }
}

fn load_moduli() {
    for (var k = 0u; k < K; k++) {
        let j = k * S + LANE;
        md[k] = select(0u, consts[j], j < W);
    }
}

// y = R^2 (c = 1) or 1 (c = 0).
fn set_y(c: u32) {
    for (var k = 0u; k < K; k++) {
        let j = k * S + LANE;
        if c == 1u {
            y[k] = select(0u, consts[2u * W + j], j < W);
        } else {
            y[k] = select(0u, 1u, j == 0u);
        }
    }
}

fn store_out(i: u32, live: bool) {
    for (var k = 0u; k < K; k++) {
        let j = k * S + LANE;
        if live && j < W {
            out[i * W + j] = x[k];
        }
    }
}

fn store_acc(at: u32, live: bool) {
    for (var k = 0u; k < K; k++) {
        let j = k * S + LANE;
        if live && j < W {
            acc[at + j] = x[k];
        }
    }
}

@compute @workgroup_size(WG)
fn coop_mul(@builtin(workgroup_id) wid: vec3<u32>,
            @builtin(subgroup_id) sid: u32,
            @builtin(subgroup_invocation_id) lane: u32) {
    LANE = lane;
    let i = item(wid, sid);
    let live = i < P.items;
    load_moduli();
    for (var k = 0u; k < K; k++) {
        let j = k * S + lane;
        x[k] = select(0u, a[i * W + j], live && j < W);
        y[k] = select(0u, b[i * W + j], live && j < W);
    }
    montmul();
    set_y(1u);
    montmul();
    store_out(i, live);
}

@compute @workgroup_size(WG)
fn coop_fixed_pow(@builtin(workgroup_id) wid: vec3<u32>,
                  @builtin(subgroup_id) sid: u32,
                  @builtin(subgroup_invocation_id) lane: u32) {
    LANE = lane;
    let i = item(wid, sid);
    let live = i < P.items;
    load_moduli();
    for (var k = 0u; k < K; k++) {
        let j = k * S + lane;
        var v = 0u;
        if live && j < W {
            v = select(acc[i * W + j], a[P.windows * 16u * W + j], P.win_from == 0u);
        }
        x[k] = v;
    }
    let nwin = P.win_to - P.win_from;
    for (var p = 0u; p < nwin; p++) {
        let win = P.win_from + p;
        var digit = 0u;
        if live {
            digit = (exps[i * P.exp_words + win / 8u] >> (4u * (win % 8u))) & 15u;
        }
        for (var k = 0u; k < K; k++) {
            let j = k * S + lane;
            var v = 0u;
            if j < W {
                for (var e = 0u; e < 16u; e++) {
                    v |= a[(win * 16u + e) * W + j] & select(0u, 0xffffffffu, e == digit);
                }
            }
            y[k] = v;
        }
        montmul();
    }
    if P.last == 1u {
        for (var k = 0u; k < K; k++) {
            let j = k * S + lane;
            y[k] = select(0u, b[i * W + j], live && j < W);
        }
        montmul();
        store_out(i, live);
    } else {
        store_acc(i * W, live);
    }
}

fn slot(i: u32) -> u32 {
    return i * 17u * W;
}

@compute @workgroup_size(WG)
fn coop_pow_setup(@builtin(workgroup_id) wid: vec3<u32>,
                  @builtin(subgroup_id) sid: u32,
                  @builtin(subgroup_invocation_id) lane: u32) {
    LANE = lane;
    let i = item(wid, sid);
    let live = i < P.items;
    load_moduli();
    if P.wide == 1u {
        // lo R^-1 + hi: the low half times 1, plus the high half.
        load_a(i * 2u * W, live);
        set_y(0u);
        montmul();
        for (var k = 0u; k < K; k++) {
            let j = k * S + lane;
            y[k] = select(0u, a[i * 2u * W + W + j], live && j < W);
        }
        addmod();
        set_y(1u);
        montmul();
    } else {
        load_a(i * W, live);
    }
    set_y(1u);
    montmul();
    // table[0] = R mod m, table[d + 1] = table[d] base.
    for (var k = 0u; k < K; k++) {
        y[k] = x[k];
        let j = k * S + lane;
        x[k] = select(0u, 1u, j == 0u);
    }
    let base = y;
    set_y(1u);
    montmul();
    for (var d = 0u; d < 16u; d++) {
        store_acc(slot(i) + W + d * W, live);
        y = base;
        montmul();
    }
}

@compute @workgroup_size(WG)
fn coop_pow(@builtin(workgroup_id) wid: vec3<u32>,
            @builtin(subgroup_id) sid: u32,
            @builtin(subgroup_invocation_id) lane: u32) {
    LANE = lane;
    let i = item(wid, sid);
    let live = i < P.items;
    load_moduli();
    let first = select(slot(i), slot(i) + W, P.win_from == 0u);
    for (var k = 0u; k < K; k++) {
        let j = k * S + lane;
        var v = 0u;
        if live && j < W {
            v = acc[first + j];
        }
        x[k] = v;
    }
    let nwin = P.win_to - P.win_from;
    for (var p = 0u; p < nwin; p++) {
        let win = P.windows - 1u - (P.win_from + p);
        for (var q = 0u; q < 4u; q++) {
            y = x;
            montmul();
        }
        var digit = 0u;
        if live {
            digit = (exps[i * P.exp_stride + win / 8u] >> (4u * (win % 8u))) & 15u;
        }
        for (var k = 0u; k < K; k++) {
            let j = k * S + lane;
            var v = 0u;
            if live && j < W {
                for (var e = 0u; e < 16u; e++) {
                    v |= acc[slot(i) + W + e * W + j] & select(0u, 0xffffffffu, e == digit);
                }
            }
            y[k] = v;
        }
        montmul();
    }
    if P.last == 1u {
        set_y(0u);
        montmul();
        store_out(i, live);
    } else {
        store_acc(slot(i), live);
    }
}
