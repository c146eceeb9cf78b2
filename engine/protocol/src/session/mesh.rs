//! The network transport: a full mesh of TLS 1.3 connections between the participants of a
//! session. Each participant listens on its roster address and dials every participant
//! before it in roster order, with backoff until the connect window closes. After the TLS
//! handshake both sides exchange a hello (protocol version, name, shared parameters and
//! their hash). One reader thread per connection checks every frame's length, session id and
//! sequence number before its body is read; a peer that disconnects, stalls past the
//! receive timeout or sends a bad frame ends the session for everyone, with an error naming
//! it and the stage.

use super::frame::{self, Class, HEADER, Limits};
use super::roster::{Session, member_name};
use super::tls::{Identity, names};
use crate::transport::{Peer, Stage, Transport, TransportError};
use kinsey_core::{Error, Result};
use rustls::Connection;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Frames a peer may have waiting before the role reads them.
const MAX_QUEUED: usize = 64;

/// A test hook: how a participant corrupts its first protocol message of a stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tamper {
    /// Valid framing, scrambled body.
    Garbage,
    /// A frame cut short, then the connection closed.
    Truncated,
    /// A length over the stage's limit.
    Oversized,
    /// The same frame sent twice.
    Replay,
    /// Another session's id.
    WrongSession,
}

impl std::str::FromStr for Tamper {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "garbage" => Tamper::Garbage,
            "truncated" => Tamper::Truncated,
            "oversized" => Tamper::Oversized,
            "replay" => Tamper::Replay,
            "wrong-session" => Tamper::WrongSession,
            o => {
                return Err(Error::param(
                    "tamper",
                    format!("'{o}' is not garbage, truncated, oversized, replay or wrong-session"),
                ));
            }
        })
    }
}

/// Everything a participant needs to join the mesh.
#[derive(Debug)]
pub struct MeshConfig {
    /// Who this participant is.
    pub me: Peer,
    /// The checked roster.
    pub session: Session,
    /// Its TLS material.
    pub identity: Identity,
    /// The shared parameters, canonical `name = value` lines (hashed in the hello).
    pub params: String,
    /// How long to wait for every peer to connect.
    pub connect_window: Duration,
    /// How long any one receive may wait.
    pub timeout: Duration,
    /// Frame limits per stage.
    pub limits: Limits,
    /// Test hook: corrupt the first message sent in a stage.
    pub tamper: Option<(Tamper, Stage)>,
    /// Test hook: stop (sleep) on entering this stage, so a test can kill the process there.
    pub hold_at: Option<Stage>,
}

enum Event {
    Frame(Peer, Class, Stage, Vec<u8>),
    Closed(Peer, String),
    Bad(Peer, String),
}

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
    hold_at: Option<Stage>,
    /// Set once the session has failed: every later call returns it.
    failed: Option<TransportError>,
}

