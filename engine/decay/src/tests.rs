//! Decayed-sum tests: online equals bulk bit for bit; empirical error matches the
//! theoretical standard deviation; a privacy test on neighbouring streams with power
//! against 30% too little noise.

use super::allwindow::zeta;
use super::exponential::exponential_sensitivity;
use super::tree::*;
use super::*;

fn series(n: usize, seed: u64) -> Vec<f64> {
    let mut r = kinsey_dp::NoiseRng::from_seed_quiet(seed);
    (0..n).map(|_| r.below(4) as f64).collect()
}

fn true_window(xs: &[f64], w: usize, j: usize) -> f64 {
    xs[(j + 1).saturating_sub(w)..=j].iter().sum()
}

#[test]
fn window_online_equals_bulk_bit_for_bit() {
    let short = series(40_000, 1); // crosses the 32,768-step segment boundaries
    // W = 20,000 (blocks of 2^15, segments of four blocks): crosses those too.
    let long = series(300_000, 1);
    for w in [1u64, 5, 64, 1000, 20_000] {
        let xs = if w > 10_000 { &long } else { &short };
        let m = WindowSum::new(w, 0.7, 3.0, [w as u8; 32]).expect("ok");
        let bulk = m.bulk_series(xs).expect("bulk");
        let mut online = m.clone();
        let on: Vec<f64> = xs.iter().map(|&x| online.advance(x)).collect();
        assert_eq!(bulk.len(), xs.len());
        assert!(
            on.iter()
                .zip(&bulk)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "W = {w}"
        );
        // Streaming in uneven chunks gives the same numbers.
        let mut streamed = Vec::new();
        let mut st = m.clone();
        for c in xs.chunks(7_777) {
            let o = DecayedSum::stream(&mut st, c).expect("stream");
            streamed.extend_from_slice(&o[0]);
        }
        let n = streamed.len() as u64;
        assert_eq!(n, xs.len() as u64);
        assert!(
            streamed
                .iter()
                .zip(&bulk)
                .all(|(a, b)| a.to_bits() == b.to_bits())
        );
        assert_eq!(streamed.len(), bulk.len());
    }
}

#[test]
fn exponential_and_running_online_equal_bulk_bit_for_bit() {
    let xs = series(70_000, 2); // crosses the 65,536-step bulk chunk
    for alpha in [0.5, 0.9, 0.999] {
        let m = ExponentialSum::new(alpha, 1.0, 3.0, [9; 32]).expect("ok");
        let bulk = m.bulk_series(&xs).expect("bulk");
        let mut online = m.clone();
        for (t, &x) in xs.iter().enumerate() {
            let v = online.advance(x).expect("push");
            assert_eq!(v.to_bits(), bulk[t].to_bits(), "alpha {alpha}, t {t}");
        }
    }
    let m = ExponentialSum::running(70_000, 1.0, 3.0, [3; 32]).expect("ok");
    let bulk = m.bulk_series(&xs).expect("bulk");
    let mut online = m.clone();
    for (t, &x) in xs.iter().enumerate() {
        assert_eq!(
            online.advance(x).expect("push").to_bits(),
            bulk[t].to_bits()
        );
    }
    let e = m
        .bulk_series(&series(70_001, 3))
        .expect_err("past the horizon");
    assert!(e.to_string().contains("horizon"), "{e}");
}

