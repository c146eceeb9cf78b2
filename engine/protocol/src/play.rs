//! One participant's seat in a run: its role played over any transport (in-process channel
//! or TLS mesh), the input checks every participant makes, and the report assembled from
//! the roles' measurements.

use crate::curator::curator;
use crate::faults::{Fault, Leak};
use crate::meter::StageMeter;
use crate::params::{KEY_BITS, NOISE_BITS, SIGMA, SIZE_BITS};
use crate::party::party;
use crate::report::*;
use crate::role::*;
use crate::transport::{self, Peer, Recorded, Stage, Transport, View};
use kinsey_backend::{AdditiveHe, BackendInfo, SecureComparison};
use kinsey_core::{Error, Result};
use kinsey_learn::aggregate::{self, PartyInput};
use rand_chacha::ChaCha20Rng;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What one role returns.
pub(crate) struct RoleResult {
    pub(crate) out: R<Vec<i128>>,
    pub(crate) view: View,
    pub(crate) stage_end: BTreeMap<Stage, Duration>,
    pub(crate) ops: BTreeMap<(Stage, &'static str), OpStat>,
}

/// Who plays, with what.
pub(crate) struct Seat<'a> {
    pub(crate) me: Peer,
    pub(crate) k: usize,
    pub(crate) he: &'a dyn AdditiveHe,
    pub(crate) cmp: Arc<dyn SecureComparison>,
    pub(crate) start: Instant,
    pub(crate) fault: Option<Fault>,
    pub(crate) leak: Option<Leak>,
    pub(crate) record_views: bool,
    /// The in-process run's progress, when someone draws it.
    pub(crate) meter: Option<&'a StageMeter<'a>>,
    /// Seconds of work per chunk of a heavy batch.
    pub(crate) chunk_seconds: f64,
}

/// Play one role to its end over `t`. A party needs its input.
pub(crate) fn play<'a>(
    seat: Seat<'a>,
    t: Box<dyn Transport + 'a>,
    rng: ChaCha20Rng,
    input: Option<&PartyInput>,
) -> RoleResult {
    let me = seat.me;
    let garbage = seat
        .fault
        .filter(|f| f.participant == me && f.kind == crate::faults::FaultKind::Garbage)
        .map(|f| f.stage);
    let mut ctx = Ctx {
        t: Recorded::new(t, seat.record_views, garbage),
        me,
        k: seat.k,
        he: seat.he,
        cmp: seat.cmp,
        rng,
        stage: Stage::Setup,
        start: seat.start,
        stage_end: BTreeMap::new(),
        ops: BTreeMap::new(),
        fault: seat.fault,
        leak: seat.leak,
        meter: seat.meter,
        chunk_seconds: seat.chunk_seconds,
    };
    let out = match (me, input) {
        (Peer::Party(j), Some(input)) => party(&mut ctx, j, input),
        (Peer::Party(_), None) => Err(ctx.own("has no input")),
        (Peer::Curator, _) => curator(&mut ctx),
    };
    RoleResult {
        out,
        view: ctx.t.into_view(),
        stage_end: ctx.stage_end,
        ops: ctx.ops,
    }
}

/// The backend must hold the protocol's largest plaintexts.
pub(crate) fn check_backend(info: &BackendInfo) -> Result<()> {
    let need = (KEY_BITS + 2 * SIGMA + 1).max(NOISE_BITS + SIGMA + 1);
    if info.plaintext_bits < need {
        return Err(Error::param(
            "crypto.backend",
            format!(
                "backend '{}' holds {}-bit plaintexts; the protocol needs {need}",
                info.name, info.plaintext_bits
            ),
        ));
    }
    Ok(())
}

/// Party `j`'s input must fit the protocol's ranges (checked before anything is sent).
pub(crate) fn check_party(j: usize, p: &PartyInput, d: usize) -> Result<()> {
    if p.n == 0 || (p.n as u128) >= 1u128 << SIZE_BITS {
        return Err(Error::param(
            "parties",
            format!(
                "party {} has {} rows; the protocol takes 1 to 2^{SIZE_BITS} - 1",
                j + 1,
                p.n
            ),
        ));
    }
    if p.w.len() != d || p.noise.len() != d {
        return Err(Error::param(
            "parties",
            format!("party {} has a different dimension", j + 1),
        ));
    }
    for &x in &p.noise {
        if x.unsigned_abs() >= 1u128 << NOISE_BITS {
            return Err(Error::param(
                "privacy.epsilon",
                format!(
                    "party {}'s noise is too large for the protocol's fixed point \
                     (|eta| K 2^32 must stay below 2^{NOISE_BITS})",
                    j + 1
                ),
            ));
        }
    }
    for &x in &p.w {
        aggregate::encode_fixed(x)?;
    }
    Ok(())
}

/// The report of a run from the roles that were measured (all of them in process, one in a
/// network session).
pub(crate) fn build_report(
    backend: BackendInfo,
    roles: &[RoleResult],
    (k, d): (usize, usize),
    wall: f64,
    comparison: String,
    transport: &str,
) -> ProtocolReport {
    let mut prev = 0.0f64;
    let views: Vec<&View> = roles.iter().map(|r| &r.view).collect();
    let rounds = (roles.len() == k + 1)
        .then(|| crate::rounds::rounds(&views))
        .flatten();
    let stages: Vec<StageReport> = Stage::ALL
        .iter()
        .enumerate()
        .map(|(si, &st)| {
            let end = roles
                .iter()
                .filter_map(|r| r.stage_end.get(&st))
                .map(Duration::as_secs_f64)
                .fold(prev, f64::max);
            let mut operations = BTreeMap::new();
            let mut crypto = 0.0;
            for r in roles {
                for ((s, name), o) in &r.ops {
                    if *s == st {
                        *operations.entry(name.to_string()).or_insert(0) += o.elements;
                        crypto += o.seconds;
                    }
                }
            }
            let bytes = roles
                .iter()
                .flat_map(|r| &r.view.messages)
                .filter(|m| m.stage == Some(st) && m.direction == transport::Direction::Sent)
                .map(|m| m.len)
                .sum();
            let rep = StageReport {
                stage: st.name().into(),
                wall_seconds: end - prev,
                crypto_seconds: crypto,
                operations,
                bytes,
                rounds: rounds.as_ref().and_then(|r| r.get(si).copied()),
            };
            prev = end;
            rep
        })
        .collect();
    let participants: Vec<ParticipantReport> = roles
        .iter()
        .map(|r| ParticipantReport {
            participant: r.view.participant.to_string(),
            bytes_sent: r.view.bytes_sent(),
            bytes_received: r.view.bytes_received(),
            messages_sent: r.view.messages_sent(),
            crypto_seconds: r.ops.values().map(|o| o.seconds).sum(),
        })
        .collect();
    let homomorphic_operations = stages
        .iter()
        .flat_map(|s| s.operations.iter())
        .filter(|(n, _)| !n.starts_with("key"))
        .map(|(_, v)| v)
        .sum();
    ProtocolReport {
        backend,
        comparison,
        transport: transport.into(),
        parties: k,
        dim: d,
        fixed_point_bits: aggregate::FIXED_POINT_BITS,
        sigma: SIGMA,
        wall_seconds: wall,
        total_bytes: participants.iter().map(|p| p.bytes_sent).sum(),
        homomorphic_operations,
        bootstraps: None,
        stages,
        participants,
    }
}
