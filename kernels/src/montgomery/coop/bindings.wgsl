// The parameters and bindings both forms of the cooperative programs share (coop.wgsl,
// subgroup.wgsl; `coop::gpu::with_sizes` appends this file to either). Its Params is the
// twin of `coop::gpu::Params`.

struct Params {
    items: u32,
    gx: u32,
    // fixed-base powers: the windows of this dispatch, the exponents' words, and whether
    // this dispatch is the last (it multiplies the factor and writes the result)
    win_from: u32,
    win_to: u32,
    exp_words: u32,
    last: u32,
    // fixed-base powers: the table's windows; variable-base powers: the exponent's
    windows: u32,
    // variable-base powers: the exponents' stride (0: one shared), and whether the bases
    // have 2 W limbs (reduced first)
    exp_stride: u32,
    wide: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
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
// fixed-base powers: the accumulators between dispatches (item-major); variable-base
// powers: per item its accumulator (W limbs), then its base's powers 0 to 15 (Montgomery
// form, W limbs each)
@group(0) @binding(5) var<storage, read_write> acc: array<u32>;
@group(0) @binding(6) var<storage, read_write> out: array<u32>;
