//! A decayed-sum release described once, for the CLI and the library alike: its public
//! parameters ([`Query`]), the seeded-noise label they encode, and the release report
//! ([`DecayRelease`]). The CLI only reads files and writes what this returns.

use super::model::{DecayedSum, ModelParams};
use super::noise;
use kinsey_core::{Error, Result};
use kinsey_dp::DataDigest;
use kinsey_dp::release::Guarantee;
use serde::Serialize;

/// Where a series comes from: one column, or events bucketed into steps. Every field is
/// public (the input file enters a seeded key through its digest, never its path).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct SeriesSource {
    /// The value column (a column series).
    pub column: String,
    /// The timestamp column of an event series.
    pub time_column: Option<String>,
    /// Step width of an event series, in seconds.
    pub step_seconds: Option<i64>,
    /// The public first and last time of an event series (seconds).
    pub range: Option<(i64, i64)>,
    /// The event filter, as the user wrote it (`delay>=15`).
    pub predicate: Option<String>,
}

/// Every public parameter of one decayed-sum release: what it computes and under which
/// guarantee. Its [`label`](Self::label) keys a seeded run's noise (with the data's digest).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Query {
    /// The model's name ([`super::MODELS`]).
    pub model: String,
    /// Its parameters as the user gave them (a horizon left out defaults to the series'
    /// public length when the mechanism is built, not here: the label is the same whichever
    /// path reads the series).
    pub params: ModelParams,
    /// Privacy parameter of the whole output sequence.
    pub epsilon: f64,
    /// The per-step bound `B`.
    pub bound: f64,
    /// The series.
    pub source: SeriesSource,
}

/// How a release's noise key was made, in the words its report states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyOrigin {
    /// A fresh 256-bit key from the OS, not stored.
    Os,
    /// Derived from a user seed (recorded in the report only when `recorded`).
    Seed {
        /// The seed.
        seed: u64,
        /// Whether the report names it.
        recorded: bool,
    },
}

impl KeyOrigin {
    /// From the user's seed flag and whether to record it.
    pub fn of(seed: Option<u64>, recorded: bool) -> Self {
        seed.map_or(Self::Os, |seed| Self::Seed { seed, recorded })
    }

    fn seed(self) -> Option<u64> {
        match self {
            Self::Os => None,
            Self::Seed { seed, .. } => Some(seed),
        }
    }
}

impl Query {
    /// The label encoding's version: bumped whenever the encoding changes, so a seed never
    /// replays noise across two encodings of different parameters.
    pub const LABEL_VERSION: &'static str = "kinsey.decay.v2";

    /// The canonical seeded-noise label: the version, then the query as JSON (serde names,
    /// fields in declaration order, shortest round-trip numbers).
    pub fn label(&self) -> Result<String> {
        let json = serde_json::to_string(self)
            .map_err(|e| Error::Numerical(format!("decay label: {e}")))?;
        Ok(format!("{}|{json}", Self::LABEL_VERSION))
    }

    /// The noise key: from the OS, or derived from the seed, [`label`](Self::label) and the
    /// data's digest (`data` is called only with a seed).
    pub fn key(
        &self,
        origin: KeyOrigin,
        data: impl FnOnce() -> Result<DataDigest>,
    ) -> Result<[u8; 32]> {
        noise::key(origin.seed(), &self.label()?, data)
    }
}

/// Which path computed the estimates (the same numbers either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Path {
    /// One step at a time.
    Online,
    /// Whole chunks, noise drawn in parallel.
    Bulk,
}

/// The release report of a decayed-sum run (`<out>.report.json`): public parameters,
/// calibration and guarantee only. Fields are in alphabetical order, the order the report
/// has always had.
#[derive(Debug, Clone, Serialize)]
pub struct DecayRelease {
    /// The model's calibration.
    pub calibration: super::model::CalibrationReport,
    /// The value column.
    pub column: String,
    /// What the release guarantees.
    pub guarantee: Guarantee,
    /// The input, as the caller named it.
    pub input: String,
    /// Where the noise was drawn.
    pub noise_drawn_on: String,
    /// How the noise key was made.
    pub noise_key: String,
    /// Which path ran.
    pub path: Path,
    /// The estimate's noise standard deviation at the last step.
    pub std_at_last_step: f64,
    /// Steps released (public).
    pub steps: u64,
    /// Why the number of steps is public.
    pub steps_are: &'static str,
    /// The user-seed warning, when a seed was used.
    pub warning: Option<&'static str>,
    /// Where the series came from (every field public): the column, or the time column,
    /// step width, range and event filter of a time-bucketed series.
    pub series: SeriesSource,
    /// A time-bucketed series' first and last step start, as `YYYY-MM-DDTHH:MM:SS`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_range: Option<[String; 2]>,
    /// The noisy count of clamped steps, when asked for (`--clamp-check`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clamp_check: Option<ClampCheck>,
}

