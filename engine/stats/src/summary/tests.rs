use super::*;
use kinsey_dp::{Neighbours, NoiseRng};

fn query(statistic: Statistic, neighbours: Neighbours) -> SummaryQuery {
    SummaryQuery {
        column: "x".into(),
        statistic,
        lo: 0.0,
        hi: 10.0,
        epsilon: 1.0,
        neighbours,
        candidates: 101,
    }
}

fn releases(q: &SummaryQuery, values: &[f64], runs: usize, seed: u64) -> Vec<f64> {
    let mut rng = NoiseRng::from_seed_quiet(seed);
    (0..runs)
        .map(|_| {
            q.release_values(values, "t".into(), &mut rng)
                .expect("release")
                .estimates[0]
                .value
        })
        .collect()
}

/// KS against Laplace(b) accepts at alpha = 1e-6 and rejects Laplace(0.7 b) (power check).
fn laplace_fits(errors: &mut [f64], b: f64, what: &str) {
    use kinsey_dp::stattest::{ALPHA, ks_test, laplace_cdf};
    let (_, p) = ks_test(errors, |x| laplace_cdf(x, b));
    assert!(p > ALPHA, "{what}: p = {p}");
    let (_, p) = ks_test(errors, |x| laplace_cdf(x, 0.7 * b));
    assert!(
        p < ALPHA,
        "{what}: noise 30% too small was not rejected (p = {p})"
    );
}

/// The sum's noise is Laplace with scale sensitivity / epsilon under both neighbour
/// definitions (hi - lo and max(|lo|, |hi|)); the same test rejects 30% less noise.
#[test]
fn sums_have_the_stated_noise_and_30_percent_less_is_rejected() {
    let values: Vec<f64> = (0..100).map(|i| f64::from(i % 7)).collect();
    let exact: f64 = values.iter().sum();
    for (nb, lo, hi, sens) in [
        (Neighbours::Bounded, -2.0, 6.0, 8.0),
        (Neighbours::Unbounded, -2.0, 6.0, 6.0),
    ] {
        let mut q = query(Statistic::Sum, nb);
        (q.lo, q.hi, q.epsilon) = (lo, hi, 0.5);
        let r = q
            .release_values(&values, "t".into(), &mut NoiseRng::from_os())
            .expect("release");
        assert_eq!(r.guarantee.sensitivity_value, Some(sens), "{nb:?}");
        let mut err: Vec<f64> = releases(&q, &values, 3000, 1)
            .iter()
            .map(|v| v - exact)
            .collect();
        laplace_fits(&mut err, sens / 0.5, &format!("sum {nb:?}"));
    }
}

/// Bounded mean: Laplace((hi - lo) / (n eps)). Unbounded mean at the centre: the centred
/// sum's Laplace((hi - lo) / 2 / (eps / 2)) divided by a count within 0.1% of n.
#[test]
fn means_have_the_stated_noise_and_30_percent_less_is_rejected() {
    let bounded: Vec<f64> = (0..200).map(|i| f64::from(i % 5) + 3.0).collect();
    let q = query(Statistic::Mean, Neighbours::Bounded);
    let mut err: Vec<f64> = releases(&q, &bounded, 3000, 2)
        .iter()
        .map(|v| (v - 5.0) * 200.0)
        .collect();
    laplace_fits(&mut err, 10.0, "bounded mean");
    let centre = vec![5.0; 100_000];
    let q = query(Statistic::Mean, Neighbours::Unbounded);
    let mut err: Vec<f64> = releases(&q, &centre, 3000, 3)
        .iter()
        .map(|v| (v - 5.0) * 100_000.0)
        .collect();
    laplace_fits(&mut err, 10.0, "unbounded mean");
}

