//! Which program runs an operation: the fused entry points of `shaders/montgomery.wgsl`
//! (one invocation per whole operation, working values in private memory) or the
//! micro-operation programs of [`super::steps`]. Decided here and nowhere else, from what
//! the adapter reports and public sizes only: a hardware adapter always runs the fused
//! program; a software rasteriser (`DeviceType::Cpu`: lavapipe) runs it only when the whole
//! operation stays under llvmpipe's loop budget, which [`loop_iterations`] counts the way
//! the shader loops.

use super::steps::LOOP_BUDGET;

/// An operation of the kernel, with the public sizes its cost depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `a b mod m`.
    Mul,
    /// A fixed-base power of `windows` 4-bit windows times a factor.
    FixedPow {
        /// Windows of the table.
        windows: usize,
    },
    /// A variable-base power of `windows` windows; `wide`: the base is reduced first.
    Pow {
        /// Bases of two moduli' words.
        wide: bool,
        /// Exponent windows (8 per word).
        windows: usize,
    },
}

/// The two programs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One invocation per operation (`fused_mul`, `fused_fixed_pow`, `fused_pow`).
    Fused,
    /// One dispatch per micro-operation (`step`), for software rasterisers.
    Steps,
    /// 32-bit limbs with 64-bit products (`limbs_mul`, `limbs_fixed_pow`: the generated
    /// shader of [`super::limbs`]), on adapters with `SHADER_INT64`.
    Limbs,
}

/// What `KINSEY_GPU_MONTGOMERY` asks for, read once: a program (`fused`, `steps` or
/// `limbs`), or `legacy`, the 16-bit programs' own choice (the default before the limbs
/// program: the A side of an A/B run). Unset (or any other value, with a warning) leaves
/// the choice to [`shape`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Forced {
    Program(Shape),
    Legacy,
}

fn forced() -> Option<Forced> {
    static FORCED: std::sync::OnceLock<Option<Forced>> = std::sync::OnceLock::new();
    *FORCED.get_or_init(|| match std::env::var("KINSEY_GPU_MONTGOMERY").as_deref() {
        Ok("fused") => Some(Forced::Program(Shape::Fused)),
        Ok("steps") => Some(Forced::Program(Shape::Steps)),
        Ok("limbs") => Some(Forced::Program(Shape::Limbs)),
        Ok("legacy") => Some(Forced::Legacy),
        // Products on the cooperative program (`coop_products`), powers on the limbs
        // program: an A/B against `limbs` that differs in the products only.
        Ok("coop") => Some(Forced::Program(Shape::Limbs)),
        Ok(other) => {
            tracing::warn!(
                "KINSEY_GPU_MONTGOMERY = '{other}' ignored (fused, steps, limbs, coop or legacy)"
            );
            None
        }
        Err(_) => None,
    })
}

/// Whether `KINSEY_GPU_MONTGOMERY=coop` sends products to the cooperative program
/// (`coop.rs`: one product over 16 lanes), on devices with 64-bit integers: an A/B against
/// the limbs program, not a default until a GPU has measured it.
pub(crate) fn coop_products() -> bool {
    static COOP: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *COOP.get_or_init(|| std::env::var("KINSEY_GPU_MONTGOMERY").is_ok_and(|v| v == "coop"))
}

/// Largest moduli (in 32-bit words) a software rasteriser runs on the limbs program: its
/// unrolled shader takes llvmpipe's JIT about W^2 / 170 ms per entry point (measured on 2
/// cores: 20 s for a power at 64 words, 99 s at 128), so lavapipe keeps the 16-bit
/// programs above p^2 of a 2048-bit key (`limbs` tests run 128 words there explicitly).
pub(crate) const SOFTWARE_LIMBS: usize = 64;

/// The program for `kind` at moduli of `words` words on an adapter that is (`software`)
/// or is not a software rasteriser and has (`int64`) or lacks 64-bit integers, unless
/// `KINSEY_GPU_MONTGOMERY` forces one (steps always fit; fused on a software rasteriser only
/// within its loop budget; limbs only with `int64`, and on a software rasteriser up to
/// [`SOFTWARE_LIMBS`] words).
///
/// Every operation runs on the `limbs` program wherever the adapter has
/// 64-bit integers (a quarter of the 16-bit programs' limb products, a third of their
/// private memory; proven on lavapipe, to be measured against `fused` on hardware with
/// `KINSEY_GPU_MONTGOMERY`). Otherwise, on hardware, products and fixed-base powers run
/// fused and variable-base powers run as steps: on an NVIDIA H100 (driver 580.159,
/// Vulkan) `fused_pow` lost the device ("driver implementation is at fault") at 64 words
/// already, while `fused_mul` and `fused_fixed_pow` matched the CPU twin at 8 to 256 words
/// and the steps matched it everywhere (BENCHMARKS.md, GPU runs of 2026-11-26).
pub(crate) fn shape(software: bool, int64: bool, words: usize, kind: Kind) -> Shape {
    let fits = !software || loop_iterations(words, kind) <= LOOP_BUDGET;
    let limbs = int64 && (!software || words <= SOFTWARE_LIMBS);
    match forced() {
        Some(Forced::Program(Shape::Steps)) => return Shape::Steps,
        Some(Forced::Program(Shape::Fused)) if fits => return Shape::Fused,
        // Forced, the limbs program runs at any size the device has 64-bit integers for.
        Some(Forced::Program(Shape::Limbs)) if int64 => return Shape::Limbs,
        None if limbs => return Shape::Limbs,
        _ => {}
    }
    legacy(software, fits, kind)
}

