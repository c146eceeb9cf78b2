//! One guarantee on every release (issue 55): the classifier, a histogram, summary
//! statistics, a tree, a SuLQ analysis and a decayed sum each state the same
//! [`Guarantee`]: epsilon, delta, rho where the mechanism is zCDP, the neighbours, the
//! mechanism, the sensitivity as a formula and (where public) a value, and the noise std
//! where one number states it.

pub use kinsey_dp::release::{Guarantee, GuaranteeKind, NeighbourRelation};

/// A release that states its guarantee.
///
/// ```no_run
/// use kinsey::prelude::*;
///
/// let h = Histogram::count()
///     .epsilon(0.5)
///     .neighbours(Neighbours::Unbounded)
///     .of_column("flights.parquet", "delay")?;
/// let g = h.guarantee();
/// assert_eq!((g.epsilon, g.delta), (0.5, 0.0));
/// assert!(g.noise_std.is_some());
/// # Ok::<(), kinsey::Error>(())
/// ```
pub trait Released {
    /// What the release guarantees.
    fn guarantee(&self) -> Guarantee;
}

#[cfg(feature = "classifier")]
impl Released for crate::classifier::Trained {
    fn guarantee(&self) -> Guarantee {
        self.release().guarantee.clone()
    }
}

#[cfg(feature = "stats")]
mod stats_releases {
    use super::{Guarantee, Released};
    use kinsey_stats::sulq::Stated;
    use kinsey_stats::sulq::release::{SulqRelease, SulqRun};

    impl Released for kinsey_stats::histogram_query::HistogramReport {
        fn guarantee(&self) -> Guarantee {
            self.release.guarantee.clone()
        }
    }

    impl Released for crate::stats::SummaryOutput {
        /// The report's guarantee; its noise std where the release is one value that
        /// states one (each value states its own otherwise).
        fn guarantee(&self) -> Guarantee {
            let r = &self.report;
            let mut g = r.guarantee.clone();
            if let [one] = r.estimates.as_slice() {
                g.noise_std = one.noise_std;
            }
            g
        }
    }

    impl Released for crate::stats::TreeOutput {
        /// A private tree's guarantee (the leaf counts' noise std); the non-private
        /// baseline (`selection = "none"`) is no release and states an infinite epsilon.
        fn guarantee(&self) -> Guarantee {
            self.outcome
                .guarantee
                .clone()
                .unwrap_or_else(|| baseline(self.outcome.config.epsilon))
        }
    }

    fn baseline(epsilon: f64) -> Guarantee {
        Guarantee {
            kind: super::GuaranteeKind::Pure,
            epsilon,
            delta: 0.0,
            neighbours: super::NeighbourRelation::ReplaceOneRow,
            mechanism: "none: the non-private baseline (exact data, a diagnostic)".into(),
            sensitivity: "none".into(),
            sensitivity_value: None,
            rho: None,
            noise_std: None,
        }
    }

    impl<A, R: Stated> Released for SulqRelease<A, R> {
        fn guarantee(&self) -> Guarantee {
            self.result.sulq_guarantee().stated()
        }
    }

    impl<A, R: Stated> Released for SulqRun<A, R> {
        fn guarantee(&self) -> Guarantee {
            self.result.sulq_guarantee().stated()
        }
    }

    impl<A, R: Stated> Released for crate::sulq::SulqOutput<A, R> {
        fn guarantee(&self) -> Guarantee {
            self.run.guarantee()
        }
    }

    impl Released for kinsey_decay::DecayRelease {
        /// The release's guarantee, with the stated std of its last estimate.
        fn guarantee(&self) -> Guarantee {
            let mut g = self.guarantee.clone();
            g.noise_std = Some(self.std_at_last_step);
            g
        }
    }

    impl Released for crate::decay::DecayOutput {
        fn guarantee(&self) -> Guarantee {
            self.release.guarantee()
        }
    }

    impl Released for crate::decay::DecayWritten {
        fn guarantee(&self) -> Guarantee {
            self.release.guarantee()
        }
    }
}

