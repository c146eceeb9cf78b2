//! Release versus diagnostics: what a command may publish, and where everything else goes.
//!
//! Architecture invariant: every command's output is split in two.
//! * The **release**: the private values and a [`Guarantee`] (mechanism, neighbour
//!   definition, sensitivity, epsilon, delta) plus public parameters only: values the user
//!   declared (bounds, bins, epsilon, horizon, start/end) or that the neighbour definition
//!   makes public (n under bounded neighbours without a filter). It goes to the files the
//!   command always writes and to stdout.
//! * The **diagnostics**: anything computed from the exact data (true values, exact counts,
//!   clipping counts, per-party sizes and fits, non-private baselines, test errors, timings
//!   that depend on the data). They are computed and written only when asked for
//!   (`--diagnostics`; on by default only for `demo` and `experiment`, which run on synthetic
//!   or public data), to files whose first field says NOT PRIVATE ([`NotPrivate`]), and to
//!   stdout only on lines that start with [`NOT_PRIVATE_PREFIX`].
//!
//! Error messages about private data name the file, column and kind of problem, never a
//! private value, row number or count.
//!
//! The CLI test `release_files_hold_no_exact_statistic_*` runs every command and scans every
//! release file and stdout for the exact values it knows.

use serde::Serialize;

/// The first field of every diagnostics file, and what it says.
pub(crate) const NOT_PRIVATE_NOTICE: &str = "NOT PRIVATE: computed from the exact data; not covered \
by any privacy guarantee. Do not publish.";

/// Every stdout line that shows a diagnostic starts with this.
pub const NOT_PRIVATE_PREFIX: &str = "NOT PRIVATE (diagnostic):";

/// A diagnostics document: `{"NOT PRIVATE": notice, "diagnostics": ...}`, in that order.
#[derive(Debug, Serialize)]
pub struct NotPrivate<'a, T: Serialize> {
    #[serde(rename = "NOT PRIVATE")]
    notice: &'static str,
    diagnostics: &'a T,
}

impl<'a, T: Serialize> NotPrivate<'a, T> {
    /// Wrap diagnostics for writing.
    pub fn new(diagnostics: &'a T) -> Self {
        Self {
            notice: NOT_PRIVATE_NOTICE,
            diagnostics,
        }
    }
}

/// Which kind of differential privacy a release guarantees (serialised as `pure`,
/// `approximate`, `zcdp-converted`).
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub enum GuaranteeKind {
    /// eps-DP (delta = 0).
    #[serde(rename = "pure")]
    Pure,
    /// (eps, delta)-DP.
    #[serde(rename = "approximate")]
    Approximate,
    /// rho-zCDP stated as (eps, delta)-DP.
    #[serde(rename = "zcdp-converted")]
    ZcdpConverted,
}

/// The neighbouring data sets a guarantee is stated for; a report states it in words
/// ([`describe`](Self::describe)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NeighbourRelation {
    /// One row of one party replaced, every party's size fixed (the aggregate classifier).
    ReplaceOneRowOfOneParty,
    /// One step's value changed within `[0, B]` (decayed sums; event level).
    ChangeOneStep,
    /// One step's bit flipped (randomized response over bits).
    ChangeOneBit,
    /// One row of a table added or removed (its number of rows private).
    AddRemoveOneRow,
    /// One row of a table replaced (its number of rows public).
    ReplaceOneRow,
}

impl NeighbourRelation {
    /// The relation in words, as reports state it.
    pub fn describe(self) -> &'static str {
        match self {
            Self::ReplaceOneRowOfOneParty => {
                "bounded: replace one row of one party (party sizes fixed)"
            }
            Self::ChangeOneStep => {
                "change one step's value to any other within [0, B], B the declared per-step \
                 bound (calibration.bound): with events counted per step, up to B events of \
                 one step; one event when B = 1"
            }
            Self::ChangeOneBit => "change one step's bit",
            Self::AddRemoveOneRow => "unbounded: add or remove one row (the row count is private)",
            Self::ReplaceOneRow => "bounded: replace one row (the row count is public)",
        }
    }
}

impl Serialize for NeighbourRelation {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.describe())
    }
}

/// What a release guarantees, stated in every release report.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Guarantee {
    /// Pure, approximate or zCDP-converted.
    pub kind: GuaranteeKind,
    /// Epsilon of the guarantee.
    pub epsilon: f64,
    /// Delta of the guarantee (0 for pure DP).
    pub delta: f64,
    /// The neighbour relation the guarantee is stated for.
    pub neighbours: NeighbourRelation,
    /// The mechanism and its noise law.
    pub mechanism: String,
    /// The sensitivity's formula, with its value where that is public, or as a formula of
    /// public and secret quantities where it is not (the aggregate classifier's n_(1)).
    pub sensitivity: String,
    /// The sensitivity's value, where it is public (`None`: it depends on a secret).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sensitivity_value: Option<f64>,
    /// zCDP's rho, where the mechanism is stated in zCDP (`epsilon` and `delta` are then its
    /// conversion).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rho: Option<f64>,
    /// The standard deviation of the noise on one released value, where one number states
    /// it (a histogram's count, a decayed sum's last estimate, a SuLQ unit query); `None`
    /// where it differs by value (each value then states its own) or depends on a secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noise_std: Option<f64>,
}

impl Guarantee {
    /// The guarantee in a few words for a terminal: `pure 1-DP` or `(1, 2.3e-60)-DP`.
    pub fn short(&self) -> String {
        if self.delta > 0.0 {
            format!("({}, {:.1e})-DP", self.epsilon, self.delta)
        } else {
            format!("pure {}-DP", self.epsilon)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_short_form_states_delta_when_there_is_one() {
        let mut g = Guarantee {
            kind: GuaranteeKind::Pure,
            epsilon: 1.0,
            delta: 0.0,
            neighbours: NeighbourRelation::ChangeOneBit,
            mechanism: String::new(),
            sensitivity: String::new(),
            sensitivity_value: Some(1.0),
            rho: None,
            noise_std: None,
        };
        assert_eq!(g.short(), "pure 1-DP");
        g.delta = 2.3e-60;
        assert_eq!(g.short(), "(1, 2.3e-60)-DP");
        let text = serde_json::to_string(&g).expect("json");
        assert!(text.contains("\"kind\":\"pure\""), "{text}");
        assert!(
            text.contains("\"neighbours\":\"change one step's bit\""),
            "{text}"
        );
        g.sensitivity_value = None;
        let text = serde_json::to_string(&g).expect("json");
        assert!(!text.contains("sensitivity_value"), "{text}");
    }

    #[test]
    fn diagnostics_files_start_with_not_private() {
        let v = serde_json::json!({"a_count": 3, "b": [1, 2]});
        let text = serde_json::to_string(&NotPrivate::new(&v)).expect("json");
        assert!(text.starts_with("{\"NOT PRIVATE\":"), "{text}");
    }
}
