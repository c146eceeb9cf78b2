//! The k-ary trees: online == bulk bit for bit, exact sums without noise, the stated
//! sensitivity against neighbouring streams, the stated standard deviation against the
//! errors (with a 30%-too-small variant rejected), and the error against the binary tree.

use super::*;
use crate::tests::{assert_paths_agree, mean_z2, small_series as series};
use crate::{ExponentialSum, WindowSum};

fn key(i: u8) -> [u8; 32] {
    [i; 32]
}

fn kinds() -> Vec<Kind> {
    vec![
        Kind::Running { horizon: 5000 },
        Kind::Exponential {
            alpha: 0.99,
            horizon: None,
        },
        Kind::Window { w: 37 },
        Kind::Window { w: 1 },
        Kind::Window { w: 64 },
    ]
}

#[test]
fn online_equals_bulk_and_chunks_bit_for_bit() {
    let xs = series(5000, 3);
    for kind in kinds() {
        for (k, power) in [(2, 0.0), (3, 0.3), (4, 0.0), (7, 0.25), (16, 0.0)] {
            let m = KarySum::weighted(kind, k, power, 1.0, 2.0, key(1)).expect("build");
            let bulk = m.bulk(&xs).expect("bulk");
            let online = m.online(&xs).expect("online");
            assert_eq!(bulk, online, "{kind:?} k = {k}");
            let mut f = m.fresh();
            let mut chunked = Vec::new();
            for c in xs.chunks(777) {
                chunked.extend(f.stream(c).expect("stream").remove(0));
            }
            assert_eq!(chunked, bulk[0], "{kind:?} k = {k}");
        }
    }
}

/// Under one key the noise of a series and of zeros is the same, so their difference is
/// the exact sum (up to the grid): every node of every decomposition is the right one.
#[test]
fn under_one_key_the_noise_cancels_and_the_estimates_are_the_sums() {
    let xs = series(3000, 5);
    let zeros = vec![0.0; xs.len()];
    for kind in kinds() {
        for (k, power) in [(2, 0.0), (3, 0.25), (5, 0.0), (16, 1.0 / 3.0)] {
            let m = KarySum::weighted(kind, k, power, 1.0, 2.0, key(2)).expect("build");
            let est = m.bulk(&xs).expect("bulk").remove(0);
            let noise = m.bulk(&zeros).expect("bulk").remove(0);
            let truth = m.truth(&xs).remove(0);
            for (j, t) in truth.iter().enumerate() {
                let e = est[j] - noise[j];
                assert!(
                    (e - t).abs() < 1e-2,
                    "{kind:?} k = {k}, step {j}: {e} vs {t}"
                );
            }
        }
    }
}

/// The stated L1 sensitivity bounds the change of the released counters between
/// neighbouring streams (one step changed by B), found by scanning the step; and it is
/// attained (the bound is not loose).
#[test]
fn the_stated_sensitivity_bounds_neighbouring_counters() {
    for kind in [
        Kind::Running { horizon: 700 },
        Kind::Exponential {
            alpha: 0.9,
            horizon: None,
        },
        Kind::Window { w: 20 },
    ] {
        for (k, power) in [(2, 0.0), (3, 0.0), (5, 0.0), (3, 0.3), (4, 1.0 / 3.0)] {
            let m = KarySum::weighted(kind, k, power, 1.0, 1.0, key(3)).expect("build");
            // Each level's change counts with its weight (its noise is 1 / u_l wider).
            let worst = worst_change(&m, 1.0, |l| m.weights[l]);
            assert!(
                worst <= m.sensitivity + 1e-9,
                "{kind:?} k = {k}: {worst} > {}",
                m.sensitivity
            );
            // Attained, up to the bound on the levels above the 16 searched.
            let slack = if power == 0.0 { 0.999 } else { 0.95 };
            assert!(
                worst >= slack * m.sensitivity,
                "{kind:?} k = {k}: {worst} < {}",
                m.sensitivity
            );
        }
    }
}

