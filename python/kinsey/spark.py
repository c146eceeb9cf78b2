"""kinsey on Apache Spark: a party whose rows are a Spark DataFrame (Parquet in a lake, or
any table Spark reads), trained and released as on one machine.

The driver is the party: it runs kinsey's Newton solver, draws the noise and takes part in
the protocol. Every pass of the solver is one Spark job: ``mapInArrow`` runs kinsey's own
kernel (the compiled extension, on every executor) over each partition's Arrow batches and
returns, for each group of 4,096 rows, the group's ``d + 1`` loss and gradient sums; the
driver adds them in group order with the reduction a local run uses. No row reaches the
driver except the Hessian subsample's (32,768 rows at public positions, one job per fit).

The same rows give the same ``model.json`` as ``kinsey train`` or ``kinsey.train`` on one
machine, byte for byte with a seed, whatever the partitioning: before the passes, the rows
of the groups a partition boundary cuts (at most 4,095 on either side of each boundary) are
gathered into whole groups on the executors and kept there (``persist``), so every group is
summed in one place, in order. ``docs/scale-out.md`` says what crosses the network per pass.

Requirements: pyspark 4 (``pip install "kinsey[spark]"``) and Java 17; every executor's
Python must import ``kinsey`` (the same version as the driver's). The DataFrame must read the
same rows in the same order on every pass (a file scan does; persist or checkpoint one
built by a shuffle): a pass that sees other rows stops with a named error.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any, Sequence

import numpy as np
import pyarrow as pa

from . import (BackendError, InputError, KinseyError, Model, ParameterError, Release, _kinsey)
from . import histogram as _histogram
from . import stats as _stats
from . import train as _train

#: Rows per group: the unit of the sums' fixed reduction order and of the data digest.
GROUP_ROWS = 4096

#: The column that carries a row's position while the rows of cut groups are regrouped.
_ROW = "__kinsey_row"

__all__ = ["GROUP_ROWS", "SparkParty", "histogram", "party", "stats", "train"]


def _spark():
    try:
        import pyspark  # noqa: F401
        from pyspark.sql import functions, types
    except ImportError as e:
        raise ParameterError(
            "kinsey.spark needs pyspark 4 and Java 17: pip install \"kinsey[spark]\" "
            "(Java: apt install openjdk-17-jre-headless)") from e
    return functions, types


def _partition_id() -> int:
    from pyspark import TaskContext
    ctx = TaskContext.get()
    if ctx is None:
        raise KinseyError("kinsey.spark: not inside a Spark task")
    return ctx.partitionId()


def _count_rows(batches):
    """Each partition's row count (a job over one column)."""
    n = 0
    for b in batches:
        n += b.num_rows
    yield pa.RecordBatch.from_arrays(
        [pa.array([_partition_id()], pa.int64()), pa.array([n], pa.int64())], names=["p", "n"])


