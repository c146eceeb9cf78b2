"""Type stubs of kinsey's Python API (the contract: extended, never renamed)."""

import dataclasses
import os
from typing import Any, Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa

__version__: str

class KinseyWarning(UserWarning): ...

class KinseyError(ValueError):
    """Every error kinsey raises, with the CLI's message (table, column, row, parameter,
    participant or stage named)."""

class ParameterError(KinseyError):
    """A parameter out of range, missing or contradicting another (CLI exit code 2)."""

class InputError(KinseyError):
    """The data: a malformed file, a missing or mistyped column, an unusable value (exit 3)."""

class BudgetExhausted(KinseyError):
    """The ledger's budget for the data set would be exceeded; nothing released (exit 4)."""

class PrivacyRefused(KinseyError):
    """Refused for privacy: two parties without consent, a ledger that does not check (exit 5)."""

class BackendError(KinseyError):
    """A crypto backend, the protocol, its transport or a compute device failed (exit 6)."""

class NumericalError(KinseyError):
    """A numerical procedure did not reach its target (exit 7)."""

class FileError(KinseyError):
    """A file that cannot be opened, read or written (exit 8)."""

@dataclasses.dataclass(frozen=True)
class Guarantee:
    """What a release guarantees, the same type on every release."""

    kind: str
    epsilon: float
    delta: float
    neighbours: str
    mechanism: str
    sensitivity: str
    sensitivity_value: float | None = None
    rho: float | None = None
    noise_std: float | None = None
    def __getitem__(self, key: str) -> Any: ...

class Model:
    """The published classifier."""

    w: npt.NDArray[np.float64]
    features: list[str]
    label: str
    intercept: float | None
    coef: npt.NDArray[np.float64]
    bias: float
    release: dict[str, Any] | None
    epsilon: float
    guarantee: Guarantee | None
    diagnostics: dict[str, Any] | None
    def decision_function(self, data: Any) -> npt.NDArray[np.float64]:
        """The score ``x . w`` of each row."""
    def predict(self, data: Any) -> npt.NDArray[np.int8]:
        """-1 or +1 per row."""
    def predict_proba(self, data: Any) -> npt.NDArray[np.float64]:
        """P(y = +1) per row."""
    def save(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> None:
        """Write ``model.json`` as ``kinsey train`` does (all or nothing)."""
    def plot(self, top: int = 30) -> Any:
        """A matplotlib figure of the published weights."""
    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Model:
        """Read and check a model file."""

class Ledger:
    """The privacy-budget ledger every front door charges (``ledger=`` of any release)."""

    path: str
    budget: tuple[float, float] | None
    key: str | None
    dataset: str | None
    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        budget: float | tuple[float, float] | None = None,
        key: str | os.PathLike[str] | None = None,
        dataset: str | None = None,
    ) -> None: ...
    def init(self) -> None:
        """Create an empty ledger and its key."""
    def entries(self) -> list[dict[str, Any]]:
        """Every charge, checked against the key."""

class Release:
    """A DP release: ``table`` or ``values``, its ``guarantee`` and the full ``report``."""

    report: dict[str, Any]
    guarantee: Guarantee
    table: pa.Table | None
    values: npt.NDArray[np.float64] | None
    columns: list[str]
    tree: dict[str, Any] | None
    stds: npt.NDArray[np.float64] | None
    def plot(self, **kwargs: Any) -> Any:
        """A matplotlib figure of the release and its stated error (publishable)."""

def train(
    parties: Sequence[Any],
    *,
    label: str,
    epsilon: float,
    lam: float = 1e-3,
    labels: str = "plus_minus_one",
    row_transform: str = "none",
    row_scale: float | None = None,
    features: Sequence[str] | None = None,
    backend: str = "paillier",
    key_bits: int = 2048,
    aggregation: str = "secure",
    noise: str = "l2",
    calibration: str = "tight",
    device: str = "auto",
    seed: int | None = None,
    diagnostics: bool = False,
    intercept: float | None = None,
    memory_limit: int | str | None = None,
    spill_dir: str | os.PathLike[str] | None = None,
    ledger: Ledger | None = None,
    allow_two_parties: bool = False,
) -> Model:
    """Train the DP aggregate classifier across ``parties`` (one table or Parquet path
    each); parties that are all paths are read within ``memory_limit``."""

def histogram(
    data: Any,
    *,
    column: str,
    bins: tuple[float, float, int] | None = None,
    categories: Sequence[str] | None = None,
    where: str | None = None,
    epsilon: float,
    neighbours: str,
    seed: int | None = None,
    ledger: Ledger | None = None,
) -> Release:
    """A DP histogram (or count) of a table's or a file's column."""

def decay(
    values: Any,
    *,
    model: str,
    epsilon: float | None = None,
    window: int | None = None,
    windows: Sequence[int] | None = None,
    alpha: float | None = None,
    c: float | None = None,
    beta: float | None = None,
    bound: float | None = None,
    column: str | None = None,
    seed: int | None = None,
    mechanism: str | None = None,
    arity: int | None = None,
    rho: float | None = None,
    delta: float | None = None,
    ledger: Ledger | None = None,
) -> Release:
    """A private decayed sum over a series (numpy, Arrow, or a file's column)."""

def backends() -> list[tuple[str, str]]:
    """The crypto backends: (name, description)."""

from . import sulq as sulq
from . import stats as stats

def tree(
    data: Any,
    *,
    label: str,
    epsilon: float,
    neighbours: str,
    classes: Sequence[float] | None = None,
    labels: str | None = None,
    attributes: Sequence[str] | None = None,
    depth: int = 5,
    selection: str = "exponential",
    score: str = "info_gain",
    row_bound: int | None = None,
    seed: int | None = None,
    ledger: Ledger | None = None,
) -> Release:
    """A DP decision tree of a table's or a file's columns (``Release.tree``)."""
