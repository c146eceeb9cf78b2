"""kinsey: statistics with secrecy, from Python.

A DP classifier trained across parties that reveal nothing to each other, DP histograms
and private decayed sums, over pyarrow, Polars or pandas tables and numpy arrays. Every
computation runs in kinsey's Rust engine (the compiled ``kinsey._kinsey``): this module
converts arguments and results, nothing more.

What a function returns is a *release*: values covered by the guarantee it states
(``.guarantee``: epsilon, delta, neighbours, mechanism, sensitivity) and public
parameters. Anything computed from the exact data (``Model.diagnostics``) is present only
when asked for, under a first key ``"NOT PRIVATE"``.

A ``seed`` replays a release of the same data only, and is NOT private against whoever
holds it; without one, noise comes from the operating system.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import os
import re
import warnings
from typing import Any, Sequence

import numpy as np
import pyarrow as pa

# Mesa's Vulkan device-selection layer connects to a Wayland display on every GPU probe
# and prints "XDG_RUNTIME_DIR is invalid" on headless machines; kinsey picks its adapter
# itself and draws nothing (the CLI does the same unless the user configured the layer).
if "MESA_VK_DEVICE_SELECT" not in os.environ:
    os.environ.setdefault("NODEVICE_SELECT", "1")

from . import _kinsey as _engine  # noqa: E402
from ._kinsey import (  # noqa: E402
    BackendError,
    BudgetExhausted,
    FileError,
    InputError,
    KinseyError,
    NumericalError,
    ParameterError,
    PrivacyRefused,
)

__version__: str = _engine.__version__

# PyO3's messages for an argument it cannot convert name it as "argument 'NAME'".
_ARGUMENT = re.compile(r"argument '([A-Za-z_]+)'")
# The engine's names of arguments the Python API calls otherwise.
_PYTHON_NAMES = {"device_name": "device", "where_": "where", "src": "data"}


def _call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Call the engine; an argument it cannot take (text for a number, a float for a
    count, a table where a list is expected) becomes a ``ParameterError`` naming the
    parameter, as every other bad parameter is, not a bare ``TypeError``."""
    try:
        return fn(*args, **kwargs)
    except KinseyError:
        raise
    except (TypeError, OverflowError, ValueError) as e:
        m = _ARGUMENT.search(str(e))
        name = _PYTHON_NAMES.get(m.group(1), m.group(1)) if m else "argument"
        raise ParameterError(f"invalid parameter '{name}': {e}") from e


class KinseyWarning(UserWarning):
    """What kinsey says where Python users look (``warnings``): a seeded release, whose noise
    whoever knows the seed can remove; a decayed sum whose stated error makes it say little.
    Filter it as any warning category."""


# The CLI's words for a seeded release (kinsey_dp::rng::USER_SEED_WARNING; a test holds the
# two the same).
_SEED_WARNING = ("a user seed was given: the noise is reproducible, so the release is NOT "
                 "differentially private against anyone who knows the seed")

_NUMBER = (int, float, np.integer, np.floating)
_KINDS = {
    "float": (_NUMBER, "a number"),
    "int": ((int, np.integer), "an integer"),
    "str": ((str,), "text"),
    "bool": ((bool, np.bool_), "True or False"),
}


def _expect(ann: str) -> tuple[list, bool] | None:
    """What an annotation (text, as ``from __future__ import annotations`` keeps it) asks
    of a value: per position for a tuple, and whether None is allowed; None when it is not
    one of the simple kinds checked here."""
    parts = [p.strip() for p in ann.split("|")]
    optional = "None" in parts
    parts = [p for p in parts if p != "None"]
    if len(parts) != 1:
        return None
    t = parts[0]
    if t in _KINDS:
        return [_KINDS[t]], optional
    if t.startswith("tuple[") and t.endswith("]"):
        inner = [x.strip() for x in t[6:-1].split(",")]
        if all(x in _KINDS for x in inner):
            return [_KINDS[x] for x in inner], optional
    return None


