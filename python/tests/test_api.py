"""The Python API on the shared data, against the CLI it must equal."""

from __future__ import annotations

import json
import math
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

import kinsey
from conftest import run

SCALE = 1 / math.sqrt(14)  # a9a rows have 11 to 14 ones: this brings them into the unit ball


def cli_train(cli, a9a, out: pathlib.Path, seed: int, extra: str = "") -> None:
    parties = ", ".join(f'"{p}"' for p in a9a["parties"])
    cfg = out.with_suffix(".toml")
    cfg.write_text(textwrap.dedent(f"""\
        [data]
        parties = [{parties}]
        label = "label"
        row_transform = "scale"
        row_scale = {SCALE!r}
        {extra}[privacy]
        epsilon = 1.0
        seed = {seed}
        [compute]
        device = "cpu"
        [output]
        dir = "{out}"
        """))
    run(cli, "train", "--config", str(cfg))


def accuracy(model: kinsey.Model, table: pa.Table) -> float:
    y = table.column("label").to_numpy()
    return float(np.mean(model.predict(table) == y))


def test_train_publishes_the_clis_model_byte_for_byte(cli, a9a, tmp_path):
    """A seeded Python training over pyarrow tables publishes the CLI's model.json (same
    parties, same seed), so its test accuracy on a9a.t is the CLI's."""
    cli_train(cli, a9a, tmp_path / "cli", seed=11)
    m = kinsey.train(a9a["tables"], label="label", epsilon=1.0, row_transform="scale",
                     row_scale=SCALE, device="cpu", seed=11)
    m.save(tmp_path / "py-model.json")
    assert (tmp_path / "py-model.json").read_bytes() == (tmp_path / "cli/model.json").read_bytes()
    report = json.loads((tmp_path / "cli/report.json").read_text())
    assert m.release == report
    test = pq.read_table(a9a["test"])
    cli_model = kinsey.Model.load(tmp_path / "cli/model.json")
    acc, cli_acc = accuracy(m, test), accuracy(cli_model, test)
    assert abs(acc - cli_acc) <= 0.02 and acc > 0.75, (acc, cli_acc)
    assert m.w.dtype == np.float64 and m.w.shape == (123,)
    assert m.features == cli_model.features and len(m.features) == 123
    g = m.guarantee
    assert g["epsilon"] == 1.0 and {"delta", "neighbours", "mechanism", "sensitivity"} <= set(vars(g))
    assert m.diagnostics is None


def test_parquet_paths_within_a_memory_limit_publish_the_clis_model(cli, a9a, tmp_path):
    """Parties given as Parquet paths with a ``memory_limit`` they do not fit together are
    fitted one by one, streamed through a private folder under ``spill_dir`` that is gone
    afterwards, and publish the CLI's in-memory model byte for byte; a limit that cannot
    hold one block, or that is not a size, is refused by name."""
    cli_train(cli, a9a, tmp_path / "cli", seed=11)
    spill = tmp_path / "spill"
    spill.mkdir()
    m = kinsey.train(a9a["parties"], label="label", epsilon=1.0, row_transform="scale",
                     row_scale=SCALE, device="cpu", seed=11, diagnostics=True,
                     memory_limit="120MiB", spill_dir=spill)
    m.save(tmp_path / "py-model.json")
    assert (tmp_path / "py-model.json").read_bytes() == (tmp_path / "cli/model.json").read_bytes()
    assert "streamed from disk" in json.dumps(m.diagnostics)
    assert list(spill.iterdir()) == []
    for limit, match in [(1 << 20, "memory_limit"), ("lots", "memory_limit")]:
        with pytest.raises(kinsey.KinseyError, match=match):
            kinsey.train(a9a["parties"], label="label", epsilon=1.0, aggregation="plaintext",
                         memory_limit=limit)


def test_an_intercept_equals_the_cli_and_scores_as_coef_and_bias(cli, a9a, tmp_path):
    """``intercept=c`` publishes the CLI's model with ``[data] intercept = c``; the model
    reads the 123 input columns and its score is ``T(x) . coef + bias``."""
    cli_train(cli, a9a, tmp_path / "cli", seed=4, extra="intercept = 0.5\n")
    m = kinsey.train(a9a["tables"], label="label", epsilon=1.0, row_transform="scale",
                     row_scale=SCALE, device="cpu", seed=4, intercept=0.5)
    m.save(tmp_path / "py-model.json")
    assert (tmp_path / "py-model.json").read_bytes() == (tmp_path / "cli/model.json").read_bytes()
    assert m.intercept == 0.5 and m.features[-1] == "(intercept)" and m.w.shape == (124,)
    assert m.coef.shape == (123,) and m.bias == 0.5 * m.w[-1]
    test = pq.read_table(a9a["test"])
    x = np.column_stack([test.column(f).to_numpy() for f in m.features[:-1]]) * SCALE
    z = m.decision_function(test)
    assert np.allclose(z, x @ m.coef + m.bias, atol=1e-5)
    assert accuracy(m, test) > 0.75
    with pytest.raises(kinsey.KinseyError, match=r"\(0, 1\)"):
        kinsey.train(a9a["tables"], label="label", epsilon=1.0, row_transform="scale",
                     row_scale=SCALE, aggregation="plaintext", intercept=1.0)