/// The largest change of the released counters between 700 zeros and a neighbour (one
/// step set to B = 1), over every step: `(sum_c (weight(level) |diff_c|)^p)^(1/p)`.
fn worst_change(m: &KarySum, p: f64, weight: impl Fn(usize) -> f64) -> f64 {
    let base = vec![0.0; 700];
    let r0 = counters(m, &base);
    (0..base.len())
        .map(|i| {
            let mut xs = base.clone();
            xs[i] = 1.0;
            let r1 = counters(m, &xs);
            let s: f64 = r0
                .iter()
                .zip(&r1)
                .map(|((l, a), (_, b))| (weight(*l) * (a - b).abs()).powf(p))
                .sum();
            s.powf(1.0 / p)
        })
        .fold(0.0, f64::max)
}

/// The level and true value of every released counter of a run over `xs`, in (level,
/// index) order.
fn counters(m: &KarySum, xs: &[f64]) -> Vec<(usize, f64)> {
    let mut exact = m.clone();
    exact.reset();
    exact.record = Some(Vec::new());
    for &x in xs {
        exact.step(x).expect("step");
    }
    let seen: std::collections::BTreeMap<(usize, u64), f64> = exact
        .record
        .take()
        .unwrap_or_default()
        .into_iter()
        .map(|(l, i, v)| ((l, i), v))
        .collect();
    seen.into_iter().map(|((l, _), v)| (l, v)).collect()
}

/// The errors' spread matches the stated standard deviation at every step (chi-square
/// style: the mean squared standardized error over many keys is 1), and a mechanism with
/// 30% less noise than stated is caught.
#[test]
fn the_stated_std_is_the_errors_and_too_little_noise_is_caught() {
    let xs = series(600, 7);
    for (kind, power) in [
        (Kind::Running { horizon: 600 }, 0.0),
        (
            Kind::Exponential {
                alpha: 0.95,
                horizon: None,
            },
            0.0,
        ),
        (
            Kind::Exponential {
                alpha: 0.95,
                horizon: None,
            },
            0.3,
        ),
        (Kind::Window { w: 50 }, 0.25),
    ] {
        let k = 4;
        let base = KarySum::weighted(kind, k, power, 1.0, 2.0, key(0)).expect("build");
        let truth = base.truth(&xs).remove(0);
        let ratio = |scale: f64| {
            mean_z2(
                &truth,
                |j| base.std_at(j),
                |r| {
                    let mut m =
                        KarySum::weighted(kind, k, power, 1.0, 2.0, [r; 32]).expect("build");
                    m.noise = m.noise.iter().map(|n| n.scaled(scale)).collect();
                    m.bulk(&xs).expect("bulk").remove(0)
                },
            )
        };
        let honest = ratio(1.0);
        assert!(
            (0.9..1.1).contains(&honest),
            "{kind:?}: mean z^2 = {honest}"
        );
        let small = ratio(0.7);
        assert!(
            small < 0.75,
            "{kind:?}: 30% too little noise not caught ({small})"
        );
    }
}

/// On bits at eps = 1 the k-ary trees' stated RMSE is below the binary tree's by the
/// factors issue 38 asks for on flights-3m (measured there in BENCHMARKS.md), and within 2%
/// of the best known of issue 57's review: 20.23 for a window of 1440 (optimal estimation
/// on the k-ary tree), 15.20 for alpha = 0.999 (every node released, optimal estimation).
#[test]
fn the_stated_error_beats_the_binary_tree() {
    let n = 3_000_000;
    let rmse = |m: &dyn DecayedSum| mean_variance(m, n).sqrt();
    let chosen = |kind: Kind| {
        let tree = best_choice(kind, None, 1.0, 1.0).expect("choice");
        (
            tree,
            KarySum::shaped(kind, tree, 1.0, 1.0, key(1)).expect("k"),
        )
    };
    let running = ExponentialSum::running(n, 1.0, 1.0, key(1)).expect("tree");
    let (t, kary) = chosen(Kind::Running { horizon: n });
    let (a, b) = (rmse(&running), rmse(&kary));
    eprintln!("running: tree {a:.2}, {t:?} {b:.2}: {:.2}x", a / b);
    assert!(a / b >= 2.0, "running: tree {a}, {t:?} {b}");
    let exp = ExponentialSum::new(0.999, 1.0, 1.0, key(1)).expect("tree");
    let (t, kary) = chosen(Kind::Exponential {
        alpha: 0.999,
        horizon: None,
    });
    let (a, b) = (rmse(&exp), rmse(&kary));
    eprintln!("exponential: tree {a:.2}, {t:?} {b:.2}: {:.2}x", a / b);
    assert!(a / b >= 1.5, "exponential: tree {a}, {t:?} {b}");
    assert!(b <= 15.20 * 1.02, "exponential: {t:?} {b}");
    let win = WindowSum::new(1440, 1.0, 1.0, key(1)).expect("tree");
    let (t, kary) = chosen(Kind::Window { w: 1440 });
    let (a, b) = (rmse(&win), rmse(&kary));
    eprintln!("window: tree {a:.2}, {t:?} {b:.2}: {:.2}x", a / b);
    assert!(a / b >= 1.5, "window: tree {a}, {t:?} {b}");
    assert!(b <= 20.23 * 1.02, "window: {t:?} {b}");
}