def _bad_kind(value: Any, kind: tuple) -> bool:
    types, _ = kind
    if isinstance(value, (bool, np.bool_)) and bool not in types:
        return True
    return not isinstance(value, types)


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _outside_kinsey() -> int:
    """The ``stacklevel`` of the first caller outside this package (a warning raised
    inside ``kinsey.sklearn``'s ``fit`` points at the user's ``fit`` call)."""
    frame = inspect.currentframe()
    level = 0
    while frame is not None and os.path.dirname(
            os.path.abspath(frame.f_code.co_filename)) == _PACKAGE_DIR:
        frame = frame.f_back
        level += 1
    return max(level, 1)


def _checked(fn: Any) -> Any:
    """Check a public function's arguments against its annotations before the engine sees
    them: a wrong kind (text for a number, a float for a count, an unknown keyword) is a
    ``ParameterError`` naming the parameter."""
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            m = re.search(r"'([A-Za-z_]+)'", str(e))
            name = m.group(1) if m else "argument"
            raise ParameterError(f"invalid parameter '{name}': {e}") from e
        for name, value in bound.arguments.items():
            ann = sig.parameters[name].annotation
            want = _expect(ann) if isinstance(ann, str) else None
            if want is None or (value is None and want[1]):
                continue
            kinds, _ = want
            if len(kinds) == 1:
                bad = _bad_kind(value, kinds[0])
                what = kinds[0][1]
            else:
                bad = (not isinstance(value, (tuple, list)) or len(value) != len(kinds)
                       or any(_bad_kind(v, k) for v, k in zip(value, kinds)))
                what = "(" + ", ".join(k[1] for k in kinds) + ")"
            if bad:
                raise ParameterError(
                    f"invalid parameter '{name}': expected {what}, got {value!r}")
        if bound.arguments.get("seed") is not None:
            # Once per call, at the caller's line (the first frame outside kinsey).
            warnings.warn(_SEED_WARNING, KinseyWarning, stacklevel=_outside_kinsey())
        return fn(*args, **kwargs)

    return wrapper


class _Engine:
    """The compiled module, each function called through ``_call``."""

    def __getattr__(self, name: str) -> Any:
        fn = getattr(_engine, name)
        if not callable(fn):
            return fn
        return lambda *a, **k: _call(fn, *a, **k)


_kinsey = _Engine()

__all__ = [
    "KinseyWarning",
    "Guarantee",
    "BackendError",
    "BudgetExhausted",
    "FileError",
    "InputError",
    "KinseyError",
    "NumericalError",
    "ParameterError",
    "PrivacyRefused",
    "Ledger",
    "Model",
    "Release",
    "backends",
    "decay",
    "histogram",
    "stats",
    "sulq",
    "train",
    "tree",
    "__version__",
]


def _table(data: Any) -> Any:
    """A table the engine can read through the Arrow C stream interface: pyarrow Tables
    and RecordBatchReaders and Polars DataFrames as they are (no copy); pandas DataFrames
    through pyarrow (numeric columns without nulls are not copied)."""
    if hasattr(data, "__arrow_c_stream__"):
        return data
    if type(data).__module__.startswith("pandas"):
        try:
            return pa.Table.from_pandas(data, preserve_index=False)
        except (pa.ArrowException, TypeError, ValueError) as e:
            raise InputError(f"the DataFrame cannot be read as a table: {e}") from e
    return data  # the engine names what it is not


def _is_one_table(x: Any) -> bool:
    """A single table or path, where a list of them was expected."""
    return (isinstance(x, (str, bytes, os.PathLike)) or hasattr(x, "__arrow_c_stream__")
            or type(x).__module__.startswith(("pandas", "polars")))


