//! Which implementation a kernel uses: `auto`, `cpu` or `gpu`, as users write it.

use crate::error::KernelError;

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

/// Without the `gpu` feature every kernel is its CPU twin: `gpu` is refused, `auto` and
/// `cpu` take the CPU.
#[cfg(not(feature = "gpu"))]
pub(crate) fn cpu_only(pref: DevicePref) -> Result<(), KernelError> {
    match pref {
        DevicePref::Gpu => Err(KernelError::NotBuilt),
        DevicePref::Auto | DevicePref::Cpu => Ok(()),
    }
}

impl std::fmt::Display for DevicePref {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for DevicePref {
    type Err = KernelError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(Self::Auto),
            "cpu" => Ok(Self::Cpu),
            "gpu" => Ok(Self::Gpu),
            other => Err(KernelError::UnknownDevice(other.to_string())),
        }
    }
}