/// Bounded variance: Laplace((hi - lo)^2 / (n eps)) around the exact sample variance.
/// Unbounded, at the centre (exact sums 0): released values above 0 follow the positive
/// half of the sum of squares' Laplace((hi - lo)^2 / 4 / (eps / 3)) divided by n - 1, and
/// about half are clamped to 0.
#[test]
fn variances_have_the_stated_noise_and_30_percent_less_is_rejected() {
    let values: Vec<f64> = (0..1000)
        .map(|i| if i % 2 == 0 { 2.5 } else { 7.5 })
        .collect();
    let q = query(Statistic::Variance, Neighbours::Bounded);
    let exact = q.exact(&values).values[0].1;
    let mut err: Vec<f64> = releases(&q, &values, 3000, 4)
        .iter()
        .map(|v| v - exact)
        .collect();
    laplace_fits(&mut err, 100.0 / 1000.0, "bounded variance");
    let n = 100_000.0;
    let q = query(Statistic::Variance, Neighbours::Unbounded);
    let out = releases(&q, &vec![5.0; n as usize], 4000, 5);
    let positive: Vec<f64> = out
        .iter()
        .filter(|&&v| v > 0.0)
        .map(|v| v * (n - 1.0))
        .collect();
    let frac = positive.len() as f64 / out.len() as f64;
    assert!((frac - 0.5).abs() < 0.05, "clamped fraction {frac}");
    let b = 25.0 / (1.0 / 3.0);
    let mut folded: Vec<f64> = positive.iter().flat_map(|&v| [v, -v]).collect();
    laplace_fits(&mut folded, b, "unbounded variance");
}

/// The quantile's choice follows permute-and-flip's exact law over the candidates' scores;
/// the same test rejects the law of 30% less noise.
#[test]
fn quantile_choices_fit_the_exact_law_and_30_percent_less_noise_is_rejected() {
    use kinsey_dp::permute_flip::{PermuteAndFlip, exact_law};
    use kinsey_dp::stattest::{ALPHA, chi_square_test};
    let values: Vec<f64> = [1.0, 2.0, 2.0, 6.0, 9.0, 9.5].to_vec();
    for nb in [Neighbours::Bounded, Neighbours::Unbounded] {
        let mut q = query(Statistic::Quantiles(vec![0.5]), nb);
        (q.candidates, q.epsilon) = (5, 2.0);
        let cands = quantile::candidates(q.lo, q.hi, 5);
        let a = quantile::level(0.5).expect("level");
        let s = quantile::scores(&quantile::counts(&values, &cands), a);
        let best = *s.iter().max().expect("scores");
        let gaps: Vec<u64> = s.iter().map(|&x| (best - x) as u64).collect();
        let sens = quantile::sensitivity(a, nb);
        let law = exact_law(&PermuteAndFlip::new(sens, 2.0).expect("ok"), &gaps);
        let weak = exact_law(&PermuteAndFlip::new(sens, 2.0 / 0.7).expect("ok"), &gaps);
        let mut counts = vec![0u64; 5];
        for v in releases(&q, &values, 60_000, 6) {
            let i = cands.iter().position(|&c| c == v).expect("a candidate");
            counts[i] += 1;
        }
        let expect = |l: &[f64]| l.iter().map(|p| p * 60_000.0).collect::<Vec<_>>();
        let (_, p) = chi_square_test(&counts, &expect(&law));
        assert!(p > ALPHA, "{nb:?}: p = {p}");
        let (_, p) = chi_square_test(&counts, &expect(&weak));
        assert!(p < ALPHA, "{nb:?}: 30% less noise not rejected, p = {p}");
    }
}