class Ledger:
    """The privacy-budget ledger every front door charges: ``kinsey --ledger``, the Rust
    facade and Python write the same keyed file, so a data set's budget spans commands,
    programs and languages. Pass it as ``ledger=`` to any release: the release is charged
    *before* its noise is drawn, and refused (``KinseyError``, nothing computed) when the
    data set's budget would be exceeded.

    ``budget``: the total ``epsilon`` or ``(epsilon, delta)`` of a data set the ledger has
    not seen (its first release fixes it). ``key``: the ledger's secret key file (default
    ``PATH.key``, created 0600 with the ledger). ``dataset``: the data set's name (default a
    file's resolved path; a table in memory needs one). The same bytes under any name are
    charged to the data set they were first charged to."""

    def __init__(self, path: str | os.PathLike, *,
                 budget: float | tuple[float, float] | None = None,
                 key: str | os.PathLike | None = None, dataset: str | None = None) -> None:
        self.path = os.fspath(path)
        if budget is None or isinstance(budget, tuple):
            self.budget = None if budget is None else (float(budget[0]), float(budget[1]))
        else:
            self.budget = (float(budget), 0.0)
        self.key = None if key is None else os.fspath(key)
        self.dataset = dataset

    def _args(self) -> tuple:
        return (self.path, self.budget, self.key, self.dataset)

    def init(self) -> None:
        """Create an empty ledger and its key (refused if either exists)."""
        _kinsey.ledger_init(self._args())

    def entries(self) -> list[dict]:
        """Every charge, checked against the key (an edited ledger raises)."""
        return json.loads(_kinsey.ledger_entries(self._args()))

    def __repr__(self) -> str:
        return f"kinsey.Ledger({self.path!r}, dataset={self.dataset!r})"


def _ledger(ledger: Ledger | None) -> tuple | None:
    if ledger is None:
        return None
    if not isinstance(ledger, Ledger):
        raise KinseyError("invalid parameter 'ledger': pass a kinsey.Ledger")
    return ledger._args()


@dataclasses.dataclass(frozen=True)
class Guarantee:
    """What a release guarantees, the same on every release (the engine's one guarantee
    type): the classifier, a histogram, summary statistics, a tree, SuLQ and a decayed sum.

    ``g["epsilon"]`` reads a field as ``g.epsilon`` does."""

    #: ``pure``, ``approximate`` or ``zcdp-converted`` (then ``epsilon``, ``delta`` state
    #: ``rho``).
    kind: str
    epsilon: float
    delta: float
    #: The neighbouring data sets, in words (``bounded: replace one row ...``).
    neighbours: str
    #: The mechanism and its noise law.
    mechanism: str
    #: The sensitivity's formula.
    sensitivity: str
    #: Its value, where it is public (None where it depends on a secret, as the
    #: classifier's smallest party size).
    sensitivity_value: float | None = None
    #: zCDP's rho, where the mechanism is stated in zCDP.
    rho: float | None = None
    #: The noise std of one released value, where one number states it (None where each
    #: value states its own, or it depends on a secret).
    noise_std: float | None = None

    def __getitem__(self, key: str) -> Any:
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(key) from None

    @classmethod
    def _of(cls, text: str) -> "Guarantee":
        d = json.loads(text)
        return cls(**{f.name: d.get(f.name) for f in dataclasses.fields(cls)})


