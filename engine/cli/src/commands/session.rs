//! `kinsey session init`: everything a trial session on one machine needs. A private CA
//! (its key is not kept), one certificate and key per participant, the roster with a random
//! session id, one TOML per participant on 127.0.0.1, and each party's data (the demo's
//! synthetic parties). Also the local runner behind `kinsey demo --processes`: one child
//! process per participant.

use super::common::CryptoArgs;
use crate::session_config::*;
use kinsey::classifier::{NoiseKind, SensitivityDerivation};
use kinsey::network::{MAX_PARTIES, Peer, TrialSession};
use kinsey_core::{Error, Result};
use kinsey_data::output::Outputs;
use kinsey_data::parquet_blocks::PartyBlocks;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Network sessions.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[command(subcommand)]
    cmd: SessionCmd,
}

#[derive(clap::Subcommand, Debug)]
enum SessionCmd {
    /// Write a private CA, certificates, the roster and one config per participant (and
    /// the demo's data for each party) for a trial on 127.0.0.1.
    Init(InitArgs),
}

/// `kinsey session init`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct InitArgs {
    /// K, the number of parties.
    #[arg(long, default_value_t = 5)]
    pub(crate) parties: usize,
    /// The directory to create (must not hold a session already).
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// The curator listens on P, party j on P + j (default: free ports chosen now).
    #[arg(long)]
    pub(crate) base_port: Option<u16>,
    /// Dimension of the demo data.
    #[arg(long, value_parser = kinsey_core::limits::parse_dim, default_value_t = 20)]
    pub(crate) dim: usize,
    /// Rows of the smallest party (party j has rows (1 + (j - 1) / 2)); `generate --rows`
    /// and `bench train --rows` count every row instead, hence the other name.
    #[arg(long = "smallest-party", value_name = "ROWS", default_value_t = 20_000)]
    pub(crate) rows: usize,
    /// DP seed written into every party's config, so the session reproduces
    /// `kinsey demo --seed S` (trials only: whoever knows it can remove the noise).
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    #[arg(long, default_value_t = 1.0)]
    /// Privacy budget of the session's release.
    pub(crate) epsilon: f64,
    /// Accept K = 2: the smaller party can then compute the other party's exact model from
    /// the published one (docs/protocol-deployment.md).
    #[arg(long)]
    pub(crate) allow_two_parties: bool,
    /// Give the model an intercept: the public constant C in (0, 1) appended to every row
    /// (the rest scaled by sqrt(1 - C^2), so rows stay in the unit ball).
    #[arg(long, value_name = "C")]
    pub(crate) intercept: Option<f64>,
    /// Seconds within which every participant must connect.
    #[arg(long, default_value_t = 600)]
    pub(crate) connect_window: u64,
    /// Seconds any one receive may wait.
    #[arg(long, default_value_t = 300)]
    pub(crate) timeout: u64,
    #[command(flatten)]
    pub(crate) crypto: CryptoArgs,
    /// Where the curator writes the published model (default: DIR/curator/out).
    #[arg(long, hide = true)]
    pub(crate) curator_out: Option<PathBuf>,
}

/// Runs `kinsey session`.
pub(crate) fn run(a: Args) -> Result<()> {
    match a.cmd {
        SessionCmd::Init(i) => {
            let configs = init(&i)?;
            println!(
                "wrote a session of {} parties to {} (CA, certificates, roster, data, configs)",
                i.parties,
                i.out.display()
            );
            println!("start each participant in its own terminal, in any order:");
            for (j, c) in configs.iter().enumerate() {
                let role = if j == 0 { "curator" } else { "party" };
                println!("  kinsey {role} --config {}", c.display());
            }
            Ok(())
        }
    }
}

