//! Transport between the participants of the secure protocol: every message is bytes on a
//! channel. [`Transport`] is what a role sees; [`in_process`] builds a full mesh of channels
//! between threads (a network transport implements the same trait). [`Recorded`] wraps any
//! transport and keeps each participant's view (every byte sent and received, with stage
//! and message kind) for audits and traffic figures.

use serde::Serialize;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::Duration;

/// A participant: one of the K parties (0-based inside, 1-based when printed) or the curator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Peer {
    /// Party `j` (0-based).
    Party(usize),
    /// The curator.
    Curator,
}

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Peer::Party(j) => write!(f, "party {}", j + 1),
            Peer::Curator => write!(f, "the curator"),
        }
    }
}

/// Protocol stages, carried in every message header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Stage {
    /// Keys.
    Setup = 0,
    /// Stage 1: the smallest party.
    Smallest = 1,
    /// Stage 2: its noise.
    Noise = 2,
    /// Stage 3: the published shares.
    Shares = 3,
}

impl Stage {
    pub(crate) const ALL: [Stage; 4] = [Stage::Setup, Stage::Smallest, Stage::Noise, Stage::Shares];

    /// The stage's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Setup => "setup (key exchange)",
            Stage::Smallest => "stage 1 (index of the smallest party)",
            Stage::Noise => "stage 2 (oblivious noise selection)",
            Stage::Shares => "stage 3 (additive shares)",
        }
    }

    pub(crate) fn from_u8(v: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|s| *s as u8 == v)
    }
}

/// Why a transport operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransportError {
    /// The peer is gone (its role stopped); a consequence of another failure.
    HungUp(Peer),
    /// Nothing arrived in time.
    Timeout(Peer),
    /// No channel to that peer.
    NoRoute(Peer),
    /// The peer's connection ended without a goodbye (network transport); why.
    Closed(Peer, String),
    /// The peer sent a frame that breaks the transport's rules (size, session, order).
    Refused(Peer, String),
    /// A peer stopped the session and said why.
    Aborted {
        /// Who sent the abort.
        by: Peer,
        /// The stage it names.
        stage: Stage,
        /// Whom it blames.
        blame: Peer,
        /// Its reason.
        msg: String,
    },
}

impl std::fmt::Display for TransportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TransportError::HungUp(p) => write!(f, "{p} hung up"),
            TransportError::Timeout(p) => write!(f, "{p} did not answer in time"),
            TransportError::NoRoute(p) => write!(f, "no channel to {p}"),
            TransportError::Closed(p, why) => write!(f, "{p} {why}"),
            TransportError::Refused(p, why) => write!(f, "{p} {why}"),
            TransportError::Aborted { by, blame, msg, .. } if by == blame => write!(f, "{msg}"),
            TransportError::Aborted { by, msg, .. } => write!(f, "{msg} (reported by {by})"),
        }
    }
}

/// What a role uses to talk to the others.
pub trait Transport: Send {
    /// Who this endpoint is.
    fn me(&self) -> Peer;
    /// Send one message to a participant.
    fn send(&mut self, to: Peer, msg: Vec<u8>) -> Result<(), TransportError>;
    /// The next message from a participant (in order, with a timeout).
    fn recv(&mut self, from: Peer) -> Result<Vec<u8>, TransportError>;
    /// The role entered a stage (a network transport uses it for frame limits and errors).
    fn enter(&mut self, _stage: Stage) {}
}

impl<T: Transport + ?Sized> Transport for &mut T {
    fn me(&self) -> Peer {
        (**self).me()
    }
    fn send(&mut self, to: Peer, msg: Vec<u8>) -> Result<(), TransportError> {
        (**self).send(to, msg)
    }
    fn recv(&mut self, from: Peer) -> Result<Vec<u8>, TransportError> {
        (**self).recv(from)
    }
    fn enter(&mut self, stage: Stage) {
        (**self).enter(stage)
    }
}

impl<T: Transport + ?Sized> Transport for Box<T> {
    fn me(&self) -> Peer {
        (**self).me()
    }
    fn send(&mut self, to: Peer, msg: Vec<u8>) -> Result<(), TransportError> {
        (**self).send(to, msg)
    }
    fn recv(&mut self, from: Peer) -> Result<Vec<u8>, TransportError> {
        (**self).recv(from)
    }
    fn enter(&mut self, stage: Stage) {
        (**self).enter(stage)
    }
}

