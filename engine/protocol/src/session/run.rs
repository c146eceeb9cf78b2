//! One participant's run in a network session: connect, play the role over the mesh, say
//! goodbye; on any failure tell every peer (stage, who is blamed, why) and return the error.
//! Nothing is returned for output unless every participant said goodbye.

use super::config::MeshConfig;
use super::mesh::Mesh;
use crate::faults::Leak;
use crate::play::{self, RoleResult};
use crate::report::ProtocolReport;
use crate::transport::{Peer, Stage};
use kinsey_backend::AdditiveHe;
use kinsey_core::{Error, Result};
use kinsey_dp::rng::os_crypto_rng;
use kinsey_learn::aggregate::{self, PartyInput};
use std::sync::Arc;
use std::time::Instant;

/// What a participant brings to a network session besides the mesh configuration.
#[derive(Clone)]
pub struct Seat {
    /// The backend every participant uses (a shared parameter).
    pub backend: Arc<dyn AdditiveHe>,
    /// A party's input (its model, noise and size); `None` for the curator.
    pub input: Option<PartyInput>,
    /// The dimension (a shared parameter).
    pub dim: usize,
    /// Test hook: a deliberately leaking protocol variant.
    pub leak: Option<Leak>,
}

impl std::fmt::Debug for Seat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Seat({}, d = {})", self.backend.info().name, self.dim)
    }
}

/// What a participant takes home: the published sum and its average, and its own report.
#[derive(Debug, Clone)]
pub struct ParticipantOutcome {
    /// The signed fixed-point sum of the models and the selected noise.
    pub sum: Vec<i128>,
    /// The published classifier (the average).
    pub w: Vec<f64>,
    /// This participant's measurements (its traffic, timings and operations).
    pub report: ProtocolReport,
    /// Bytes it wrote to the network after the handshakes (TLS records, frame headers).
    pub wire_bytes_sent: u64,
    /// Seconds from the start of `Mesh::connect` until every connection was up (waiting for
    /// peers that start later included).
    pub connect_seconds: f64,
}

/// Run one participant: connect to the mesh, play the role, finish together.
pub fn run_participant(cfg: &MeshConfig, seat: &Seat) -> Result<ParticipantOutcome> {
    let me = cfg.me;
    let k = cfg.session.parties;
    let info = seat.backend.info();
    play::check_backend(&info)?;
    if let (Peer::Party(j), Some(p)) = (me, &seat.input) {
        play::check_party(j, p, k, seat.dim)?;
    }
    let t_connect = Instant::now();
    let mut mesh = Mesh::connect(cfg)?;
    let connect_seconds = t_connect.elapsed().as_secs_f64();
    let start = Instant::now();
    let cmp = seat.backend.comparison();
    let comparison = cmp.describe();
    let role = play::play(
        play::Seat {
            me,
            k,
            he: seat.backend.as_ref(),
            cmp,
            start,
            fault: None,
            leak: seat.leak,
            record_views: false,
        },
        Box::new(&mut mesh),
        os_crypto_rng(),
        seat.input.as_ref(),
    );
    let RoleResult {
        out,
        view,
        stage_end,
        ops,
    } = role;
    let sum = match out {
        Ok(sum) => sum,
        Err(f) => {
            // A relayed abort reached every participant already (full mesh).
            if !f.secondary {
                mesh.abort(f.stage, f.blame, &f.msg);
            }
            return Err(Error::Protocol {
                stage: f.stage.name().into(),
                participant: f.blame.to_string(),
                msg: f.msg,
            });
        }
    };
    if sum.len() != seat.dim {
        let msg = format!(
            "the published result has {} values, expected {}",
            sum.len(),
            seat.dim
        );
        mesh.abort(Stage::Shares, me, &msg);
        return Err(Error::Protocol {
            stage: Stage::Shares.name().into(),
            participant: me.to_string(),
            msg,
        });
    }
    mesh.finish().map_err(|e| Error::Protocol {
        stage: "the closing goodbye".into(),
        participant: match &e {
            crate::transport::TransportError::Aborted { blame, .. } => blame.to_string(),
            crate::transport::TransportError::HungUp(p)
            | crate::transport::TransportError::Timeout(p)
            | crate::transport::TransportError::NoRoute(p)
            | crate::transport::TransportError::Closed(p, _)
            | crate::transport::TransportError::Refused(p, _) => p.to_string(),
        },
        msg: e.to_string(),
    })?;
    let wall = start.elapsed().as_secs_f64();
    let wire_bytes_sent = mesh.wire_bytes_sent();
    let roles = [RoleResult {
        out: Ok(sum.clone()),
        view,
        stage_end,
        ops,
    }];
    let report = play::build_report(
        info,
        &roles,
        (k, seat.dim),
        wall,
        comparison,
        "TLS 1.3 over TCP, mutual authentication by roster (one process per participant)",
    );
    Ok(ParticipantOutcome {
        w: aggregate::decode_average(&sum, k),
        sum,
        report,
        wire_bytes_sent,
        connect_seconds,
    })
}
