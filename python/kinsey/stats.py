"""DP summary statistics of one bounded column, as ``kinsey stats`` releases them: ``sum``,
``mean``, ``variance`` (sample, n - 1) and ``quantiles``.

``bounds``: the column's public range ``(lo, hi)``, declared from knowledge, not read from
the data; values outside count as the nearer bound. ``neighbours``: ``"bounded"`` (replace
one row; n is public) or ``"unbounded"`` (add or remove one; n is private). A ``seed``
replays the release of the same data only (NOT private against whoever knows it).
``Release.table``: one row per released value (``statistic``, ``value``, ``noise_std``,
null where the noise depends on the private n); ``Release.report``: the CLI's report.
"""

from __future__ import annotations

import json
import os
from typing import Any, Sequence

import pyarrow as pa

from . import Guarantee, Ledger, Release, _checked, _kinsey, _ledger, _table

__all__ = ["sum", "mean", "variance", "quantiles"]


def _run(data: Any, statistic: str, column: str, bounds: tuple[float, float], epsilon: float,
         neighbours: str, seed: int | None, ledger: Ledger | None,
         levels: Sequence[float] = (), candidates: int = 1001) -> Release:
    src = os.fspath(data) if isinstance(data, (str, os.PathLike)) else _table(data)
    report, guarantee = _kinsey.summary(
        src, column=column, statistic=statistic, levels=[float(q) for q in levels],
        bounds=(float(bounds[0]), float(bounds[1])), epsilon=epsilon, neighbours=neighbours,
        candidates=candidates, seed=seed, ledger=_ledger(ledger))
    report = json.loads(report)
    est = report["estimates"]
    table = pa.table({
        "statistic": pa.array([e["name"] for e in est], pa.string()),
        "value": pa.array([e["value"] for e in est], pa.float64()),
        "noise_std": pa.array([e["noise_std"] for e in est], pa.float64()),
    })
    return Release(report, Guarantee._of(guarantee), table=table)


@_checked
def sum(data: Any, *, column: str, bounds: tuple[float, float], epsilon: float,  # noqa: A001
        neighbours: str, seed: int | None = None,
        ledger: Ledger | None = None) -> Release:
    """The DP sum of the column's values clamped to ``bounds``."""
    return _run(data, "sum", column, bounds, epsilon, neighbours, seed, ledger)


@_checked
def mean(data: Any, *, column: str, bounds: tuple[float, float], epsilon: float,
         neighbours: str, seed: int | None = None,
        ledger: Ledger | None = None) -> Release:
    """The DP mean of the column's values clamped to ``bounds``."""
    return _run(data, "mean", column, bounds, epsilon, neighbours, seed, ledger)


@_checked
def variance(data: Any, *, column: str, bounds: tuple[float, float], epsilon: float,
             neighbours: str, seed: int | None = None,
        ledger: Ledger | None = None) -> Release:
    """The DP sample variance (n - 1) of the column's values clamped to ``bounds``."""
    return _run(data, "variance", column, bounds, epsilon, neighbours, seed, ledger)


@_checked
def quantiles(data: Any, *, column: str, bounds: tuple[float, float], epsilon: float,
              neighbours: str, levels: Sequence[float] = (0.5,), candidates: int = 1001,
              seed: int | None = None, ledger: Ledger | None = None) -> Release:
    """DP quantiles at ``levels`` (epsilon split evenly), each one of ``candidates`` evenly
    spaced points of ``bounds`` (permute-and-flip)."""
    return _run(data, "quantiles", column, bounds, epsilon, neighbours, seed, ledger, levels,
                candidates)
