//! One TLS connection between two participants: the blocking hello exchange (version,
//! shared parameters and their hash), frame writes that never hold the connection while
//! the socket blocks, and the reader thread that checks every frame header before reading
//! its body.

use super::config::MeshConfig;
use super::frame::{self, Class, HEADER, Limits};
use crate::transport::{Peer, Stage};
use rustls::Connection;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex};

pub(crate) enum Event {
    Frame(Peer, Class, Stage, Vec<u8>),
    Closed(Peer, String),
    Bad(Peer, String),
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Write a frame through the TLS connection: encrypt under the connection's lock, then take
/// the socket's lock before releasing it (records stay in order) and write without holding
/// the connection (the reader thread never waits on a blocked write).
pub(crate) fn write_frame(
    conn: &Mutex<Connection>,
    sock: &Mutex<TcpStream>,
    bytes: &[u8],
) -> std::io::Result<usize> {
    let mut c = lock(conn);
    let mut out = Vec::with_capacity(bytes.len() + bytes.len() / 64 + 64);
    encrypt_into(&mut c, bytes, &mut out)?;
    let mut s = lock(sock);
    drop(c);
    s.write_all(&out)?;
    s.flush()?;
    Ok(out.len())
}

/// Encrypt `bytes` into TLS records appended to `out`. rustls buffers a bounded amount of
/// outgoing data, so the plaintext goes in as the records come out.
fn encrypt_into(c: &mut Connection, mut bytes: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
    while !bytes.is_empty() {
        let n = c.writer().write(bytes)?;
        bytes = &bytes[n..];
        let mut drained = false;
        while c.wants_write() {
            c.write_tls(out)?;
            drained = true;
        }
        if n == 0 && !drained {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
    }
    Ok(())
}

/// Blocking hello exchange on a fresh TLS stream.
pub(crate) fn hello(
    conn: &mut Connection,
    sock: &mut TcpStream,
    cfg: &MeshConfig,
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
    Ok(())
}

/// Blocking reads and writes on a TLS connection before its reader thread starts.
struct Blocking<'a> {
    conn: &'a mut Connection,
    sock: &'a mut TcpStream,
}

impl Blocking<'_> {
    fn write_all(&mut self, b: &[u8]) -> std::io::Result<()> {
        let mut out = Vec::new();
        encrypt_into(self.conn, b, &mut out)?;
        self.sock.write_all(&out)?;
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

/// One connection's reader: decrypts, checks every frame header before reading its body,
/// and forwards frames and failures to the mesh.
pub(crate) struct Reader {
    pub(crate) peer: Peer,
    pub(crate) id: [u8; 16],
    pub(crate) limits: Limits,
    pub(crate) conn: Arc<Mutex<Connection>>,
    pub(crate) sock: Arc<Mutex<TcpStream>>,
    pub(crate) tx: SyncSender<Event>,
}

impl Reader {
    pub(crate) fn run(self, mut raw: TcpStream) {
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
        let mut tmp = [0u8; 16 * 1024];
        // Decrypt record by record and drain the plaintext each time: rustls holds a bounded
        // plaintext buffer and refuses more until it is read.
        loop {
            loop {
                match c.reader().read(&mut tmp) {
                    Ok(0) => break,
                    Ok(n) => plain.extend_from_slice(&tmp[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(format!("broke the TLS session ({e})")),
                }
            }
            if rd.is_empty() {
                break;
            }
            c.read_tls(&mut rd)
                .map_err(|e| format!("sent unreadable TLS data ({e})"))?;
            c.process_new_packets()
                .map_err(|e| format!("broke the TLS session ({e})"))?;
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
