// The cooperative Montgomery programs (kinsey_kernels::montgomery::coop): one product over
// L lanes of a workgroup in workgroup memory, IPW items per workgroup. `coop::gpu::source`
// replaces the sizes between the two markers for each modulus size and appends
// bindings.wgsl; the sizes here (4 limbs)
// let naga check it with bindings.wgsl appended.
// @sizes begin
const W: u32 = 4u;
const W2: u32 = 8u;
const L: u32 = 16u;
const CPL: u32 = 1u;
const JPL: u32 = 1u;
const IPW: u32 = 4u;
const IW: u32 = 16u;
const IW2: u32 = 32u;
const WG: u32 = 64u;
// @sizes end
// W: limbs; W2 = 2 W; L: lanes per item; CPL, JPL: columns of a 2 W-limb product and limbs
// of W per lane (rounded up); IPW: items per workgroup; IW, IW2 = IPW W, IPW 2 W; WG = IPW L.

// Params and the bindings: bindings.wgsl.

// Per item slot s: x at X[s W ..], y, q; the product P (2 W); the column sums (low and
// high halves of the partial products, apart).
var<workgroup> X: array<u32, IW>;
var<workgroup> Y: array<u32, IW>;
var<workgroup> Q: array<u32, IW>;
var<workgroup> PR: array<u32, IW2>;
var<workgroup> CL: array<u64, IW2>;
var<workgroup> CH: array<u64, IW2>;

// Lane l's columns c < n of: 0: x y; 1: (P mod R) n'; 2: q m + P.
fn columns(s: u32, l: u32, which: u32, n: u32) {
    for (var k = 0u; k < CPL; k++) {
        let c = l + k * L;
        if c < n {
            let first = select(0u, c - (W - 1u), c >= W);
            let end = min(c, W - 1u) + 1u;
            var lo = 0lu;
            var hi = 0lu;
            if which == 2u {
                lo = u64(PR[s * 2u * W + c]);
            }
            for (var i = first; i < end; i++) {
                var u: u32;
                var v: u32;
                if which == 0u {
                    u = X[s * W + i];
                    v = Y[s * W + c - i];
                } else if which == 1u {
                    u = PR[s * 2u * W + i];
                    v = consts[W + c - i];
                } else {
                    u = Q[s * W + i];
                    v = consts[c - i];
                }
                let p = u64(u) * u64(v);
                lo += p & 0xfffffffflu;
                hi += p >> 32u;
            }
            CL[s * 2u * W + c] = lo;
            CH[s * 2u * W + c] = hi;
        }
    }
}

// One lane: the columns into limbs with their carries, in order (0: into P; 1: into q,
// W limbs; 2: the high W limbs into x); the carry out.
fn carries(s: u32, which: u32) -> u64 {
    var c = 0lu;
    for (var k = 0u; k < W2; k++) {
        if which != 1u || k < W {
            let v = CL[s * 2u * W + k] + c;
            if which == 0u {
                PR[s * 2u * W + k] = u32(v);
            } else if which == 1u {
                Q[s * W + k] = u32(v);
            } else if k >= W {
                X[s * W + k - W] = u32(v);
            }
            c = (v >> 32u) + CH[s * 2u * W + k];
        }
    }
    return c;
}

// One lane: x (with its top carry, below 2 m) minus m when at least m, under a mask.
fn reduce(s: u32, top: u64) {
    var borrow = 0lu;
    for (var j = 0u; j < W; j++) {
        let d = u64(X[s * W + j]) - u64(consts[j]) - borrow;
        Q[s * W + j] = u32(d);
        borrow = d >> 63u;
    }
    let keep = select(0u, 0xffffffffu, top == 0lu && borrow == 1lu);
    for (var j = 0u; j < W; j++) {
        X[s * W + j] = (X[s * W + j] & keep) | (Q[s * W + j] & ~keep);
    }
}

// x = x y R^-1 mod m, every lane of the workgroup taking part.
fn montmul(s: u32, l: u32) {
    columns(s, l, 0u, 2u * W);
    workgroupBarrier();
    if l == 0u {
        carries(s, 0u);
    }
    workgroupBarrier();
    redc(s, l);
}

