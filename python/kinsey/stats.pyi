"""Type stubs of kinsey.stats."""

from typing import Any, Sequence

from . import Ledger, Release

def sum(data: Any, *, column: str, bounds: tuple[float, float], epsilon: float,
        neighbours: str, seed: int | None = None,
        ledger: Ledger | None = None) -> Release:
    """The DP sum of the column's values clamped to ``bounds``."""

def mean(data: Any, *, column: str, bounds: tuple[float, float], epsilon: float,
         neighbours: str, seed: int | None = None,
        ledger: Ledger | None = None) -> Release:
    """The DP mean of the column's values clamped to ``bounds``."""

def variance(data: Any, *, column: str, bounds: tuple[float, float], epsilon: float,
             neighbours: str, seed: int | None = None,
        ledger: Ledger | None = None) -> Release:
    """The DP sample variance of the column's values clamped to ``bounds``."""

def quantiles(data: Any, *, column: str, bounds: tuple[float, float], epsilon: float,
              neighbours: str, levels: Sequence[float] = (0.5,), candidates: int = 1001,
              seed: int | None = None,
        ledger: Ledger | None = None) -> Release:
    """DP quantiles at ``levels``, among ``candidates`` points of ``bounds``."""
