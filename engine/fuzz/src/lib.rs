//! Property-based fuzzing of kinsey's decoders, shared by the harnesses that sit beside each
//! decoder (`#[test] fn fuzz_*` in the crate that owns it).
//!
//! **Why proptest and not cargo-fuzz.** CI runs stable Rust on two cores; cargo-fuzz needs a
//! nightly toolchain and libFuzzer, and its targets live outside `cargo test`, so CI would
//! need a second toolchain and a second build of the workspace (tfhe alone is 8 minutes).
//! proptest runs inside the test binaries CI already builds, reaches crate-private decoders
//! (the harnesses are unit tests), and shrinks a failure to a minimal list of mutations of a
//! valid input. What it gives up is coverage guidance; the mutations below make up for part
//! of it by starting from valid encodings (so most cases pass the first checks and reach the
//! deep ones) and by splicing in the tokens that break parsers (lengths of 2^31, `NaN`,
//! `1e308`, 2^64, quotes and brackets).
//!
//! **Budget.** `KINSEY_FUZZ_CASES` cases per harness (default 256: a few seconds in CI);
//! the long runs recorded in RELIABILITY.md use 1,000,000. A harness's closure returns
//! `Err` when a decoded value breaks a property (the decoder's own errors are expected
//! outcomes); a panic is caught and reported as a failure with the shrunk input.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};

/// Cases per harness: `KINSEY_FUZZ_CASES`, or 256.
pub fn budget() -> u32 {
    std::env::var("KINSEY_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(256)
}

/// Byte strings that break parsers: numbers at and past the limits of every integer and
/// float type, non-finite floats, structure characters and little-endian lengths.
const TOKENS: &[&[u8]] = &[
    b"0",
    b"-1",
    b"-0",
    b"1e308",
    b"-1e308",
    b"1e-308",
    b"1e999",
    b"NaN",
    b"nan",
    b"inf",
    b"-inf",
    b"4294967296",
    b"18446744073709551616",
    b"-9223372036854775809",
    b"340282366920938463463374607431768211456",
    b"\"",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"=",
    b"#",
    b"\n",
    b" ",
    b"\0",
    b"\xff\xff\xff\xff",
    b"\xff\xff\xff\x7f",
    b"\x00\x00\x00\x80",
    b"\x00\x00\x00\x00",
    b"\x01\x00\x00\x00",
];

/// One edit of a byte string (positions are taken modulo its length when applied).
#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Set(usize, u8),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    Truncate(usize),
    Duplicate(usize, usize),
    /// Insert token `t` at a position, or replace the run of digits there with it.
    Token(usize, usize, bool),
    /// Copy a piece of another seed over this one.
    Splice(usize, usize, usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let pos = any::<usize>();
    prop_oneof![
        (pos, 0u8..8).prop_map(|(p, b)| Mutation::Flip(p, b)),
        (pos, any::<u8>()).prop_map(|(p, v)| Mutation::Set(p, v)),
        (pos, prop::collection::vec(any::<u8>(), 1..16)).prop_map(|(p, v)| Mutation::Insert(p, v)),
        (pos, 1usize..64).prop_map(|(p, n)| Mutation::Delete(p, n)),
        pos.prop_map(Mutation::Truncate),
        (pos, 1usize..64).prop_map(|(p, n)| Mutation::Duplicate(p, n)),
        (pos, 0..TOKENS.len(), any::<bool>()).prop_map(|(p, t, r)| Mutation::Token(p, t, r)),
        (any::<usize>(), pos, pos, 1usize..256)
            .prop_map(|(s, a, b, n)| Mutation::Splice(s, a, b, n)),
    ]
}

fn apply(seeds: &[Vec<u8>], mut v: Vec<u8>, m: &Mutation) -> Vec<u8> {
    let at = |p: usize, len: usize| if len == 0 { 0 } else { p % len };
    match m {
        Mutation::Flip(p, b) if !v.is_empty() => {
            let i = at(*p, v.len());
            v[i] ^= 1 << b;
        }
        Mutation::Set(p, x) if !v.is_empty() => {
            let i = at(*p, v.len());
            v[i] = *x;
        }
        Mutation::Insert(p, bytes) => {
            let i = at(*p, v.len() + 1);
            v.splice(i..i, bytes.iter().copied());
        }
        Mutation::Delete(p, n) if !v.is_empty() => {
            let i = at(*p, v.len());
            let end = (i + n).min(v.len());
            v.drain(i..end);
        }
        Mutation::Truncate(p) => v.truncate(at(*p, v.len() + 1)),
        Mutation::Duplicate(p, n) if !v.is_empty() => {
            let i = at(*p, v.len());
            let end = (i + n).min(v.len());
            let piece = v[i..end].to_vec();
            v.splice(end..end, piece);
        }
        Mutation::Token(p, t, replace) => {
            let i = at(*p, v.len() + 1);
            let mut end = i;
            if *replace {
                while end < v.len() && (v[end].is_ascii_digit() || b"-+.eE".contains(&v[end])) {
                    end += 1;
                }
            }
            v.splice(i..end, TOKENS[*t].iter().copied());
        }
        Mutation::Splice(s, a, b, n) => {
            let other = &seeds[s % seeds.len()];
            if !other.is_empty() {
                let from = at(*a, other.len());
                let piece = &other[from..(from + n).min(other.len())];
                let to = at(*b, v.len() + 1);
                let end = (to + piece.len()).min(v.len());
                v.splice(to..end, piece.iter().copied());
            }
        }
        _ => {}
    }
    v
}

/// Inputs made from one of `seeds` (valid encodings) by up to 8 mutations; a tenth of them
/// are the seed itself or random bytes.
pub fn inputs(seeds: Vec<Vec<u8>>) -> BoxedStrategy<Vec<u8>> {
    assert!(!seeds.is_empty(), "a fuzz harness needs at least one seed");
    let n = seeds.len();
    let mutated = (0..n, prop::collection::vec(mutation(), 0..8))
        .prop_map(move |(i, ms)| ms.iter().fold(seeds[i].clone(), |v, m| apply(&seeds, v, m)));
    prop_oneof![
        9 => mutated,
        1 => prop::collection::vec(any::<u8>(), 0..512),
    ]
    .boxed()
}

/// Run `check` on [`budget`] inputs mutated from `seeds`; panics with the shrunk input if
/// `check` panics or returns `Err`. Prints the number of cases run (the long runs' record).
pub fn fuzz(name: &str, seeds: Vec<Vec<u8>>, check: impl Fn(&[u8]) -> Result<(), String>) {
    fuzz_n(name, budget(), seeds, check)
}

/// [`fuzz`] with an explicit number of cases (for decoders too slow for the full budget).
pub fn fuzz_n(
    name: &str,
    cases: u32,
    seeds: Vec<Vec<u8>>,
    check: impl Fn(&[u8]) -> Result<(), String>,
) {
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 4096,
        ..Config::default()
    });
    let started = std::time::Instant::now();
    let r = runner.run(&inputs(seeds), |input| {
        check(&input).map_err(TestCaseError::fail)
    });
    match r {
        Ok(()) => eprintln!(
            "fuzz {name}: {cases} cases in {:.1} s, no failure",
            started.elapsed().as_secs_f64()
        ),
        Err(TestError::Fail(why, input)) => panic!(
            "fuzz {name}: {why}\nshrunk input ({} bytes): {:?}",
            input.len(),
            String::from_utf8_lossy(&input)
        ),
        Err(TestError::Abort(why)) => panic!("fuzz {name}: aborted: {why}"),
    }
}