fn zcdp() -> Zcdp {
    Zcdp::new(0.5, None).expect("valid")
}

#[test]
fn gaussian_trees_agree_online_bulk_and_chunked() {
    let xs = series(3000, 11);
    for kind in kinds() {
        for k in [2, 5] {
            let m = KarySum::gaussian(kind, k, zcdp(), 2.0, key(4)).expect("build");
            let (bulk, _) = assert_paths_agree(&m, &xs, 501, &format!("{kind:?} k = {k}"));
            // Gaussian noise, not the Laplace of the same shape.
            let lap = KarySum::new(kind, k, 1.0, 2.0, key(4)).expect("build");
            assert_ne!(lap.bulk(&xs).expect("bulk"), bulk);
        }
    }
}

/// The Gaussian trees' stated L2 sensitivity bounds the change of the released counters
/// between neighbouring streams, and is attained.
#[test]
fn the_gaussian_trees_l2_sensitivity_bounds_neighbouring_counters() {
    for kind in [
        Kind::Running { horizon: 700 },
        Kind::Exponential {
            alpha: 0.9,
            horizon: None,
        },
        Kind::Window { w: 20 },
    ] {
        for k in [2, 3, 5] {
            let m = KarySum::gaussian(kind, k, zcdp(), 1.0, key(3)).expect("build");
            let worst = worst_change(&m, 2.0, |_| 1.0);
            assert!(worst <= m.sensitivity + 1e-9, "{kind:?} k = {k}: {worst}");
            assert!(worst >= 0.999 * m.sensitivity, "{kind:?} k = {k}: {worst}");
        }
    }
}

/// The Gaussian trees' stated standard deviation is the errors', and 30% less noise is
/// caught.
#[test]
fn the_gaussian_trees_stated_std_is_the_errors() {
    let xs = series(600, 8);
    for kind in [
        Kind::Running { horizon: 600 },
        Kind::Exponential {
            alpha: 0.95,
            horizon: None,
        },
        Kind::Window { w: 50 },
    ] {
        let base = KarySum::gaussian(kind, 2, zcdp(), 2.0, key(0)).expect("build");
        let truth = base.truth(&xs).remove(0);
        let ratio = |scale: f64| {
            mean_z2(
                &truth,
                |j| base.std_at(j),
                |r| {
                    let mut m = KarySum::gaussian(kind, 2, zcdp(), 2.0, [r; 32]).expect("build");
                    m.noise = m.noise.iter().map(|n| n.scaled(scale)).collect();
                    m.bulk(&xs).expect("bulk").remove(0)
                },
            )
        };
        let honest = ratio(1.0);
        assert!((0.9..1.1).contains(&honest), "{kind:?}: {honest}");
        assert!(
            ratio(0.7) < 0.75,
            "{kind:?}: 30% too little noise not caught"
        );
    }
}