fn slot(p: Peer, k: usize) -> usize {
    match p {
        Peer::Party(j) => j,
        Peer::Curator => k,
    }
}

/// One participant's end of the in-process mesh.
#[derive(Debug)]
pub struct ChannelEndpoint {
    me: Peer,
    k: usize,
    tx: Vec<Option<Sender<Vec<u8>>>>,
    rx: Vec<Option<Receiver<Vec<u8>>>>,
    timeout: Duration,
}

/// A full mesh of channels between K parties and the curator; endpoint `j < K` is party j,
/// endpoint K is the curator.
pub(crate) fn in_process(k: usize, timeout: Duration) -> Vec<ChannelEndpoint> {
    let n = k + 1;
    let mut tx: Vec<Vec<Option<Sender<Vec<u8>>>>> = (0..n).map(|_| vec![None; n]).collect();
    let mut rx: Vec<Vec<Option<Receiver<Vec<u8>>>>> =
        (0..n).map(|_| (0..n).map(|_| None).collect()).collect();
    for a in 0..n {
        for b in 0..n {
            if a != b {
                let (t, r) = channel();
                tx[a][b] = Some(t);
                rx[b][a] = Some(r);
            }
        }
    }
    tx.into_iter()
        .zip(rx)
        .enumerate()
        .map(|(i, (tx, rx))| ChannelEndpoint {
            me: if i == k {
                Peer::Curator
            } else {
                Peer::Party(i)
            },
            k,
            tx,
            rx,
            timeout,
        })
        .collect()
}

impl Transport for ChannelEndpoint {
    fn me(&self) -> Peer {
        self.me
    }

    fn send(&mut self, to: Peer, msg: Vec<u8>) -> Result<(), TransportError> {
        let t = self
            .tx
            .get(slot(to, self.k))
            .and_then(Option::as_ref)
            .ok_or(TransportError::NoRoute(to))?;
        t.send(msg).map_err(|_| TransportError::HungUp(to))
    }

    fn recv(&mut self, from: Peer) -> Result<Vec<u8>, TransportError> {
        let r = self
            .rx
            .get(slot(from, self.k))
            .and_then(Option::as_ref)
            .ok_or(TransportError::NoRoute(from))?;
        r.recv_timeout(self.timeout).map_err(|e| match e {
            RecvTimeoutError::Timeout => TransportError::Timeout(from),
            RecvTimeoutError::Disconnected => TransportError::HungUp(from),
        })
    }
}

/// Direction of a recorded message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Direction {
    /// Sent by the participant.
    Sent,
    /// Received by the participant.
    Received,
}

/// One recorded message.
#[derive(Debug, Clone, Serialize)]
pub struct Message {
    /// Sent or received.
    pub direction: Direction,
    /// The other end.
    pub peer: Peer,
    /// The stage the participant was in.
    pub stage: Option<Stage>,
    /// The message kind (second header byte).
    pub kind: u8,
    #[serde(skip)]
    /// The bytes, when views are recorded.
    pub bytes: Vec<u8>,
    /// Length in bytes.
    pub len: usize,
}

/// Everything one participant sent and received, and the plaintexts it decrypted or
/// computed from what it received ("learned"), for audits.
#[derive(Debug, Clone, Serialize)]
pub struct View {
    /// Whose view.
    pub participant: Peer,
    /// Every message, in order.
    pub messages: Vec<Message>,
    #[serde(skip)]
    /// Every value the participant learned in the clear, labelled.
    pub learned: Vec<(String, i128)>,
}

impl View {
    /// Bytes this participant sent.
    pub fn bytes_sent(&self) -> usize {
        self.total(Direction::Sent)
    }
    pub(crate) fn bytes_received(&self) -> usize {
        self.total(Direction::Received)
    }
    fn total(&self, d: Direction) -> usize {
        self.messages
            .iter()
            .filter(|m| m.direction == d)
            .map(|m| m.len)
            .sum()
    }
    pub(crate) fn messages_sent(&self) -> usize {
        self.messages
            .iter()
            .filter(|m| m.direction == Direction::Sent)
            .count()
    }
}

/// A transport that records its participant's view.
#[derive(Debug)]
pub struct Recorded<T: Transport> {
    inner: T,
    keep_bytes: bool,
    view: View,
    /// Test hook: corrupt the first message this participant sends in this stage.
    garbage_at: Option<Stage>,
}

