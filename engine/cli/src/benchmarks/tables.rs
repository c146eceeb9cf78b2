//! The benchmarks' measurements as terminal text: the tables `kinsey bench` prints (the
//! measurements are `kinsey::bench`'s; `--json` prints them as they are).

use kinsey::bench::crossover::{Crossover, OpCrossover};
use kinsey::bench::ops::OpTable;
use kinsey::bench::protocol::ProtocolReport;
use kinsey::bench::protocol::{PaillierRates, TransportRun, median};

/// One line: the operation, its crossover and every batch's rates on both paths.
pub(crate) fn crossover_line(o: &OpCrossover, bits: u32) -> String {
    let points: Vec<String> = o
        .points
        .iter()
        .map(|p| {
            format!(
                "{}: {:.0} / {:.0}",
                p.batch,
                p.batch as f64 / p.cpu_seconds,
                p.batch as f64 / p.gpu_seconds
            )
        })
        .collect();
    format!(
        "crossover {bits} bits, {}: from {} (batch: CPU / GPU items/s; {})",
        o.op,
        o.crossover
            .map_or_else(|| "none".to_string(), |c| c.to_string()),
        points.join(", ")
    )
}

/// An aligned text table with the suggestion.
pub(crate) fn crossover_table(c: &Crossover) -> String {
    let mut s = format!(
        "Paillier {} bits: the batch from which the GPU path beats the CPU path ({} CPU \
         thread(s)), GPU: {}\n  {:<34} {:>10} {:>8} {:>14} {:>14}\n",
        c.bits,
        c.threads,
        c.device,
        "operation",
        "crossover",
        "batch",
        "CPU items/s",
        "GPU items/s"
    );
    for o in &c.ops {
        let last = o.points.last();
        let rate = |sec: f64, b: usize| b as f64 / sec;
        s.push_str(&format!(
            "  {:<34} {:>10} {:>8} {:>14.0} {:>14.0}\n",
            o.op,
            o.crossover
                .map_or_else(|| "none".to_string(), |c| c.to_string()),
            last.map_or(0, |p| p.batch),
            last.map_or(0.0, |p| rate(p.cpu_seconds, p.batch)),
            last.map_or(0.0, |p| rate(p.gpu_seconds, p.batch)),
        ));
    }
    match c.suggested_min_batch {
        Some(b) => s.push_str(&format!(
            "  suggested [crypto] gpu_min_batch = {b} (the largest crossover: from there \
             every operation was faster on the GPU)\n"
        )),
        None => {
            let lost: Vec<&str> = c
                .ops
                .iter()
                .filter(|o| o.crossover.is_none())
                .map(|o| o.op.as_str())
                .collect();
            s.push_str(&format!(
                "  no gpu_min_batch to suggest: the GPU did not beat the CPU on {} at the \
                 largest batch measured (up to {}); keep device = \"cpu\", or measure \
                 larger batches (--max-batch)\n",
                lost.join(", "),
                c.max_batch
            ));
        }
    }
    s
}

/// The table as text.
pub(crate) fn op_table(t: &OpTable) -> String {
    let mut s = format!(
        "{}\n  public key {:.1} KiB, secret key {:.1} KiB, ciphertext {:.1} KiB\n",
        t.backend,
        t.public_key_bytes as f64 / 1024.0,
        t.secret_key_bytes as f64 / 1024.0,
        t.ciphertext_bytes as f64 / 1024.0
    );
    s.push_str(&format!(
        "  {:<48} {:>6} {:>12} {:>12} {:>11}\n",
        "operation", "batch", "ms each", "per second", "PBS each"
    ));
    for o in &t.ops {
        s.push_str(&format!(
            "  {:<48} {:>6} {:>12.3} {:>12.1} {:>11}\n",
            o.op,
            o.count,
            o.seconds_each * 1e3,
            1.0 / o.seconds_each.max(1e-12),
            o.bootstraps_each
                .map_or("-".to_string(), |b| format!("{b:.1}"))
        ));
    }
    s
}

/// The rates as an aligned text table.
pub(crate) fn paillier_table(r: &PaillierRates) -> String {
    format!(
        "Paillier {} bits, {} thread(s), {} values, {}: keygen {:.2} s, tables {:.2} s, \
         warm-up {:.2} s\n  \
         encrypt {:>10.0}/s  encrypt (key holder) {:>10.0}/s  decrypt {:>9.0}/s\n  \
         add {:>14.0}/s  multiply by 32-bit plaintext {:>9.0}/s  re-randomise {:>6.0}/s\n{}",
        r.bits,
        r.threads,
        r.count,
        r.device,
        r.keygen_seconds,
        r.table_seconds,
        r.warmup_seconds,
        r.encrypt_per_s,
        r.encrypt_key_holder_per_s,
        r.decrypt_per_s,
        r.add_per_s,
        r.mul_plain_per_s,
        r.rerandomize_per_s,
        if r.checked_against_cpu > 0 {
            format!(
                "  identical to the CPU path on {} values per operation (same randomness)\n",
                r.checked_against_cpu
            )
        } else {
            String::new()
        }
    )
}

