//! The network transport: a full mesh of TLS 1.3 connections between the participants of a
//! session. Each participant listens on its roster address and dials every participant
//! before it in roster order, with backoff until the connect window closes. After the TLS
//! handshake both sides exchange a hello (protocol version, name, shared parameters and
//! their hash). One reader thread per connection checks every frame's length, session id and
//! sequence number before its body is read; a peer that disconnects, stalls past the
//! receive timeout or sends a bad frame ends the session for everyone, with an error naming
//! it and the stage.

use super::config::{MeshConfig, StageHook, Tamper};
use super::connect::{Conn, accept_all, dial_all, net_err};
use super::frame::{self, Class, HEADER, Limits};
use super::link::{Event, Reader, lock, write_frame};
use crate::transport::{Peer, Stage, Transport, TransportError};
use kinsey_core::Result;
use rustls::Connection;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io::Write;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::mpsc::{Receiver, RecvTimeoutError, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Frames a peer may have waiting before the role reads them.
const MAX_QUEUED: usize = 64;
/// A receive that has waited this long tells the peers whom it waits on.
const ANNOUNCE_AFTER: Duration = Duration::from_secs(1);
/// The status body that says "no longer waiting" (no participant has this code: K <= 256).
const NOT_WAITING: u16 = u16::MAX - 1;

struct Link {
    conn: Arc<Mutex<Connection>>,
    sock: Arc<Mutex<TcpStream>>,
    raw: TcpStream,
    next_seq: u64,
}

/// One participant's end of the mesh.
pub struct Mesh {
    me: Peer,
    id: [u8; 16],
    links: BTreeMap<Peer, Link>,
    events: Receiver<Event>,
    queues: BTreeMap<Peer, VecDeque<Vec<u8>>>,
    said_bye: BTreeSet<Peer>,
    last_stage: BTreeMap<Peer, Stage>,
    stage: Stage,
    timeout: Duration,
    limits: Limits,
    tamper: Option<(Tamper, Stage)>,
    on_stage: Option<StageHook>,
    /// Set once the session has failed: every later call returns it.
    failed: Option<TransportError>,
    /// Bytes written to the sockets after the handshakes (TLS records of every frame).
    wire_sent: u64,
    /// Whom each peer said it has long waited on.
    waiting_on: BTreeMap<Peer, Peer>,
    /// Wire bytes of every protocol message frame sent, per peer and stage, in order.
    traffic: BTreeMap<(Peer, Stage), Vec<u64>>,
}

/// What one participant sent one peer in one stage, as the network sees it: the wire size
/// (TLS records, frame header included) of each protocol message frame, in order. A public
/// function of K, d and the key sizes (tested: `what_the_network_shows_is_a_public_function`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LinkTraffic {
    /// The receiving peer.
    pub to: Peer,
    /// The stage the frames belong to.
    pub stage: Stage,
    /// Wire bytes of each frame.
    pub frames: Vec<u64>,
}

impl std::fmt::Debug for Mesh {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mesh({}, {} links)", self.me, self.links.len())
    }
}

impl Mesh {
    /// Listen, dial and handshake with every peer of the roster, within the connect window.
    pub fn connect(cfg: &MeshConfig) -> Result<Mesh> {
        let me = cfg.me;
        let deadline = Instant::now() + cfg.connect_window;
        let dialers: Vec<Peer> = cfg
            .session
            .peers()
            .filter(|p| cfg.session.dials(*p, me))
            .collect();
        let targets: Vec<Peer> = cfg
            .session
            .peers()
            .filter(|p| cfg.session.dials(me, *p))
            .collect();
        let addr = cfg.session.address(me)?;
        let listener = if dialers.is_empty() {
            None
        } else {
            let l = TcpListener::bind(addr).map_err(|e| {
                net_err(
                    me,
                    None,
                    format!("cannot listen on {addr} (roster address): {e}"),
                )
            })?;
            l.set_nonblocking(true)
                .map_err(|e| net_err(me, None, format!("listener: {e}")))?;
            Some(l)
        };
        let server = if dialers.is_empty() {
            None
        } else {
            let d = dialers
                .iter()
                .map(|p| Ok((*p, cfg.session.member(*p)?.clone())))
                .collect::<Result<Vec<_>>>()?;
            Some(cfg.identity.server(d)?)
        };
        let (accepted, dialed) = std::thread::scope(|s| {
            let acc = s.spawn(|| match (&listener, &server) {
                (Some(l), Some(sv)) => accept_all(cfg, l, sv.clone(), &dialers, deadline),
                _ => Ok(Vec::new()),
            });
            let dialed = dial_all(cfg, &targets, deadline);
            let accepted = acc
                .join()
                .unwrap_or_else(|_| Err(net_err(me, None, "the accepting thread panicked".into())));
            (accepted, dialed)
        });
        let mut conns = dialed?;
        conns.extend(accepted?);
        Ok(Self::start(cfg, conns))
    }

