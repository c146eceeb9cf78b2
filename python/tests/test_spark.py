"""kinsey.spark on a real Spark: local mode (local[2], with task retries) in this process,
and a standalone cluster (a master and two workers on loopback) in a child process. A
party's release on Spark is the release of the same rows on one machine, byte for byte."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kinsey
import kinsey.spark

from pyspark.sql import SparkSession

HERE = pathlib.Path(__file__).resolve().parent


def _party(rng: np.random.Generator, n: int, d: int) -> pa.Table:
    x = rng.normal(size=(n, d)).astype(np.float32) / np.float32(2 * np.sqrt(d))
    w = np.linspace(-1, 1, d)
    y = np.where(x @ w + 0.1 * rng.normal(size=n) > 0, 1.0, -1.0)
    cols = {"label": pa.array(y)}
    cols.update({f"f{j}": pa.array(x[:, j]) for j in range(d)})
    return pa.table(cols)


@pytest.fixture(scope="module")
def parties(tmp_path_factory) -> list[pathlib.Path]:
    """Three parties as Parquet: one file of 20,001 rows, one of 12,288 (three whole
    groups), one directory of three files of odd lengths."""
    d = tmp_path_factory.mktemp("spark-parties")
    rng = np.random.default_rng(5)
    out = []
    for i, n in enumerate([20_001, 12_288]):
        p = d / f"party-{i + 1}.parquet"
        pq.write_table(_party(rng, n, 6), p, row_group_size=3_000)
        out.append(p)
    third = d / "party-3"
    third.mkdir()
    for i, n in enumerate([4_097, 1, 5_000]):
        pq.write_table(_party(rng, n, 6), third / f"part-{i}.parquet")
    out.append(third)
    return out


@pytest.fixture(scope="module")
def spark():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    s = (SparkSession.builder.master("local[2,4]").appName("kinsey-tests")
         .config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "4")
         .getOrCreate())
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


ARGS = dict(label="label", epsilon=1.0, seed=11, aggregation="plaintext", row_transform="clip")


def _released(model: kinsey.Model, d: pathlib.Path) -> bytes:
    model.save(d / "model.json")
    return (d / "model.json").read_bytes()


def _local(spark, parties, **args) -> kinsey.Model:
    """The release on this machine of the rows Spark reads, in its order: a file is read in
    its order at any partitioning, but Spark reads a directory's files in an order of its
    own (largest first), so the directory party is given as the table Spark reads."""
    here = [str(p) if p.is_file() else spark.read.parquet(str(p)).toArrow() for p in parties]
    return kinsey.train(here, **{**ARGS, **args})


def test_the_release_is_the_local_release_whatever_the_partitioning(spark, parties, tmp_path):
    local = _local(spark, parties)
    want = _released(local, tmp_path / "local")
    for max_bytes in ["128MB", "40000", "9999"]:
        spark.conf.set("spark.sql.files.maxPartitionBytes", max_bytes)
        spark.conf.set("spark.sql.files.openCostInBytes", "0")
        dfs = [spark.read.parquet(str(p)) for p in parties]
        made = [kinsey.spark.SparkParty(df, label="label", name=f"p{i}")
                for i, df in enumerate(dfs)]
        on_spark = kinsey.spark.train(made, **ARGS)
        assert on_spark.release == local.release, max_bytes
        assert _released(on_spark, tmp_path / max_bytes) == want, max_bytes
        if max_bytes == "9999":
            # Many partitions, boundaries inside groups: rows were regrouped.
            assert all(p.partitions > 3 for p in made)
            assert any(p.cut_rows > 0 for p in made)
    spark.conf.unset("spark.sql.files.maxPartitionBytes")


def test_intercept_and_diagnostics(spark, parties):
    args = {**ARGS, "intercept": 0.5, "diagnostics": True}
    local = _local(spark, parties, intercept=0.5, diagnostics=True)
    dfs = [spark.read.parquet(str(p)) for p in parties]
    on_spark = kinsey.spark.train(dfs, **args)
    assert on_spark.release == local.release
    # The pooled baseline adds party by party on Spark: counts agree exactly, objectives
    # within rounding.
    got, want = on_spark.diagnostics["diagnostics"], local.diagnostics["diagnostics"]
    for a, b in zip(got["models"], want["models"]):
        assert a["train_error"] == b["train_error"], a["name"]
        assert a["objective"] == pytest.approx(b["objective"], rel=1e-9), a["name"]
    assert "spark (local[2,4]" in got["parties"][0]["device"]


def test_bad_inputs_are_named(spark, parties, tmp_path):
    df = spark.read.parquet(str(parties[0]))
    with pytest.raises(kinsey.InputError, match="column 'y': label column not found"):
        kinsey.spark.train([df, df, df], label="y", epsilon=1.0)
    named = df.withColumn("f0", df["f0"].cast("string"))
    with pytest.raises(kinsey.InputError, match="column 'f0'.*non-numeric feature"):
        kinsey.spark.train([named, df, df], label="label", epsilon=1.0,
                           features=["f0", "f1"], aggregation="plaintext")
    # A NaN at row 5,000 of a party is named by its column and row, from the executor.
    t = pq.read_table(parties[0])
    f2 = t.column("f2").to_numpy().copy()
    f2[5_000] = np.nan
    bad = tmp_path / "nan.parquet"
    pq.write_table(t.set_column(t.schema.get_field_index("f2"), "f2", pa.array(f2)), bad)
    with pytest.raises(kinsey.InputError, match=r"column 'f2', row 5000: non-finite"):
        kinsey.spark.train([spark.read.parquet(str(bad)), df, df], **ARGS)
    with pytest.raises(kinsey.ParameterError, match="one DataFrame each"):
        kinsey.spark.train(df, **ARGS)
    with pytest.raises(kinsey.ParameterError, match="'memory_limit'"):
        kinsey.spark.train([df, df, df], memory_limit="1GiB", **ARGS)


def test_an_executor_lost_mid_pass(spark, parties, tmp_path):
    """Spark retries a task whose executor died: the release is the same. One that dies on
    every try stops the run with an error naming the party, and nothing is released."""
    local = _local(spark, parties)
    dfs = [spark.read.parquet(str(p)) for p in parties]
    made = [kinsey.spark.SparkParty(df, label="label", name=f"p{i}") for i, df in enumerate(dfs)]
    marker = tmp_path / "die"
    os.environ["KINSEY_SPARK_TEST_DIE"] = str(marker)
    try:
        marker.write_text("once")
        assert kinsey.spark.train(made, **ARGS).release == local.release
        assert not marker.exists(), "the hook did not fire"
        marker.write_text("always")
        with pytest.raises(kinsey.BackendError, match="p0: a Spark job failed"):
            kinsey.spark.train(made, **ARGS)
    finally:
        os.environ.pop("KINSEY_SPARK_TEST_DIE", None)


def test_statistics_are_the_local_releases(spark, parties):
    """Histograms, counts, sums, means, variances and quantiles of a DataFrame's column (cut
    into partitions inside row groups) are the releases of the same values as a table on
    one machine, byte for byte with a seed, but for the input's name."""
    spark.conf.set("spark.sql.files.maxPartitionBytes", "60000")
    spark.conf.set("spark.sql.files.openCostInBytes", "0")
    try:
        from pyspark.sql import functions as F
        df = spark.read.parquet(str(parties[0]))
        df = df.withColumn("sign", F.when(df["f0"] > 0, "pos").otherwise("neg"))
        here = df.toArrow()
        table = kinsey.spark.SparkParty(df, name="t")
        assert table.partitions > 2 and table.cut_rows > 0
        same = lambda a, b: ({**a.report, "input": None} == {**b.report, "input": None})  # noqa: E731
        for kw in [dict(bins=(-0.5, 0.5, 10)), dict(categories=["pos", "neg"]),
                   dict(bins=(-0.5, 0.5, 4), where="f1 > 0")]:
            col = "sign" if "categories" in kw else "f0"
            args = dict(column=col, epsilon=1.0, neighbours="bounded", seed=3, **kw)
            assert same(kinsey.spark.histogram(table, **args), kinsey.histogram(here, **args)), kw
        for stat, nb in [("sum", "unbounded"), ("mean", "bounded"), ("variance", "unbounded"),
                         ("quantiles", "bounded")]:
            args = dict(column="f1", bounds=(-0.4, 0.4), epsilon=1.0, neighbours=nb, seed=4)
            got = getattr(kinsey.spark.stats, stat)(table, **args)
            assert same(got, getattr(kinsey.stats, stat)(here, **args)), (stat, nb)
        # Unseeded: fresh noise, the same public parameters.
        a = kinsey.spark.stats.mean(df, column="f1", bounds=(-0.4, 0.4), epsilon=1.0,
                                    neighbours="bounded")
        assert a.guarantee.epsilon == 1.0
        with pytest.raises(kinsey.InputError, match="column 'nope'"):
            kinsey.spark.stats.mean(table, column="nope", bounds=(0, 1), epsilon=1.0,
                                    neighbours="bounded")
        table.release()
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")


