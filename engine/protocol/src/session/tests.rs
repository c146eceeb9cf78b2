//! The mesh between threads of one test over loopback TLS: the same published sum as the
//! in-process run, refusal of certificates the roster does not name, and of frames that
//! break the rules.

use super::pki::TestCa;
use super::roster::{Member, PROTOCOL_VERSION, Roster, Session, member_name};
use super::tls::Identity;
use super::*;
use crate::transport::{Peer, Stage};
use crate::{ProtocolConfig, SecureAggregator};
use kinsey_backend::AdditiveHe;
use kinsey_backend::registry::BackendOptions;
use kinsey_dp::NoiseRng;
use kinsey_learn::aggregate::PartyInput;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::sync::Arc;
use std::time::Duration;

pub(crate) fn free_ports(n: usize) -> Vec<u16> {
    let ls: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("bind"))
        .collect();
    ls.iter()
        .map(|l| l.local_addr().expect("addr").port())
        .collect()
}

struct Trial {
    ca: TestCa,
    roster: Roster,
    ids: Vec<(String, String)>,
}

fn trial(k: usize, pin: bool) -> Trial {
    let ca = TestCa::new("kinsey test CA").expect("ca");
    let ports = free_ports(k + 1);
    let mut participant = Vec::new();
    let mut ids = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let p = if i == 0 {
            Peer::Curator
        } else {
            Peer::Party(i - 1)
        };
        let subject = format!("{}.kinsey.test", member_name(p));
        let issued = ca.issue(&subject).expect("issue");
        participant.push(Member {
            name: member_name(p),
            address: format!("127.0.0.1:{port}"),
            subject,
            fingerprint: pin.then(|| issued.fingerprint.clone()),
        });
        ids.push((issued.cert_pem, issued.key_pem));
    }
    Trial {
        roster: Roster {
            session_id: super::roster::new_session_id(),
            protocol_version: PROTOCOL_VERSION,
            participant,
        },
        ca,
        ids,
    }
}

fn identity(ca_pem: &str, cert_pem: &str, key_pem: &str) -> Identity {
    let ca = vec![CertificateDer::from_pem_slice(ca_pem.as_bytes()).expect("ca pem")];
    let chain = vec![CertificateDer::from_pem_slice(cert_pem.as_bytes()).expect("cert pem")];
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).expect("key pem");
    Identity::from_der(ca, chain, key).expect("identity")
}

fn config(t: &Trial, i: usize, params: &str, window: u64) -> MeshConfig {
    let k = t.roster.participant.len() - 1;
    MeshConfig {
        me: if i == 0 {
            Peer::Curator
        } else {
            Peer::Party(i - 1)
        },
        session: Session::check(t.roster.clone()).expect("roster"),
        identity: identity(&t.ca.cert_pem(), &t.ids[i].0, &t.ids[i].1),
        params: params.into(),
        connect_window: Duration::from_secs(window),
        timeout: Duration::from_secs(20),
        limits: Limits::new(k, 3, 512),
        tamper: None,
        hold_at: None,
    }
}

fn backend() -> Arc<dyn AdditiveHe> {
    crate::registry::registry()
        .create(
            "paillier",
            &BackendOptions {
                key_bits: Some(512),
                allow_insecure_test_keys: true,
                allow_insecure: false,
            },
        )
        .expect("backend")
}

fn inputs(k: usize, d: usize) -> Vec<PartyInput> {
    let mut rng = NoiseRng::from_seed_quiet(11);
    (0..k)
        .map(|j| PartyInput {
            n: 100 + 37 * ((j * 7) % k),
            w: (0..d).map(|_| rng.std_normal()).collect(),
            noise: (0..d).map(|_| 0.1 * rng.std_normal()).collect(),
        })
        .collect()
}