    fn start(cfg: &MeshConfig, conns: Vec<Conn>) -> Mesh {
        let (tx, rx) = sync_channel(MAX_QUEUED * conns.len().max(1));
        let mut links = BTreeMap::new();
        for (peer, conn, sock) in conns {
            let conn = Arc::new(Mutex::new(conn));
            let reader_sock = sock.try_clone();
            let raw = sock.try_clone();
            let (Ok(reader_sock), Ok(raw)) = (reader_sock, raw) else {
                let _ = tx.send(Event::Closed(peer, "socket could not be shared".into()));
                continue;
            };
            let _ = reader_sock.set_read_timeout(None);
            let _ = sock.set_write_timeout(Some(cfg.timeout));
            let sock = Arc::new(Mutex::new(sock));
            let reader = Reader {
                peer,
                id: cfg.session.id,
                limits: cfg.limits,
                conn: conn.clone(),
                sock: sock.clone(),
                tx: tx.clone(),
            };
            std::thread::spawn(move || reader.run(reader_sock));
            links.insert(
                peer,
                Link {
                    conn,
                    sock,
                    raw,
                    next_seq: 1,
                },
            );
        }
        Mesh {
            me: cfg.me,
            id: cfg.session.id,
            queues: links.keys().map(|p| (*p, VecDeque::new())).collect(),
            links,
            events: rx,
            said_bye: BTreeSet::new(),
            last_stage: BTreeMap::new(),
            stage: Stage::Setup,
            timeout: cfg.timeout,
            limits: cfg.limits,
            tamper: cfg.hooks.tamper,
            on_stage: cfg.on_stage.clone(),
            failed: None,
            wire_sent: 0,
            waiting_on: BTreeMap::new(),
            traffic: BTreeMap::new(),
        }
    }

    fn send_frame(
        &mut self,
        to: Peer,
        class: Class,
        stage: Stage,
        body: &[u8],
    ) -> std::result::Result<(), TransportError> {
        let id = self.id;
        let link = self.links.get_mut(&to).ok_or(TransportError::NoRoute(to))?;
        let seq = link.next_seq;
        link.next_seq += 1;
        let mut f = frame::encode(&id, seq, class, stage, body);
        let tamper = match self.tamper {
            Some((t, at)) if class == Class::Message && at == stage => {
                self.tamper = None;
                Some(t)
            }
            _ => None,
        };
        let closed = |e: std::io::Error| {
            TransportError::Closed(
                to,
                format!("could not be sent a message (the connection failed: {e})"),
            )
        };
        let (conn, sock) = (&link.conn, &link.sock);
        let before = self.wire_sent;
        let mut write = |f: &[u8]| -> std::result::Result<(), TransportError> {
            let n = write_frame(conn, sock, f).map_err(closed)?;
            self.wire_sent += n as u64;
            Ok(())
        };
        let sent = match tamper {
            None => write(&f),
            Some(Tamper::Garbage) => {
                for (i, b) in f.iter_mut().enumerate().skip(4 + HEADER + 2) {
                    *b ^= 0xA5 ^ (i as u8);
                }
                write(&f)
            }
            Some(Tamper::WrongSession) => {
                f[4] ^= 1;
                write(&f)
            }
            Some(Tamper::Replay) => {
                write(&f)?;
                write(&f)
            }
            Some(Tamper::Oversized) => {
                let over = (HEADER + self.limits.body(Class::Message, stage) + 1) as u32;
                f[..4].copy_from_slice(&over.to_le_bytes());
                write(&f)
            }
            Some(Tamper::Truncated) => {
                let full = (f.len() - 4 + 100) as u32;
                f[..4].copy_from_slice(&full.to_le_bytes());
                write(&f)?;
                // Close the sending side only: the peer sees the frame end early.
                let _ = link.raw.shutdown(Shutdown::Write);
                Ok(())
            }
        };
        if sent.is_ok() && class == Class::Message {
            let n = self.wire_sent - before;
            self.traffic.entry((to, stage)).or_default().push(n);
        }
        sent
    }

