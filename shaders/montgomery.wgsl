// Batched modular arithmetic for Paillier (kinsey-kernels, GPU path of `montgomery`).
// CPU twin: kernels/src/montgomery/cpu.rs (the same digits, the same loops, the same order;
// results are unique residues, so the two agree bit for bit); the tests in
// kernels/src/montgomery/gpu.rs compare them.
//
// Two programs over the same bindings. `step` (for software rasterisers): one item per
// invocation, one micro-operation per dispatch: the host records a program (load,
// Montgomery multiplication in steps of the outer loop, select, copy, store; see
// kernels/src/montgomery/steps.rs) and dispatches it op by op with the op's parameters at
// a dynamic uniform offset. Splitting keeps every invocation under lavapipe's budget of
// 65,535 loop iterations (llvmpipe ends a shader invocation's loops there as hang
// protection: two Montgomery products of 128 digits in one invocation came back wrong).
// `fused_mul`, `fused_fixed_pow`, `fused_pow` (for hardware; at the end of this file): one
// invocation per whole operation. kernels/src/montgomery/fused.rs picks one per operation.
// Either program depends only on public sizes, never on a value. Numbers travel as
// little-endian 32-bit words; inside, they are
// 16-bit digits held one per u32, so that every digit product with its carries fits 32 bits
// (WGSL has no 64-bit integers): (2^16 - 1)^2 + 2 (2^16 - 1) = 2^32 - 1.
//
// The host replaces the WORDS line below to build the shader for a modulus size (2048-,
// 3072- and 4096-bit moduli are 64, 96 and 128 words; n^2 of a 2048-bit key is 128).
//
// `step`'s working registers live in a storage buffer between dispatches, interleaved across the
// items (digit k of item i at k * items + i, so neighbouring invocations touch neighbouring
// words).
//
// Side channels: exponents are secret (encryption randomness, p - 1, q - 1, Stage 2's noise
// as a multiplier). Every exponentiation runs the same sequence of Montgomery
// multiplications whatever the exponent; every table lookup reads all 16 entries and keeps
// one with a mask (no secret-dependent branch or address); the final subtraction of a
// Montgomery multiplication is a masked select.

const WORDS: u32 = 128u;
const DIG: u32 = 2u * WORDS;
const DIG2: u32 = 2u * WORDS + 2u;
// Register offsets (in digits) within an item's working set.
const OX: u32 = 0u;
const OY: u32 = DIG;
const OZ: u32 = 2u * DIG;
const OT: u32 = 3u * DIG;
const OB: u32 = 3u * DIG + DIG2;  // modpow: the base in Montgomery form
const OTB: u32 = 4u * DIG + DIG2; // modpow: 16 powers of it

// Operations (`op`), their arguments (`a0`, `a1`). MM_STEPS and REDC_STEPS run outer
// iterations a0 .. (a1 & 0xffff): the first step (a0 = 0) starts T (MM: T = 0, after Y = X
// if flag 1 (a1 >> 16) asks for a square; REDC: T = X), the last (end = DIG) ends with the
// masked subtraction into Z, then X = Z if flag 2 asks.
const MM_STEPS: u32 = 1u;    // CIOS outer iterations of Z = X Y R^-1
const REDC_STEPS: u32 = 4u;  // reduction steps of (X + Y R) R^-1, digit i of Y entering at the top
const COPY: u32 = 5u;        // register a0 = register a1
const LOAD_A: u32 = 6u;      // register a0 = WORDS words of a_in at item * in_words + a1
const LOAD_B: u32 = 7u;      // register a0 = WORDS words of b_in at item * WORDS
const LOAD_CONST: u32 = 8u;  // register a0 = DIG digits of consts at a1
const LOAD_ONE: u32 = 9u;    // register a0 = 1
const SEL_A: u32 = 10u;      // Y = a_in's table of window a0, entry = exponent digit a0
const SEL_TB: u32 = 11u;     // Y = this item's power table, entry = exponent digit a0
const STORE: u32 = 12u;      // out = Z

