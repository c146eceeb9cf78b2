#!/usr/bin/env bash
# Install what is missing on a fresh Debian machine, then run every check CI runs:
# rustfmt, clippy (-D warnings) and all tests, including the GPU-vs-CPU kernel test on
# Mesa's lavapipe (a Vulkan driver on the CPU) and the a9a tests on ../shared/data.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v m4 >/dev/null || need+=(m4)
[ -e /usr/share/vulkan/icd.d/lvp_icd.x86_64.json ] || ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1 || need+=(mesa-vulkan-drivers)
ldconfig -p | grep -q 'libvulkan.so.1' || need+=(libvulkan1)
[ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need+=(fonts-dejavu-core)
# The Python package's tests: an interpreter (3.10 or later) with venv.
command -v python3 >/dev/null || need+=(python3)
python3 -c 'import ensurepip, venv' 2>/dev/null || need+=(python3-venv)
# kinsey.spark's tests run a real Spark (local mode and a standalone cluster): Java 17.
java -version 2>&1 | grep -q 'version "\(1[7-9]\|2[0-9]\)' || need+=(openjdk-17-jre-headless)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}"
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true

# The shared data must be there: a missing data set is a failure, not a skip.
data="${KINSEY_SHARED_DATA:-../shared/data}"
for f in a9a/a9a a9a/a9a.t; do
  [ -f "$data/$f" ] || { echo "missing $data/$f (the a9a tests need ../shared/data)"; exit 1; }
done

# The GPU tests must run on a Vulkan adapter: lavapipe here, a real GPU where there is one.
export WGPU_BACKEND="${WGPU_BACKEND:-vulkan}"
export KINSEY_NO_PROGRESS=1
# CI's fuzzing budget: cases per decoder harness (RELIABILITY.md has the long runs).
export KINSEY_FUZZ_CASES="${KINSEY_FUZZ_CASES:-256}"
# The library tests probe the GPU themselves (the `kinsey` binary silences Mesa's device-select
# layer on its own); give Mesa a runtime directory so they print nothing alarming.
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"

