//! The session roster: who takes part, in which role, where each listens, which certificate
//! each must present, the session id and the protocol version. Every participant holds the
//! same roster file; the shared parameters travel in the handshake as a canonical list whose
//! hash must match.

use crate::transport::Peer;
use kinsey_core::{Error, Result};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::Path;

/// The wire protocol's version; a peer with another version is refused in the handshake.
pub const PROTOCOL_VERSION: u32 = 1;

/// Largest roster file read (bytes).
const MAX_ROSTER_BYTES: u64 = 1 << 20;

/// One participant in the roster.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Member {
    /// `curator` or `party-J` (J from 1 to K).
    pub name: String,
    /// Host and port it listens on (`127.0.0.1:7100`).
    pub address: String,
    /// The DNS name its certificate must carry (subject alternative name); checked against the
    /// session CA's chain.
    pub subject: String,
    /// Optional pin: `sha256:` and the hex SHA-256 of the certificate's DER. When given, only
    /// that exact certificate is accepted for this participant.
    #[serde(default)]
    pub fingerprint: Option<String>,
}

/// The roster file (`roster.toml`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Roster {
    /// 32 hex digits, random per session; carried in every frame.
    pub session_id: String,
    /// Must equal [`PROTOCOL_VERSION`].
    pub protocol_version: u32,
    /// The curator and the K parties, in any order.
    pub participant: Vec<Member>,
}

/// A participant's name in the roster.
pub fn member_name(p: Peer) -> String {
    match p {
        Peer::Curator => "curator".into(),
        Peer::Party(j) => format!("party-{}", j + 1),
    }
}

fn peer_of(name: &str, k: usize) -> Option<Peer> {
    if name == "curator" {
        return Some(Peer::Curator);
    }
    let j: usize = name.strip_prefix("party-")?.parse().ok()?;
    (1..=k).contains(&j).then(|| Peer::Party(j - 1))
}

