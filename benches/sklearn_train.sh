#!/usr/bin/env bash
# kinsey vs scikit-learn on the same generated data, in the same run.
#
#   benches/sklearn_train.sh [ROWS] [DIM] [LAMBDA] [RHO]   (default 1000000 123 1e-4 0)
#
# RHO is the AR(1) correlation of the generated features (0: isotropic).
#
# Generates ROWS x DIM rows with `kinsey generate`, times `kinsey bench train` (Newton to
# ||grad J|| <= 1e-10) and scikit-learn's LogisticRegression(lbfgs, no intercept, C = 1/(2 n
# lambda), i.e. the same objective J(w) = mean loss + lambda w.w) at decreasing tolerances,
# and prints the time each needs to reach kinsey's objective value (to 1e-9 absolute),
# and the ratio. scikit-learn is installed in .venv-bench (pinned < 1.7, see benchmarks.md).
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${1:-1000000}; DIM=${2:-123}; LAMBDA=${3:-1e-4}; RHO=${4:-0}
cargo build --release -q -p kinsey-cli
if [ ! -x .venv-bench/bin/python ]; then
  python3 -m venv .venv-bench
  .venv-bench/bin/pip install -q "scikit-learn>=1.5,<1.7" "numpy<2.3" pyarrow
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
./target/release/kinsey generate --parties 1 --rows "$ROWS" --dim "$DIM" --seed 1 --signal 16 --correlation "$RHO" --out "$tmp" >/dev/null
./target/release/kinsey bench train --input "$tmp/party-1.parquet" --lambda "$LAMBDA" --device cpu --json > "$tmp/kinsey.json"
.venv-bench/bin/python - "$tmp/party-1.parquet" "$tmp/kinsey.json" "$LAMBDA" <<'PY'
import json, sys, time, os
import numpy as np, pyarrow.parquet as pq
from sklearn.linear_model import LogisticRegression
import sklearn
path, kjson, lam = sys.argv[1], sys.argv[2], float(sys.argv[3])
k = json.load(open(kjson))
t = pq.read_table(path)
y = t.column("label").to_numpy().astype(np.float64)
X = np.column_stack([t.column(c).to_numpy() for c in t.column_names if c != "label"]).astype(np.float64)
n = len(y)
def J(w):
    z = -y * (X @ w)
    return np.mean(np.logaddexp(0.0, z)) + lam * w @ w
C = 1.0 / (2.0 * n * lam)
target = k["objective"] + 1e-9
print(f"data: {n} x {X.shape[1]}, lambda = {lam}, threads: {os.cpu_count()}, scikit-learn {sklearn.__version__}")
print(f"kinsey  : {k['seconds']:.3f} s to ||grad J|| <= 1e-10, J = {k['objective']:.12f} ({k['iterations']} Newton iterations, {k['device']})")
best = None
for tol in [1e-4, 1e-6, 1e-8, 1e-10]:
    m = LogisticRegression(C=C, fit_intercept=False, solver="lbfgs", tol=tol, max_iter=100000)
    t0 = time.perf_counter(); m.fit(X, y); dt = time.perf_counter() - t0
    j = J(m.coef_.ravel())
    ok = j <= target
    print(f"sklearn : tol={tol:g}: {dt:.3f} s, J = {j:.12f}, n_iter = {m.n_iter_[0]}, reaches kinsey's J: {ok}")
    if ok and best is None:
        best = dt
if best is None:
    print("sklearn never reached kinsey's objective; ratio is a lower bound from its last run")
    best = dt
print(f"RATIO sklearn/kinsey time to the same objective: {best / k['seconds']:.2f}x")
PY