def test_predictions_and_diagnostics(a9a):
    m = kinsey.train(a9a["tables"], label="label", epsilon=2.0, row_transform="scale",
                     row_scale=SCALE, backend="mock", aggregation="plaintext", seed=3,
                     diagnostics=True)
    test = pq.read_table(a9a["test"])
    p = m.predict(test)
    assert p.dtype == np.int8 and set(np.unique(p)) <= {-1, 1} and len(p) == test.num_rows
    q = m.predict_proba(test)
    assert q.dtype == np.float64 and np.all((q >= 0) & (q <= 1))
    assert np.array_equal(p, np.where(q > 0.5, 1, -1))
    assert next(iter(m.diagnostics)) == "NOT PRIVATE"
    # A table without the label column scores too; a table without a feature does not.
    no_label = test.drop_columns(["label"])
    assert np.array_equal(m.predict(no_label), p)
    with pytest.raises(kinsey.KinseyError, match="f7"):
        m.predict(test.drop_columns(["f7"]))


def test_tables_cross_without_a_copy(a9a, flights):
    """The engine reads the producer's column buffers themselves: each chunk's first value
    is at the address pyarrow holds it (a copy would be elsewhere)."""
    for t in (a9a["tables"][0], flights):
        seen = kinsey._kinsey._buffer_addresses(t)
        for c, col in enumerate(t.columns):
            if not pa.types.is_primitive(col.type):
                continue
            width = col.type.bit_width // 8
            own = [chunk.buffers()[1].address + chunk.offset * width for chunk in col.chunks]
            assert seen[c] == own, t.schema.field(c).name


@pytest.fixture(scope="session")
def flights(shared) -> pa.Table:
    return pq.read_table(shared / "flights-3m/flights-3m.parquet")


def test_histogram_equals_the_cli(cli, shared, flights, tmp_path):
    """Over the file: the CLI's report. Over the table (pyarrow, Polars, pandas): the same
    bins and guarantee, and one table's noise whatever library holds it."""
    path = shared / "flights-3m/flights-3m.parquet"
    args = dict(column="delay", bins=(-60, 180, 24), epsilon=0.5, neighbours="unbounded",
                seed=1)
    run(cli, "histogram", "--input", str(path), "--column", "delay", "--bins", "-60:180:24",
        "--epsilon", "0.5", "--neighbours", "unbounded", "--seed", "1", "--out",
        str(tmp_path / "h"))
    cli_report = json.loads(next((tmp_path / "h").glob("*.json")).read_text())
    r = kinsey.histogram(str(path), **args)
    assert r.report == cli_report
    assert r.table.num_rows == 26
    # The CLI's histogram.csv columns, meaning the same: count is the published count.
    assert r.table.column_names == ["bin", "noisy_count", "count"]
    csv = pcsv.read_csv(tmp_path / "h/histogram.csv")
    assert csv.column("count").to_pylist() == r.table.column("count").to_pylist()
    assert csv.column("noisy_count").to_pylist() == r.table.column("noisy_count").to_pylist()
    assert r.guarantee["epsilon"] == 0.5 and r.guarantee.noise_std > 0
    t = kinsey.histogram(flights, **args)
    assert t.table.column("bin") == r.table.column("bin")
    polars = pytest.importorskip("polars")
    p = kinsey.histogram(polars.from_arrow(flights.select(["delay"])), **args)
    assert p.table == t.table
    pandas_t = kinsey.histogram(flights.select(["delay"]).to_pandas(), **args)
    assert pandas_t.table == t.table


