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
# The library tests probe the GPU themselves (the `kinsey` binary silences Mesa's device-select
# layer on its own); give Mesa a runtime directory so they print nothing alarming.
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"

cargo fmt --all -- --check
# The subcommand and decayed-sum modules are declared by macros (one registration line each), which
# `cargo fmt` does not follow: check them by name.
rustfmt --edition 2024 --check engine/cli/src/commands/*.rs engine/stats/src/decay/*.rs
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace
