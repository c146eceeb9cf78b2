//! Protocol tests: equality with the plaintext reference, transcript audits of every
//! participant's view, uniformity of the published shares, and failure handling.

use super::transport::{Direction, Peer, Stage};
use super::*;

use crate::wire::*;
use kinsey_backend::AdditiveHe;
use kinsey_backend::registry::BackendOptions;
use kinsey_core::Result;
use kinsey_dp::NoiseRng;
use kinsey_dp::stattest::{ALPHA, chi_square_uniform};
use kinsey_learn::aggregate::{self, PartyInput};
use kinsey_learn::aggregate::{Aggregator, PlaintextAggregator, fixed_point_sum};
use std::sync::Arc;
use std::time::Duration;

fn backend(name: &str) -> Arc<dyn AdditiveHe> {
    crate::registry::registry()
        .create(
            name,
            &BackendOptions {
                key_bits: if name == "paillier" { Some(512) } else { None },
                allow_insecure_test_keys: true,
                allow_insecure: true,
                ..Default::default()
            },
        )
        .expect("backend")
}

fn parties(sizes: &[usize], d: usize, seed: u64) -> Vec<PartyInput> {
    let mut rng = NoiseRng::from_seed_quiet(seed);
    sizes
        .iter()
        .map(|&n| PartyInput {
            n,
            w: (0..d).map(|_| rng.std_normal()).collect(),
            noise: (0..d)
                .map(|_| aggregate::encode_noise(0.1 * rng.std_normal(), sizes.len()))
                .collect::<Result<_>>()
                .expect("noise"),
        })
        .collect()
}

fn run(
    name: &str,
    inputs: &[PartyInput],
    record: bool,
    fault: Option<Fault>,
) -> Result<SecureOutcome> {
    run_variant(name, inputs, record, fault, None)
}

/// `run`, or a deliberately leaking variant of the protocol.
fn run_variant(
    name: &str,
    inputs: &[PartyInput],
    record: bool,
    fault: Option<Fault>,
    leak: Option<Leak>,
) -> Result<SecureOutcome> {
    let agg = SecureAggregator::new(
        backend(name),
        ProtocolConfig {
            timeout: Duration::from_secs(60),
            record_views: record,
            fault,
            leak,
            chunk_seconds: crate::role::CHUNK_SECONDS,
        },
    );
    agg.run(inputs)
}

/// What a run told its progress callback.
#[derive(Default)]
struct Recorded {
    events: std::sync::Mutex<Vec<(String, u64)>>,
}

impl kinsey_core::Progress for Recorded {
    fn begin(&self, task: &str, total: Option<u64>) {
        let mut e = self.events.lock().expect("lock");
        e.push((task.to_string(), total.expect("a stage has a total")));
    }
    fn advance(&self, n: u64) {
        let mut e = self.events.lock().expect("lock");
        e.last_mut().expect("begun").1 -= n;
    }
}

/// Issue 37: the protocol draws every stage by name with a bar over its operations, whose
/// totals (public functions of K and d) are the counts a run makes, and heavy batches cut
/// into chunks give the same result. A change of the protocol that forgets the totals
/// fails here (a bar that ends short or overflows: `advance` underflows above).
#[test]
fn progress_names_every_stage_and_its_totals_are_the_operations_counted() {
    for (sizes, d) in [
        (vec![300, 200, 500], 20),
        (vec![9], 3),
        (vec![40, 30, 20, 10, 50], 17),
    ] {
        let inputs = parties(&sizes, d, 8);
        let agg = SecureAggregator::new(
            backend("mock"),
            ProtocolConfig {
                chunk_seconds: 0.0,
                ..ProtocolConfig::default()
            },
        );
        let seen = Recorded::default();
        let out = agg.run_with_progress(&inputs, &seen).expect("run");
        assert_eq!(out.sum, fixed_point_sum(&inputs).expect("sum"));
        let k = sizes.len();
        let events = seen.events.into_inner().expect("events");
        let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
        let want: Vec<String> = Stage::ALL
            .iter()
            .map(|s| format!("secure protocol: {}", s.name()))
            .collect();
        assert_eq!(names, want, "K = {k}");
        for (st, r) in Stage::ALL.iter().zip(&out.report.stages) {
            let counted: u64 = r.operations.values().sum();
            assert_eq!(
                counted,
                crate::meter::stage_elements(*st, k, d),
                "{st:?}, K = {k}"
            );
        }
    }
}

#[test]
fn mock_protocol_equals_the_plaintext_aggregate_bit_for_bit() {
    for (sizes, seed) in [
        (vec![500, 300, 800, 300, 1000], 1u64), // tie: the lower index wins
        (vec![7], 2),
        (vec![10, 9], 3),
        (vec![4000, 3000, 2000, 1000, 5, 6000, 7000], 4),
    ] {
        let inputs = parties(&sizes, 6, seed);
        let out = run("mock", &inputs, false, None).expect("run");
        assert_eq!(out.sum, fixed_point_sum(&inputs).expect("sum"), "{sizes:?}");
        let reference = PlaintextAggregator.aggregate(&inputs).expect("plain");
        assert_eq!(out.w, reference.w);
    }
}

/// d >= 8: Stage 2 takes the fixed-base table path of `mul_plain_one_batch`.
#[test]
fn paillier_protocol_with_d_at_least_8_takes_the_fixed_base_path() {
    let inputs = parties(&[1200, 800, 950], 9, 19);
    let out = run("paillier", &inputs, false, None).expect("run");
    assert_eq!(out.sum, fixed_point_sum(&inputs).expect("sum"));
    assert_eq!(
        out.report.stages[2].operations.get("multiply by plaintext"),
        Some(&27)
    );
}

#[test]
fn paillier_protocol_equals_the_plaintext_aggregate_and_reports_traffic() {
    let inputs = parties(&[1200, 800, 950], 5, 9);
    let out = run("paillier", &inputs, false, None).expect("run");
    assert_eq!(out.sum, fixed_point_sum(&inputs).expect("sum"));
    let r = &out.report;
    assert_eq!(r.backend.name, "paillier");
    assert!(r.comparison.contains("DGK"), "{}", r.comparison);
    assert_eq!(r.stages.len(), 4);
    assert_eq!(r.participants.len(), 4);
    assert!(
        r.participants
            .iter()
            .all(|p| p.bytes_sent > 0 && p.bytes_received > 0)
    );
    assert_eq!(
        r.stages[2].operations.get("multiply by plaintext"),
        Some(&15)
    );
    assert_eq!(r.stages[1].operations.get("compare"), Some(&4)); // 2 per side
    assert!(r.homomorphic_operations > 0 && r.total_bytes > 0);
}