def test_decay_over_numpy_and_the_file(cli, shared, tmp_path):
    """Bike rentals per hour: over the file, the CLI's estimates and report; over a numpy
    array, estimates of the same length and guarantee; allwindow gives one column each."""
    path = shared / "bike-sharing/hour.csv"
    run(cli, "decay", "--input", str(path), "--column", "cnt", "--model", "window",
        "--window", "24", "--epsilon", "1", "--bound", "1000", "--seed", "3",
        "--device", "cpu", "--out", str(tmp_path / "d.csv"))
    cli_est = pcsv.read_csv(tmp_path / "d.csv").column(1).to_numpy()
    cli_report = json.loads((tmp_path / "d.csv.report.json").read_text())
    r = kinsey.decay(str(path), column="cnt", model="window", window=24, epsilon=1.0,
                     bound=1000, seed=3)
    assert np.array_equal(r.values, cli_est)
    assert r.report == cli_report
    cnt = pcsv.read_csv(path).column("cnt").to_numpy().astype(np.float64)
    v = kinsey.decay(cnt, model="window", window=24, epsilon=1.0, bound=1000, seed=3)
    assert v.values.shape == cnt.shape and v.values.dtype == np.float64
    assert v.guarantee == r.guarantee
    a = kinsey.decay(cnt, model="allwindow", windows=[24, 168], epsilon=1.0, bound=1000)
    assert a.values.shape == (len(cnt), 2) and len(a.columns) == 2
    # The k-ary tree (issue 38): the CLI's estimates and report, over the file.
    run(cli, "decay", "--input", str(path), "--column", "cnt", "--model", "window",
        "--window", "24", "--epsilon", "1", "--bound", "1000", "--seed", "3",
        "--mechanism", "kary", "--out", str(tmp_path / "k.csv"))
    k = kinsey.decay(str(path), column="cnt", model="window", window=24, epsilon=1.0,
                     bound=1000, seed=3, mechanism="kary")
    assert np.array_equal(k.values, pcsv.read_csv(tmp_path / "k.csv").column(1).to_numpy())
    assert "-ary tree" in k.report["calibration"]["model"]
    # The zCDP factorization (issue 38): the CLI's estimates and report, over the file.
    run(cli, "decay", "--input", str(path), "--column", "cnt", "--model", "window",
        "--window", "24", "--privacy", "zcdp", "--rho", "0.5", "--bound", "1000",
        "--seed", "3", "--mechanism", "blt", "--out", str(tmp_path / "z.csv"))
    z = kinsey.decay(str(path), column="cnt", model="window", window=24, rho=0.5,
                     bound=1000, seed=3, mechanism="blt")
    assert np.array_equal(z.values, pcsv.read_csv(tmp_path / "z.csv").column(1).to_numpy())
    assert z.report == json.loads((tmp_path / "z.csv.report.json").read_text())
    assert z.report["guarantee"]["kind"] == "zcdp-converted"
    assert z.report["calibration"]["rho"] == 0.5
    with pytest.raises(kinsey.KinseyError, match="rho"):
        kinsey.decay(cnt, model="window", window=24, rho=0.5, epsilon=1.0, bound=1000)


def test_errors_name_the_problem(a9a, flights):
    with pytest.raises(kinsey.KinseyError, match="nope") as e:
        kinsey.histogram(flights, column="nope", epsilon=1, neighbours="bounded")
    assert isinstance(e.value, ValueError) and "<table>" in str(e.value)
    with pytest.raises(kinsey.KinseyError, match="epsilon"):
        kinsey.histogram(flights, column="delay", epsilon=-1, neighbours="bounded")
    with pytest.raises(kinsey.KinseyError, match="neighbours"):
        kinsey.histogram(flights, column="delay", epsilon=1, neighbours="sideways")
    with pytest.raises(kinsey.KinseyError, match="party 2"):
        bad = a9a["tables"][1].drop_columns(["label"])
        kinsey.train([a9a["tables"][0], bad, a9a["tables"][2]], label="label", epsilon=1)
    with pytest.raises(kinsey.KinseyError, match="row_scale"):
        kinsey.train(a9a["tables"], label="label", epsilon=1, row_transform="scale")
    with pytest.raises(kinsey.KinseyError, match="not an Arrow table"):
        kinsey.histogram([1, 2, 3], column="x", epsilon=1, neighbours="bounded")
    with pytest.raises(kinsey.KinseyError, match="window"):
        kinsey.decay(np.ones(10), model="window", epsilon=1, bound=1)
    with pytest.raises(kinsey.KinseyError, match="bound is required"):
        kinsey.decay(np.ones(10), model="window", window=2, epsilon=1)


def test_backends_and_version():
    names = [n for n, _ in kinsey.backends()]
    assert {"paillier", "tfhe", "mock"} <= set(names)
    assert kinsey.__version__.count(".") == 2


