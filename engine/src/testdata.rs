//! Where tests find the project's shared data (`../shared/data` beside the checkout, or
//! `KINSEY_SHARED_DATA`). Tests that need it fail, not skip, when it is missing.

use std::path::PathBuf;

pub fn shared_data_dir() -> PathBuf {
    if let Ok(p) = std::env::var("KINSEY_SHARED_DATA") {
        return PathBuf::from(p);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data")
}