class Model:
    """The published classifier: ``w``, its features, its guarantee.

    ``predict`` and ``predict_proba`` read the model's features from a table by name and
    apply its row transform, as ``kinsey predict`` does.
    """

    def __init__(self, model_json: str, release: dict | None = None,
                 diagnostics: dict | None = None, guarantee: Guarantee | None = None) -> None:
        self._json = model_json
        m = json.loads(model_json)
        #: The weights (numpy float64), one per feature.
        self.w: np.ndarray = np.asarray(m["w"], dtype=np.float64)
        #: Feature names, in the order of ``w``.
        self.features: list[str] = list(m["features"])
        #: The label column the model was trained on.
        self.label: str = m["label"]
        #: The intercept's public constant c, or None: the last feature is then
        #: "(intercept)" and a row x is scored as (sqrt(1 - c^2) T(x), c) . w.
        self.intercept: float | None = m.get("intercept")
        c = self.intercept or 0.0
        s = float(np.sqrt(1.0 - c * c)) if self.intercept is not None else 1.0
        k = len(self.w) - (1 if self.intercept is not None else 0)
        #: The weights of the transformed input columns: score = T(x) . coef + bias.
        self.coef: np.ndarray = s * self.w[:k]
        #: The bias c * w[-1] (0.0 without an intercept).
        self.bias: float = c * float(self.w[-1]) if self.intercept is not None else 0.0
        self.release: dict | None = release
        #: The model's epsilon (in the model file too).
        self.epsilon: float = m["epsilon"]
        #: The release's guarantee; None for a model loaded from its file (which states
        #: only epsilon: the guarantee is in the release's report).
        self.guarantee: Guarantee | None = guarantee
        #: None unless asked for; a dict whose first key is "NOT PRIVATE".
        self.diagnostics: dict | None = diagnostics

    def __repr__(self) -> str:
        return (f"kinsey.Model({len(self.w)} features, epsilon={self.epsilon}, "
                f"label={self.label!r})")

    def _input(self, data: Any) -> Any:
        """Rows to score: a table (the model's features read by name), a 2-D numpy array
        (its columns the model's features, in order), or a Parquet path (read by the
        engine as ``kinsey predict`` reads it)."""
        if isinstance(data, (str, os.PathLike)):
            return os.fspath(data)
        if isinstance(data, np.ndarray):
            names = [f for f in self.features if f != "(intercept)"]
            if data.ndim != 2 or data.shape[1] != len(names):
                raise ParameterError(
                    f"invalid parameter 'data': the model reads {len(names)} features "
                    f"({', '.join(names[:4])}{', ...' if len(names) > 4 else ''}); a numpy "
                    f"array needs shape (rows, {len(names)}), got {data.shape}")
            try:
                x = np.asarray(data, dtype=np.float64)
            except (TypeError, ValueError) as e:
                raise ParameterError(f"invalid parameter 'data': not numbers ({e})") from e
            return pa.table({n: np.ascontiguousarray(x[:, j]) for j, n in enumerate(names)})
        return _table(data)

    def decision_function(self, data: Any) -> np.ndarray:
        """The score ``x . w`` of each row (numpy float64). ``data``: a table, a 2-D numpy
        array whose columns are the model's features in order, or a Parquet path."""
        scores = _kinsey.score(self._json, self._input(data))
        return scores.to_numpy(zero_copy_only=False)

    def predict(self, data: Any) -> np.ndarray:
        """The predicted label of each row: numpy int8 of -1 and +1."""
        return np.where(self.decision_function(data) > 0, 1, -1).astype(np.int8)

    def predict_proba(self, data: Any) -> np.ndarray:
        """P(y = +1) of each row under the logistic model (numpy float64)."""
        z = self.decision_function(data)
        return 0.5 * (1.0 + np.tanh(0.5 * z))

    def save(self, path: str | os.PathLike, *, overwrite: bool = False) -> None:
        """Write the model as ``kinsey train`` writes ``model.json`` (all or nothing). An
        existing file is refused unless ``overwrite``."""
        _kinsey.save_model(self._json, os.fspath(path), overwrite=overwrite)

    def plot(self, top: int = 30) -> Any:
        """A matplotlib figure of the published weights (the ``top`` largest in magnitude):
        the release, nothing else. Needs matplotlib."""
        from . import plot as _plot
        return _plot.weights(self, top)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Model":
        """A model file (``model.json`` of ``kinsey train``, or ``Model.save``), checked."""
        return cls(_kinsey.load_model(os.fspath(path)))