def test_ctrl_c_interrupts_a_long_call(tmp_path):
    """SIGINT during a long training (TFHE keys alone take seconds) raises
    KeyboardInterrupt at once, not when the engine finishes."""
    script = tmp_path / "long.py"
    script.write_text(textwrap.dedent("""\
        import sys, time, numpy as np, pyarrow as pa, kinsey
        rng = np.random.default_rng(1)
        def party(n):
            x = rng.uniform(-0.4, 0.4, size=(n, 4))
            y = np.where(x.sum(axis=1) > 0, 1.0, -1.0)
            return pa.table({**{f"f{i}": x[:, i] for i in range(4)}, "label": y})
        print("ready", flush=True)
        t0 = time.time()
        try:
            kinsey.train([party(300) for _ in range(3)], label="label", epsilon=1,
                         backend="tfhe")
            print("finished", time.time() - t0, flush=True)
        except KeyboardInterrupt:
            print("interrupted", time.time() - t0, flush=True)
        """))
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    time.sleep(3)
    sent = time.time()
    p.send_signal(signal.SIGINT)
    out = p.stdout.readline().split()
    p.wait(timeout=60)
    assert out and out[0] == "interrupted", out
    assert time.time() - sent < 5, "the interrupt waited for the engine"


def test_parties_stream_batch_by_batch(a9a):
    """Parties as RecordBatchReaders (Parquet read batch by batch, never whole) and as
    Polars DataFrames train the model the pyarrow tables train."""
    kw = dict(label="label", epsilon=1.0, row_transform="scale", row_scale=SCALE,
              aggregation="plaintext", seed=5)
    tables = kinsey.train(a9a["tables"], **kw)

    def reader(path):
        pf = pq.ParquetFile(path)
        return pa.RecordBatchReader.from_batches(pf.schema_arrow, pf.iter_batches(1000))

    streamed = kinsey.train([reader(p) for p in a9a["parties"]], **kw)
    assert np.array_equal(streamed.w, tables.w)
    polars = pytest.importorskip("polars")
    frames = kinsey.train([polars.from_arrow(t) for t in a9a["tables"]], **kw)
    assert np.array_equal(frames.w, tables.w)


def test_parties_as_parquet_paths(a9a):
    """Parquet paths are read by the engine, as the CLI reads them: the same model."""
    kw = dict(label="label", epsilon=1.0, row_transform="scale", row_scale=SCALE,
              aggregation="plaintext", seed=5)
    assert np.array_equal(kinsey.train(a9a["parties"], **kw).w,
                          kinsey.train(a9a["tables"], **kw).w)
    with pytest.raises(kinsey.KinseyError, match="nowhere.parquet"):
        kinsey.train(["nowhere.parquet"] + a9a["parties"][1:], **kw)


BIKE_COLUMNS = ["temp", "atemp", "hum", "windspeed", "hr:0:23", "cnt:0:1000"]


def test_sulq_equals_the_cli(cli, shared, tmp_path):
    """SuLQ k-means and PCA of bike rentals: over the file, the CLI's release; over a
    pyarrow table and a pandas frame of it, one release (the same values, the same
    noise) with the same columns and guarantee."""
    path = shared / "bike-sharing/hour.csv"
    common = ["--input", str(path), "--columns", ",".join(BIKE_COLUMNS), "--epsilon", "1",
              "--neighbours", "bounded", "--seed", "2"]
    run(cli, "sulq", "kmeans", *common, "--k", "4", "--device", "cpu", "--out",
        str(tmp_path / "km"))
    run(cli, "sulq", "pca", *common, "--components", "3", "--out", str(tmp_path / "pca"))
    kw = dict(columns=BIKE_COLUMNS, epsilon=1.0, neighbours="bounded", seed=2)
    km = kinsey.sulq.kmeans(str(path), k=4, device="cpu", **kw)
    assert km.report == json.loads((tmp_path / "km/report.json").read_text())
    assert km.table.num_rows == 4
    assert km.table.column_names == ["center", "noisy_size", "temp", "atemp", "hum",
                                     "windspeed", "hr", "cnt"]
    assert km.guarantee["epsilon"] <= 1.0 and km.guarantee.neighbours.startswith("bounded")
    # Centres in the columns' own units, as the CLI's centers.csv: hours, not [0, 1].
    assert max(km.table["hr"].to_pylist()) > 1.0
    assert km.table["hr"].to_pylist() == [
        float(r.split(",")[6]) for r in (tmp_path / "km/centers.csv").read_text().split()[1:]]
    pc = kinsey.sulq.pca(str(path), components=3, **kw)
    assert pc.report == json.loads((tmp_path / "pca/report.json").read_text())
    assert pc.table.num_rows == 3
    hour = pcsv.read_csv(path)
    t = kinsey.sulq.kmeans(hour, k=4, device="cpu", **kw)
    assert t.table.column_names == km.table.column_names
    assert kinsey.sulq.kmeans(hour.to_pandas(), k=4, device="cpu", **kw).table == t.table
    with pytest.raises(kinsey.KinseyError, match="cnt"):
        kinsey.sulq.pca(hour, components=2, **{**kw, "columns": ["temp", "cnt"]})


