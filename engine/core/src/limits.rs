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
}
