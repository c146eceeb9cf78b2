"""SuLQ analyses (seed 003): k-means and PCA of a table's or a file's columns through
noisy sums, as ``kinsey sulq kmeans|pca`` releases them.

``columns``: ``NAME`` (values already in [0, 1]) or ``NAME:LO:HI`` (public bounds mapped
onto [0, 1]; values outside are clipped and the count is a diagnostic). A ``seed``
replays the release of the same data only (NOT private against whoever knows it).
"""

from __future__ import annotations

import json
import os
from typing import Any, Sequence

import pyarrow as pa

from . import Guarantee, Ledger, Release, _checked, _kinsey, _ledger, _table

__all__ = ["kmeans", "pca"]


def _source(data: Any) -> Any:
    return os.fspath(data) if isinstance(data, (str, os.PathLike)) else _table(data)


def _run(data: Any, analysis: str, columns: Sequence[str], epsilon: float, neighbours: str,
         delta: float | None, seed: int | None, calibration: str, clip: bool,
         k: int = 5, iterations: int = 8, components: int = 2, center: bool = True,
         device: str = "auto", ledger: Ledger | None = None) -> tuple[dict, Guarantee]:
    report, guarantee = _kinsey.sulq(
        _source(data), analysis=analysis, columns=list(columns), k=k, iterations=iterations,
        components=components, center=center, epsilon=epsilon,
        delta=1e-6 if delta is None else delta, neighbours=neighbours,
        calibration=calibration, clip=clip, device_name=device, seed=seed,
        ledger=_ledger(ledger))
    return json.loads(report), Guarantee._of(guarantee)


@_checked
def kmeans(data: Any, *, columns: Sequence[str], k: int, epsilon: float, neighbours: str,
           delta: float | None = None, seed: int | None = None, iterations: int = 8,
           calibration: str = "zcdp", clip: bool = False, device: str = "auto",
           ledger: Ledger | None = None) -> Release:
    """SuLQ k-means. ``Release.table``: one row per centre, its noisy size and coordinates
    in the columns' own units (``LO + c (HI - LO)`` for a column given as ``NAME:LO:HI``;
    the report keeps the centres in the box too, as ``centers``)."""
    report, guarantee = _run(data, "kmeans", columns, epsilon, neighbours, delta, seed,
                             calibration, clip, k=k, iterations=iterations, device=device,
                             ledger=ledger)
    res = report["result"]
    cols = {"center": pa.array(range(len(res["centers"])), pa.int32()),
            "noisy_size": pa.array(res["sizes"], pa.float64())}
    for j, name in enumerate(report["columns"]):
        cols[name] = pa.array([c[j] for c in res["centers_original"]], pa.float64())
    return Release(report, guarantee, table=pa.table(cols))


@_checked
def pca(data: Any, *, columns: Sequence[str], epsilon: float, neighbours: str,
        delta: float | None = None, seed: int | None = None, components: int = 2,
        center: bool = True, calibration: str = "zcdp", clip: bool = False,
        ledger: Ledger | None = None) -> Release:
    """SuLQ PCA (``center=False``: SVD of A^T A). ``Release.table``: one row per component,
    its eigenvalue, explained variance ratio and unit vector."""
    report, guarantee = _run(data, "pca", columns, epsilon, neighbours, delta, seed,
                             calibration, clip, components=components, center=center,
                             ledger=ledger)
    res = report["result"]
    comps = res["components"]
    cols = {"component": pa.array(range(len(comps)), pa.int32()),
            "eigenvalue": pa.array(res["eigenvalues"][:len(comps)], pa.float64()),
            "explained_variance_ratio":
                pa.array(res["explained_variance_ratio"][:len(comps)], pa.float64())}
    for j, name in enumerate(report["columns"]):
        cols[name] = pa.array([c[j] for c in comps], pa.float64())
    return Release(report, guarantee, table=pa.table(cols))
