// The cooperative Montgomery programs (kinsey_kernels::montgomery::coop): one product over
// L lanes of a workgroup in workgroup memory, IPW items per workgroup. `coop::gpu::source`
// replaces the sizes between the two markers for each modulus size; the ones here (4 limbs)
// let naga check the file as it is.
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

struct Params {
    items: u32,
    gx: u32,
    // fixed-base powers: the windows of this dispatch, the exponents' words, and whether
    // this dispatch is the last (it multiplies the factor and writes the result)
    win_from: u32,
    win_to: u32,
    exp_words: u32,
    last: u32,
    // fixed-base powers: the table's windows
    windows: u32,
    pad0: u32,
}

@group(0) @binding(0) var<uniform> P: Params;
// m (W limbs), n' = -m^-1 mod R (W limbs), R^2 mod m (W limbs)
@group(0) @binding(1) var<storage, read> consts: array<u32>;
// products: the left operands; fixed-base powers: the table (window-major, 16 entries of
// W limbs, Montgomery form) and then its initial accumulator
@group(0) @binding(2) var<storage, read> a: array<u32>;
// products: the right operands; fixed-base powers: the factors
@group(0) @binding(3) var<storage, read> b: array<u32>;
// fixed-base powers: the exponents (item-major, exp_words each)
@group(0) @binding(4) var<storage, read> exps: array<u32>;
// fixed-base powers: the accumulators between dispatches (item-major)
@group(0) @binding(5) var<storage, read_write> acc: array<u32>;
@group(0) @binding(6) var<storage, read_write> out: array<u32>;

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
