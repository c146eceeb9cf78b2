//! Tables in: Parquet and CSV readers, the in-memory [`Dataset`]; and the data utilities
//! behind `kinsey convert`, `kinsey split` and `kinsey generate` ([`convert_libsvm`],
//! [`split_into_parties`], [`Generate`]), each writing all or nothing.

mod convert;
mod files;
mod split;
mod synthetic;

pub use convert::{Converted, convert_libsvm};
pub use files::{synthetic_parties, write_json_file, write_json_to};
pub use kinsey_data::memory::{ArrowTable, ColumnSource};
pub use kinsey_data::output::Outputs;
pub use kinsey_data::parquet_io::{ColumnSpec, dataset_of_batches, read_parquet};
pub use kinsey_data::split::SplitSpec;
pub use kinsey_data::synth::SynthParty;
pub use kinsey_data::{Dataset, LabelEncoding, RowTransform};
pub use split::{SplitDone, split_into_parties};
pub use synthetic::{Generate, check_size, demo_parties, write_party};
