#!/usr/bin/env bash
# kinsey's SuLQ k-means and PCA against diffprivlib's KMeans and PCA, same data, same run.
#
#   benches/sulq_vs_diffprivlib.sh [ROWS] [DIM] [REPEATS]    (default 1000000 50 3)
#
# Data: ROWS x DIM in [0,1], a mixture of 8 Gaussian blobs (std 0.05, clipped), written once
# as Parquet (float32) and read by both sides. Times are fits only (load excluded), the best
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
cargo build --release -q -p kinsey-engine
if [ ! -x .venv-dpl/bin/python ]; then
  python3 -m venv .venv-dpl
  .venv-dpl/bin/pip install -q "scikit-learn<1.7" "diffprivlib==0.6.6" pyarrow
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
.venv-dpl/bin/python - "$tmp/data.parquet" "$ROWS" "$DIM" <<'PY'
import sys, numpy as np, pyarrow as pa, pyarrow.parquet as pq
path, n, d = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(20261121)
means = rng.uniform(0.2, 0.8, size=(8, d))
lab = rng.integers(0, 8, size=n)
x = np.clip(means[lab] + 0.05 * rng.standard_normal((n, d)), 0, 1).astype(np.float32)
pq.write_table(pa.table({f"x{j}": x[:, j] for j in range(d)}), path, compression="snappy")
PY
for i in $(seq "$REPEATS"); do
  ./target/release/kinsey bench sulq --input "$tmp/data.parquet" --k 8 --iterations 10 \
    --components 5 --epsilon 1
done > "$tmp/kinsey.jsonl"
.venv-dpl/bin/python - "$tmp/data.parquet" "$tmp/kinsey.jsonl" "$REPEATS" <<'PY'
import json, sys, time, warnings, os
import numpy as np, pyarrow.parquet as pq
import sklearn, diffprivlib
from sklearn.cluster import KMeans as SkKMeans
from diffprivlib.models import KMeans as DpKMeans, PCA as DpPCA
warnings.filterwarnings("ignore")
path, kpath, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
x = pq.read_table(path).to_pandas().to_numpy(dtype=np.float64)
n, d = x.shape
runs = [json.loads(l) for l in open(kpath)]

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
    if v.shape[0] != 5: v = v.T
    q, _ = np.linalg.qr(v.T)   # orthonormalise (diffprivlib's are already)
    return np.trace(q.T @ cov @ q) / opt5

ref = SkKMeans(n_clusters=8, n_init=1, max_iter=10, random_state=0).fit(x)
ref_in = inertia(ref.cluster_centers_)

bounds = (np.zeros(d), np.ones(d))
dp_km_t, dp_km_q, dp_pca_t, dp_pca_q = [], [], [], []
for r in range(reps):
    t = time.perf_counter(); m = DpKMeans(n_clusters=8, epsilon=1.0, bounds=bounds, random_state=r).fit(x)
    dp_km_t.append(time.perf_counter() - t); dp_km_q.append(inertia(m.cluster_centers_) / ref_in)
    t = time.perf_counter(); p = DpPCA(n_components=5, epsilon=1.0, bounds=bounds, data_norm=np.sqrt(d), random_state=r).fit(x)
    dp_pca_t.append(time.perf_counter() - t); dp_pca_q.append(captured(p.components_))
ki_km_t = [r["kmeans_s"] for r in runs]; ki_km_q = [inertia(r["centers"]) / ref_in for r in runs]
ki_pca_t = [r["pca_s"] for r in runs]; ki_pca_q = [captured(r["components"]) for r in runs]

print(f"data: {n} rows x {d} dims; {os.cpu_count()} cores; kinsey threads {runs[0]['threads']}; "
      f"diffprivlib {diffprivlib.__version__}, scikit-learn {sklearn.__version__}, numpy {np.__version__}")
print(f"kinsey load (Parquet, excluded): {min(r['load_s'] for r in runs):.2f} s; eps = 1 both; "
      f"best of {reps} fits, accuracy median of {reps}")
print("| algorithm | library | fit time (s) | speed-up | accuracy |")
print("|---|---|---|---|---|")
for name, dt, dq, kt, kq, metric in [
    ("k-means (k=8, 10 iter.)", dp_km_t, dp_km_q, ki_km_t, ki_km_q, "inertia / non-private"),
    ("PCA (5 of %d comp.)" % d, dp_pca_t, dp_pca_q, ki_pca_t, ki_pca_q, "captured / optimal")]:
    print(f"| {name} | diffprivlib | {min(dt):.3f} | 1.0x | {np.median(dq):.4f} ({metric}) |")
    print(f"| {name} | kinsey | {min(kt):.3f} | {min(dt)/min(kt):.1f}x | {np.median(kq):.4f} ({metric}) |")
PY
