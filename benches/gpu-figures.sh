#!/usr/bin/env bash
# Every GPU figure of kinsey beside the same machine's CPU, each step under its own time
# limit, the most important first (a run cut short still brings the main figures back).
#
#   KINSEY=path/to/kinsey OUT=folder benches/gpu-figures.sh [--quick]
#
# KINSEY: the kinsey binary (default: target/release/kinsey of this checkout).
# OUT: where everything goes (default: gpu-figures-out): figures.md (a markdown table headed
# by the machine), figures.jsonl (one JSON line per figure), logs.tgz (each step's output
# and log). Three files, all rewritten after every step: a device run brings back only a
# few files, and one cut short keeps what it measured.
# --quick (or KINSEY_DEVICE_DRY_RUN=1, as the device run's dry run sets it): the same steps
# at small sizes, on lavapipe here in under 3 minutes on 2 cores. The device run of
# ../shared/tools/gpu-device/ copies this file to .device/figures.sh and runs it there.
# KINSEY_FIGURES_LIMIT_SCALE multiplies every step's time limit (scripts/test.sh runs the
# quick sizes with the unoptimised test build of kinsey). KINSEY_FIGURES_STEPS, a list of
# step names, runs only those (a rerun of the steps a lease did not finish).
# KINSEY_FIGURES_BUDGET (seconds, default 540) bounds the whole run; steps past it are
# recorded as skipped.
# KINSEY_GPU_PIPELINE and KINSEY_GPU_TRACE are set per decay step (an A/B pair each), and
# KINSEY_GPU_PASSES=cpu for the second training step (its A/B pair).
# KINSEY_GPU_MONTGOMERY (fused, steps, limbs, coop or legacy), when set, picks the Paillier
# kernels' GPU program for every step and is named in the table's header; the steps
# paillier-gpu-2048-legacy and -coop set it to legacy (the 16-bit programs) and coop (one
# bignum over cooperating lanes; -coop-workgroup adds KINSEY_GPU_COOP=workgroup) for A/B.
set -uo pipefail
quick=0
for a in "$@"; do
  case $a in
    --quick) quick=1 ;;
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "gpu-figures.sh: unknown argument '$a' (only --quick)" >&2; exit 2 ;;
  esac
done
[ "${KINSEY_DEVICE_DRY_RUN:-0}" = 1 ] && quick=1
root=$(cd "$(dirname "$0")/.." && pwd)
K=${KINSEY:-$root/target/release/kinsey}
OUT=${OUT:-$root/gpu-figures-out}
if [ ! -x "$K" ]; then
  echo "gpu-figures.sh: no kinsey binary at '$K' (build it: cargo build --release -p kinsey-cli, or set KINSEY)" >&2
  exit 2
fi
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp} KINSEY_NO_PROGRESS=1
export WGPU_BACKEND=${WGPU_BACKEND:-vulkan}
mkdir -p "$OUT" || exit 2
RAW=$(mktemp -d)
# The pipeline cache of this run, empty at its start: the probe's first compiles are cold,
# every later step (each its own process) reads what the earlier ones compiled.
export KINSEY_GPU_CACHE=$RAW/pipeline-cache
: > "$RAW/steps.txt"

# Sizes: Paillier batch (small first, then large enough to fill a GPU), the 3072-bit batch,
# the CPU batch, the crossover's largest batch and its seconds per GPU batch, decayed-sum
# steps, training rows, protocol K and d, the demo's arguments, the compiles timed, the
# private-memory bisection's range. Every step at its limit would take about 14 minutes;
# KINSEY_FIGURES_BUDGET (see `step`) holds the run to 9, cutting the last steps (the
# bisection first); a run usually takes a third of the 14.
if [ "$quick" = 1 ]; then
  P_SMALL=4 P_2048=16 P_3072=2 P_CPU=16 X_MAX=2 X_BUDGET=2 STEPS=2000000 ROWS=100000 PARTIES=3 DIM=8
  PROBE_BYTES=$((16 << 20)) COMPILE_WORDS=8 BIS_LO=2 BIS_HI=4 BIS_STEPS=1 BIS_ITEMS=4
  DEMO=(--parties 3 --dim 4 --smallest-party 500)
  mode="quick (small sizes)"
else
  P_SMALL=256 P_2048=16384 P_3072=4096 P_CPU=1024 X_MAX=65536 X_BUDGET=1 STEPS=1000000000 ROWS=10000000 PARTIES=20 DIM=1000
  PROBE_BYTES=$((256 << 20)) COMPILE_WORDS=64,128 BIS_LO=32 BIS_HI=128 BIS_STEPS=4 BIS_ITEMS=256
  DEMO=()
  mode="full"