#[cfg(all(test, feature = "stats", feature = "classifier"))]
mod tests {
    use super::*;
    use crate::prelude::*;
    use crate::stats::{Summary, Tree};
    use crate::sulq::{Budget, GaussianCalibration, kmeans_release};

    fn table(dir: &std::path::Path) -> std::path::PathBuf {
        let mut s = String::from("f,a,b,label\n");
        for i in 0..200 {
            let label = if i % 3 == 0 { 1 } else { -1 };
            s.push_str(&format!("{},{},{},{label}\n", i % 10, i % 2, (i / 2) % 2));
        }
        let p = dir.join("t.csv");
        std::fs::write(&p, s).expect("csv");
        p
    }

    /// Every kind of release states the one guarantee type, with its epsilon, and its noise
    /// std where one number states it.
    #[test]
    fn every_release_states_one_guarantee() -> Result<()> {
        let dir = tempfile::tempdir().expect("dir");
        let csv = table(dir.path());
        let h = Histogram::count()
            .epsilon(0.5)
            .neighbours(Neighbours::Bounded)
            .of_column(&csv, "f")?
            .guarantee();
        assert_eq!(
            (h.epsilon, h.delta, h.sensitivity_value),
            (0.5, 0.0, Some(2.0))
        );
        // sqrt(2) times the Laplace scale 2 / 0.5, on the exact sampler's grid.
        let std = h.noise_std.expect("a histogram states its noise std");
        assert!(
            (std / (std::f64::consts::SQRT_2 * 4.0) - 1.0).abs() < 1e-3,
            "{std}"
        );

        let s = Summary::named("mean", &[])?
            .bounds(0.0, 10.0)
            .epsilon(1.0)
            .neighbours(Neighbours::Bounded)
            .of_column(&csv, "f")?
            .guarantee();
        assert_eq!(s.epsilon, 1.0);
        assert!(s.noise_std.is_some_and(|x| x > 0.0), "{s:?}");

        let t = Tree::new("label", Neighbours::Bounded)
            .attributes(&["a", "b"])
            .epsilon(1.0)
            .of_file(&csv)?
            .guarantee();
        assert_eq!(t.epsilon, 1.0);
        assert!(t.noise_std.is_some_and(|x| x > 0.0), "{t:?}");

        let budget = Budget {
            epsilon: 1.0,
            delta: 1e-6,
            neighbours: Neighbours::Bounded,
            calibration: GaussianCalibration::Zcdp,
            seed: None,
            record_seed: false,
        };
        let cols = ["a".to_string(), "b".to_string()];
        let k = kmeans_release(&csv, &cols, false, (2, 2), &budget, DevicePref::Cpu)?.guarantee();
        assert!(k.epsilon <= 1.0 + 1e-9 && k.delta == 1e-6, "{k:?}");
        assert!(
            k.rho.is_some() && k.noise_std.is_some_and(|x| x > 0.0),
            "{k:?}"
        );

        let steps = vec![1.0; 64];
        let d = DecayedSum::window(4)
            .epsilon(1.0)
            .bound(Bound::clamp(1.0)?)
            .over_values(&steps)?;
        assert_eq!(d.guarantee().noise_std, Some(d.release.std_at_last_step));
        let z = DecayedSum::window(4)
            .zcdp(0.5, None)
            .bound(Bound::clamp(1.0)?)
            .over_values(&steps)?
            .guarantee();
        assert_eq!(z.rho, Some(0.5));
        assert_eq!(z.kind, GuaranteeKind::ZcdpConverted);

        let parties = crate::data::synthetic_parties(&dir.path().join("p"), 3, 200, 3)?;
        let c = Job::builder()
            .parquet_parties(parties, "label")
            .epsilon(1.0)
            .backend(Backend::mock_insecure())
            .build()?
            .run()?
            .guarantee();
        assert_eq!(c.epsilon, 1.0);
        // The classifier's sensitivity depends on the smallest party's size: secret.
        assert_eq!((c.sensitivity_value, c.noise_std), (None, None));
        Ok(())
    }
}
