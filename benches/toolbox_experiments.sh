#!/usr/bin/env bash
# Accuracy of the DP toolbox against its non-private counterparts on real data; writes
# docs/toolbox/results.md (tables) and prints it.
#
#   benches/toolbox_experiments.sh [RUNS]     (default 10 runs per point)
#
# a9a (UCI Adult, 123 binary features; train on a9a, test on a9a.t) for the decision tree,
# the perceptron, the STAT learner and the implication test; bike-sharing hour.csv for
# k-means and PCA. Every run draws fresh OS-seeded noise; the tables give mean and standard
# deviation over the runs. "Non-private" figures come from each command's --diagnostics
# block (computed on the raw data, never published).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-10}
DATA=${KINSEY_DATA:-../shared/data}
cargo build --release -q -p kinsey-cli
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
K=./target/release/kinsey
$K convert --libsvm "$DATA/a9a/a9a" --dim 123 --out "$tmp/a9a.parquet" >/dev/null
$K convert --libsvm "$DATA/a9a/a9a.t" --dim 123 --out "$tmp/a9a.t.parquet" >/dev/null
mkdir -p docs/toolbox
python3 - "$K" "$tmp" "$DATA" "$RUNS" > docs/toolbox/results.md <<'PY'
import json, subprocess, sys, statistics as st, os
K, tmp, data, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
env = dict(os.environ, KINSEY_LOG="error", KINSEY_NO_PROGRESS="1")
def run(args):
    # The release (report.json) plus every NOT PRIVATE diagnostics file of the run, merged:
    # the evaluation against the exact data lives only in the diagnostics.
    out = os.path.join(tmp, "out")
    subprocess.run(["rm", "-rf", out])
    if "tree" in args and "--test" in args and "none" not in args:
        args = args + ["--diagnostics"]
    subprocess.run([K] + args + ["--out", out], check=True, env=env, capture_output=True)
    r = {}
    for name in sorted(os.listdir(out)):
        if not name.endswith(".json"):
            continue
        doc = json.load(open(os.path.join(out, name)))
        if "NOT PRIVATE" in doc:
            doc = doc["diagnostics"]
        if isinstance(doc, dict):
            for k, v in doc.items():
                r.setdefault(k, v)
    return r
def ms(v): return f"{st.mean(v):.4f} ± {st.stdev(v):.4f}" if len(v) > 1 else f"{v[0]:.4f}"
a9a, a9at = f"{tmp}/a9a.parquet", f"{tmp}/a9a.t.parquet"
hour = f"{data}/bike-sharing/hour.csv"
print("# DP toolbox: accuracy against the non-private algorithms\n")
print(f"Produced by `benches/toolbox_experiments.sh {runs}` ({runs} runs per point, fresh noise each run). "
      "All budgets are totals for the whole algorithm; bounded neighbours (replace one row).\n")

print("## Decision tree on a9a (depth 5, test accuracy on a9a.t)\n")
base = run(["tree", "--input", a9a, "--test", a9at, "--selection", "none", "--depth", "5", "--neighbours", "bounded"])
print(f"Non-private ID3 (same depth, info gain): **{base['test_accuracy']:.4f}**; majority class: 0.7638.\n")
eps_list = [0.1, 0.25, 0.5, 1, 2, 5, 10]
print("| eps | exponential, info gain | Laplace, info gain (seed: eps/m per score) | exponential, max score |")
print("|---|---|---|---|")
for e in eps_list:
    row = []
    for sel, score in [("exponential", "info_gain"), ("laplace", "info_gain"), ("exponential", "max")]:
        acc = [run(["tree", "--input", a9a, "--test", a9at, "--selection", sel, "--score", score,
                    "--depth", "5", "--epsilon", str(e), "--neighbours", "bounded"])["test_accuracy"] for _ in range(runs)]
        row.append(ms(acc))
    print(f"| {e} | " + " | ".join(row) + " |")

print("\n## SuLQ k-means on bike-sharing (hour.csv, 17,379 rows)\n")
cols = "temp,atemp,hum,windspeed,hr:0:23,cnt:0:1000"
print(f"Columns `{cols}` (public bounds map each to [0, 1]); k = 4, 6 iterations; "
      "mean squared distance of the rows to the private centres over that of non-private Lloyd from the same start (1.0 = as good).\n")
