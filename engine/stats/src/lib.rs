//! The DP toolbox on tables: histograms and counts ([`histogram`]) and private decision
//! trees ([`tree`]) of seed 002, the SuLQ algorithms of seed 003 ([`sulq`]) and summary
//! statistics ([`summary`]). Input comes from `kinsey-data`; every release's noise comes
//! from `kinsey-dp`. The decayed sums of seed 004 are their own product line:
//! `kinsey-decay`.

pub mod apply;
pub mod histogram;
pub mod histogram_query;
pub mod sulq;
pub mod summary;
pub mod tree;
pub mod tree_release;