/// The parallel bulk (aligned segments in three passes) equals the online path bit for bit,
/// whole and in chunks of every size (segments of 16 steps here, so that many segments,
/// ragged heads and tails, and levels above the segments all occur).
#[test]
fn exponential_parallel_segments_equal_online() {
    let xs = series(3000, 4);
    for (mut m, name) in [
        (
            ExponentialSum::new(0.9, 1.0, 3.0, [5; 32]).expect("ok"),
            "exponential",
        ),
        (
            ExponentialSum::running(3000, 1.0, 3.0, [6; 32]).expect("ok"),
            "running",
        ),
    ] {
        m.seg_bits = 4;
        let mut online = m.clone();
        let want: Vec<u64> = xs
            .iter()
            .map(|&x| online.advance(x).expect("push").to_bits())
            .collect();
        let bulk = m.bulk_series(&xs).expect("bulk");
        assert_eq!(
            bulk.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want,
            "{name}"
        );
        for chunk in [1usize, 7, 33, 100, 1000] {
            let mut s = m.clone();
            let mut got = Vec::new();
            let mut out = vec![f64::NAN; chunk];
            for c in xs.chunks(chunk) {
                let out = &mut out[..c.len()];
                s.bulk_continue(c, out).expect("chunk");
                got.extend(out.iter().map(|v| v.to_bits()));
            }
            assert_eq!(got, want, "{name} in chunks of {chunk}");
        }
    }
}

/// Empirical standard deviation at fixed steps over many keys vs the theory.
fn check_std(name: &str, runs: usize, est: impl Fn(u64) -> (f64, f64, f64)) {
    let mut sq = 0.0;
    let mut sd = 0.0;
    for r in 0..runs {
        let (e, truth, s) = est(r as u64);
        sq += (e - truth).powi(2);
        sd = s;
    }
    let emp = (sq / runs as f64).sqrt();
    // 2,000 runs: the sample sd is within 5% of the truth with overwhelming probability
    // for these sums of Laplace variables.
    assert!(
        (emp / sd - 1.0).abs() < 0.08,
        "{name}: empirical {emp:.4} vs theory {sd:.4}"
    );
}

#[test]
fn errors_match_the_theoretical_standard_deviation() {
    let xs = series(3000, 4);
    for (w, j) in [(16u64, 1000usize), (100, 2999), (7, 6)] {
        check_std(&format!("window {w} at {j}"), 2000, |r| {
            let mut key = [0u8; 32];
            key[..8].copy_from_slice(&r.to_le_bytes());
            let m = WindowSum::new(w, 1.0, 3.0, key).expect("ok");
            let out = m.bulk_series(&xs[..=j]).expect("bulk");
            (out[j], true_window(&xs, w as usize, j), m.std_at(j as u64))
        });
    }
    for alpha in [0.9f64, 0.99] {
        let j = 2047usize;
        let truth: f64 = (0..=j).map(|i| alpha.powi((j - i) as i32) * xs[i]).sum();
        check_std(&format!("exponential {alpha}"), 2000, |r| {
            let mut key = [1u8; 32];
            key[..8].copy_from_slice(&r.to_le_bytes());
            let m = ExponentialSum::new(alpha, 1.0, 3.0, key).expect("ok");
            let out = m.bulk_series(&xs[..=j]).expect("bulk");
            (out[j], truth, m.std_at(j as u64))
        });
    }
    let j = 1234usize;
    let truth: f64 = xs[..=j].iter().sum();
    check_std("running", 2000, |r| {
        let mut key = [2u8; 32];
        key[..8].copy_from_slice(&r.to_le_bytes());
        let m = ExponentialSum::running(3000, 1.0, 3.0, key).expect("ok");
        let out = m.bulk_series(&xs[..=j]).expect("bulk");
        (out[j], truth, m.std_at(j as u64))
    });
}

#[test]
fn window_error_does_not_grow_with_the_stream() {
    let m = WindowSum::new(100, 1.0, 1.0, [0; 32]).expect("ok");
    let early = m.std_at(1_000);
    let late = m.std_at(1_000_000_007);
    assert!(
        late <= early * 1.5 && late >= early / 1.5,
        "{early} vs {late}"
    );
    let e = ExponentialSum::new(0.99, 1.0, 1.0, [0; 32]).expect("ok");
    assert!(e.std_at(1 << 40) < 2.0 * e.std_at(1 << 12));
}

