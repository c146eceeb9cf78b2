//! The two neighbour definitions of seed 002 (slides 25-27). Every toolbox release states
//! which one its sensitivity is for, and records it in its output.
//!
//! * **Bounded**: `D'` is `D` with one row *replaced*. The number of rows is public.
//!   A histogram's L1 sensitivity is 2 (one bin loses a row, another gains it).
//! * **Unbounded**: `D'` is `D` with one row *added or removed*. The number of rows is
//!   private. A histogram's L1 sensitivity is 1.
//!
//! Unbounded eps-DP implies bounded 2eps-DP (a replacement is a removal and an addition),
//! which is why a score whose add/remove sensitivity is `s` has replace sensitivity <= `2s`.

use kinsey_core::{Error, Result};
use serde::{Deserialize, Serialize};

/// Which data sets are neighbours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Neighbours {
    /// Replace one row (n public).
    Bounded,
    /// Add or remove one row (n private).
    Unbounded,
}

impl Neighbours {
    /// Factor from an add/remove sensitivity to this definition's sensitivity.
    pub fn factor(self) -> f64 {
        match self {
            Neighbours::Bounded => 2.0,
            Neighbours::Unbounded => 1.0,
        }
    }

    /// Whether the number of rows may be published exactly.
    pub fn n_is_public(self) -> bool {
        self == Neighbours::Bounded
    }

    /// The relation a release's [`Guarantee`](crate::release::Guarantee) states.
    pub fn relation(self) -> crate::release::NeighbourRelation {
        match self {
            Neighbours::Bounded => crate::release::NeighbourRelation::ReplaceOneRow,
            Neighbours::Unbounded => crate::release::NeighbourRelation::AddRemoveOneRow,
        }
    }

    /// The name users write (`bounded`, `unbounded`).
    pub fn as_str(self) -> &'static str {
        match self {
            Neighbours::Bounded => "bounded",
            Neighbours::Unbounded => "unbounded",
        }
    }
}

impl std::str::FromStr for Neighbours {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "bounded" | "replace" => Ok(Self::Bounded),
            "unbounded" | "add-remove" | "add_remove" => Ok(Self::Unbounded),
            o => Err(Error::param(
                "neighbours",
                format!(
                    "unknown neighbour definition '{o}' (bounded: replace one row; unbounded: \
                     add or remove one row)"
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_and_rejects_others() {
        assert_eq!(
            "bounded".parse::<Neighbours>().ok(),
            Some(Neighbours::Bounded)
        );
        assert_eq!(
            "add-remove".parse::<Neighbours>().ok(),
            Some(Neighbours::Unbounded)
        );
        let e = "swap".parse::<Neighbours>().expect_err("unknown");
        assert!(e.to_string().contains("swap"));
        assert_eq!(Neighbours::Bounded.factor(), 2.0);
        assert!(!Neighbours::Unbounded.n_is_public());
    }
}
