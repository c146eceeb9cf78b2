//! Choosing the crypto backend and the devices: the same job under the plaintext reference,
//! the insecure mock (message flow only) and Paillier with its batches on a GPU when the
//! machine has one. With one seed, every backend publishes the same classifier.
//!
//!     cargo run --release --example backend_and_device
use kinsey::prelude::*;

fn main() -> kinsey::Result<()> {
    let dir = std::env::temp_dir().join(format!("kinsey-example-{}", std::process::id()));
    let parties = kinsey::data::synthetic_parties(&dir, 3, 1_000, 4)?;
    let paillier = match std::env::var("KINSEY_EXAMPLE_CRYPTO_DEVICE").as_deref() {
        Ok("gpu") => DevicePref::Gpu,
        Ok("auto") => DevicePref::Auto,
        _ => DevicePref::Cpu,
    };
    let backends = [
        (
            "plaintext reference",
            Backend::plaintext_reference(),
            DevicePref::Cpu,
        ),
        (
            "mock (NO encryption)",
            Backend::mock_insecure(),
            DevicePref::Cpu,
        ),
        ("Paillier-2048", Backend::paillier(2048), paillier),
    ];
    let mut published = Vec::new();
    for (name, backend, crypto_device) in backends {
        let trained = Job::builder()
            .parquet_parties(&parties, "label")
            .epsilon(1.0)
            .backend(backend)
            .crypto_device(crypto_device)
            .device(DevicePref::Cpu) // the local fits
            .seed(7)
            .build()?
            .run()?;
        let r = trained.release();
        println!(
            "{name:>22}: {} ({})",
            r.aggregator,
            r.security_warning.as_deref().unwrap_or("secure")
        );
        published.push(r.w.clone());
    }
    assert!(
        published.windows(2).all(|p| p[0] == p[1]),
        "backends disagree"
    );
    println!("all three published the same classifier, bit for bit");
    Ok(())
}