/// Human-readable protocol report.
pub(crate) fn protocol_table(r: &ProtocolReport) -> String {
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
    if let Some(b) = r.bootstraps {
        s.push_str(&format!("  programmable bootstraps: {b}\n"));
    }
    if let Ok(json) = serde_json::to_value(r) {
        s.push_str(&crate::summary::stage_lines(&json, "  "));
    }
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

/// The comparison as a table: medians per stage, rounds, bytes, and the time at 1 ms and
/// 50 ms round trip (computation as measured in process, plus one one-way latency per
/// sequential round; bandwidth not modelled).
pub(crate) fn transport_table(runs: &[TransportRun]) -> String {
    let Some(first) = runs.first() else {
        return String::new();
    };
    let r0 = &first.in_process;
    let mut s = format!(
        "K = {}, d = {}, {} ({} bits), {} runs (medians)\n{:<40} {:>10} {:>10} {:>8} {:>7} {:>10} {:>10}\n",
        r0.parties,
        r0.dim,
        r0.backend.name,
        r0.backend.key_bits,
        runs.len(),
        "stage",
        "in-proc s",
        "TLS s",
        "TLS/in",
        "rounds",
        "@1ms s",
        "@50ms s"
    );
    let mut tot = (0.0, 0.0, 0usize);
    for (i, st) in r0.stages.iter().enumerate() {
        let ip = median(
            runs.iter()
                .map(|r| r.in_process.stages[i].wall_seconds)
                .collect(),
        );
        let tl = median(runs.iter().map(|r| r.tls_stage_seconds[i]).collect());
        let rounds = st.rounds.unwrap_or(0);
        tot = (tot.0 + ip, tot.1 + tl, tot.2 + rounds);
        s.push_str(&format!(
            "{:<40} {:>10.3} {:>10.3} {:>8.3} {:>7} {:>10.3} {:>10.3}\n",
            st.stage,
            ip,
            tl,
            tl / ip,
            rounds,
            ip + rounds as f64 * 0.0005,
            ip + rounds as f64 * 0.025
        ));
    }
    let ip13: f64 = (1..4)
        .map(|i| {
            median(
                runs.iter()
                    .map(|r| r.in_process.stages[i].wall_seconds)
                    .collect(),
            )
        })
        .sum();
    let tl13: f64 = (1..4)
        .map(|i| median(runs.iter().map(|r| r.tls_stage_seconds[i]).collect()))
        .sum();
    s.push_str(&format!(
        "{:<40} {:>10.3} {:>10.3} {:>8.3} {:>7} {:>10.3} {:>10.3}\n",
        "all stages",
        tot.0,
        tot.1,
        tot.1 / tot.0,
        tot.2,
        tot.0 + tot.2 as f64 * 0.0005,
        tot.0 + tot.2 as f64 * 0.025
    ));
    s.push_str(&format!(
        "stages 1-3 (without key generation): TLS/in-process = {:.3}\n",
        tl13 / ip13
    ));
    let conn = median(runs.iter().map(|r| r.tls_connect_seconds).collect());
    s.push_str(&format!(
        "connections (TCP, TLS 1.3 handshakes, hellos; all dials and accepts in parallel): \
         {conn:.3} s on loopback, about 3 round trips more at a given RTT; with them TLS/in-process \
         = {:.3} over all stages\n",
        (tot.1 + conn) / tot.0
    ));
    let payload: Vec<f64> = first.tls_bytes.iter().map(|b| b.1 as f64).collect();
    let wire: Vec<f64> = first.tls_bytes.iter().map(|b| b.2 as f64).collect();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    s.push_str(&format!(
        "bytes sent per participant: payload mean {:.1} KiB, max {:.1} KiB; on the wire (TLS \
         records, frame headers) mean {:.1} KiB, max {:.1} KiB\n",
        mean(&payload) / 1024.0,
        max(&payload) / 1024.0,
        mean(&wire) / 1024.0,
        max(&wire) / 1024.0
    ));
    for (name, p, w) in &first.tls_bytes {
        s.push_str(&format!(
            "  {name:<12} payload {:>10.1} KiB  wire {:>10.1} KiB\n",
            *p as f64 / 1024.0,
            *w as f64 / 1024.0
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use kinsey::bench::crossover::Point;

    /// The line printed as each operation's crossover is measured, and the table with its
    /// suggestion (or why there is none).
    #[test]
    fn crossover_text() {
        let o = OpCrossover {
            op: "add".into(),
            points: vec![Point {
                batch: 4,
                cpu_seconds: 0.5,
                gpu_seconds: 0.25,
            }],
            crossover: Some(4),
        };
        assert_eq!(
            crossover_line(&o, 2048),
            "crossover 2048 bits, add: from 4 (batch: CPU / GPU items/s; 4: 8 / 16)"
        );
        let mut c = Crossover {
            bits: 2048,
            threads: 16,
            device: "GPU".into(),
            max_batch: 8,
            ops: vec![o.clone()],
            suggested_min_batch: Some(4),
        };
        let t = crossover_table(&c);
        assert!(t.contains("add") && t.contains("gpu_min_batch = 4"), "{t}");
        c.ops[0].crossover = None;
        c.suggested_min_batch = None;
        let t = crossover_table(&c);
        assert!(t.contains("did not beat the CPU on add"), "{t}");
    }
}
