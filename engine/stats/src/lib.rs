//! DP statistics on tables and series: histograms and counts ([`histogram`]) and private
//! decision trees ([`tree`]) of seed 002, the SuLQ algorithms of seed 003 ([`sulq`]), and
//! decayed sums under continual observation of seed 004 ([`decay`]). Input comes from
//! `kinsey-data`; every release's noise comes from `kinsey-dp`.

pub mod apply;
pub mod decay;
pub mod histogram;
pub mod histogram_query;
pub mod sulq;
pub mod summary;
pub mod tree;
pub mod tree_release;
