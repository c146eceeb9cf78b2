//! The ChaCha20 keystream (Bernstein's original layout: a 64-bit block counter in state
//! words 12-13 and a 64-bit nonce, the "stream", in words 14-15; the layout `rand_chacha`'s
//! `ChaCha20Rng` uses, so the two give the same bytes) at SIMD speed: eight blocks at once,
//! each of the 16 state words held as eight lanes, so every quarter-round is eight-wide
//! vector arithmetic. On x86-64 with AVX2 (detected at run time) the eight lanes are one
//! 256-bit register; elsewhere the same code compiles to the target's vectors.
//!
//! Positions count 64-bit keystream words: word `p` is keystream bytes `8p .. 8p + 8`,
//! little-endian, i.e. what `ChaCha20Rng::next_u64` returns after `set_word_pos(2 p)`.
//!
//! The GPU twin is the `block` function of `shaders/dyadic.wgsl` (the `dyadic` kernel).

/// "expand 32-byte k".
const SIGMA: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];

/// Blocks computed together.
const LANES: usize = 8;

/// 64-bit words per block.
const WORDS_PER_BLOCK: u64 = 8;

/// A ChaCha20 keystream: a 256-bit key and a 64-bit stream (nonce).
#[derive(Clone)]
pub struct ChaCha20 {
    key: [u32; 8],
    stream: [u32; 2],
}

impl std::fmt::Debug for ChaCha20 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is secret.
        write!(f, "ChaCha20(stream {})", self.stream())
    }
}

impl ChaCha20 {
    /// The keystream of `key` (32 bytes, read as eight little-endian words) and `stream`.
    pub fn new(key: &[u8; 32], stream: u64) -> Self {
        let mut k = [0u32; 8];
        for (w, c) in k.iter_mut().zip(key.chunks_exact(4)) {
            *w = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        }
        Self {
            key: k,
            stream: [stream as u32, (stream >> 32) as u32],
        }
    }

    /// The key and stream as state words 4-11 and 14-15 (the GPU twin's parameters).
    #[cfg(feature = "gpu")]
    pub(crate) fn state_words(&self) -> ([u32; 8], [u32; 2]) {
        (self.key, self.stream)
    }

    fn stream(&self) -> u64 {
        u64::from(self.stream[0]) | (u64::from(self.stream[1]) << 32)
    }

    /// Block `counter` (16 words): the scalar path, for random access.
    pub fn block(&self, counter: u64) -> [u32; 16] {
        let mut x = self.initial(counter);
        let init = x;
        double_rounds(&mut x);
        for (o, i) in x.iter_mut().zip(init) {
            *o = o.wrapping_add(i);
        }
        x
    }

    fn initial(&self, counter: u64) -> [u32; 16] {
        let mut x = [0u32; 16];
        x[..4].copy_from_slice(&SIGMA);
        x[4..12].copy_from_slice(&self.key);
        x[12] = counter as u32;
        x[13] = (counter >> 32) as u32;
        x[14] = self.stream[0];
        x[15] = self.stream[1];
        x
    }

    /// The 64-bit keystream words `pos .. pos + out.len()`.
    pub fn fill_u64(&self, pos: u64, out: &mut [u64]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above), the only requirement of
            // calling a function compiled with `target_feature(enable = "avx2")`.
            #[allow(unsafe_code)]
            unsafe {
                fill_avx2(self, pos, out)
            };
            return;
        }
        fill_generic(self, pos, out);
    }

    /// Keystream words `pos` and `pos + 1` for an even `pos` (one block; random access).
    pub fn pair(&self, pos: u64) -> [u64; 2] {
        debug_assert_eq!(pos % 2, 0);
        let b = self.block(pos / WORDS_PER_BLOCK);
        let i = 2 * (pos % WORDS_PER_BLOCK) as usize;
        [
            u64::from(b[i]) | (u64::from(b[i + 1]) << 32),
            u64::from(b[i + 2]) | (u64::from(b[i + 3]) << 32),
        ]
    }

    /// One 64-bit keystream word at `pos` (random access; scalar).
    pub fn word(&self, pos: u64) -> u64 {
        let b = self.block(pos / WORDS_PER_BLOCK);
        let i = 2 * (pos % WORDS_PER_BLOCK) as usize;
        u64::from(b[i]) | (u64::from(b[i + 1]) << 32)
    }
}