def test_tree_equals_the_cli(cli, a9a, tmp_path):
    """A DP tree of a9a: over the file, the CLI's report.json and tree.json; over the
    table, a tree of the same shape; the non-private baseline is no release."""
    path = a9a["dir"] / "a9a.parquet"
    run(cli, "tree", "--input", str(path), "--epsilon", "1", "--neighbours", "bounded",
        "--seed", "3", "--out", str(tmp_path / "tree"))
    r = kinsey.tree(str(path), label="label", epsilon=1.0, neighbours="bounded", seed=3)
    assert r.report == json.loads((tmp_path / "tree/report.json").read_text())
    assert r.tree == json.loads((tmp_path / "tree/tree.json").read_text())
    assert r.guarantee["epsilon"] == 1.0
    t = kinsey.tree(pq.read_table(path), label="label", epsilon=1.0, neighbours="bounded",
                    depth=3)
    assert t.report["config"]["depth"] == 3 and t.report["input"] == "<table>"
    with pytest.raises(kinsey.KinseyError, match="selection"):
        kinsey.tree(str(path), label="label", epsilon=1.0, neighbours="bounded",
                    selection="none")


def test_stats_equal_the_cli(cli, shared, tmp_path):
    """kinsey.stats over the file publishes the CLI's report.json (seeded); over a table of
    it, the same statistic with its guarantee; bad parameters are refused."""
    path = shared / "bike-sharing/hour.csv"
    for stat, extra, kw in [
        ("mean", [], {}),
        ("variance", [], {}),
        ("quantiles", ["--levels", "0.1,0.5,0.9"], {"levels": [0.1, 0.5, 0.9]}),
    ]:
        out = tmp_path / stat
        run(cli, "stats", stat, "--input", str(path), "--column", "cnt", "--bounds", "0:1000",
            "--epsilon", "1", "--neighbours", "bounded", "--seed", "4", *extra, "--out",
            str(out))
        fn = getattr(kinsey.stats, stat)
        r = fn(str(path), column="cnt", bounds=(0, 1000), epsilon=1.0, neighbours="bounded",
               seed=4, **kw)
        assert r.report == json.loads((out / "report.json").read_text())
        assert r.table.column_names == ["statistic", "value", "noise_std"]
        assert r.guarantee["epsilon"] == 1.0
    t = kinsey.stats.sum(pcsv.read_csv(path), column="cnt", bounds=(0, 1000), epsilon=1.0,
                         neighbours="unbounded")
    assert t.table.num_rows == 1 and abs(t.table["value"][0].as_py() - 3.29e6) < 1e5
    with pytest.raises(kinsey.KinseyError, match="bounds"):
        kinsey.stats.mean(str(path), column="cnt", bounds=(5, 1), epsilon=1.0,
                          neighbours="bounded")


def test_one_ledger_for_python_and_the_cli(cli, shared, tmp_path):
    """Third privacy audit, item 4: a release made from Python is charged to the ledger the
    CLI charges (the same keyed file), before its noise; past the budget both refuse; a
    table in memory needs its data set named, and its copy is the same data set."""
    path = shared / "bike-sharing/hour.csv"
    ledger = kinsey.Ledger(tmp_path / "budget.jsonl", budget=1.0)
    kinsey.stats.mean(str(path), column="cnt", bounds=(0, 1000), epsilon=0.6,
                      neighbours="bounded", ledger=ledger)
    r = subprocess.run([str(cli), "stats", "sum", "--input", str(path), "--column", "cnt",
                        "--bounds", "0:1000", "--epsilon", "0.5", "--neighbours", "bounded",
                        "--out", str(tmp_path / "o"), "--ledger", str(tmp_path / "budget.jsonl")],
                       capture_output=True, text=True, env={**os.environ, "KINSEY_NO_PROGRESS": "1"})
    assert r.returncode != 0 and "budget exceeded" in r.stderr, r.stderr
    with pytest.raises(kinsey.BudgetExhausted, match="budget exceeded"):
        kinsey.histogram(str(path), column="cnt", epsilon=0.5, neighbours="bounded",
                         ledger=ledger)
    entries = ledger.entries()
    assert [e["command"] for e in entries] == ["stats mean"]
    assert oct((tmp_path / "budget.jsonl.key").stat().st_mode & 0o777) == "0o600"
    # A table in memory: named, charged, and its copy charged to the same data set.
    table = pcsv.read_csv(path)
    with pytest.raises(kinsey.KinseyError, match="dataset"):
        kinsey.stats.sum(table, column="cnt", bounds=(0, 1000), epsilon=0.5,
                         neighbours="bounded", ledger=kinsey.Ledger(tmp_path / "t.jsonl",
                                                                    budget=1.0))
    named = kinsey.Ledger(tmp_path / "t.jsonl", budget=1.0, dataset="bikes")
    kinsey.stats.sum(table, column="cnt", bounds=(0, 1000), epsilon=0.75,
                     neighbours="bounded", ledger=named)
    other_name = kinsey.Ledger(tmp_path / "t.jsonl", budget=1.0, dataset="bikes-copy")
    with pytest.raises(kinsey.KinseyError, match="bikes"):
        kinsey.sulq.pca(pa.table(table.columns, names=table.column_names),
                        columns=["temp", "hum"], epsilon=0.5, neighbours="bounded",
                        ledger=other_name)
    # Decayed sums too.
    values = np.ones(100)
    kinsey.decay(values, model="running", epsilon=0.5, bound=1.0,
                 ledger=kinsey.Ledger(tmp_path / "d.jsonl", budget=1.0, dataset="ones"))
    with pytest.raises(kinsey.KinseyError, match="budget exceeded"):
        kinsey.decay(values, model="running", epsilon=0.6, bound=1.0,
                     ledger=kinsey.Ledger(tmp_path / "d.jsonl", dataset="ones"))


