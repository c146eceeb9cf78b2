#!/usr/bin/env python3
"""kinsey stats against OpenDP on the same data at the same epsilon: RMSE over repeated
releases (fresh OS noise each), against the exact clamped statistic.

    python3 benches/opendp_stats.py [--reps 400] [--kinsey target/release/kinsey]

Needs `opendp` (pip install opendp). Data: ../shared/data/bike-sharing/hour.csv and
day.csv, column `cnt` (hourly and daily rental counts), bounds 0:1000 and 0:10000, eps 1.
"""
import argparse, csv, math, os, subprocess, sys, tempfile

import opendp.prelude as dp

dp.enable_features("contrib")

HERE = os.path.dirname(os.path.abspath(__file__))
BIKES = os.path.join(HERE, "..", "..", "shared", "data", "bike-sharing")
# (file, column, lo, hi): hourly counts (17,379 rows) and daily counts (731 rows).
SETS = [("hour.csv", "cnt", 0.0, 1000.0), ("day.csv", "cnt", 0.0, 10000.0)]
EPS, CANDS = 1.0, 1001
DATA, COLUMN, LO, HI = None, None, None, None


def column():
    with open(DATA) as f:
        return [min(max(float(r[COLUMN]), LO), HI) for r in csv.DictReader(f)]


def exact(stat, x):
    n = len(x)
    if stat == "sum":
        return sum(x)
    m = sum(x) / n
    if stat == "mean":
        return m
    if stat == "variance":
        return sum((v - m) ** 2 for v in x) / (n - 1)
    s = sorted(x)
    return s[max(math.ceil(0.5 * n), 1) - 1]


def opendp_release(stat, nb, x):
    n = len(x)
    sized = nb == "bounded"
    atom = dp.atom_domain(bounds=(LO, HI)) if stat != "median" else dp.atom_domain(T=float, nan=False)
    domain = dp.vector_domain(atom, size=n) if sized else dp.vector_domain(atom)
    space = domain, dp.symmetric_distance()
    d_in = 2 if sized else 1
    if stat == "median":
        cands = [LO + (HI - LO) * i / (CANDS - 1) for i in range(CANDS)]
        make = lambda s: dp.m.make_private_quantile(*space, dp.max_divergence(), cands, 0.5, s)
    else:
        trans = {"sum": dp.t.then_sum, "mean": dp.t.then_mean, "variance": dp.t.then_variance}[stat]
        make = lambda s: space >> trans() >> dp.m.then_laplace(s)
    scale = dp.binary_search_param(make, d_in=d_in, d_out=EPS)
    # Laplace noise of scale b has standard deviation sqrt(2) b.
    return make(scale), (math.sqrt(2.0) * scale if stat != "median" else None)


def kinsey_release(binary, stat, nb, out):
    cmd = "quantiles" if stat == "median" else stat
    args = [binary, "stats", cmd, "--input", DATA, "--column", COLUMN, "--bounds", f"{LO:g}:{HI:g}",
            "--epsilon", str(EPS), "--neighbours", nb, "--out", out]
    if stat == "median":
        args += ["--levels", "0.5", "--candidates", str(CANDS)]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(out, "stats.csv")) as f:
        row = next(csv.DictReader(f))
        return float(row["value"]), (float(row["noise_std"]) if row["noise_std"] else None)


def rmse(values, truth):
    return math.sqrt(sum((v - truth) ** 2 for v in values) / len(values))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--kinsey", default=os.path.join(HERE, "..", "target", "release", "kinsey"))
    a = ap.parse_args()
    global DATA, COLUMN, LO, HI
    print(f"eps = {EPS}, {a.reps} releases each, {CANDS} quantile candidates")
    print("| data | statistic | neighbours | exact | kinsey RMSE | OpenDP RMSE | kinsey / OpenDP "
          "| stated noise std, kinsey / OpenDP |")
    print("|---|---|---|---|---|---|---|---|")
    worst = 0.0
    for name, COLUMN, LO, HI in SETS:
        DATA = os.path.join(BIKES, name)
        worst = max(worst, compare(a, name))
    tol = 1.0 + 3.0 * math.sqrt(2.0) / math.sqrt(2.0 * a.reps) * 1.5
    print(f"worst ratio {worst:.3f} (sampling tolerance {tol:.3f})")
    sys.exit(0 if worst <= tol else 1)


def compare(a, name):
    x = column()
    worst = 0.0
    for stat, nb in [("sum", "unbounded"), ("sum", "bounded"), ("mean", "bounded"),
                     ("variance", "bounded"), ("median", "bounded"), ("median", "unbounded")]:
        truth = exact(stat, x)
        meas, their_std = opendp_release(stat, nb, x)
        ours, theirs = [], []
        with tempfile.TemporaryDirectory() as d:
            for i in range(a.reps):
                value, our_std = kinsey_release(a.kinsey, stat, nb, os.path.join(d, str(i)))
                ours.append(value)
                theirs.append(meas(x))
        r_k, r_o = rmse(ours, truth), rmse(theirs, truth)
        # The RMSE of `reps` draws has a relative standard error of about 1/sqrt(2 reps)
        # for Laplace-like errors; the ratio's is sqrt(2) times that.
        ratio = r_k / r_o if r_o > 0 else (1.0 if r_k == 0 else math.inf)
        worst = max(worst, ratio)
        stated = f"{our_std:.5g} / {their_std:.5g} = {our_std / their_std:.9f}" if our_std else "-"
        print(f"| {name} (n = {len(x)}, {LO:g}:{HI:g}) | {stat} | {nb} | {truth:.6g} | {r_k:.4g} "
              f"| {r_o:.4g} | {ratio:.3f} | {stated} |")
    return worst


if __name__ == "__main__":
    main()
