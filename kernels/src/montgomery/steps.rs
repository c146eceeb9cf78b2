//! The micro-operation programs of `shaders/montgomery.wgsl`'s `step` entry point, for
//! software rasterisers: each operation a list of loads, Montgomery multiplications in
//! steps of the outer loop, selects, copies and a store, dispatched one by one so that no
//! invocation runs past llvmpipe's 65,535 loop iterations. A program depends only on public
//! sizes. `fused.rs` decides when these run instead of the fused entry points.

/// Loop iterations one invocation may run: llvmpipe (lavapipe) stops an invocation's loops
/// after 65,535 iterations in all, so every micro-operation stays below this.
pub(super) const LOOP_BUDGET: usize = 60_000;

/// The shader's micro-operations.
#[derive(Debug, Clone, Copy)]
#[repr(u32)]
pub(super) enum Op {
    MmSteps = 1,
    RedcSteps = 4,
    Copy = 5,
    LoadA = 6,
    LoadB = 7,
    LoadConst = 8,
    LoadOne = 9,
    SelA = 10,
    SelTb = 11,
    Store = 12,
}

/// A program: micro-operations with their two arguments.
pub(super) struct Program {
    dig: u32,
    pub(super) ops: Vec<(Op, u32, u32)>,
}

impl Program {
    fn new(words: usize) -> Self {
        Self {
            dig: 2 * words as u32,
            ops: Vec::new(),
        }
    }

    // Register offsets, as in the shader.
    fn x(&self) -> u32 {
        0
    }
    fn y(&self) -> u32 {
        self.dig
    }
    fn z(&self) -> u32 {
        2 * self.dig
    }
    fn b(&self) -> u32 {
        4 * self.dig + 2
    }
    fn tb(&self, d: u32) -> u32 {
        5 * self.dig + 2 + d * self.dig
    }

    fn op(&mut self, op: Op, a0: u32, a1: u32) {
        self.ops.push((op, a0, a1));
    }

    /// Outer iterations per step: each costs about `2 dig` inner iterations.
    fn step(&self) -> u32 {
        ((LOOP_BUDGET / (2 * self.dig as usize + 2)) as u32).clamp(1, self.dig)
    }

    /// The outer loop of `op` in steps; flags 1: square (Y = X first), 2: X = Z after.
    fn steps(&mut self, op: Op, flags: u32) {
        let step = self.step();
        let mut i = 0;
        while i < self.dig {
            let end = (i + step).min(self.dig);
            self.op(op, i, end | (flags << 16));
            i = end;
        }
    }

    /// Z = X Y R^-1 mod m.
    fn montmul(&mut self) {
        self.steps(Op::MmSteps, 0);
    }

    /// X = X Y R^-1 mod m.
    fn montmul_x(&mut self) {
        self.steps(Op::MmSteps, 2);
    }

    /// X = X^2 R^-1 mod m.
    fn square_x(&mut self) {
        self.steps(Op::MmSteps, 3);
    }

    /// Z = (X + Y R) R^-1 mod m.
    fn redc_wide(&mut self) {
        self.steps(Op::RedcSteps, 0);
    }

    fn copy(&mut self, dst: u32, src: u32) {
        self.op(Op::Copy, dst, src);
    }

    /// Y = R^2 mod m.
    fn y_r2(&mut self) {
        let (y, dig) = (self.y(), self.dig);
        self.op(Op::LoadConst, y, dig);
    }

    /// `a_i b_i mod m`.
    pub(super) fn modmul(words: usize) -> Self {
        let mut p = Self::new(words);
        let (x, y) = (p.x(), p.y());
        p.op(Op::LoadA, x, 0);
        p.op(Op::LoadB, y, 0);
        p.montmul_x();
        p.y_r2();
        p.montmul();
        p.op(Op::Store, 0, 0);
        p
    }

    /// `b_i init prod_w table[w][digit]`.
    pub(super) fn fixed_pow(words: usize, windows: u32) -> Self {
        let mut p = Self::new(words);
        let (x, y) = (p.x(), p.y());
        // The initial accumulator follows the entries in the table's buffer.
        p.op(Op::LoadA, x, windows * 16 * words as u32);
        for w in 0..windows {
            p.op(Op::SelA, w, 0);
            p.montmul_x();
        }
        p.op(Op::LoadB, y, 0);
        p.montmul();
        p.op(Op::Store, 0, 0);
        p
    }

    /// `x_i ^ e_i`, the base reduced first when `wide`.
    pub(super) fn modpow(words: usize, wide: bool, windows: u32) -> Self {
        let mut p = Self::new(words);
        let (x, y, z, b) = (p.x(), p.y(), p.z(), p.b());
        p.op(Op::LoadA, x, 0);
        if wide {
            p.op(Op::LoadA, y, words as u32);
            p.redc_wide();
            p.copy(x, z);
            p.y_r2();
            p.montmul();
            p.copy(x, z);
        }
        p.y_r2();
        p.montmul();
        // Z = base R; table entry d = base^d R, entry 0 = R.
        p.copy(b, z);
        p.op(Op::LoadOne, x, 0);
        p.y_r2();
        p.montmul();
        for d in 0..16 {
            let t = p.tb(d);
            p.copy(t, z);
            p.copy(x, z);
            p.copy(y, b);
            p.montmul();
        }
        let t0 = p.tb(0);
        p.copy(x, t0);
        for w in (0..windows).rev() {
            for _ in 0..4 {
                p.square_x();
            }
            p.op(Op::SelTb, w, 0);
            p.montmul_x();
        }
        p.op(Op::LoadOne, y, 0);
        p.montmul();
        p.op(Op::Store, 0, 0);
        p
    }
}

/// Digits (16 bits, one per word) of the working set per item: X, Y, Z, T, and for modpow
/// the base and its table of 16 powers.
pub(super) fn regs(words: usize, pow: bool) -> usize {
    let dig = 2 * words;
    if pow {
        4 * dig + dig + 2 + 16 * dig
    } else {
        3 * dig + dig + 2
    }
}
