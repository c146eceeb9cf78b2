//! The `dyadic` kernel's CPU twin: the keystreams eight blocks at a time
//! ([`ChaCha20::fill_u64`]), then the table draws (four at a time with AVX2 for laws of
//! one or two digits, one at a time otherwise).

use super::tables::{DyadicTables, EXTRA_WORDS, Prepared};
use crate::chacha::ChaCha20;

/// Counters per batch (16 KiB of words: in L1).
const BATCH: usize = 1024;

/// The draws of counters `first .. first + out.len()` under `tables`,
/// [`SLOW`](super::SLOW) where the fast path cannot finish one. `wide` is read only for laws with more than two digits.
pub fn fill(
    keystream: &ChaCha20,
    wide: &ChaCha20,
    tables: &DyadicTables,
    first: u64,
    out: &mut [i64],
) {
    let e = tables.extra_words();
    let prepared = tables.prepared();
    let mut words = [[0u64; 2]; BATCH];
    for (c, chunk) in out.chunks_mut(BATCH).enumerate() {
        let at = first + (c * BATCH) as u64;
        let w = &mut words[..chunk.len()];
        keystream.fill_u64(2 * at, w.as_flattened_mut());
        if let Some(p) = &prepared {
            draws(p, w, chunk);
        } else {
            // Three or four digits: one wide word each beyond the second.
            // Zeroed only for such laws (a memset of 16 KiB per batch otherwise).
            let mut extra = [0u64; EXTRA_WORDS * BATCH];
            let x = &mut extra[..EXTRA_WORDS * chunk.len()];
            wide.fill_u64(EXTRA_WORDS as u64 * at, x);
            for ((o, w), x) in chunk
                .iter_mut()
                .zip(w.iter())
                .zip(x.chunks_exact(EXTRA_WORDS))
            {
                *o = tables.fast_or_slow(*w, &x[..e]);
            }
        }
    }
}

/// The table draws of counters from their two words (`words[i]`, however the caller
/// gathered them), [`SLOW`](super::SLOW) where the fast path cannot finish one; `false`,
/// nothing written, for a law that also reads wide words (more than two digits).
pub fn draws_from_words(tables: &DyadicTables, words: &[[u64; 2]], out: &mut [i64]) -> bool {
    match tables.prepared() {
        Some(p) => {
            draws(&p, words, out);
            true
        }
        None => false,
    }
}

/// Every counter's draw under a law of at most two digits: four at a time in AVX2
/// registers where the CPU has them, else the scalar loop.
fn draws(p: &Prepared<'_>, words: &[[u64; 2]], out: &mut [i64]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above), the only requirement of
        // calling a function compiled with `target_feature(enable = "avx2")`.
        #[allow(unsafe_code)]
        unsafe {
            super::avx2::draws(p, words, out)
        };
        return;
    }
    p.draws(words, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dyadic::tables::{SLOW, random_tables};

    /// Sequential fill equals the draw of each counter from its own words (random access).
    #[test]
    fn fill_equals_per_counter_draws() {
        let (k, wk) = (ChaCha20::new(&[5; 32], 9), ChaCha20::new(&[6; 32], 9));
        for digits in [1, 2, 3, 4] {
            let t = random_tables(digits, 3001, digits as u64);
            let mut out = vec![0i64; 2500];
            fill(&k, &wk, &t, 1_000_003, &mut out);
            let mut slow = 0;
            for (i, &z) in out.iter().enumerate() {
                let id = 1_000_003 + i as u64;
                let x = wk.pair(2 * id);
                let want = t
                    .fast(k.pair(2 * id), &x[..t.extra_words()])
                    .unwrap_or(SLOW);
                assert_eq!(z, want, "{digits} digits, counter {id}");
                slow += usize::from(z == SLOW);
            }
            assert!(slow < 10, "{slow} slow draws of 2500");
            // The same draws from the words gathered in another order (laws of up to two
            // digits; the others say they need the wide words).
            let order: Vec<usize> = (0..out.len()).rev().step_by(3).collect();
            let words: Vec<[u64; 2]> = order
                .iter()
                .map(|&i| k.pair(2 * (1_000_003 + i as u64)))
                .collect();
            let mut got = vec![0i64; words.len()];
            let done = draws_from_words(&t, &words, &mut got);
            assert_eq!(done, digits <= 2, "{digits} digits");
            if done {
                let want: Vec<i64> = order.iter().map(|&i| out[i]).collect();
                assert_eq!(got, want, "{digits} digits, gathered");
            }
        }
    }

    /// Nanoseconds per counter of `fill`, of its keystream alone and of its draws alone
    /// (`cargo test --release -p kinsey-kernels --lib dyadic::cpu::tests::fill_speed --
    /// --ignored --nocapture`).
    #[test]
    #[ignore]
    fn fill_speed() {
        let (k, wk) = (ChaCha20::new(&[5; 32], 9), ChaCha20::new(&[6; 32], 9));
        let mut t = random_tables(2, 3001 << 8, 3);
        for (d, bits) in t.digits.iter_mut().zip([8u32, 12]) {
            let low = d.prec - bits;
            d.slot_bits = bits;
            d.table = (0..1u64 << bits)
                .map(|i| ((i * 7 % (1 << bits)) << low) | (i << 20))
                .collect();
        }
        let mut out = vec![0i64; 2047];
        let n = 20_000;
        let t0 = std::time::Instant::now();
        for r in 0..n {
            fill(&k, &wk, &t, r * 2047, &mut out);
        }
        let s = t0.elapsed().as_secs_f64();
        let mut words = vec![0u64; 2 * 2047];
        let t1 = std::time::Instant::now();
        for r in 0..n {
            k.fill_u64(r * 4094, &mut words);
        }
        let s1 = t1.elapsed().as_secs_f64();
        let c = (n * 2047) as f64;
        let wp: Vec<[u64; 2]> = words.chunks_exact(2).map(|p| [p[0], p[1]]).collect();
        let p = t.prepared().expect("two digits");
        let t2 = std::time::Instant::now();
        for _ in 0..n {
            draws(&p, &wp, &mut out);
        }
        println!(
            "draws alone {:.2} ns/counter",
            t2.elapsed().as_secs_f64() / c * 1e9
        );
        println!(
            "fill {:.2} ns/counter, keystream {:.2} ns/counter ({})",
            s / c * 1e9,
            s1 / c * 1e9,
            out[7] + words[3] as i64
        );
    }
}