impl std::fmt::Debug for Mesh {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mesh({}, {} links)", self.me, self.links.len())
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn net_err(me: Peer, peer: Option<Peer>, msg: String) -> Error {
    Error::Protocol {
        stage: Stage::Setup.name().into(),
        participant: peer.unwrap_or(me).to_string(),
        msg,
    }
}

/// Write a frame through the TLS connection: encrypt under the connection's lock, then take
/// the socket's lock before releasing it (records stay in order) and write without holding
/// the connection (the reader thread never waits on a blocked write).
fn write_frame(
    conn: &Mutex<Connection>,
    sock: &Mutex<TcpStream>,
    bytes: &[u8],
) -> std::io::Result<()> {
    let mut c = lock(conn);
    c.writer().write_all(bytes)?;
    let mut out = Vec::with_capacity(bytes.len() + 64);
    while c.wants_write() {
        c.write_tls(&mut out)?;
    }
    let mut s = lock(sock);
    drop(c);
    s.write_all(&out)?;
    s.flush()
}

/// Blocking hello exchange on a fresh TLS stream.
fn hello(
    conn: &mut Connection,
    sock: &mut TcpStream,
    cfg: &MeshConfig,
    peer: Peer,
) -> std::result::Result<(), String> {
    let mut body = Vec::new();
    body.extend_from_slice(&super::roster::PROTOCOL_VERSION.to_le_bytes());
    body.extend_from_slice(&hash(&cfg.params));
    body.extend_from_slice(cfg.params.as_bytes());
    let f = frame::encode(&cfg.session.id, 0, Class::Hello, Stage::Setup, &body);
    let mut s = Blocking { conn, sock };
    s.write_all(&f)
        .map_err(|e| format!("could not send the hello: {e}"))?;
    let mut len = [0u8; 4];
    s.read_exact(&mut len).map_err(|e| {
        format!("refused the connection or sent no hello ({e}); the roster must name this participant's certificate for it")
    })?;
    let len = frame::check_len(u32::from_le_bytes(len), &cfg.limits)?;
    let mut h = vec![0u8; HEADER];
    s.read_exact(&mut h)
        .map_err(|e| format!("sent a truncated hello ({e})"))?;
    let hd = frame::check_header(&h, len, &cfg.session.id, 0, &cfg.limits)?;
    if hd.class != Class::Hello {
        return Err("sent something other than a hello first".into());
    }
    let mut b = vec![0u8; hd.body];
    s.read_exact(&mut b)
        .map_err(|e| format!("sent a truncated hello ({e})"))?;
    if b.len() < 36 {
        return Err("sent a malformed hello".into());
    }
    let version = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    if version != super::roster::PROTOCOL_VERSION {
        return Err(format!(
            "speaks protocol version {version}, this participant {}",
            super::roster::PROTOCOL_VERSION
        ));
    }
    if b[4..36] != hash(&cfg.params) {
        let theirs = String::from_utf8_lossy(&b[36..]);
        return Err(format!(
            "disagrees on the shared parameters: {}",
            first_difference(&cfg.params, &theirs)
        ));
    }
    let _ = peer;
    Ok(())
}

/// Blocking reads and writes on a TLS connection before its reader thread starts.
struct Blocking<'a> {
    conn: &'a mut Connection,
    sock: &'a mut TcpStream,
}

