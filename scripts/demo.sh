#!/usr/bin/env bash
# The main job on built-in synthetic data, from a fresh Debian machine with only the Rust
# toolchain: installs m4 if it is missing (GMP's build, under the Paillier backend, needs
# it; nothing else is), builds kinsey in release mode and runs `kinsey demo` with any
# arguments given (e.g. `--out DIR`, `--device cpu`). It replaces an earlier demo's results
# (`--overwrite`), so it can be run again.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v m4 >/dev/null; then
  echo "installing m4 (the bundled GMP's build needs it)"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq m4 >/dev/null
fi
# Build quietly (cargo's progress lines name crates such as `thiserror`, and a successful
# run should print no line that says "error"); say what is happening instead.
echo "building kinsey in release mode (about 15-20 minutes on 2 cores the first time)..."
cargo build --release --quiet -p kinsey-cli --bin kinsey
target_dir="${CARGO_TARGET_DIR:-target}"
exec "$target_dir/release/kinsey" demo --overwrite "$@"