/// Ten double rounds (four columns, then four diagonals), every index a constant so that
/// the 16 state values stay in registers.
#[inline(always)]
fn double_rounds<L: Lane>(x: &mut [L; 16]) {
    macro_rules! qr {
        ($a:literal, $b:literal, $c:literal, $d:literal) => {{
            let (mut va, mut vb, mut vc, mut vd) = (x[$a], x[$b], x[$c], x[$d]);
            quarter(&mut va, &mut vb, &mut vc, &mut vd);
            x[$a] = va;
            x[$b] = vb;
            x[$c] = vc;
            x[$d] = vd;
        }};
    }
    for _ in 0..10 {
        qr!(0, 4, 8, 12);
        qr!(1, 5, 9, 13);
        qr!(2, 6, 10, 14);
        qr!(3, 7, 11, 15);
        qr!(0, 5, 10, 15);
        qr!(1, 6, 11, 12);
        qr!(2, 7, 8, 13);
        qr!(3, 4, 9, 14);
    }
}

/// A value that supports the quarter-round's operations: one word, or eight lanes.
trait Lane: Copy {
    fn add(&mut self, o: Self);
    fn xor_rotl(&mut self, o: Self, r: u32);
}

impl Lane for u32 {
    #[inline(always)]
    fn add(&mut self, o: Self) {
        *self = self.wrapping_add(o);
    }
    #[inline(always)]
    fn xor_rotl(&mut self, o: Self, r: u32) {
        *self = (*self ^ o).rotate_left(r);
    }
}

impl Lane for [u32; LANES] {
    #[inline(always)]
    fn add(&mut self, o: Self) {
        for (a, b) in self.iter_mut().zip(o) {
            *a = a.wrapping_add(b);
        }
    }
    #[inline(always)]
    fn xor_rotl(&mut self, o: Self, r: u32) {
        for (a, b) in self.iter_mut().zip(o) {
            *a = (*a ^ b).rotate_left(r);
        }
    }
}

#[inline(always)]
fn quarter<L: Lane>(a: &mut L, b: &mut L, c: &mut L, d: &mut L) {
    a.add(*b);
    d.xor_rotl(*a, 16);
    c.add(*d);
    b.xor_rotl(*c, 12);
    a.add(*b);
    d.xor_rotl(*a, 8);
    c.add(*d);
    b.xor_rotl(*c, 7);
}

/// Eight consecutive blocks from `counter`, as 64 words of 64 bits in keystream order.
#[inline(always)]
fn blocks8(c: &ChaCha20, counter: u64, out: &mut [u64; 64]) {
    let init = c.initial(0);
    let mut x = [[0u32; LANES]; 16];
    for (xi, v) in x.iter_mut().zip(init) {
        *xi = [v; LANES];
    }
    x[12] = std::array::from_fn(|l| counter.wrapping_add(l as u64) as u32);
    x[13] = std::array::from_fn(|l| (counter.wrapping_add(l as u64) >> 32) as u32);
    let start = x;
    double_rounds(&mut x);
    for (xi, s) in x.iter_mut().zip(start) {
        xi.add(s);
    }
    for l in 0..LANES {
        for w in 0..8 {
            out[l * 8 + w] = u64::from(x[2 * w][l]) | (u64::from(x[2 * w + 1][l]) << 32);
        }
    }
}

