//! Where tests find the project's shared data (`../shared/data` beside the checkout, or
//! `KINSEY_SHARED_DATA`). Tests that need it fail, not skip, when it is missing.

use std::path::PathBuf;

/// `../shared/data` beside the checkout, or `KINSEY_SHARED_DATA`.
pub fn shared_data_dir() -> PathBuf {
    if let Ok(p) = std::env::var("KINSEY_SHARED_DATA") {
        return PathBuf::from(p);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data")
}

/// a9a and a9a.t from the shared data (d = 123, labels +-1, rows not scaled).
pub fn a9a() -> kinsey_core::Result<(crate::Dataset, crate::Dataset)> {
    use crate::{LabelEncoding, libsvm::read_libsvm};
    let root = shared_data_dir().join("a9a");
    let train = read_libsvm(&root.join("a9a"), 123, LabelEncoding::PlusMinusOne)?;
    let test = read_libsvm(&root.join("a9a.t"), 123, LabelEncoding::PlusMinusOne)?;
    Ok((train, test))
}