def test_a_standalone_cluster(parties, tmp_path):
    """A master and two workers on loopback, started and stopped by the child script:
    one training run publishes the local release (single-file parties: read in file
    order), and one seeded histogram is the local table's."""
    parties = parties[:2] * 2
    local = kinsey.train([str(p) for p in parties], **ARGS)
    out = tmp_path / "release.json"
    r = subprocess.run([sys.executable, str(HERE / "spark_cluster.py"), str(out),
                        *[str(p) for p in parties]], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    got = json.loads(out.read_text())
    assert got["release"] == local.release
    here = kinsey.histogram(pq.read_table(parties[0]), column="f0", bins=(-0.5, 0.5, 8),
                            epsilon=1.0, neighbours="bounded", seed=3)
    assert {**got["histogram"], "input": None} == {**here.report, "input": None}


def test_a_party_on_spark_in_a_tls_session_with_parties_on_one_machine(spark, cli, tmp_path):
    """Party 2 of a three-party session runs on Spark (kinsey.spark.party), parties 1 and 3
    and the curator are `kinsey party` / `kinsey curator` processes, over the session's
    mutual TLS: everyone publishes the model `kinsey demo` publishes in one process with the
    same seed, byte for byte."""
    import tomllib
    s = tmp_path / "s"
    common = ["--dim", "4", "--smallest-party", "5000", "--seed", "5", "--key-bits", "512",
              "--allow-insecure-test-keys"]
    subprocess.run([str(cli), "session", "init", "--parties", "3", "--out", str(s), *common,
                    "--connect-window", "300"], check=True, capture_output=True)
    env = {**os.environ, "KINSEY_NO_PROGRESS": "1"}
    procs = [subprocess.Popen([str(cli), role, "--config", str(s / f"{name}.toml")],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
             for role, name in [("party", "party-1"), ("party", "party-3"),
                                ("curator", "curator")]]
    try:
        cfg = tomllib.loads((s / "party-2.toml").read_text())
        data = pathlib.Path(cfg["data"]["path"])
        data = data if data.is_absolute() else s / data
        spark.conf.set("spark.sql.files.maxPartitionBytes", "20000")
        df = spark.read.parquet(str(data))
        assert df.rdd.getNumPartitions() > 1
        model = kinsey.spark.party(df, config=s / "party-2.toml", label="label")
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
        outs = [p.communicate(timeout=300)[0].decode() for p in procs]
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out
    demo = tmp_path / "demo"
    subprocess.run([str(cli), "demo", "--out", str(demo), "--parties", "3", *common,
                    "--no-diagnostics"], check=True, capture_output=True, env=env)
    want = (demo / "model.json").read_bytes()
    published = json.loads(want)["w"]
    assert list(model.w) == published
    for who in ["curator", "party-1", "party-2", "party-3"]:
        got = json.loads((s / who / "out" / "model.json").read_text())["w"]
        assert got == published, who
    with pytest.raises(kinsey.ParameterError, match="not the session's label column"):
        kinsey.spark.party(df, config=s / "party-2.toml", label="f1")