    /// Wait for the next event; frames are queued per peer.
    fn pump(
        &mut self,
        deadline: Instant,
        waiting_for: Peer,
    ) -> std::result::Result<(), TransportError> {
        let left = deadline.saturating_duration_since(Instant::now());
        let ev = match self.events.recv_timeout(left) {
            Ok(ev) => ev,
            Err(RecvTimeoutError::Timeout) => {
                return Err(TransportError::Timeout(self.silent_one(waiting_for)));
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(TransportError::Closed(
                    waiting_for,
                    "every connection is gone".into(),
                ));
            }
        };
        match ev {
            Event::Frame(p, Class::Message, stage, body) => {
                self.last_stage.insert(p, stage);
                let q = self.queues.entry(p).or_default();
                if q.len() >= MAX_QUEUED {
                    return Err(TransportError::Refused(
                        p,
                        format!("sent more than {MAX_QUEUED} messages ahead of the protocol"),
                    ));
                }
                q.push_back(body);
                Ok(())
            }
            Event::Frame(p, Class::Bye, _, _) => {
                self.said_bye.insert(p);
                Ok(())
            }
            Event::Frame(p, Class::Abort, _, body) => Err(parse_abort(p, &body)),
            Event::Frame(p, Class::Status, _, body) => {
                match body.as_slice() {
                    [lo, hi] if u16::from_le_bytes([*lo, *hi]) != NOT_WAITING => {
                        self.waiting_on
                            .insert(p, peer_of_code(u16::from_le_bytes([*lo, *hi])));
                    }
                    _ => {
                        self.waiting_on.remove(&p);
                    }
                }
                Ok(())
            }
            Event::Frame(p, Class::Hello, _, _) => {
                Err(TransportError::Refused(p, "sent a second hello".into()))
            }
            Event::Closed(p, why) => {
                if self.said_bye.contains(&p) {
                    Ok(())
                } else {
                    let last = self.last_stage.get(&p).map_or_else(
                        || "before any protocol message".to_string(),
                        |s| format!("last heard from in {}", s.name()),
                    );
                    // A peer that stopped because of another's failure closes without a
                    // goodbye; the abort naming the cause may be on its way.
                    Err(self.explain(TransportError::Closed(p, format!("{why} ({last})"))))
                }
            }
            Event::Bad(p, why) => Err(TransportError::Refused(p, why)),
        }
    }

    /// A failed send is usually the consequence of a failure elsewhere: a peer that stopped
    /// the session says why in an abort that may already be on its way. Wait briefly for it.
    fn explain(&mut self, e: TransportError) -> TransportError {
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            match self
                .events
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(Event::Frame(p, Class::Abort, _, body)) => return parse_abort(p, &body),
                Ok(Event::Bad(p, why)) => return TransportError::Refused(p, why),
                Ok(_) => {}
                Err(_) => break,
            }
        }
        e
    }

    /// Tell every peer this participant has waited long for `on` (or no longer waits).
    fn announce(&mut self, on: Option<Peer>) {
        // Two bytes either way: a status frame's size does not say which it is.
        let body = on.map_or(NOT_WAITING, peer_code).to_le_bytes();
        let peers: Vec<Peer> = self.links.keys().copied().collect();
        for p in peers {
            let _ = self.send_frame(p, Class::Status, self.stage, &body);
        }
    }

    /// Who is silent when `waited_for` did not answer: follow the peers' announcements of
    /// whom they wait on to the one that waits on nobody.
    fn silent_one(&self, waited_for: Peer) -> Peer {
        let mut p = waited_for;
        let mut seen = BTreeSet::from([self.me, p]);
        while let Some(&q) = self.waiting_on.get(&p) {
            if !seen.insert(q) {
                break;
            }
            p = q;
        }
        p
    }

    /// Bytes this participant wrote to its sockets since the handshakes: every frame in
    /// TLS records (frame headers and record overhead included).
    pub fn wire_bytes_sent(&self) -> u64 {
        self.wire_sent
    }

    /// Every protocol message frame this participant sent, per peer and stage.
    pub fn traffic(&self) -> Vec<LinkTraffic> {
        self.traffic
            .iter()
            .map(|(&(to, stage), frames)| LinkTraffic {
                to,
                stage,
                frames: frames.clone(),
            })
            .collect()
    }

    /// Say goodbye to every peer and wait for everyone's goodbye: only then has the whole
    /// session succeeded (a participant writes its outputs after this).
    pub fn finish(&mut self) -> std::result::Result<(), TransportError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let peers: Vec<Peer> = self.links.keys().copied().collect();
        for &p in &peers {
            self.send_frame(p, Class::Bye, self.stage, &[])?;
        }
        let deadline = Instant::now() + self.timeout;
        while let Some(p) = peers.iter().copied().find(|p| !self.said_bye.contains(p)) {
            self.pump(deadline, p)?;
        }
        self.close();
        Ok(())
    }

    /// Tell every peer the session failed (stage, who is blamed, why), then close.
    pub(crate) fn abort(&mut self, stage: Stage, blame: Peer, msg: &str) {
        let mut body = vec![stage as u8];
        body.extend_from_slice(&peer_code(blame).to_le_bytes());
        let m: String = msg.chars().take(1000).collect();
        body.extend_from_slice(m.as_bytes());
        let peers: Vec<Peer> = self.links.keys().copied().collect();
        for p in peers {
            let _ = self.send_frame(p, Class::Abort, stage, &body);
        }
        self.close();
    }

    fn close(&mut self) {
        for l in self.links.values() {
            let mut out = Vec::new();
            let mut c = lock(&l.conn);
            c.send_close_notify();
            while c.wants_write() {
                if c.write_tls(&mut out).is_err() {
                    break;
                }
            }
            drop(c);
            let _ = lock(&l.sock).write_all(&out);
            let _ = l.raw.shutdown(Shutdown::Both);
        }
    }
}

