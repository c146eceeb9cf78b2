//! A whole network session inside one process: one thread per participant, each with its
//! own TLS mesh over loopback TCP, certificates from a fresh test CA. Used to measure the
//! network transport against the in-process run in the same session, and by tests.

use super::config::{MeshConfig, MeshHooks};
use super::frame::Limits;
use super::pki::{Issued, TestCa};
use super::roster::{Member, PROTOCOL_VERSION, Roster, Session, member_name, new_session_id};
use super::run::{ParticipantOutcome, Seat, run_participant};
use super::tls::Identity;
use crate::faults::Leak;
use crate::transport::Peer;
use kinsey_backend::AdditiveHe;
use kinsey_core::{Error, Result};
use kinsey_learn::aggregate::PartyInput;
use std::sync::Arc;
use std::time::Duration;

/// A generated session on 127.0.0.1: CA, roster (fingerprints pinned or not) and identities.
#[derive(Debug)]
pub struct LocalSession {
    ca: TestCa,
    roster: Roster,
    ids: Vec<Issued>,
}

/// `n` loopback ports free right now (bound to port 0, then released; another program may
/// take one before it is used).
pub fn free_ports(n: usize) -> Result<Vec<u16>> {
    let ls = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(|e| Error::param("port", format!("no free port: {e}")))?;
    ls.iter()
        .map(|l| {
            l.local_addr()
                .map(|a| a.port())
                .map_err(|e| Error::param("port", e.to_string()))
        })
        .collect()
}

/// Participant `i` in roster order: 0 is the curator, j is party j.
pub fn seat_peer(i: usize) -> Peer {
    if i == 0 {
        Peer::Curator
    } else {
        Peer::Party(i - 1)
    }
}

impl LocalSession {
    /// K parties and the curator on free loopback ports.
    pub fn new(k: usize, pin: bool) -> Result<Self> {
        let ca = TestCa::new("kinsey local session CA")?;
        let ports = free_ports(k + 1)?;
        let mut participant = Vec::new();
        let mut ids = Vec::new();
        for (i, port) in ports.iter().enumerate() {
            let name = member_name(seat_peer(i));
            let subject = format!("{name}.kinsey.test");
            let issued = ca.issue(&subject)?;
            participant.push(Member {
                name,
                address: format!("127.0.0.1:{port}"),
                subject,
                fingerprint: pin.then(|| issued.fingerprint.clone()),
            });
            ids.push(issued);
        }
        Ok(Self {
            ca,
            roster: Roster {
                session_id: new_session_id(),
                protocol_version: PROTOCOL_VERSION,
                participant,
            },
            ids,
        })
    }

    /// The CA (to issue certificates the roster does not name, in tests).
    pub fn ca(&self) -> &TestCa {
        &self.ca
    }

    /// Participant `i`'s mesh configuration, with `params` as the shared parameters.
    pub fn config(
        &self,
        i: usize,
        params: &str,
        d: usize,
        info: &kinsey_backend::BackendInfo,
    ) -> Result<MeshConfig> {
        let id = self
            .ids
            .get(i)
            .ok_or_else(|| Error::param("participant", format!("no participant {i}")))?;
        let k = self.ids.len() - 1;
        Ok(MeshConfig {
            me: seat_peer(i),
            session: Session::check(self.roster.clone())?,
            identity: Identity::from_pem(&self.ca.cert_pem(), &id.cert_pem, &id.key_pem)
                .map_err(|e| Error::param("tls", e))?,
            params: params.into(),
            connect_window: Duration::from_secs(60),
            timeout: Duration::from_secs(600),
            limits: Limits::for_backend(k, d, info),
            hooks: MeshHooks::default(),
            on_stage: None,
        })
    }

    /// Run every participant in its own thread; `edit` may change one's configuration.
    pub fn run(
        &self,
        backend: &Arc<dyn AdditiveHe>,
        inputs: &[PartyInput],
        edit: &(dyn Fn(usize, &mut MeshConfig) + Sync),
    ) -> Vec<Result<ParticipantOutcome>> {
        self.run_variant(backend, inputs, None, edit)
    }

    /// [`run`](Self::run), or a deliberately leaking variant of the protocol (tests).
    pub(crate) fn run_variant(
        &self,
        backend: &Arc<dyn AdditiveHe>,
        inputs: &[PartyInput],
        leak: Option<Leak>,
        edit: &(dyn Fn(usize, &mut MeshConfig) + Sync),
    ) -> Vec<Result<ParticipantOutcome>> {
        let k = inputs.len();
        let d = inputs.first().map_or(0, |p| p.w.len());
        let info = backend.info();
        let info = &info;
        std::thread::scope(|s| {
            let hs: Vec<_> = (0..=k)
                .map(|i| {
                    s.spawn(move || {
                        let mut cfg = self.config(i, "job = local\n", d, info)?;
                        edit(i, &mut cfg);
                        let seat = Seat {
                            backend: backend.clone(),
                            input: (i > 0).then(|| inputs[i - 1].clone()),
                            binding: None,
                            dim: d,
                            leak,
                        };
                        run_participant(&cfg, &seat)
                    })
                })
                .collect();
            hs.into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(Error::Numerical("a participant thread panicked".into()))
                    })
                })
                .collect()
        })
    }
}