def test_errors_are_classes_of_their_kind(shared, tmp_path):
    """Issue 54, item 4: every error is a KinseyError subclass of its kind (docs/errors.md),
    the kinds the CLI's exit codes are."""
    path = shared / "bike-sharing/hour.csv"
    kinds = [kinsey.ParameterError, kinsey.InputError, kinsey.BudgetExhausted,
             kinsey.PrivacyRefused, kinsey.BackendError, kinsey.NumericalError,
             kinsey.FileError]
    assert all(issubclass(k, kinsey.KinseyError) for k in kinds)
    assert len(set(kinds)) == len(kinds)
    with pytest.raises(kinsey.ParameterError, match="epsilon"):
        kinsey.histogram(str(path), column="cnt", epsilon=0.0, neighbours="bounded")
    with pytest.raises(kinsey.InputError, match="nope"):
        kinsey.histogram(str(path), column="nope", epsilon=0.5, neighbours="bounded")
    with pytest.raises(kinsey.FileError):
        kinsey.histogram(str(tmp_path / "missing.csv"), column="cnt", epsilon=0.5,
                         neighbours="bounded")
    # Caught as the base class too (code written before the kinds still works).
    with pytest.raises(kinsey.KinseyError):
        kinsey.histogram(str(path), column="cnt", epsilon=0.0, neighbours="bounded")


def test_every_bad_argument_is_a_kinsey_error_naming_it(shared):
    """Issue 55, item 3: a wrong type reaches Python as a ParameterError naming the
    parameter, never as a bare TypeError or an Arrow C Data error."""
    path = shared / "bike-sharing/hour.csv"
    table = pa.table({"x": [0.1, 0.2], "label": [1.0, -1.0]})
    with pytest.raises(kinsey.ParameterError, match="'parties'"):
        kinsey.train(table, label="label", epsilon=1.0)
    with pytest.raises(kinsey.ParameterError, match="'epsilon'"):
        kinsey.histogram(str(path), column="cnt", epsilon="0.5", neighbours="bounded")
    with pytest.raises(kinsey.ParameterError, match="'bins'"):
        kinsey.histogram(str(path), column="cnt", bins=(0, 1000, 10.5), epsilon=0.5,
                         neighbours="bounded")
    with pytest.raises(kinsey.ParameterError, match="'values'"):
        kinsey.decay(np.ones((10, 2)), model="running", epsilon=1.0, bound=1.0)
    with pytest.raises(kinsey.ParameterError, match="'values'"):
        kinsey.decay(["a", "b"], model="running", epsilon=1.0, bound=1.0)
    with pytest.raises(kinsey.ParameterError, match="'k'"):
        kinsey.sulq.kmeans(str(path), columns=["temp"], k="3", epsilon=1.0,
                           neighbours="bounded")


