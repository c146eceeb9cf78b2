//! What `kinsey bench` adds to the measurements of `kinsey::bench`: what a GPU machine can
//! do ([`gpu_probe`]) and the measurements as terminal tables ([`tables`]).

pub(crate) mod gpu_probe;
pub(crate) mod tables;
