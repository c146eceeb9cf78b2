#!/usr/bin/env bash
# kinsey's SuLQ k-means and PCA against diffprivlib's KMeans and PCA, same data, same run.
#
#   benches/sulq_vs_diffprivlib.sh [ROWS] [DIM] [REPEATS] [LIMIT]   (default 1000000 50 3 120)
#
# Data: ROWS x DIM in [0,1], written once as Parquet (float32) and read by both sides:
# "blobs", a mixture of 8 Gaussian blobs (std 0.05, clipped), and "uniform" (no structure).
# diffprivlib's PCA samples with a Gibbs sampler (Bingham mechanism) that can run for very
# long on structured data; a fit past LIMIT seconds is stopped and reported as such. Times are fits only (load excluded), the best
# of REPEATS runs on each side; accuracy is scored by this script with one metric for both:
#   k-means: mean squared distance to the nearest centre, over that of scikit-learn's
#            non-private KMeans (k-means++, 1 init, 10 iterations)   (1.0 = as good)
#   PCA:     variance captured by the top-5 components over the optimum  (1.0 = optimal)
# Budgets: eps = 1 for both; diffprivlib is pure eps-DP, kinsey (eps, 1e-6)-DP (zCDP).
# diffprivlib 0.6.6 needs scikit-learn < 1.7; both are installed in .venv-dpl.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${1:-1000000}
DIM=${2:-50}
REPEATS=${3:-3}
LIMIT=${4:-120}
cargo build --release -q -p kinsey-cli
if [ ! -x .venv-dpl/bin/python ]; then
  python3 -m venv .venv-dpl
  .venv-dpl/bin/pip install -q "scikit-learn<1.7" "diffprivlib==0.6.6" pyarrow
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
.venv-dpl/bin/python - "$tmp" "$ROWS" "$DIM" <<'PY'
import sys, numpy as np, pyarrow as pa, pyarrow.parquet as pq
tmp, n, d = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(20261121)
means = rng.uniform(0.2, 0.8, size=(8, d))
lab = rng.integers(0, 8, size=n)
blobs = np.clip(means[lab] + 0.05 * rng.standard_normal((n, d)), 0, 1).astype(np.float32)
uniform = rng.uniform(0, 1, size=(n, d)).astype(np.float32)
for name, x in [("blobs", blobs), ("uniform", uniform)]:
    pq.write_table(pa.table({f"x{j}": x[:, j] for j in range(d)}), f"{tmp}/{name}.parquet", compression="snappy")
PY
for data in blobs uniform; do
  for i in $(seq "$REPEATS"); do
    ./target/release/kinsey bench sulq --input "$tmp/$data.parquet" --k 8 --iterations 10 \
      --components 5 --epsilon 1
  done > "$tmp/$data.jsonl"
done
.venv-dpl/bin/python - "$tmp" "$REPEATS" "$LIMIT" <<'PY'
import json, sys, time, warnings, os, signal
import numpy as np, pyarrow.parquet as pq
import sklearn, diffprivlib
from sklearn.cluster import KMeans as SkKMeans
from diffprivlib.models import KMeans as DpKMeans, PCA as DpPCA
warnings.filterwarnings("ignore")
tmp, reps, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

class Timeout(Exception):
    pass
def on_alarm(sig, frame):
    raise Timeout()
signal.signal(signal.SIGALRM, on_alarm)
def timed(f):
    """(seconds, result), or (None, None) past the limit."""
    signal.alarm(limit)
    t = time.perf_counter()
    try:
        r = f()
        return time.perf_counter() - t, r
    except Timeout:
        return None, None
    finally:
        signal.alarm(0)

print("| data | algorithm | library | fit time (s) | speed-up | accuracy |")
print("|---|---|---|---|---|---|")
for data in ["blobs", "uniform"]:
    tab = pq.read_table(f"{tmp}/{data}.parquet")
    x = np.column_stack([tab.column(i).to_numpy() for i in range(tab.num_columns)]).astype(np.float64)
    n, d = x.shape
    runs = [json.loads(l) for l in open(f"{tmp}/{data}.jsonl")]
    def inertia(c):
        c = np.asarray(c)
        best = np.full(n, np.inf)
        for j in range(len(c)):
            best = np.minimum(best, ((x - c[j]) ** 2).sum(1))
        return best.mean()
    mu = x.mean(0)
    cov = np.cov(x - mu, rowvar=False, bias=True)
    opt5 = np.sort(np.linalg.eigvalsh(cov))[::-1][:5].sum()
    def captured(v):
        v = np.asarray(v)
        q, _ = np.linalg.qr(v.T)
        return np.trace(q.T @ cov @ q) / opt5
    ref_in = inertia(SkKMeans(n_clusters=8, n_init=1, max_iter=10, random_state=0).fit(x).cluster_centers_)
    bounds = (np.zeros(d), np.ones(d))
    # kinsey's releases are scored first; every diffprivlib fit gets its own copy of the
    # data (its PCA centres the array it is given in place)
    kin = {"km": ([r["kmeans_s"] for r in runs], [inertia(r["centers"]) / ref_in for r in runs]),
           "pca": ([r["pca_s"] for r in runs], [captured(r["components"]) for r in runs])}
    res = {"km": ([], []), "pca": ([], [])}
    for r in range(reps):
        xc = x.copy()
        t, m = timed(lambda: DpKMeans(n_clusters=8, epsilon=1.0, bounds=bounds, random_state=r).fit(xc))
        if t is not None:
            res["km"][0].append(t); res["km"][1].append(inertia(m.cluster_centers_) / ref_in)
        xc = x.copy()
        t, p = timed(lambda: DpPCA(n_components=5, epsilon=1.0, bounds=bounds, data_norm=np.sqrt(d), random_state=r).fit(xc))
        if t is None:
            break   # the Bingham sampler did not finish: do not repeat
        res["pca"][0].append(t); res["pca"][1].append(captured(p.components_))
    for key, name, metric in [("km", "k-means (k=8)", "inertia / non-private"),
                              ("pca", f"PCA (5 of {d})", "captured / optimal")]:
        dt, dq = res[key]
        kt, kq = kin[key]
        if dt:
            print(f"| {data} | {name} | diffprivlib | {min(dt):.2f} | 1.0x | {np.median(dq):.4f} ({metric}) |")
            sp = f"{min(dt) / min(kt):.1f}x"
        else:
            print(f"| {data} | {name} | diffprivlib | > {limit} (did not finish) | 1.0x | - |")
            sp = f"> {limit / min(kt):.0f}x"
        print(f"| {data} | {name} | kinsey | {min(kt):.3f} | {sp} | {np.median(kq):.4f} ({metric}) |")
print()
print(f"{n} rows x {d} dims; {os.cpu_count()} cores; kinsey threads {runs[0]['threads']}; "
      f"diffprivlib {diffprivlib.__version__}, scikit-learn {sklearn.__version__}, numpy {np.__version__}; "
      f"eps = 1 both (kinsey delta = 1e-6); fit times best of {reps}, accuracy median; "
      f"kinsey's Parquet load (excluded) {min(r['load_s'] for r in runs):.2f} s; diffprivlib limit {limit} s per fit")
PY
