//! Crypto throughput measurements behind `kinsey bench paillier`, `kinsey bench protocol`
//! and `kinsey backends` (the figures in BENCHMARKS.md come from these).

use kinsey_core::{Error, Result};
use kinsey_dp::NoiseRng;
use kinsey_learn::aggregate::fixed_point_sum;
pub use kinsey_protocol::ProtocolReport;
use kinsey_protocol::SecureAggregator;
use kinsey_protocol::inputs::synthetic_inputs;
use serde::Serialize;

/// Paillier operations per second at one key size and thread count.
#[derive(Debug, Clone, Serialize)]
pub struct PaillierRates {
    /// Key size.
    pub bits: u32,
    /// Threads (0: all cores).
    pub threads: usize,
    /// Values per operation.
    pub count: usize,
    /// Seconds generating the key pair.
    pub keygen_seconds: f64,
    /// One-off per key: the fixed-base tables for encryption.
    pub table_seconds: f64,
    /// One-off per process: every other operation run once on one value before any is
    /// timed (on a GPU, its pipelines built and compiled: the limbs program's unrolled
    /// shaders take the driver a while), so that no rate includes a compile.
    pub warmup_seconds: f64,
    /// Encryptions per second.
    pub encrypt_per_s: f64,
    /// Encryptions per second by the key holder (CRT).
    pub encrypt_key_holder_per_s: f64,
    /// Decryptions per second.
    pub decrypt_per_s: f64,
    /// Homomorphic additions per second.
    pub add_per_s: f64,
    /// Multiplications by a 32-bit plaintext per second.
    pub mul_plain_per_s: f64,
    /// Re-randomisations per second.
    pub rerandomize_per_s: f64,
    /// Where the batches ran (the backend's description).
    pub device: String,
    /// Off the CPU: values per operation checked against the CPU path with the same
    /// randomness (identical ciphertexts and plaintexts); 0 on the CPU.
    pub checked_against_cpu: usize,
}

/// Measure Paillier at `bits` on `threads` threads (0 = all cores), its batches on
/// `device` (`cpu`, `gpu` or `auto`; off the CPU every batch goes to the device, and a
/// sample of each operation is checked against the CPU path).
#[cfg(feature = "paillier")]
pub fn paillier_throughput(
    bits: u32,
    count: usize,
    threads: usize,
    device: &str,
    rng: &mut dyn rand_core::CryptoRng,
) -> Result<PaillierRates> {
    use kinsey_backend::AdditiveHe;
    use rand_core::RngCore;
    use std::time::Instant;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| Error::param("threads", e.to_string()))?;
    let threads = pool.current_num_threads();
    let pref = kinsey_backend_paillier::parse_device(device)
        .map_err(|e| Error::param("device", e.to_string()))?;
    let cpu = kinsey_backend_paillier::Paillier::new(bits, false)?;
    let b = cpu.clone().with_device(pref, 0)?;
    let count = count.max(1);
    let mut rng = kinsey_backend::compare::split_rng(rng);
    let rng = &mut rng;
    pool.install(|| -> Result<PaillierRates> {
        let t = Instant::now();
        let kp = b.keygen(rng)?;
        let keygen_seconds = t.elapsed().as_secs_f64();
        let t = Instant::now();
        b.encrypt(&kp.public, 0, rng)?;
        b.encrypt_with_secret_batch(&kp.secret, &[0], rng)?;
        b.decrypt_batch(&kp.secret, &[])?;
        let table_seconds = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let one = b.encrypt_batch(&kp.public, &[1], rng)?;
        b.decrypt_batch(&kp.secret, &one)?;
        b.add_batch(&kp.public, &one, &one)?;
        b.mul_plain_batch(&kp.public, &one, &[3])?;
        b.rerandomize_batch(&kp.public, &one, rng)?;
        let warmup_seconds = t.elapsed().as_secs_f64();
        let m: Vec<i128> = (0..count as i128).map(|i| (i - 100) * 1_000_003).collect();
        let k: Vec<i128> = (0..count).map(|_| i128::from(rng.next_u32())).collect();
        let rate = |t: Instant| count as f64 / t.elapsed().as_secs_f64();
        let t = Instant::now();
        let c = b.encrypt_batch(&kp.public, &m, rng)?;
        let encrypt_per_s = rate(t);
        let t = Instant::now();
        let c2 = b.encrypt_with_secret_batch(&kp.secret, &m, rng)?;
        let encrypt_key_holder_per_s = rate(t);
        let t = Instant::now();
        let back = b.decrypt_batch(&kp.secret, &c)?;
        let decrypt_per_s = rate(t);
        if back != m {
            return Err(Error::Numerical("benchmark decryption mismatch".into()));
        }
        // Additions are cheap: repeat to get a measurable time.
        let reps = 20;
        let t = Instant::now();
        for _ in 0..reps {
            b.add_batch(&kp.public, &c, &c2)?;
        }
        let add_per_s = reps as f64 * rate(t);
        let t = Instant::now();
        b.mul_plain_batch(&kp.public, &c, &k)?;
        let mul_plain_per_s = rate(t);
        let t = Instant::now();
        b.rerandomize_batch(&kp.public, &c, rng)?;
        let rerandomize_per_s = rate(t);
        let checked_against_cpu = if pref == kinsey_backend_paillier::DevicePref::Cpu {
            0
        } else {
            same_as_cpu(&b, &cpu, &kp, &c, &m, &k, count.min(16), rng)?
        };
        Ok(PaillierRates {
            device: b.device(),
            checked_against_cpu,
            bits,
            threads,
            count,
            keygen_seconds,
            table_seconds,
            warmup_seconds,
            encrypt_per_s,
            encrypt_key_holder_per_s,
            decrypt_per_s,
            add_per_s,
            mul_plain_per_s,
            rerandomize_per_s,
        })
    })
}

