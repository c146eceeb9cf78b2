//! A device's 64-bit floats checked against the CPU's IEEE arithmetic before the window
//! kernel trusts them. WGSL says little about `f64`: a device may flush subnormal values to
//! zero (Vulkan's float controls let a driver do so), and the shader's own rounding works
//! around a driver whose builtin fails past 2^24 (lavapipe). The GPU path promises the CPU
//! twin's bits, so [`GpuWindow::new`](super::gpu::GpuWindow::new) runs both twins on the
//! inputs here and refuses a device that differs on any of them: the decayed sums then keep
//! their sums on the CPU and say why.
//!
//! The inputs: windows and running sums on random values (any other rounding or a fused
//! multiply-add shows), rounding at its edges (ties, 2^24, 2^52), and chunks whose nodes,
//! releases and sums are subnormal (a grid of `2^-1023`, weights below `2^-1022`), so that a
//! device flushing either its inputs or its results gives other bits (a test checks that the
//! expected outputs hold subnormal values).

use super::running::RunningChunk;
use super::spec::WindowChunk;

/// A xorshift stream (the probe's values are fixed: the same probe on every run; the
/// kernel's tests use it too).
pub(super) fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// One window case: the chunk's fields, owned.
#[derive(Debug, Clone)]
pub(super) struct WindowCase {
    pub(super) what: &'static str,
    h: u32,
    w: u64,
    gamma: f64,
    xs: Vec<f64>,
    z: Vec<i64>,
}

impl WindowCase {
    /// The chunk (from step 0, every output).
    pub(super) fn chunk(&self) -> WindowChunk<'_> {
        WindowChunk {
            h: self.h,
            w: self.w,
            gamma: self.gamma,
            from: 0,
            out_from: self.w - 1,
            xs: &self.xs,
            z: &self.z,
        }
    }
}

/// One running case: the chunk's fields, its draws and its segments' start pairs.
#[derive(Debug, Clone)]
pub(super) struct RunningCase {
    pub(super) what: &'static str,
    l: u32,
    h: u32,
    gamma: f64,
    pow: Vec<f64>,
    from: u64,
    xs: Vec<f64>,
    pub(super) z: Vec<i64>,
    pub(super) starts: Vec<[f64; 2]>,
}

impl RunningCase {
    /// The chunk.
    pub(super) fn chunk(&self) -> RunningChunk<'_> {
        RunningChunk {
            l: self.l,
            h: self.h,
            gamma: self.gamma,
            pow: &self.pow,
            from: self.from,
            xs: &self.xs,
        }
    }
}

/// The smallest positive subnormal times `k`.
fn sub(k: u64) -> f64 {
    f64::from_bits(k)
}

/// The window cases.
pub(super) fn window_cases() -> Vec<WindowCase> {
    let mut next = xorshift(0x05ee_d0ff_10a7);
    let nodes = |len: usize, h: u32| (0..=h).map(|k| len >> k).sum::<usize>();
    let xs: Vec<f64> = (0..96).map(|_| (next() >> 40) as f64 / 7.0).collect();
    let z = (0..nodes(96, 3)).map(|_| (next() as i64) >> 22).collect();
    let random = WindowCase {
        what: "window sums of random values",
        h: 3,
        w: 5,
        gamma: 2f64.powi(-5),
        xs,
        z,
    };
    let two = |e: i32| 2f64.powi(e);
    let xs = vec![
        0.5,
        1.5,
        2.5,
        -2.5,
        0.499_999_999_999_999_94,
        two(24) + 0.5,
        two(24) - 0.5,
        two(32) + 0.5,
        two(52) - 0.5,
        two(52),
        two(53) + 2.0,
        1e300,
        -0.0,
        7.0 / 3.0,
    ];
    let rounding = WindowCase {
        what: "rounding at its edges",
        h: 0,
        w: 1,
        gamma: 1.0,
        z: vec![0; xs.len()],
        xs,
    };
    // Grid 2^-1023 (itself subnormal; its inverse 2^1023 is finite): subnormal values
    // (v / gamma below 2), their sums at level 1, and draws that put every release at one
    // or two grid steps, so that every window of two steps sums to +-2^-1023: subnormal
    // values, nodes and outputs. (Leaf `t` completes as draw `t + t/2`, its pair's node
    // right after it when `t` is odd.)
    let (gamma, inv) = (two(-1023), two(1023));
    let xs: Vec<f64> = (0..32u64)
        .map(|i| sub((i * 0x3_1415_9265_3589) % (1 << 52)))
        .collect();
    let mut z = vec![0i64; nodes(32, 1)];
    for t in 0..32 {
        let id = t + t / 2;
        z[id] = [2, -1][t % 2] - (xs[t] * inv).round() as i64;
        if t % 2 == 1 {
            let pair = (xs[t - 1] + xs[t]) * inv;
            z[id + 1] = [1, -1][t / 2 % 2] - pair.round() as i64;
        }
    }
    let subnormal = WindowCase {
        what: "subnormal nodes and sums",
        h: 1,
        w: 2,
        gamma,
        xs,
        z,
    };
    vec![random, rounding, subnormal]
}

