//! Crypto throughput measurements behind `kinsey bench paillier`, `kinsey bench protocol`
//! and `kinsey backends` (the figures in BENCHMARKS.md come from these).

use crate::report::ProtocolReport;
use crate::runner::SecureAggregator;
use kinsey_core::{Error, Result};
use kinsey_dp::NoiseRng;
use kinsey_learn::aggregate::{PartyInput, fixed_point_sum};
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
    pub(crate) keygen_seconds: f64,
    /// One-off per key: the fixed-base tables for encryption.
    pub(crate) table_seconds: f64,
    pub(crate) encrypt_per_s: f64,
    pub(crate) encrypt_key_holder_per_s: f64,
    pub(crate) decrypt_per_s: f64,
    pub(crate) add_per_s: f64,
    pub(crate) mul_plain_per_s: f64,
    pub(crate) rerandomize_per_s: f64,
}

impl PaillierRates {
    /// The rates as an aligned text table.
    pub fn table(&self) -> String {
        format!(
            "Paillier {} bits, {} thread(s), {} values: keygen {:.2} s, tables {:.2} s\n  \
             encrypt {:>10.0}/s  encrypt (key holder, CRT) {:>10.0}/s  decrypt {:>9.0}/s\n  \
             add {:>14.0}/s  multiply by 32-bit plaintext {:>9.0}/s  re-randomise {:>6.0}/s\n",
            self.bits,
            self.threads,
            self.count,
            self.keygen_seconds,
            self.table_seconds,
            self.encrypt_per_s,
            self.encrypt_key_holder_per_s,
            self.decrypt_per_s,
            self.add_per_s,
            self.mul_plain_per_s,
            self.rerandomize_per_s
        )
    }
}

/// Measure Paillier at `bits` on `threads` threads (0 = all cores).
#[cfg(feature = "paillier")]
pub fn paillier_throughput(
    bits: u32,
    count: usize,
    threads: usize,
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
    let b = kinsey_backend_paillier::Paillier::new(bits, false)?;
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
        Ok(PaillierRates {
            bits,
            threads,
            count,
            keygen_seconds,
            table_seconds,
            encrypt_per_s,
            encrypt_key_holder_per_s,
            decrypt_per_s,
            add_per_s,
            mul_plain_per_s,
            rerandomize_per_s,
        })
    })
}

#[cfg(not(feature = "paillier"))]
pub fn paillier_throughput(
    _bits: u32,
    _count: usize,
    _threads: usize,
    _rng: &mut dyn rand_core::CryptoRng,
) -> Result<PaillierRates> {
    Err(Error::param(
        "backend",
        "this build has no Paillier backend (cargo feature 'paillier')",
    ))
}

/// Synthetic party inputs: distinct sizes, unit-scale models, small noise.
pub(crate) fn synthetic_inputs(parties: usize, dim: usize, rng: &mut NoiseRng) -> Vec<PartyInput> {
    (0..parties)
        .map(|j| PartyInput {
            n: 1000 + 37 * ((j * 7919) % parties.max(1)) + j,
            w: (0..dim).map(|_| rng.std_normal()).collect(),
            noise: (0..dim).map(|_| 0.01 * rng.std_normal()).collect(),
        })
        .collect()
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

/// Human-readable protocol report.
pub fn protocol_table(r: &ProtocolReport) -> String {
    let mut s = format!(
        "secure protocol: K = {}, d = {}, backend {} ({} bits{}), {:.2} s, {:.2} MiB, {} homomorphic operations\n  comparison: {}\n",
        r.parties,
        r.dim,
        r.backend.name,
        r.backend.key_bits,
        if r.backend.insecure { ", INSECURE" } else { "" },
        r.wall_seconds,
        r.total_bytes as f64 / (1 << 20) as f64,
        r.homomorphic_operations,
        r.comparison
    );
    s.push_str(&r.stage_lines("  "));
    for p in &r.participants {
        s.push_str(&format!(
            "  {:<12} sent {:>10.1} KiB  received {:>10.1} KiB  crypto {:.3} s\n",
            p.participant,
            p.bytes_sent as f64 / 1024.0,
            p.bytes_received as f64 / 1024.0,
            p.crypto_seconds
        ));
    }
    s
}

/// `kinsey backends`: each registered backend with its default self-description.
pub fn describe_backends() -> Vec<(String, String)> {
    crate::registry::registry()
        .build_all_for_listing()
        .into_iter()
        .map(|(n, b)| {
            let d = match b {
                Ok(b) => {
                    let i = b.info();
                    format!(
                        "{}; {}-bit keys by default, about {} bits of security{}; comparison: {}{}",
                        i.scheme,
                        i.key_bits,
                        i.security_bits,
                        if i.insecure { "; INSECURE" } else { "" },
                        b.comparison().describe(),
                        if i.notes.is_empty() {
                            String::new()
                        } else {
                            format!("; {}", i.notes)
                        }
                    )
                }
                Err(e) => e.to_string(),
            };
            (n, d)
        })
        .collect()
}