/// Byte patterns of a value as it would appear in a message (16-byte and 8-byte LE).
fn patterns(v: i128) -> Vec<Vec<u8>> {
    vec![v.to_le_bytes().to_vec(), (v as i64).to_le_bytes().to_vec()]
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Check the curator's view: no size, Stage 1 key, share a_j, noise or classifier value
/// among what it learned or in any byte it received; the parties' secret key never reaches it.
fn audit_curator(out: &SecureOutcome, inputs: &[PartyInput]) -> std::result::Result<(), String> {
    let k = inputs.len() as i128;
    let mut secrets: Vec<(String, i128)> = Vec::new();
    for (j, p) in inputs.iter().enumerate() {
        secrets.push((format!("n_{j}"), p.n as i128));
        secrets.push((format!("key_{j}"), p.n as i128 * k + j as i128));
        for (i, &v) in p.noise.iter().enumerate() {
            secrets.push((format!("eta_{j}[{i}]"), v));
        }
        for (i, &x) in p.w.iter().enumerate() {
            let v = aggregate::encode_fixed(x).map_err(|e| e.to_string())?;
            secrets.push((format!("w_{j}[{i}]"), v));
        }
        for (what, v) in &out.views[j].learned {
            if what == "a (own share)" {
                secrets.push((format!("a_{j}"), *v));
            }
        }
    }
    let curator = out
        .views
        .iter()
        .find(|v| v.participant == Peer::Curator)
        .ok_or("no curator view")?;
    let received: Vec<&[u8]> = curator
        .messages
        .iter()
        .filter(|m| m.direction == Direction::Received)
        .map(|m| m.bytes.as_slice())
        .collect();
    if received.is_empty() || secrets.len() < 3 * inputs.len() {
        return Err("nothing recorded".into());
    }
    for (name, v) in &secrets {
        for (what, learned) in &curator.learned {
            if learned == v {
                return Err(format!("curator learned {name} as '{what}'"));
            }
        }
        for pat in patterns(*v) {
            if received.iter().any(|m| contains(m, &pat)) {
                return Err(format!("{name} appears in a message the curator received"));
            }
        }
    }
    let xi_sk = out.views[0]
        .messages
        .iter()
        .find(|m| m.direction == Direction::Sent && m.kind == XI_SK)
        .ok_or("no key message")?;
    let key_bytes = &xi_sk.bytes[2..xi_sk.bytes.len() - 8];
    if received.iter().any(|m| contains(m, key_bytes)) {
        return Err("the parties' secret key reached the curator".into());
    }
    Ok(())
}

#[test]
fn curator_view_holds_no_size_share_noise_or_classifier() {
    let inputs = parties(&[70_001, 65_537, 90_210], 4, 21);
    let out = run("paillier", &inputs, true, None).expect("run");
    audit_curator(&out, &inputs).expect("paillier transcript is clean");
    let curator = &out.views[3];
    let labels: std::collections::BTreeSet<&str> =
        curator.learned.iter().map(|(l, _)| l.as_str()).collect();
    assert!(labels.contains("smallest (pi2 position)"));
    assert!(labels.contains("eta + s"));
    // The audit has teeth: the mock backend sends plaintexts in the clear, and it says so.
    let out = run("mock", &inputs, true, None).expect("run");
    let leak = audit_curator(&out, &inputs).expect_err("mock leaks");
    assert!(leak.contains("appears in a message"), "{leak}");
}

/// The audit also catches real encryption with zero-width masks: the curator then decrypts
/// the selected noise itself.
#[test]
fn curator_audit_catches_zero_width_masks() {
    let inputs = parties(&[70_001, 65_537, 90_210], 9, 23);
    let out = run_variant("paillier", &inputs, true, None, Some(Leak::ZeroMasks)).expect("run");
    let leak = audit_curator(&out, &inputs).expect_err("zero masks leak");
    assert!(leak.contains("curator learned"), "{leak}");
}

/// Which position won before the last comparison, over `runs` runs.
fn pairing_counts(k: usize, smallest: usize, runs: usize, leak: Option<Leak>) -> Vec<u64> {
    let mut sizes = vec![1000usize; k];
    for (j, s) in sizes.iter_mut().enumerate() {
        *s += 10 * j;
    }
    sizes[smallest] = 10;
    let inputs = parties(&sizes, 1, 5);
    let mut counts = vec![0u64; k - 1];
    for _ in 0..runs {
        let out = run_variant("mock", &inputs, true, None, leak).expect("run");
        let p1 = &out.views[0];
        let pairs: Vec<Vec<u8>> = p1
            .messages
            .iter()
            .filter(|m| m.direction == Direction::Received && m.kind == PAIR)
            .map(|m| m.bytes.clone())
            .collect();
        assert_eq!(pairs.len(), k, "K - 1 comparisons and a stop");
        counts[pairs[k - 2][2] as usize] += 1; // first i128 of the payload, little-endian
        // No party ever decrypts anything under the curator's key: the only plaintexts the
        // party side learns are its blinded Stage 1 shares.
        for v in &out.views[..k] {
            assert!(v.learned.iter().all(|(l, _)| l.starts_with("a~")
                || l.starts_with("published")
                || l == "a (own share)"));
        }
    }
    counts
}

/// The pairing test has power: with identity permutations the winning position is fixed,
/// and the same chi-square test rejects it.
#[test]
fn pairing_uniformity_test_rejects_fixed_permutations() {
    let counts = pairing_counts(5, 3, 100, Some(Leak::IdentityPermutations));
    let (_, p) = chi_square_uniform(&counts);
    assert!(
        p < ALPHA,
        "identity permutations must be caught: {counts:?}, p = {p}"
    );
}

#[test]
fn parties_cannot_tell_who_is_smallest() {
    // What the party side observes about the outcome is P1's list of comparison requests,
    // which are positions in the curator's secret order pi2. Whoever is smallest, the
    // position that won before the last comparison must be uniform over K - 1 positions.
    for smallest in [0usize, 3] {
        let counts = pairing_counts(5, smallest, 400, None);
        let (_, p) = chi_square_uniform(&counts);
        assert!(
            p > ALPHA,
            "smallest = {smallest}: counts {counts:?}, p = {p}"
        );
    }
}

/// Top-nibble counts of every participant's first published share over `runs` runs.
fn share_nibbles(runs: usize, leak: Option<Leak>) -> Vec<u64> {
    let inputs = parties(&[300, 200], 2, 8);
    let mut bins = vec![0u64; 16];
    for _ in 0..runs {
        let out = run_variant("mock", &inputs, true, None, leak).expect("run");
        for v in &out.views {
            for (l, x) in &v.learned {
                if l == "published share 0" {
                    bins[((*x as u128) >> 124) as usize] += 1;
                }
            }
        }
    }
    bins
}

/// The share test has power: with zero-width re-sharing masks the same test rejects.
#[test]
fn share_uniformity_test_rejects_zero_masks() {
    let bins = share_nibbles(100, Some(Leak::ZeroMasks));
    let (_, p) = chi_square_uniform(&bins);
    assert!(p < ALPHA, "zero masks must be caught: {bins:?}, p = {p}");
    let bins = share_nibbles(100, None);
    let (_, p) = chi_square_uniform(&bins);
    assert!(p > ALPHA, "{bins:?}, p = {p}");
}

#[test]
fn published_shares_are_uniform_apart_from_their_sum() {
    let inputs = parties(&[300, 200], 2, 8);
    let mut bins = vec![0u64; 16];
    let mut first = Vec::new();
    for _ in 0..300u64 {
        let out = run("mock", &inputs, true, None).expect("run");
        let mut total = 0u128;
        for v in &out.views {
            let shares: Vec<i128> = v
                .learned
                .iter()
                .filter(|(l, _)| l == "published share 0")
                .map(|(_, x)| *x)
                .collect();
            assert_eq!(shares.len(), 1);
            bins[((shares[0] as u128) >> 124) as usize] += 1;
            total = total.wrapping_add(shares[0] as u128);
            if v.participant == Peer::Curator {
                first.push(shares[0]);
            }
        }
        assert_eq!(total as i128, out.sum[0]);
    }
    let (_, p) = chi_square_uniform(&bins);
    assert!(p > ALPHA, "top nibbles {bins:?}, p = {p}");
    first.sort_unstable();
    first.dedup();
    assert_eq!(first.len(), 300, "fresh shares every run");
}

#[test]
fn a_failing_participant_is_named_with_its_stage() {
    let inputs = parties(&[40, 50, 60], 3, 3);
    for participant in [Peer::Party(0), Peer::Party(2), Peer::Curator] {
        for stage in [Stage::Smallest, Stage::Noise, Stage::Shares] {
            for kind in [FaultKind::Abort, FaultKind::Garbage] {
                let fault = Fault {
                    participant,
                    stage,
                    kind,
                };
                let e = run("mock", &inputs, false, Some(fault))
                    .err()
                    .unwrap_or_else(|| panic!("{fault:?} was not noticed"));
                let msg = e.to_string();
                assert!(msg.contains(stage.name()), "{fault:?}: {msg}");
                assert!(msg.contains(&participant.to_string()), "{fault:?}: {msg}");
            }
        }
    }
}

#[test]
fn garbage_ciphertexts_are_caught_by_paillier_validation() {
    let inputs = parties(&[40, 50], 2, 3);
    let fault = Fault {
        participant: Peer::Party(1),
        stage: Stage::Noise,
        kind: FaultKind::Garbage,
    };
    let e = run("paillier", &inputs, false, Some(fault)).expect_err("noticed");
    let msg = e.to_string();
    assert!(msg.contains("stage 2") && msg.contains("party 2"), "{msg}");
}

#[test]
fn bad_inputs_are_refused_before_anything_is_sent() {
    let mut inputs = parties(&[40, 50], 2, 3);
    inputs[1].n = 1 << 33;
    let e = run("mock", &inputs, false, None).expect_err("too big");
    assert!(e.to_string().contains("party 2 has 8589934592 rows"), "{e}");
    let mut inputs = parties(&[40, 50], 2, 3);
    inputs[0].noise[1] = 1 << 100;
    assert!(run("mock", &inputs, false, None).is_err());
    assert!(run("mock", &[], false, None).is_err());
}

/// The whole protocol under TFHE gives the plaintext reference's sum bit for bit, counts
/// its bootstraps, and the curator's view passes the same audit as Paillier's.
#[test]
fn tfhe_protocol_equals_the_plaintext_aggregate_and_passes_the_curator_audit() {
    let inputs = parties(&[70_001, 65_537, 90_210], 2, 31);
    let out = run("tfhe", &inputs, true, None).expect("run");
    assert_eq!(out.sum, fixed_point_sum(&inputs).expect("sum"));
    let reference = PlaintextAggregator.aggregate(&inputs).expect("plain");
    assert_eq!(out.w, reference.w);
    let r = &out.report;
    assert!(
        r.backend.scheme.contains("post-quantum (LWE)"),
        "{}",
        r.backend.scheme
    );
    assert!(r.comparison.contains("TFHE"), "{}", r.comparison);
    // Stage 2 bootstraps each of the 41 active blocks of each party's selection once.
    assert!(
        r.bootstraps.is_some_and(|b| b >= 3 * 2 * 41),
        "{:?}",
        r.bootstraps
    );
    audit_curator(&out, &inputs).expect("tfhe transcript is clean");
}

#[test]
fn garbage_ciphertexts_are_caught_by_tfhe_validation() {
    let inputs = parties(&[40, 50], 1, 3);
    let fault = Fault {
        participant: Peer::Party(1),
        stage: Stage::Noise,
        kind: FaultKind::Garbage,
    };
    let e = run("tfhe", &inputs, false, Some(fault)).expect_err("noticed");
    let msg = e.to_string();
    assert!(msg.contains("stage 2") && msg.contains("party 2"), "{msg}");
}

/// What the network shows of one participant: every message it sent or received, in order,
/// as (direction, peer, stage, kind, length). TLS hides the contents, not this.
type Pattern = Vec<(Direction, Peer, Option<Stage>, u8, usize)>;

fn patterns_of(out: &SecureOutcome) -> Vec<Pattern> {
    out.views
        .iter()
        .map(|v| {
            v.messages
                .iter()
                .map(|m| (m.direction, m.peer, m.stage, m.kind, m.len))
                .collect()
        })
        .collect()
}

/// Different secrets in each run: sizes (so a different smallest party), models and noise
/// from the seed, and fresh permutations and masks from the OS.
fn secret_inputs(k: usize, d: usize, seed: u64) -> Vec<PartyInput> {
    let mut r = NoiseRng::from_seed_quiet(seed);
    let sizes: Vec<usize> = (0..k).map(|_| 10 + r.below(5000) as usize).collect();
    parties(&sizes, d, seed)
}

/// Item 1 of the second privacy audit: in Stage 1 a party sent its share frame to
/// `P_pi1(j)` only, and the curator sent the blinded positions in pi2 order, so who sent
/// how many bytes to whom, and in which order, revealed pi1 and pi2 through TLS. Every
/// participant's traffic pattern must be the same whatever the secrets.
#[test]
fn what_the_network_shows_is_a_public_function() {
    for (name, k, d, runs) in [("mock", 4, 3, 12), ("paillier", 3, 9, 4)] {
        let first = patterns_of(&run(name, &secret_inputs(k, d, 1), true, None).expect("run"));
        assert!(first.iter().all(|p| !p.is_empty()));
        for seed in 2..=runs {
            let out = run(name, &secret_inputs(k, d, seed), true, None).expect("run");
            for (who, (a, b)) in first.iter().zip(&patterns_of(&out)).enumerate() {
                assert!(
                    a == b,
                    "{name}: participant {who}'s traffic depends on the secrets"
                );
            }
        }
    }
}

/// The same test catches the variant the audit found (shares routed along pi1, blinded
/// positions sent in pi2 order): two runs soon differ.
#[test]
fn the_traffic_audit_catches_routed_shares() {
    let leak = Some(Leak::RoutedShares);
    let first =
        patterns_of(&run_variant("mock", &secret_inputs(4, 3, 1), true, None, leak).expect("run"));
    let caught = (2..40).any(|seed| {
        let out = run_variant("mock", &secret_inputs(4, 3, seed), true, None, leak).expect("run");
        patterns_of(&out) != first
    });
    assert!(caught, "routing along pi1 must show in the traffic");
}
