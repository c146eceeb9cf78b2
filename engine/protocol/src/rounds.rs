//! Sequential message rounds per stage, from every participant's view of an in-process run:
//! the length of the longest chain of messages in which each is sent after the previous one
//! arrived. At one-way latency L a stage takes at least its rounds times L more than its
//! computation, whatever the bandwidth.

use crate::transport::{Direction, Peer, Stage, View};
use std::collections::{BTreeMap, VecDeque};

/// Rounds per stage (in `Stage::ALL` order); `None` when the views do not fit together (a
/// run that failed, or not every participant's view).
pub(crate) fn rounds(views: &[&View]) -> Option<Vec<usize>> {
    let idx: BTreeMap<Peer, usize> = views
        .iter()
        .enumerate()
        .map(|(i, v)| (v.participant, i))
        .collect();
    // Depths of messages in flight on each channel (sender, receiver), in order.
    let mut flight: BTreeMap<(Peer, Peer), VecDeque<usize>> = BTreeMap::new();
    let mut clock = vec![0usize; views.len()];
    let mut pos = vec![0usize; views.len()];
    let mut depth_by_stage: BTreeMap<Stage, usize> = BTreeMap::new();
    loop {
        let mut progressed = false;
        for (i, v) in views.iter().enumerate() {
            while let Some(m) = v.messages.get(pos[i]) {
                match m.direction {
                    Direction::Sent => {
                        let depth = clock[i] + 1;
                        flight
                            .entry((v.participant, m.peer))
                            .or_default()
                            .push_back(depth);
                        if let Some(s) = m.stage {
                            let e = depth_by_stage.entry(s).or_default();
                            *e = (*e).max(depth);
                        }
                    }
                    Direction::Received => {
                        let Some(depth) = flight
                            .get_mut(&(m.peer, v.participant))
                            .and_then(VecDeque::pop_front)
                        else {
                            break;
                        };
                        clock[i] = clock[i].max(depth);
                    }
                }
                pos[i] += 1;
                progressed = true;
            }
        }
        if !progressed {
            break;
        }
    }
    let complete = views
        .iter()
        .enumerate()
        .all(|(i, v)| pos[i] == v.messages.len());
    if !complete || idx.len() != views.len() {
        return None;
    }
    let mut prev = 0usize;
    Some(
        Stage::ALL
            .iter()
            .map(|s| {
                let upto = depth_by_stage.get(s).copied().unwrap_or(prev).max(prev);
                let r = upto - prev;
                prev = upto;
                r
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::Message;

    fn msg(direction: Direction, peer: Peer, stage: Stage) -> Message {
        Message {
            direction,
            peer,
            stage: Some(stage),
            kind: 0,
            bytes: Vec::new(),
            len: 1,
        }
    }

    #[test]
    fn a_ping_pong_has_two_rounds_and_a_broadcast_one() {
        let (a, b, c) = (Peer::Party(0), Peer::Party(1), Peer::Curator);
        use Direction::*;
        let views = vec![
            View {
                participant: a,
                messages: vec![
                    msg(Sent, b, Stage::Setup),
                    msg(Sent, c, Stage::Setup),
                    msg(Received, b, Stage::Setup),
                    msg(Sent, c, Stage::Smallest),
                ],
                learned: vec![],
            },
            View {
                participant: b,
                messages: vec![msg(Received, a, Stage::Setup), msg(Sent, a, Stage::Setup)],
                learned: vec![],
            },
            View {
                participant: c,
                messages: vec![
                    msg(Received, a, Stage::Setup),
                    msg(Received, a, Stage::Smallest),
                ],
                learned: vec![],
            },
        ];
        let refs: Vec<&View> = views.iter().collect();
        assert_eq!(rounds(&refs), Some(vec![2, 1, 0, 0]));
        // A view missing a message cannot be matched.
        let mut broken = views.clone();
        broken[1].messages.remove(1);
        let refs: Vec<&View> = broken.iter().collect();
        assert_eq!(rounds(&refs), None);
    }
}