fi

{
  echo "mode: $mode"
  if command -v nvidia-smi > /dev/null; then
    echo "GPU: $(nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv,noheader 2>/dev/null | head -1)"
    echo "host link: PCIe gen current/max, width current/max: $(nvidia-smi --query-gpu=pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max --format=csv,noheader 2>/dev/null | head -1)"
  else
    echo "GPU: no NVIDIA driver; the adapter each figure ran on is in its device column"
  fi
  echo "CPU: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//')"
  commit=$(cat "$root/.device/commit" 2>/dev/null || git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
  echo "kinsey: commit $commit, $K"
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  [ -n "${KINSEY_GPU_MONTGOMERY:-}" ] && echo "Montgomery GPU program: $KINSEY_GPU_MONTGOMERY (KINSEY_GPU_MONTGOMERY)"
} > "$RAW/machine.txt"
cat "$RAW/machine.txt"

# step NAME SECONDS ARGS...: run `kinsey ARGS --json`-style commands under a time limit;
# their stdout (JSON lines) into raw/NAME.json, then one line describing the step.
# The whole run stays within KINSEY_FIGURES_BUDGET seconds (default 540: 9 minutes, times
# the limit scale): a step gets at most what is left, and a step after the budget is spent
# is recorded as skipped (the most important steps come first).
scale=${KINSEY_FIGURES_LIMIT_SCALE:-1}
budget=$((${KINSEY_FIGURES_BUDGET:-540} * scale))
started=$(date +%s)
step() {
  local name=$1 limit=$(($2 * scale))
  shift 2
  if [ -n "${KINSEY_FIGURES_STEPS:-}" ] && [[ " $KINSEY_FIGURES_STEPS " != *" $name "* ]]; then
    return 0
  fi
  echo "$name" >> "$RAW/steps.txt"
  local left=$((budget - ($(date +%s) - started)))
  if [ "$left" -lt 5 ]; then
    printf '{"kinsey_step": {"command": "kinsey %s", "rc": -2, "seconds": 0, "limit": 0}}\n' "$*" > "$RAW/$name.json"
    echo "== $name skipped: the run's ${budget} s are spent"
    return 0
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  echo "== $name (limit ${limit} s): kinsey $*"
  local t0 rc t1
  t0=$(date +%s.%N)
  timeout -k 5 "$limit" "$K" "$@" > "$RAW/$name.json" 2> "$RAW/$name.log"
  rc=$?
  t1=$(date +%s.%N)
  local secs
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
  if [ "$name" = demo-gpu ] && [ "$rc" = 0 ]; then
    printf '{"command": "kinsey %s", "wall_seconds": %s}\n' "$*" "$secs" >> "$RAW/$name.json"
  fi
  printf '{"kinsey_step": {"command": "kinsey %s", "rc": %d, "seconds": %s, "limit": %d}}\n' \
    "$*" "$rc" "$secs" "$limit" >> "$RAW/$name.json"
  echo "   rc=$rc in ${secs} s"
  tail -n 4 "$RAW/$name.log"
  # The table and the logs after every step: a run cut short still leaves its figures.
  "$K" bench figures --raw "$RAW" --out "$OUT" > /dev/null 2>> "$RAW/figures.log"
  tar -czf "$OUT/logs.tgz" --exclude=./pipeline-cache -C "$RAW" . 2> /dev/null
}

# First what the machine can do: the adapter's features and limits, the host link's and
# device memory's bandwidth (every later figure is read against them).
step gpu-probe 40 bench gpu-probe --bytes "$PROBE_BYTES" --compile-words "$COMPILE_WORDS"
# The same compiles in a new process with the cache on disk (an A/B pair with the first).
step gpu-probe-cached 20 bench gpu-probe --bytes 4096 --reps 1 --compile-words "$COMPILE_WORDS"
P="bench paillier --json"
step paillier-gpu-2048-small 40 $P --device gpu --bits 2048 --count "$P_SMALL" --threads 0
step paillier-gpu-2048 70 $P --device gpu --bits 2048 --count "$P_2048" --threads 0
# A/B: the 16-bit programs (the default before the limbs program), on a quarter of the
# batch to keep the run short (their rates at 4,096 and 16,384 items are in BENCHMARKS.md).
KINSEY_GPU_MONTGOMERY=legacy \
  step paillier-gpu-2048-legacy 40 $P --device gpu --bits 2048 --count "$((P_2048 / 4))" --threads 0
# A/B: every operation with one item over cooperating lanes (KINSEY_GPU_MONTGOMERY=coop: a
# subgroup, registers and shuffles; then 16 lanes in workgroup memory) against one
# invocation each.
KINSEY_GPU_MONTGOMERY=coop \
  step paillier-gpu-2048-coop 40 $P --device gpu --bits 2048 --count "$((P_2048 / 4))" --threads 0
KINSEY_GPU_MONTGOMERY=coop KINSEY_GPU_COOP=workgroup \
  step paillier-gpu-2048-coop-workgroup 30 $P --device gpu --bits 2048 --count "$((P_2048 / 4))" --threads 0
step paillier-gpu-3072 45 $P --device gpu --bits 3072 --count "$P_3072" --threads 0
step paillier-cpu 35 $P --device cpu --bits 2048,3072 --count "$P_CPU" --threads 0
step protocol-gpu 60 bench protocol --json --parties "$PARTIES" --dim "$DIM" --crypto-device gpu
step protocol-cpu 35 bench protocol --json --parties "$PARTIES" --dim "$DIM" --crypto-device cpu
# Each batch where this machine's measured crossover sends it (what a deployment runs).
step protocol-auto 60 bench protocol --json --parties "$PARTIES" --dim "$DIM" --crypto-device auto
# The decayed sums' GPU path pipelined (the default) and serial (the way before issue 53:
# KINSEY_GPU_PIPELINE=serial), back to back on the same warm device, each with the host's
# time per stage (KINSEY_GPU_TRACE=1): an A/B pair per sum (the serial run on a quarter of
# the steps, to keep the run short: a rate either way).
for m in window exponential running; do
  KINSEY_GPU_TRACE=1 step "decay-gpu-$m" 25 bench decay --json --device gpu --model "$m" --steps "$STEPS"
  KINSEY_GPU_TRACE=1 KINSEY_GPU_PIPELINE=serial \
    step "decay-gpu-serial-$m" 12 bench decay --json --device gpu --model "$m" --steps "$((STEPS / 4))"
  step "decay-cpu-$m" 15 bench decay --json --device cpu --model "$m" --steps "$STEPS"
done
# Training with its full passes on the device in f64 (the default under --device gpu),
# then with them on the CPU and only the Hessian subsample on the GPU (KINSEY_GPU_PASSES=cpu,
# the way before issue 53): an A/B pair on the same rows.
step train-gpu 35 bench train --json --device gpu --rows "$ROWS" --dim 123
# A/B: the rows sent through write_buffer from one thread (KINSEY_GPU_PIPELINE=serial)
# rather than staged on every core.
KINSEY_GPU_PIPELINE=serial \
  step train-gpu-serial-upload 35 bench train --json --device gpu --rows "$ROWS" --dim 123
KINSEY_GPU_PASSES=cpu \
  step train-gpu-cpu-passes 30 bench train --json --device gpu --rows "$ROWS" --dim 123
step train-cpu 35 bench train --json --device cpu --rows "$ROWS" --dim 123
step paillier-crossover 90 bench paillier --json --crossover --device gpu --bits 2048 --max-batch "$X_MAX" --budget "$X_BUDGET"
demo_out=$(mktemp -d)
step demo-gpu 40 --overwrite demo --out "$demo_out" --device gpu --crypto-device gpu --no-diagnostics "${DEMO[@]}"
rm -rf "$demo_out"

# Last (it may lose the device): where the 16-bit fused program's variable-base power stops
# working as its private memory per invocation grows (an H100 lost its device at 64 words,
# 10.2 KB, and not at 8.2 KB). Each size in its own process, so a lost device ends only
# that one; a binary search over multiples of 4 words between BIS_LO and BIS_HI, at most
# BIS_STEPS probes after the two ends.
private_ok() {
  KINSEY_GPU_MONTGOMERY=fused step "private-$1" 15 bench gpu-private --words "$1" --items "$BIS_ITEMS"
  grep -q '"ok":true' "$RAW/private-$1.json" 2> /dev/null
}
lo=$BIS_LO hi=$BIS_HI
if private_ok "$lo" && ! private_ok "$hi"; then
  n=0
  while [ $((hi - lo)) -gt 4 ] && [ "$n" -lt "$BIS_STEPS" ]; do
    mid=$(((lo + hi) / 8 * 4))
    [ "$mid" -le "$lo" ] && mid=$((lo + 4))
    if private_ok "$mid"; then lo=$mid; else hi=$mid; fi
    n=$((n + 1))
  done
  echo "fused variable-base power: works at $lo words, fails at $hi"
fi

"$K" bench figures --raw "$RAW" --out "$OUT"
tar -czf "$OUT/logs.tgz" --exclude=./pipeline-cache -C "$RAW" . 2> /dev/null
rm -rf "$RAW"
echo "figures: $OUT/figures.md"
cat "$OUT/figures.md"
