//! The secure 3-stage aggregation protocol of seeds 000/001 (`../shared/docs/protocol.md`):
//! K party roles and the curator role, each in its own thread, every message serialized to
//! bytes and sent through a [`transport::Transport`]. The crypto is behind
//! `kinsey_backend::AdditiveHe` (and its `SecureComparison`), so switching the backend in
//! the config changes nothing here.
//!
//! Integers and ranges (all checked before anything is sent):
//! * sizes `n_j < 2^32`, `K <= 256`; Stage 1 compares the distinct keys `n_j K + j` (smallest
//!   size, ties to the lowest index, as the plaintext reference does; equal sizes are not
//!   revealed as ties), `< 2^40`;
//! * `a_j` uniform below `2^(40 + sigma)`, the curator's masks `r` below `2^(80 + sigma)`,
//!   sigma = 40 statistical bits;
//! * fixed point `2^-32` for the models (the reference aggregator's) and `2^-32 / K` for the
//!   noise (`aggregate::encode_noise`, so no residue of the published sum is noise-free):
//!   `|eta| K 2^32 < 2^80`, Stage 3's mask `s` below `2^(80 + sigma)`;
//! * re-sharing and publication in Z_(2^128): the published shares are uniform apart from
//!   their sum, which is the signed sum `sum_j W_j + N` (models at 2^-32, noise at
//!   2^-32 / K).
//!
//! One deviation from a literal reading of protocol.md, step 1.2: `b_j` does not go from
//! `P_j` straight to the curator (the sender would reveal `pi1(j)` to it, and with `pi2` the
//! curator would then know who is smallest). It travels encrypted under the curator's key
//! `zeta` to `P_pi1(j)`, which re-randomises it and forwards it as position `pi1(j)`.
//! In Stage 1 the curator also re-randomises `xi(a + r)` before sending it, or a party could
//! recognise its own ciphertext and learn part of `pi2`.

pub mod bench;
#[cfg(feature = "paillier")]
pub mod keyfiles;
pub mod registry;
pub mod transport;

#[cfg(test)]
mod tests;

use kinsey_backend::compare::{Duplex, frame, unframe};
use kinsey_backend::{
    AdditiveHe, BackendError, BackendInfo, Ciphertext, KeyPair, PublicKey, SecretKey,
    SecureComparison,
};
use kinsey_core::{Error, Result};
use kinsey_dp::rng::os_crypto_rng;
use kinsey_learn::aggregate::{self, PartyInput};
use rand_chacha::ChaCha20Rng;
use rand_core::RngCore;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use transport::{ChannelEndpoint, Peer, Recorded, Stage, Transport, TransportError, View};

/// Sizes must be below 2^SIZE_BITS.
pub const SIZE_BITS: u32 = 32;
/// Most parties the protocol accepts.
pub const MAX_PARTIES: usize = 256;
/// Bits of the Stage 1 keys `n_j K + j`.
pub const KEY_BITS: u32 = 40;
/// Statistical security of every additive mask.
pub const SIGMA: u32 = 40;
/// Bits of the largest fixed-point noise value (units of `2^-32 / K`).
pub const NOISE_BITS: u32 = 80;

/// A failure to inject in a test run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    pub participant: Peer,
    pub stage: Stage,
    pub kind: FaultKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// The participant stops at the start of the stage.
    Abort,
    /// The participant's first message in the stage is scrambled.
    Garbage,
}

/// How to run the protocol.
#[derive(Debug, Clone)]
pub struct ProtocolConfig {
    /// How long a participant waits for one message.
    pub timeout: Duration,
    /// Keep every byte of every view (audits); traffic counts are kept regardless.
    pub record_views: bool,
    pub fault: Option<Fault>,
    /// Test hook: a deliberately leaking variant of the protocol, which the transcript
    /// audits and uniformity tests must catch (so they are shown able to fail).
    pub leak: Option<Leak>,
}

/// A deliberately broken protocol variant (tests only show their audits catch it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leak {
    /// Every additive mask and re-sharing share has width zero.
    ZeroMasks,
    /// Every secret permutation is the identity.
    IdentityPermutations,
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

/// Timing and traffic of one stage.
#[derive(Debug, Clone, Serialize)]
pub struct StageReport {
    pub stage: String,
    pub wall_seconds: f64,
    /// Time inside the crypto backend, summed over participants.
    pub crypto_seconds: f64,
    /// Homomorphic operations by kind, counted per element.
    pub operations: BTreeMap<String, u64>,
    pub bytes: usize,
}

