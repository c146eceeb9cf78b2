//! Test hooks: faults injected into one participant at one stage (the failure path must
//! name the participant and stage), and deliberately leaking variants (the audits must
//! catch them).

use crate::transport::{Peer, Stage};

use kinsey_core::{Error, Result};

/// A failure to inject in a test run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    /// Who fails.
    pub participant: Peer,
    /// At the start of which stage.
    pub stage: Stage,
    /// How.
    pub kind: FaultKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// How a participant fails.
pub enum FaultKind {
    /// The participant stops at the start of the stage.
    Abort,
    /// The participant's first message in the stage is scrambled.
    Garbage,
}

/// A deliberately broken protocol variant (tests only show their audits catch it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leak {
    /// Every additive mask and re-sharing share has width zero.
    ZeroMasks,
    /// Every secret permutation is the identity.
    IdentityPermutations,
    /// Stage 1 as it was: a party sends its share frame to `P_pi1(j)` only (none when
    /// `pi1(j) = j`), so the links that carry traffic reveal pi1; and the curator sends the
    /// blinded positions in pi2 order.
    RoutedShares,
}

impl std::str::FromStr for Fault {
    type Err = Error;

    /// `PARTICIPANT:STAGE:KIND`, e.g. `party2:2:garbage` or `curator:1:abort` (tests).
    fn from_str(s: &str) -> Result<Self> {
        let bad = || Error::param("fault", format!("'{s}' is not PARTICIPANT:STAGE:KIND"));
        let parts: Vec<&str> = s.split(':').collect();
        let [who, stage, kind] = parts.as_slice() else {
            return Err(bad());
        };
        let participant = match *who {
            "curator" => Peer::Curator,
            p => Peer::Party(
                p.strip_prefix("party")
                    .and_then(|j| j.parse::<usize>().ok())
                    .filter(|&j| j >= 1)
                    .ok_or_else(bad)?
                    - 1,
            ),
        };
        let stage = match *stage {
            "0" => Stage::Setup,
            "1" => Stage::Smallest,
            "2" => Stage::Noise,
            "3" => Stage::Shares,
            _ => return Err(bad()),
        };
        let kind = match *kind {
            "abort" => FaultKind::Abort,
            "garbage" => FaultKind::Garbage,
            _ => return Err(bad()),
        };
        Ok(Fault {
            participant,
            stage,
            kind,
        })
    }
}