impl Blocking<'_> {
    fn write_all(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.conn.writer().write_all(b)?;
        while self.conn.wants_write() {
            self.conn.write_tls(self.sock)?;
        }
        self.sock.flush()
    }

    fn read_exact(&mut self, mut buf: &mut [u8]) -> std::io::Result<()> {
        while !buf.is_empty() {
            match self.conn.reader().read(buf) {
                Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => buf = &mut buf[n..],
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if self.conn.read_tls(self.sock)? == 0 {
                        return Err(std::io::ErrorKind::UnexpectedEof.into());
                    }
                    self.conn
                        .process_new_packets()
                        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
                    while self.conn.wants_write() {
                        self.conn.write_tls(self.sock)?;
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

fn hash(params: &str) -> [u8; 32] {
    let d = ring::digest::digest(&ring::digest::SHA256, params.as_bytes());
    let mut h = [0u8; 32];
    h.copy_from_slice(d.as_ref());
    h
}

/// The first parameter on which two canonical lists differ, named.
pub(crate) fn first_difference(mine: &str, theirs: &str) -> String {
    let parse = |s: &str| -> BTreeMap<String, String> {
        s.lines()
            .filter_map(|l| l.split_once(" = "))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let (a, b) = (parse(mine), parse(theirs));
    for (k, v) in &a {
        match b.get(k) {
            Some(w) if w == v => {}
            Some(w) => return format!("parameter '{k}' is {v} here and {w} there"),
            None => return format!("parameter '{k}' is {v} here and missing there"),
        }
    }
    match b.keys().find(|k| !a.contains_key(*k)) {
        Some(k) => format!("parameter '{k}' is set there and missing here"),
        None => "the parameter lists differ in form".into(),
    }
}

/// Drive a TLS handshake to its end on a blocking socket.
fn handshake(conn: &mut Connection, sock: &mut TcpStream) -> std::result::Result<(), String> {
    while conn.is_handshaking() {
        conn.complete_io(sock).map_err(|e| e.to_string())?;
    }
    Ok(())
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

    fn start(cfg: &MeshConfig, conns: Vec<(Peer, Connection, TcpStream)>) -> Mesh {
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
            tamper: cfg.tamper,
            hold_at: cfg.hold_at,
            failed: None,
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
                format!("closed the connection while it was sent a message ({e})"),
            )
        };
        match tamper {
            None => write_frame(&link.conn, &link.sock, &f).map_err(closed),
            Some(Tamper::Garbage) => {
                for (i, b) in f.iter_mut().enumerate().skip(4 + HEADER + 2) {
                    *b ^= 0xA5 ^ (i as u8);
                }
                write_frame(&link.conn, &link.sock, &f).map_err(closed)
            }
            Some(Tamper::WrongSession) => {
                f[4] ^= 1;
                write_frame(&link.conn, &link.sock, &f).map_err(closed)
            }
            Some(Tamper::Replay) => {
                write_frame(&link.conn, &link.sock, &f).map_err(closed)?;
                write_frame(&link.conn, &link.sock, &f).map_err(closed)
            }
            Some(Tamper::Oversized) => {
                let over = (HEADER + self.limits.body(Class::Message, stage) + 1) as u32;
                f[..4].copy_from_slice(&over.to_le_bytes());
                write_frame(&link.conn, &link.sock, &f).map_err(closed)
            }
            Some(Tamper::Truncated) => {
                let full = (f.len() - 4 + 100) as u32;
                f[..4].copy_from_slice(&full.to_le_bytes());
                write_frame(&link.conn, &link.sock, &f).map_err(closed)?;
                // Close the sending side only: the peer sees the frame end early.
                let _ = link.raw.shutdown(Shutdown::Write);
                Ok(())
            }
        }
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
                return Err(TransportError::Timeout(waiting_for));
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
                    Err(TransportError::Closed(p, format!("{why} ({last})")))
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
            lock(&l.conn).send_close_notify();
            let mut out = Vec::new();
            let mut c = lock(&l.conn);
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
                if code == u16::MAX {
                    Peer::Curator
                } else {
                    Peer::Party(code as usize)
                },
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
        if self.hold_at == Some(stage) {
            eprintln!("kinsey test hook: {} holding in {}", self.me, stage.name());
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
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
        loop {
            if let Some(m) = self.queues.get_mut(&from).and_then(VecDeque::pop_front) {
                return Ok(m);
            }
            if self.said_bye.contains(&from) {
                let e =
                    TransportError::Closed(from, "said goodbye before sending this message".into());
                self.failed = Some(e.clone());
                return Err(e);
            }
            if let Err(e) = self.pump(deadline, from) {
                self.failed = Some(e.clone());
                return Err(e);
            }
        }
    }
}

/// One connection's reader: decrypts, checks every frame header before reading its body,
/// and forwards frames and failures to the mesh.
struct Reader {
    peer: Peer,
    id: [u8; 16],
    limits: Limits,
    conn: Arc<Mutex<Connection>>,
    sock: Arc<Mutex<TcpStream>>,
    tx: SyncSender<Event>,
}

impl Reader {
    fn run(self, mut raw: TcpStream) {
        let mut buf = vec![0u8; 64 * 1024];
        let mut plain: Vec<u8> = Vec::new();
        let mut expected_seq = 1u64;
        let mut pending: Option<(usize, frame::Header)> = None;
        // Whatever the hello exchange left decrypted inside the connection comes first.
        let mut first = true;
        loop {
            let n = if first {
                first = false;
                0
            } else {
                match raw.read(&mut buf) {
                    Ok(0) => usize::MAX,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        let _ = self
                            .tx
                            .send(Event::Closed(self.peer, format!("disconnected ({e})")));
                        return;
                    }
                }
            };
            if n == usize::MAX {
                let why = if plain.is_empty() && pending.is_none() {
                    "disconnected without saying goodbye".to_string()
                } else {
                    format!(
                        "closed the connection in the middle of a frame ({} bytes of it arrived)",
                        plain.len()
                    )
                };
                let ev = if plain.is_empty() && pending.is_none() {
                    Event::Closed(self.peer, why)
                } else {
                    Event::Bad(self.peer, why)
                };
                let _ = self.tx.send(ev);
                return;
            }
            if let Err(why) = self.decrypt(&buf[..n], &mut plain) {
                let _ = self.tx.send(Event::Bad(self.peer, why));
                return;
            }
            loop {
                match self.next_frame(&mut plain, &mut pending, &mut expected_seq) {
                    Ok(Some(ev)) => {
                        if self.tx.send(ev).is_err() {
                            return;
                        }
                    }
                    Ok(None) => break,
                    Err(why) => {
                        let _ = self.tx.send(Event::Bad(self.peer, why));
                        return;
                    }
                }
            }
        }
    }

    fn decrypt(&self, raw: &[u8], plain: &mut Vec<u8>) -> std::result::Result<(), String> {
        let mut c = lock(&self.conn);
        let mut rd = raw;
        while !rd.is_empty() {
            c.read_tls(&mut rd)
                .map_err(|e| format!("sent unreadable TLS data ({e})"))?;
            c.process_new_packets()
                .map_err(|e| format!("broke the TLS session ({e})"))?;
        }
        let mut tmp = [0u8; 16 * 1024];
        loop {
            match c.reader().read(&mut tmp) {
                Ok(0) => break,
                Ok(n) => plain.extend_from_slice(&tmp[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(format!("broke the TLS session ({e})")),
            }
        }
        if c.wants_write() {
            let mut out = Vec::new();
            while c.wants_write() {
                if c.write_tls(&mut out).is_err() {
                    break;
                }
            }
            let mut s = lock(&self.sock);
            drop(c);
            let _ = s.write_all(&out);
        }
        Ok(())
    }

    fn next_frame(
        &self,
        plain: &mut Vec<u8>,
        pending: &mut Option<(usize, frame::Header)>,
        expected_seq: &mut u64,
    ) -> std::result::Result<Option<Event>, String> {
        if pending.is_none() {
            if plain.len() < 4 {
                return Ok(None);
            }
            let len = frame::check_len(
                u32::from_le_bytes([plain[0], plain[1], plain[2], plain[3]]),
                &self.limits,
            )?;
            if plain.len() < 4 + HEADER {
                return Ok(None);
            }
            let h = frame::check_header(
                &plain[4..4 + HEADER],
                len,
                &self.id,
                *expected_seq,
                &self.limits,
            )?;
            *expected_seq += 1;
            *pending = Some((len, h));
        }
        let Some((len, h)) = *pending else {
            return Ok(None);
        };
        if plain.len() < 4 + len {
            return Ok(None);
        }
        let body = plain[4 + HEADER..4 + len].to_vec();
        plain.drain(..4 + len);
        *pending = None;
        Ok(Some(Event::Frame(self.peer, h.class, h.stage, body)))
    }
}

fn accept_all(
    cfg: &MeshConfig,
    listener: &TcpListener,
    server: Arc<rustls::ServerConfig>,
    dialers: &[Peer],
    deadline: Instant,
) -> Result<Vec<(Peer, Connection, TcpStream)>> {
    let me = cfg.me;
    let mut got: Vec<(Peer, Connection, TcpStream)> = Vec::new();
    while got.len() < dialers.len() {
        if Instant::now() >= deadline {
            let missing: Vec<String> = dialers
                .iter()
                .filter(|p| !got.iter().any(|(q, _, _)| q == *p))
                .map(|p| p.to_string())
                .collect();
            return Err(net_err(
                me,
                dialers
                    .iter()
                    .copied()
                    .find(|p| !got.iter().any(|(q, _, _)| q == p)),
                format!(
                    "never connected within the connect window ({} s): {}",
                    cfg.connect_window.as_secs(),
                    missing.join(", ")
                ),
            ));
        }
        let (mut sock, from) = match listener.accept() {
            Ok(s) => s,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            Err(e) => return Err(net_err(me, None, format!("accept failed: {e}"))),
        };
        let _ = sock.set_nonblocking(false);
        let _ = sock.set_nodelay(true);
        let _ = sock.set_read_timeout(Some(cfg.timeout.min(Duration::from_secs(30))));
        let _ = sock.set_write_timeout(Some(cfg.timeout.min(Duration::from_secs(30))));
        let conn = rustls::ServerConnection::new(server.clone())
            .map_err(|e| net_err(me, None, format!("TLS: {e}")))?;
        let mut conn = Connection::Server(conn);
        if let Err(e) = handshake(&mut conn, &mut sock) {
            tracing::warn!("{me} refused a connection from {from}: {e}");
            continue;
        }
        let Some(peer) = conn
            .peer_certificates()
            .and_then(|c| c.first())
            .and_then(|c| {
                dialers
                    .iter()
                    .copied()
                    .find(|p| cfg.session.member(*p).is_ok_and(|m| names(m, c)))
            })
        else {
            tracing::warn!("{me} refused a connection from {from}: no roster certificate");
            continue;
        };
        if got.iter().any(|(q, _, _)| *q == peer) {
            tracing::warn!("{me} refused a second connection from {peer} ({from})");
            continue;
        }
        hello(&mut conn, &mut sock, cfg, peer).map_err(|e| net_err(me, Some(peer), e))?;
        got.push((peer, conn, sock));
    }
    Ok(got)
}

fn dial_all(
    cfg: &MeshConfig,
    targets: &[Peer],
    deadline: Instant,
) -> Result<Vec<(Peer, Connection, TcpStream)>> {
    let me = cfg.me;
    let mut out = Vec::new();
    for &peer in targets {
        let m = cfg.session.member(peer)?;
        let addr = cfg.session.address(peer)?;
        let mut wait = Duration::from_millis(50);
        let mut sock = loop {
            match TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
                Ok(s) => break s,
                Err(e) => {
                    if Instant::now() + wait >= deadline {
                        return Err(net_err(
                            me,
                            Some(peer),
                            format!(
                                "never came: no answer at {addr} within the connect window ({} s; last error: {e})",
                                cfg.connect_window.as_secs()
                            ),
                        ));
                    }
                    std::thread::sleep(wait);
                    wait = (wait * 2).min(Duration::from_secs(1));
                }
            }
        };
        let _ = sock.set_nodelay(true);
        let _ = sock.set_read_timeout(Some(cfg.timeout.min(Duration::from_secs(30))));
        let _ = sock.set_write_timeout(Some(cfg.timeout.min(Duration::from_secs(30))));
        let name = rustls_pki_types::ServerName::try_from(m.subject.clone())
            .map_err(|e| net_err(me, Some(peer), format!("subject: {e}")))?;
        let conn = rustls::ClientConnection::new(cfg.identity.client(m)?, name)
            .map_err(|e| net_err(me, Some(peer), format!("TLS: {e}")))?;
        let mut conn = Connection::Client(conn);
        handshake(&mut conn, &mut sock).map_err(|e| {
            net_err(
                me,
                Some(peer),
                format!(
                    "the TLS handshake failed ({e}); {} presents the certificate the roster names for {}, and {peer} must present the one named for it",
                    member_name(me),
                    member_name(me)
                ),
            )
        })?;
        hello(&mut conn, &mut sock, cfg, peer).map_err(|e| net_err(me, Some(peer), e))?;
        out.push((peer, conn, sock));
    }
    Ok(out)
}
