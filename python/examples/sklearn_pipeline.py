"""kinsey's DP classifier inside scikit-learn: a Pipeline, cross-validation, a test score.

    python python/examples/sklearn_pipeline.py [SHARED_DATA_DIR]

SHARED_DATA_DIR defaults to ../shared/data beside the checkout (README there). Needs
scikit-learn (pip install "./python[sklearn]").
"""

import pathlib
import sys

import numpy as np
from sklearn.datasets import load_svmlight_file
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from kinsey.sklearn import DPLogisticRegression

data = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                    pathlib.Path(__file__).resolve().parents[2].parent / "shared/data")

# a9a as five parties: `party` names each row's party (sizes as in the README's split).
X, y = load_svmlight_file(str(data / "a9a/a9a"), n_features=123)
X = X.toarray()
sizes = [4884, 6512, 6512, 6512, 8141]
party = np.random.default_rng(7).permutation(np.repeat(np.arange(5), sizes))

# The scaler's means and variances come from the exact data: they are NOT covered by the
# guarantee. Publish the model alone, or scale by public constants instead.
clf = make_pipeline(StandardScaler(),
                    DPLogisticRegression(epsilon=4.0, lam=3e-3, row_transform="clip",
                                         intercept=0.5, backend="paillier"))

# Each fold is a new release: every row is in 2 of the 3 training sets, so the folds spend
# 2 x epsilon of its privacy (and the fit below one more). The scores are computed from
# exact held-out rows: NOT PRIVATE.
scores = cross_val_score(clf, X, y, cv=3, params={"dplogisticregression__groups": party})
print("cross-validated accuracy (NOT PRIVATE):", np.round(scores, 3))

clf.fit(X, y, dplogisticregression__groups=party)   # the one release to publish
dp = clf[-1]
print("published:", dp.n_parties_, "parties,", dp.coef_.shape[1], "weights, epsilon",
      dp.guarantee_["epsilon"])
X_test, y_test = load_svmlight_file(str(data / "a9a/a9a.t"), n_features=123)
print("test accuracy (NOT PRIVATE):", round(clf.score(X_test.toarray(), y_test), 3))
