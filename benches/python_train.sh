#!/usr/bin/env bash
# Training through Python against the CLI on the same Parquet parties: wall time and peak
# memory (max RSS) of `kinsey train` and of `kinsey.train` given the Parquet paths, streamed
# Parquet batches (pyarrow RecordBatchReaders) and tables read whole first, in turn.
#
#   benches/python_train.sh [ROWS (all parties together)] [PARTIES] [DIM] [ROUNDS]
#
# KINSEY: the CLI (default target/release/kinsey); PYTHON: an interpreter where
# `import kinsey` works (e.g. after `pip install ./python`; default python3).
set -euo pipefail
rows=${1:-5000000} k=${2:-5} dim=${3:-123} rounds=${4:-3}
K=${KINSEY:-target/release/kinsey}
PY=${PYTHON:-python3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$K" generate --parties "$k" --rows "$rows" --dim "$dim" --out "$dir/parties" > /dev/null
files=$(ls "$dir"/parties/party-*.parquet | sed 's/.*/"&"/' | paste -sd, -)
cat > "$dir/train.toml" <<TOML
[data]
parties = [$files]
label = "label"
[privacy]
epsilon = 1.0
seed = 1
[output]
dir = "$dir/cli-out"
TOML
cat > "$dir/train.py" <<'PY'
import glob, sys
import pyarrow as pa, pyarrow.parquet as pq
import kinsey
mode, d = sys.argv[1], sys.argv[2]
files = sorted(glob.glob(f"{d}/parties/party-*.parquet"))
if mode == "paths":
    parties = files
elif mode == "stream":
    def reader(f):
        pf = pq.ParquetFile(f)
        return pa.RecordBatchReader.from_batches(pf.schema_arrow, pf.iter_batches(65536))
    parties = [reader(f) for f in files]
else:
    parties = [pq.read_table(f) for f in files]
import os
out = f"{d}/py-{mode}.json"
if os.path.exists(out):
    os.remove(out)
m = kinsey.train(parties, label="label", epsilon=1.0, seed=1)
m.save(out)
PY
echo "what | wall s | max RSS MiB"
for r in $(seq "$rounds"); do
  /usr/bin/time -f "cli | %e | %M" -o "$dir/t" "$K" --overwrite train --config "$dir/train.toml" > /dev/null 2>&1
  awk -F' [|] ' '{ printf "%s | %s | %.0f\n", $1, $2, $3 / 1024 }' "$dir/t"
  for mode in paths stream tables; do
    /usr/bin/time -f "python ($mode) | %e | %M" -o "$dir/t" "$PY" "$dir/train.py" "$mode" "$dir" > /dev/null 2>&1
    awk -F' [|] ' '{ printf "%s | %s | %.0f\n", $1, $2, $3 / 1024 }' "$dir/t"
  done
done
# The same release: the seeded Python model is the CLI's, byte for byte.
for mode in paths stream tables; do cmp "$dir/cli-out/model.json" "$dir/py-$mode.json"; done
echo "model.json: Python (paths, streams, tables) = CLI, byte for byte"
