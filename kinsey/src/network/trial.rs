//! A trial session on one machine (127.0.0.1): a private CA whose key is not kept, one
//! certificate and key per participant, and the roster with a random session id.

use kinsey_core::{Error, Result};
use kinsey_protocol::session::local::free_ports;
use kinsey_protocol::session::pki::TestCa;
use kinsey_protocol::session::roster::{
    Member, PROTOCOL_VERSION, Roster, member_name, new_session_id,
};
use kinsey_protocol::transport::Peer;

/// One participant of a trial session: its name, port, certificate and key.
pub struct TrialMember {
    /// The curator or party j.
    pub peer: Peer,
    /// Its name in the roster (`curator`, `party-1`, ...).
    pub name: String,
    /// The port it listens on.
    pub port: u16,
    /// Its certificate (PEM).
    pub cert_pem: String,
    key_pem: String,
}

impl std::fmt::Debug for TrialMember {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrialMember")
            .field("name", &self.name)
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

impl TrialMember {
    /// Its private key (PKCS#8 PEM): write it 0600 from creation.
    pub fn key_pem(&self) -> &str {
        &self.key_pem
    }
}

/// A trial session's PKI and roster, the curator first.
#[derive(Debug)]
pub struct TrialSession {
    /// The CA's certificate (PEM); its key is dropped with this value.
    pub ca_pem: String,
    /// The curator, then parties 1..=K.
    pub members: Vec<TrialMember>,
    roster: Roster,
}

impl TrialSession {
    /// K parties and a curator on 127.0.0.1: the curator on `base_port` and party j on
    /// `base_port + j`, or on free ports chosen now; the CA named `ca_name`.
    pub fn new(k: usize, base_port: Option<u16>, ca_name: &str) -> Result<Self> {
        let ports: Vec<u16> = match base_port {
            Some(p) if usize::from(p) + k <= usize::from(u16::MAX) => {
                (0..=k).map(|j| p + j as u16).collect()
            }
            Some(p) => {
                return Err(Error::param(
                    "base_port",
                    format!("{p} + {k} is past port 65535"),
                ));
            }
            None => free_ports(k + 1)?,
        };
        let ca = TestCa::new(ca_name)?;
        let mut members = Vec::new();
        let mut listed = Vec::new();
        for (slot, &port) in ports.iter().enumerate() {
            let peer = if slot == 0 {
                Peer::Curator
            } else {
                Peer::Party(slot - 1)
            };
            let name = member_name(peer);
            let subject = format!("{name}.kinsey.local");
            let issued = ca.issue(&subject)?;
            listed.push(Member {
                name: name.clone(),
                address: format!("127.0.0.1:{port}"),
                subject,
                fingerprint: Some(issued.fingerprint),
            });
            members.push(TrialMember {
                peer,
                name,
                port,
                cert_pem: issued.cert_pem,
                key_pem: issued.key_pem,
            });
        }
        Ok(Self {
            ca_pem: ca.cert_pem(),
            members,
            roster: Roster {
                session_id: new_session_id(),
                protocol_version: PROTOCOL_VERSION,
                participant: listed,
            },
        })
    }

    /// The roster as TOML (identical at every participant).
    pub fn roster_toml(&self) -> Result<String> {
        toml_text(&self.roster)
    }
}

fn toml_text<T: serde::Serialize>(v: &T) -> Result<String> {
    toml::to_string(v).map_err(|e| Error::param("roster", format!("cannot write TOML: {e}")))
}
