"""Shared fixtures: the kinsey CLI (the reference the Python API must equal) and the shared
data (../shared/data beside the checkout, or KINSEY_SHARED_DATA)."""

from __future__ import annotations

import os
import pathlib
import subprocess

import pyarrow.parquet as pq
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _cli() -> pathlib.Path:
    for p in (os.environ.get("KINSEY_BIN"), ROOT / "target/debug/kinsey",
              ROOT / "target/release/kinsey"):
        if p and pathlib.Path(p).is_file():
            return pathlib.Path(p)
    pytest.fail("no kinsey CLI: build it (cargo build -p kinsey-cli) or set KINSEY_BIN")


@pytest.fixture(scope="session")
def cli() -> pathlib.Path:
    return _cli()


@pytest.fixture(scope="session")
def shared() -> pathlib.Path:
    d = pathlib.Path(os.environ.get("KINSEY_SHARED_DATA", ROOT.parent / "shared/data"))
    if not (d / "a9a/a9a").is_file():
        pytest.fail(f"the shared data is not at {d} (set KINSEY_SHARED_DATA)")
    return d


def run(cli: pathlib.Path, *args: str) -> str:
    r = subprocess.run([str(cli), *args], capture_output=True, text=True,
                       env={**os.environ, "KINSEY_NO_PROGRESS": "1"})
    assert r.returncode == 0, f"kinsey {' '.join(args)}: {r.stderr}"
    return r.stdout


@pytest.fixture(scope="session")
def a9a(cli, shared, tmp_path_factory) -> dict:
    """a9a as five Parquet parties (the README's split) and a9a.t, made by the CLI."""
    d = tmp_path_factory.mktemp("a9a")
    run(cli, "convert", "--libsvm", str(shared / "a9a/a9a"), "--dim", "123",
        "--out", str(d / "a9a.parquet"))
    run(cli, "convert", "--libsvm", str(shared / "a9a/a9a.t"), "--dim", "123",
        "--out", str(d / "test.parquet"))
    run(cli, "split", "--input", str(d / "a9a.parquet"), "--sizes",
        "4884,6512,6512,6512,8141", "--seed", "7", "--out", str(d / "parties"))
    parties = sorted((d / "parties").glob("party-*.parquet"))
    assert len(parties) == 5, parties
    return {"dir": d, "parties": parties, "test": d / "test.parquet",
            "tables": [pq.read_table(p) for p in parties]}


def pytest_configure(config) -> None:
    # Many tests seed on purpose (to compare bytes with the CLI): their KinseyWarning is
    # expected, and the test of the warning records it with pytest.warns all the same.
    config.addinivalue_line("filterwarnings", "ignore::kinsey.KinseyWarning")