/// Exponential sums on forests (every node released, optimal estimates): the paths agree
/// bit for bit, the noise cancels under one key, the stated L1 and L2 sensitivities bound
/// the neighbouring counters and are attained.
#[test]
fn forests_agree_cancel_and_bound_their_sensitivity() {
    let xs = series(3000, 8);
    let zeros = vec![0.0; xs.len()];
    for alpha in [0.9, 0.99] {
        let kind = Kind::Exponential {
            alpha,
            horizon: None,
        };
        for (k, power, levels) in [(2, 0.0, 1), (2, 0.3, 4), (3, 0.0, 3), (10, 0.25, 2)] {
            let tree = Tree {
                k,
                power,
                forest: Some(levels),
            };
            let m = KarySum::shaped(kind, tree, 1.0, 2.0, key(5)).expect("build");
            let what = format!("{alpha} {tree:?}");
            assert_paths_agree(&m, &xs, 333, &what);
            let est = m.bulk(&xs).expect("bulk").remove(0);
            let noise = m.bulk(&zeros).expect("bulk").remove(0);
            let truth = m.truth(&xs).remove(0);
            for (j, t) in truth.iter().enumerate() {
                assert!((est[j] - noise[j] - t).abs() < 1e-2, "{what} step {j}");
            }
            let m = KarySum::shaped(kind, tree, 1.0, 1.0, key(5)).expect("build");
            let worst = worst_change(&m, 1.0, |l| m.weights[l]);
            assert!(worst <= m.sensitivity + 1e-9, "{what}: {worst}");
            assert!(worst >= 0.999 * m.sensitivity, "{what}: {worst}");
            let g = KarySum::gaussian_shaped(kind, tree, zcdp(), 1.0, key(5)).expect("build");
            let worst = worst_change(&g, 2.0, |_| 1.0);
            assert!(worst <= g.sensitivity + 1e-9, "{what}: {worst}");
            assert!(worst >= 0.999 * g.sensitivity, "{what}: {worst}");
        }
    }
}

/// A forest's and a window's optimal estimates have the stated spread (Laplace and
/// Gaussian noise), and 30% less noise than stated is caught.
#[test]
fn optimal_estimates_have_the_stated_std() {
    let xs = series(600, 9);
    let exp = Kind::Exponential {
        alpha: 0.97,
        horizon: None,
    };
    for (kind, tree, gauss) in [
        (
            exp,
            Tree {
                k: 3,
                power: 0.3,
                forest: Some(3),
            },
            false,
        ),
        (
            exp,
            Tree {
                k: 2,
                power: 0.0,
                forest: Some(5),
            },
            true,
        ),
        (
            Kind::Window { w: 50 },
            Tree {
                k: 3,
                power: 0.0,
                forest: None,
            },
            true,
        ),
        (
            Kind::Running { horizon: 600 },
            Tree {
                k: 3,
                power: 0.2,
                forest: None,
            },
            false,
        ),
    ] {
        let make = |r: u8| {
            if gauss {
                KarySum::gaussian_shaped(kind, tree, zcdp(), 2.0, [r; 32]).expect("build")
            } else {
                KarySum::shaped(kind, tree, 1.0, 2.0, [r; 32]).expect("build")
            }
        };
        let base = make(0);
        let truth = base.truth(&xs).remove(0);
        let ratio = |scale: f64| {
            mean_z2(
                &truth,
                |j| base.std_at(j),
                |r| {
                    let mut m = make(r);
                    m.noise = m.noise.iter().map(|n| n.scaled(scale)).collect();
                    m.set_estimator();
                    m.bulk(&xs).expect("bulk").remove(0)
                },
            )
        };
        let honest = ratio(1.0);
        assert!((0.9..1.1).contains(&honest), "{kind:?} {tree:?}: {honest}");
        let small = ratio(0.7);
        assert!(small < 0.75, "{kind:?} {tree:?}: not caught ({small})");
    }
}