/// Traffic of one participant.
#[derive(Debug, Clone, Serialize)]
pub struct ParticipantReport {
    pub participant: String,
    pub bytes_sent: usize,
    pub bytes_received: usize,
    pub messages_sent: usize,
    pub crypto_seconds: f64,
}

/// What the protocol reports.
#[derive(Debug, Clone, Serialize)]
pub struct ProtocolReport {
    pub backend: BackendInfo,
    pub comparison: String,
    pub transport: String,
    pub parties: usize,
    pub dim: usize,
    pub fixed_point_bits: u32,
    pub sigma: u32,
    pub wall_seconds: f64,
    pub total_bytes: usize,
    pub homomorphic_operations: u64,
    pub stages: Vec<StageReport>,
    pub participants: Vec<ParticipantReport>,
}

impl ProtocolReport {
    /// One line per stage: wall time, crypto time, traffic and operation counts.
    pub fn stage_lines(&self, indent: &str) -> String {
        self.stages
            .iter()
            .map(|st| {
                format!(
                    "{indent}{:<40} {:>8.3} s wall {:>8.3} s crypto {:>10.1} KiB  {:?}\n",
                    st.stage,
                    st.wall_seconds,
                    st.crypto_seconds,
                    st.bytes as f64 / 1024.0,
                    st.operations
                )
            })
            .collect()
    }
}

/// The result of a run.
#[derive(Debug, Clone)]
pub struct SecureOutcome {
    /// `sum_j w_j + K eta_smallest` in fixed point: what the published shares add up to.
    pub sum: Vec<i128>,
    /// The published classifier, `sum / (K 2^32)`.
    pub w: Vec<f64>,
    pub report: ProtocolReport,
    /// Every participant's view (bytes only with `record_views`).
    pub views: Vec<View>,
}

/// The secure aggregator over one backend.
#[derive(Clone)]
pub struct SecureAggregator {
    backend: Arc<dyn AdditiveHe>,
    config: ProtocolConfig,
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

/// An error inside a role: the stage, who is at fault, and whether it is only a consequence
/// of someone else's failure (a hang-up).
#[derive(Debug, Clone)]
struct Fail {
    stage: Stage,
    blame: Peer,
    msg: String,
    secondary: bool,
}

type R<T> = std::result::Result<T, Fail>;

#[derive(Default, Clone, Copy)]
struct OpStat {
    elements: u64,
    seconds: f64,
}

// Message kinds (second header byte).
const XI_SK: u8 = 1;
const XI_PK: u8 = 2;
const ZETA_PK: u8 = 3;
const CMP_PK: u8 = 4;
const PI1: u8 = 10;
const A_SHARE: u8 = 11;
const POSITION: u8 = 12;
const BLINDED: u8 = 13;
const A_TILDE: u8 = 14;
const PAIR: u8 = 15;
const CMP: u8 = 16;
const INDICATOR: u8 = 20;
const CHAIN: u8 = 21;
const MASKED: u8 = 30;
const RESHARE: u8 = 31;
const PUBLISH: u8 = 32;

/// One participant's state: its transport, its randomness, and what it measures.
struct Ctx<'a> {
    t: Recorded<ChannelEndpoint>,
    me: Peer,
    k: usize,
    he: &'a dyn AdditiveHe,
    cmp: Arc<dyn SecureComparison>,
    rng: ChaCha20Rng,
    stage: Stage,
    start: Instant,
    stage_end: BTreeMap<Stage, Duration>,
    ops: BTreeMap<(Stage, &'static str), OpStat>,
    fault: Option<Fault>,
    leak: Option<Leak>,
}

impl<'a> Ctx<'a> {
    fn fail(&self, blame: Peer, msg: impl std::fmt::Display) -> Fail {
        Fail {
            stage: self.stage,
            blame,
            msg: msg.to_string(),
            secondary: false,
        }
    }

    fn own(&self, msg: impl std::fmt::Display) -> Fail {
        self.fail(self.me, msg)
    }

    fn transport(&self, e: TransportError) -> Fail {
        let (blame, secondary) = match e {
            TransportError::HungUp(p) => (p, true),
            TransportError::Timeout(p) | TransportError::NoRoute(p) => (p, false),
        };
        Fail {
            stage: self.stage,
            blame,
            msg: e.to_string(),
            secondary,
        }
    }

