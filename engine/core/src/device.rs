//! Where heavy work runs, as users write it: `auto`, `cpu` or `gpu`. One type for every
//! layer (kernels, crypto backends, the facade, the CLI), parsed in one place.

/// Which implementation to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DevicePref {
    /// A GPU adapter if one exists, else the CPU.
    #[default]
    Auto,
    /// The CPU path.
    Cpu,
    /// A GPU (fails without an adapter).
    Gpu,
}

impl DevicePref {
    /// The name users write (`auto`, `cpu`, `gpu`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Cpu => "cpu",
            Self::Gpu => "gpu",
        }
    }
}

impl std::fmt::Display for DevicePref {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A device name that is not `auto`, `cpu` or `gpu`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown device '{0}' (expected auto, cpu or gpu)")]
pub struct UnknownDevice(pub String);

impl std::str::FromStr for DevicePref {
    type Err = UnknownDevice;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(Self::Auto),
            "cpu" => Ok(Self::Cpu),
            "gpu" => Ok(Self::Gpu),
            other => Err(UnknownDevice(other.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_others_are_refused() {
        for d in [DevicePref::Auto, DevicePref::Cpu, DevicePref::Gpu] {
            assert_eq!(d.as_str().parse::<DevicePref>(), Ok(d));
        }
        let e = "tpu".parse::<DevicePref>().expect_err("unknown");
        assert!(e.to_string().contains("'tpu'"), "{e}");
    }
}