/// Privacy on neighbouring streams: change one step by B and measure, over many keys, the
/// log-ratio of tail probabilities of the counter that holds it. Summed over the `h + 1`
/// counters the step touches it must not exceed eps; with 30% less noise it does.
fn measured_epsilon(noise_factor: f64) -> f64 {
    let (w, eps, b) = (4u64, 1.0, 1.0);
    let d = [0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0];
    let mut d2 = d;
    d2[5] += b;
    let runs = 150_000u64;
    let mut tail = [0u64; 2];
    let mut h = 0;
    for r in 0..runs {
        let mut key = [5u8; 32];
        key[..8].copy_from_slice(&r.to_le_bytes());
        for (which, data) in [&d, &d2].into_iter().enumerate() {
            let mut m = WindowSum::new(w, eps, b, key).expect("ok");
            m.noise = m.noise.scaled(noise_factor);
            h = m.h;
            for &x in data.iter() {
                m.advance(x);
            }
            // The leaf counter of step 5 (kept: the window still covers it).
            if m.rel.get(0, 5) >= 3.0 {
                tail[which] += 1;
            }
        }
    }
    let per_counter = (tail[1] as f64 / tail[0] as f64).ln();
    f64::from(h + 1) * per_counter
}

#[test]
fn neighbouring_streams_respect_epsilon_and_the_test_has_power() {
    let ok = measured_epsilon(1.0);
    assert!(ok < 1.0 * 1.08, "measured eps {ok}");
    let weak = measured_epsilon(0.7);
    assert!(weak > 1.0 * 1.08, "30% less noise must be caught: {weak}");
}

#[test]
fn bad_parameters_are_named() {
    assert!(WindowSum::new(0, 1.0, 1.0, [0; 32]).is_err());
    assert!(WindowSum::new(4, 0.0, 1.0, [0; 32]).is_err());
    assert!(WindowSum::new(4, 1.0, -1.0, [0; 32]).is_err());
    let e = ExponentialSum::new(1.0, 1.0, 1.0, [0; 32]).expect_err("alpha");
    assert!(e.to_string().contains("alpha"), "{e}");
    assert!(ExponentialSum::running(0, 1.0, 1.0, [0; 32]).is_err());
}

#[test]
fn exponential_sensitivity_is_the_series() {
    // alpha^0 + alpha^1 + alpha^3 + alpha^7 + ...
    let a: f64 = 0.5;
    let want = 1.0 + a + a.powi(3) + a.powi(7) + a.powi(15) + a.powi(31) + a.powi(63);
    assert!((exponential_sensitivity(a, 62) - want).abs() < 1e-15);
    assert_eq!(exponential_sensitivity(1.0, 10), 10.0);
}

#[test]
fn baselines_have_their_stated_error() {
    let xs: Vec<f64> = series(3000, 6)
        .iter()
        .map(|v| f64::from(*v > 1.5))
        .collect();
    let j = 2500usize;
    for w in [10u64, 200] {
        let truth = true_window(&xs, w as usize, j);
        check_std(&format!("laplace {w}"), 2000, |r| {
            let mut key = [4u8; 32];
            key[..8].copy_from_slice(&r.to_le_bytes());
            let m = build("laplace", &window(w), &public(key)).expect("ok");
            (
                m.bulk(&xs).expect("run")[0][j],
                truth,
                m.noise_std(0, j as u64),
            )
        });
        check_std(&format!("rr {w}"), 2000, |r| {
            let mut key = [6u8; 32];
            key[..8].copy_from_slice(&r.to_le_bytes());
            let m = build("rr", &window(w), &public(key)).expect("ok");
            (
                m.bulk(&xs).expect("run")[0][j],
                truth,
                m.noise_std(0, j as u64),
            )
        });
    }
    let mut m = build("rr", &window(4), &public([0; 32])).expect("ok");
    let e = m.bulk(&[0.0, 2.0]).expect_err("not bits");
    assert!(e.to_string().contains("bits (0 or 1)"), "{e}");
    let e = m.push(2.0, &mut [0.0]).expect_err("not bits");
    assert!(e.to_string().contains("bits (0 or 1)"), "{e}");
    let e = build("windw", &window(4), &public([0; 32])).expect_err("x");
    assert!(e.to_string().contains("unknown model 'windw'"), "{e}");
    let e = build("exponential", &ModelParams::default(), &public([0; 32])).expect_err("x");
    assert!(e.to_string().contains("--alpha"), "{e}");
}

