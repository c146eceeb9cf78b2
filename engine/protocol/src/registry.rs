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