def test_the_stubs_match_the_runtime_signatures():
    """Issue 55, item 6: the .pyi stubs name every parameter the runtime takes, in order,
    of the same kind and with the same default (decay's rho and delta were missing)."""
    import ast
    import inspect

    import kinsey.stats
    import kinsey.sulq

    root = pathlib.Path(kinsey.__file__).parent
    checked = 0
    for stub, module in [("__init__.pyi", kinsey), ("stats.pyi", kinsey.stats),
                         ("sulq.pyi", kinsey.sulq)]:
        tree = ast.parse((root / stub).read_text())
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef) or node.name.startswith("_"):
                continue
            runtime = inspect.signature(getattr(module, node.name))
            a = node.args
            stub_params = [(p.arg, "positional") for p in a.posonlyargs + a.args]
            stub_params += [(p.arg, "keyword") for p in a.kwonlyargs]
            kinds = {inspect.Parameter.KEYWORD_ONLY: "keyword"}
            run_params = [(n, kinds.get(p.kind, "positional"))
                          for n, p in runtime.parameters.items()]
            assert stub_params == run_params, f"{stub} {node.name}"
            defaults = dict(zip([p.arg for p in a.kwonlyargs], a.kw_defaults))
            pos = a.posonlyargs + a.args
            defaults.update(zip([p.arg for p in pos[len(pos) - len(a.defaults):]],
                                a.defaults))
            for n, p in runtime.parameters.items():
                d = defaults.get(n)
                if p.default is inspect.Parameter.empty:
                    assert d is None, f"{stub} {node.name}: {n} has no default at runtime"
                else:
                    assert d is not None, f"{stub} {node.name}: {n} needs its default"
                    if not isinstance(d, ast.Constant) or d.value is not ...:
                        assert ast.literal_eval(d) == p.default, f"{stub} {node.name}: {n}"
            checked += 1
    assert checked >= 10


def test_a_seeded_release_warns_where_python_users_look(shared, cli, tmp_path):
    """Issue 55, item 5: a seed says, through ``warnings`` (KinseyWarning), what the CLI
    says on stderr, once a call; no seed, no warning."""

    path = str(shared / "bike-sharing/hour.csv")
    with pytest.warns(kinsey.KinseyWarning) as caught:
        kinsey.histogram(path, column="cnt", epsilon=0.5, neighbours="bounded", seed=3)
    assert len(caught) == 1
    r = subprocess.run([str(cli), "histogram", "--input", path, "--column", "cnt",
                        "--epsilon", "0.5", "--neighbours", "bounded", "--seed", "3",
                        "--out", str(tmp_path / "h")], capture_output=True, text=True,
                       env={**os.environ, "KINSEY_NO_PROGRESS": "1"})
    assert r.returncode == 0, r.stderr
    assert f"warning: {caught[0].message}" in r.stderr, r.stderr
    # once a run on the CLI too, not once per layer
    assert r.stderr.count(str(caught[0].message)) == 1, r.stderr
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kinsey.histogram(path, column="cnt", epsilon=0.5, neighbours="bounded")


def test_a_decayed_sum_that_says_little_warns_and_names_the_fix(shared):
    """Issue 55, item 5: a window sum whose stated std is most of the largest possible sum
    (24 hours of rentals at bound 1000, epsilon 1) warns, naming what lowers it; the
    README's window over flights' late-arrival bits does not."""
    rentals = np.loadtxt(shared / "bike-sharing/hour.csv", delimiter=",", skiprows=1,
                         usecols=16)
    with pytest.warns(kinsey.KinseyWarning, match="say little") as caught:
        kinsey.decay(rentals, model="window", window=24, epsilon=1, bound=1000)
    msg = str(caught[0].message)
    assert "79%" in msg and "raise epsilon" in msg and "mechanism best" in msg, msg
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        late = kinsey.decay(shared / "flights-3m/arrival_delayed15_bits.txt", model="window",
                            window=1440, epsilon=1, mechanism="best")
    assert late.report["std_at_last_step"] < 0.1 * 1440