/// A window's estimate is the generalised least-squares estimate from every counter
/// released so far (Gauss-Markov: the minimum-variance unbiased linear one), step by step,
/// on trees whose window starts in the current block, in the previous one, or at a block's
/// first step; with unequal noise per level (Laplace level weights) and Gaussian noise.
#[test]
fn window_estimates_are_the_least_squares_ones() {
    for (w, k, power, gauss) in [
        (5u64, 2u32, 0.3, false),
        (4, 3, 0.0, true),
        (8, 2, 0.0, true),
        (7, 3, 0.4, false),
        (1, 2, 0.0, false),
    ] {
        let kind = Kind::Window { w };
        let tree = Tree {
            k,
            power,
            forest: None,
        };
        let mut m = if gauss {
            KarySum::gaussian_shaped(kind, tree, zcdp(), 2.0, key(4)).expect("build")
        } else {
            KarySum::shaped(kind, tree, 1.0, 2.0, key(4)).expect("build")
        };
        let var: Vec<f64> = m.noise.iter().map(|n| n.std_dev().powi(2)).collect();
        let (kk, block) = (u64::from(k), m.block());
        m.heard = Some(Vec::new());
        let xs = series(5 * block as usize + 3, 11);
        for (j, &x) in xs.iter().enumerate() {
            let est = m.step(x).expect("step");
            let j = j as u64;
            // The leaves of the previous block and the current one up to j.
            let lo = (j / block).saturating_sub(1) * block;
            let n = (j + 1 - lo) as usize;
            let (mut h, mut rhs) = (vec![vec![0.0; n]; n], vec![0.0; n]);
            for &(l, idx, y) in m.heard.as_deref().unwrap_or_default() {
                let span = kk.pow(l as u32);
                let first = idx * span;
                if first < lo {
                    continue;
                }
                let cover = (first - lo) as usize..(first - lo + span) as usize;
                for p in cover.clone() {
                    rhs[p] += y / var[l];
                    for q in cover.clone() {
                        h[p][q] += 1.0 / var[l];
                    }
                }
            }
            let leaves = solve(h, rhs);
            let from = ((j + 1).saturating_sub(w) - lo) as usize;
            let want: f64 = leaves[from..].iter().sum();
            assert!(
                (est - want).abs() < 1e-7 * (1.0 + want.abs()),
                "W {w} k {k} step {j}: {est} vs least squares {want}"
            );
        }
    }
}

/// `x` with `h x = b` (Gaussian elimination with partial pivoting; `h` symmetric positive
/// definite here).
fn solve(mut h: Vec<Vec<f64>>, mut b: Vec<f64>) -> Vec<f64> {
    let n = b.len();
    for c in 0..n {
        let p = (c..n)
            .max_by(|&x, &y| h[x][c].abs().total_cmp(&h[y][c].abs()))
            .unwrap_or(c);
        h.swap(c, p);
        b.swap(c, p);
        let (upper, lower) = h.split_at_mut(c + 1);
        let pivot = &upper[c];
        for (r, row) in lower.iter_mut().enumerate() {
            let f = row[c] / pivot[c];
            for (x, &p) in row[c..].iter_mut().zip(&pivot[c..]) {
                *x -= f * p;
            }
            b[c + 1 + r] -= f * b[c];
        }
    }
    let mut x = vec![0.0; n];
    for c in (0..n).rev() {
        let s: f64 = (c + 1..n).map(|j| h[c][j] * x[j]).sum();
        x[c] = (b[c] - s) / h[c][c];
    }
    x
}

/// Where a Gaussian window tree's time goes: one thread's draws, its keystream alone, and
/// the whole stream on one thread (`cargo test --release -p kinsey-decay --lib -- --ignored
/// --nocapture window_parts`).
#[test]
#[ignore = "timing: run by hand in release"]
fn window_parts() {
    let n = 1usize << 24;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool");
    let g = KeyedGauss::new(key(1), 1, 3.0, 11, 0.5).expect("noise");
    // Touched first: the timings are not page faults.
    let mut z = vec![1i64; n];
    let t = std::time::Instant::now();
    pool.install(|| g.fill(0, &mut z)).expect("fill");
    let draw = t.elapsed().as_secs_f64() / n as f64 * 1e9;
    let ks = kinsey_kernels::chacha::ChaCha20::new(&key(1), 1);
    let mut words = vec![1u64; n];
    let t = std::time::Instant::now();
    ks.fill_u64(0, &mut words);
    let word = t.elapsed().as_secs_f64() / n as f64 * 1e9;
    let xs = series(n, 3);
    for w in [1024u64, 1440] {
        let m = KarySum::gaussian(Kind::Window { w }, 2, zcdp(), 3.0, key(2)).expect("build");
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("pool");
            let mut f = m.fresh();
            pool.install(|| f.stream(&xs[..1 << 22]).expect("warm up"));
            let t = std::time::Instant::now();
            pool.install(|| {
                for c in xs[1 << 22..].chunks(1 << 22) {
                    f.stream(c).expect("stream");
                }
            });
            let n = n - (1 << 22);
            let step = t.elapsed().as_secs_f64() / n as f64 * 1e9;
            println!("W {w}, {threads} threads: {step:.1} ns a step");
        }
    }
    println!("a draw {draw:.1} ns (its keystream word {word:.1} ns)");
}