def _whole_groups(a: int, b: int, n: int) -> tuple[int, int]:
    """The rows ``[first, last)`` of the whole groups within rows ``[a, b)`` of ``n``."""
    first = -(-a // GROUP_ROWS) * GROUP_ROWS
    last = n if b == n else b // GROUP_ROWS * GROUP_ROWS
    return (first, last) if first < last else (b, b)


def _cut_rows(layout: list[tuple[int, int, int, int]]):
    """The rows of each partition outside its whole groups, with their positions."""
    def run(batches):
        a, b, first, last = layout[_partition_id()]
        pos = a
        for batch in batches:
            m = batch.num_rows
            idx = np.arange(pos, pos + m, dtype=np.int64)
            keep = (idx < first) | (idx >= last)
            if keep.any():
                sel = batch.filter(pa.array(keep))
                yield sel.append_column(_ROW, pa.array(idx[keep], pa.int64()))
            pos += m
    return run


def _test_hook_die(marker: str | None) -> None:
    """Test hook: ``KINSEY_SPARK_TEST_DIE=FILE`` in the driver's environment kills the
    executor's Python worker in a pass while FILE exists (the file holding ``once`` is
    removed first, so the retry lives): how the tests show what an executor lost mid-pass
    does. The driver reads the variable; the task carries it."""
    if not marker or not os.path.exists(marker):
        return
    with open(marker) as f:
        once = f.read().strip() == "once"
    if once:
        try:
            os.remove(marker)
        except FileNotFoundError:
            return  # another task took the one death
    os._exit(17)


def _whole_pass(task: str, layout: list[tuple[int, int, int, int]], name: str):
    """A job's work on each partition's whole groups."""
    die = os.environ.get("KINSEY_SPARK_TEST_DIE")

    def run(batches):
        _test_hook_die(die)
        p = _partition_id()
        a, b, first, last = layout[p]
        w = _kinsey.GroupWorker(task)
        pos = a
        for batch in batches:
            m = batch.num_rows
            lo, hi = max(pos, first), min(pos + m, last)
            if lo < hi:
                w.add(batch.slice(lo - pos, hi - lo), lo)
            pos += m
        if pos != b:
            raise InputError(
                f"{name}: partition {p} read {pos - a} rows on this pass and {b - a} when the "
                "rows were counted: the DataFrame must read the same rows on every pass (a "
                "file scan does; persist or checkpoint one built by a shuffle)")
        yield w.finish()
    return run


def _cut_pass(task: str):
    """A job's work on the regrouped rows of cut groups (sorted by position)."""
    def run(batches):
        w = _kinsey.GroupWorker(task)
        for batch in batches:
            rows = batch.column(_ROW).to_numpy()
            if len(rows) == 0:
                continue
            starts = np.concatenate([[0], np.flatnonzero(np.diff(rows) != 1) + 1])
            ends = np.concatenate([starts[1:], [len(rows)]])
            for s, e in zip(starts, ends):
                w.add(batch.slice(int(s), int(e - s)), int(rows[s]))
        yield w.finish()
    return run


_ENGINE_ERROR = re.compile(r"(?:kinsey\.)?_kinsey\.(\w+): (.*)")


def _named(e: Exception, name: str) -> KinseyError:
    """A Spark failure as the kinsey error an executor raised (its class and message, from
    the worker's traceback), or a ``BackendError`` naming the party."""
    text = str(e)
    m = _ENGINE_ERROR.search(text)
    if m is not None:
        cls = getattr(sys.modules[__package__], m.group(1), None)
        if isinstance(cls, type) and issubclass(cls, KinseyError):
            return cls(m.group(2).strip())
    # The worker's exception line (a Python traceback's last), else the message's first.
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    raised = [ln for ln in lines if re.match(r"^[\w.]+(Error|Exception|Exit)\b.*:", ln)]
    what = raised[-1] if raised else (lines[0] if lines else type(e).__name__)
    return BackendError(f"{name}: a Spark job failed: {what}")


class SparkParty:
    """One party's rows in a Spark DataFrame, laid out for kinsey's passes: rows counted
    per partition (one job over the label column), and the rows of groups that partition
    boundaries cut regrouped and persisted on the executors (one job, when there are any).
    Pass it to :func:`train` (or hand a DataFrame to ``train``, which makes one)."""

    _kinsey_remote = True

    def __init__(self, df: Any, *, label: str | None = None,
                 name: str = "spark party") -> None:
        functions, types = _spark()
        from pyspark.sql.pandas.types import to_arrow_schema
        from pyspark import StorageLevel
        self.df = df
        self.name = name
        if label is not None and label not in df.columns:
            raise InputError(
                f"{name}: column '{label}': label column not found; the columns are: "
                f"{', '.join(df.columns)}")
        self.schema = to_arrow_schema(df.schema)
        try:
            # One column is read (any: the engine checks the columns by the schema).
            one = label if label is not None else df.columns[0]
            counts = df.select(one).mapInArrow(_count_rows, "p long, n long").collect()
        except Exception as e:  # noqa: BLE001  (Spark raises many kinds)
            raise _named(e, name) from None
        per = dict((int(r["p"]), int(r["n"])) for r in counts)
        parts = max(per) + 1 if per else 0
        sizes = [per.get(p, 0) for p in range(parts)]
        self.rows = n = sum(sizes)
        self.partitions = parts
        layout, a = [], 0
        for s in sizes:
            layout.append((a, a + s, *_whole_groups(a, a + s, n)))
            a += s
        self._layout = layout
        cut = sum((first - a) + (b - last) for a, b, first, last in layout)
        self.cut_rows = cut
        self._cut = None
        if cut:
            schema = types.StructType(
                list(df.schema.fields) + [types.StructField(_ROW, types.LongType(), False)])
            groups = max(1, min(parts, -(-cut // GROUP_ROWS)))
            regrouped = (df.mapInArrow(_cut_rows(layout), schema)
                         .repartition(groups, (functions.col(_ROW) / GROUP_ROWS).cast("long"))
                         .sortWithinPartitions(_ROW)
                         .persist(StorageLevel.MEMORY_AND_DISK))
            try:
                regrouped.count()
            except Exception as e:  # noqa: BLE001
                regrouped.unpersist()
                raise _named(e, name) from None
            self._cut = regrouped

    def run(self, task: str) -> pa.Table:
        """Run one task (the engine's JSON) over every row: each group's payload."""
        out = self.df.mapInArrow(_whole_pass(task, self._layout, self.name),
                                 "group long, payload binary")
        if self._cut is not None:
            out = out.union(self._cut.mapInArrow(_cut_pass(task), "group long, payload binary"))
        try:
            return out.toArrow()
        except Exception as e:  # noqa: BLE001
            raise _named(e, self.name) from None

    def describe(self) -> str:
        """Where the passes run."""
        master = self.df.sparkSession.sparkContext.master
        return f"spark ({master}, {self.partitions} partitions, {self.cut_rows} rows regrouped)"

    def release(self) -> None:
        """Drop the regrouped rows the executors keep (also when the object is collected)."""
        if self._cut is not None:
            self._cut.unpersist()
            self._cut = None

    def __del__(self) -> None:
        try:
            self.release()
        except Exception:  # noqa: BLE001  (the session may be gone)
            pass


def _party(p: Any, label: str, i: int) -> SparkParty:
    if isinstance(p, SparkParty):
        return p
    if not hasattr(p, "mapInArrow"):
        raise ParameterError(
            f"invalid parameter 'parties': party {i + 1} is a {type(p).__name__}, not a Spark "
            "DataFrame (kinsey.train takes tables and Parquet paths on this machine)")
    return SparkParty(p, label=label, name=f"spark party {i + 1}")


def train(parties: Sequence[Any], *, label: str, epsilon: float, **kwargs: Any) -> Model:
    """Train the DP aggregate classifier across parties whose rows are Spark DataFrames,
    with the keywords and the :class:`kinsey.Model` of :func:`kinsey.train` (except
    ``memory_limit``, ``spill_dir`` and ``ledger``, which concern rows on this machine).

    Each party's rows stay on the executors; every solver pass is a Spark job that returns
    sums. The release is the one the same rows give ``kinsey.train`` on one machine, byte
    for byte with the same ``seed``, whatever the partitioning."""
    for k in ("memory_limit", "spill_dir", "ledger"):
        if kwargs.get(k) is not None:
            raise ParameterError(
                f"invalid parameter '{k}': parties on Spark keep their rows on the cluster "
                f"({k} concerns rows on this machine)")
    if hasattr(parties, "mapInArrow"):
        raise ParameterError(
            "invalid parameter 'parties': a list of parties is expected, one DataFrame each "
            "(e.g. train([a, b, c], ...)); got one")
    made = [_party(p, label, i) for i, p in enumerate(parties)]
    try:
        return _train(made, label=label, epsilon=epsilon, **kwargs)
    finally:
        for p, given in zip(made, parties):
            if p is not given:
                p.release()


def party(df: Any, *, config: str | os.PathLike, label: str | None = None,
          name: str | None = None) -> Model:
    """Run one party of a network session (``kinsey party``'s config file, written by
    ``kinsey session init``) whose rows are a Spark DataFrame: the fit runs on the cluster,
    and this process draws the party's noise, computes its tag and takes part in the
    3-stage protocol over the session's mutual TLS, exactly as ``kinsey party`` does; the
    other participants may be ``kinsey party`` processes on other machines. The config's
    ``[data] path`` is not read (the DataFrame is the data); the published model is written
    to its ``[output] dir`` and returned.

    ``label``: when given, it must be the session's label column (``[shared] label``)."""
    from . import ParameterError as _P  # noqa: N814
    if label is not None and not hasattr(df, "mapInArrow") and not isinstance(df, SparkParty):
        raise _P("invalid parameter 'df': a Spark DataFrame is expected")
    made = df if isinstance(df, SparkParty) else SparkParty(
        df, label=label, name=name or f"spark party ({os.path.basename(os.fspath(config))})")
    try:
        model_path, _diag, _sent, _messages = _kinsey.remote_party(
            made, config=os.fspath(config), label=label)
    finally:
        if made is not df:
            made.release()
    return Model.load(model_path)


def _table(df: Any, name: str | None) -> SparkParty:
    if isinstance(df, SparkParty):
        return df
    if not hasattr(df, "mapInArrow"):
        raise ParameterError(
            f"invalid parameter 'df': a Spark DataFrame is expected, got {type(df).__name__}")
    return SparkParty(df, name=name or "spark table")


def _over(df: Any, name: str | None, release) -> Release:
    t = _table(df, name)
    try:
        return release(t)
    finally:
        if t is not df:
            t.release()


def histogram(df: Any, *, column: str, bins: tuple[float, float, int] | None = None,
              categories: Sequence[str] | None = None, where: str | None = None,
              epsilon: float, neighbours: str, seed: int | None = None,
              name: str | None = None) -> Release:
    """:func:`kinsey.histogram` of a Spark DataFrame's column: every executor counts the row
    groups it holds with kinsey's own binning, this process adds the exact counts and draws
    the noise. With a seed, the release of the same values as a table on one machine (but
    for its ``input`` name, ``name``)."""
    return _over(df, name, lambda t: _histogram(
        t, column=column, bins=bins, categories=categories, where=where, epsilon=epsilon,
        neighbours=neighbours, seed=seed))


class _SparkStats:
    """:mod:`kinsey.stats` of a Spark DataFrame's column: the executors compute the exact
    integer sums (or the quantiles' counts) of the row groups they hold, this process adds
    them and draws the noise. With a seed, the release of the same values as a table on one
    machine (but for its ``input`` name, ``name``)."""

    @staticmethod
    def sum(df: Any, *, column: str, bounds: tuple[float, float], epsilon: float,
            neighbours: str, seed: int | None = None, name: str | None = None) -> Release:
        """The DP sum of the column's values clamped to ``bounds``."""
        return _over(df, name, lambda t: _stats.sum(
            t, column=column, bounds=bounds, epsilon=epsilon, neighbours=neighbours,
            seed=seed))

    @staticmethod
    def mean(df: Any, *, column: str, bounds: tuple[float, float], epsilon: float,
             neighbours: str, seed: int | None = None, name: str | None = None) -> Release:
        """The DP mean of the column's values clamped to ``bounds``."""
        return _over(df, name, lambda t: _stats.mean(
            t, column=column, bounds=bounds, epsilon=epsilon, neighbours=neighbours,
            seed=seed))

    @staticmethod
    def variance(df: Any, *, column: str, bounds: tuple[float, float], epsilon: float,
                 neighbours: str, seed: int | None = None, name: str | None = None) -> Release:
        """The DP sample variance (n - 1) of the column's values clamped to ``bounds``."""
        return _over(df, name, lambda t: _stats.variance(
            t, column=column, bounds=bounds, epsilon=epsilon, neighbours=neighbours,
            seed=seed))

    @staticmethod
    def quantiles(df: Any, *, column: str, bounds: tuple[float, float], epsilon: float,
                  neighbours: str, levels: Sequence[float] = (0.5,), candidates: int = 1001,
                  seed: int | None = None, name: str | None = None) -> Release:
        """DP quantiles at ``levels`` (permute-and-flip over ``candidates`` points)."""
        return _over(df, name, lambda t: _stats.quantiles(
            t, column=column, bounds=bounds, epsilon=epsilon, neighbours=neighbours,
            levels=levels, candidates=candidates, seed=seed))


#: ``kinsey.spark.stats.mean(df, column=..., bounds=..., ...)``, and ``sum``, ``variance``
#: and ``quantiles``.
stats = _SparkStats()