/// [`fuzz`] for text formats: the check sees the mutated bytes as (lossy) UTF-8.
pub fn fuzz_text(name: &str, seeds: &[&str], check: impl Fn(&str) -> Result<(), String>) {
    let seeds = seeds.iter().map(|s| s.as_bytes().to_vec()).collect();
    fuzz(name, seeds, |b| check(&String::from_utf8_lossy(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The harness can fail: a decoder that panics on a length past its input is caught,
    /// and one that accepts a negative count is reported through its property.
    #[test]
    fn a_panicking_or_wrong_decoder_is_caught() {
        let seeds = vec![vec![3, 0, 0, 0, 1, 2, 3]];
        let panicking = std::panic::catch_unwind(|| {
            fuzz("sloppy", seeds.clone(), |b| {
                if b.len() >= 4 {
                    let n = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
                    let _ = &b[4..4 + n]; // panics when n is past the end
                }
                Ok(())
            })
        });
        assert!(panicking.is_err(), "an out-of-bounds slice is found");
        let wrong = std::panic::catch_unwind(|| {
            // Enough cases that a sign lands before the digit (about 50 times in 20,000).
            fuzz_n("wrong", 20_000, vec![b"count = 3".to_vec()], |b| {
                let s = String::from_utf8_lossy(b);
                match s.split('=').nth(1) {
                    Some(v) if v.trim().parse::<i64>().is_ok_and(|n| n < 0) => {
                        Err(format!("accepted a negative count: {s}"))
                    }
                    _ => Ok(()),
                }
            })
        });
        assert!(wrong.is_err(), "a property violation is found");
    }

    #[test]
    fn mutations_stay_near_the_seed_and_reach_the_tokens() {
        let seeds = vec![b"{\"v\": \"17\", \"e\": -8}".to_vec()];
        let mut runner = TestRunner::deterministic();
        let strat = inputs(seeds);
        let mut nan = false;
        for _ in 0..2000 {
            let v = strat.new_tree(&mut runner).expect("value").current();
            nan |= v.windows(3).any(|w| w == b"NaN" || w == b"nan");
        }
        assert!(nan, "token insertion happens");
    }
}
