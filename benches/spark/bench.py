"""What a party's fit costs on Spark, and where the time goes (BENCHMARKS.md, "Past one
machine: Spark").

    python benches/spark/bench.py PARTY.parquet OUT.json [--master local[2] | --standalone W]
        [--max-partition-bytes B] [--persist]

Trains one party (the file, as Spark reads it) with kinsey.spark.train, timing every Spark
job kinsey runs (counting, regrouping, preparing, every pass, the Hessian subsample) and
sampling the resident memory of the driver's Python, Spark's JVM and the Python workers
every 0.2 s; then times ten empty jobs (one row per partition) for the scheduling
overhead. The figures go to OUT.json and a summary to stdout. Run it on a quiet machine:
the figures are seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time

import pyarrow as pa


def tree_rss() -> dict[str, int]:
    """Resident bytes of this process and its descendants, by role."""
    me = os.getpid()
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                parts = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                names[int(pid)] = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        children.setdefault(int(parts[1]), []).append(int(pid))
    out = {"driver_python": 0, "jvm": 0, "python_workers": 0}
    stack = [me]
    while stack:
        pid = stack.pop()
        stack.extend(children.get(pid, []))
        try:
            with open(f"/proc/{pid}/statm") as f:
                rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            continue
        name = names.get(pid, "")
        role = ("driver_python" if pid == me else "jvm" if "java" in name.split(" ")[0]
                else "python_workers")
        out[role] += rss
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("party")
    ap.add_argument("out")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="2g")
    ap.add_argument("--max-partition-bytes", default=None)
    ap.add_argument("--persist", action="store_true",
                    help="persist the DataFrame in the executors' memory (and disk) first")
    ap.add_argument("--standalone", type=int, default=0,
                    help="start a standalone cluster of this many one-core workers on loopback "
                         "(python/tests/spark_cluster.py) and run there")
    args = ap.parse_args()
    if args.standalone:
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../python/tests"))
        import spark_cluster
        with spark_cluster.standalone(workers=args.standalone, memory="3g") as (url, env):
            args.master = url
            run(args, lambda: spark_cluster.session(
                url, env, args.standalone, **{"spark.executor.memory": "2g",
                                              "spark.driver.memory": args.driver_memory}))
        return
    run(args, None)


def run(args: argparse.Namespace, make_session) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import kinsey
    import kinsey.spark

    peak: dict[str, int] = {}
    peak_total = [0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            r = tree_rss()
            for k, v in r.items():
                peak[k] = max(peak.get(k, 0), v)
            peak_total[0] = max(peak_total[0], sum(r.values()))
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t0 = time.time()
    s = (SparkSession.builder.master(args.master).appName("kinsey-bench")
         .config("spark.ui.enabled", "false")
         .config("spark.driver.memory", args.driver_memory).getOrCreate())
    if args.max_partition_bytes:
        s.conf.set("spark.sql.files.maxPartitionBytes", args.max_partition_bytes)
    s.sparkContext.setLogLevel("ERROR")
    start_s = time.time() - t0
    jobs: list[dict] = []
    run = kinsey.spark.SparkParty.run

    def timed(self, task: str) -> pa.Table:
        t = time.time()
        out = run(self, task)
        kind = json.loads(task)["work"]["work"]
        jobs.append({"work": kind, "seconds": time.time() - t,
                     "result_bytes": out.nbytes})
        return out

    kinsey.spark.SparkParty.run = timed
    df = s.read.parquet(args.party)
    persist_s = 0.0
    if args.persist:
        from pyspark import StorageLevel
        t = time.time()
        df = df.persist(StorageLevel.MEMORY_AND_DISK)
        df.count()
        persist_s = time.time() - t
    t = time.time()
    party = kinsey.spark.SparkParty(df, label="label", name="party")
    layout_s = time.time() - t
    t = time.time()
    model = kinsey.spark.train([party], label="label", epsilon=1.0, aggregation="plaintext",
                               row_transform="clip", seed=1)
    train_s = time.time() - t
    # Scheduling: ten jobs over one row per partition (the party's partitioning).
    overhead = []
    ones = s.range(0, party.partitions, numPartitions=party.partitions)
    for _ in range(10):
        t = time.time()
        ones.mapInArrow(lambda it: it, "id long").collect()
        overhead.append(time.time() - t)
    stop.set()
    sampler.join()
    passes = [j for j in jobs if j["work"] == "sums"]
    report = {
        "master": args.master, "rows": party.rows, "partitions": party.partitions,
        "rows_regrouped": party.cut_rows, "session_start_s": start_s, "persist_s": persist_s,
        "count_and_regroup_s": layout_s, "train_s": train_s, "jobs": jobs,
        "passes": len(passes),
        "median_pass_s": sorted(j["seconds"] for j in passes)[len(passes) // 2],
        "pass_result_bytes": passes[0]["result_bytes"] if passes else 0,
        "empty_job_s_median": sorted(overhead)[5], "w": list(model.w),
        "peak_rss_bytes": peak, "peak_total_rss_bytes": peak_total[0],
    }
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)
    gb = 1e9
    print(f"{party.rows} rows in {party.partitions} partitions ({party.cut_rows} regrouped); "
          f"persisted in {persist_s:.1f} s; "
          f"session {start_s:.1f} s, count+regroup {layout_s:.1f} s, train {train_s:.1f} s; "
          f"{len(passes)} passes, median {report['median_pass_s']:.2f} s, "
          f"{report['pass_result_bytes'] / 1e6:.2f} MB back per pass; empty job "
          f"{report['empty_job_s_median']:.3f} s; peak RSS "
          + ", ".join(f"{k} {v / gb:.2f} GB" for k, v in peak.items())
          + f", total {peak_total[0] / gb:.2f} GB")
    s.stop()


if __name__ == "__main__":
    main()