#[test]
fn allwindow_online_equals_bulk_and_matches_theory() {
    let xs = series(70_000, 7);
    let m = AllWindowSum::new(&[1, 60, 1440], 1.0, 3.0, 2.0, [8; 32]).expect("ok");
    assert!(m.exact_sums, "this calibration's sums are exact");
    // Bulk adds the releases from prefix and suffix sums (exact sums) or left to right
    // as online (forced here): the same bits either way.
    let bulk = m.bulk_series(&xs).expect("bulk");
    let mut ltr = m.clone();
    ltr.exact_sums = false;
    let bulk_ltr = ltr.bulk_series(&xs).expect("bulk");
    let mut online = m.clone();
    let mut o = [0.0; 3];
    for (t, &x) in xs.iter().enumerate() {
        online.advance(x, &mut o);
        for i in 0..3 {
            assert_eq!(o[i].to_bits(), bulk[i][t].to_bits(), "window {i} step {t}");
            assert_eq!(
                o[i].to_bits(),
                bulk_ltr[i][t].to_bits(),
                "left to right {i} {t}"
            );
        }
    }
    // Streamed in chunks longer than a parallel segment (2^15 steps) and shorter than a
    // block (2048 steps): the same numbers.
    let (mut st, mut at, mut out) = (m.clone(), 0, Vec::new());
    for len in [40_000, 1_000, 7, 28_993] {
        st.stream_into(&xs[at..at + len], &mut out).expect("stream");
        for (i, col) in out.iter().enumerate() {
            let same = col
                .iter()
                .zip(&bulk[i][at..])
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(
                same && col.len() == len,
                "window {i}: chunk at {at} differs"
            );
        }
        at += len;
    }
    assert_eq!(at, xs.len());
    assert!(st.push(0.0, &mut [0.0; 3]).is_err(), "push after streaming");
    // The levels' epsilons sum to at most eps, whatever the number of levels.
    let z = zeta(2.0);
    assert!((z - std::f64::consts::PI.powi(2) / 6.0).abs() < 1e-10);
    let spent: f64 = (0..=m.h)
        .map(|k| 1.0 / (z * f64::from(k + 1).powi(2)))
        .sum();
    assert!(spent < 1.0);
    let j = 3000usize;
    let truth = true_window(&xs, 60, j);
    check_std("allwindow 60", 2000, |r| {
        let mut key = [3u8; 32];
        key[..8].copy_from_slice(&r.to_le_bytes());
        let m = AllWindowSum::new(&[60, 1440], 1.0, 3.0, 2.0, key).expect("ok");
        let est = m.bulk_series(&xs[..=j]).expect("bulk")[0][j];
        (est, truth, m.std_at(0, j as u64))
    });
    assert!(AllWindowSum::new(&[], 1.0, 1.0, 2.0, [0; 32]).is_err());
    assert!(AllWindowSum::new(&[4], 1.0, 1.0, 1.0, [0; 32]).is_err());
}

#[test]
fn polynomial_online_equals_bulk_and_bicriteria_holds() {
    let xs = series(5000, 8);
    let (c, beta) = (1.5, 0.2);
    let m = PolynomialSum::new(c, beta, 1.0, 3.0, [4; 32], xs.len() as u64).expect("ok");
    let bulk = m.bulk_series(&xs).expect("bulk");
    let mut online = m.clone();
    for (t, &x) in xs.iter().enumerate() {
        assert_eq!(online.advance(x).to_bits(), bulk[t].to_bits(), "step {t}");
    }
    // (1 - beta) F <= F' <= F against the exact polynomial sum.
    let approx = m.approx_truth(&xs);
    for k in [0usize, 1, 10, 999, 4999] {
        let f: f64 = (0..=k).map(|i| ((k - i + 1) as f64).powf(-c) * xs[i]).sum();
        assert!(
            approx[k] <= f + 1e-9 && approx[k] >= (1.0 - beta) * f - 1e-9,
            "k {k}: {} vs {f}",
            approx[k]
        );
    }
    // The error around F' matches the theory.
    let j = 4000usize;
    let truth = approx[j];
    check_std("polynomial", 1000, |r| {
        let mut key = [2u8; 32];
        key[..8].copy_from_slice(&r.to_le_bytes());
        let m = PolynomialSum::new(c, beta, 1.0, 3.0, key, (j + 1) as u64).expect("ok");
        (
            m.bulk_series(&xs[..=j]).expect("bulk")[j],
            truth,
            m.std_at(j as u64),
        )
    });
    assert!(PolynomialSum::new(1.0, 0.1, 1.0, 1.0, [0; 32], 10).is_err());
    assert!(PolynomialSum::new(2.0, 1.0, 1.0, 1.0, [0; 32], 10).is_err());
}