class Release:
    """A DP release: ``table`` (pyarrow) or ``values`` (numpy), its ``guarantee``
    (:class:`Guarantee`) and the full ``report`` (dict: the CLI's report, public parameters
    included)."""

    def __init__(self, report: dict, guarantee: Guarantee, table: pa.Table | None = None,
                 values: np.ndarray | None = None) -> None:
        self.report = report
        self.guarantee: Guarantee = guarantee
        self.table = table
        self.values = values
        #: The estimates' column names (decayed sums).
        self.columns: list[str] = []
        #: The released tree (``kinsey.tree``), nested dicts as in ``tree.json``.
        self.tree: dict | None = None
        #: A decayed sum's stated std at each step (public: a function of the parameters).
        self.stds: np.ndarray | None = None

    def plot(self, **kwargs: Any) -> Any:
        """A matplotlib figure of the release with its stated error (publishable: it shows
        released values and public functions of the parameters, never exact data): a
        decayed sum's estimates in a band of two stated stds (``steps=(lo, hi)``, default
        the last 1,440), a histogram's or statistics' bars with error bars, a tree as a
        diagram, SuLQ k-means' noisy cluster sizes and PCA's eigenvalues. Needs matplotlib."""
        from . import plot as _plot
        if self.tree is not None:
            return _plot.tree(self)
        if self.values is not None:
            return _plot.decay(self, **kwargs)
        t = self.table
        names = t.column_names if t is not None else []
        std = self.guarantee.noise_std
        if "noisy_count" in names:
            n = t.num_rows
            return _plot.bars(self, t["bin"].to_pylist(), t["noisy_count"].to_numpy(),
                              np.full(n, std if std is not None else np.nan),
                              f"DP histogram of '{self.report.get('column', '')}'", "count")
        if "statistic" in names:
            return _plot.bars(self, t["statistic"].to_pylist(), t["value"].to_numpy(),
                              t["noise_std"].to_numpy(zero_copy_only=False),
                              f"DP {self.report['statistic']} of '{self.report['column']}' "
                              f"in [{self.report['bounds'][0]:g}, {self.report['bounds'][1]:g}]",
                              "value", points=True)
        if "noisy_size" in names:
            n = t.num_rows
            return _plot.bars(self, [f"centre {i}" for i in range(n)],
                              t["noisy_size"].to_numpy(),
                              # a size is one unit query: its noise std is sigma
                              np.full(n, std if std is not None else np.nan),
                              "SuLQ k-means: noisy cluster sizes", "rows")
        if "eigenvalue" in names:
            n = t.num_rows
            return _plot.bars(self, [f"PC {i + 1}" for i in range(n)],
                              t["eigenvalue"].to_numpy(), np.full(n, np.nan),
                              "SuLQ PCA: noisy eigenvalues", "eigenvalue")
        raise ParameterError("invalid parameter 'release': no picture for this release")

    def __repr__(self) -> str:
        what = (f"table of {self.table.num_rows} rows" if self.table is not None
                else f"values of shape {self.values.shape}" if self.values is not None
                else "a tree")
        return f"kinsey.Release({what}, epsilon={self.guarantee['epsilon']})"


@_checked
def train(parties: Sequence[Any], *, label: str, epsilon: float, lam: float = 1e-3,
          labels: str = "plus_minus_one", row_transform: str = "none",
          row_scale: float | None = None, features: Sequence[str] | None = None,
          backend: str = "paillier", key_bits: int = 2048, aggregation: str = "secure",
          noise: str = "l2", calibration: str = "tight", device: str = "auto",
          seed: int | None = None, diagnostics: bool = False,
          intercept: float | None = None, memory_limit: int | str | None = None,
          spill_dir: str | os.PathLike | None = None, ledger: Ledger | None = None,
          allow_two_parties: bool = False) -> Model:
    """Train the DP aggregate classifier across ``parties``, as ``kinsey train`` does: each
    party fits an L2-regularised logistic regression on its own rows, and the secure
    protocol publishes their noisy average.

    A party is a table (pyarrow Table or RecordBatchReader, Polars or pandas DataFrame:
    read batch by batch into the engine, never held twice) or a Parquet path (read by the
    engine as the CLI reads it: the least memory).

    ``intercept=c`` (0 < c < 1) gives the model a bias: the public constant ``c`` is
    appended to every row after the row transform and the rest scaled by
    ``sqrt(1 - c^2)``, so rows stay in the unit ball and the guarantee is unchanged.

    ``memory_limit`` (bytes, or text such as ``"512MiB"``; default half this machine's)
    bounds a run whose parties are all Parquet paths: parties that do not fit together are
    read and fitted one by one, each streamed from a private folder under ``spill_dir``
    (default the system's temporary directory) when it does not fit alone. The release is
    the same bytes.

    ``ledger``: charge every party's data set the guarantee first (parties given as paths
    are named by their paths; tables need the ledger's ``dataset``, and are charged as
    ``NAME/party 1``, ...).

    ``allow_two_parties``: two parties are refused unless this is True: the smaller one
    knows its own noise and can compute the other's exact model from the published one
    (``docs/protocol-deployment.md``).

    ``kinsey.sklearn.DPLogisticRegression`` is this function as a scikit-learn estimator."""
    if _is_one_table(parties):
        raise ParameterError(
            "invalid parameter 'parties': a list of parties is expected, one table or path "
            "each (e.g. train([a, b, c], ...)); got one")
    release, model, diag, guarantee = _kinsey.train(
        [os.fspath(p) if isinstance(p, (str, os.PathLike)) else _table(p) for p in parties], label=label, epsilon=epsilon, lam=lam, labels=labels,
        row_transform=row_transform, row_scale=row_scale,
        features=list(features) if features is not None else None, backend=backend,
        key_bits=key_bits, aggregation=aggregation, noise=noise, calibration=calibration,
        device_name=device, seed=seed, diagnostics=diagnostics, intercept=intercept,
        memory_limit=None if memory_limit is None else str(memory_limit),
        spill_dir=None if spill_dir is None else os.fspath(spill_dir), ledger=_ledger(ledger),
        allow_two_parties=allow_two_parties)
    return Model(model, json.loads(release), json.loads(diag) if diag else None,
                 Guarantee._of(guarantee))


