//! The crypto backends compiled into this build, by name (`[crypto] backend = "..."`).

pub use kinsey_backend::Registry;
pub use kinsey_backend::registry::BackendOptions;

/// The registry of every backend this build knows: compiled-in ones can be created, the
/// others say which cargo feature to turn on.
pub fn registry() -> Registry {
    let mut r = Registry::new();
    #[cfg(feature = "paillier")]
    kinsey_backend_paillier::register(&mut r);
    #[cfg(not(feature = "paillier"))]
    r.register_disabled("paillier", "paillier");
    #[cfg(feature = "tfhe")]
    kinsey_backend_tfhe::register(&mut r);
    #[cfg(not(feature = "tfhe"))]
    r.register_disabled("tfhe", "tfhe");
    #[cfg(feature = "mock")]
    kinsey_backend_mock::register(&mut r);
    #[cfg(not(feature = "mock"))]
    r.register_disabled("mock", "mock");
    r
}

/// `kinsey backends`: each registered backend with its default self-description.
pub fn describe_backends() -> Vec<(String, String)> {
    registry()
        .build_all_for_listing()
        .into_iter()
        .map(|(n, b)| {
            let d = match b {
                Ok(b) => {
                    let i = b.info();
                    format!(
                        "{}; {}{}; comparison: {}{}",
                        i.scheme,
                        if i.scheme.contains("LWE") {
                            format!("about {} bits of security", i.security_bits)
                        } else {
                            format!(
                                "{}-bit keys by default, about {} bits of security",
                                i.key_bits, i.security_bits
                            )
                        },
                        if i.insecure { "; INSECURE" } else { "" },
                        b.comparison().describe(),
                        if i.notes.is_empty() {
                            String::new()
                        } else {
                            format!("; {}", i.notes)
                        }
                    )
                }
                Err(e) => e.to_string(),
            };
            (n, d)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_build_has_paillier_tfhe_and_mock() {
        let r = registry();
        assert_eq!(r.names(), vec!["mock", "paillier", "tfhe"]);
        let e = r
            .create("seal", &BackendOptions::default())
            .err()
            .expect("unknown");
        assert!(
            e.to_string().contains("available: mock, paillier, tfhe"),
            "{e}"
        );
        assert!(r.create("paillier", &BackendOptions::default()).is_ok());
        assert!(r.create("tfhe", &BackendOptions::default()).is_ok());
    }
}