fn shared(i: &InitArgs, features: Vec<String>) -> Shared {
    let m = crate::config::ModelConfig::default();
    Shared {
        job: "demo".into(),
        features,
        label: "label".into(),
        lambda: 1e-3,
        tolerance: m.tolerance,
        max_iterations: m.max_iterations,
        hessian_rows: m.hessian_rows,
        epsilon: i.epsilon,
        allow_two_parties: i.allow_two_parties,
        calibration: SensitivityDerivation::Tight,
        noise: NoiseKind::L2,
        row_transform: "none".into(),
        row_scale: None,
        intercept: i.intercept,
        backend: i.crypto.backend.clone(),
        key_bits: i.crypto.key_bits,
        allow_insecure_test_keys: i.crypto.allow_insecure_test_keys,
        allow_insecure: i.crypto.allow_insecure,
    }
}

fn toml_text<T: serde::Serialize>(what: &str, v: &T) -> Result<String> {
    toml::to_string(v).map_err(|e| Error::param(what, format!("cannot write TOML: {e}")))
}

/// Write the session; returns the configs, the curator's first.
pub(crate) fn init(i: &InitArgs) -> Result<Vec<PathBuf>> {
    let k = i.parties;
    if k == 0 || k > MAX_PARTIES || i.dim == 0 || i.rows < 2 {
        return Err(Error::param(
            "parties",
            format!("need 1 to {MAX_PARTIES} parties, dim >= 1, smallest-party >= 2"),
        ));
    }
    kinsey_core::check_epsilon("epsilon", i.epsilon)?;
    // Refused here, before anything is written, as every participant would refuse it.
    kinsey::network::check_parties(k, i.allow_two_parties)?;
    if let Some(c) = i.intercept {
        kinsey_data::check_intercept("intercept", c)?;
    }
    i.crypto.config().aggregation()?;
    let dir = &i.out;
    if dir.join("roster.toml").exists() {
        return Err(Error::param(
            "out",
            format!(
                "{} already holds a session; choose another directory",
                dir.display()
            ),
        ));
    }
    let trial = TrialSession::new(
        k,
        i.base_port,
        &format!("kinsey session CA ({})", dir.display()),
    )?;
    let (parties, _) = kinsey::data::demo_parties(k, i.dim, i.rows)?;
    let sh = shared(i, parties[0].features().to_vec());
    let mut o = Outputs::new();
    o.ensure_dir(dir)?;
    o.write(&dir.join("ca.pem"), trial.ca_pem.as_bytes())?;
    let mut configs = Vec::new();
    for (slot, member) in trial.members.iter().enumerate() {
        let (peer, name) = (member.peer, member.name.clone());
        o.ensure_dir(&dir.join(&name))?;
        o.write(
            &dir.join(&name).join("cert.pem"),
            member.cert_pem.as_bytes(),
        )?;
        // 0600 from creation (never chmod-ed after the rename: no window).
        o.write_private(
            &dir.join(&name).join("key.pem"),
            member.key_pem().as_bytes(),
        )?;
        let (data, privacy, out) = match peer {
            Peer::Curator => (
                None,
                None,
                i.curator_out
                    .clone()
                    .unwrap_or_else(|| PathBuf::from("curator/out")),
            ),
            Peer::Party(j) => {
                let path = PathBuf::from(&name).join("data.parquet");
                kinsey::data::write_party(&mut o, &dir.join(&path), &parties[j])?;
                (
                    Some(PartyData {
                        path,
                        labels: Default::default(),
                    }),
                    i.seed.map(|s| PartySeed { seed: Some(s) }),
                    PathBuf::from(&name).join("out"),
                )
            }
        };
        let cfg = ParticipantConfig {
            session: SessionSection {
                roster: "roster.toml".into(),
                me: name.clone(),
                connect_window_s: i.connect_window,
                timeout_s: i.timeout,
            },
            tls: TlsSection {
                ca: "ca.pem".into(),
                cert: PathBuf::from(&name).join("cert.pem"),
                key: PathBuf::from(&name).join("key.pem"),
            },
            shared: sh.clone(),
            data,
            privacy,
            compute: Default::default(),
            crypto: Default::default(),
            output: SessionOutput {
                dir: out,
                diagnostics: matches!(peer, Peer::Party(_)),
            },
        };
        let header = format!(
            "# kinsey {} config, written by `kinsey session init`. [shared] must be identical in\n\
             # every participant's file (checked in the TLS handshake). This participant's own\n\
             # choices may follow: [compute] device, and [crypto] device = \"cpu\" | \"gpu\" |\n\
             # \"auto\", optionally with gpu_min_batch (where its backend's batches run; auto\n\
             # measures each operation's threshold at start without it).{}\n\n",
            name,
            if i.seed.is_some() && slot > 0 {
                "\n# [privacy] seed makes the noise reproducible: trials only, NOT private."
            } else {
                ""
            }
        );
        let path = dir.join(format!("{name}.toml"));
        o.write(
            &path,
            format!("{header}{}", toml_text("config", &cfg)?).as_bytes(),
        )?;
        configs.push(path);
    }
    o.write(
        &dir.join("roster.toml"),
        format!(
            "# kinsey session roster: identical at every participant.\n\n{}",
            trial.roster_toml()?
        )
        .as_bytes(),
    )?;
    o.commit()?;
    Ok(configs)
}

