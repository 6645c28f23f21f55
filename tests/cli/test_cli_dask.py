"""`autodiff batch ROWS --dask SCHEDULER`: rows in many files, on a cluster of two worker processes.

One local cluster for the module (``execute.distributed.Cluster('local:2')``, what ``--dask
local:2`` starts); the commands connect to it by its address as they would to a real
scheduler.  Per-row output is a directory of parts whose rows are the single-machine run's,
byte for byte; ``--reduce``'s report is the single-machine run's on the same files byte for
byte (and a single file's to the last bits); a bad cell in one partition is reported at its
file, line and column; an existing output directory is never half-replaced.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from autodiff_cli.cli import main
from autodiff_cli.execute.distributed import Cluster

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
REGRESSION = str(SAMPLES / "regression.ad")  # w = 0.5, b = 0, L = (w*x + b - y)**2
PARTS, ROWS = 4, 300


@pytest.fixture(scope="module")
def address():
    with Cluster("local:2") as cluster:
        yield cluster.client.scheduler.address


@pytest.fixture(scope="module")
def rows(tmp_path_factory) -> Path:
    """rows/part-0.csv ... part-3.csv, and all.csv: the same rows in one file."""
    directory = tmp_path_factory.mktemp("data")
    parts = directory / "rows"
    parts.mkdir()
    rng = np.random.default_rng(26)
    lines = []
    for index in range(PARTS):
        x = rng.standard_normal(ROWS)
        y = 2 * x + 1 + 0.1 * rng.standard_normal(ROWS)
        block = [f"{float(a)!r},{float(b)!r}" for a, b in zip(x, y)]
        (parts / f"part-{index}.csv").write_text("x,y\n" + "\n".join(block) + "\n")
        lines += block
    (directory / "all.csv").write_text("x,y\n" + "\n".join(lines) + "\n")
    return directory


def batch(runner, *args):
    return runner.invoke(main, ["batch", *map(str, args)])


def joined_parts(directory: Path) -> str:
    """The parts' text as one CSV file: the first part's header, then every part's rows."""
    parts = sorted(directory.iterdir())
    texts = [part.read_text() for part in parts]
    return texts[0] + "".join(text.split("\n", 1)[1] for text in texts[1:])


def test_per_row_output_is_a_directory_of_parts_with_the_single_machine_rows(runner, rows, address, tmp_path):
    out = tmp_path / "out"
    result = batch(runner, REGRESSION, rows / "rows", "--dask", address, "-o", out)
    assert result.exit_code == 0, result.output
    assert sorted(os.listdir(out)) == [f"part-0000{i}.csv" for i in range(PARTS)]
    single = batch(runner, REGRESSION, rows / "all.csv")
    assert joined_parts(out) == single.stdout
    # the values themselves, without autodiff: L = (0.5 x - y)^2, dL/dw = 2 r x, dL/db = 2 r
    table = np.genfromtxt(out / "part-00002.csv", delimiter=",", names=True)
    x, y = np.loadtxt(rows / "rows" / "part-2.csv", delimiter=",", skiprows=1, unpack=True)
    residual = 0.5 * x - y
    np.testing.assert_allclose(table["L"], residual ** 2, rtol=1e-15)
    np.testing.assert_allclose(table["dLdw"], 2 * residual * x, rtol=1e-15)
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".")]  # no temporary left


def test_reduce_is_the_single_machine_report(runner, rows, address):
    for how in ("mean", "sum"):
        spread = batch(runner, REGRESSION, rows / "rows", "--dask", address, "--reduce", how, "--format", "json")
        here = batch(runner, REGRESSION, str(rows / "rows" / "*.csv"), "--reduce", how, "--format", "json")
        one_file = batch(runner, REGRESSION, rows / "all.csv", "--reduce", how, "--format", "json")
        assert spread.exit_code == here.exit_code == one_file.exit_code == 0, spread.output
        assert spread.stdout == here.stdout  # the same bits, with or without the cluster
        report, alone = json.loads(spread.stdout), json.loads(one_file.stdout)
        assert report["rows"] == PARTS * ROWS
        for name in ("L", "w", "b"):
            assert report["grads"][name] == pytest.approx(alone["grads"][name], rel=1e-13)
        x, y = np.loadtxt(rows / "all.csv", delimiter=",", skiprows=1, unpack=True)
        residual = 0.5 * x - y
        count = len(x) if how == "mean" else 1
        assert report["value"] == pytest.approx(np.sum(residual ** 2) / count, rel=1e-12)
        assert report["grads"]["w"] == pytest.approx(np.sum(2 * residual * x) / count, rel=1e-12)