/// Run every participant of `t` in its own thread; `edit` changes one participant's config.
fn run_all(
    t: &Trial,
    inputs: &[PartyInput],
    edit: impl Fn(usize, &mut MeshConfig) + Sync,
) -> Vec<kinsey_core::Result<ParticipantOutcome>> {
    let k = inputs.len();
    let he = backend();
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..=k)
            .map(|i| {
                let he = he.clone();
                let edit = &edit;
                s.spawn(move || {
                    let mut cfg = config(t, i, "lambda = 0.001\nepsilon = 1\n", 20);
                    edit(i, &mut cfg);
                    let seat = Seat {
                        backend: he,
                        input: (i > 0).then(|| inputs[i - 1].clone()),
                        dim: 3,
                        leak: None,
                    };
                    run_participant(&cfg, &seat)
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("participant thread"))
            .collect()
    })
}

#[test]
fn the_mesh_publishes_the_in_process_sum() {
    for (k, pin) in [(2, false), (4, true)] {
        let t = trial(k, pin);
        let ins = inputs(k, 3);
        let outs = run_all(&t, &ins, |_, _| {});
        let reference = SecureAggregator::new(backend(), ProtocolConfig::default())
            .run(&ins)
            .expect("in process");
        for o in outs {
            let o = o.expect("participant");
            assert_eq!(o.sum, reference.sum);
            assert_eq!(o.w, reference.w);
            assert!(o.report.total_bytes > 0);
        }
    }
}

fn errors(outs: Vec<kinsey_core::Result<ParticipantOutcome>>) -> Vec<String> {
    outs.into_iter()
        .map(|o| {
            o.map(|_| ())
                .expect_err("the session must fail")
                .to_string()
        })
        .collect()
}

#[test]
fn a_certificate_the_roster_does_not_name_is_refused() {
    let t = trial(2, true);
    let ins = inputs(2, 3);
    // Party 2 presents: a certificate of the session CA for a name the roster does not
    // list; one of another CA with party 2's own name; one of the session CA with party 2's
    // name that is not the certificate the roster pins.
    let other = TestCa::new("another CA").expect("ca");
    let unnamed = t.ca.issue("intruder.kinsey.test").expect("issue");
    let foreign = other.issue("party-2.kinsey.test").expect("issue");
    let unpinned = t.ca.issue("party-2.kinsey.test").expect("issue");
    for bad in [unnamed, foreign, unpinned].map(|b| (b.cert_pem, b.key_pem)) {
        let errs = errors(run_all(&t, &ins, |i, c| {
            c.connect_window = Duration::from_secs(3);
            if i == 2 {
                c.identity = identity(&t.ca.cert_pem(), &bad.0, &bad.1);
            }
        }));
        assert!(
            errs[2].contains("TLS") || errs[2].contains("refused"),
            "{}",
            errs[2]
        );
        for e in &errs[..2] {
            assert!(e.contains("party 2"), "{e}");
            assert!(e.contains("never"), "{e}");
        }
    }
}

#[test]
fn a_parameter_mismatch_names_the_parameter_and_the_peer() {
    let t = trial(2, false);
    let errs = errors(run_all(&t, &inputs(2, 3), |i, c| {
        c.connect_window = Duration::from_secs(3);
        if i == 1 {
            c.params = "lambda = 0.001\nepsilon = 2\n".into();
        }
    }));
    assert!(
        errs.iter()
            .any(|e| e.contains("parameter 'epsilon' is 1 here and 2 there")),
        "{errs:?}"
    );
}

#[test]
fn bad_frames_end_the_session_everywhere_naming_the_sender() {
    for (tamper, want) in [
        (Tamper::Garbage, "corrupted"),
        (Tamper::Truncated, "middle of a frame"),
        (Tamper::Oversized, "oversized"),
        (Tamper::Replay, "replayed"),
        (Tamper::WrongSession, "another session"),
    ] {
        let t = trial(2, false);
        let errs = errors(run_all(&t, &inputs(2, 3), |i, c| {
            if i == 1 {
                c.tamper = Some((tamper, Stage::Noise));
            }
        }));
        assert!(
            errs.iter().any(|e| e.contains(want)),
            "{tamper:?}: {errs:?}"
        );
        for e in &errs[..] {
            assert!(e.contains("party 1"), "{tamper:?}: {e}");
        }
    }
}