/// The 16-bit programs' choice: variable-base powers as steps on hardware, the fused
/// program where it fits, steps otherwise.
fn legacy(software: bool, fits: bool, kind: Kind) -> Shape {
    if !software && matches!(kind, Kind::Pow { .. }) {
        Shape::Steps
    } else if fits {
        Shape::Fused
    } else {
        Shape::Steps
    }
}

/// Loop iterations (every iteration of every loop, inner and outer) of one invocation of
/// the fused program, counted as the shader's loops run.
pub(crate) fn loop_iterations(words: usize, kind: Kind) -> usize {
    let dig = 2 * words;
    // f_montmul: zero T (dig + 1), dig outer steps of dig - 1 inner, f_end (2 dig).
    let mm = (dig + 1) + dig * dig + 2 * dig;
    let copy = dig;
    match kind {
        Kind::Mul => words + mm + copy + copy + mm + words,
        Kind::FixedPow { windows } => {
            words + windows * (1 + words * 17 + mm + copy) + words + mm + words
        }
        Kind::Pow { wide, windows } => {
            let redc = dig + dig * dig + 2 * dig;
            let reduce = if wide {
                words + redc + copy + copy + mm + copy
            } else {
                0
            };
            let square = copy + mm + copy;
            let table = copy + mm + copy + copy + copy + mm + copy + 16 * (1 + copy) + 15 * mm;
            let window = 1 + 4 * square + dig * 17 + mm + copy;
            words + reduce + table + copy + windows * window + copy + mm + words
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hardware fuses products and fixed-base powers and runs variable-base powers as
    /// steps; lavapipe fuses small moduli (256 and 512 bits: what the twin tests run fused
    /// there) and runs steps for Paillier's sizes.
    #[test]
    fn the_program_follows_the_adapter_and_the_size() {
        let pow = Kind::Pow {
            wide: true,
            windows: 256,
        };
        for kind in [Kind::Mul, Kind::FixedPow { windows: 256 }, pow] {
            let hardware = if kind == pow {
                Shape::Steps
            } else {
                Shape::Fused
            };
            assert_eq!(shape(false, false, 256, kind), hardware, "{kind:?}");
            assert_eq!(shape(false, false, 8, kind), hardware, "{kind:?}");
            assert_eq!(shape(true, false, 128, kind), Shape::Steps, "{kind:?}");
        }
        // p^2 of a 2048-bit key: a product fits lavapipe's budget, a power does not.
        assert_eq!(shape(true, false, 64, Kind::Mul), Shape::Fused);
        assert_eq!(
            shape(true, false, 64, Kind::FixedPow { windows: 8 }),
            Shape::Steps
        );
        assert_eq!(shape(true, false, 8, Kind::Mul), Shape::Fused);
        assert_eq!(shape(true, false, 16, Kind::Mul), Shape::Fused);
        assert_eq!(
            shape(true, false, 16, Kind::FixedPow { windows: 16 }),
            Shape::Fused
        );
        let pow8 = Kind::Pow {
            wide: true,
            windows: 8,
        };
        assert_eq!(shape(true, false, 8, pow8), Shape::Fused);
        assert_eq!(shape(true, false, 16, pow8), Shape::Steps);
        // With 64-bit integers every operation takes the limbs program, on hardware and on
        // lavapipe alike, up to p^2 of a 2048-bit key there (JIT time).
        for software in [false, true] {
            assert_eq!(shape(software, true, 64, Kind::Mul), Shape::Limbs);
            let fixed = Kind::FixedPow { windows: 112 };
            assert_eq!(shape(software, true, 64, fixed), Shape::Limbs);
            assert_eq!(shape(software, true, 64, pow8), Shape::Limbs);
        }
        assert_eq!(shape(false, true, 256, Kind::Mul), Shape::Limbs);
        assert_eq!(shape(true, true, 128, Kind::Mul), Shape::Steps);
    }
}
