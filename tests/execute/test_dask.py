"""Past one machine: the executor on Dask DataFrame partitions, with a local cluster of two workers.

The README's recipe, run for real: each partition (a pandas DataFrame) goes through
the same ``BatchEvaluator``, pickled to two worker processes; per-row results come
back as partitions of their own, and sums over partitions give the batch mean
gradient.  Two million rows, generated on the workers from seeds, so the test stays
a few seconds long (most of it the cluster's start).
"""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from dask import distributed

from autodiff_cli import BatchEvaluator

PARTITIONS, ROWS = 8, 250_000
PROGRAM = "w = 0.5\nb = 0.1\nL = (w*x + b - y)**2"


def partition(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(ROWS)
    return pd.DataFrame({"x": x, "y": 2 * x + 1 + 0.1 * rng.standard_normal(ROWS)})


def closed_form_sums(frame: pd.DataFrame) -> pd.DataFrame:
    """sum over rows of (XW - Y)^2 and 2 X^T (XW - Y), X = [x, 1], W = [0.5, 0.1]: no autodiff."""
    residual = 0.5 * frame["x"].to_numpy() + 0.1 - frame["y"].to_numpy()
    return pd.DataFrame([{"L": residual @ residual, "w": 2 * residual @ frame["x"].to_numpy(),
                          "b": 2 * residual.sum(), "rows": len(frame)}])


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client


def test_mean_gradient_over_partitions_on_two_workers(client) -> None:
    evaluator = BatchEvaluator(PROGRAM, wrt=["w", "b"])
    frame = dd.from_map(partition, range(PARTITIONS))

    def sums(part: pd.DataFrame) -> pd.DataFrame:
        result = evaluator.evaluate(part, reduce="sum")
        return pd.DataFrame([{**result.columns(), "rows": result.count}])

    meta = {**{name: "f8" for name in evaluator.column_names()}, "rows": "i8"}
    totals = frame.map_partitions(sums, meta=meta).sum().compute()
    expected = frame.map_partitions(closed_form_sums, meta={"L": "f8", "w": "f8", "b": "f8", "rows": "i8"}).sum().compute()
    assert totals["rows"] == PARTITIONS * ROWS == expected["rows"]
    count = totals["rows"]
    assert totals["L"] / count == pytest.approx(expected["L"] / count, rel=1e-12)
    assert totals["dL/dw"] / count == pytest.approx(expected["w"] / count, rel=1e-12)
    assert totals["dL/db"] / count == pytest.approx(expected["b"] / count, rel=1e-12)


def test_per_row_results_are_partitions_too(client) -> None:
    evaluator = BatchEvaluator(PROGRAM, wrt=["w", "b"])
    frame = dd.from_map(partition, range(PARTITIONS))

    def per_row(part: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame(evaluator.evaluate(part).columns(), index=part.index)

    meta = {name: "f8" for name in evaluator.column_names()}
    out = frame.map_partitions(per_row, meta=meta)
    assert list(out.columns) == ["L", "dL/dw", "dL/db"]
    third = out.partitions[3].compute()
    here = evaluator.evaluate(partition(3)).columns()
    assert len(third) == ROWS
    for name in meta:
        np.testing.assert_array_equal(third[name].to_numpy(), here[name])  # the same bits on a worker