struct Params {
    items: u32,      // items in this dispatch
    exp_words: u32,  // words per exponent (4-bit windows: 8 per word)
    exp_stride: u32, // 0: one exponent for every item; else exp_words
    n0inv: u32,      // -m^-1 mod 2^16
    in_words: u32,   // words per item in a_in (LOAD_A)
    op: u32,
    a0: u32,
    a1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
// Digits, one per word: m, then R^2 mod m (kept on the device per modulus).
@group(0) @binding(1) var<storage, read> consts: array<u32>;
// modmul: left operands; fixed_pow: the table (windows x 16 entries of WORDS words,
// Montgomery form, then the initial accumulator; kept on the device per table); modpow:
// bases.
@group(0) @binding(2) var<storage, read> a_in: array<u32>;
// modmul: right operands; fixed_pow: the factors the powers are multiplied by.
@group(0) @binding(3) var<storage, read> b_in: array<u32>;
@group(0) @binding(4) var<storage, read> exps: array<u32>;
@group(0) @binding(5) var<storage, read_write> out: array<u32>;
// Working registers, interleaved by item.
@group(0) @binding(6) var<storage, read_write> work: array<u32>;

var<private> GI: u32;

fn rd(k: u32) -> u32 {
    return work[k * params.items + GI];
}

fn wr(k: u32, v: u32) {
    work[k * params.items + GI] = v;
}

// The reduction half of a CIOS step: T = (T + q m) / 2^16.
fn reduce_step() {
    let t0 = rd(OT);
    let q = (t0 * params.n0inv) & 0xffffu;
    var c2 = (t0 + q * consts[0]) >> 16u;
    for (var j = 1u; j < DIG; j = j + 1u) {
        let s = rd(OT + j) + q * consts[j] + c2;
        wr(OT + j - 1u, s & 0xffffu);
        c2 = s >> 16u;
    }
    let s2 = rd(OT + DIG) + c2;
    wr(OT + DIG - 1u, s2 & 0xffffu);
    wr(OT + DIG, rd(OT + DIG + 1u) + (s2 >> 16u));
}

// Outer iterations a0 .. a1 of Z = X Y R^-1 mod m (CIOS: one digit of Y at a time,
// multiply-accumulate, then reduce by one digit; T stays below 2m).
fn mm_steps(i0: u32, i1: u32) {
    for (var i = i0; i < i1; i = i + 1u) {
        let yi = rd(OY + i);
        var c = 0u;
        for (var j = 0u; j < DIG; j = j + 1u) {
            let s = rd(OT + j) + rd(OX + j) * yi + c;
            wr(OT + j, s & 0xffffu);
            c = s >> 16u;
        }
        let s1 = rd(OT + DIG) + c;
        wr(OT + DIG, s1 & 0xffffu);
        wr(OT + DIG + 1u, s1 >> 16u);
        reduce_step();
    }
}

// Reduction steps a0 .. a1 of (X + Y R) R^-1 mod m for a double-width value below m R: the
// digits of Y enter at the top as T shifts down (T stays below R + m; the result below 2m
// before the masked subtraction).
fn redc_steps(i0: u32, i1: u32) {
    for (var i = i0; i < i1; i = i + 1u) {
        let s1 = rd(OT + DIG) + rd(OY + i);
        wr(OT + DIG, s1 & 0xffffu);
        wr(OT + DIG + 1u, s1 >> 16u);
        reduce_step();
    }
}

// Z = T - m when T >= m, else T, as a masked select.
fn mm_end() {
    var borrow = 0u;
    for (var j = 0u; j < DIG; j = j + 1u) {
        let d = rd(OT + j) - consts[j] - borrow;
        wr(OZ + j, d & 0xffffu);
        borrow = (d >> 16u) & 1u;
    }
    let keep = borrow & (1u - rd(OT + DIG)); // 1: T < m, keep T
    let take = keep - 1u;                     // all ones when the difference is kept
    for (var j = 0u; j < DIG; j = j + 1u) {
        wr(OZ + j, (rd(OZ + j) & take) | (rd(OT + j) & ~take));
    }
}

// The masked subtraction into Z, then X = Z when flag 2 is set.
fn finish(flags: u32) {
    mm_end();
    if ((flags & 2u) != 0u) {
        for (var j = 0u; j < DIG; j = j + 1u) {
            wr(OX + j, rd(OZ + j));
        }
    }
}

// The 4-bit window `w` (counted from the least significant) of item i's exponent.
fn window(i: u32, w: u32) -> u32 {
    let word = exps[i * params.exp_stride + w / 8u];
    return (word >> (4u * (w % 8u))) & 0xfu;
}

// Y = entry `digit` of the 16 (of WORDS words) at word offset `base` of a_in, reading all 16.
fn select_a(base: u32, digit: u32) {
    for (var k = 0u; k < WORDS; k = k + 1u) {
        var w = 0u;
        for (var d = 0u; d < 16u; d = d + 1u) {
            let mask = 0u - u32(d == digit);
            w = w | (a_in[base + d * WORDS + k] & mask);
        }
        wr(OY + 2u * k, w & 0xffffu);
        wr(OY + 2u * k + 1u, w >> 16u);
    }
}

// Y = entry `digit` of this item's table of 16 powers (digits), reading all 16.
fn select_table(digit: u32) {
    for (var j = 0u; j < DIG; j = j + 1u) {
        var v = 0u;
        for (var d = 0u; d < 16u; d = d + 1u) {
            let mask = 0u - u32(d == digit);
            v = v | (rd(OTB + d * DIG + j) & mask);
        }
        wr(OY + j, v);
    }
}

@compute @workgroup_size(64)
fn step(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i >= params.items) {
        return;
    }
    GI = i;
    let a0 = params.a0;
    let a1 = params.a1;
    switch params.op {
        case MM_STEPS: {
            let end = a1 & 0xffffu;
            let flags = a1 >> 16u;
            if (a0 == 0u) {
                if ((flags & 1u) != 0u) {
                    for (var j = 0u; j < DIG; j = j + 1u) {
                        wr(OY + j, rd(OX + j));
                    }
                }
                for (var j = 0u; j < DIG2; j = j + 1u) {
                    wr(OT + j, 0u);
                }
            }
            mm_steps(a0, end);
            if (end == DIG) {
                finish(flags);
            }
        }
        case REDC_STEPS: {
            let end = a1 & 0xffffu;
            let flags = a1 >> 16u;
            if (a0 == 0u) {
                for (var j = 0u; j < DIG; j = j + 1u) {
                    wr(OT + j, rd(OX + j));
                }
                wr(OT + DIG, 0u);
                wr(OT + DIG + 1u, 0u);
            }
            redc_steps(a0, end);
            if (end == DIG) {
                finish(flags);
            }
        }
        case COPY: {
            for (var j = 0u; j < DIG; j = j + 1u) {
                wr(a0 + j, rd(a1 + j));
            }
        }
        case LOAD_A: {
            let at = i * params.in_words + a1;
            for (var k = 0u; k < WORDS; k = k + 1u) {
                let w = a_in[at + k];
                wr(a0 + 2u * k, w & 0xffffu);
                wr(a0 + 2u * k + 1u, w >> 16u);
            }
        }
        case LOAD_B: {
            for (var k = 0u; k < WORDS; k = k + 1u) {
                let w = b_in[i * WORDS + k];
                wr(a0 + 2u * k, w & 0xffffu);
                wr(a0 + 2u * k + 1u, w >> 16u);
            }
        }
        case LOAD_CONST: {
            for (var j = 0u; j < DIG; j = j + 1u) {
                wr(a0 + j, consts[a1 + j]);
            }
        }
        case LOAD_ONE: {
            for (var j = 0u; j < DIG; j = j + 1u) {
                wr(a0 + j, 0u);
            }
            wr(a0, 1u);
        }
        case SEL_A: {
            select_a(a0 * 16u * WORDS, window(i, a0));
        }
        case SEL_TB: {
            select_table(window(i, a0));
        }
        case STORE: {
            for (var k = 0u; k < WORDS; k = k + 1u) {
                out[i * WORDS + k] = rd(OZ + 2u * k) | (rd(OZ + 2u * k + 1u) << 16u);
            }
        }
        default: {
        }
    }
}