    fn enter(&mut self, stage: Stage) -> R<()> {
        self.stage_end.insert(self.stage, self.start.elapsed());
        self.stage = stage;
        if let Some(f) = self.fault
            && f.participant == self.me
            && f.stage == stage
            && f.kind == FaultKind::Abort
        {
            return Err(self.own("stopped (injected failure)"));
        }
        Ok(())
    }

    fn finish(&mut self) {
        self.stage_end.insert(self.stage, self.start.elapsed());
    }

    fn send(&mut self, to: Peer, kind: u8, payload: &[u8]) -> R<()> {
        let msg = seal(self.stage, kind, payload);
        self.t.send(to, msg).map_err(|e| self.transport(e))
    }

    fn recv(&mut self, from: Peer, kind: u8) -> R<Vec<u8>> {
        let m = self.t.recv(from).map_err(|e| self.transport(e))?;
        open(&m, self.stage, kind).map_err(|why| self.fail(from, why))
    }

    /// A backend call, timed and counted; an error is this participant's.
    fn op<T>(
        &mut self,
        name: &'static str,
        elements: usize,
        f: impl FnOnce(&dyn AdditiveHe, &mut ChaCha20Rng) -> std::result::Result<T, BackendError>,
    ) -> R<T> {
        let me = self.me;
        self.op_on(me, name, elements, f)
    }

    /// A backend call on data received from `from`: an error blames `from`.
    fn op_on<T>(
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
        out.map_err(|e| {
            let who = if from == self.me {
                "failed".to_string()
            } else {
                format!("sent invalid data ({name})")
            };
            self.fail(from, format!("{who}: {e}"))
        })
    }

    fn random_below_pow2(&mut self, bits: u32) -> i128 {
        if self.leak == Some(Leak::ZeroMasks) {
            return 0;
        }
        let v = (u128::from(self.rng.next_u64()) << 64) | u128::from(self.rng.next_u64());
        (v >> (128 - bits)) as i128
    }