def test_every_release_states_one_guarantee(shared, a9a):
    """Issue 55, item 6: the classifier, a histogram, statistics, a tree, SuLQ and a decayed
    sum each state a kinsey.Guarantee (frozen), with rho where zCDP and the noise std where
    one number states it."""
    import dataclasses
    hour = shared / "bike-sharing/hour.csv"
    releases = {
        "classifier": kinsey.train(a9a["tables"], label="label", epsilon=1.0, backend="mock",
                                   row_transform="scale", row_scale=1 / math.sqrt(14)),
        "histogram": kinsey.histogram(hour, column="cnt", epsilon=1.0, neighbours="bounded"),
        "stats": kinsey.stats.sum(hour, column="cnt", bounds=(0, 1000), epsilon=1.0,
                                  neighbours="bounded"),
        "tree": kinsey.tree(a9a["tables"][0], label="label", epsilon=1.0,
                            neighbours="bounded", attributes=["f1", "f2", "f3"]),
        "sulq": kinsey.sulq.kmeans(hour, columns=["temp", "hum"], k=2, epsilon=1.0,
                                   neighbours="bounded", device="cpu"),
        "decay": kinsey.decay(np.ones(100), model="running", epsilon=1.0, bound=1),
        "decay zcdp": kinsey.decay(np.ones(100), model="window", window=10, rho=0.5, bound=1),
    }
    for name, r in releases.items():
        g = r.guarantee
        assert isinstance(g, kinsey.Guarantee), name
        with pytest.raises(dataclasses.FrozenInstanceError):
            g.epsilon = 99.0
        assert g.epsilon > 0 and g.delta >= 0 and g.mechanism and g.sensitivity, name
        assert (g.noise_std is None) == (name == "classifier"), name
    assert releases["decay zcdp"].guarantee.rho == 0.5
    assert releases["decay zcdp"].guarantee.kind == "zcdp-converted"
    assert releases["decay"].guarantee.noise_std == releases["decay"].report["std_at_last_step"]
    # One value states one std: the sum's
    assert releases["stats"].guarantee.noise_std == releases["stats"].table["noise_std"][0].as_py()
    # The classifier's sensitivity depends on the smallest party's size: secret.
    assert releases["classifier"].guarantee.sensitivity_value is None


def test_every_release_has_a_picture(shared, a9a, tmp_path):
    """Issue 55, item 7: Release.plot() and Model.plot() draw the release and its stated
    error (public) with matplotlib: a decayed sum in a band of two stated stds at each step,
    a histogram's and a statistic's error bars, a tree as a diagram."""
    import matplotlib
    matplotlib.use("Agg")
    hour = shared / "bike-sharing/hour.csv"
    d = kinsey.decay(np.ones(3000), model="window", window=100, epsilon=1.0, bound=1,
                     mechanism="kary")
    fig = d.plot(steps=(0, 3000))
    band = fig.axes[0].collections[0].get_paths()[0].vertices[:, 1]
    # The band spans 2 stated stds either side of the estimates (the largest std: at most
    # a few times the last step's).
    width = band.max() - band.min()
    assert width > 4 * d.stds.max() and np.all(d.stds > 0), (width, d.stds.max())
    assert d.stds.shape == d.values.shape and d.stds[-1] == d.report["std_at_last_step"]
    h = kinsey.histogram(hour, column="cnt", bins=(0, 1000, 10), epsilon=1.0,
                         neighbours="bounded")
    ax = h.plot().axes[0]
    assert "eps = 1" in ax.get_title() and "'cnt'" in ax.get_title()
    bar = ax.containers[1]  # the error bars
    seg = bar.lines[2][0].get_segments()[0]
    assert abs((seg[1][1] - seg[0][1]) - 4 * h.guarantee.noise_std) < 1e-6
    m = kinsey.stats.mean(hour, column="cnt", bounds=(0, 1000), epsilon=1.0,
                          neighbours="bounded")
    t = kinsey.tree(a9a["tables"][0], label="label", epsilon=2.0, neighbours="bounded",
                    attributes=["f1", "f2", "f3"], depth=2)
    model = kinsey.train(a9a["tables"], label="label", epsilon=1.0, backend="mock",
                         row_transform="scale", row_scale=1 / math.sqrt(14))
    for name, fig in [("decay", fig), ("histogram", ax.figure), ("mean", m.plot()),
                      ("tree", t.plot()), ("weights", model.plot(top=10))]:
        out = tmp_path / f"{name}.png"
        fig.savefig(out)
        assert out.stat().st_size > 5000, name
    assert len(t.plot().axes[0].texts) >= 3  # the root, its branches, its leaves


def test_binary_labels_are_declared_one_way():
    """Issue 55, item 6: tree takes train's labels= spelling (zero_one is classes 0, 1),
    and refuses both spellings at once."""
    t = pa.table({"a": [i % 2 for i in range(200)], "label": [i % 3 == 0 for i in range(200)]})
    t = t.set_column(1, "label", pa.array([float(i % 3 == 0) for i in range(200)]))
    kw = dict(label="label", epsilon=1.0, neighbours="bounded", attributes=["a"], seed=4)
    assert (kinsey.tree(t, labels="zero_one", **kw).tree
            == kinsey.tree(t, classes=(0, 1), **kw).tree)
    with pytest.raises(kinsey.ParameterError, match="not both"):
        kinsey.tree(t, labels="zero_one", classes=(0, 1), **kw)
    with pytest.raises(kinsey.ParameterError, match="plus_minus_one, zero_one"):
        kinsey.tree(t, labels="01x", **kw)