def test_parquet_parts_in_and_out(runner, rows, address, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    source = tmp_path / "pq"
    source.mkdir()
    for index in range(PARTS):
        x, y = np.loadtxt(rows / "rows" / f"part-{index}.csv", delimiter=",", skiprows=1, unpack=True)
        pq.write_table(pa.table({"x": x, "y": y}), source / f"part-{index}.parquet")
    out = tmp_path / "out"
    result = batch(runner, REGRESSION, str(source / "*.parquet"), "--dask", address, "-o", out, "--to", "parquet")
    assert result.exit_code == 0, result.output
    table = pa.concat_tables([pq.read_table(out / name) for name in sorted(os.listdir(out))])
    single = np.genfromtxt(batch(runner, REGRESSION, rows / "all.csv").stdout.splitlines(), delimiter=",",
                           names=True)
    np.testing.assert_array_equal(table.column("L").to_numpy(), single["L"])
    np.testing.assert_array_equal(table.column("dL/db").to_numpy(), single["dLdb"])


def test_a_bad_cell_in_one_partition_is_reported_at_its_file_line_and_column(runner, rows, address, tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    for index in range(PARTS):
        text = (rows / "rows" / f"part-{index}.csv").read_text()
        if index == 2:
            lines = text.split("\n")
            lines[17] = lines[17].split(",")[0] + ",1.5x"  # line 18 of the file
            column = len(lines[17].split(",")[0]) + 2  # after x's cell and the comma
            text = "\n".join(lines)
        (bad / f"part-{index}.csv").write_text(text)
    for how in (["-o", tmp_path / "out"], ["--reduce", "mean"]):
        result = batch(runner, REGRESSION, bad, "--dask", address, *how)
        assert result.exit_code == 1
        assert result.stderr.startswith(f"{bad / 'part-2.csv'}:18:{column}: error: the column 'y' holds '1.5x'")
        assert "Traceback" not in result.output
    assert not (tmp_path / "out").exists()
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".")]


def test_a_partition_whose_columns_differ_is_named(runner, rows, address, tmp_path):
    odd = tmp_path / "odd"
    odd.mkdir()
    for index in range(2):
        text = (rows / "rows" / f"part-{index}.csv").read_text()
        (odd / f"part-{index}.csv").write_text(text.replace("x,y", "x,y,z", 1).replace("\n", ",1\n")
                                               .replace("x,y,z,1", "x,y,z") if index else text)
    result = batch(runner, REGRESSION, odd, "--dask", address, "--reduce", "sum", "--format", "json")
    assert result.exit_code == 1
    assert f"{odd / 'part-1.csv'}" in result.stderr and "'z'" in result.stderr


def test_an_existing_directory_is_kept_unless_forced(runner, rows, address, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    refused = batch(runner, REGRESSION, rows / "rows", "--dask", address, "-o", out)
    assert refused.exit_code == 1
    assert "already exists" in refused.stderr and "--force" in refused.stderr
    assert os.listdir(out) == ["mine.txt"]
    forced = batch(runner, REGRESSION, rows / "rows", "--dask", address, "-o", out, "--force")
    assert forced.exit_code == 0, forced.output
    assert sorted(os.listdir(out)) == [f"part-0000{i}.csv" for i in range(PARTS)]
    assert sorted(os.listdir(tmp_path)) == ["out"]  # the old directory and the temporary one are gone


def test_a_local_cluster_of_its_own(runner, rows):
    spread = batch(runner, REGRESSION, rows / "rows", "--dask", "local:1", "--reduce", "mean", "--format", "json")
    here = batch(runner, REGRESSION, rows / "rows", "--reduce", "mean", "--format", "json")
    assert spread.exit_code == 0, spread.output
    assert spread.stdout == here.stdout


@pytest.mark.parametrize(("args", "said"), [
    (["-", "--dask", "local:2"], "not standard input"),
    (["{rows}", "--dask", "local:0", "-o", "out"], "'0' is not a number of workers"),
    (["{rows}", "--dask", "cluster", "-o", "out"], "neither a scheduler address"),
    (["{rows}", "--dask", "local:100000", "-o", "out"], "more worker processes than this machine can hold"),
    (["{rows}", "--dask", "local:2"], "give -o DIR"),
    (["{rows}", "--reduce", "sum", "--force"], "--force replaces a directory of parts"),
    (["{rows}/part-0.csv", "--force", "-o", "out.csv"], "--force replaces a directory of parts"),
    (["{rows}", "-o", "{rows}", "--force"], "holds the rows being read"),
])
def test_usage_errors(runner, rows, args, said):
    result = batch(runner, REGRESSION, *[arg.format(rows=rows / "rows") for arg in args])
    assert result.exit_code == 2
    assert said in result.stderr


def test_a_glob_that_matches_nothing(runner, rows):
    result = batch(runner, REGRESSION, str(rows / "rows" / "*.parquet"), "--reduce", "sum")
    assert result.exit_code == 1
    assert "no file matches" in result.stderr


def _children(pid: int) -> list[int]:
    try:
        return [int(child) for task in Path(f"/proc/{pid}/task").iterdir()  # any thread may have started them
                for child in (task / "children").read_text().split()]
    except OSError:  # gone meanwhile
        return []


def _workers_of(pid: int) -> list[int]:
    """The worker processes a client started: forked by its fork server, or spawned, from /proc."""
    found = []
    for child in _children(pid):
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"forkserver" in command:
            found += _children(child)
        elif b"spawn_main" in command:
            found.append(child)
    return found


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="finds the worker processes in /proc")
def test_ctrl_c_at_the_terminal_exits_130_and_writes_nothing(rows, tmp_path):
    """SIGINT to the whole process group, as Ctrl-C at a terminal sends it: the client and the
    local workers it started, sent once the workers exist; execute/test_dask.py cancels
    work that is running."""
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "out"
    command = [sys.executable, "-m", "autodiff_cli", "batch", REGRESSION, str(rows / "rows"), "--dask", "local:2",
               "-o", str(out)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                               env={**os.environ, "PYTHONPATH": str(SAMPLES.parent)})
    deadline = time.monotonic() + 60
    while not _workers_of(process.pid) and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    assert process.poll() is None, "the run ended before its workers were seen"
    os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130
    assert "Traceback" not in stderr.decode()
    assert os.listdir(tmp_path) == []  # neither out/ nor a temporary directory