/// Lags whose instance's share of epsilon is below the exact sampler's range are left out
/// (before, such a series was refused), with a public bound on the bias that covers them;
/// the estimate stays within `[(1 - beta) F - tail, F]` and online equals bulk.
#[test]
fn polynomial_leaves_out_the_lags_the_sampler_cannot_reach() {
    let (c, beta) = (2.0, 0.1);
    let m = PolynomialSum::new(c, beta, 1.0, 3.0, [4; 32], 100_000_000).expect("builds");
    let (l, tail) = m.tail_bound().expect("lags left out");
    assert!(l > 1000 && m.parts.iter().all(|p| p.2 < l), "cut at {l}");
    assert!(m.calibration().model.contains("left out"));
    // The bound covers what the left-out lags could add: B sum_{i >= L} (i + 1)^-c (with
    // g' <= g), here over ten million lags, and is not loose by more than the integral's 1%.
    let dropped: f64 = (l..l + 10_000_000).map(|i| ((i + 1) as f64).powf(-c)).sum();
    assert!(
        3.0 * dropped <= tail && tail <= 1.01 * 3.0 * dropped + 3.0 / 1e7,
        "{tail}"
    );
    // A series longer than the cut: online equals bulk, and the estimated sum is within
    // [(1 - beta) F - tail, F] against the exact polynomial sum.
    let xs = series(3 * l as usize, 12);
    let bulk = m.bulk_series(&xs).expect("bulk");
    let mut online = m.clone();
    for (t, &x) in xs.iter().enumerate() {
        assert_eq!(online.advance(x).to_bits(), bulk[t].to_bits(), "step {t}");
    }
    let approx = m.approx_truth(&xs);
    for k in [0, l as usize - 1, l as usize, xs.len() - 1] {
        let f: f64 = (0..=k).map(|i| ((k - i + 1) as f64).powf(-c) * xs[i]).sum();
        assert!(
            approx[k] <= f + 1e-9 && approx[k] >= (1.0 - beta) * f - tail - 1e-9,
            "k {k}: {} vs {f}",
            approx[k]
        );
    }
    // A horizon the sampler reaches: nothing left out.
    let short = PolynomialSum::new(c, beta, 1.0, 3.0, [4; 32], l - 1).expect("builds");
    assert!(short.tail_bound().is_none());
    assert!(!short.calibration().model.contains("left out"));
    // A cut so early that its bias bound passes beta B: refused, naming the horizon that
    // works; and even lag 0 out of range: refused.
    let e = PolynomialSum::new(c, beta, 2e-6, 3.0, [4; 32], 100).expect_err("refused");
    assert!(
        e.to_string().contains("beta B") && !e.to_string().contains("at most"),
        "{e}"
    );
    let e = PolynomialSum::new(c, beta, 1e-6, 3.0, [4; 32], 100).expect_err("refused");
    assert!(e.to_string().contains("lag-0"), "{e}");
}

