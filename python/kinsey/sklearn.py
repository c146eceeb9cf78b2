"""kinsey's DP aggregate classifier as a scikit-learn estimator.

``DPLogisticRegression`` is :func:`kinsey.train` behind scikit-learn's estimator interface:
``fit(X, y, groups=party_ids)`` trains across the parties that ``groups`` names (one party
per distinct value; all rows one party when ``groups`` is None), and the fitted estimator
predicts, scores and clones like any scikit-learn classifier, inside a ``Pipeline`` and
``cross_val_score`` too.

**Every fit is a new release.** Each call to ``fit`` draws fresh noise and spends
``epsilon`` of the data's privacy budget (charged to ``ledger`` when one is given). A
cross-validation of 5 folds fits 5 models whose training sets overlap: every row is in 4
of them, so the 5 models together cost ``4 * epsilon`` of that row's privacy, and the
scores they produce are computed from exact held-out data (diagnostics, NOT PRIVATE).
Publish one model fitted once, and choose its parameters on public or separate data.

**What is covered.** The guarantee (``guarantee_``) covers the model: ``coef_``,
``intercept_`` and everything computed from them. A preprocessing step fitted on the same
data (a ``StandardScaler``'s means and variances) is NOT covered: its statistics come
from the exact data. Prefer transforms with public constants (``row_transform="scale"``,
a ``FunctionTransformer``), or publish the scaler's statistics with ``kinsey.stats``.

Needs scikit-learn 1.6 or later (``pip install "./python[sklearn]"``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

try:
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.multiclass import check_classification_targets, type_of_target
    from sklearn.utils.validation import check_is_fitted, validate_data
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "kinsey.sklearn needs scikit-learn 1.6 or later: pip install scikit-learn "
        "(or pip install \"./python[sklearn]\")") from e

from . import KinseyError, Ledger, ParameterError, train

__all__ = ["DPLogisticRegression", "InvalidInput", "NotFitted"]


class InvalidInput(ParameterError, ValueError):
    """A bad ``X``, ``y`` or ``groups``: a ``kinsey.ParameterError`` that is also the
    ``ValueError`` scikit-learn's tools expect."""


class NotFitted(KinseyError, NotFittedError):
    """The estimator was used before ``fit``: a ``kinsey.KinseyError`` that is also
    scikit-learn's ``NotFittedError``."""


def _arrow_to_pandas(X: Any) -> Any:
    """A pyarrow Table or RecordBatchReader as pandas (scikit-learn reads its column
    names there); anything else as it is."""
    if type(X).__module__.startswith("pyarrow") and hasattr(X, "__arrow_c_stream__"):
        return pa.table(X).to_pandas()
    return X


