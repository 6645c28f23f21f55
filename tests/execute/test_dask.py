"""Past one machine: the executor on Dask partitions, with one local cluster of two worker processes.

The Python API's recipe, run for real: each partition (a pandas DataFrame) goes through
the same ``BatchEvaluator``, pickled to two worker processes; per-row results come
back as partitions of their own, and sums over partitions give the batch mean
gradient.  Two million rows, generated on the workers from seeds.

Then ``execute.distributed``: ``DistributedObjective`` trained by ``execute.fit.train`` gives
the parameters a single-machine run gives (and least squares' closed form); a row that
fails is named by its file and line; a worker that dies is replaced and its partition run
again, or, dying every time, reported; Ctrl-C cancels the cluster's work.  The module's
cluster is started once (``Cluster('local:2')``, as ``batch --dask local:2`` starts one).
"""

from __future__ import annotations

import os
import signal
import threading
import _thread
from pathlib import Path

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from autodiff_cli import BatchEvaluator
from autodiff_cli.errors import EvaluationError
from autodiff_cli.execute.distributed import Cluster, DistributedObjective, InProcess, PartitionObjective
from autodiff_cli.execute.fit import FitSettings, plan_fit, train
from autodiff_cli.files.partitions import PartitionReader
from autodiff_cli.language import parse

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
def cluster():
    with Cluster("local:2") as started:
        yield started


@pytest.fixture(scope="module")
def client(cluster):
    return cluster.client


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


# --- training over partitions: DistributedObjective ----------------------------------------------


def split_rows(source: Path, directory: Path, cuts: list[int]) -> list[str]:
    """The rows of ``source`` as files part-0.csv, part-1.csv ... cut before the rows ``cuts``
    (counting rows from 0), each with the header."""
    header, *rows = source.read_text().splitlines()
    bounds = [0, *cuts, len(rows)]
    paths = []
    for index, (start, end) in enumerate(zip(bounds, bounds[1:])):
        path = directory / f"part-{index}.csv"
        path.write_text("\n".join([header, *rows[start:end]]) + "\n")
        paths.append(str(path))
    return paths


def all_columns(paths: list[str]) -> dict[str, np.ndarray]:
    frames = [pd.read_csv(path) for path in paths]
    return {name: np.concatenate([frame[name].to_numpy(dtype=float) for frame in frames]) for name in frames[0]}


def regression_objectives(cluster: Cluster | InProcess, paths: list[str]):
    """samples/regression_rows.ad on the rows of ``paths``: over the partitions, and over all
    rows in this process (the single-machine run), with the parameters' starting vector."""
    from autodiff_cli.execute.columns import input_rows
    from autodiff_cli.execute.objective import TensorObjective, starting_parameters

    program = parse((SAMPLES / "regression_rows.ad").read_text(), "regression_rows.ad")
    columns = all_columns(paths)
    plan = plan_fit(program, list(columns), {})
    layout, start = starting_parameters(program, plan.parameters, plan.start, "normal", 0)
    spread = DistributedObjective(cluster, paths, PartitionReader(), PartitionObjective(program, plan, list(columns),
                                                                                      layout, plan.fixed))
    here = TensorObjective(program, plan.output, layout, plan.fixed, input_rows(program, columns))
    return spread, here, start, columns


SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def test_full_batch_fit_over_partitions_is_the_single_machine_fit(cluster, tmp_path) -> None:
    paths = split_rows(SAMPLES / "line_ones.csv", tmp_path, [70, 140])
    spread, here, start, columns = regression_objectives(cluster, paths)
    assert spread.rows == here.rows == 200
    settings = FitSettings(lr=0.4, steps=30)
    on_cluster, alone = train(spread, start, settings), train(here, start, settings)
    np.testing.assert_allclose(on_cluster.params, alone.params, rtol=1e-12, atol=1e-15)
    assert on_cluster.loss == pytest.approx(alone.loss, rel=1e-12)
    # the same partitions summed on one machine: the same bits as on the cluster
    in_process, *_ = regression_objectives(InProcess(), paths)
    np.testing.assert_array_equal(train(in_process, start, settings).params, on_cluster.params)
    # least squares' closed form, computed without autodiff
    X = np.column_stack([columns["x[0]"], columns["x[1]"]])
    best, *_ = np.linalg.lstsq(X, columns["y"], rcond=None)
    np.testing.assert_allclose(on_cluster.params, best, rtol=1e-9)


