// Batched modular arithmetic for Paillier (kinsey-kernels, GPU path of `montgomery`).
// CPU twin: kernels/src/montgomery/cpu.rs (the same digits, the same loops, the same order;
// results are unique residues, so the two agree bit for bit); the tests in
// kernels/src/montgomery/gpu.rs compare them.
//
// One item per invocation, one micro-operation per dispatch: the host records a program
// (load, Montgomery multiplication in steps of the outer loop, select, copy, store) and
// dispatches it op by op with the op's parameters at a dynamic uniform offset. The program
// depends only on public sizes, never on a value. Splitting keeps every invocation under
// lavapipe's budget of 65,535 loop iterations (llvmpipe ends a shader invocation's loops
// there as hang protection: two Montgomery products of 128 digits in one invocation came
// back wrong), and keeps each dispatch short on a real GPU. Numbers travel as little-endian 32-bit words; inside, they are
// 16-bit digits held one per u32, so that every digit product with its carries fits 32 bits
// (WGSL has no 64-bit integers): (2^16 - 1)^2 + 2 (2^16 - 1) = 2^32 - 1.
//
// The host replaces the WORDS line below to build the shader for a modulus size (2048-,
// 3072- and 4096-bit moduli are 64, 96 and 128 words; n^2 of a 2048-bit key is 128).
//
// Working registers live in a storage buffer between dispatches, interleaved across the
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
// Digits, one per word: m, then R^2 mod m, then (fixed_pow) the initial accumulator in
// Montgomery form.
@group(0) @binding(1) var<storage, read> consts: array<u32>;
// modmul: left operands; fixed_pow: the table (windows x 16 entries of WORDS words,
// Montgomery form); modpow: bases.
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
