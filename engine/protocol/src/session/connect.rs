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

pub(crate) fn accept_all(
    cfg: &MeshConfig,
    listener: &TcpListener,
    server: Arc<rustls::ServerConfig>,
    dialers: &[Peer],
    deadline: Instant,
) -> Result<Vec<Conn>> {
    let me = cfg.me;
    let mut got: Vec<Conn> = Vec::new();
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

pub(crate) fn dial_all(cfg: &MeshConfig, targets: &[Peer], deadline: Instant) -> Result<Vec<Conn>> {
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