def test_mini_batches_over_partitions_are_the_single_machine_ones(cluster, tmp_path) -> None:
    paths = split_rows(SAMPLES / "line_ones.csv", tmp_path, [33, 34, 150])  # a partition of one row
    spread, here, start, _ = regression_objectives(cluster, paths)
    settings = FitSettings(optimizer="adam", lr=0.05, steps=15, batch_size=16, seed=7)
    on_cluster, alone = train(spread, start, settings), train(here, start, settings)
    np.testing.assert_allclose([step.loss for step in on_cluster.history], [step.loss for step in alone.history],
                               rtol=1e-12)
    np.testing.assert_allclose(on_cluster.params, alone.params, rtol=1e-12, atol=1e-15)


def test_a_program_of_numbers_trains_over_partitions(cluster, tmp_path) -> None:
    from autodiff_cli.execute.objective import ProgramObjective

    paths = split_rows(SAMPLES / "line.csv", tmp_path, [100])
    program = parse("w = 0\nb = 0\nL = (w*x + b - y)**2", "line")
    columns = all_columns(paths)
    plan = plan_fit(program, list(columns), {})
    spread = DistributedObjective(cluster, paths, PartitionReader(), PartitionObjective(program, plan, list(columns)))
    start = np.zeros(2)
    on_cluster = train(spread, start, FitSettings(lr=0.4, steps=30))
    alone = train(ProgramObjective(program, plan, columns), start, FitSettings(lr=0.4, steps=30))
    np.testing.assert_allclose(on_cluster.params, alone.params, rtol=1e-12)
    slope, intercept = np.polyfit(columns["x"], columns["y"], 1)
    np.testing.assert_allclose(on_cluster.params, [slope, intercept], rtol=1e-9)


def test_a_row_that_fails_is_named_by_its_file_and_line(cluster, tmp_path) -> None:
    paths = split_rows(SAMPLES / "line.csv", tmp_path, [50, 120])
    with open(paths[1], "a") as rows:
        rows.write("-3.0,-101.0\n")  # log(-1): line 72 of part-1.csv (its header, 70 rows, then this)
    program = parse("w = 1\nL = (w*x - log(y + 100))**2", "logs")
    plan = plan_fit(program, ["x", "y"], {})
    spread = DistributedObjective(cluster, paths, PartitionReader(), PartitionObjective(program, plan, ["x", "y"]))
    with pytest.raises(EvaluationError) as caught:
        spread.loss_and_grad(np.array([1.0]), None)
    assert "log of -1" in caught.value.message
    assert any(f"line 72 of {paths[1]}" in note for note in caught.value.notes)


def test_a_bad_cell_in_a_partition_is_located(cluster, tmp_path) -> None:
    from autodiff_cli.errors import InputError

    paths = split_rows(SAMPLES / "line.csv", tmp_path, [50, 120])
    text = Path(paths[2]).read_text().splitlines()
    text[5] = text[5].split(",")[0] + ",oops"
    Path(paths[2]).write_text("\n".join(text) + "\n")
    program = parse("w = 1\nL = (w*x - y)**2", "line")
    plan = plan_fit(program, ["x", "y"], {})
    with pytest.raises(InputError) as caught:
        DistributedObjective(cluster, paths, PartitionReader(), PartitionObjective(program, plan, ["x", "y"]))
    assert caught.value.source.name == paths[2]
    assert caught.value.position.line == 6
    assert caught.value.position.column == len(text[5].split(",")[0]) + 2


def test_a_worker_that_dies_is_replaced_and_its_partition_run_again(cluster, tmp_path) -> None:
    marker = tmp_path / "died-once"

    def square_dying_once(item: int) -> int:
        if item == 2 and not marker.exists():
            marker.write_text("")
            os.kill(os.getpid(), signal.SIGKILL)  # the worker process, killed mid-task
        return item * item

    assert cluster.map(square_dying_once, list(range(6))) == [0, 1, 4, 9, 16, 25]
    assert marker.exists()