/// Every operation on `s` values gives the same bytes on `b` as on the CPU backend, with
/// the same random stream.
#[cfg(feature = "paillier")]
#[allow(clippy::too_many_arguments)]
fn same_as_cpu(
    b: &kinsey_backend_paillier::Paillier,
    cpu: &kinsey_backend_paillier::Paillier,
    kp: &kinsey_backend::KeyPair,
    c: &[kinsey_backend::Ciphertext],
    m: &[i128],
    k: &[i128],
    s: usize,
    rng: &mut dyn rand_core::CryptoRng,
) -> Result<usize> {
    use kinsey_backend::AdditiveHe;
    use rand_core::SeedableRng;
    let mut seed = [0u8; 32];
    rng.fill_bytes(&mut seed);
    let pair = || {
        (
            rand_chacha::ChaCha20Rng::from_seed(seed),
            rand_chacha::ChaCha20Rng::from_seed(seed),
        )
    };
    let differ = |op: &str| Error::Numerical(format!("{op}: the device and the CPU differ"));
    let (c, m, k) = (&c[..s], &m[..s], &k[..s]);
    let (mut r1, mut r2) = pair();
    if b.encrypt_batch(&kp.public, m, &mut r1)? != cpu.encrypt_batch(&kp.public, m, &mut r2)? {
        return Err(differ("encryption"));
    }
    let (mut r1, mut r2) = pair();
    if b.encrypt_with_secret_batch(&kp.secret, m, &mut r1)?
        != cpu.encrypt_with_secret_batch(&kp.secret, m, &mut r2)?
    {
        return Err(differ("key-holder encryption"));
    }
    let (mut r1, mut r2) = pair();
    if b.rerandomize_batch(&kp.public, c, &mut r1)?
        != cpu.rerandomize_batch(&kp.public, c, &mut r2)?
    {
        return Err(differ("re-randomisation"));
    }
    if b.decrypt_batch(&kp.secret, c)? != cpu.decrypt_batch(&kp.secret, c)? {
        return Err(differ("decryption"));
    }
    if b.add_batch(&kp.public, c, c)? != cpu.add_batch(&kp.public, c, c)? {
        return Err(differ("addition"));
    }
    if b.add_plain_batch(&kp.public, c, k)? != cpu.add_plain_batch(&kp.public, c, k)? {
        return Err(differ("plaintext addition"));
    }
    if b.mul_plain_batch(&kp.public, c, k)? != cpu.mul_plain_batch(&kp.public, c, k)? {
        return Err(differ("plaintext multiplication"));
    }
    let big: Vec<i128> = (0..16).map(|i| i * 1_000_003 - 7).collect();
    if b.mul_plain_one_batch(&kp.public, &c[0], &big)?
        != cpu.mul_plain_one_batch(&kp.public, &c[0], &big)?
    {
        return Err(differ("plaintext multiplication of one ciphertext"));
    }
    Ok(s)
}

/// Without the Paillier backend there is nothing to measure.
#[cfg(not(feature = "paillier"))]
pub fn paillier_throughput(
    _bits: u32,
    _count: usize,
    _threads: usize,
    _device: &str,
    _rng: &mut dyn rand_core::CryptoRng,
) -> Result<PaillierRates> {
    Err(Error::param(
        "backend",
        "this build has no Paillier backend (cargo feature 'paillier')",
    ))
}

