"""kinsey from Python, cell by cell: a secure DP classifier on a9a split across five
parties, a DP histogram of three million flight delays, and a private sliding-window sum
of their late arrivals.

    python python/examples/quickstart.py [SHARED_DATA_DIR]

SHARED_DATA_DIR defaults to ../shared/data beside the checkout (README there).
"""

# %% The data: a9a (LIBSVM text) as pyarrow tables, one per party.
import math
import pathlib
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import kinsey

data = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                    pathlib.Path(__file__).resolve().parents[2].parent / "shared/data")


def libsvm(path: pathlib.Path, dim: int = 123) -> pa.Table:
    """A LIBSVM file of 0/1 features as a table: columns f1..f{dim} (float32) and label."""
    lines = path.read_text().splitlines()
    x = np.zeros((len(lines), dim), dtype=np.float32)
    y = np.empty(len(lines), dtype=np.float32)
    for i, line in enumerate(lines):
        label, *pairs = line.split()
        y[i] = float(label)
        for p in pairs:
            j, v = p.split(":")
            x[i, int(j) - 1] = float(v)
    return pa.table({**{f"f{j + 1}": x[:, j] for j in range(dim)}, "label": y})


train_rows = libsvm(data / "a9a/a9a")
test_rows = libsvm(data / "a9a/a9a.t")
order = np.random.default_rng(7).permutation(train_rows.num_rows)
parties = [train_rows.take(part) for part in np.array_split(order, 5)]
print(f"{len(parties)} parties of {[p.num_rows for p in parties]} rows, {test_rows.num_rows} test rows")

# %% The secure DP classifier: no party reveals its rows, its size or its model.
model = kinsey.train(parties, label="label", epsilon=1.0, row_transform="scale",
                     row_scale=1 / math.sqrt(14), backend="paillier", seed=42)
accuracy = float(np.mean(model.predict(test_rows) == test_rows.column("label").to_numpy()))
print(model, model.guarantee["mechanism"])
print(f"test accuracy on a9a.t: {accuracy:.4f}")

# %% A DP histogram of flight delays, straight from a pyarrow table (no copy).
flights = pq.read_table(data / "flights-3m/flights-3m.parquet", columns=["delay"])
delays = kinsey.histogram(flights, column="delay", bins=(-60, 180, 24), epsilon=0.5,
                          neighbours="unbounded")
print(delays.table.slice(0, 5).to_pandas() if "pandas" in sys.modules else delays.table.slice(0, 5))
print("guarantee:", {k: delays.guarantee[k] for k in ("epsilon", "delta", "neighbours")})

# %% A private window sum of late arrivals among the last 1,440 of 3M flights (one bit each),
# from a numpy array: the stated std is a few percent of the sums, the release says something.
bits = np.frombuffer((data / "flights-3m/arrival_delayed15_bits.txt").read_bytes().strip(),
                     dtype=np.uint8) - ord("0")
late = kinsey.decay(bits.astype(np.float64), model="window", window=1440, epsilon=1.0,
                    bound=1, mechanism="best")
print(f"{len(late.values)} estimates of late arrivals among the last 1,440 flights; the last: "
      f"{late.values[-1]:.0f} (stated std {late.report['std_at_last_step']:.1f})")
