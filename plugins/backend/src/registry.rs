//! Backends registered by name; the `[crypto] backend = "..."` key of the config picks one
//! at run time. An unknown name, or one whose cargo feature is off, is an error that lists
//! the names that exist.

use crate::error::BackendError;
use crate::he::AdditiveHe;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Options every backend factory receives (from the `[crypto]` section of the config).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BackendOptions {
    /// Key size in bits; `None` is the backend's default.
    pub key_bits: Option<u32>,
    /// Allow keys below the backend's minimum (tests only).
    pub allow_insecure_test_keys: bool,
    /// Allow backends that do not encrypt at all (`mock`).
    pub allow_insecure: bool,
    /// Where a backend that has a GPU path runs its batches (`None`: the CPU). Backends
    /// without one ignore it.
    pub device: Option<kinsey_core::DevicePref>,
    /// Under `auto`, the smallest batch sent to the GPU (`None`: the backend decides; the
    /// Paillier backend measures each operation's on this machine).
    pub gpu_min_batch: Option<usize>,
}

/// A backend, or why it could not be built.
pub type Built = Result<Arc<dyn AdditiveHe>, BackendError>;

/// A factory building a backend from options.
pub type Factory = fn(&BackendOptions) -> Result<Arc<dyn AdditiveHe>, BackendError>;

#[derive(Clone)]
enum Entry {
    Enabled(Factory),
    Disabled { feature: String },
}

/// Name -> backend factory.
#[derive(Clone, Default)]
pub struct Registry {
    entries: BTreeMap<String, Entry>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.entries.keys()).finish()
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Register a compiled-in backend.
    pub fn register(&mut self, name: &str, factory: Factory) {
        self.entries
            .insert(name.to_string(), Entry::Enabled(factory));
    }

    /// Record a backend whose cargo feature is off, so asking for it says how to get it.
    pub fn register_disabled(&mut self, name: &str, feature: &str) {
        self.entries
            .entry(name.to_string())
            .or_insert(Entry::Disabled {
                feature: feature.to_string(),
            });
    }

    /// Names of the compiled-in backends.
    pub fn names(&self) -> Vec<String> {
        self.entries
            .iter()
            .filter(|(_, e)| matches!(e, Entry::Enabled(_)))
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// Build the backend called `name`.
    pub fn create(
        &self,
        name: &str,
        opts: &BackendOptions,
    ) -> Result<Arc<dyn AdditiveHe>, BackendError> {
        match self.entries.get(name) {
            Some(Entry::Enabled(f)) => f(opts),
            Some(Entry::Disabled { feature }) => Err(BackendError::Disabled {
                name: name.to_string(),
                feature: feature.clone(),
            }),
            None => Err(BackendError::Unknown {
                name: name.to_string(),
                available: self.names().join(", "),
            }),
        }
    }

    /// Every compiled-in backend built with default options and insecure ones allowed, for
    /// listing them (`kinsey backends`); a backend that cannot be built says why.
    pub fn build_all_for_listing(&self) -> Vec<(String, Built)> {
        let opts = BackendOptions {
            allow_insecure: true,
            ..Default::default()
        };
        self.names()
            .into_iter()
            .map(|n| {
                let b = self.create(&n, &opts);
                (n, b)
            })
            .collect()
    }
}