cargo fmt --all -- --check
# The subcommand and decayed-sum modules are declared by macros (one registration line each), which
# `cargo fmt` does not follow: check them by name.
rustfmt --edition 2024 --check engine/cli/src/commands/*.rs engine/decay/src/*.rs
# Clippy runs inside the test build: clippy-driver is the compiler of the workspace's own
# crates (RUSTC_WORKSPACE_WRAPPER, what `cargo clippy` sets too), with the lints and
# `-D warnings` of `cargo clippy --workspace --all-targets -- -D warnings`, so the
# dependencies (tfhe, arrow, wgpu, ...) compile once instead of once to check and once to
# test (docs/benchmarks-history.md, "CI"). CLIPPY_ARGS is clippy-driver's own way of receiving
# `-- -D warnings`; a probe crate with a lint in it must fail to build, or the gate is off.
driver="$(dirname "$(rustup which cargo 2>/dev/null || command -v cargo)")/clippy-driver"
[ -x "$driver" ] || driver="$(command -v clippy-driver || true)"
if [ -n "$driver" ] && [ -x "$driver" ]; then
  export RUSTC_WORKSPACE_WRAPPER="$driver"
  export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
  probe="$(mktemp -d)"
  mkdir -p "$probe/src"
  printf '[package]\nname = "lint-probe"\nversion = "0.0.0"\nedition = "2024"\n[workspace]\n' >"$probe/Cargo.toml"
  printf 'fn main() {\n    let x: u32 = 1;\n    let y = x.clone();\n    println!("{y}");\n}\n' >"$probe/src/main.rs"
  if out="$(cargo build -q --manifest-path "$probe/Cargo.toml" --target-dir "$probe/target" 2>&1)" \
    || ! grep -q "clone_on_copy\|clone-on-copy" <<<"$out"; then
    echo "clippy-driver did not turn a lint into an error: the clippy gate would be off"; exit 1
  fi
  rm -rf "$probe"
  cargo test --workspace --all-targets --no-run
else
  cargo clippy --workspace --all-targets -- -D warnings
fi
cargo test --workspace

# The bottom depends on nothing above it: kinsey-core and kinsey-dp (the samplers) build no
# GPU stack, no Arrow/Parquet, no GMP and no TFHE; the kernels compile (and pass clippy)
# without their `gpu` feature, which is what kinsey-dp builds.
# The facade without its default features is the samplers alone, the same promise.
for c in kinsey-core kinsey-dp "kinsey --no-default-features"; do
  # shellcheck disable=SC2086 # $c is a package and its flags
  if cargo tree -q -p $c -e normal --prefix none | grep -E '^(wgpu|arrow|parquet|rug|tfhe)[ -]'; then
    echo "$c depends on the crates above"; exit 1
  fi
done
# In the test profile, so the dependencies built by the test build above are reused.
cargo check -q --profile test -p kinsey-dp -p kinsey-kernels -p kinsey --no-default-features --all-targets
# The facade's features build on their own: the classifier with no crypto backend but the
# mock (the protocol without Paillier or TFHE).
cargo check -q --profile test -p kinsey --no-default-features --features classifier

# The library's docs build without a warning (broken intra-doc links are errors), and every
# example of examples/ runs. Both in the test profile with the whole workspace's features:
# `cargo run -p kinsey` alone would resolve features for the facade only and rebuild tfhe.
RUSTDOCFLAGS="-D warnings" cargo doc -q --profile test -p kinsey --no-deps
cargo build -q --profile test --workspace --examples --lib
for e in secure_training decayed_sum_csv dp_histogram backend_and_device; do
  if ! out="$("${CARGO_TARGET_DIR:-target}/debug/examples/$e" 2>&1)"; then
    echo "example $e failed:"; echo "$out"; exit 1
  fi
  echo "example $e: $(tail -n 1 <<<"$out")"
done

# The Python package (python/): its extension module is the cdylib the workspace build
# above just made (kinsey-python is a workspace member), so CI builds no second wheel;
# pytest runs the API on the shared data against the CLI, and the example runs as written.
# `pip install ./python` (a release build of the same crate) is what users run.
venv="${KINSEY_TEST_VENV:-target/python-venv}"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check numpy pyarrow pytest polars pandas scikit-learn matplotlib "pyspark>=4.0,<5"
cp "${CARGO_TARGET_DIR:-target}/debug/lib_kinsey.so" python/kinsey/_kinsey.abi3.so
KINSEY_BIN="${CARGO_TARGET_DIR:-target}/debug/kinsey" KINSEY_SHARED_DATA="$data" PYTHONPATH=python \
  "$venv/bin/python" -m pytest -q python/tests
if ! out="$(PYTHONPATH=python "$venv/bin/python" python/examples/quickstart.py "$data" 2>&1)"; then
  echo "python/examples/quickstart.py failed:"; echo "$out"; exit 1
fi
echo "python/examples/quickstart.py: $(grep 'test accuracy' <<<"$out")"
if ! out="$(PYTHONPATH=python "$venv/bin/python" python/examples/sklearn_pipeline.py "$data" 2>&1)"; then
  echo "python/examples/sklearn_pipeline.py failed:"; echo "$out"; exit 1
fi
echo "python/examples/sklearn_pipeline.py: $(grep 'test accuracy' <<<"$out")"
if ! out="$(PYTHONPATH=python "$venv/bin/python" python/examples/spark_train.py "$data" 2>&1)"; then
  echo "python/examples/spark_train.py failed:"; echo "$out"; exit 1
fi
grep -q 'the same model as on one machine: True' <<<"$out" || { echo "$out"; exit 1; }
echo "python/examples/spark_train.py: $(grep 'the same model' <<<"$out")"

# The GPU figures script (benches/gpu-figures.sh) at its quick sizes on lavapipe, with the
# test build of kinsey (unoptimised, so its step limits are tripled): every step must give
# its figures, or the script a GPU machine runs would come back empty.
figures="$(mktemp -d)"
if ! KINSEY="${CARGO_TARGET_DIR:-target}/debug/kinsey" OUT="$figures" KINSEY_FIGURES_LIMIT_SCALE=3 \
  benches/gpu-figures.sh --quick >"$figures/run.log" 2>&1; then
  tail -n 40 "$figures/run.log"; exit 1
fi
if grep -q "Steps without figures" "$figures/figures.md" || ! grep -q "| decay-gpu-window |" "$figures/figures.md"; then
  cat "$figures/figures.md"; exit 1
fi
echo "benches/gpu-figures.sh --quick: $(wc -l <"$figures/figures.jsonl") figures"
rm -rf "$figures"