print("| eps (delta = 1e-6) | inertia ratio | noise sigma per unit query |")
print("|---|---|---|")
for e in [0.1, 0.5, 1, 2, 5]:
    rs = [run(["sulq", "kmeans", "--input", hour, "--columns", cols, "--k", "4", "--iterations", "6",
               "--epsilon", str(e), "--neighbours", "bounded", "--diagnostics"]) for _ in range(runs)]
    print(f"| {e} | {ms([r['evaluation']['ratio'] for r in rs])} | {rs[0]['result']['guarantee']['plan']['sigma']:.1f} |")

print("\n## SuLQ PCA on bike-sharing\n")
cols8 = cols + ",season:1:4,weathersit:1:4"
print(f"Columns `{cols8}`; 3 components; variance captured by the private components over the optimum (1.0 = optimal).\n")
print("| eps (delta = 1e-6) | captured / optimal |")
print("|---|---|")
for e in [0.1, 0.5, 1, 2, 5]:
    rs = [run(["sulq", "pca", "--input", hour, "--columns", cols8, "--components", "3",
               "--epsilon", str(e), "--neighbours", "bounded", "--diagnostics"]) for _ in range(runs)]
    print(f"| {e} | {ms([r['evaluation']['captured_variance_vs_optimal'] for r in rs])} |")

print("\n## SuLQ perceptron on a9a (10 rounds, intercept, test accuracy on a9a.t)\n")
r0 = run(["sulq", "perceptron", "--input", a9a, "--test", a9at, "--rounds", "10", "--intercept",
          "--epsilon", "1", "--neighbours", "bounded", "--diagnostics"])
print(f"Non-private (same averaged-update pocket perceptron): **{r0['evaluation']['test_accuracy_non_private']:.4f}**.\n")
print("| eps (delta = 1e-6) | test accuracy |")
print("|---|---|")
for e in [0.25, 0.5, 1, 2, 5]:
    acc = [run(["sulq", "perceptron", "--input", a9a, "--test", a9at, "--rounds", "10", "--intercept",
                "--epsilon", str(e), "--neighbours", "bounded"])["test_accuracy"] for _ in range(runs)]
    print(f"| {e} | {ms(acc)} |")

print("\n## STAT adapter: best single predictor on a9a (123 STAT queries)\n")
print("| eps (delta = 1e-6) | accuracy tau | exact error of the chosen feature | best exact error | chose the best |")
print("|---|---|---|---|---|")
for e in [0.1, 0.5, 1]:
    rs = [run(["sulq", "stat", "--input", a9a, "--epsilon", str(e), "--neighbours", "bounded", "--diagnostics"]) for _ in range(runs)]
    ch = [r["evaluation"]["chosen_error_exact"] for r in rs]
    best = rs[0]["evaluation"]["best_error_exact"]
    hit = sum(abs(c - best) < 1e-12 for c in ch)
    print(f"| {e} | {rs[0]['result']['tau']:.4f} | {ms(ch)} | {best:.4f} | {hit}/{runs} |")

print("\n## Vertically partitioned implication test on a9a\n")
print("Database A holds a feature, database B the label (`label>=1`, income > 50K); each spends the budget below. "
      "Gap 0.05; verdicts at the 95% level.\n")
print("| alpha (in A) | exact Pr[b given a] - Pr[b] | method | eps per database | estimate (mean ± sd over runs) | verdicts Implies/Undecided/DoesNotImply |")
print("|---|---|---|---|---|---|")
for alpha in ["f40", "f1"]:
    for method, e in [("groups", 1), ("groups", 4), ("heavy-sets", 4)]:
        rs = [run(["sulq", "implication", "--a", a9a, "--alpha", alpha, "--b", a9a, "--beta", "label>=1",
                   "--method", method, "--epsilon", str(e), "--neighbours", "bounded", "--diagnostics"]) for _ in range(runs)]
        v = [r["result"]["verdict"] for r in rs]
        counts = "/".join(str(v.count(x)) for x in ["implies", "undecided", "does_not_imply"])
        print(f"| {alpha} | {rs[0]['evaluation']['delta_exact']:.4f} | {method} | {e} | {ms([r['result']['delta_hat'] for r in rs])} | {counts} |")
PY
cat docs/toolbox/results.md
