//! The DP toolbox of seed 002: histograms and counts under both neighbour definitions, and
//! DP decision trees (ID3 with a private split choice). The SuLQ algorithms of seed 003 are
//! in [`crate::sulq`]; both read their input through [`table`] and [`attributes`].

pub mod attributes;
pub mod commands;
pub mod histogram;
pub mod table;
pub mod tree;
