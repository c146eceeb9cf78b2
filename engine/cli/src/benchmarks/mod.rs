//! The benchmark drivers behind `kinsey bench` (moved out of `kinsey-protocol`, which now
//! holds only the protocol): Paillier throughput and the protocol end to end, in process
//! and over TLS ([`protocol`]); the Paillier GPU crossovers ([`crossover`]); each backend
//! operation's cost ([`opbench`]); what a GPU machine can do ([`gpu_probe`]).

pub(crate) mod crossover;
pub(crate) mod gpu_probe;
pub(crate) mod opbench;
pub(crate) mod protocol;
