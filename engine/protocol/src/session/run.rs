//! One participant's run in a network session: connect, play the role over the mesh, say
//! goodbye; on any failure tell every peer (stage, who is blamed, why) and return the error.
//! Nothing is returned for output unless every participant said goodbye.

use super::config::MeshConfig;
use super::mesh::Mesh;
use crate::faults::Leak;
use crate::play::{self, RoleResult};
use crate::report::ProtocolReport;
use crate::role::{Fail, R};
use crate::transport::{Peer, Stage, Transport};
use crate::wire::{TAG, open, seal};
use kinsey_backend::AdditiveHe;
use kinsey_core::{Error, Result};
use kinsey_dp::rng::os_crypto_rng;
use kinsey_learn::aggregate::{self, PartyInput};
use kinsey_learn::seeding::Tag;
use rand_core::RngCore;
use std::sync::Arc;
use std::time::Instant;

/// Draws a party's noise from every party's data tag (in party order).
pub type DrawNoise = dyn Fn(&[Tag]) -> Result<Vec<i128>> + Send + Sync;

/// A party's noise, drawn once every party's data tag has arrived (`kinsey_learn::seeding`:
/// a seeded party's noise is bound to every party's data, as in the in-process run).
#[derive(Clone)]
pub struct Binding {
    /// This party's tag: sent to every other party, never to the curator.
    pub tag: Tag,
    /// The draw; its result replaces the input's noise before the protocol starts.
    pub draw: Arc<DrawNoise>,
}

impl std::fmt::Debug for Binding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Binding(<tag>)")
    }
}

/// What a participant brings to a network session besides the mesh configuration.
#[derive(Clone)]
pub struct Seat {
    /// The backend every participant uses (a shared parameter).
    pub backend: Arc<dyn AdditiveHe>,
    /// A party's input (its model, noise and size); `None` for the curator.
    pub input: Option<PartyInput>,
    /// A party's noise drawn after the tag exchange; without it the input's noise is used
    /// (the party still sends a random tag: the exchange looks the same on the wire).
    pub binding: Option<Binding>,
    /// The dimension (a shared parameter).
    pub dim: usize,
    /// Test hook: a deliberately leaking protocol variant (crate tests only).
    pub(crate) leak: Option<Leak>,
}

impl Seat {
    /// A participant's seat: the backend, a party's input (`None` for the curator), a
    /// party's bound noise draw, and the dimension.
    pub fn new(
        backend: Arc<dyn AdditiveHe>,
        input: Option<PartyInput>,
        binding: Option<Binding>,
        dim: usize,
    ) -> Self {
        Self {
            backend,
            input,
            binding,
            dim,
            leak: None,
        }
    }
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
    /// Its protocol frames as the network saw them: wire sizes per peer and stage.
    pub traffic: Vec<super::mesh::LinkTraffic>,
    /// Seconds from the start of `Mesh::connect` until every connection was up (waiting for
    /// peers that start later included).
    pub connect_seconds: f64,
}

/// Every party sends its 32-byte tag to every other party and reads theirs (setup, before the
/// protocol; the curator takes no part). Returns the tags in party order.
fn exchange_tags(mesh: &mut Mesh, j: usize, k: usize, own: Tag) -> R<Vec<Tag>> {
    let transport = |e| Fail::from_transport(Stage::Setup, e);
    let fail = |blame: Peer, msg: String| Fail {
        stage: Stage::Setup,
        blame,
        msg,
        secondary: false,
    };
    for q in (0..k).filter(|&q| q != j) {
        mesh.send(Peer::Party(q), seal(Stage::Setup, TAG, &own))
            .map_err(transport)?;
    }
    let mut tags = vec![own; k];
    for (q, t) in tags.iter_mut().enumerate().filter(|(q, _)| *q != j) {
        let from = Peer::Party(q);
        let m = mesh.recv(from).map_err(transport)?;
        let body = open(&m, Stage::Setup, TAG).map_err(|why| fail(from, why))?;
        *t = body
            .try_into()
            .map_err(|_| fail(from, "sent a data tag that is not 32 bytes".into()))?;
    }
    Ok(tags)
}

/// End the session on a failure: tell every peer (unless the failure was relayed to us, so
/// every peer knows already) and name the stage and the participant at fault.
fn stop(mesh: &mut Mesh, f: Fail) -> Error {
    if !f.secondary {
        mesh.abort(f.stage, f.blame, &f.msg);
    }
    Error::Protocol {
        stage: f.stage.name().into(),
        participant: f.blame.to_string(),
        msg: f.msg,
    }
}

/// The tag exchange and, with a binding, the party's noise drawn from every tag.
fn bind_noise(mesh: &mut Mesh, j: usize, k: usize, seat: &Seat) -> Result<Option<PartyInput>> {
    let own = match &seat.binding {
        Some(b) => b.tag,
        None => {
            let mut t = [0u8; 32];
            os_crypto_rng().fill_bytes(&mut t);
            t
        }
    };
    let tags = exchange_tags(mesh, j, k, own).map_err(|f| stop(mesh, f))?;
    let mut input = seat.input.clone();
    if let (Some(b), Some(p)) = (&seat.binding, input.as_mut()) {
        let me = Peer::Party(j);
        let drawn = (b.draw)(&tags).and_then(|noise| {
            p.noise = noise;
            play::check_party(j, p, seat.dim)
        });
        if let Err(e) = drawn {
            return Err(stop(
                mesh,
                Fail {
                    stage: Stage::Setup,
                    blame: me,
                    msg: e.to_string(),
                    secondary: false,
                },
            ));
        }
    }
    Ok(input)
}

/// Run one participant: connect to the mesh, exchange the parties' data tags (and draw a
/// bound party's noise), play the role, finish together.
pub fn run_participant(cfg: &MeshConfig, seat: &Seat) -> Result<ParticipantOutcome> {
    let me = cfg.me;
    let k = cfg.session.parties;
    let info = seat.backend.info();
    play::check_backend(&info)?;
    if let (Peer::Party(j), Some(p), None) = (me, &seat.input, &seat.binding) {
        play::check_party(j, p, seat.dim)?;
    }
    let t_connect = Instant::now();
    let mut mesh = Mesh::connect(cfg)?;
    let connect_seconds = t_connect.elapsed().as_secs_f64();
    let input = match me {
        Peer::Party(j) => bind_noise(&mut mesh, j, k, seat)?,
        Peer::Curator => None,
    };
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
            meter: None,
            chunk_seconds: crate::role::CHUNK_SECONDS,
        },
        Box::new(&mut mesh),
        os_crypto_rng(),
        input.as_ref(),
    );
    let RoleResult {
        out,
        view,
        stage_end,
        ops,
    } = role;
    let sum = match out {
        Ok(sum) => sum,
        // A relayed abort reached every participant already (full mesh).
        Err(f) => return Err(stop(&mut mesh, f)),
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
    mesh.finish().map_err(|e| {
        let f = Fail::from_transport(Stage::Shares, e);
        Error::Protocol {
            stage: "the closing goodbye".into(),
            participant: f.blame.to_string(),
            msg: f.msg,
        }
    })?;
    let wall = start.elapsed().as_secs_f64();
    let wire_bytes_sent = mesh.wire_bytes_sent();
    let traffic = mesh.traffic();
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
        traffic,
        connect_seconds,
    })
}
