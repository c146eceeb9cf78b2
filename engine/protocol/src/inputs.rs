//! Synthetic party inputs for the protocol's own tests and the benchmarks (public, so the
//! CLI's benchmark drivers run the protocol on the same inputs).

use kinsey_dp::NoiseRng;
use kinsey_learn::aggregate::PartyInput;

/// Synthetic party inputs: distinct sizes, unit-scale models, small noise.
pub fn synthetic_inputs(parties: usize, dim: usize, rng: &mut NoiseRng) -> Vec<PartyInput> {
    (0..parties)
        .map(|j| PartyInput {
            n: 1000 + 37 * ((j * 7919) % parties.max(1)) + j,
            w: (0..dim).map(|_| rng.std_normal()).collect(),
            noise: (0..dim)
                .map(|_| (0.01 * rng.std_normal() * parties as f64 * 2f64.powi(32)).round() as i128)
                .collect(),
        })
        .collect()
}