// ---------------------------------------------------------------------------------------
// Fused programs, for hardware adapters: one invocation runs a whole operation (a product,
// a fixed-base power, a power), its working values in private memory (the driver keeps
// them in registers and per-thread local memory, laid out per thread by the hardware)
// instead of the storage buffer `work`. The host picks them in one place
// (`Program choice` in kernels/src/montgomery/gpu.rs): always on hardware, and on a
// software rasteriser only when the whole operation stays under llvmpipe's 65,535 loop
// iterations (the twin tests run them there at 256- to 512-bit moduli). Same arithmetic,
// same constant-time discipline (a fixed sequence of products, every table entry read,
// masked selects), same unique residues as the CPU twin.
//
// The Montgomery product interleaves the multiply-accumulate and the reduction by one
// digit in a single inner loop (CIOS with the two passes merged): every partial sum stays
// within 32 bits, (2^16 - 1) + (2^16 - 1)^2 + (2^16 - 1) = 2^32 - 1, and T < 2m after
// every outer step, so T needs DIG + 1 digits.

var<private> FX: array<u32, DIG>;
var<private> FY: array<u32, DIG>;
var<private> FZ: array<u32, DIG>;
var<private> FT: array<u32, DIG2>;
// fused_pow: the 16 powers base^d R of this item's base.
var<private> FTB: array<u32, 16u * DIG>;