/// The stated sensitivities hold on neighbouring data sets, extremes included: the exact
/// statistic (and each quantile score) moves by at most what the guarantee states.
#[test]
fn stated_sensitivities_hold_on_neighbouring_data() {
    let mut rng = NoiseRng::from_seed_quiet(7);
    for trial in 0..300 {
        let n = 2 + (rng.below(30) as usize);
        // Half the trials on a half-unit lattice, so rows tie with candidates.
        let d: Vec<f64> = (0..n)
            .map(|_| rng.uniform_open0() * 14.0 - 2.0)
            .map(|x| {
                if trial % 2 == 0 {
                    (x * 2.0).round() / 2.0
                } else {
                    x
                }
            })
            .collect();
        let mut replaced = d.clone();
        replaced[0] = [-5.0, 15.0, 5.0][trial % 3];
        let mut added = d.clone();
        added.push(replaced[0]);
        for stat in [Statistic::Sum, Statistic::Mean, Statistic::Variance] {
            let q = query(stat.clone(), Neighbours::Bounded);
            let r = q
                .release_values(&d, "t".into(), &mut NoiseRng::from_os())
                .expect("release");
            let sens = r.guarantee.sensitivity_value.expect("public");
            let moved = (q.exact(&d).values[0].1 - q.exact(&replaced).values[0].1).abs();
            assert!(moved <= sens * (1.0 + 1e-9), "{stat:?}: {moved} > {sens}");
        }
        let q = query(Statistic::Sum, Neighbours::Unbounded);
        let moved = (q.exact(&d).values[0].1 - q.exact(&added).values[0].1).abs();
        assert!(moved <= 10.0 + 1e-9);
        for level in [0.1, 0.5, 0.93] {
            let a = quantile::level(level).expect("level");
            let cands = quantile::candidates(0.0, 10.0, 11);
            let score = |v: &[f64]| {
                let mut sorted = v.to_vec();
                sorted.sort_by(f64::total_cmp);
                quantile::scores(&quantile::counts(&sorted, &cands), a)
            };
            for (nb, other) in [
                (Neighbours::Bounded, &replaced),
                (Neighbours::Unbounded, &added),
            ] {
                let sens = quantile::sensitivity(a, nb) as i128;
                for (x, y) in score(&d).iter().zip(score(other)) {
                    assert!((x - y).abs() <= sens, "{nb:?} q = {level}");
                }
            }
        }
    }
}

#[test]
fn a_seed_replays_the_same_data_only_and_statistics_do_not_share_noise() {
    let a = vec![1.0, 2.0, 3.0];
    let b = vec![1.0, 2.0, 4.0];
    let run = |q: &SummaryQuery, v: &Vec<f64>| {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("t.csv");
        let body: String = v.iter().map(|x| format!("{x}\n")).collect();
        std::fs::write(&p, format!("x\n{body}")).expect("write");
        let mut rng = q.rng(p.as_path(), Some(3), false).expect("rng");
        q.release(p.as_path(), &mut rng).expect("release").estimates[0].value
    };
    let sum = query(Statistic::Sum, Neighbours::Bounded);
    assert_eq!(run(&sum, &a), run(&sum, &a));
    assert_ne!(run(&sum, &a), run(&sum, &b));
    let mut other = sum.clone();
    other.epsilon = 0.9;
    assert_ne!(sum.label().expect("l"), other.label().expect("l"));
    // Candidates matter to quantiles only.
    let mut more = sum.clone();
    more.candidates = 7;
    assert_eq!(sum.label().expect("l"), more.label().expect("l"));
    let q = query(Statistic::Quantiles(vec![0.5]), Neighbours::Bounded);
    let mut q7 = q.clone();
    q7.candidates = 7;
    assert_ne!(q.label().expect("l"), q7.label().expect("l"));
    let mean = query(Statistic::Mean, Neighbours::Bounded);
    assert_ne!(run(&mean, &a) * 3.0, run(&sum, &a));
}

#[test]
fn bad_parameters_are_refused_before_the_data() {
    let ok = query(Statistic::Mean, Neighbours::Bounded);
    assert!(ok.check().is_ok());
    for (lo, hi) in [(1.0, 1.0), (2.0, 1.0), (f64::NAN, 1.0), (1e20, 1e20 + 1e6)] {
        let mut q = ok.clone();
        (q.lo, q.hi) = (lo, hi);
        assert!(q.check().is_err(), "{lo}:{hi}");
    }
    for qs in [vec![], vec![0.0], vec![1.0], vec![0.1234567]] {
        assert!(
            query(Statistic::Quantiles(qs), Neighbours::Bounded)
                .check()
                .is_err()
        );
    }
    let mut q = query(Statistic::Quantiles(vec![0.5]), Neighbours::Bounded);
    q.candidates = 1;
    assert!(q.check().is_err());
    let mut rng = NoiseRng::from_os();
    let var = query(Statistic::Variance, Neighbours::Bounded);
    let e = var
        .release_values(&[1.0], "t".into(), &mut rng)
        .expect_err("n = 1");
    assert!(e.to_string().contains("at least 2"), "{e}");
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("t.csv");
    std::fs::write(&p, "x\n1\nNaN\n").expect("write");
    let e = var.release(p.as_path(), &mut rng).expect_err("NaN");
    assert!(e.to_string().contains("row 1"), "{e}");
}

