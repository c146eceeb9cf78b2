//! DP sum, mean, variance and quantiles of one bounded numeric column, end to end, for the
//! CLI and the library alike: the public query ([`SummaryQuery`]), the seeded-noise label,
//! the release ([`SummaryReport`]) and, apart, the exact values (NOT PRIVATE diagnostics).
//!
//! Every value is clamped to the declared public bounds `[lo, hi]` first, which is what
//! bounds the sensitivity. Sums, means and variances are computed in exact integer
//! arithmetic on a public power-of-two grid and noised by the exact discrete Laplace
//! sampler ([`moments`]); quantiles are chosen among public candidates by permute-and-flip
//! with exact Bernoulli draws ([`quantile`]). No floating-point number enters a draw.
//!
//! | statistic | bounded (n public) | unbounded (n private) |
//! |---|---|---|
//! | sum | `sum + L(hi - lo)` (n lo is public) | `sum + L(max(|lo|, |hi|))` |
//! | mean | `(sum + L(hi - lo)) / n` | centred sum and count, eps/2 each |
//! | variance | sum of squared deviations, sensitivity `(hi - lo)^2 (n - 1) / n` | count, centred sum and sum of squares, eps/3 each |
//! | quantiles | permute-and-flip, score sensitivity 1 | score sensitivity `max(q, 1 - q)` |

pub mod moments;
pub mod quantile;
mod release;
mod spec;

pub use release::{ExactSummary, SumParts, SummaryReport, SummarySums};
pub use spec::{Estimate, Part, Statistic, SummaryQuery};

#[cfg(test)]
mod tests;