/// A noisy count of the steps clamped to the bound, released beside the sums with an epsilon
/// of its own: changing one step changes whether it is clamped, so the count has sensitivity
/// 1 (exact discrete Laplace on a grid, as every scalar release).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ClampCheck {
    /// Its epsilon, added to the sums' (sequential composition).
    pub epsilon: f64,
    /// The noisy number of clamped steps.
    pub noisy_clamped_steps: f64,
    /// The release's total epsilon: the sums' plus this one.
    pub total_epsilon: f64,
    /// Whether the noisy count exceeds 1% of the steps by more than three noise standard
    /// deviations (then the command warns; a count of zero clamped steps passes for that
    /// about 1.4% of the time).
    pub frequent: bool,
}

impl ClampCheck {
    /// The check of `clamped` (exact, NOT PRIVATE) of `steps` at `epsilon`, on top of the
    /// sums' `sums_epsilon`.
    pub fn new(
        clamped: usize,
        steps: u64,
        epsilon: f64,
        sums_epsilon: f64,
        rng: &mut kinsey_dp::NoiseRng,
    ) -> kinsey_core::Result<Self> {
        let mech = kinsey_dp::LaplaceMechanism::new(1.0, epsilon)?;
        let noisy = mech.release(clamped as f64, rng)?;
        Ok(Self {
            epsilon,
            noisy_clamped_steps: noisy,
            total_epsilon: sums_epsilon + epsilon,
            frequent: noisy > 0.01 * steps as f64 + 3.0 * std::f64::consts::SQRT_2 * mech.scale(),
        })
    }
}

impl DecayRelease {
    /// The report of `m`'s release of `steps` steps of `input` (as the caller names it).
    pub fn new(
        m: &dyn DecayedSum,
        query: &Query,
        input: String,
        steps: u64,
        path: Path,
        device: &str,
        origin: KeyOrigin,
    ) -> Self {
        Self {
            calibration: m.calibration(),
            column: query.source.column.clone(),
            guarantee: m.guarantee(),
            input,
            noise_drawn_on: match path {
                Path::Online => "CPU".into(),
                Path::Bulk => device.into(),
            },
            noise_key: match origin {
                KeyOrigin::Seed {
                    seed,
                    recorded: true,
                } => format!("derived from user seed {seed} and the release's parameters"),
                KeyOrigin::Seed { .. } => {
                    "derived from a user seed and the release's parameters (seed not recorded)"
                        .into()
                }
                KeyOrigin::Os => "OS-random 256-bit key (not stored)".into(),
            },
            path,
            std_at_last_step: m.noise_std(0, steps.saturating_sub(1)),
            steps,
            steps_are: "public: the column's length, or --start..=--end",
            warning: origin.seed().map(|_| kinsey_dp::rng::USER_SEED_WARNING),
            series: query.source.clone(),
            time_range: match (query.source.range, query.source.step_seconds) {
                (Some((start, _)), Some(step)) if steps > 0 => Some([
                    kinsey_data::series::format_time(start),
                    kinsey_data::series::format_time(start + (steps as i64 - 1) * step),
                ]),
                _ => None,
            },
            clamp_check: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kinsey_kernels::DevicePref;

    fn query() -> Query {
        Query {
            model: "window".into(),
            params: ModelParams {
                window: Some(8),
                ..ModelParams::default()
            },
            epsilon: 1.0,
            bound: 2.0,
            source: SeriesSource {
                column: "value".into(),
                ..SeriesSource::default()
            },
        }
    }

    #[test]
    fn every_parameter_changes_the_label_and_the_seeded_key() {
        let base = query();
        let digest = || Ok(DataDigest([5; 32]));
        let seeded = KeyOrigin::of(Some(7), false);
        let k0 = base.key(seeded, digest).expect("key");
        assert_eq!(k0, base.key(seeded, digest).expect("again"));
        let mut variants = vec![base.clone(); 5];
        variants[0].epsilon = 1.5;
        variants[1].bound = 1.0;
        variants[2].params.window = Some(9);
        variants[3].source.column = "other".into();
        variants[4].model = "laplace".into();
        for v in &variants {
            assert_ne!(v.label().expect("label"), base.label().expect("label"));
            assert_ne!(v.key(seeded, digest).expect("key"), k0, "{v:?}");
        }
        // Other data, same parameters: another key.
        let other = base.key(seeded, || Ok(DataDigest([6; 32]))).expect("key");
        assert_ne!(other, k0);
        assert!(
            base.label()
                .expect("label")
                .starts_with("kinsey.decay.v2|{")
        );
    }

    #[test]
    fn the_report_states_the_key_origin_without_the_seed_unless_asked() {
        let q = query();
        let (m, device) = q
            .mechanism(Some(20), [1; 32], DevicePref::Cpu)
            .expect("mechanism");
        let hidden = DecayRelease::new(
            m.as_ref(),
            &q,
            "x.csv".into(),
            20,
            Path::Bulk,
            &device,
            KeyOrigin::of(Some(4242), false),
        );
        let text = serde_json::to_string(&hidden).expect("json");
        assert!(!text.contains("4242"), "{text}");
        assert!(text.contains("\"path\":\"bulk\""), "{text}");
        let shown = DecayRelease::new(
            m.as_ref(),
            &q,
            "x.csv".into(),
            20,
            Path::Online,
            &device,
            KeyOrigin::of(Some(4242), true),
        );
        assert!(shown.noise_key.contains("4242"));
        assert_eq!(shown.noise_drawn_on, "CPU");
    }
}
