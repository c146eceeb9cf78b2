//! Progress of an in-process run, stage by stage: the stage's name and a bar over the
//! backend operations every participant performs in it, so a slow backend (TFHE's
//! Stage 2 takes minutes at a9a's dimension) shows how far it is and an ETA.
//!
//! The totals are public functions of K and d, as the operations are: a test checks them
//! against the operations a run counts, so a change of the protocol that forgets them
//! fails there.

use crate::transport::{Peer, Stage};
use kinsey_core::Progress;
use std::sync::Mutex;

/// Backend elements all participants process in `stage` of a run with `k` parties and
/// dimension `d` (the counts the protocol report lists per stage).
pub(crate) fn stage_elements(stage: Stage, k: usize, d: usize) -> u64 {
    let (k, d) = (k as u64, d as u64);
    match stage {
        // Two key pairs (zeta, xi).
        Stage::Setup => 2,
        // Per party: encrypt, encrypt under xi, two decryptions, two re-randomisations,
        // one sanitisation and one plaintext addition; K - 1 comparisons, counted by both
        // sides.
        Stage::Smallest => 8 * k + 2 * (k - 1),
        // The curator's K indicator bits; per party d products and d re-randomisations;
        // K - 1 chain additions of d; one sanitisation of d.
        Stage::Noise => k + 2 * k * d + (k - 1) * d + d,
        // P1's masking and the curator's decryption.
        Stage::Shares => 2 * d,
    }
}

/// One bar per stage, shown once every participant has entered it (the curator enters
/// Stage 3 while the parties still work in Stage 2); work done in a stage before its bar
/// shows is counted when it does.
pub(crate) struct StageMeter<'a> {
    progress: &'a dyn Progress,
    k: usize,
    d: usize,
    state: Mutex<State>,
}

struct State {
    /// The stage each participant is in (parties 0..K, then the curator).
    at: Vec<Stage>,
    /// Elements done per stage.
    done: [u64; 4],
    shown: Option<Stage>,
}

impl<'a> StageMeter<'a> {
    /// A meter for a run of `k` parties in dimension `d`; it shows Setup at once.
    pub(crate) fn new(progress: &'a dyn Progress, k: usize, d: usize) -> Self {
        let m = Self {
            progress,
            k,
            d,
            state: Mutex::new(State {
                at: vec![Stage::Setup; k + 1],
                done: [0; 4],
                shown: None,
            }),
        };
        m.show(&mut m.state(), Stage::Setup);
        m
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn show(&self, st: &mut State, stage: Stage) {
        self.progress.begin(
            &format!("secure protocol: {}", stage.name()),
            Some(stage_elements(stage, self.k, self.d)),
        );
        self.progress.advance(st.done[stage as usize]);
        st.shown = Some(stage);
    }

    fn index(&self, who: Peer) -> usize {
        match who {
            Peer::Party(j) => j.min(self.k),
            Peer::Curator => self.k,
        }
    }

    /// `who` entered `stage`: when every participant is there, its bar shows.
    pub(crate) fn enter(&self, who: Peer, stage: Stage) {
        let mut st = self.state();
        let i = self.index(who);
        st.at[i] = stage;
        let slowest = st.at.iter().copied().min().unwrap_or(stage);
        if st.shown.is_none_or(|s| slowest > s) {
            self.show(&mut st, slowest);
        }
    }

    /// A participant processed `n` elements in `stage`.
    pub(crate) fn advance(&self, stage: Stage, n: usize) {
        let mut st = self.state();
        st.done[stage as usize] += n as u64;
        if st.shown == Some(stage) {
            self.progress.advance(n as u64);
        }
    }

    /// The run is over.
    pub(crate) fn finish(&self) {
        self.progress.end();
    }
}
