//! The mesh between threads of one test over loopback TLS: the same published sum as the
//! in-process run, refusal of certificates the roster does not name, and of frames that
//! break the rules.

use super::local::LocalSession;
use super::tls::Identity;
use super::*;
use crate::transport::{Peer, Stage};
use crate::{ProtocolConfig, SecureAggregator};
use kinsey_backend::AdditiveHe;
use kinsey_backend::registry::BackendOptions;
use kinsey_dp::NoiseRng;
use kinsey_learn::aggregate::PartyInput;
use std::sync::Arc;
use std::time::Duration;

fn backend() -> Arc<dyn AdditiveHe> {
    crate::registry::registry()
        .create(
            "paillier",
            &BackendOptions {
                key_bits: Some(512),
                allow_insecure_test_keys: true,
                allow_insecure: false,
                ..Default::default()
            },
        )
        .expect("backend")
}

fn inputs(k: usize, d: usize) -> Vec<PartyInput> {
    crate::inputs::synthetic_inputs(k, d, &mut NoiseRng::from_seed_quiet(11))
}

fn run_all(
    t: &LocalSession,
    inputs: &[PartyInput],
    edit: impl Fn(usize, &mut MeshConfig) + Sync,
) -> Vec<kinsey_core::Result<ParticipantOutcome>> {
    t.run(&backend(), inputs, &move |i, c| {
        c.timeout = Duration::from_secs(20);
        edit(i, c)
    })
}

#[test]
fn the_mesh_publishes_the_in_process_sum() {
    // d = 700: messages of about 90 KiB, over rustls's 16 KiB receive and 64 KiB send buffers.
    for (k, d, pin) in [(2, 3, false), (4, 3, true), (3, 700, true)] {
        let t = LocalSession::new(k, pin).expect("session");
        let ins = inputs(k, d);
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

/// The stage hook sees every participant enter stages 1 to 3, in the protocol's order, on
/// the protocol's thread; the library itself prints nothing and waits for nothing there.
#[test]
fn the_stage_hook_sees_every_stage_in_order() {
    use std::sync::Mutex;
    let (k, d) = (3, 2);
    let t = LocalSession::new(k, false).expect("session");
    let seen: Arc<Mutex<Vec<(Peer, Stage)>>> = Arc::default();
    let outs = run_all(&t, &inputs(k, d), |_, c| {
        let seen = seen.clone();
        c.on_stage = Some(StageHook(Arc::new(move |me, stage| {
            seen.lock().expect("lock").push((me, stage));
        })));
    });
    assert!(outs.iter().all(Result::is_ok), "the session completes");
    let seen = seen.lock().expect("lock").clone();
    let order = [Stage::Smallest, Stage::Noise, Stage::Shares];
    for who in seen
        .iter()
        .map(|&(p, _)| p)
        .collect::<std::collections::BTreeSet<_>>()
    {
        let mine: Vec<Stage> = seen
            .iter()
            .filter(|&&(p, _)| p == who)
            .map(|&(_, s)| s)
            .collect();
        assert_eq!(mine, order, "{who}");
    }
    assert_eq!(
        seen.len(),
        (k + 1) * order.len(),
        "every participant, every stage"
    );
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
    let t = LocalSession::new(2, true).expect("session");
    let ins = inputs(2, 3);
    // Party 2 presents: a certificate of the session CA for a name the roster does not
    // list; one of another CA with party 2's own name; one of the session CA with party 2's
    // name that is not the certificate the roster pins.
    let other = pki::TestCa::new("another CA").expect("ca");
    let unnamed = t.ca().issue("intruder.kinsey.test").expect("issue");
    let foreign = other.issue("party-2.kinsey.test").expect("issue");
    let unpinned = t.ca().issue("party-2.kinsey.test").expect("issue");
    for bad in [unnamed, foreign, unpinned] {
        let errs = errors(run_all(&t, &ins, |i, c| {
            c.connect_window = Duration::from_secs(3);
            if i == 2 {
                c.identity = Identity::from_pem(&t.ca().cert_pem(), &bad.cert_pem, &bad.key_pem)
                    .expect("identity");
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
    let t = LocalSession::new(2, false).expect("session");
    let errs = errors(run_all(&t, &inputs(2, 3), |i, c| {
        c.connect_window = Duration::from_secs(3);
        c.params = if i == 1 {
            "lambda = 0.001\nepsilon = 2\n"
        } else {
            "lambda = 0.001\nepsilon = 1\n"
        }
        .into();
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
        let t = LocalSession::new(2, false).expect("session");
        let errs = errors(run_all(&t, &inputs(2, 3), |i, c| {
            if i == 1 {
                c.hooks.tamper = Some((tamper, Stage::Noise));
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

/// The parties' data tags (before the protocol, setup) are checked like every frame: a
/// corrupted one ends the session everywhere, naming its sender and the stage.
#[test]
fn a_corrupted_data_tag_ends_the_session_naming_its_sender() {
    let t = LocalSession::new(3, false).expect("session");
    let errs = errors(run_all(&t, &inputs(3, 3), |i, c| {
        if i == 2 {
            c.hooks.tamper = Some((Tamper::Garbage, Stage::Setup));
        }
    }));
    assert!(errs.iter().any(|e| e.contains("corrupted")), "{errs:?}");
    for e in &errs {
        assert!(e.contains("party 2") && e.contains("setup"), "{e}");
    }
}

/// Each participant's frames as the network saw them (TLS record bytes per peer and stage).
fn wire_patterns(outs: Vec<kinsey_core::Result<ParticipantOutcome>>) -> Vec<Vec<LinkTraffic>> {
    outs.into_iter()
        .map(|o| o.expect("participant").traffic)
        .collect()
}

/// Different sizes (so a different smallest party), models and noise in each run.
fn secret_inputs(k: usize, seed: u64) -> Vec<PartyInput> {
    let mut r = NoiseRng::from_seed_quiet(seed);
    let mut v = crate::inputs::synthetic_inputs(k, 3, &mut r);
    for p in &mut v {
        p.n = 10 + r.below(5000) as usize;
    }
    v
}

/// Item 1 of the second privacy audit, over TLS: the bytes each participant writes to each
/// peer in each stage (frame by frame, TLS records included) are the same whatever the
/// secret permutations, comparison outcomes and data; the variant that routed Stage 1's
/// shares along pi1 is caught by the same comparison.
#[test]
fn what_the_network_shows_is_a_public_function() {
    let session = || LocalSession::new(3, true).expect("session");
    let first = wire_patterns(run_all(&session(), &secret_inputs(3, 1), |_, _| {}));
    assert!(
        first
            .iter()
            .all(|p| p.iter().any(|l| l.stage == Stage::Smallest))
    );
    for seed in 2..=4 {
        let again = wire_patterns(run_all(&session(), &secret_inputs(3, seed), |_, _| {}));
        assert_eq!(
            first, again,
            "run {seed}: the traffic depends on the secrets"
        );
    }
    let leaky = |seed| {
        wire_patterns(session().run_variant(
            &backend(),
            &secret_inputs(3, seed),
            Some(crate::Leak::RoutedShares),
            &|_, c: &mut MeshConfig| c.timeout = Duration::from_secs(20),
        ))
    };
    let base = leaky(1);
    assert!(
        (2..16).any(|seed| leaky(seed) != base),
        "routing along pi1 must show on the wire"
    );
}
