//! Limits on sizes that come from input, checked before anything is allocated. Every limit
//! of the engine is listed in `docs/limits.md` with the input it bounds and why.

use crate::{Error, Result};

/// Most features (the dimension `d`) of any dataset: a dense row of `2^20` f32 is 4 MiB.
pub const MAX_DIM: usize = 1 << 20;

/// Most bytes of dense features (`rows x d x 4`) one command may hold in memory: 8 GiB.
pub const MAX_DENSE_BYTES: u64 = 8 << 30;

/// Check a dimension given by the user (`name` names the flag or field).
pub fn check_dim(name: &str, d: usize) -> Result<()> {
    if !(1..=MAX_DIM).contains(&d) {
        return Err(Error::param(
            name,
            format!("the dimension must be 1 to {MAX_DIM} (2^20), got {d}"),
        ));
    }
    Ok(())
}

/// Check that `rows` dense rows of dimension `d` fit [`MAX_DENSE_BYTES`] before they are
/// allocated; `what` names the input (a flag, or a file and line).
pub fn check_dense(what: &str, rows: usize, d: usize) -> Result<()> {
    let bytes = (rows as u128)
        .checked_mul(d as u128)
        .and_then(|b| b.checked_mul(4))
        .unwrap_or(u128::MAX);
    if bytes > u128::from(MAX_DENSE_BYTES) {
        return Err(Error::param(
            what,
            format!(
                "{rows} rows x {d} features need {:.1} GiB of memory; the limit is {} GiB",
                bytes as f64 / f64::from(1u32 << 30),
                MAX_DENSE_BYTES >> 30
            ),
        ));
    }
    Ok(())
}

/// A clap parser for a dimension flag: a number in `1..=MAX_DIM`.
pub fn parse_dim(s: &str) -> std::result::Result<usize, String> {
    let d: usize = s
        .parse()
        .map_err(|_| format!("'{s}' is not a whole number of features"))?;
    if !(1..=MAX_DIM).contains(&d) {
        return Err(format!(
            "the dimension must be 1 to {MAX_DIM} (2^20), got {d}"
        ));
    }
    Ok(d)
}

/// A clap parser for a byte count: a number with an optional unit, `B`, `KiB`, `MiB`,
/// `GiB`, `TiB` (powers of 1024; `K`, `M`, `G`, `T` too) or `KB`, `MB`, `GB`, `TB` (powers of
/// 1000): `512MiB`, `1.5GiB`, `2000000000`.
pub fn parse_bytes(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a size (examples: 512MiB, 4GiB, 2000000000)"))?;
    let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" => 1024.0,
        "m" | "mib" => 1024.0 * 1024.0,
        "g" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        u => {
            return Err(format!(
                "unknown unit '{u}' in '{s}' (B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)"
            ));
        }
    };
    let bytes = v * scale;
    if !(bytes.is_finite() && bytes >= 1.0 && bytes < 2f64.powi(63)) {
        return Err(format!("'{s}' is not a size between 1 byte and 8 EiB"));
    }
    Ok(bytes as u64)
}

/// This machine's memory in bytes (Linux: `MemTotal` of `/proc/meminfo`), if known.
pub fn machine_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The memory a run may use unless told otherwise: half this machine's, or 8 GiB where
/// it cannot be read (`train`'s and `sulq kmeans`'s `--memory-limit` default).
pub fn default_memory_limit() -> u64 {
    machine_memory().map_or(8 << 30, |m| m / 2)
}

/// Bytes as the user reads them: `512 MiB`, `1.50 GiB`.
pub fn show_bytes(b: u64) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    let mib = b as f64 / MIB;
    if mib >= 1024.0 {
        format!("{:.2} GiB", mib / 1024.0)
    } else {
        format!("{mib:.0} MiB")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_refuse_what_would_not_fit_and_accept_what_would() {
        assert!(check_dim("dim", 0).is_err());
        assert!(check_dim("dim", MAX_DIM + 1).is_err());
        assert!(check_dim("dim", 123).is_ok());
        assert!(parse_dim("1e8").is_err());
        assert!(parse_dim("18446744073709551615").is_err());
        assert_eq!(parse_dim("20"), Ok(20));
        // 2^20 features: 4 MiB a row; 2,048 rows fit in 8 GiB, 3,000 (11.7 GiB) do not.
        assert!(check_dense("rows", 2048, MAX_DIM).is_ok());
        let e = check_dense("rows", 3000, MAX_DIM).expect_err("too big");
        assert!(e.to_string().contains("GiB"), "{e}");
        assert!(check_dense("rows", usize::MAX, usize::MAX).is_err());
    }

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_bytes("512MiB"), Ok(512 << 20));
        assert_eq!(parse_bytes("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_bytes("2GB"), Ok(2_000_000_000));
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes(" 8 g "), Ok(8 << 30));
        for bad in ["", "MiB", "-1MiB", "0", "1.2.3G", "5 parsecs", "1e30TiB"] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
        assert_eq!(show_bytes(512 << 20), "512 MiB");
        assert_eq!(show_bytes(3 << 29), "1.50 GiB");
    }
}
