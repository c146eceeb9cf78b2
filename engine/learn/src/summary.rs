//! The terminal summary of an aggregate-classifier run: the release, then (when
//! computed) the diagnostics, each of their lines marked NOT PRIVATE.

use crate::pipeline::Report;

impl Report {
    /// A short human summary for the terminal: the release, then (when computed) the
    /// diagnostics, each of their lines marked NOT PRIVATE.
    pub fn summary(&self) -> String {
        let r = &self.release;
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
        if let Some(w) = &r.rng.warning {
            s.push_str(&format!("  WARNING: {w}\n"));
        }
        let Some(dg) = &self.diagnostics else {
            return s;
        };
        let p = kinsey_dp::release::NOT_PRIVATE_PREFIX;
        s.push_str(&format!(
            "{p} party sizes {:?}; device {}\n",
            dg.party_sizes, dg.compute_device
        ));
        s.push_str(&format!(
            "{p} published noise: L2 sensitivity {:.3e}, E||eta|| = {:.3e}\n",
            dg.published_noise.l2_sensitivity, dg.published_noise.expected_noise_norm
        ));
        for line in &dg.protocol_summary {
            s.push_str(&format!("{p} {line}\n"));
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
}
