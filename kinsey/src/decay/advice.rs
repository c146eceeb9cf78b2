//! Whether a decayed-sum release says anything: its stated error against the largest sum
//! the model can release, both public, so the advice is too.

use kinsey_decay::{DecayRelease, Query};

/// Past this fraction of the largest releasable sum, the stated std of the last estimate
/// makes the release say little, and the summary says so.
pub const USEFUL_STD_FRACTION: f64 = 0.1;

/// The largest value the model's estimate can take at the last of `steps` steps when every
/// step holds the bound, and how it is computed, from public parameters only; `None` for a
/// model without one (an unknown name).
fn largest_sum(query: &Query, steps: u64) -> Option<(f64, String)> {
    let b = query.bound;
    let p = &query.params;
    let n = steps.max(1);
    match query.model.as_str() {
        "window" | "laplace" | "rr" => {
            let w = p.window?.min(n);
            Some((w as f64 * b, format!("window {w} x bound {b}")))
        }
        "allwindow" => {
            let w = (*p.windows.as_ref()?.first()?).min(n);
            Some((w as f64 * b, format!("window {w} x bound {b}")))
        }
        "running" => Some((n as f64 * b, format!("{n} steps x bound {b}"))),
        "exponential" => {
            let a = p.alpha?;
            let s = (1.0 - a.powf(n as f64)) / (1.0 - a);
            Some((s * b, format!("bound {b} x (1 - alpha^n) / (1 - alpha)")))
        }
        "polynomial" => {
            let c = p.c?;
            let s: f64 = (0..n.min(1 << 20)).map(|i| ((i + 1) as f64).powf(-c)).sum();
            Some((s * b, format!("bound {b} x the sum of (i + 1)^-c")))
        }
        _ => None,
    }
}

/// A line for the release's summary when the stated std of its last estimate exceeds
/// [`USEFUL_STD_FRACTION`] of the largest sum it can release, naming the parameters that
/// lower it; `None` when the release is informative.
pub fn usefulness(query: &Query, release: &DecayRelease) -> Option<String> {
    let std = release.std_at_last_step;
    let (range, how) = largest_sum(query, release.steps)?;
    if range.is_nan() || range <= 0.0 || std <= USEFUL_STD_FRACTION * range {
        return None;
    }
    let mut fixes = vec!["raise epsilon (the std falls as 1/epsilon)".to_string()];
    if query.model != "rr" {
        fixes.push(
            "lower the bound if the values allow it (the std grows with it; values above it \
             are clamped)"
                .into(),
        );
    }
    if matches!(query.params.mechanism.as_deref(), None | Some("tree")) {
        fixes.push("choose mechanism best (the least stated error)".into());
    }
    if matches!(query.model.as_str(), "window" | "allwindow") {
        fixes.push("use a longer window (its sums grow with it, the std only with its log)".into());
    }
    Some(format!(
        "the estimates say little: the stated std of the last one ({std:.1}) is {:.0}% of the \
         largest true sum it can estimate ({range:.0} = {how}); to lower it: {}",
        100.0 * std / range,
        fixes.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use crate::decay::{Bound, DecayedSum};

    #[test]
    fn a_release_that_says_little_is_named_and_an_informative_one_is_not() {
        let steps = vec![500.0; 2000];
        let out = DecayedSum::window(24)
            .epsilon(1.0)
            .bound(Bound::clamp(1000.0).expect("bound"))
            .over_values(&steps)
            .expect("release");
        let advice = out.advice.expect("window 24 at bound 1000 says little");
        assert!(
            advice.contains("24000 = window 24 x bound 1000"),
            "{advice}"
        );
        assert!(advice.contains("raise epsilon"), "{advice}");
        // The same release over bits, a long window and the best mechanism: informative.
        let bits: Vec<f64> = (0..20_000).map(|i| f64::from(i % 3 == 0)).collect();
        let out = DecayedSum::window(1440)
            .epsilon(1.0)
            .mechanism("best")
            .bound(Bound::clamp(1.0).expect("bound"))
            .over_values(&bits)
            .expect("release");
        assert!(out.advice.is_none(), "{:?}", out.advice);
        // An exponential sum's largest value is B (1 - alpha^n) / (1 - alpha).
        let out = DecayedSum::exponential(0.5)
            .epsilon(0.01)
            .bound(Bound::clamp(1.0).expect("bound"))
            .over_values(&bits[..100])
            .expect("release");
        let advice = out.advice.expect("alpha 0.5 at epsilon 0.01 says little");
        assert!(advice.contains("(2 = bound 1"), "{advice}");
    }
}
