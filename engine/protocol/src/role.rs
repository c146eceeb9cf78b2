//! What every role shares: a participant's context (transport, randomness, measured
//! operations, the transcript of what it learns) and the final re-sharing.

use crate::faults::*;
use crate::meter::StageMeter;
use crate::transport::{Peer, Recorded, Stage, Transport, TransportError};
use crate::wire::*;
use kinsey_backend::BackendError;
use kinsey_backend::compare::Duplex;
use kinsey_backend::{AdditiveHe, SecureComparison};
use rand_chacha::ChaCha20Rng;
use rand_core::RngCore;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// An error inside a role: the stage, who is at fault, and whether it is only a consequence
/// of someone else's failure (a hang-up).
#[derive(Debug, Clone)]
pub(crate) struct Fail {
    pub(crate) stage: Stage,
    pub(crate) blame: Peer,
    pub(crate) msg: String,
    pub(crate) secondary: bool,
}

pub(crate) type R<T> = std::result::Result<T, Fail>;

impl Fail {
    /// A transport error met in `stage`: who is to blame, and whether it is only the
    /// consequence of a failure elsewhere (a hang-up, or an abort relayed by a peer).
    pub(crate) fn from_transport(stage: Stage, e: TransportError) -> Fail {
        let (stage, blame, secondary) = match &e {
            TransportError::HungUp(p) => (stage, *p, true),
            TransportError::Timeout(p)
            | TransportError::NoRoute(p)
            | TransportError::Closed(p, _)
            | TransportError::Refused(p, _) => (stage, *p, false),
            // Relayed: the peer that stopped the session told everyone already.
            TransportError::Aborted { stage, blame, .. } => (*stage, *blame, true),
        };
        Fail {
            stage,
            blame,
            msg: e.to_string(),
            secondary,
        }
    }
}

#[derive(Default, Clone, Copy)]
pub(crate) struct OpStat {
    pub(crate) elements: u64,
    pub(crate) seconds: f64,
}

/// One participant's state: its transport, its randomness, and what it measures.
pub(crate) struct Ctx<'a> {
    pub(crate) t: Recorded<Box<dyn Transport + 'a>>,
    pub(crate) me: Peer,
    pub(crate) k: usize,
    pub(crate) he: &'a dyn AdditiveHe,
    pub(crate) cmp: Arc<dyn SecureComparison>,
    pub(crate) rng: ChaCha20Rng,
    pub(crate) stage: Stage,
    pub(crate) start: Instant,
    pub(crate) stage_end: BTreeMap<Stage, Duration>,
    pub(crate) ops: BTreeMap<(Stage, &'static str), OpStat>,
    pub(crate) fault: Option<Fault>,
    pub(crate) leak: Option<Leak>,
    /// The in-process run's progress, when someone draws it.
    pub(crate) meter: Option<&'a StageMeter<'a>>,
    /// Seconds of work per chunk of a heavy batch ([`CHUNK_SECONDS`]; 0 in tests: chunks
    /// of [`FIRST_CHUNK`]).
    pub(crate) chunk_seconds: f64,
}

/// Elements of a heavy batch sent to the backend first; the rest goes in chunks of about
/// [`CHUNK_SECONDS`] each at the speed measured so far, so progress moves on a slow
/// backend while a fast one (or a GPU) still gets its work in large batches.
const FIRST_CHUNK: usize = 8;
/// Seconds of work per chunk of a heavy batch.
pub(crate) const CHUNK_SECONDS: f64 = 1.0;

impl<'a> Ctx<'a> {
    pub(crate) fn fail(&self, blame: Peer, msg: impl std::fmt::Display) -> Fail {
        Fail {
            stage: self.stage,
            blame,
            msg: msg.to_string(),
            secondary: false,
        }
    }

    pub(crate) fn own(&self, msg: impl std::fmt::Display) -> Fail {
        self.fail(self.me, msg)
    }

    pub(crate) fn transport(&self, e: TransportError) -> Fail {
        Fail::from_transport(self.stage, e)
    }

    pub(crate) fn enter(&mut self, stage: Stage) -> R<()> {
        self.stage_end.insert(self.stage, self.start.elapsed());
        self.stage = stage;
        self.t.enter(stage);
        if let Some(m) = self.meter {
            m.enter(self.me, stage);
        }
        if let Some(f) = self.fault
            && f.participant == self.me
            && f.stage == stage
            && f.kind == FaultKind::Abort
        {
            return Err(self.own("stopped (injected failure)"));
        }
        Ok(())
    }

    pub(crate) fn finish(&mut self) {
        self.stage_end.insert(self.stage, self.start.elapsed());
    }

    pub(crate) fn send(&mut self, to: Peer, kind: u8, payload: &[u8]) -> R<()> {
        let msg = seal(self.stage, kind, payload);
        self.t.send(to, msg).map_err(|e| self.transport(e))
    }