/// Tail log-ratio `ln P(X >= c | D') / P(X >= c | D)` of one released counter over many keys,
/// where `D'` raises step 6 by 1: the privacy loss this counter contributes.
fn counter_loss(release: impl Fn([u8; 32], &[f64]) -> f64, threshold: f64) -> f64 {
    let d = [0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0];
    let mut d2 = d;
    d2[6] = 1.0;
    let mut tail = [0u64; 2];
    for r in 0..150_000u64 {
        let mut key = [9u8; 32];
        key[..8].copy_from_slice(&r.to_le_bytes());
        for (which, data) in [&d, &d2].into_iter().enumerate() {
            if release(key, data) >= threshold {
                tail[which] += 1;
            }
        }
    }
    (tail[1] as f64 / tail[0] as f64).ln()
}

#[test]
fn exponential_and_allwindow_neighbours_respect_epsilon_with_power() {
    // Exponential: step 6 is in left nodes with weights alpha^(u_k - 6); the leaf has weight
    // 1, so the total loss is (S / B) times the leaf's loss, S the sensitivity series.
    let alpha = 0.8;
    let s = exponential_sensitivity(alpha, 63);
    for (factor, ok) in [(1.0, true), (0.7, false)] {
        let loss = counter_loss(
            |key, data| {
                let mut m = ExponentialSum::new(alpha, 1.0, 1.0, key).expect("ok");
                m.noise = m.noise.scaled(factor);
                for &x in data {
                    m.advance(x).expect("push");
                }
                m.last_left[0]
            },
            s,
        );
        let eps = s * loss;
        assert_eq!(
            eps < 1.08,
            ok,
            "exponential, noise x{factor}: measured eps {eps}"
        );
    }
    // All windows: the leaf level spends eps_0 = eps / zeta(2); the levels together eps.
    for (factor, ok) in [(1.0, true), (0.7, false)] {
        let loss = counter_loss(
            |key, data| {
                let mut m = AllWindowSum::new(&[8], 1.0, 1.0, 2.0, key).expect("ok");
                m.levels[0] = m.levels[0].scaled(factor);
                for &x in data {
                    m.advance(x, &mut [0.0]);
                }
                m.rel.get(0, 6)
            },
            zeta(2.0),
        );
        let eps = zeta(2.0) * loss;
        assert_eq!(
            eps < 1.08,
            ok,
            "allwindow, noise x{factor}: measured eps {eps}"
        );
    }
}

/// The L1 change of the released counters' true values when one step changes by `b`,
/// maximised over every step of a stream of `len` steps: derived from the forest, not
/// assumed. `released(k, m)` says which nodes are released.
fn derived_sensitivity(
    h: u32,
    alpha: f64,
    len: u64,
    b: f64,
    released: impl Fn(u32, u64) -> bool,
) -> f64 {
    let xs: Vec<f64> = series(len as usize, 3)
        .iter()
        .map(|v| (v % 2.0) * b)
        .collect();
    let nodes = |xs: &[f64]| -> Vec<(u32, u64, f64)> {
        let mut f = Forest::new(h, alpha);
        let mut out = Vec::new();
        for (t, &x) in xs.iter().enumerate() {
            f.step(t as u64, x, |k, m, v| {
                if released(k, m) {
                    out.push((k, m, v));
                }
            });
        }
        out
    };
    let base = nodes(&xs);
    let mut worst = 0.0f64;
    for i in 0..len as usize {
        let mut ys = xs.clone();
        ys[i] = if ys[i] > 0.5 * b { 0.0 } else { b };
        let other = nodes(&ys);
        let l1: f64 = base
            .iter()
            .zip(&other)
            .map(|(a, c)| (a.2 - c.2).abs())
            .sum();
        worst = worst.max(l1);
    }
    worst
}