impl<T: Transport> Recorded<T> {
    /// Wrap `inner`; `keep_bytes` records every message's bytes, `garbage_at` scrambles the
    /// first message of that stage (tests).
    pub fn new(inner: T, keep_bytes: bool, garbage_at: Option<Stage>) -> Self {
        let participant = inner.me();
        Self {
            inner,
            keep_bytes,
            view: View {
                participant,
                messages: Vec::new(),
                learned: Vec::new(),
            },
            garbage_at,
        }
    }

    /// Record a value the participant learns in the clear.
    pub fn learn(&mut self, what: &str, v: i128) {
        if self.keep_bytes {
            self.view.learned.push((what.to_string(), v));
        }
    }

    pub(crate) fn into_view(self) -> View {
        self.view
    }

    fn record(&mut self, direction: Direction, peer: Peer, msg: &[u8]) {
        self.view.messages.push(Message {
            direction,
            peer,
            stage: msg.first().and_then(|&s| Stage::from_u8(s)),
            kind: msg.get(1).copied().unwrap_or(0),
            bytes: if self.keep_bytes {
                msg.to_vec()
            } else {
                Vec::new()
            },
            len: msg.len(),
        });
    }
}

impl<T: Transport> Transport for Recorded<T> {
    fn me(&self) -> Peer {
        self.inner.me()
    }

    fn send(&mut self, to: Peer, mut msg: Vec<u8>) -> Result<(), TransportError> {
        if let Some(stage) = self.garbage_at
            && msg.first() == Some(&(stage as u8))
        {
            // Keep the header, scramble the body: the receiver must notice.
            for (i, b) in msg.iter_mut().enumerate().skip(2) {
                *b ^= 0xA5 ^ (i as u8);
            }
            self.garbage_at = None;
        }
        self.record(Direction::Sent, to, &msg);
        self.inner.send(to, msg)
    }

    fn recv(&mut self, from: Peer) -> Result<Vec<u8>, TransportError> {
        let m = self.inner.recv(from)?;
        self.record(Direction::Received, from, &m);
        Ok(m)
    }

    fn enter(&mut self, stage: Stage) {
        self.inner.enter(stage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mesh_delivers_in_order_and_reports_hangups() {
        let mut eps = in_process(2, Duration::from_secs(5));
        let mut c = eps.pop().expect("curator");
        let mut p1 = eps.pop().expect("party 2");
        let p0 = eps.pop().expect("party 1");
        assert_eq!(c.me(), Peer::Curator);
        c.send(Peer::Party(1), vec![1]).expect("send");
        c.send(Peer::Party(1), vec![2]).expect("send");
        assert_eq!(p1.recv(Peer::Curator).expect("recv"), vec![1]);
        assert_eq!(p1.recv(Peer::Curator).expect("recv"), vec![2]);
        drop(p0);
        assert_eq!(
            p1.recv(Peer::Party(0)).expect_err("gone"),
            TransportError::HungUp(Peer::Party(0))
        );
        assert!(c.send(Peer::Party(0), vec![0]).is_err());
        assert_eq!(
            c.send(Peer::Party(7), vec![]),
            Err(TransportError::NoRoute(Peer::Party(7)))
        );
    }

    #[test]
    fn recorded_views_count_bytes_and_garbage_keeps_the_header() {
        let mut eps = in_process(1, Duration::from_secs(5));
        let c = eps.pop().expect("curator");
        let p = eps.pop().expect("party");
        let mut c = Recorded::new(c, true, None);
        let mut p = Recorded::new(p, true, Some(Stage::Noise));
        p.send(Peer::Curator, vec![Stage::Smallest as u8, 1, 9, 9])
            .expect("send");
        p.send(Peer::Curator, vec![Stage::Noise as u8, 2, 9, 9])
            .expect("send");
        let a = c.recv(Peer::Party(0)).expect("recv");
        let b = c.recv(Peer::Party(0)).expect("recv");
        assert_eq!(a, vec![1, 1, 9, 9]);
        assert_eq!(&b[..2], &[2, 2]);
        assert_ne!(&b[2..], &[9, 9]);
        let v = c.into_view();
        assert_eq!(v.bytes_received(), 8);
        assert_eq!(v.messages[1].stage, Some(Stage::Noise));
        assert_eq!(p.into_view().messages_sent(), 2);
    }
}
