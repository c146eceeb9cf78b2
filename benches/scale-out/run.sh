#!/usr/bin/env bash
# The scale-out prototype of docs/scale-out.md: one pass of kinsey's solver over one
# party's Parquet file three ways (a DataFusion aggregate function; kinsey's block reader;
# kinsey's spill), median of three each, as JSON lines. Builds DataFusion (minutes, once).
#   benches/scale-out/run.sh FILE.parquet [SPILL_DIR]
# A file: kinsey generate --parties 1 --rows 2000000 --dim 123 --out DIR
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
file="${1:?usage: run.sh FILE.parquet [SPILL_DIR]}"
spill="${2:-$(dirname "$file")}"
cargo build --release -q --manifest-path "$here/Cargo.toml"
"$here/target/release/kinsey-scale-out-prototype" "$file" "$spill"
