"""A Spark standalone cluster on loopback for one test: a master and two workers (one core
each) started as processes, a kinsey.spark run against it, then everything stopped.

    python spark_cluster.py OUT.json PARTY...

writes the release of kinsey.spark.train over the parties (Parquet paths), and a seeded
histogram of the first party's column f0, to OUT.json."""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pyspark


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(port: int, proc: subprocess.Popen, what: str, limit: float = 120) -> None:
    t = time.time()
    while time.time() - t < limit:
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.3)
    raise SystemExit(f"{what} did not listen on {port} within {limit} s")


@contextlib.contextmanager
def standalone(workers: int = 2, cores: int = 1, memory: str = "1g"):
    """A master and `workers` workers on loopback, started here and stopped on exit;
    yields (the master's URL, the environment the application needs)."""
    home = pathlib.Path(pyspark.__file__).parent
    spark_class = str(home / "bin" / "spark-class")
    work = pathlib.Path(tempfile.mkdtemp(prefix="kinsey-spark-"))
    here = pathlib.Path(__file__).resolve().parents[1]
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join([str(here), os.environ.get("PYTHONPATH", "")])}
    port = free_port()
    procs = []

    def start(args: list[str], log: str) -> subprocess.Popen:
        f = open(work / log, "w")
        p = subprocess.Popen([spark_class, *args], env=env, stdout=f, stderr=subprocess.STDOUT,
                             start_new_session=True)
        procs.append(p)
        return p

    try:
        master = start(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                        "--port", str(port), "--webui-port", str(free_port())], "master.log")
        wait_for(port, master, "the master")
        url = f"spark://127.0.0.1:{port}"
        for i in range(workers):
            start(["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                   "--cores", str(cores), "--memory", memory, "--webui-port", str(free_port()),
                   "--work-dir", str(work / f"worker-{i}"), url], f"worker-{i}.log")
        yield url, env
    finally:
        for p in reversed(procs):
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)


def session(url: str, env: dict, executors: int, **conf: str):
    """A session on the cluster at `url`, once `executors` executors have registered."""
    from pyspark.sql import SparkSession
    # The executors' Python is the driver's PYSPARK_PYTHON (the spark.pyspark.python
    # setting is read by spark-submit only).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    b = (SparkSession.builder.master(url).appName("kinsey-standalone")
         .config("spark.ui.enabled", "false")
         .config("spark.driver.host", "127.0.0.1")
         .config("spark.pyspark.python", sys.executable)
         .config("spark.executorEnv.PYTHONPATH", env["PYTHONPATH"]))
    for k, v in conf.items():
        b = b.config(k, v)
    s = b.getOrCreate()
    s.sparkContext.setLogLevel("ERROR")
    t = time.time()
    while s.sparkContext._jsc.sc().getExecutorMemoryStatus().size() < executors + 1:
        if time.time() - t > 120:
            raise SystemExit(f"{executors} executors did not register within 120 s")
        time.sleep(0.5)
    return s


def main() -> None:
    out, paths = pathlib.Path(sys.argv[1]), sys.argv[2:]
    with standalone() as (url, env):
        import kinsey
        import kinsey.spark
        s = session(url, env, 2, **{"spark.executor.memory": "512m",
                                    "spark.sql.files.maxPartitionBytes": "40000",
                                    "spark.sql.files.openCostInBytes": "0"})
        t = time.time()
        dfs = [s.read.parquet(p) for p in paths]
        model = kinsey.spark.train(dfs, label="label", epsilon=1.0, seed=11,
                                   aggregation="plaintext", row_transform="clip")
        hist = kinsey.spark.histogram(dfs[0], column="f0", bins=(-0.5, 0.5, 8), epsilon=1.0,
                                      neighbours="bounded", seed=3)
        out.write_text(json.dumps({"release": model.release, "histogram": hist.report}))
        print(f"trained and counted on {url} in {time.time() - t:.1f} s")
        s.stop()


if __name__ == "__main__":
    main()
