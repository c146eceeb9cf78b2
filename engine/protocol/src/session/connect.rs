//! Building the mesh: listen on the roster address, dial every participant earlier in
//! roster order with backoff until the connect window closes, run the TLS handshake (the
//! verifiers accept only roster certificates) and the hello on each connection.

use super::config::MeshConfig;
use super::link::hello;
use super::roster::member_name;
use super::tls::names;
use crate::transport::{Peer, Stage};
use kinsey_core::{Error, Result};
use rustls::Connection;
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// An established, authenticated connection to a peer.
pub(crate) type Conn = (Peer, Connection, TcpStream);

pub(crate) fn net_err(me: Peer, peer: Option<Peer>, msg: String) -> Error {
    Error::Protocol {
        stage: Stage::Setup.name().into(),
        participant: peer.unwrap_or(me).to_string(),
        msg,
    }
}

/// Drive a TLS handshake to its end on a blocking socket.
fn handshake(conn: &mut Connection, sock: &mut TcpStream) -> std::result::Result<(), String> {
    while conn.is_handshaking() {
        conn.complete_io(sock).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Accept a connection from every participant that dials this one, each handshake in its
/// own thread (a slow or refused peer does not hold up the others).
pub(crate) fn accept_all(
    cfg: &MeshConfig,
    listener: &TcpListener,
    server: Arc<rustls::ServerConfig>,
    dialers: &[Peer],
    deadline: Instant,
) -> Result<Vec<Conn>> {
    let me = cfg.me;
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel::<Result<Conn>>();
        let mut got: Vec<Conn> = Vec::new();
        loop {
            while let Ok(r) = rx.try_recv() {
                let c = r?;
                if got.iter().any(|(q, _, _)| *q == c.0) {
                    tracing::warn!("{me} refused a second connection from {}", c.0);
                } else {
                    got.push(c);
                }
            }
            if got.len() == dialers.len() {
                return Ok(got);
            }
            if Instant::now() >= deadline {
                let missing: Vec<Peer> = dialers
                    .iter()
                    .copied()
                    .filter(|p| !got.iter().any(|(q, _, _)| q == p))
                    .collect();
                let names: Vec<String> = missing.iter().map(Peer::to_string).collect();
                return Err(net_err(
                    me,
                    missing.first().copied(),
                    format!(
                        "never connected within the connect window ({} s): {}",
                        cfg.connect_window.as_secs(),
                        names.join(", ")
                    ),
                ));
            }
            match listener.accept() {
                Ok((sock, from)) => {
                    let tx = tx.clone();
                    let server = server.clone();
                    s.spawn(move || {
                        if let Some(r) = accept_one(cfg, sock, from, server, dialers) {
                            let _ = tx.send(r);
                        }
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => return Err(net_err(me, None, format!("accept failed: {e}"))),
            }
        }
    })
}

fn bound_socket(sock: &TcpStream, cfg: &MeshConfig) {
    let t = Some(cfg.timeout.min(Duration::from_secs(30)));
    let _ = sock.set_nodelay(true);
    let _ = sock.set_read_timeout(t);
    let _ = sock.set_write_timeout(t);
}

/// One accepted connection: the handshake (the verifier refuses certificates the roster does
/// not name for a dialer), the peer's identity, the hello. `None`: refused, keep waiting.
fn accept_one(
    cfg: &MeshConfig,
    mut sock: TcpStream,
    from: std::net::SocketAddr,
    server: Arc<rustls::ServerConfig>,
    dialers: &[Peer],
) -> Option<Result<Conn>> {
    let me = cfg.me;
    let _ = sock.set_nonblocking(false);
    bound_socket(&sock, cfg);
    let conn = match rustls::ServerConnection::new(server) {
        Ok(c) => c,
        Err(e) => return Some(Err(net_err(me, None, format!("TLS: {e}")))),
    };
    let mut conn = Connection::Server(conn);
    if let Err(e) = handshake(&mut conn, &mut sock) {
        tracing::warn!("{me} refused a connection from {from}: {e}");
        return None;
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
        return None;
    };
    Some(
        hello(&mut conn, &mut sock, cfg)
            .map(|()| (peer, conn, sock))
            .map_err(|e| net_err(me, Some(peer), e)),
    )
}

/// Dial every participant earlier in roster order, all at once.
pub(crate) fn dial_all(cfg: &MeshConfig, targets: &[Peer], deadline: Instant) -> Result<Vec<Conn>> {
    std::thread::scope(|s| {
        let hs: Vec<_> = targets
            .iter()
            .map(|&peer| s.spawn(move || dial_one(cfg, peer, deadline)))
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(net_err(cfg.me, None, "a dialling thread panicked".into()))
                })
            })
            .collect()
    })
}

fn dial_one(cfg: &MeshConfig, peer: Peer, deadline: Instant) -> Result<Conn> {
    let me = cfg.me;
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
    bound_socket(&sock, cfg);
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
    hello(&mut conn, &mut sock, cfg).map_err(|e| net_err(me, Some(peer), e))?;
    Ok((peer, conn, sock))
}