def test_a_partition_that_kills_every_worker_is_reported(cluster) -> None:
    def die(item: int) -> int:
        if item == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return item

    with pytest.raises(EvaluationError) as caught:
        cluster.map(die, [0, 1, 2], labels=["partition 1 (a)", "partition 2 (b)", "partition 3 (c)"])
    # the killer is named; a partition queued behind it on the dying worker may be named beside it
    message = caught.value.message
    assert message in ("the Dask workers running partition 2 (b) died 3 times, so the run stopped",
                       "the Dask workers running partition 1 (a) or partition 2 (b) died 3 times, so the run stopped")
    assert cluster.map(lambda item: item + 1, [1, 2]) == [2, 3]  # the cluster goes on


def test_ctrl_c_cancels_the_work_on_the_cluster(cluster) -> None:
    import time

    def slow(item: int) -> int:
        time.sleep(60)
        return item

    timer = threading.Timer(1.0, _thread.interrupt_main)
    timer.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        cluster.map(slow, [1, 2, 3, 4])
    assert time.monotonic() - started < 30  # did not wait for the tasks
    processing = cluster.client.processing()
    deadline = time.monotonic() + 20
    while any(processing.values()) and time.monotonic() < deadline:
        time.sleep(0.2)
        processing = cluster.client.processing()
    assert not any(processing.values())  # cancelled on the workers, not left running


def test_a_local_cluster_is_capped_at_what_the_machine_holds(monkeypatch) -> None:
    from autodiff_cli.execute import distributed

    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    most = distributed.most_local_workers()
    assert 1 <= most <= 4 * 3
    assert distributed.parse_scheduler(f"local:{most}") == ("local", most)
    with pytest.raises(ValueError, match=f"at most {most} here"):
        distributed.parse_scheduler(f"local:{most + 1}")


def test_a_step_sends_no_task_once_the_partitions_are_held(cluster, tmp_path, monkeypatch) -> None:
    """Each step goes straight to the workers that hold the partitions (issue 34: a task per
    worker cost the scheduler ~11 ms a step); the sums are those of the same partitions here."""
    paths = split_rows(SAMPLES / "line_ones.csv", tmp_path, [70, 140])
    spread, _, start, _ = regression_objectives(cluster, paths)
    in_process, *_ = regression_objectives(InProcess(), paths)
    spread.loss_and_grad(start, None)  # the workers' runners start
    submitted = []
    monkeypatch.setattr(cluster, "submit", lambda *args, **kwargs: submitted.append(args))
    for rows in (None, np.array([3, 71, 72, 199])):
        loss, grad = spread.loss_and_grad(start, rows)
        expected_loss, expected_grad = in_process.loss_and_grad(start, rows)
        assert loss == expected_loss
        np.testing.assert_array_equal(grad, expected_grad)
    assert spread.loss(start) == in_process.loss(start)
    assert submitted == []


def test_a_worker_that_dies_between_steps_costs_a_step_on_tasks_not_the_answer(tmp_path) -> None:
    # A cluster of its own: the module's shared one may have lost workers to earlier tests (in
    # random order this one then waited for ever on a cluster with no worker to rerun on).
    paths = split_rows(SAMPLES / "line_ones.csv", tmp_path, [70, 140])
    with Cluster("local:2") as cluster:
        spread, _, start, _ = regression_objectives(cluster, paths)
        in_process, *_ = regression_objectives(InProcess(), paths)
        expected = in_process.loss_and_grad(start, None)
        spread.loss_and_grad(start, None)
        holder = sorted(cluster.client.who_has(spread._objectives)[spread._objectives[0].key])[0]
        try:
            cluster.client.run(os._exit, 1, workers=[holder])  # the worker holding partition 1, gone
        except Exception:  # its connection closes as it dies
            pass
        for _ in range(2):  # by tasks while Dask reads the partition again, then straight to the workers
            loss, grad = spread.loss_and_grad(start, None)
            assert loss == expected[0]
            np.testing.assert_array_equal(grad, expected[1])