/// One protocol run on synthetic inputs; checks the result against the plaintext sum.
pub fn protocol_run(agg: &SecureAggregator, parties: usize, dim: usize) -> Result<ProtocolReport> {
    let mut rng = NoiseRng::from_os();
    let inputs = synthetic_inputs(parties, dim, &mut rng);
    let out = agg.run(&inputs)?;
    if out.sum != fixed_point_sum(&inputs)? {
        return Err(Error::Numerical(
            "protocol result differs from the plaintext sum".into(),
        ));
    }
    Ok(out.report)
}

/// One run of the same inputs through the in-process transport and through a TLS mesh
/// (one thread per participant, each with its own TLS connections over loopback TCP).
#[derive(Debug, Clone, Serialize)]
pub struct TransportRun {
    /// The in-process run's report (with rounds per stage).
    pub in_process: ProtocolReport,
    /// Seconds per stage over TLS (the latest participant's end of each stage).
    pub tls_stage_seconds: Vec<f64>,
    /// Seconds of the TLS run after the connections were up, goodbyes included.
    pub tls_wall_seconds: f64,
    /// Seconds until the last participant had all its connections up (TCP, TLS handshakes
    /// and hellos; every participant started at once).
    pub tls_connect_seconds: f64,
    /// Per participant: protocol payload bytes sent, and bytes written to the network
    /// (TLS records with frame headers).
    pub tls_bytes: Vec<(String, usize, u64)>,
}

/// `repeat` comparison runs, alternating which transport goes first.
pub fn transport_comparison(
    backend: &std::sync::Arc<dyn kinsey_backend::AdditiveHe>,
    parties: usize,
    dim: usize,
    repeat: usize,
) -> Result<Vec<TransportRun>> {
    let agg = SecureAggregator::new(backend.clone(), kinsey_protocol::ProtocolConfig::default());
    let mut runs = Vec::new();
    for r in 0..repeat.max(1) {
        let inputs = synthetic_inputs(parties, dim, &mut NoiseRng::from_os());
        let mut in_process = None;
        let mut tls = None;
        for first in [r % 2 == 0, r % 2 != 0] {
            if first {
                in_process = Some(agg.run(&inputs)?);
            } else {
                let s = kinsey_protocol::session::local::LocalSession::new(parties, true)?;
                let outs = s.run(backend, &inputs, &|_, _| {});
                let errs: Vec<String> = outs
                    .iter()
                    .enumerate()
                    .filter_map(|(i, o)| o.as_ref().err().map(|e| format!("[{i}] {e}")))
                    .collect();
                if !errs.is_empty() {
                    return Err(Error::Numerical(format!(
                        "the TLS run failed: {}",
                        errs.join("; ")
                    )));
                }
                tls = Some(outs.into_iter().collect::<Result<Vec<_>>>()?);
            }
        }
        let (Some(ip), Some(tls)) = (in_process, tls) else {
            return Err(Error::Numerical("a comparison run is missing".into()));
        };
        if tls.iter().any(|o| o.sum != ip.sum) {
            return Err(Error::Numerical(
                "the TLS run's result differs from the in-process run's".into(),
            ));
        }
        let mut ends = [0.0f64; 4];
        for o in &tls {
            let mut t = 0.0;
            for (e, s) in ends.iter_mut().zip(&o.report.stages) {
                t += s.wall_seconds;
                *e = e.max(t);
            }
        }
        let mut prev = 0.0;
        let tls_stage_seconds = ends
            .iter()
            .map(|&e| {
                let d = e - prev;
                prev = e;
                d
            })
            .collect();
        runs.push(TransportRun {
            tls_wall_seconds: tls
                .iter()
                .map(|o| o.report.wall_seconds)
                .fold(0.0, f64::max),
            tls_connect_seconds: tls.iter().map(|o| o.connect_seconds).fold(0.0, f64::max),
            tls_stage_seconds,
            tls_bytes: tls
                .iter()
                .filter_map(|o| {
                    o.report
                        .participants
                        .first()
                        .map(|p| (p.participant.clone(), p.bytes_sent, o.wire_bytes_sent))
                })
                .collect(),
            in_process: ip.report,
        });
    }
    Ok(runs)
}

/// The median (NaN of nothing).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => 0.5 * (v[n / 2 - 1] + v[n / 2]),
    }
}