/// The SHA-256 fingerprint of a DER certificate, as the roster writes it.
pub fn fingerprint(der: &[u8]) -> String {
    let h = ring::digest::digest(&ring::digest::SHA256, der);
    let hex: String = h.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// A checked roster: parties numbered 1..K, one curator, addresses parsed.
#[derive(Debug, Clone)]
pub struct Session {
    /// The session id's 16 bytes.
    pub id: [u8; 16],
    /// K.
    pub parties: usize,
    /// SHA-256 of the roster's canonical form (checked in the handshake with the shared
    /// parameters, so every participant runs the same roster).
    pub digest: String,
    members: Vec<(Peer, Member, SocketAddr)>,
}

impl Session {
    /// Read and check a roster file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = read_bounded(path, MAX_ROSTER_BYTES)?;
        let r: Roster = toml::from_str(&text).map_err(|e| Error::Config {
            path: path.to_path_buf(),
            msg: e.to_string(),
        })?;
        Self::check(r).map_err(|e| Error::Config {
            path: path.to_path_buf(),
            msg: e.to_string(),
        })
    }

    /// Check a roster.
    pub fn check(r: Roster) -> Result<Self> {
        if r.protocol_version != PROTOCOL_VERSION {
            return Err(Error::param(
                "protocol_version",
                format!(
                    "the roster says {}, this kinsey speaks {PROTOCOL_VERSION}",
                    r.protocol_version
                ),
            ));
        }
        let id = parse_id(&r.session_id)?;
        let mut canonical = r.clone();
        canonical.participant.sort_by(|a, b| a.name.cmp(&b.name));
        let digest = fingerprint(
            serde_json::to_string(&canonical)
                .map_err(|e| Error::param("participant", e.to_string()))?
                .as_bytes(),
        );
        let k = r.participant.len().saturating_sub(1);
        if k == 0 || k > crate::params::MAX_PARTIES {
            return Err(Error::param(
                "participant",
                format!(
                    "a session has the curator and 1 to {} parties; the roster lists {} participants",
                    crate::params::MAX_PARTIES,
                    r.participant.len()
                ),
            ));
        }
        let mut members: Vec<(Peer, Member, SocketAddr)> = Vec::with_capacity(k + 1);
        for m in r.participant {
            let peer = peer_of(&m.name, k).ok_or_else(|| {
                Error::param(
                    "participant.name",
                    format!("'{}' is not 'curator' or 'party-1' .. 'party-{k}'", m.name),
                )
            })?;
            if members.iter().any(|(p, _, _)| *p == peer) {
                return Err(Error::param(
                    "participant.name",
                    format!("'{}' appears twice", m.name),
                ));
            }
            let addr: SocketAddr = m.address.parse().map_err(|e| {
                Error::param(
                    "participant.address",
                    format!("{}: '{}' is not HOST:PORT ({e})", m.name, m.address),
                )
            })?;
            if rustls_pki_types::ServerName::try_from(m.subject.clone()).is_err() {
                return Err(Error::param(
                    "participant.subject",
                    format!("{}: '{}' is not a DNS name", m.name, m.subject),
                ));
            }
            if members.iter().any(|(_, o, _)| o.subject == m.subject) {
                return Err(Error::param(
                    "participant.subject",
                    format!(
                        "{}: subject '{}' is already another participant's",
                        m.name, m.subject
                    ),
                ));
            }
            if let Some(f) = &m.fingerprint {
                let ok = f
                    .strip_prefix("sha256:")
                    .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()));
                if !ok {
                    return Err(Error::param(
                        "participant.fingerprint",
                        format!("{}: expected sha256: and 64 hex digits", m.name),
                    ));
                }
            }
            members.push((peer, m, addr));
        }
        members.sort_by_key(|(p, _, _)| order(*p));
        Ok(Self {
            id,
            parties: k,
            digest,
            members,
        })
    }

    /// The roster entry of a participant.
    pub fn member(&self, p: Peer) -> Result<&Member> {
        self.members
            .iter()
            .find(|(q, _, _)| *q == p)
            .map(|(_, m, _)| m)
            .ok_or_else(|| Error::param("session.me", format!("{p} is not in the roster")))
    }

    /// Where a participant listens.
    pub fn address(&self, p: Peer) -> Result<SocketAddr> {
        self.members
            .iter()
            .find(|(q, _, _)| *q == p)
            .map(|(_, _, a)| *a)
            .ok_or_else(|| Error::param("session.me", format!("{p} is not in the roster")))
    }

    /// Every participant, the curator first.
    pub fn peers(&self) -> impl Iterator<Item = Peer> + '_ {
        self.members.iter().map(|(p, _, _)| *p)
    }

    /// A participant by its name in the roster.
    pub fn peer(&self, name: &str) -> Result<Peer> {
        peer_of(name, self.parties).ok_or_else(|| {
            Error::param(
                "session.me",
                format!(
                    "'{name}' is not in the roster (curator, party-1 .. party-{})",
                    self.parties
                ),
            )
        })
    }

    /// Who dials whom: the participant later in roster order dials the earlier one.
    pub fn dials(&self, from: Peer, to: Peer) -> bool {
        order(from) > order(to)
    }
}

/// Roster order: the curator, then the parties by number.
pub(crate) fn order(p: Peer) -> usize {
    match p {
        Peer::Curator => 0,
        Peer::Party(j) => j + 1,
    }
}

fn parse_id(s: &str) -> Result<[u8; 16]> {
    let bad = || Error::param("session_id", format!("'{s}' is not 32 hex digits"));
    if s.len() != 32 {
        return Err(bad());
    }
    let mut id = [0u8; 16];
    for (i, b) in id.iter_mut().enumerate() {
        *b = u8::from_str_radix(s.get(2 * i..2 * i + 2).ok_or_else(bad)?, 16).map_err(|_| bad())?;
    }
    Ok(id)
}

/// A fresh random session id (OS randomness).
pub fn new_session_id() -> String {
    use rand_core::RngCore;
    let mut id = [0u8; 16];
    kinsey_dp::rng::os_crypto_rng().fill_bytes(&mut id);
    id.iter().map(|b| format!("{b:02x}")).collect()
}