@_checked
def histogram(data: Any, *, column: str, bins: tuple[float, float, int] | None = None,
              categories: Sequence[str] | None = None, where: str | None = None,
              epsilon: float, neighbours: str, seed: int | None = None,
              ledger: Ledger | None = None) -> Release:
    """A DP histogram of ``column``: numeric ``bins=(lo, hi, n)``, ``categories``, or
    neither (a DP count of the rows). ``data``: a table, or a CSV/Parquet path (read as
    ``kinsey histogram`` reads it: with the same seed, the same bytes)."""
    src = os.fspath(data) if isinstance(data, (str, os.PathLike)) else _table(data)
    report, guarantee = _kinsey.histogram(
        src, column=column, bins=tuple(bins) if bins is not None else None,
        categories=list(categories) if categories is not None else None, where_=where,
        epsilon=epsilon, neighbours=neighbours, seed=seed, ledger=_ledger(ledger))
    report = json.loads(report)
    rel = report["release"]
    # The columns of the CLI's histogram.csv, with the same meaning.
    table = pa.table({"bin": pa.array(rel["labels"], pa.string()),
                      "noisy_count": pa.array(rel["noisy"], pa.float64()),
                      "count": pa.array(rel["counts"], pa.uint64())})
    return Release(report, Guarantee._of(guarantee), table=table)


