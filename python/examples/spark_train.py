"""kinsey on Apache Spark: parties whose rows stay in a Spark cluster, DP statistics of a
column in a data lake, and the same release as on one machine.

    python python/examples/spark_train.py [SHARED_DATA_DIR]

Needs ``pip install "kinsey[spark]"`` and Java 17. Spark runs in local mode here
(``local[2]``); point ``KINSEY_SPARK_MASTER`` at a cluster (``spark://host:7077``) whose
executors' Python has kinsey installed, and nothing else changes.
"""

# %% A Spark session, and flights-3m as a Spark DataFrame (read in place: nothing copied).
import os
import pathlib
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import kinsey
import kinsey.spark

data = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                    pathlib.Path(__file__).resolve().parents[2].parent / "shared/data")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
spark = (SparkSession.builder.master(os.environ.get("KINSEY_SPARK_MASTER", "local[2]"))
         .appName("kinsey example").config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
flights = spark.read.parquet(str(data / "flights-3m/flights-3m.parquet"))

# %% DP statistics of a column on Spark: the executors count and sum, the noise is drawn here.
delays = kinsey.spark.histogram(flights, column="delay", bins=(-60, 180, 24), epsilon=0.5,
                                neighbours="unbounded")
distance = kinsey.spark.stats.mean(flights, column="distance", bounds=(0, 3000),
                                   epsilon=0.5, neighbours="unbounded")
print("delay histogram, first bins:", delays.table.slice(0, 3).to_pylist())
print("mean distance:", distance.table.to_pylist()[0], distance.guarantee.mechanism)

# %% Three airlines' worth of parties: a week of departures from three groups of airports,
# each a Spark DataFrame whose rows never leave the cluster. Is a flight 15 minutes late?
week = flights.filter(F.col("date") < F.lit("2001-01-08"))
rows = week.select(
    F.when(F.col("delay") > 15, 1.0).otherwise(-1.0).alias("late"),
    (F.col("distance") / 3000.0).cast("float").alias("distance"),
    (F.hour("date") / 24.0).cast("float").alias("hour"),
    (F.dayofweek("date") / 7.0).cast("float").alias("weekday"),
    F.abs(F.hash("origin") % 3).alias("group"))
parties = [rows.filter(F.col("group") == g).drop("group") for g in range(3)]
model = kinsey.spark.train(parties, label="late", epsilon=1.0, row_transform="clip",
                           intercept=0.5, backend="paillier", seed=42)
print(model, model.guarantee.mechanism)

# %% The same rows on one machine (collected here only to show it): the same model, bit for bit.
here = kinsey.train([p.toArrow() for p in parties], label="late", epsilon=1.0,
                    row_transform="clip", intercept=0.5, backend="paillier", seed=42)
print("the same model as on one machine:", list(here.w) == list(model.w))
spark.stop()