impl Drop for Mesh {
    fn drop(&mut self) {
        for l in self.links.values() {
            let _ = l.raw.shutdown(Shutdown::Both);
        }
    }
}

fn peer_of_code(code: u16) -> Peer {
    if code == u16::MAX {
        Peer::Curator
    } else {
        Peer::Party(usize::from(code))
    }
}

fn peer_code(p: Peer) -> u16 {
    match p {
        Peer::Curator => u16::MAX,
        Peer::Party(j) => j as u16,
    }
}

fn parse_abort(by: Peer, b: &[u8]) -> TransportError {
    let (stage, blame, msg) = match b {
        [s, lo, hi, rest @ ..] => {
            let code = u16::from_le_bytes([*lo, *hi]);
            (
                Stage::from_u8(*s).unwrap_or(Stage::Setup),
                peer_of_code(code),
                String::from_utf8_lossy(rest).into_owned(),
            )
        }
        _ => (Stage::Setup, by, "no reason given".into()),
    };
    TransportError::Aborted {
        by,
        stage,
        blame,
        msg,
    }
}

impl Transport for Mesh {
    fn me(&self) -> Peer {
        self.me
    }

    fn enter(&mut self, stage: Stage) {
        self.stage = stage;
        if let Some(hook) = &self.on_stage {
            (hook.0)(self.me, stage);
        }
    }

    fn send(&mut self, to: Peer, msg: Vec<u8>) -> std::result::Result<(), TransportError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let stage = msg
            .first()
            .and_then(|s| Stage::from_u8(*s))
            .unwrap_or(self.stage);
        let out = self.send_frame(to, Class::Message, stage, &msg);
        if let Err(e) = out {
            let e = self.explain(e);
            self.failed = Some(e.clone());
            return Err(e);
        }
        Ok(())
    }

    fn recv(&mut self, from: Peer) -> std::result::Result<Vec<u8>, TransportError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if !self.links.contains_key(&from) {
            return Err(TransportError::NoRoute(from));
        }
        let deadline = Instant::now() + self.timeout;
        let announce_at = Instant::now() + ANNOUNCE_AFTER;
        let mut announced = false;
        loop {
            if let Some(m) = self.queues.get_mut(&from).and_then(VecDeque::pop_front) {
                if announced {
                    self.announce(None);
                }
                return Ok(m);
            }
            if self.said_bye.contains(&from) {
                let e =
                    TransportError::Closed(from, "said goodbye before sending this message".into());
                self.failed = Some(e.clone());
                return Err(e);
            }
            let until = if announced {
                deadline
            } else {
                deadline.min(announce_at)
            };
            match self.pump(until, from) {
                Err(TransportError::Timeout(_)) if !announced && Instant::now() < deadline => {
                    self.announce(Some(from));
                    announced = true;
                }
                Err(e) => {
                    self.failed = Some(e.clone());
                    return Err(e);
                }
                Ok(()) => {}
            }
        }
    }
}
