//! The secure aggregator: input checks, one thread per role over the in-process
//! transport, and the outcome assembled from the published shares.

use crate::faults::{Fault, Leak};
use crate::params::MAX_PARTIES;
use crate::play::{RoleResult, Seat, build_report, check_backend, check_party, play};
use crate::report::*;
use crate::role::*;
use crate::transport;
use crate::transport::{Peer, Transport};
use kinsey_backend::AdditiveHe;
use kinsey_core::{Error, Result};
use kinsey_dp::rng::os_crypto_rng;
use kinsey_learn::aggregate::{self, PartyInput};
use rand_chacha::ChaCha20Rng;
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
    pub(crate) fault: Option<Fault>,
    /// Test hook: a deliberately leaking variant of the protocol, which the transcript
    /// audits and uniformity tests must catch (so they are shown able to fail).
    pub(crate) leak: Option<Leak>,
    /// Seconds of work per chunk of a heavy batch (0 in tests: the smallest chunks).
    pub(crate) chunk_seconds: f64,
}

impl Default for ProtocolConfig {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(600),
            record_views: false,
            fault: None,
            leak: None,
            chunk_seconds: crate::role::CHUNK_SECONDS,
        }
    }
}

impl ProtocolConfig {
    /// The same configuration with another wait for one message (default 600 s): past it,
    /// the run fails naming the participant and stage that did not answer.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// The secure aggregator over one backend.
#[derive(Clone)]
pub struct SecureAggregator {
    backend: Arc<dyn AdditiveHe>,
    config: ProtocolConfig,
}

impl SecureAggregator {
    /// DANGEROUS, for tests of the failure path only: the same aggregator with a
    /// participant that fails on purpose (`kinsey demo`'s hidden test flag).
    pub fn dangerous_with_fault(mut self, fault: Fault) -> Self {
        self.config.fault = Some(fault);
        self
    }
}

impl kinsey_learn::aggregate::Aggregator for SecureAggregator {
    fn name(&self) -> String {
        let info = self.backend.info();
        format!(
            "secure 3-stage protocol ({}, {})",
            info.name,
            info.key_words()
        )
    }

    fn aggregate(&self, parties: &[PartyInput]) -> Result<aggregate::Aggregate> {
        self.aggregate_with_progress(parties, &kinsey_core::Silent)
    }

    fn aggregate_with_progress(
        &self,
        parties: &[PartyInput],
        progress: &dyn kinsey_core::Progress,
    ) -> Result<aggregate::Aggregate> {
        let out = self.run_with_progress(parties, progress)?;
        let report = serde_json::to_value(&out.report)
            .map_err(|e| Error::Numerical(format!("protocol report: {e}")))?;
        Ok(aggregate::Aggregate {
            w: out.w,
            aggregator: self.name(),
            backend: Some(out.report.backend),
            report: Some(report),
        })
    }
}

impl std::fmt::Debug for SecureAggregator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecureAggregator({})", self.backend.info().name)
    }
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
        check_backend(&self.backend.info())?;
        let d = parties[0].w.len();
        for (j, p) in parties.iter().enumerate() {
            check_party(j, p, d)?;
        }
        Ok(d)
    }

    /// Run the protocol on the parties' inputs. Every participant's keys, masks and
    /// permutations come from its own OS-seeded generator, whatever seed the DP noise has.
    pub fn run(&self, parties: &[PartyInput]) -> Result<SecureOutcome> {
        self.run_with_progress(parties, &kinsey_core::Silent)
    }

    /// [`run`](Self::run), drawing each stage's progress (its name, and a bar over the
    /// backend operations of all participants) through `progress`.
    pub fn run_with_progress(
        &self,
        parties: &[PartyInput],
        progress: &dyn kinsey_core::Progress,
    ) -> Result<SecureOutcome> {
        let d = self.check_inputs(parties)?;
        let k = parties.len();
        let start = Instant::now();
        let meter = crate::meter::StageMeter::new(progress, k, d);
        let out = self.play_all(parties, (k, d), start, &meter);
        meter.finish();
        out
    }

    fn play_all(
        &self,
        parties: &[PartyInput],
        (k, d): (usize, usize),
        start: Instant,
        meter: &crate::meter::StageMeter<'_>,
    ) -> Result<SecureOutcome> {
        let endpoints = transport::in_process(k, self.config.timeout);
        let bootstraps_before = self.backend.bootstraps();
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
                        let seat = Seat {
                            me: ep.me(),
                            k,
                            he,
                            cmp,
                            start,
                            fault,
                            leak: self.config.leak,
                            record_views: self.config.record_views,
                            meter: Some(meter),
                            chunk_seconds: self.config.chunk_seconds,
                        };
                        let input = match ep.me() {
                            Peer::Party(j) => parties.get(j),
                            Peer::Curator => None,
                        };
                        play(seat, Box::new(ep), r, input)
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
        let mut report = build_report(
            self.backend.info(),
            &roles,
            (k, d),
            wall,
            cmp.describe(),
            "in-process channels (one thread per participant)",
        );
        report.bootstraps = self
            .backend
            .bootstraps()
            .zip(bootstraps_before)
            .map(|(after, before)| after.saturating_sub(before));
        Ok(SecureOutcome {
            w: aggregate::decode_average(&sum, k),
            sum,
            report,
            views: roles.into_iter().map(|r| r.view).collect(),
        })
    }
}