/// A release states its guarantee, its parts' epsilons add up to at most epsilon, and the
/// estimates stay within what the bounds allow.
#[test]
fn releases_state_their_guarantee_and_parts() {
    let values: Vec<f64> = (0..50).map(f64::from).collect();
    let mut rng = NoiseRng::from_os();
    for stat in [
        Statistic::Sum,
        Statistic::Mean,
        Statistic::Variance,
        Statistic::Quantiles(vec![0.25, 0.5, 0.75]),
    ] {
        for nb in [Neighbours::Bounded, Neighbours::Unbounded] {
            let q = query(stat.clone(), nb);
            let r = q
                .release_values(&values, "t".into(), &mut rng)
                .expect("release");
            let spent: f64 = r.parts.iter().map(|p| p.epsilon).sum();
            assert!(spent <= q.epsilon, "{stat:?} {nb:?}: {spent}");
            assert_eq!(r.guarantee.epsilon, q.epsilon);
            assert_eq!(r.n.is_some(), nb == Neighbours::Bounded);
            for e in &r.estimates {
                assert!(e.value.is_finite());
            }
            if let Statistic::Quantiles(_) = stat {
                assert_eq!(r.estimates.len(), 3);
                assert!(r.estimates.iter().all(|e| (0.0..=10.0).contains(&e.value)));
            }
        }
    }
}

/// The counts below and above each candidate, accumulated in blocks of any size, are the
/// counts of the sorted column (values on, between and outside the candidates).
#[test]
fn candidate_counts_from_blocks_are_the_sorted_counts() {
    let cands = quantile::candidates(0.0, 10.0, 11);
    let values: Vec<f64> = (0..997)
        .map(|i| f64::from((i * 7919) % 1300) / 100.0 - 1.5)
        .chain([0.0, 10.0, 5.0, 5.0, -3.0, 12.0])
        .collect();
    let mut sorted = values.clone();
    sorted.sort_by(f64::total_cmp);
    let want = quantile::counts(&sorted, &cands);
    for block in [1, 2, 10, 333, 2000] {
        let mut c = quantile::CandidateCounts::new(cands.clone());
        values.chunks(block).for_each(|b| c.add(b));
        assert_eq!(c.counts(), want, "blocks of {block}");
        assert_eq!(c.rows(), values.len());
    }
}

/// Every statistic's release of a file, read in blocks, is the release of the column's
/// values read whole: the same estimates with the same seeded generator.
#[test]
fn a_release_read_in_blocks_is_the_release_of_the_whole_column() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("x.csv");
    // More rows than a block, values inside and outside the bounds.
    let values: Vec<f64> = (0..150_000)
        .map(|i| f64::from((i * 7919) % 12_001) / 1000.0 - 1.0)
        .collect();
    let mut text = String::from("x\n");
    for v in &values {
        text.push_str(&format!("{v}\n"));
    }
    std::fs::write(&path, text).expect("write");
    for statistic in [
        Statistic::Sum,
        Statistic::Mean,
        Statistic::Variance,
        Statistic::Quantiles(vec![0.1, 0.5, 0.9]),
    ] {
        for nb in [Neighbours::Bounded, Neighbours::Unbounded] {
            let q = query(statistic.clone(), nb);
            let whole = q
                .release_values(&values, path.clone(), &mut NoiseRng::from_seed_quiet(5))
                .expect("whole");
            let blocks = q
                .release(path.as_path(), &mut NoiseRng::from_seed_quiet(5))
                .expect("blocks");
            let est = |r: &SummaryReport| {
                r.estimates
                    .iter()
                    .map(|e| e.value.to_bits())
                    .collect::<Vec<_>>()
            };
            assert_eq!(est(&blocks), est(&whole), "{statistic:?} {nb:?}");
            assert_eq!(blocks.n, whole.n);
            let sums = q.accumulate(path.as_path()).expect("sums");
            assert_eq!(sums.rows(), values.len());
        }
    }
}