/// The running and exponential cases.
pub(super) fn running_cases() -> Vec<RunningCase> {
    let mut next = xorshift(0x0dd_ba11_cafe);
    let mut random = |what, l: u32, h: u32, alpha: f64, from: u64, segs: usize| {
        let pow: Vec<f64> = (0..=h).map(|k| alpha.powf(2f64.powi(k as i32))).collect();
        let xs: Vec<f64> = (0..segs << l)
            .map(|_| (next() >> 40) as f64 / 7.0 - 1e5)
            .collect();
        let mut case = RunningCase {
            what,
            l,
            h,
            gamma: 2f64.powi(-5),
            pow,
            from,
            xs,
            z: Vec::new(),
            starts: (0..segs)
                .map(|_| [(next() >> 30) as f64 / 3.0, (next() >> 30) as f64 / 5.0])
                .collect(),
        };
        case.z = (0..case.chunk().draws())
            .map(|_| (next() as i64) >> 22)
            .collect();
        case
    };
    let running = random("running sums of random values", 3, 9, 1.0, 8 * 5, 3);
    let exponential = random("exponential sums of random values", 3, 9, 0.999, 8 * 5, 3);
    // Weights below 2^-1022 at level 0 and products of subnormals: level-1 nodes `w x + y`
    // with both terms subnormal, level-2 nodes and sums `acc * 0.75 + 0`, subnormal too.
    // No noise (draws 0): the releases are the values on the grid 2^-1000.
    let xs: Vec<f64> = (0..16)
        .map(|i| {
            if i % 2 == 0 {
                1.5 + i as f64
            } else {
                sub(0x000f_0000_0000_0000 >> (i % 7))
            }
        })
        .collect();
    let pow = vec![sub(3 << 40), 0.75, 2f64.powi(-600), 2f64.powi(-700), 0.5];
    let mut subnormal = RunningCase {
        what: "subnormal weights, nodes and sums",
        l: 2,
        h: 4,
        gamma: 2f64.powi(-1000),
        pow,
        from: 0,
        xs,
        z: Vec::new(),
        starts: (0..4)
            .map(|s| {
                [
                    sub(0x0008_0000_0000_0000 + s),
                    sub(0x0000_1234_0000_0000 << s),
                ]
            })
            .collect(),
    };
    subnormal.z = vec![0; subnormal.chunk().draws()];
    vec![running, exponential, subnormal]
}

/// `Err` naming the case and the first step where `got` differs from `want` in its bits.
pub(super) fn same_bits(what: &str, got: &[f64], want: &[f64]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{what}: {} values, the CPU {}",
            got.len(),
            want.len()
        ));
    }
    match (0..got.len()).find(|&i| got[i].to_bits() != want[i].to_bits()) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what}: value {i} is {:e} on the device, {:e} on the CPU",
            got[i], want[i]
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::window::cpu::window_sums;
    use crate::window::running::{running_levels, running_sums};

    /// Every case is a valid chunk, and the subnormal cases' CPU outputs hold subnormal
    /// values (a device flushing results to zero cannot give them) and differ from the
    /// same outputs flushed; `same_bits` reports such a device.
    #[test]
    fn the_probe_would_catch_a_device_that_flushes_subnormals() {
        let flush = |v: &[f64]| -> Vec<f64> {
            v.iter()
                .map(|&x| {
                    if x.is_subnormal() {
                        0.0 * x.signum()
                    } else {
                        x
                    }
                })
                .collect()
        };
        let subnormals = |v: &[f64]| v.iter().filter(|x| x.is_subnormal()).count();
        for case in window_cases() {
            let want = window_sums(&case.chunk()).expect("a valid chunk");
            if case.what.starts_with("subnormal") {
                assert!(subnormals(&want) > 4, "{}: {want:?}", case.what);
                let e = same_bits(case.what, &flush(&want), &want).expect_err("flushed");
                assert!(e.contains("on the device") && e.contains(case.what), "{e}");
            }
            assert!(same_bits(case.what, &want, &want).is_ok());
        }
        for case in running_cases() {
            let c = case.chunk();
            let (tops, rel) = running_levels(&c, &case.z).expect("a valid chunk");
            let sums = running_sums(&c, &rel, &case.starts).expect("valid starts");
            if case.what.starts_with("subnormal") {
                assert!(subnormals(&tops.tops) > 1, "{}: {:?}", case.what, tops.tops);
                assert!(subnormals(&sums) > 2, "{}: {sums:?}", case.what);
                assert!(same_bits(case.what, &flush(&sums), &sums).is_err());
                assert!(same_bits(case.what, &flush(&tops.tops), &tops.tops).is_err());
            }
        }
    }
}
