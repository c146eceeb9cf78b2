// The `dyadic` kernel: noise draws of tree counters (kernels/src/dyadic/). One invocation
// per ChaCha20 block: the block carries the two 64-bit words of four consecutive counters
// (counter 4b + j owns row j of block b's output state), the wide keystream's block b their
// extra words. Each draw is the table path of kinsey_dp::dyadic: sign and geometric part
// from word 0's low 12 bits, the lowest digit from word 1, the second from word 0's top 52
// bits, further digits from the wide words; `SLOW` where more bits are needed.
// 64-bit values are vec2<u32> (low, high). Bit for bit the CPU twin (cpu.rs).

struct Params {
    // 0, 1: key; 2, 3: wide key; 4: stream lo, hi, first block lo, hi;
    // 5: first counter lo, hi, counters, digits; 6: M lo, hi, blocks, workgroups in x;
    // 7 + i: digit i's position, precision, slot bits, table offset;
    // 11: room in `slow` for the indices of SLOW draws.
    v: array<vec4<u32>, 12>,
}

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> tables: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read_write> out: array<vec2<u32>>;
// slow[0]: how many draws are SLOW; slow[1 ..]: their indices in `out` (any order; as many
// as there is room for, the host reads everything back when the count says more).
@group(0) @binding(3) var<storage, read_write> slow: array<atomic<u32>>;

const SLOW: vec2<u32> = vec2<u32>(0u, 0x80000000u);

fn rotl(v: vec4<u32>, n: u32) -> vec4<u32> {
    return (v << vec4<u32>(n)) | (v >> vec4<u32>(32u - n));
}

// ChaCha20 block `b` of (key rows k0, k1; stream s): its 16 output words as four rows.
fn block(k0: vec4<u32>, k1: vec4<u32>, b: vec2<u32>, s: vec2<u32>) -> array<vec4<u32>, 4> {
    let a0 = vec4<u32>(0x61707865u, 0x3320646eu, 0x79622d32u, 0x6b206574u);
    let d0 = vec4<u32>(b.x, b.y, s.x, s.y);
    var a = a0;
    var bb = k0;
    var c = k1;
    var d = d0;
    for (var i = 0u; i < 10u; i++) {
        // Columns.
        a += bb; d = rotl(d ^ a, 16u);
        c += d; bb = rotl(bb ^ c, 12u);
        a += bb; d = rotl(d ^ a, 8u);
        c += d; bb = rotl(bb ^ c, 7u);
        // Diagonals: rotate rows 1-3 so that the diagonals line up as columns.
        bb = bb.yzwx; c = c.zwxy; d = d.wxyz;
        a += bb; d = rotl(d ^ a, 16u);
        c += d; bb = rotl(bb ^ c, 12u);
        a += bb; d = rotl(d ^ a, 8u);
        c += d; bb = rotl(bb ^ c, 7u);
        bb = bb.wxyz; c = c.zwxy; d = d.yzwx;
    }
    return array<vec4<u32>, 4>(a + a0, bb + k0, c + k1, d + d0);
}

fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

// `v << pos` for v < 2^12, pos < 48.
fn shl_small(v: u32, pos: u32) -> vec2<u32> {
    if pos >= 32u {
        return vec2<u32>(0u, v << (pos - 32u));
    }
    if pos == 0u {
        return vec2<u32>(v, 0u);
    }
    return vec2<u32>(v << pos, v >> (32u - pos));
}

// Digit i for the uniform word w (its low `prec` bits; prec - slot bits is 40..63).
fn digit(i: u32, w: vec2<u32>) -> u32 {
    let d = P.v[7u + i];
    let sh = d.y - d.z - 32u;
    let slot = (w.y >> sh) & ((1u << d.z) - 1u);
    let e = tables[d.w + slot];
    let mask = (1u << sh) - 1u;
    let wh = w.y & mask;
    let eh = e.y & mask;
    let below = wh < eh || (wh == eh && w.x < e.x);
    return select(e.y >> sh, slot, below);
}

fn draw_one(row: vec4<u32>, wide: vec4<u32>) -> vec2<u32> {
    let gbits = (row.x >> 1u) & 0x7ffu;
    if gbits == 0u {
        return SLOW;
    }
    let nd = P.v[5].w;
    var r = vec2<u32>(0u, 0u);
    if nd > 0u {
        r = add64(r, shl_small(digit(0u, row.zw), P.v[7].x));
    }
    if nd > 1u {
        let w = vec2<u32>((row.x >> 12u) | (row.y << 20u), row.y >> 12u);
        r = add64(r, shl_small(digit(1u, w), P.v[8].x));
    }
    if nd > 2u {
        r = add64(r, shl_small(digit(2u, wide.xy), P.v[9].x));
    }
    if nd > 3u {
        r = add64(r, shl_small(digit(3u, wide.zw), P.v[10].x));
    }
    let m = P.v[6].xy;
    let g = countTrailingZeros(gbits);
    var x = r;
    for (var i = 0u; i < g; i++) {
        x = add64(x, m);
    }
    if (row.x & 1u) == 1u {
        if x.x == 0u && x.y == 0u {
            return SLOW;
        }
        let lo = ~x.x + 1u;
        return vec2<u32>(lo, ~x.y + select(0u, 1u, lo == 0u));
    }
    return x;
}

@compute @workgroup_size(64)
fn draw(@builtin(global_invocation_id) gid: vec3<u32>) {
    let idx = gid.y * (P.v[6].w * 64u) + gid.x;
    if idx >= P.v[6].z {
        return;
    }
    let stream = P.v[4].xy;
    let b = add64(P.v[4].zw, vec2<u32>(idx, 0u));
    var rows = block(P.v[0], P.v[1], b, stream);
    var wide = array<vec4<u32>, 4>(vec4<u32>(0u), vec4<u32>(0u), vec4<u32>(0u), vec4<u32>(0u));
    if P.v[5].w > 2u {
        wide = block(P.v[2], P.v[3], b, stream);
    }
    let shift = i32(P.v[5].x & 3u);
    let count = i32(P.v[5].z);
    for (var j = 0u; j < 4u; j++) {
        let rel = i32(idx * 4u + j) - shift;
        if rel >= 0 && rel < count {
            let d = draw_one(rows[j], wide[j]);
            out[rel] = d;
            if d.x == SLOW.x && d.y == SLOW.y {
                let i = atomicAdd(&slow[0], 1u);
                if i < P.v[11].x {
                    atomicStore(&slow[i + 1u], u32(rel));
                }
            }
        }
    }
}

// The host's finished SLOW draws written in one dispatch (`patch_draws`): binding 1 holds pairs
// of entries (index in `out`, 0) and (value low, high); P.v[11].y pairs, P.v[6].w
// workgroups in x. Indices are distinct (the host checks), so the order of writes is moot.
@compute @workgroup_size(64)
fn patch_draws(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.y * (P.v[6].w * 64u) + gid.x;
    if i >= P.v[11].y {
        return;
    }
    out[tables[2u * i].x] = tables[2u * i + 1u];
}