# --- fit --dask -------------------------------------------------------------------------------------


def fit(runner, *args):
    return runner.invoke(main, ["fit", *map(str, args)])


@pytest.mark.parametrize("extra", [[], ["--batch-size", "50", "--optimizer", "adam"]], ids=["full", "mini-batch"])
def test_fit_on_the_cluster_learns_what_one_machine_learns(runner, rows, address, tmp_path, extra):
    common = [REGRESSION, "--lr", "0.05", "--steps", "60", "--seed", "3", "-q", *extra]
    assert fit(runner, *common, "--data", rows / "all.csv", "-o", tmp_path / "one.json").exit_code == 0
    result = fit(runner, *common, "--data", rows / "rows", "--dask", address, "-o", tmp_path / "dask.json")
    assert result.exit_code == 0, result.output
    one, dask = (json.loads((tmp_path / name).read_text()) for name in ("one.json", "dask.json"))
    assert dask.keys() == one.keys()
    for name in one:  # the same sums in another order: equal to the last bits
        assert dask[name] == pytest.approx(one[name], rel=1e-12, abs=1e-15)
    # and the line the rows were drawn from, y = 2x + 1, is where gradient descent is heading
    x, y = np.loadtxt(rows / "all.csv", delimiter=",", skiprows=1, unpack=True)
    w, b = 0.5, 0.0
    for _ in range(60) if not extra else ():
        residual = w * x + b - y
        w, b = w - 0.05 * np.mean(2 * residual * x), b - 0.05 * np.mean(2 * residual)
    if not extra:
        assert (one["w"], one["b"]) == pytest.approx((w, b), rel=1e-12)


@pytest.mark.parametrize("args, said", [
    (["--validation", "0.2"], "do not go with it"),
    (["--metric", "L"], "do not go with it"),
    (["--dask", "local:100000"], "more worker processes than this machine can hold"),
])
def test_fit_on_partitions_refuses_what_it_cannot_do_yet(runner, rows, args, said):
    result = fit(runner, REGRESSION, "--data", rows / "rows", "--steps", "2", *args)
    assert result.exit_code == 2 and said in result.output


@pytest.mark.parametrize("on_cluster", [False, True], ids=["here", "dask"])
@pytest.mark.parametrize(("header", "said"), [("x,z", "it lacks y and adds z"), ("x,y,z", "it adds z"),
                                              ("x", "it lacks y")])
def test_fit_names_a_partition_whose_columns_differ(runner, address, tmp_path, on_cluster, header, said):
    odd = tmp_path / "odd"
    odd.mkdir()
    (odd / "part-0.csv").write_text("x,y\n1,2\n2,4\n")
    (odd / "part-1.csv").write_text(header + "\n" + ",".join(["1"] * (header.count(",") + 1)) + "\n")
    cluster = ["--dask", address] if on_cluster else []
    result = fit(runner, REGRESSION, "--data", odd, "--steps", "2", *cluster)
    assert result.exit_code == 1 and "Traceback" not in result.output
    first = result.stderr.splitlines()[0]
    assert first == f"{odd / 'part-1.csv'}: error: the columns of {odd / 'part-1.csv'} are not the first partition's: {said}"
    assert "pip install" not in result.stderr