// x = P R^-1 mod m for the 2 W-limb P in PR (below m R).
fn redc(s: u32, l: u32) {
    columns(s, l, 1u, W);
    workgroupBarrier();
    if l == 0u {
        carries(s, 1u);
    }
    workgroupBarrier();
    columns(s, l, 2u, 2u * W);
    workgroupBarrier();
    if l == 0u {
        let top = carries(s, 2u);
        reduce(s, top);
    }
    workgroupBarrier();
}

@compute @workgroup_size(WG)
fn coop_mul(@builtin(workgroup_id) wid: vec3<u32>,
            @builtin(local_invocation_index) li: u32) {
    let s = li / L;
    let l = li % L;
    let i = (wid.x + wid.y * P.gx) * IPW + s;
    let live = i < P.items;
    for (var k = 0u; k < JPL; k++) {
        let j = l + k * L;
        if j < W {
            var x = 0u;
            var y = 0u;
            if live {
                x = a[i * W + j];
                y = b[i * W + j];
            }
            X[s * W + j] = x;
            Y[s * W + j] = y;
        }
    }
    workgroupBarrier();
    montmul(s, l);
    for (var k = 0u; k < JPL; k++) {
        let j = l + k * L;
        if j < W {
            Y[s * W + j] = consts[2u * W + j];
        }
    }
    workgroupBarrier();
    montmul(s, l);
    for (var k = 0u; k < JPL; k++) {
        let j = l + k * L;
        if j < W && live {
            out[i * W + j] = X[s * W + j];
        }
    }
}

// Windows win_from .. win_to of init prod_w table[w][digit w of e_i]: the accumulator from
// `acc` (or the table's init on the first dispatch), each window's entry read by a full
// masked scan of its 16 (the exponent is secret; lanes read consecutive limbs), one
// product each; the last dispatch multiplies the factor and writes the result.
@compute @workgroup_size(WG)
fn coop_fixed_pow(@builtin(workgroup_id) wid: vec3<u32>,
                  @builtin(local_invocation_index) li: u32) {
    let s = li / L;
    let l = li % L;
    let i = (wid.x + wid.y * P.gx) * IPW + s;
    let live = i < P.items;
    for (var k = 0u; k < JPL; k++) {
        let j = l + k * L;
        if j < W {
            var x = 0u;
            if live {
                x = select(acc[i * W + j], a[P.windows * 16u * W + j], P.win_from == 0u);
            }
            X[s * W + j] = x;
        }
    }
    workgroupBarrier();
    let nwin = P.win_to - P.win_from;
    for (var p = 0u; p < nwin; p++) {
        let win = P.win_from + p;
        var digit = 0u;
        if live {
            digit = (exps[i * P.exp_words + win / 8u] >> (4u * (win % 8u))) & 15u;
        }
        for (var k = 0u; k < JPL; k++) {
            let j = l + k * L;
            if j < W {
                var v = 0u;
                for (var e = 0u; e < 16u; e++) {
                    v |= a[(win * 16u + e) * W + j] & select(0u, 0xffffffffu, e == digit);
                }
                Y[s * W + j] = v;
            }
        }
        workgroupBarrier();
        montmul(s, l);
    }
    if P.last == 1u {
        for (var k = 0u; k < JPL; k++) {
            let j = l + k * L;
            if j < W {
                var y = 0u;
                if live {
                    y = b[i * W + j];
                }
                Y[s * W + j] = y;
            }
        }
        workgroupBarrier();
        montmul(s, l);
    }
    for (var k = 0u; k < JPL; k++) {
        let j = l + k * L;
        if j < W && live {
            if P.last == 1u {
                out[i * W + j] = X[s * W + j];
            } else {
                acc[i * W + j] = X[s * W + j];
            }
        }
    }
}

// y = x (lane l's limbs), or y = the constant c when `one`: 1 (c = 0) or R^2 (c = 1).
fn set_y(s: u32, l: u32, from_x: bool, c: u32) {
    for (var k = 0u; k < JPL; k++) {
        let j = l + k * L;
        if j < W {
            if from_x {
                Y[s * W + j] = X[s * W + j];
            } else if c == 1u {
                Y[s * W + j] = consts[2u * W + j];
            } else {
                Y[s * W + j] = select(0u, 1u, j == 0u);
            }
        }
    }
    workgroupBarrier();
}

// Item i's slot in `acc`: its accumulator, then its 16 powers.
fn slot(i: u32) -> u32 {
    return i * 17u * W;
}