    /// A uniform permutation (Fisher-Yates with unbiased draws by rejection).
    fn permutation(&mut self) -> Vec<usize> {
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
    fn compare(
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
        out.map_err(|e| match hung {
            Some(t) => self.transport(t),
            None => self.fail(peer, format!("comparison failed: {e}")),
        })
    }
}

/// Frame a message: stage, kind, payload, and a 64-bit FNV-1a checksum of all of it, so a
/// corrupted message is an error rather than a wrong number.
fn seal(stage: Stage, kind: u8, payload: &[u8]) -> Vec<u8> {
    let mut msg = Vec::with_capacity(payload.len() + 10);
    msg.push(stage as u8);
    msg.push(kind);
    msg.extend_from_slice(payload);
    let sum = fnv1a(&msg);
    msg.extend_from_slice(&sum.to_le_bytes());
    msg
}

/// Check a framed message and return its payload.
fn open(m: &[u8], stage: Stage, kind: u8) -> std::result::Result<Vec<u8>, String> {
    if m.len() < 10 {
        return Err(format!("sent a truncated message ({} bytes)", m.len()));
    }
    let (body, sum) = m.split_at(m.len() - 8);
    if fnv1a(body).to_le_bytes() != sum {
        return Err("sent a corrupted message (checksum mismatch)".into());
    }
    if body[0] != stage as u8 || body[1] != kind {
        return Err(format!(
            "sent an unexpected message (stage {} kind {}, expected stage {} kind {kind})",
            body[0], body[1], stage as u8
        ));
    }
    Ok(body[2..].to_vec())
}

fn fnv1a(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
        (h ^ u64::from(x)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The comparison's byte channel, carried over the protocol transport.
struct Link<'a> {
    t: &'a mut Recorded<ChannelEndpoint>,
    peer: Peer,
    stage: Stage,
    error: Option<TransportError>,
}

impl Duplex for Link<'_> {
    fn send(&mut self, msg: Vec<u8>) -> std::result::Result<(), BackendError> {
        let m = seal(self.stage, CMP, &msg);
        self.t.send(self.peer, m).map_err(|e| {
            self.error = Some(e.clone());
            BackendError::Other(e.to_string())
        })
    }

    fn recv(&mut self) -> std::result::Result<Vec<u8>, BackendError> {
        let m = self.t.recv(self.peer).map_err(|e| {
            self.error = Some(e.clone());
            BackendError::Other(e.to_string())
        })?;
        open(&m, self.stage, CMP).map_err(BackendError::Other)
    }
}

fn cts_bytes(cs: &[Ciphertext]) -> Vec<u8> {
    let parts: Vec<&[u8]> = cs.iter().map(|c| c.0.as_slice()).collect();
    frame(&parts)
}

fn ints_bytes(v: &[i128]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn parse_cts(ctx: &Ctx, from: Peer, b: &[u8], count: usize) -> R<Vec<Ciphertext>> {
    unframe(b, count)
        .map(|p| p.into_iter().map(|x| Ciphertext(x.to_vec())).collect())
        .map_err(|e| ctx.fail(from, format!("sent a malformed message: {e}")))
}

fn parse_cts_any(ctx: &Ctx, from: Peer, b: &[u8]) -> R<Vec<Ciphertext>> {
    let count = b
        .get(..4)
        .and_then(|h| h.try_into().ok())
        .map(u32::from_le_bytes)
        .ok_or_else(|| ctx.fail(from, "sent a malformed message: no header"))?;
    parse_cts(ctx, from, b, count as usize)
}

fn parse_ints(ctx: &Ctx, from: Peer, b: &[u8], count: Option<usize>) -> R<Vec<i128>> {
    if !b.len().is_multiple_of(16) || count.is_some_and(|c| c * 16 != b.len()) {
        return Err(ctx.fail(
            from,
            format!("sent a malformed integer vector ({} bytes)", b.len()),
        ));
    }
    Ok(b.chunks_exact(16)
        .map(|c| {
            let mut a = [0u8; 16];
            a.copy_from_slice(c);
            i128::from_le_bytes(a)
        })
        .collect())
}

fn parse_perm(ctx: &Ctx, from: Peer, b: &[u8]) -> R<Vec<usize>> {
    let v = parse_ints(ctx, from, b, Some(ctx.k))?;
    let mut seen = vec![false; ctx.k];
    let mut p = Vec::with_capacity(ctx.k);
    for x in v {
        let i = usize::try_from(x)
            .ok()
            .filter(|&i| i < ctx.k && !seen[i])
            .ok_or_else(|| ctx.fail(from, "sent something that is not a permutation"))?;
        seen[i] = true;
        p.push(i);
    }
    Ok(p)
}

fn key_pair(pk: &[u8], sk: SecretKey) -> KeyPair {
    KeyPair {
        public: PublicKey(pk.to_vec()),
        secret: sk,
    }
}

/// Stage 3's last step, run by all K + 1 participants: split `v` into K + 1 uniform shares
/// in Z_(2^128), send one to each other participant, add what arrives, publish the fresh
/// share to everyone, and add the published shares.
fn reshare(ctx: &mut Ctx, v: &[i128]) -> R<Vec<i128>> {
    let d = v.len();
    let all: Vec<Peer> = (0..ctx.k).map(Peer::Party).chain([Peer::Curator]).collect();
    let others: Vec<Peer> = all.iter().copied().filter(|p| *p != ctx.me).collect();
    let mut own: Vec<u128> = v.iter().map(|&x| x as u128).collect();
    for &q in &others {
        let share: Vec<i128> = (0..d).map(|_| ctx.random_below_pow2(128)).collect();
        for (o, s) in own.iter_mut().zip(&share) {
            *o = o.wrapping_sub(*s as u128);
        }
        ctx.send(q, RESHARE, &ints_bytes(&share))?;
    }
    for &q in &others {
        let b = ctx.recv(q, RESHARE)?;
        let got = parse_ints(ctx, q, &b, Some(d))?;
        for (o, s) in own.iter_mut().zip(&got) {
            *o = o.wrapping_add(*s as u128);
        }
    }
    let published: Vec<i128> = own.iter().map(|&x| x as i128).collect();
    for &q in &others {
        ctx.send(q, PUBLISH, &ints_bytes(&published))?;
    }
    let mut total = own;
    for &q in &others {
        let b = ctx.recv(q, PUBLISH)?;
        let got = parse_ints(ctx, q, &b, Some(d))?;
        for (t, s) in total.iter_mut().zip(&got) {
            *t = t.wrapping_add(*s as u128);
        }
    }
    for (i, &p) in published.iter().enumerate() {
        ctx.t.learn(&format!("published share {i}"), p);
    }
    Ok(total.into_iter().map(|x| x as i128).collect())
}

/// Party `j` (0-based). Party 0 also makes the parties' key, draws pi1, plays the helper in
/// every comparison and masks the selected noise in Stage 3.
fn party(ctx: &mut Ctx, j: usize, input: &PartyInput) -> R<Vec<i128>> {
    let k = ctx.k;
    let d = input.w.len();
    let p1 = Peer::Party(0);
    let c = Peer::Curator;

    // Setup: the parties' key xi (made by P1, shared among parties), the curator's key zeta.
    let xi = if j == 0 {
        let kp = ctx.op("keygen", 1, |he, rng| he.keygen(rng))?;
        for q in 1..k {
            ctx.send(Peer::Party(q), XI_SK, &kp.secret.0)?;
        }
        ctx.send(c, XI_PK, &kp.public.0)?;
        kp
    } else {
        let sk = SecretKey(ctx.recv(p1, XI_SK)?);
        let pk = ctx.op_on(p1, "key check", 0, |he, _| he.public_key_of(&sk))?;
        key_pair(&pk.0, sk)
    };
    let zeta_pk = PublicKey(ctx.recv(c, ZETA_PK)?);
    ctx.op_on(c, "key check", 0, |he, _| he.check_public_key(&zeta_pk))?;
    let cmp_pk = if j == 0 {
        let pk = PublicKey(ctx.recv(c, CMP_PK)?);
        ctx.cmp
            .check_public_key(&pk)
            .map_err(|e| ctx.fail(c, format!("sent a bad comparison key: {e}")))?;
        Some(pk)
    } else {
        None
    };

    // Stage 1: shares of the key n_j K + j, routed through pi1.
    ctx.enter(Stage::Smallest)?;
    let key = input.n as i128 * k as i128 + j as i128;
    let a = ctx.random_below_pow2(KEY_BITS + SIGMA);
    let b = key - a;
    ctx.t.learn("a (own share)", a);
    let pi1 = if j == 0 {
        let p = ctx.permutation();
        let bytes = ints_bytes(&p.iter().map(|&x| x as i128).collect::<Vec<_>>());
        for q in 1..k {
            ctx.send(Peer::Party(q), PI1, &bytes)?;
        }
        p
    } else {
        let b = ctx.recv(p1, PI1)?;
        parse_perm(ctx, p1, &b)?
    };
    let dest = pi1[j];
    let source = pi1.iter().position(|&x| x == j).unwrap_or(j);
    let zb = ctx.op("encrypt", 1, |he, rng| {
        he.encrypt_batch(&zeta_pk, &[b], rng)
    })?;
    let (a_held, zb_held, from) = if dest == j {
        (a, zb, ctx.me)
    } else {
        let msg = frame(&[&a.to_le_bytes(), &zb[0].0]);
        ctx.send(Peer::Party(dest), A_SHARE, &msg)?;
        let src = Peer::Party(source);
        let m = ctx.recv(src, A_SHARE)?;
        let parts =
            unframe(&m, 2).map_err(|e| ctx.fail(src, format!("sent a malformed share: {e}")))?;
        let a_in: [u8; 16] = parts[0]
            .try_into()
            .map_err(|_| ctx.fail(src, "sent a share that is not 16 bytes"))?;
        (
            i128::from_le_bytes(a_in),
            vec![Ciphertext(parts[1].to_vec())],
            src,
        )
    };
    if !(0..1i128 << (KEY_BITS + SIGMA)).contains(&a_held) {
        return Err(ctx.fail(from, "sent a share outside its range"));
    }
    let zb_fwd = ctx.op_on(from, "rerandomize", 1, |he, rng| {
        he.rerandomize_batch(&zeta_pk, &zb_held, rng)
    })?;
    let xa = ctx.op("encrypt (key holder)", 1, |he, rng| {
        he.encrypt_with_secret_batch(&xi.secret, &[a_held], rng)
    })?;
    ctx.send(c, POSITION, &cts_bytes(&[xa[0].clone(), zb_fwd[0].clone()]))?;
    let m = ctx.recv(c, BLINDED)?;
    let blinded = parse_cts(ctx, c, &m, 1)?;
    let a_tilde = ctx.op_on(c, "decrypt", 1, |he, _| {
        he.decrypt_batch(&xi.secret, &blinded)
    })?[0];
    ctx.t.learn("a~ (own position)", a_tilde);
    if j != 0 {
        ctx.send(p1, A_TILDE, &a_tilde.to_le_bytes())?;
    } else {
        let mut at = vec![a_tilde];
        for q in 1..k {
            let b = ctx.recv(Peer::Party(q), A_TILDE)?;
            at.push(parse_ints(ctx, Peer::Party(q), &b, Some(1))?[0]);
        }
        for (i, v) in at.iter().enumerate() {
            ctx.t.learn(&format!("a~[{i}]"), *v);
        }
        let pk = cmp_pk.ok_or_else(|| ctx.own("no comparison key"))?;
        loop {
            let m = ctx.recv(c, PAIR)?;
            let pair = parse_ints(ctx, c, &m, None)?;
            match pair.as_slice() {
                [] => break,
                &[x, y] => {
                    let (x, y) = (x as usize, y as usize);
                    if x >= k || y >= k || x == y {
                        return Err(ctx.fail(c, "asked for a comparison of invalid positions"));
                    }
                    let diff = at[x] - at[y];
                    ctx.compare(c, |cmp, link, rng| {
                        cmp.help(&pk, diff, KEY_BITS, link, rng).map(|_| false)
                    })?;
                }
                _ => return Err(ctx.fail(c, "sent a malformed comparison request")),
            }
        }
    }

    // Stage 2: psi_j = zeta(v_j)^eta_j, multiplied along the parties.
    ctx.enter(Stage::Noise)?;
    let m = ctx.recv(c, INDICATOR)?;
    let ind = parse_cts(ctx, c, &m, k)?;
    let mine = ind[pi1[j]].clone();
    let eta: Vec<i128> = input
        .noise
        .iter()
        .map(|&x| aggregate::encode_noise(x, k))
        .collect::<Result<_>>()
        .map_err(|e| ctx.own(e))?;
    let psi = ctx.op_on(c, "multiply by plaintext", d, |he, _| {
        he.mul_plain_one_batch(&zeta_pk, &mine, &eta)
    })?;
    let psi = ctx.op("rerandomize", d, |he, rng| {
        he.rerandomize_batch(&zeta_pk, &psi, rng)
    })?;
    let total = if k == 1 {
        psi
    } else if j == 0 {
        ctx.send(Peer::Party(1), CHAIN, &cts_bytes(&psi))?;
        let last = Peer::Party(k - 1);
        let m = ctx.recv(last, CHAIN)?;
        parse_cts(ctx, last, &m, d)?
    } else {
        let prev = Peer::Party(j - 1);
        let m = ctx.recv(prev, CHAIN)?;
        let incoming = parse_cts(ctx, prev, &m, d)?;
        let prod = ctx.op_on(prev, "add", d, |he, _| {
            he.add_batch(&zeta_pk, &incoming, &psi)
        })?;
        ctx.send(Peer::Party((j + 1) % k), CHAIN, &cts_bytes(&prod))?;
        Vec::new()
    };

    // Stage 3: P1 masks zeta(eta) with s; shares of K w_s; re-share and publish.
    ctx.enter(Stage::Shares)?;
    let mut v: Vec<i128> = input
        .w
        .iter()
        .map(|&x| aggregate::encode_fixed(x))
        .collect::<Result<_>>()
        .map_err(|e| ctx.own(e))?;
    if j == 0 {
        let s: Vec<i128> = (0..d)
            .map(|_| ctx.random_below_pow2(NOISE_BITS + SIGMA))
            .collect();
        let zs = ctx.op("encrypt", d, |he, rng| he.encrypt_batch(&zeta_pk, &s, rng))?;
        let from = Peer::Party(k - 1);
        let masked = ctx.op_on(from, "add", d, |he, _| he.add_batch(&zeta_pk, &total, &zs))?;
        ctx.send(c, MASKED, &cts_bytes(&masked))?;
        for (vi, si) in v.iter_mut().zip(&s) {
            *vi -= si;
        }
    }
    let out = reshare(ctx, &v)?;
    ctx.finish();
    Ok(out)
}

/// The curator: holds zeta, learns the doubly permuted index of the smallest party, and one
/// share of the result.
fn curator(ctx: &mut Ctx) -> R<Vec<i128>> {
    let k = ctx.k;
    let p1 = Peer::Party(0);
    let zeta = ctx.op("keygen", 1, |he, rng| he.keygen(rng))?;
    let cmp = ctx.cmp.clone();
    let t0 = Instant::now();
    let cmp_keys = cmp
        .keygen(&mut ctx.rng)
        .map_err(|e| ctx.own(format!("comparison keygen failed: {e}")))?;
    ctx.ops
        .entry((Stage::Setup, "keygen (comparison)"))
        .or_default()
        .seconds += t0.elapsed().as_secs_f64();
    for q in 0..k {
        ctx.send(Peer::Party(q), ZETA_PK, &zeta.public.0)?;
    }
    ctx.send(p1, CMP_PK, &cmp_keys.public.0)?;
    let xi_pk = PublicKey(ctx.recv(p1, XI_PK)?);
    ctx.op_on(p1, "key check", 0, |he, _| he.check_public_key(&xi_pk))?;

    // Stage 1.
    ctx.enter(Stage::Smallest)?;
    let mut blinded = Vec::with_capacity(k);
    let mut b_masked = Vec::with_capacity(k);
    for pos in 0..k {
        let from = Peer::Party(pos);
        let m = ctx.recv(from, POSITION)?;
        let cts = parse_cts(ctx, from, &m, 2)?;
        let b = ctx.op_on(from, "decrypt", 1, |he, _| {
            he.decrypt_batch(&zeta.secret, &cts[1..])
        })?[0];
        ctx.t.learn("b (pi1 order)", b);
        let r = ctx.random_below_pow2(KEY_BITS + 2 * SIGMA);
        let c = ctx.op_on(from, "add plaintext", 1, |he, _| {
            he.add_plain_batch(&xi_pk, &cts[..1], &[r])
        })?;
        let c = ctx.op("rerandomize", 1, |he, rng| {
            he.rerandomize_batch(&xi_pk, &c, rng)
        })?;
        blinded.push(c);
        b_masked.push(b - r);
    }
    let pi2 = ctx.permutation();
    let mut bt = vec![0i128; k];
    for pos in 0..k {
        bt[pi2[pos]] = b_masked[pos];
        ctx.send(Peer::Party(pi2[pos]), BLINDED, &cts_bytes(&blinded[pos]))?;
    }
    let mut best = 0usize;
    for i in 1..k {
        ctx.send(p1, PAIR, &ints_bytes(&[best as i128, i as i128]))?;
        let y = bt[best] - bt[i];
        let best_not_smaller = ctx.compare(p1, |cmp, link, rng| {
            cmp.learn(&cmp_keys, y, KEY_BITS, link, rng)
        })?;
        ctx.t.learn("comparison bit", i128::from(best_not_smaller));
        if best_not_smaller {
            best = i;
        }
    }
    ctx.send(p1, PAIR, &[])?;
    ctx.t.learn("smallest (pi2 position)", best as i128);

    // Stage 2: the indicator, encrypted under zeta, in pi1 order.
    ctx.enter(Stage::Noise)?;
    let u: Vec<i128> = (0..k).map(|i| i128::from(i == best)).collect();
    let enc = ctx.op("encrypt (key holder)", k, |he, rng| {
        he.encrypt_with_secret_batch(&zeta.secret, &u, rng)
    })?;
    let in_pi1: Vec<Ciphertext> = (0..k).map(|pos| enc[pi2[pos]].clone()).collect();
    let msg = cts_bytes(&in_pi1);
    for q in 0..k {
        ctx.send(Peer::Party(q), INDICATOR, &msg)?;
    }

    // Stage 3.
    ctx.enter(Stage::Shares)?;
    let m = ctx.recv(p1, MASKED)?;
    let masked = parse_cts_any(ctx, p1, &m)?;
    let e = ctx.op_on(p1, "decrypt", masked.len(), |he, _| {
        he.decrypt_batch(&zeta.secret, &masked)
    })?;
    let bound = 1i128 << (NOISE_BITS + SIGMA + 1);
    if e.iter().any(|x| x.unsigned_abs() >= bound.unsigned_abs()) {
        return Err(ctx.fail(p1, "sent a masked noise vector outside its range"));
    }
    for x in &e {
        ctx.t.learn("eta + s", *x);
    }
    let out = reshare(ctx, &e)?;
    ctx.finish();
    Ok(out)
}

/// What one role thread returns.
struct RoleResult {
    out: R<Vec<i128>>,
    view: View,
    stage_end: BTreeMap<Stage, Duration>,
    ops: BTreeMap<(Stage, &'static str), OpStat>,
}

impl SecureAggregator {
    pub fn new(backend: Arc<dyn AdditiveHe>, config: ProtocolConfig) -> Self {
        Self { backend, config }
    }

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