/// Run every participant of a session as a child process of this binary, with its output
/// in `logs/NAME.log`; wait for all. `limit` bounds the whole run.
pub(crate) fn run_local(configs: &[PathBuf], logs: &Path, limit: Duration) -> Result<()> {
    let exe = std::env::current_exe().map_err(|e| Error::io("kinsey executable", e))?;
    std::fs::create_dir_all(logs).map_err(|e| Error::io(logs, e))?;
    let mut children: Vec<(String, Child, PathBuf)> = Vec::new();
    for (slot, c) in configs.iter().enumerate() {
        let name = if slot == 0 {
            "curator".to_string()
        } else {
            format!("party-{slot}")
        };
        let log = logs.join(format!("{name}.log"));
        let f = std::fs::File::create(&log).map_err(|e| Error::io(&log, e))?;
        let f2 = f.try_clone().map_err(|e| Error::io(&log, e))?;
        let role = if slot == 0 { "curator" } else { "party" };
        let mut cmd = Command::new(&exe);
        cmd.args([role, "--config"]).arg(c);
        if kinsey_data::output::overwrite_allowed() {
            cmd.arg("--overwrite");
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(f)
            .stderr(f2)
            .spawn()
            .map_err(|e| Error::io(&exe, e))?;
        children.push((name, child, log));
    }
    let start = Instant::now();
    let mut failed = Vec::new();
    let mut pending: Vec<usize> = (0..children.len()).collect();
    while !pending.is_empty() {
        if start.elapsed() > limit {
            for &i in &pending {
                let _ = children[i].1.kill();
                failed.push(format!(
                    "{}: still running after {} s, stopped",
                    children[i].0,
                    limit.as_secs()
                ));
            }
            break;
        }
        pending.retain(|&i| {
            let (name, child, log) = &mut children[i];
            match child.try_wait() {
                Ok(Some(st)) => {
                    let secs = start.elapsed().as_secs_f64();
                    if st.success() {
                        eprintln!("  {name}: done ({secs:.1} s)");
                    } else {
                        let text = std::fs::read_to_string(&*log).unwrap_or_default();
                        let why = text
                            .lines()
                            .find(|l| l.starts_with("error:"))
                            .unwrap_or("exited without an error line")
                            .to_string();
                        eprintln!("  {name}: FAILED ({secs:.1} s): {why}");
                        failed.push(format!("{name}: {why}"));
                    }
                    false
                }
                Ok(None) => true,
                Err(e) => {
                    failed.push(format!("{name}: {e}"));
                    false
                }
            }
        });
        std::thread::sleep(Duration::from_millis(50));
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::Protocol {
            stage: "a session of separate processes".into(),
            participant: failed.len().to_string() + " participant(s)",
            msg: format!("{} (logs in {})", failed.join("; "), logs.display()),
        })
    }
}
