"""Type stubs of kinsey.sulq."""

from typing import Any, Sequence

from . import Ledger, Release

def kmeans(data: Any, *, columns: Sequence[str], k: int, epsilon: float, neighbours: str,
           delta: float | None = None, seed: int | None = None, iterations: int = 8,
           calibration: str = "zcdp", clip: bool = False, device: str = "auto",
           ledger: Ledger | None = None) -> Release:
    """SuLQ k-means of a table's or a file's columns."""

def pca(data: Any, *, columns: Sequence[str], epsilon: float, neighbours: str,
        delta: float | None = None, seed: int | None = None, components: int = 2,
        center: bool = True, calibration: str = "zcdp", clip: bool = False,
        ledger: Ledger | None = None) -> Release:
    """SuLQ PCA (or SVD) of a table's or a file's columns."""