// x to storage at `at` (lane l's limbs: each lane reads back only what it wrote).
fn store_x(s: u32, l: u32, at: u32, live: bool) {
    for (var k = 0u; k < JPL; k++) {
        let j = l + k * L;
        if j < W && live {
            acc[at + j] = X[s * W + j];
        }
    }
}

// The base in Montgomery form (a wide one reduced first: lo R^-1 + hi, then twice times
// R^2) and its powers 0 to 15 into the item's slot.
@compute @workgroup_size(WG)
fn coop_pow_setup(@builtin(workgroup_id) wid: vec3<u32>,
                  @builtin(local_invocation_index) li: u32) {
    let s = li / L;
    let l = li % L;
    let i = (wid.x + wid.y * P.gx) * IPW + s;
    let live = i < P.items;
    let iw = select(W, 2u * W, P.wide == 1u);
    for (var k = 0u; k < CPL; k++) {
        let j = l + k * L;
        if j < 2u * W {
            var v = 0u;
            if live && j < iw {
                v = a[i * iw + j];
            }
            if j < W {
                X[s * W + j] = v;
            }
            PR[s * 2u * W + j] = v;
        }
    }
    workgroupBarrier();
    if P.wide == 1u {
        redc(s, l);
        set_y(s, l, false, 1u);
        montmul(s, l);
    }
    set_y(s, l, false, 1u);
    montmul(s, l);
    // The base's powers: table[0] = R mod m, table[d + 1] = table[d] base.
    let base = slot(i) + 2u * W;
    store_x(s, l, base, live);
    for (var k = 0u; k < JPL; k++) {
        let j = l + k * L;
        if j < W {
            X[s * W + j] = select(0u, 1u, j == 0u);
        }
    }
    set_y(s, l, false, 1u);
    montmul(s, l);
    for (var d = 0u; d < 16u; d++) {
        store_x(s, l, slot(i) + W + d * W, live);
        for (var k = 0u; k < JPL; k++) {
            let j = l + k * L;
            if j < W {
                var v = 0u;
                if live {
                    v = acc[base + j];
                }
                Y[s * W + j] = v;
            }
        }
        workgroupBarrier();
        montmul(s, l);
    }
}

// Windows win_from .. win_to of the exponent from the top: four squarings and a product by
// the power the window selects (a full masked scan of the 16: the exponent is secret); the
// accumulator from the item's slot (or its power 0 on the first dispatch); the last
// dispatch takes the result out of Montgomery form and writes it.
@compute @workgroup_size(WG)
fn coop_pow(@builtin(workgroup_id) wid: vec3<u32>,
            @builtin(local_invocation_index) li: u32) {
    let s = li / L;
    let l = li % L;
    let i = (wid.x + wid.y * P.gx) * IPW + s;
    let live = i < P.items;
    let first = select(slot(i), slot(i) + W, P.win_from == 0u);
    for (var k = 0u; k < JPL; k++) {
        let j = l + k * L;
        if j < W {
            var x = 0u;
            if live {
                x = acc[first + j];
            }
            X[s * W + j] = x;
        }
    }
    workgroupBarrier();
    let nwin = P.win_to - P.win_from;
    for (var p = 0u; p < nwin; p++) {
        let win = P.windows - 1u - (P.win_from + p);
        for (var q = 0u; q < 4u; q++) {
            set_y(s, l, true, 0u);
            montmul(s, l);
        }
        var digit = 0u;
        if live {
            digit = (exps[i * P.exp_stride + win / 8u] >> (4u * (win % 8u))) & 15u;
        }
        for (var k = 0u; k < JPL; k++) {
            let j = l + k * L;
            if j < W {
                var v = 0u;
                for (var e = 0u; e < 16u; e++) {
                    var t = 0u;
                    if live {
                        t = acc[slot(i) + W + e * W + j];
                    }
                    v |= t & select(0u, 0xffffffffu, e == digit);
                }
                Y[s * W + j] = v;
            }
        }
        workgroupBarrier();
        montmul(s, l);
    }
    if P.last == 1u {
        set_y(s, l, false, 0u);
        montmul(s, l);
    }
    for (var k = 0u; k < JPL; k++) {
        let j = l + k * L;
        if j < W && live {
            if P.last == 1u {
                out[i * W + j] = X[s * W + j];
            } else {
                acc[slot(i) + j] = X[s * W + j];
            }
        }
    }
}