/// Read a text file of at most `max` bytes (checked before reading).
pub fn read_bounded(path: &Path, max: u64) -> Result<String> {
    let io = |e: std::io::Error| Error::Io {
        path: path.to_path_buf(),
        source: e,
    };
    let len = std::fs::metadata(path).map_err(io)?.len();
    if len > max {
        return Err(Error::Config {
            path: path.to_path_buf(),
            msg: format!("{len} bytes; at most {max} are read"),
        });
    }
    std::fs::read_to_string(path).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roster(k: usize) -> Roster {
        let mut participant = vec![Member {
            name: "curator".into(),
            address: "127.0.0.1:7000".into(),
            subject: "curator.kinsey".into(),
            fingerprint: None,
        }];
        for j in 1..=k {
            participant.push(Member {
                name: format!("party-{j}"),
                address: format!("127.0.0.1:{}", 7000 + j),
                subject: format!("party-{j}.kinsey"),
                fingerprint: None,
            });
        }
        Roster {
            session_id: "00112233445566778899aabbccddeeff".into(),
            protocol_version: PROTOCOL_VERSION,
            participant,
        }
    }

    /// The roster TOML: what checks has distinct members, a curator and a 16-byte session
    /// id; nothing panics.
    #[test]
    fn fuzz_roster() {
        let text = toml::to_string(&roster(3)).expect("toml");
        kinsey_fuzz::fuzz_text("roster (TOML)", &[&text], |t| {
            let Ok(r) = toml::from_str::<Roster>(t) else {
                return Ok(());
            };
            let n = r.participant.len();
            if let Ok(s) = Session::check(r)
                && s.members.len() != n
            {
                return Err(format!("{n} participants became {}", s.members.len()));
            }
            Ok(())
        });
    }

    #[test]
    fn a_good_roster_is_ordered_and_named() {
        let s = Session::check(roster(3)).expect("roster");
        assert_eq!(s.parties, 3);
        assert_eq!(s.id[0], 0x00);
        assert_eq!(s.id[15], 0xff);
        let order: Vec<Peer> = s.peers().collect();
        assert_eq!(order[0], Peer::Curator);
        assert_eq!(order[3], Peer::Party(2));
        assert!(s.dials(Peer::Party(1), Peer::Curator));
        assert!(!s.dials(Peer::Curator, Peer::Party(0)));
        assert_eq!(s.peer("party-2").expect("peer"), Peer::Party(1));
        assert_eq!(member_name(Peer::Party(1)), "party-2");
    }

    #[test]
    fn bad_rosters_name_the_field() {
        type Edit = Box<dyn Fn(&mut Roster)>;
        let cases: Vec<(Edit, &str)> = vec![
            (Box::new(|r| r.protocol_version = 9), "protocol_version"),
            (Box::new(|r| r.session_id = "xyz".into()), "session_id"),
            (
                Box::new(|r| r.participant[2].name = "party-1".into()),
                "appears twice",
            ),
            (
                Box::new(|r| r.participant[1].name = "party-9".into()),
                "participant.name",
            ),
            (
                Box::new(|r| r.participant[1].address = "nowhere".into()),
                "participant.address",
            ),
            (
                Box::new(|r| r.participant[1].subject = "no spaces allowed".into()),
                "participant.subject",
            ),
            (
                Box::new(|r| r.participant[1].fingerprint = Some("md5:00".into())),
                "fingerprint",
            ),
            (Box::new(|r| r.participant.truncate(1)), "1 to"),
        ];
        for (edit, want) in cases {
            let mut r = roster(2);
            edit(&mut r);
            let e = Session::check(r).expect_err(want).to_string();
            assert!(e.contains(want), "{e} should mention {want}");
        }
    }

    #[test]
    fn fingerprints_are_sha256_hex() {
        let f = fingerprint(b"abc");
        assert_eq!(
            f,
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