/// The neighbouring-input guarantee checks the sensitivity the code states against the one
/// the forest actually has: for the window sum every step is in exactly one node per level
/// (the stated `(h + 1) B` is reached), for the exponential sum the left nodes' weights sum
/// to at most the stated series, for the running sum to `levels B`.
#[test]
fn stated_sensitivities_bound_the_derived_ones() {
    let b = 2.0;
    let w = WindowSum::new(8, 1.0, b, [1; 32]).expect("ok");
    let stated = w.calibration().sensitivity;
    let derived = derived_sensitivity(w.h, 1.0, 64, b, |_, _| true);
    assert!(derived <= stated + 1e-9, "window: {derived} > {stated}");
    assert!(derived >= stated - 1e-9, "window: the bound is tight");
    for alpha in [0.5, 0.9] {
        let e = ExponentialSum::new(alpha, 1.0, b, [1; 32]).expect("ok");
        let stated = e.calibration().sensitivity;
        let derived = derived_sensitivity(e.h.min(8), alpha, 256, b, |_, m| m % 2 == 0);
        assert!(
            derived <= stated + 1e-9,
            "alpha {alpha}: {derived} > {stated}"
        );
        assert!(
            derived > 0.5 * stated,
            "alpha {alpha}: the bound is not loose"
        );
    }
}

fn window(w: u64) -> ModelParams {
    ModelParams {
        window: Some(w),
        ..ModelParams::default()
    }
}

fn public(key: [u8; 32]) -> Public {
    Public {
        epsilon: 1.0,
        bound: 1.0,
        key,
        zcdp: None,
    }
}

/// Every registered model: online push, bulk, chunked stream and a fresh copy's online
/// path give the same numbers bit for bit, through the trait alone.
#[test]
fn every_model_agrees_on_all_paths_through_the_trait() {
    let xs: Vec<f64> = series(20_000, 11)
        .iter()
        .map(|v| f64::from(*v > 1.5))
        .collect();
    let params = ModelParams {
        window: Some(100),
        windows: Some(vec![10, 300]),
        alpha: Some(0.95),
        c: Some(1.5),
        beta: 0.2,
        horizon: Some(xs.len() as u64),
        ..ModelParams::default()
    };
    for (name, _) in MODELS {
        let m = build(name, &params, &public([7; 32])).expect(name);
        let bulk = m.bulk(&xs).expect("bulk");
        assert_eq!(bulk.len(), m.columns().len(), "{name}");
        let online = m.online(&xs).expect("online");
        // Chunks of changing length into buffers reused from chunk to chunk (what a
        // buffer held before must never leak into the next chunk's estimates).
        let mut streamed = vec![Vec::new(); bulk.len()];
        let (mut s, mut out) = (m.fresh(), vec![vec![f64::NAN; 5_000]; 3]);
        let mut at = 0;
        for len in [3_333, 1_000, 4_001, 17].into_iter().cycle() {
            if at == xs.len() {
                break;
            }
            let c = &xs[at..(at + len).min(xs.len())];
            at += c.len();
            s.stream_into(c, &mut out).expect("stream");
            assert_eq!(out.len(), bulk.len(), "{name}: columns");
            for (col, o) in out.iter().enumerate() {
                assert_eq!(o.len(), c.len(), "{name}: chunk length");
                streamed[col].extend_from_slice(o);
            }
        }
        for col in 0..bulk.len() {
            for (path, v) in [("online", &online[col]), ("stream", &streamed[col])] {
                assert_eq!(v.len(), xs.len(), "{name} {path}");
                assert!(
                    v.iter()
                        .zip(&bulk[col])
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{name}: {path} differs from bulk in column {col}"
                );
            }
        }
        assert!(m.sensitivity() > 0.0 && m.noise_std(0, 10) > 0.0, "{name}");
        assert_eq!(m.truth(&xs).len(), bulk.len(), "{name}");
        assert_eq!(m.guarantee().epsilon, 1.0, "{name}");
    }
}