    pub(crate) fn recv(&mut self, from: Peer, kind: u8) -> R<Vec<u8>> {
        let m = self.t.recv(from).map_err(|e| self.transport(e))?;
        open(&m, self.stage, kind).map_err(|why| self.fail(from, why))
    }

    /// A backend call, timed and counted; an error is this participant's.
    pub(crate) fn op<T>(
        &mut self,
        name: &'static str,
        elements: usize,
        f: impl FnOnce(&dyn AdditiveHe, &mut ChaCha20Rng) -> std::result::Result<T, BackendError>,
    ) -> R<T> {
        let me = self.me;
        self.op_on(me, name, elements, f)
    }

    /// A backend call on data received from `from`: an error blames `from`.
    pub(crate) fn op_on<T>(
        &mut self,
        from: Peer,
        name: &'static str,
        elements: usize,
        f: impl FnOnce(&dyn AdditiveHe, &mut ChaCha20Rng) -> std::result::Result<T, BackendError>,
    ) -> R<T> {
        let t0 = Instant::now();
        let out = f(self.he, &mut self.rng);
        let s = self.ops.entry((self.stage, name)).or_default();
        s.elements += elements as u64;
        s.seconds += t0.elapsed().as_secs_f64();
        if let Some(m) = self.meter {
            m.advance(self.stage, elements);
        }
        out.map_err(|e| {
            let who = if from == self.me {
                "failed".to_string()
            } else {
                format!("sent invalid data ({name})")
            };
            self.fail(from, format!("{who}: {e}"))
        })
    }

    /// An element-wise backend call over `n` elements, made in chunks when the backend is
    /// slow (see [`FIRST_CHUNK`]), so the progress bar moves: `f` gets the range of
    /// elements to process. The result is the same as one call's; the chunking depends on
    /// timing only and changes no message.
    pub(crate) fn op_chunked<T>(
        &mut self,
        from: Peer,
        name: &'static str,
        n: usize,
        mut f: impl FnMut(
            &dyn AdditiveHe,
            &mut ChaCha20Rng,
            std::ops::Range<usize>,
        ) -> std::result::Result<Vec<T>, BackendError>,
    ) -> R<Vec<T>> {
        let mut out = Vec::with_capacity(n);
        let (mut at, mut chunk) = (0, n.min(FIRST_CHUNK));
        while at < n {
            let end = (at + chunk.max(1)).min(n);
            let t0 = Instant::now();
            out.extend(self.op_on(from, name, end - at, |he, rng| f(he, rng, at..end))?);
            let per = t0.elapsed().as_secs_f64() / (end - at) as f64;
            chunk = ((self.chunk_seconds / per.max(1e-9)) as usize).max(FIRST_CHUNK);
            at = end;
        }
        Ok(out)
    }

    pub(crate) fn random_below_pow2(&mut self, bits: u32) -> i128 {
        if self.leak == Some(Leak::ZeroMasks) {
            return 0;
        }
        let v = (u128::from(self.rng.next_u64()) << 64) | u128::from(self.rng.next_u64());
        (v >> (128 - bits)) as i128
    }

    /// A uniform permutation (Fisher-Yates with unbiased draws by rejection).
    pub(crate) fn permutation(&mut self) -> Vec<usize> {
        let mut p: Vec<usize> = (0..self.k).collect();
        if self.leak == Some(Leak::IdentityPermutations) {
            return p;
        }
        for i in (1..p.len()).rev() {
            let m = i as u64 + 1;
            let zone = u64::MAX - u64::MAX % m;
            let j = loop {
                let v = self.rng.next_u64();
                if v < zone {
                    break (v % m) as usize;
                }
            };
            p.swap(i, j);
        }
        p
    }

    /// A comparison run over the transport, timed as one operation per call.
    pub(crate) fn compare(
        &mut self,
        peer: Peer,
        f: impl FnOnce(
            &dyn SecureComparison,
            &mut dyn Duplex,
            &mut ChaCha20Rng,
        ) -> std::result::Result<bool, BackendError>,
    ) -> R<bool> {
        let t0 = Instant::now();
        let cmp = self.cmp.clone();
        let mut link = Link {
            t: &mut self.t,
            peer,
            stage: self.stage,
            error: None,
        };
        let out = f(cmp.as_ref(), &mut link, &mut self.rng);
        let hung = link.error.clone();
        let s = self.ops.entry((self.stage, "compare")).or_default();
        s.elements += 1;
        s.seconds += t0.elapsed().as_secs_f64();
        if let Some(m) = self.meter {
            m.advance(self.stage, 1);
        }
        out.map_err(|e| match hung {
            Some(t) => self.transport(t),
            None => self.fail(peer, format!("comparison failed: {e}")),
        })
    }
}