@_checked
def decay(values: Any, *, model: str, epsilon: float | None = None,
          window: int | None = None,
          windows: Sequence[int] | None = None, alpha: float | None = None,
          c: float | None = None, beta: float | None = None, bound: float | None = None,
          column: str | None = None, seed: int | None = None,
          mechanism: str | None = None, arity: int | None = None,
          rho: float | None = None, delta: float | None = None,
          ledger: Ledger | None = None) -> Release:
    """A private decayed sum over a series: ``window``, ``allwindow`` (``windows``),
    ``exponential`` (``alpha``), ``polynomial`` (``c``) or ``running``. ``values``: a numpy
    array or any Arrow array (float64 is not copied), or a CSV/Parquet path with
    ``column``. ``Release.values``: one estimate per step (2-D, one column per window, for
    ``allwindow``). ``bound``: the largest value one step may hold, declared, not read from
    the data (values above it are clamped); required except for a ``.txt`` file of bits.
    ``mechanism``: ``"tree"`` (default), ``"kary"`` (``arity`` optional; optimal estimates on
    a k-ary tree, half the tree's error or better), ``"smooth"`` (running sums) or ``"best"``,
    as ``kinsey decay --mechanism``. ``rho`` (instead of ``epsilon``): zCDP with exact
    discrete Gaussian noise, stated as (epsilon, ``delta``)-DP (``delta`` 1e-6 by default);
    ``mechanism`` then also takes ``"blt"``, a buffered square-root factorization, and for
    window sums ``"sqrt"``, the window's own (at the lower bound), as
    ``kinsey decay --privacy zcdp --rho``."""
    if bound is None:
        if isinstance(values, (str, os.PathLike)) and os.fspath(values).endswith(".txt"):
            bound = 1.0
        else:
            raise KinseyError(
                "invalid parameter 'bound': bound is required: declare the largest value one "
                "step may hold (values above it are clamped), e.g. bound=1000")
    if isinstance(values, (str, os.PathLike)):
        src = os.fspath(values)
    elif hasattr(values, "__arrow_c_array__"):
        src = values
    else:
        try:
            arr = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise ParameterError(f"invalid parameter 'values': not numbers ({e})") from e
        if arr.ndim != 1:
            raise ParameterError(
                f"invalid parameter 'values': a series is one-dimensional, got shape "
                f"{arr.shape}: pass one column")
        src = pa.array(arr)
    report, names, arrays, advice, guarantee, stds = _kinsey.decay(
        src, column=column, model=model, epsilon=epsilon, window=window,
        windows=list(windows) if windows is not None else None, alpha=alpha, c=c,
        beta=beta, bound=bound, seed=seed, mechanism=mechanism, arity=arity, rho=rho,
        delta=delta, ledger=_ledger(ledger))
    cols = [a.to_numpy(zero_copy_only=False) for a in arrays]
    out = cols[0] if len(cols) == 1 else np.column_stack(cols)
    rel = Release(json.loads(report), Guarantee._of(guarantee), values=out)
    rel.columns = names
    sd = [a.to_numpy(zero_copy_only=False) for a in stds]
    rel.stds = sd[0] if len(sd) == 1 else np.column_stack(sd)
    if advice is not None:
        # Public (the stated std against the largest possible sum): where users look.
        warnings.warn(advice, KinseyWarning, stacklevel=_outside_kinsey())
    return rel


@_checked
def tree(data: Any, *, label: str, epsilon: float, neighbours: str,
         classes: Sequence[float] | None = None, labels: str | None = None,
         attributes: Sequence[str] | None = None,
         depth: int = 5, selection: str = "exponential", score: str = "info_gain",
         row_bound: int | None = None, seed: int | None = None,
         ledger: Ledger | None = None) -> Release:
    """A DP decision tree (seed 002) of a table or a CSV/Parquet file, as ``kinsey tree``
    releases it. ``attributes``: ``NAME`` (0/1) or ``NAME:LO:HI:BINS``; by default every
    numeric column but the label, as binary. ``Release.tree``: the tree (nested dicts, the
    CLI's ``tree.json``); ``Release.report``: its ``report.json``. ``classes``: the
    label's declared values (default -1 and 1); or ``labels``, the binary spelling of
    ``train`` and the CLI: ``"plus_minus_one"`` (-1, 1) or ``"zero_one"`` (0, 1)."""
    if classes is not None and labels is not None:
        raise ParameterError("invalid parameter 'labels': give classes or labels, not both")
    if labels is not None:
        known = {"plus_minus_one": (-1.0, 1.0), "zero_one": (0.0, 1.0)}
        if labels not in known:
            raise ParameterError(f"invalid parameter 'labels': '{labels}' is not one of "
                                 "plus_minus_one, zero_one")
        classes = known[labels]
    classes = (-1.0, 1.0) if classes is None else classes
    src = os.fspath(data) if isinstance(data, (str, os.PathLike)) else _table(data)
    report, tree_json, guarantee = _kinsey.tree(
        src, label=label, classes=[float(c) for c in classes],
        attributes=list(attributes) if attributes is not None else [], depth=depth,
        selection=selection, score=score, epsilon=epsilon, neighbours=neighbours,
        row_bound=row_bound, seed=seed, ledger=_ledger(ledger))
    rep = json.loads(report)
    rel = Release(rep, Guarantee._of(guarantee), table=None)
    rel.tree = json.loads(tree_json)
    return rel


from . import sulq  # noqa: E402  (uses Release and _table above)
from . import stats  # noqa: E402  (the same)


def backends() -> list[tuple[str, str]]:
    """The crypto backends ``train`` takes: (name, what it is and how secure)."""
    return _kinsey.backends()
