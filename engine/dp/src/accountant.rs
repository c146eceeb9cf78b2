//! Privacy-budget accountant under basic sequential composition: the epsilons and deltas
//! of the mechanisms applied to one data set add up. A spend that would exceed the budget
//! is refused (nothing is recorded) with an error naming the request and what is left.

use kinsey_core::{Error, Result, check_delta, check_epsilon};
use serde::Serialize;

/// Relative slack for float round-off when comparing sums to the budget (0.1 + 0.2 vs 0.3).
const SLACK: f64 = 1e-12;

/// One recorded spend.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Spend {
    /// What the budget was spent on.
    pub label: String,
    /// Epsilon spent.
    pub epsilon: f64,
    /// Delta spent.
    pub delta: f64,
}

/// A budget and its ledger.
#[derive(Debug, Clone, Serialize)]
pub struct Accountant {
    pub(crate) epsilon_budget: f64,
    pub(crate) delta_budget: f64,
    /// Every spend, in order.
    pub ledger: Vec<Spend>,
}

impl Accountant {
    /// An accountant with a total budget of `(epsilon_budget, delta_budget)`.
    pub fn new(epsilon_budget: f64, delta_budget: f64) -> Result<Self> {
        check_epsilon("epsilon budget", epsilon_budget)?;
        check_delta("delta budget", delta_budget)?;
        Ok(Self {
            epsilon_budget,
            delta_budget,
            ledger: Vec::new(),
        })
    }

    /// `(epsilon, delta)` spent so far.
    pub fn spent(&self) -> (f64, f64) {
        self.ledger
            .iter()
            .fold((0.0, 0.0), |(e, d), s| (e + s.epsilon, d + s.delta))
    }

    /// `(epsilon, delta)` left.
    pub fn remaining(&self) -> (f64, f64) {
        let (e, d) = self.spent();
        (
            (self.epsilon_budget - e).max(0.0),
            (self.delta_budget - d).max(0.0),
        )
    }

    /// Record a spend, or refuse it if it would exceed the budget.
    pub fn spend(&mut self, label: &str, epsilon: f64, delta: f64) -> Result<()> {
        check_epsilon(label, epsilon)?;
        check_delta(label, delta)?;
        let (e, d) = self.spent();
        if e + epsilon > self.epsilon_budget * (1.0 + SLACK) {
            return Err(Error::Budget(format!(
                "'{label}' asks for epsilon {epsilon}, but only {} of {} is left",
                self.epsilon_budget - e,
                self.epsilon_budget
            )));
        }
        if d + delta > self.delta_budget * (1.0 + SLACK) + f64::MIN_POSITIVE {
            return Err(Error::Budget(format!(
                "'{label}' asks for delta {delta}, but only {} of {} is left",
                self.delta_budget - d,
                self.delta_budget
            )));
        }
        self.ledger.push(Spend {
            label: label.to_string(),
            epsilon,
            delta,
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spends_add_up_and_overspend_is_refused() {
        let mut a = Accountant::new(0.3, 0.0).expect("valid");
        a.spend("a", 0.1, 0.0).expect("fits");
        a.spend("b", 0.2, 0.0)
            .expect("fits despite 0.1 + 0.2 != 0.3 in floats");
        let err = a.spend("c", 0.01, 0.0).expect_err("over budget");
        assert!(err.to_string().contains("'c'"));
        assert_eq!(a.ledger.len(), 2, "a refused spend is not recorded");
        assert!(a.spend("d", 0.0, 0.0).is_err(), "eps must be > 0");
    }

    #[test]
    fn delta_is_accounted() {
        let mut a = Accountant::new(1.0, 1e-6).expect("valid");
        a.spend("g", 0.5, 1e-6).expect("fits");
        assert!(a.spend("h", 0.1, 1e-7).is_err());
        assert!(a.spend("i", 0.1, 0.0).is_ok());
        assert!(Accountant::new(-1.0, 0.0).is_err());
        assert!(Accountant::new(1.0, 1.0).is_err());
    }
}