/// The GPU bulk path (the `dyadic` kernel's draws) gives the CPU's numbers bit for bit, in
/// bulk and streamed, for every model that has one, with two- and three-digit noise laws;
/// the others refuse `gpu`. Fails without an adapter (CI installs lavapipe).
#[test]
fn gpu_bulk_equals_cpu_bit_for_bit() {
    use kinsey_kernels::DevicePref;
    let xs = series(200_000, 5);
    let params = ModelParams {
        window: Some(1000),
        windows: Some(vec![10, 300]),
        alpha: Some(0.99),
        c: Some(1.5),
        beta: 0.2,
        horizon: Some(xs.len() as u64),
        ..ModelParams::default()
    };
    for eps in [1.0, 0.01] {
        let pb = Public {
            epsilon: eps,
            bound: 3.0,
            key: [3; 32],
            zcdp: None,
        };
        for name in ["window", "polynomial", "exponential", "running", "laplace"] {
            // Polynomial splits epsilon over its instances: a shorter horizon keeps their
            // budgets in the supported range.
            let (xs, params) = if name == "polynomial" {
                if eps < 0.1 {
                    continue;
                }
                let p = ModelParams {
                    horizon: Some(20_000),
                    ..params.clone()
                };
                (&xs[..20_000], p)
            } else {
                (&xs[..], params.clone())
            };
            let cpu = build(name, &params, &pb).expect(name);
            let want = cpu.bulk(xs).expect("cpu bulk");
            let mut gpu = build(name, &params, &pb).expect(name);
            let used = gpu
                .use_device(DevicePref::Gpu)
                .expect("a GPU adapter (lavapipe in CI)");
            let used = used.expect("the GPU used");
            // lavapipe has 64-bit floats: the tree sums run there too.
            let sums = ["window", "polynomial", "exponential", "running"].contains(&name);
            assert_eq!(used.contains("noise and sums"), sums, "{name}: {used}");
            let got = gpu.bulk(xs).expect("gpu bulk");
            let same = |a: &[f64], b: &[f64]| {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
            };
            assert!(
                same(&got[0], &want[0]),
                "{name} eps {eps}: gpu bulk differs"
            );
            let mut streamed = Vec::new();
            for c in xs.chunks(70_001) {
                streamed.extend(gpu.stream(c).expect("gpu stream").remove(0));
            }
            assert!(
                same(&streamed, &want[0]),
                "{name} eps {eps}: gpu stream differs"
            );
        }
    }
    for name in ["allwindow", "rr"] {
        let mut m = build(name, &params, &public([1; 32])).expect(name);
        assert!(m.use_device(DevicePref::Gpu).is_err(), "{name}");
        assert_eq!(m.use_device(DevicePref::Cpu).expect("cpu"), None);
    }
}

/// The mean squared standardised error `((est_j - truth_j) / std_j)^2` over keys 0 to 199
/// and every 7th step, `run(r)` the estimates under key `r`: 1 when the stated std is the
/// errors' (a std test the mechanisms share).
pub(crate) fn mean_z2(
    truth: &[f64],
    std_at: impl Fn(u64) -> f64,
    run: impl Fn(u8) -> Vec<f64>,
) -> f64 {
    let (mut s, mut n) = (0.0, 0.0);
    for r in 0..200u8 {
        let est = run(r);
        for j in (0..truth.len()).step_by(7) {
            let z = (est[j] - truth[j]) / std_at(j as u64);
            s += z * z;
            n += 1.0;
        }
    }
    s / n
}

/// `n` values in {0, 1, 2} from a fixed LCG (below any bound the tests declare, so the
/// exact sums need no clamping).
pub(crate) fn small_series(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 33) % 3) as f64
        })
        .collect()
}

/// Bulk, online and a fresh copy's stream in chunks of `chunk` agree bit for bit (first
/// column); returns the bulk estimates and the stream, which has seen the whole series.
pub(crate) fn assert_paths_agree(
    m: &dyn DecayedSum,
    xs: &[f64],
    chunk: usize,
    what: &str,
) -> (Vec<Vec<f64>>, Box<dyn DecayedSum>) {
    let bulk = m.bulk(xs).expect("bulk");
    assert_eq!(bulk, m.online(xs).expect("online"), "{what}");
    let mut f = m.fresh();
    let mut chunked = Vec::new();
    for c in xs.chunks(chunk) {
        chunked.extend(f.stream(c).expect("stream").remove(0));
    }
    assert_eq!(chunked, bulk[0], "{what}");
    (bulk, f)
}