class DPLogisticRegression(ClassifierMixin, BaseEstimator):
    """The DP aggregate classifier (seed 000) with scikit-learn's interface.

    Each party fits an L2-regularised logistic regression on its own rows and the secure
    protocol publishes the noisy average, as :func:`kinsey.train` does; the parameters are
    ``train``'s, with the same meaning and defaults (read its docstring).

    ``fit(X, y, groups=None)``: ``X`` a numpy array, a pandas, Polars or pyarrow table of
    numbers; ``y`` any two labels (``classes_``, sorted: the second is the positive
    class); ``groups`` one party id per row (parties in sorted id order). Rows must lie in
    the unit ball after ``row_transform``: ``"clip"`` projects each row onto it,
    ``"scale"`` multiplies every row by the public ``row_scale``, ``"none"`` refuses a row
    outside it.

    **Every fit is a new release** that spends ``epsilon`` (see the module's docstring for
    cross-validation). With a ``seed`` the noise is reproducible and the release is NOT
    private against whoever knows the seed (a ``kinsey.KinseyWarning`` says so).

    Fitted attributes: ``coef_`` (1, n_features) and ``intercept_`` (1,): the model's
    weights on the transformed row ``T(x)`` and its bias, so that ``decision_function(X)``
    is ``T(X) @ coef_.T + intercept_`` (``T`` the row transform; linear in ``X`` for
    ``"none"`` and ``"scale"``); ``classes_``; ``model_`` (the :class:`kinsey.Model`:
    ``save`` it to publish); ``guarantee_`` (epsilon, delta, neighbours, mechanism,
    sensitivity); ``n_parties_``; ``n_features_in_`` and ``feature_names_in_`` (for
    named columns)."""

    def __init__(self, epsilon: float = 1.0, *, lam: float = 1e-3,
                 row_transform: str = "none", row_scale: float | None = None,
                 intercept: float | None = None, backend: str = "paillier",
                 key_bits: int = 2048, aggregation: str = "secure", noise: str = "l2",
                 calibration: str = "tight", device: str = "auto",
                 seed: int | None = None, allow_two_parties: bool = False,
                 ledger: Ledger | None = None) -> None:
        self.epsilon = epsilon
        self.lam = lam
        self.row_transform = row_transform
        self.row_scale = row_scale
        self.intercept = intercept
        self.backend = backend
        self.key_bits = key_bits
        self.aggregation = aggregation
        self.noise = noise
        self.calibration = calibration
        self.device = device
        self.seed = seed
        self.allow_two_parties = allow_two_parties
        self.ledger = ledger

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.non_deterministic = self.seed is None
        return tags

    def _names(self, d: int) -> list[str]:
        names = getattr(self, "feature_names_in_", None)
        return [str(n) for n in names] if names is not None else [f"x{j}" for j in range(d)]

    def _rows(self, X: Any, *, reset: bool, y: Any = None) -> Any:
        """scikit-learn's own validation (finite numbers, 2-D, the fitted width and
        column names), its ValueError as an ``InvalidInput``."""
        X = _arrow_to_pandas(X)
        try:
            if reset:
                return validate_data(self, X, y, dtype=np.float64, reset=True)
            return validate_data(self, X, dtype=np.float64, reset=False)
        except KinseyError:
            raise
        except ValueError as e:
            raise InvalidInput(f"invalid parameter '{'X' if y is None else 'X or y'}': "
                               f"{e}") from e

    def fit(self, X: Any, y: Any, groups: Any = None) -> "DPLogisticRegression":
        """Train across the parties ``groups`` names (all rows one party when None): one
        release, spending ``epsilon``. Returns ``self``."""
        X, y = self._rows(X, reset=True, y=y)
        try:
            check_classification_targets(y)
        except ValueError as e:
            raise InvalidInput(f"invalid parameter 'y': {e}") from e
        classes = np.unique(y)
        if len(classes) != 2:
            # scikit-learn's words for its tools (and its checks), then kinsey's.
            y_type = type_of_target(y, input_name="y")
            said = ("Only binary classification is supported. The type of the target is "
                    f"{y_type}: " if y_type != "binary" else "")
            # The number of classes only: the label values are the caller's data.
            raise InvalidInput(
                f"invalid parameter 'y': {said}the classifier needs exactly 2 classes; y "
                f"has {len(classes)} class{'es' if len(classes) != 1 else ''}")
        if groups is None:
            party_of = np.zeros(len(y), dtype=np.intp)
        else:
            g = np.asarray(groups)
            if g.ndim != 1 or len(g) != len(y):
                raise InvalidInput(
                    f"invalid parameter 'groups': one party id per row is expected "
                    f"({len(y)} rows), got shape {g.shape}")
            _, party_of = np.unique(g, return_inverse=True)
        names = self._names(X.shape[1])
        label = "label"
        while label in names:
            label = "_" + label
        signs = np.where(y == classes[1], 1, -1).astype(np.int8)
        parties = []
        for p in range(int(party_of.max()) + 1 if len(party_of) else 0):
            rows = np.flatnonzero(party_of == p)
            cols = {n: np.ascontiguousarray(X[rows, j]) for j, n in enumerate(names)}
            cols[label] = signs[rows]
            parties.append(pa.table(cols))
        model = train(
            parties, label=label, epsilon=self.epsilon, lam=self.lam,
            row_transform=self.row_transform, row_scale=self.row_scale,
            features=names, backend=self.backend, key_bits=self.key_bits,
            aggregation=self.aggregation, noise=self.noise, calibration=self.calibration,
            device=self.device, seed=self.seed, intercept=self.intercept,
            allow_two_parties=self.allow_two_parties, ledger=self.ledger)
        self.classes_ = classes
        self.model_ = model
        self.guarantee_ = model.guarantee
        self.n_parties_ = len(parties)
        self.coef_ = np.asarray(model.coef, dtype=np.float64).reshape(1, -1)
        self.intercept_ = np.array([model.bias], dtype=np.float64)
        return self

    def _fitted(self) -> None:
        try:
            check_is_fitted(self, "model_")
        except NotFittedError as e:
            raise NotFitted(str(e)) from e

    def decision_function(self, X: Any) -> np.ndarray:
        """The score of each row (positive: ``classes_[1]``), computed by the engine as
        ``kinsey predict`` computes it."""
        self._fitted()
        return self.model_.decision_function(self._rows(X, reset=False))

    def predict(self, X: Any) -> np.ndarray:
        """The predicted label of each row, one of ``classes_``."""
        self._fitted()
        return self.classes_[(self.decision_function(X) > 0).astype(np.intp)]

    def predict_proba(self, X: Any) -> np.ndarray:
        """P(``classes_[0]``) and P(``classes_[1]``) of each row under the logistic
        model: shape (n_rows, 2)."""
        p = 0.5 * (1.0 + np.tanh(0.5 * self.decision_function(X)))
        return np.column_stack([1.0 - p, p])

    def predict_log_proba(self, X: Any) -> np.ndarray:
        """The log of ``predict_proba``, computed without underflow."""
        z = self.decision_function(X)
        return np.column_stack([-np.logaddexp(0.0, z), -np.logaddexp(0.0, -z)])

