//! The secure aggregator: input checks, one thread per role over the in-process
//! transport, and the outcome assembled from the published shares.

use crate::curator::curator;
use crate::faults::*;
use crate::faults::{Fault, Leak};
use crate::params::{KEY_BITS, NOISE_BITS, SIGMA};
use crate::params::{MAX_PARTIES, SIZE_BITS};
use crate::party::party;
use crate::report::*;
use crate::role::*;
use crate::transport;
use crate::transport::{Peer, Recorded, Stage, Transport, View};
use kinsey_backend::AdditiveHe;
use kinsey_core::{Error, Result};
use kinsey_dp::rng::os_crypto_rng;
use kinsey_learn::aggregate::{self, PartyInput};
use rand_chacha::ChaCha20Rng;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How to run the protocol.
#[derive(Debug, Clone)]
pub struct ProtocolConfig {
    /// How long a participant waits for one message.
    pub(crate) timeout: Duration,
    /// Keep every byte of every view (audits); traffic counts are kept regardless.
    pub(crate) record_views: bool,
    /// Test hook: a participant that fails.
    pub fault: Option<Fault>,
    /// Test hook: a deliberately leaking variant of the protocol, which the transcript
    /// audits and uniformity tests must catch (so they are shown able to fail).
    pub leak: Option<Leak>,
}

impl Default for ProtocolConfig {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(600),
            record_views: false,
            fault: None,
            leak: None,
        }
    }
}

/// The secure aggregator over one backend.
#[derive(Clone)]
pub struct SecureAggregator {
    backend: Arc<dyn AdditiveHe>,
    config: ProtocolConfig,
}

impl SecureAggregator {
    /// The same aggregator with a fault injected (tests of the failure path).
    pub fn with_fault(mut self, fault: Fault) -> Self {
        self.config.fault = Some(fault);
        self
    }
}

impl kinsey_learn::aggregate::Aggregator for SecureAggregator {
    fn name(&self) -> String {
        let info = self.backend.info();
        format!(
            "secure 3-stage protocol ({}, {}-bit keys)",
            info.name, info.key_bits
        )
    }

    fn aggregate(&self, parties: &[PartyInput]) -> Result<aggregate::Aggregate> {
        let out = self.run(parties)?;
        let report = serde_json::to_value(&out.report)
            .map_err(|e| Error::Numerical(format!("protocol report: {e}")))?;
        let pr = &out.report;
        let mut summary = vec![format!(
            "protocol: {:.2} s, {} homomorphic operations, {:.1} KiB sent in all; {}",
            pr.wall_seconds,
            pr.homomorphic_operations,
            pr.total_bytes as f64 / 1024.0,
            pr.comparison
        )];
        summary.extend(pr.stage_lines("  ").lines().map(str::to_string));
        Ok(aggregate::Aggregate {
            w: out.w,
            aggregator: self.name(),
            backend: Some(out.report.backend),
            report: Some(report),
            summary,
        })
    }
}

impl std::fmt::Debug for SecureAggregator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecureAggregator({})", self.backend.info().name)
    }
}

/// What one role thread returns.
struct RoleResult {
    out: R<Vec<i128>>,
    view: View,
    stage_end: BTreeMap<Stage, Duration>,
    ops: BTreeMap<(Stage, &'static str), OpStat>,
}

impl SecureAggregator {
    /// The aggregator over `backend`.
    pub fn new(backend: Arc<dyn AdditiveHe>, config: ProtocolConfig) -> Self {
        Self { backend, config }
    }

    /// The backend in use.
    pub fn backend(&self) -> &Arc<dyn AdditiveHe> {
        &self.backend
    }

