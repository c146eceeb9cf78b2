//! Train a DP classifier across parties that each keep their rows, their size and their
//! model to themselves (the secure 3-stage protocol over Paillier), and publish it.
//!
//!     cargo run --release --example secure_training -- party-1.parquet party-2.parquet ...
//!
//! Without arguments it makes three small synthetic parties in a temporary folder.
use kinsey::prelude::*;
use std::path::PathBuf;

fn main() -> kinsey::Result<()> {
    let dir = std::env::temp_dir().join(format!("kinsey-example-{}", std::process::id()));
    let mut parties: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if parties.is_empty() {
        parties = kinsey::data::synthetic_parties(&dir.join("parties"), 3, 2_000, 8)?;
    }
    let trained = Job::builder()
        .parquet_parties(&parties, "label")
        .epsilon(1.0)
        .backend(Backend::paillier(2048))
        .build()?
        .run()?;
    let release = trained.release();
    println!(
        "published {:?} under {}",
        release.w,
        release.guarantee.short()
    );
    let written = trained.write(dir.join("out"))?;
    println!("wrote {}", written.model.display());
    Ok(())
}
