//! Terminal text of the classifier's runs, which the libraries return as typed reports
//! and never format (issue 54): the release, then (when computed) the diagnostics, each of
//! their lines marked NOT PRIVATE, and the secure protocol's stage lines.

use kinsey::classifier::Report;
use kinsey::dp::release::NOT_PRIVATE_PREFIX;
use serde_json::Value;

/// A short human summary of a classifier run for the terminal.
pub(crate) fn classifier(report: &Report) -> String {
    let r = &report.release;
    let mut s = String::new();
    s.push_str(&format!(
        "kinsey: DP aggregate classifier, K = {} parties, d = {}\n",
        r.parties, r.dim
    ));
    s.push_str(&format!(
        "  privacy: {}, neighbours {}; calibration = {}, noise = {}, gradient bound {:e}\n",
        r.guarantee.short(),
        r.guarantee.neighbours.describe(),
        r.privacy.calibration.name(),
        r.privacy.noise.name(),
        r.gradient_bound
    ));
    s.push_str(&format!("  aggregation: {}\n", r.aggregator));
    if let Some(w) = &r.security_warning {
        s.push_str(&format!("  WARNING: {w}\n"));
    }
    // The seed's warning, unless this run has shown it already (once a run, not per layer).
    if let Some(w) = r
        .rng
        .warning
        .as_ref()
        .filter(|_| kinsey_dp::rng::first_seed_warning())
    {
        s.push_str(&format!("  WARNING: {w}\n"));
    }
    let Some(dg) = &report.diagnostics else {
        return s;
    };
    let p = NOT_PRIVATE_PREFIX;
    s.push_str(&format!(
        "{p} party sizes {:?}; device {}\n",
        dg.party_sizes, dg.compute_device
    ));
    s.push_str(&format!(
        "{p} published noise: L2 sensitivity {:.3e}, E||eta|| = {:.3e}\n",
        dg.published_noise.l2_sensitivity, dg.published_noise.expected_noise_norm
    ));
    if let Some(protocol) = &dg.protocol {
        for line in protocol_lines(protocol, "  ").lines() {
            s.push_str(&format!("{p} {line}\n"));
        }
    }
    if dg.matches_plaintext_reference == Some(true) {
        s.push_str(&format!(
            "{p} secure result = plaintext reference with the same noise (bit for bit)\n"
        ));
    }
    for m in &dg.models {
        s.push_str(&format!(
            "{p} {:<22} objective {:.6}  train misclassified {:.4}{}\n",
            m.name,
            m.objective,
            m.train_error,
            m.test_error
                .map(|e| format!("  test misclassified {e:.4}"))
                .unwrap_or_default()
        ));
    }
    s.push_str(&format!(
        "{p} Theorem 4.2: ||w_hat - w*|| = {:.3e} <= bound {:.3e} (ratio {:.3})\n",
        dg.theorem_4_2.distance, dg.theorem_4_2.bound, dg.theorem_4_2.ratio
    ));
    s.push_str(&format!("{p} total time {:.2} s\n", dg.timings.total_s));
    s
}

/// The secure protocol's report (its JSON, as the diagnostics hold it): a headline, then one
/// line per stage with wall time, crypto time, traffic, rounds and operation counts.
pub(crate) fn protocol_lines(report: &Value, indent: &str) -> String {
    let f = |v: &Value, k: &str| v.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let mut s = format!(
        "protocol: {:.2} s, {} homomorphic operations, {:.1} KiB sent in all; {}\n",
        f(report, "wall_seconds"),
        report
            .get("homomorphic_operations")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        f(report, "total_bytes") / 1024.0,
        report
            .get("comparison")
            .and_then(Value::as_str)
            .unwrap_or("")
    );
    s.push_str(&stage_lines(report, indent));
    s
}

/// One line per stage of a protocol report's JSON.
pub(crate) fn stage_lines(report: &Value, indent: &str) -> String {
    let f = |v: &Value, k: &str| v.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let stages = report.get("stages").and_then(Value::as_array);
    let mut s = String::new();
    for st in stages.into_iter().flatten() {
        let ops = st
            .get("operations")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| format!("{k:?}: {}", v.as_u64().unwrap_or(0)))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        s.push_str(&format!(
            "{indent}{:<40} {:>8.3} s wall {:>8.3} s crypto {:>10.1} KiB {:>5} rounds  {{{ops}}}\n",
            st.get("stage").and_then(Value::as_str).unwrap_or(""),
            f(st, "wall_seconds"),
            f(st, "crypto_seconds"),
            f(st, "bytes") / 1024.0,
            st.get("rounds")
                .and_then(Value::as_u64)
                .map_or("-".to_string(), |r| r.to_string()),
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stage line carries the stage's figures and its operations, as the typed report's
    /// Debug printed them before the text moved here.
    #[test]
    fn stage_lines_render_the_report() {
        let r = serde_json::json!({
            "wall_seconds": 1.5, "homomorphic_operations": 12, "total_bytes": 2048,
            "comparison": "DGK",
            "stages": [{"stage": "stage 1", "wall_seconds": 0.25, "crypto_seconds": 0.125,
                        "bytes": 1024, "rounds": 3, "operations": {"add": 4, "mul": 8}},
                       {"stage": "stage 2", "wall_seconds": 1.0, "crypto_seconds": 0.5,
                        "bytes": 0, "rounds": null, "operations": {}}]
        });
        let text = protocol_lines(&r, "  ");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].starts_with("protocol: 1.50 s, 12 homomorphic operations, 2.0 KiB"));
        assert!(lines[1].contains("stage 1") && lines[1].contains("{\"add\": 4, \"mul\": 8}"));
        assert!(lines[1].contains("3 rounds") && lines[2].contains("- rounds  {}"));
    }
}