// FZ = FX FY R^-1 mod m.
fn f_montmul() {
    for (var j = 0u; j <= DIG; j = j + 1u) {
        FT[j] = 0u;
    }
    let n0inv = params.n0inv;
    for (var i = 0u; i < DIG; i = i + 1u) {
        let yi = FY[i];
        let s0 = FT[0] + FX[0] * yi;
        var c1 = s0 >> 16u;
        let q = ((s0 & 0xffffu) * n0inv) & 0xffffu;
        var c2 = ((s0 & 0xffffu) + q * consts[0]) >> 16u;
        for (var j = 1u; j < DIG; j = j + 1u) {
            let s = FT[j] + FX[j] * yi + c1;
            c1 = s >> 16u;
            let r = (s & 0xffffu) + q * consts[j] + c2;
            c2 = r >> 16u;
            FT[j - 1u] = r & 0xffffu;
        }
        let s = FT[DIG] + c1;
        let r = (s & 0xffffu) + c2;
        FT[DIG - 1u] = r & 0xffffu;
        FT[DIG] = (s >> 16u) + (r >> 16u);
    }
    f_end();
}

// FZ = FT - m when FT >= m, else FT, as a masked select.
fn f_end() {
    var borrow = 0u;
    for (var j = 0u; j < DIG; j = j + 1u) {
        let d = FT[j] - consts[j] - borrow;
        FZ[j] = d & 0xffffu;
        borrow = (d >> 16u) & 1u;
    }
    let take = (borrow & (1u - FT[DIG])) - 1u; // all ones when the difference is kept
    for (var j = 0u; j < DIG; j = j + 1u) {
        FZ[j] = (FZ[j] & take) | (FT[j] & ~take);
    }
}

// FZ = (FX + FY R) R^-1 mod m for a double-width value below m R: FY's digits enter at
// the top as FT shifts down by one digit per step.
fn f_redc_wide() {
    for (var j = 0u; j < DIG; j = j + 1u) {
        FT[j] = FX[j];
    }
    FT[DIG] = 0u;
    for (var i = 0u; i < DIG; i = i + 1u) {
        let s1 = FT[DIG] + FY[i];
        let t0 = FT[0];
        let q = (t0 * params.n0inv) & 0xffffu;
        var c2 = (t0 + q * consts[0]) >> 16u;
        for (var j = 1u; j < DIG; j = j + 1u) {
            let s = FT[j] + q * consts[j] + c2;
            FT[j - 1u] = s & 0xffffu;
            c2 = s >> 16u;
        }
        let s2 = (s1 & 0xffffu) + c2;
        FT[DIG - 1u] = s2 & 0xffffu;
        FT[DIG] = (s1 >> 16u) + (s2 >> 16u);
    }
    f_end();
}

fn f_x_from_z() {
    for (var j = 0u; j < DIG; j = j + 1u) {
        FX[j] = FZ[j];
    }
}

// FY = R^2 mod m.
fn f_y_r2() {
    for (var j = 0u; j < DIG; j = j + 1u) {
        FY[j] = consts[DIG + j];
    }
}

// FX = FX^2 R^-1 mod m.
fn f_square_x() {
    for (var j = 0u; j < DIG; j = j + 1u) {
        FY[j] = FX[j];
    }
    f_montmul();
    f_x_from_z();
}

// FX (or FY) = the WORDS words of a_in at word `at`, as digits.
fn f_x_from_a(at: u32) {
    for (var k = 0u; k < WORDS; k = k + 1u) {
        let a = a_in[at + k];
        FX[2u * k] = a & 0xffffu;
        FX[2u * k + 1u] = a >> 16u;
    }
}

fn f_y_from_a(at: u32) {
    for (var k = 0u; k < WORDS; k = k + 1u) {
        let a = a_in[at + k];
        FY[2u * k] = a & 0xffffu;
        FY[2u * k + 1u] = a >> 16u;
    }
}