#[inline(always)]
fn fill_generic(c: &ChaCha20, pos: u64, out: &mut [u64]) {
    let mut buf = [0u64; 64];
    let mut at = 0usize;
    while at < out.len() {
        let p = pos + at as u64;
        let (block, skip) = (p / WORDS_PER_BLOCK, (p % WORDS_PER_BLOCK) as usize);
        blocks8(c, block, &mut buf);
        let take = (64 - skip).min(out.len() - at);
        out[at..at + take].copy_from_slice(&buf[skip..skip + take]);
        at += take;
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn fill_avx2(c: &ChaCha20, pos: u64, out: &mut [u64]) {
    let mut buf = [0u64; 64];
    let mut at = 0usize;
    while at < out.len() {
        let p = pos + at as u64;
        let (block, skip) = (p / WORDS_PER_BLOCK, (p % WORDS_PER_BLOCK) as usize);
        // Whole groups of eight blocks go straight to the output; the ends through `buf`.
        if let (0, Some(whole)) = (skip, out.get_mut(at..at + 64))
            && let Ok(whole) = <&mut [u64; 64]>::try_from(whole)
        {
            avx2::blocks8(c, block, whole);
            at += 64;
            continue;
        }
        avx2::blocks8(c, block, &mut buf);
        let take = (64 - skip).min(out.len() - at);
        out[at..at + take].copy_from_slice(&buf[skip..skip + take]);
        at += take;
    }
}

/// [`blocks8`] in AVX2 registers: one `__m256i` per state word, eight blocks per register.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{ChaCha20, LANES};
    use std::arch::x86_64::*;

    #[inline]
    #[target_feature(enable = "avx2")]
    fn rotl<const L: i32, const R: i32>(v: __m256i) -> __m256i {
        _mm256_or_si256(_mm256_slli_epi32::<L>(v), _mm256_srli_epi32::<R>(v))
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn quarter(x: &mut [__m256i; 16], a: usize, b: usize, c: usize, d: usize) {
        // Byte shuffles rotate by 16 and 8 within each 32-bit lane.
        let r16 = _mm256_setr_epi8(
            2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11,
            8, 9, 14, 15, 12, 13,
        );
        let r8 = _mm256_setr_epi8(
            3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14, 3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9,
            10, 15, 12, 13, 14,
        );
        x[a] = _mm256_add_epi32(x[a], x[b]);
        x[d] = _mm256_shuffle_epi8(_mm256_xor_si256(x[d], x[a]), r16);
        x[c] = _mm256_add_epi32(x[c], x[d]);
        x[b] = rotl::<12, 20>(_mm256_xor_si256(x[b], x[c]));
        x[a] = _mm256_add_epi32(x[a], x[b]);
        x[d] = _mm256_shuffle_epi8(_mm256_xor_si256(x[d], x[a]), r8);
        x[c] = _mm256_add_epi32(x[c], x[d]);
        x[b] = rotl::<7, 25>(_mm256_xor_si256(x[b], x[c]));
    }

    #[target_feature(enable = "avx2")]
    pub(super) fn blocks8(c: &ChaCha20, counter: u64, out: &mut [u64; 64]) {
        let init = c.initial(0);
        let mut x = [_mm256_setzero_si256(); 16];
        for (xi, v) in x.iter_mut().zip(init) {
            *xi = _mm256_set1_epi32(v as i32);
        }
        let n: [u64; LANES] = std::array::from_fn(|l| counter.wrapping_add(l as u64));
        let lo: [u32; LANES] = std::array::from_fn(|l| n[l] as u32);
        let hi: [u32; LANES] = std::array::from_fn(|l| (n[l] >> 32) as u32);
        x[12] = bytemuck::cast(lo);
        x[13] = bytemuck::cast(hi);
        let start = x;
        for _ in 0..10 {
            quarter(&mut x, 0, 4, 8, 12);
            quarter(&mut x, 1, 5, 9, 13);
            quarter(&mut x, 2, 6, 10, 14);
            quarter(&mut x, 3, 7, 11, 15);
            quarter(&mut x, 0, 5, 10, 15);
            quarter(&mut x, 1, 6, 11, 12);
            quarter(&mut x, 2, 7, 8, 13);
            quarter(&mut x, 3, 4, 9, 14);
        }
        for (xi, s) in x.iter_mut().zip(start) {
            *xi = _mm256_add_epi32(*xi, s);
        }
        // An in-register transpose: block `l` (lane `l`) becomes `out[8 l .. 8 l + 8]`, its
        // 64-bit word `w` the 32-bit state words `2 w` (low) and `2 w + 1` (high).
        // `lo[w]` holds word `w` of blocks 0, 1, 4, 5; `hi[w]` of blocks 2, 3, 6, 7.
        let lo: [__m256i; 8] =
            std::array::from_fn(|w| _mm256_unpacklo_epi32(x[2 * w], x[2 * w + 1]));
        let hi: [__m256i; 8] =
            std::array::from_fn(|w| _mm256_unpackhi_epi32(x[2 * w], x[2 * w + 1]));
        let mut rows = [_mm256_setzero_si256(); 16];
        for (half, v) in [(0usize, &lo), (1, &hi)] {
            for q in 0..2 {
                let (a, b, cc, d) = (v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3]);
                let (t0, t1) = (_mm256_unpacklo_epi64(a, b), _mm256_unpackhi_epi64(a, b));
                let (t2, t3) = (_mm256_unpacklo_epi64(cc, d), _mm256_unpackhi_epi64(cc, d));
                // Blocks 2 half + {0, 1, 4, 5}; row index = 2 block + q.
                let first = 2 * half;
                rows[2 * first + q] = _mm256_permute2x128_si256::<0x20>(t0, t2);
                rows[2 * (first + 1) + q] = _mm256_permute2x128_si256::<0x20>(t1, t3);
                rows[2 * (first + 4) + q] = _mm256_permute2x128_si256::<0x31>(t0, t2);
                rows[2 * (first + 5) + q] = _mm256_permute2x128_si256::<0x31>(t1, t3);
            }
        }
        let dst: &mut [[u64; 4]; 16] = bytemuck::cast_mut(out);
        for (d, r) in dst.iter_mut().zip(rows) {
            *d = bytemuck::cast(r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_chacha::rand_core::{RngCore, SeedableRng};

    fn reference(key: [u8; 32], stream: u64, pos: u64, n: usize) -> Vec<u64> {
        let mut r = ChaCha20Rng::from_seed(key);
        r.set_stream(stream);
        r.set_word_pos(u128::from(pos) * 2);
        (0..n).map(|_| r.next_u64()).collect()
    }

    /// Every path (eight-wide with AVX2 where the CPU has it, the portable one, the scalar
    /// block) gives `rand_chacha`'s bytes, at any start and length, across the counter's
    /// 32-bit carry.
    #[test]
    fn equals_rand_chacha_everywhere() {
        let key: [u8; 32] = std::array::from_fn(|i| (i * 7 + 3) as u8);
        let c = ChaCha20::new(&key, 0x0123_4567_89ab_cdef);
        for (pos, n) in [(0u64, 1usize), (0, 64), (3, 130), (61, 200), (1000, 7)] {
            let want = reference(key, 0x0123_4567_89ab_cdef, pos, n);
            let mut got = vec![0u64; n];
            c.fill_u64(pos, &mut got);
            assert_eq!(got, want, "fill at {pos}, {n} words");
            let mut portable = vec![0u64; n];
            fill_generic(&c, pos, &mut portable);
            assert_eq!(portable, want, "portable at {pos}");
            for (i, w) in want.iter().enumerate() {
                let p = pos + i as u64;
                assert_eq!(c.word(p), *w, "scalar word {p}");
                assert_eq!(c.pair(p & !1)[(p & 1) as usize], *w, "pair at {p}");
            }
        }
        // Blocks 2^32 - 3 .. 2^32 + 5: the counter's high word is used.
        let pos = ((1u64 << 32) - 3) * 8;
        let mut got = vec![0u64; 64];
        c.fill_u64(pos, &mut got);
        assert_eq!(got, reference(key, 0x0123_4567_89ab_cdef, pos, 64));
        // A different stream or key gives other bytes.
        assert_ne!(ChaCha20::new(&key, 1).word(0), c.word(0));
    }

    /// RFC 7539 section 2.3.2's block (its 32-bit counter 1 and 96-bit nonce
    /// 00000009:0000004a:00000000 are this layout's counter `1 | 0x0900_0000 << 32` and
    /// stream `0x4a00_0000`).
    #[test]
    fn rfc7539_block() {
        let key: [u8; 32] = std::array::from_fn(|i| i as u8);
        let c = ChaCha20::new(&key, 0x4a00_0000);
        let b = c.block(1 | (0x0900_0000 << 32));
        assert_eq!(
            &b[..4],
            &[0xe4e7_f110, 0x1559_3bd1, 0x1fdd_0f50, 0xc471_20a3]
        );
        assert_eq!(b[15], 0x4e3c_50a2);
    }

    /// Not a test: `cargo test --release -p kinsey-kernels --lib chacha::tests::speed -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn speed() {
        let c = ChaCha20::new(&[9; 32], 1);
        let mut out = vec![0u64; 1 << 20];
        let t = std::time::Instant::now();
        for r in 0..20 {
            c.fill_u64(r << 20, &mut out);
        }
        let s = t.elapsed().as_secs_f64();
        let mut r = ChaCha20Rng::from_seed([9; 32]);
        let t = std::time::Instant::now();
        for _ in 0..20 {
            out.iter_mut().for_each(|o| *o = r.next_u64());
        }
        let s2 = t.elapsed().as_secs_f64();
        let bytes = 20.0 * 8.0 * (1 << 20) as f64;
        println!(
            "kinsey {:.2} GB/s, rand_chacha {:.2} GB/s ({})",
            bytes / s / 1e9,
            bytes / s2 / 1e9,
            out[5]
        );
    }
}