    fn check_inputs(&self, parties: &[PartyInput]) -> Result<usize> {
        let k = parties.len();
        if k == 0 || k > MAX_PARTIES {
            return Err(Error::param(
                "parties",
                format!("the secure protocol takes 1 to {MAX_PARTIES} parties, got {k}"),
            ));
        }
        let info = self.backend.info();
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
        let d = parties[0].w.len();
        for (j, p) in parties.iter().enumerate() {
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
                let fits = aggregate::encode_noise(x, k)
                    .is_ok_and(|v| v.unsigned_abs() < 1u128 << NOISE_BITS);
                if !fits {
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
        }
        Ok(d)
    }

    /// Run the protocol on the parties' inputs. Every participant's keys, masks and
    /// permutations come from its own OS-seeded generator, whatever seed the DP noise has.
    pub fn run(&self, parties: &[PartyInput]) -> Result<SecureOutcome> {
        let d = self.check_inputs(parties)?;
        let k = parties.len();
        let start = Instant::now();
        let endpoints = transport::in_process(k, self.config.timeout);
        let cmp = self.backend.comparison();
        let fault = self.config.fault;
        let he = self.backend.as_ref();
        let rngs: Vec<ChaCha20Rng> = (0..=k).map(|_| os_crypto_rng()).collect();
        let results: Vec<std::thread::Result<RoleResult>> = std::thread::scope(|s| {
            let handles: Vec<_> = endpoints
                .into_iter()
                .zip(rngs)
                .map(|(ep, r)| {
                    let cmp = cmp.clone();
                    s.spawn(move || {
                        let me = ep.me();
                        let garbage = fault
                            .filter(|f| f.participant == me && f.kind == FaultKind::Garbage)
                            .map(|f| f.stage);
                        let mut ctx = Ctx {
                            t: Recorded::new(ep, self.config.record_views, garbage),
                            me,
                            k,
                            he,
                            cmp,
                            rng: r,
                            stage: Stage::Setup,
                            start,
                            stage_end: BTreeMap::new(),
                            ops: BTreeMap::new(),
                            fault,
                            leak: self.config.leak,
                        };
                        let out = match me {
                            Peer::Party(j) => party(&mut ctx, j, &parties[j]),
                            Peer::Curator => curator(&mut ctx),
                        };
                        RoleResult {
                            out,
                            view: ctx.t.into_view(),
                            stage_end: ctx.stage_end,
                            ops: ctx.ops,
                        }
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join()).collect()
        });
        let mut roles = Vec::with_capacity(k + 1);
        for (i, r) in results.into_iter().enumerate() {
            match r {
                Ok(r) => roles.push(r),
                Err(_) => {
                    return Err(Error::Protocol {
                        stage: "unknown stage".into(),
                        participant: if i == k {
                            Peer::Curator.to_string()
                        } else {
                            Peer::Party(i).to_string()
                        },
                        msg: "the role panicked".into(),
                    });
                }
            }
        }
        // The primary failure: not a hang-up that another failure caused.
        let fails: Vec<&Fail> = roles.iter().filter_map(|r| r.out.as_ref().err()).collect();
        if let Some(f) = fails
            .iter()
            .find(|f| !f.secondary)
            .or_else(|| fails.first())
        {
            return Err(Error::Protocol {
                stage: f.stage.name().into(),
                participant: f.blame.to_string(),
                msg: f.msg.clone(),
            });
        }
        let outs: Vec<&Vec<i128>> = roles.iter().filter_map(|r| r.out.as_ref().ok()).collect();
        let sum = outs[0].clone();
        if outs.iter().any(|o| **o != sum) || sum.len() != d {
            return Err(Error::Numerical(
                "participants disagree on the published result".into(),
            ));
        }
        let wall = start.elapsed().as_secs_f64();
        let report = self.report(&roles, k, d, wall, cmp.describe());
        Ok(SecureOutcome {
            w: aggregate::decode_average(&sum, k),
            sum,
            report,
            views: roles.into_iter().map(|r| r.view).collect(),
        })
    }

    fn report(
        &self,
        roles: &[RoleResult],
        k: usize,
        d: usize,
        wall: f64,
        comparison: String,
    ) -> ProtocolReport {
        let mut prev = 0.0f64;
        let stages: Vec<StageReport> = Stage::ALL
            .iter()
            .map(|&st| {
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
            backend: self.backend.info(),
            comparison,
            transport: "in-process channels (one thread per participant)".into(),
            parties: k,
            dim: d,
            fixed_point_bits: aggregate::FIXED_POINT_BITS,
            sigma: SIGMA,
            wall_seconds: wall,
            total_bytes: participants.iter().map(|p| p.bytes_sent).sum(),
            homomorphic_operations,
            stages,
            participants,
        }
    }
}