// FY = item i's WORDS words of b_in, as digits.
fn f_y_from_b(i: u32) {
    for (var k = 0u; k < WORDS; k = k + 1u) {
        let b = b_in[i * WORDS + k];
        FY[2u * k] = b & 0xffffu;
        FY[2u * k + 1u] = b >> 16u;
    }
}

fn f_store(i: u32) {
    for (var k = 0u; k < WORDS; k = k + 1u) {
        out[i * WORDS + k] = FZ[2u * k] | (FZ[2u * k + 1u] << 16u);
    }
}

// The item of this invocation (at or past params.items: none).
fn f_item(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 64u;
}

// a_i b_i mod m: a from a_in, b from b_in.
@compute @workgroup_size(64)
fn fused_mul(@builtin(global_invocation_id) gid: vec3<u32>,
             @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = f_item(gid, nwg);
    if (i >= params.items) {
        return;
    }
    f_x_from_a(i * WORDS);
    f_y_from_b(i);
    f_montmul();
    f_x_from_z();
    f_y_r2();
    f_montmul();
    f_store(i);
}

// b_i init prod_w table[w][digit w of e_i]: a_in holds the table (a0 windows of 16
// entries of WORDS words, Montgomery form), then the initial accumulator (Montgomery form).
@compute @workgroup_size(64)
fn fused_fixed_pow(@builtin(global_invocation_id) gid: vec3<u32>,
                   @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = f_item(gid, nwg);
    if (i >= params.items) {
        return;
    }
    let windows = params.a0;
    f_x_from_a(windows * 16u * WORDS);
    for (var w = 0u; w < windows; w = w + 1u) {
        let digit = window(i, w);
        let base = w * 16u * WORDS;
        for (var k = 0u; k < WORDS; k = k + 1u) {
            var v = 0u;
            for (var d = 0u; d < 16u; d = d + 1u) {
                v = v | (a_in[base + d * WORDS + k] & (0u - u32(d == digit)));
            }
            FY[2u * k] = v & 0xffffu;
            FY[2u * k + 1u] = v >> 16u;
        }
        f_montmul();
        f_x_from_z();
    }
    f_y_from_b(i);
    f_montmul();
    f_store(i);
}

// x_i ^ e_i mod m (params.exp_words * 8 windows); a1 = 1: bases of 2 WORDS words, reduced
// mod m first.
@compute @workgroup_size(64)
fn fused_pow(@builtin(global_invocation_id) gid: vec3<u32>,
             @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = f_item(gid, nwg);
    if (i >= params.items) {
        return;
    }
    let at = i * params.in_words;
    f_x_from_a(at);
    if (params.a1 == 1u) {
        f_y_from_a(at + WORDS);
        f_redc_wide();
        f_x_from_z();
        f_y_r2();
        f_montmul();
        f_x_from_z();
    }
    // FY = base R; FZ = 1 R^-1 R^2 = R; then FTB[d] = base^d R, one product each.
    f_y_r2();
    f_montmul();
    for (var j = 0u; j < DIG; j = j + 1u) {
        FX[j] = 0u;
    }
    FX[0] = 1u;
    for (var j = 0u; j < DIG; j = j + 1u) {
        FTB[j] = FZ[j];
    }
    f_y_r2();
    f_montmul();
    for (var j = 0u; j < DIG; j = j + 1u) {
        FY[j] = FTB[j];
    }
    for (var d = 0u; d < 16u; d = d + 1u) {
        for (var j = 0u; j < DIG; j = j + 1u) {
            FTB[d * DIG + j] = FZ[j];
            FX[j] = FZ[j];
        }
        if (d < 15u) {
            f_montmul();
        }
    }
    for (var j = 0u; j < DIG; j = j + 1u) {
        FX[j] = FTB[j];
    }
    let windows = params.exp_words * 8u;
    for (var n = 0u; n < windows; n = n + 1u) {
        let w = windows - 1u - n;
        f_square_x();
        f_square_x();
        f_square_x();
        f_square_x();
        let digit = window(i, w);
        for (var j = 0u; j < DIG; j = j + 1u) {
            var v = 0u;
            for (var d = 0u; d < 16u; d = d + 1u) {
                v = v | (FTB[d * DIG + j] & (0u - u32(d == digit)));
            }
            FY[j] = v;
        }
        f_montmul();
        f_x_from_z();
    }
    for (var j = 0u; j < DIG; j = j + 1u) {
        FY[j] = 0u;
    }
    FY[0] = 1u;
    f_montmul();
    f_store(i);
}
