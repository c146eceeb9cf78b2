//! The digit arithmetic of `shaders/montgomery.wgsl`, loop for loop: Montgomery
//! multiplication (CIOS), the wide reduction, the masked subtraction and the full-scan
//! select, on 16-bit digits held one per `u32`. Also the host-side constants (`R^2 mod m`)
//! and the constant-time comparison used to check inputs.

/// Words -> 16-bit digits, one per `u32` (as the shader holds them).
pub(super) fn digits(words: &[u32], out: &mut [u32]) {
    for (k, &w) in words.iter().enumerate() {
        out[2 * k] = w & 0xffff;
        out[2 * k + 1] = w >> 16;
    }
}

pub(super) fn words(digits: &[u32]) -> Vec<u32> {
    digits
        .chunks_exact(2)
        .map(|d| d[0] | (d[1] << 16))
        .collect()
}

/// Working registers of one item (the shader's private arrays).
pub(super) struct Regs {
    pub(super) x: Vec<u32>,
    pub(super) y: Vec<u32>,
    pub(super) z: Vec<u32>,
    t: Vec<u32>,
    md: Vec<u32>,
    n0inv: u32,
}

impl Regs {
    /// Registers for modulus `m` (words) with `n0inv = -m^-1 mod 2^16`.
    pub(super) fn new(m: &[u32], n0inv: u32) -> Self {
        let dig = 2 * m.len();
        let mut md = vec![0; dig];
        digits(m, &mut md);
        Self {
            x: vec![0; dig],
            y: vec![0; dig],
            z: vec![0; dig],
            t: vec![0; dig + 2],
            md,
            n0inv,
        }
    }

    /// The reduction half of a CIOS step: `t = (t + q m) / 2^16`.
    fn reduce_step(&mut self) {
        let dig = self.md.len();
        let t = &mut self.t;
        let q = t[0].wrapping_mul(self.n0inv) & 0xffff;
        let mut c2 = t[0].wrapping_add(q.wrapping_mul(self.md[0])) >> 16;
        for j in 1..dig {
            let s = t[j]
                .wrapping_add(q.wrapping_mul(self.md[j]))
                .wrapping_add(c2);
            t[j - 1] = s & 0xffff;
            c2 = s >> 16;
        }
        let s2 = t[dig].wrapping_add(c2);
        t[dig - 1] = s2 & 0xffff;
        t[dig] = t[dig + 1].wrapping_add(s2 >> 16);
    }

    /// `z = t - m` if `t >= m`, else `t`, as a masked select.
    fn final_subtract(&mut self) {
        let dig = self.md.len();
        let mut borrow = 0u32;
        for j in 0..dig {
            let d = self.t[j].wrapping_sub(self.md[j]).wrapping_sub(borrow);
            self.z[j] = d & 0xffff;
            borrow = (d >> 16) & 1;
        }
        let keep = borrow & (1 - self.t[dig]);
        let take = keep.wrapping_sub(1);
        for j in 0..dig {
            self.z[j] = (self.z[j] & take) | (self.t[j] & !take);
        }
    }

    /// `z = x y R^-1 mod m`.
    pub(super) fn montmul(&mut self) {
        let dig = self.md.len();
        self.t.iter_mut().for_each(|v| *v = 0);
        for i in 0..dig {
            let yi = self.y[i];
            let mut c = 0u32;
            for j in 0..dig {
                let s = self.t[j]
                    .wrapping_add(self.x[j].wrapping_mul(yi))
                    .wrapping_add(c);
                self.t[j] = s & 0xffff;
                c = s >> 16;
            }
            let s1 = self.t[dig].wrapping_add(c);
            self.t[dig] = s1 & 0xffff;
            self.t[dig + 1] = s1 >> 16;
            self.reduce_step();
        }
        self.final_subtract();
    }

    /// `z = (x + y R) R^-1 mod m` for a double-width value below `m R`.
    pub(super) fn redc_wide(&mut self) {
        let dig = self.md.len();
        self.t[..dig].copy_from_slice(&self.x);
        self.t[dig] = 0;
        self.t[dig + 1] = 0;
        for i in 0..dig {
            let s1 = self.t[dig].wrapping_add(self.y[i]);
            self.t[dig] = s1 & 0xffff;
            self.t[dig + 1] = s1 >> 16;
            self.reduce_step();
        }
        self.final_subtract();
    }

    pub(super) fn z_to_x(&mut self) {
        self.x.copy_from_slice(&self.z);
    }

    /// `y = entry digit` of 16 entries of `w` words at `table`, reading all 16.
    pub(super) fn select(&mut self, table: &[u32], w: usize, digit: u32) {
        self.y.iter_mut().for_each(|v| *v = 0);
        for d in 0..16u32 {
            let mask = 0u32.wrapping_sub(u32::from(d == digit));
            for k in 0..w {
                let v = table[d as usize * w + k] & mask;
                self.y[2 * k] |= v & 0xffff;
                self.y[2 * k + 1] |= v >> 16;
            }
        }
    }
}

/// The 4-bit window `w` (from the least significant) of an exponent.
pub(super) fn window(exp: &[u32], w: usize) -> u32 {
    (exp[w / 8] >> (4 * (w % 8))) & 0xf
}

/// `1` if `a < b` (same length), else `0`, reading every word.
pub(super) fn lt(a: &[u32], b: &[u32]) -> u32 {
    let mut borrow = 0u64;
    for (&x, &y) in a.iter().zip(b) {
        let d = u64::from(x).wrapping_sub(u64::from(y)).wrapping_sub(borrow);
        borrow = (d >> 63) & 1;
    }
    borrow as u32
}

/// `R^2 mod m` by `2 * 32 * words` constant-time doublings of 1.
pub(super) fn r_squared(m: &[u32]) -> Vec<u32> {
    let w = m.len();
    let mut x = vec![0u32; w];
    x[0] = 1;
    let mut d = vec![0u32; w];
    for _ in 0..64 * w {
        // x = 2x (with its carry bit), then subtract m if 2x >= m.
        let mut carry = 0u32;
        for v in x.iter_mut() {
            let nv = (*v << 1) | carry;
            carry = *v >> 31;
            *v = nv;
        }
        let mut borrow = 0u64;
        for k in 0..w {
            let s = u64::from(x[k])
                .wrapping_sub(u64::from(m[k]))
                .wrapping_sub(borrow);
            d[k] = s as u32;
            borrow = (s >> 63) & 1;
        }
        // Keep x only when it is below m: no carry out and a borrow.
        let keep = (borrow as u32) & (1 - carry);
        let take = keep.wrapping_sub(1);
        for k in 0..w {
            x[k] = (d[k] & take) | (x[k] & !take);
        }
    }
    x
}

/// `x y R^-1 mod m` for one pair of numbers below `m` (words in, words out).
pub(super) fn mont_words(m: &[u32], n0inv: u32, x: &[u32], y: &[u32]) -> Vec<u32> {
    let mut r = Regs::new(m, n0inv);
    digits(x, &mut r.x);
    digits(y, &mut r.y);
    r.montmul();
    words(&r.z)
}
