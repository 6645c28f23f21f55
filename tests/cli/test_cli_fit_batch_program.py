"""`autodiff fit` of a program written for a whole batch of rows at once (makemore's ninja.ad:
Xb of [32, 3], Yb of [32], batch normalisation over the batch): each step stacks that many rows
into the batch inputs and runs the program once; --feed names the columns that feed them.

Expected values come from the same loss written in HIPS autograd's NumPy, with the batches
drawn as fit documents it (NumPy's RandomState(seed).permutation each epoch, the rows after the
last whole batch left out).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from autodiff_cli.cli import main

autograd = pytest.importorskip("autograd")
anp = pytest.importorskip("autograd.numpy")

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

# A batch of 4 rows of two features, batch-normalised (variance with n - 1), against a target.
PROGRAM = """\
X = [[0, 0], [0, 0], [0, 0], [0, 0]]
T = [0, 0, 0, 0]
W = [[0.5, -0.3], [0.2, 0.8]]
g = [1.5, 0.5]
h = X @ W
mu = mean(h, 0, keepdim)
v = var(h, 0, keepdim)
hn = (h - mu) / sqrt(v + 0.00001)
z = sum(tanh(hn * g), 1)
loss = mean((z - T)**2)
"""
ROWS = np.array([[0.5, 1.0, 0.3], [1.0, -1.0, -0.2], [2.0, 0.3, 0.9], [-1.0, 0.2, -0.5],
                 [0.1, 0.4, 0.0], [-0.7, 1.3, 0.6], [1.1, -0.4, -0.8], [0.9, 0.8, 0.4],
                 [-0.3, -0.6, 0.2], [0.6, 0.1, -0.1]])  # a, b, t


def _loss(params: tuple, x: np.ndarray, t: np.ndarray) -> float:
    w, g = params
    h = anp.dot(x, w)
    mu = anp.mean(h, axis=0, keepdims=True)
    v = anp.sum((h - mu) ** 2, axis=0, keepdims=True) / (len(x) - 1)
    z = anp.sum(anp.tanh((h - mu) / anp.sqrt(v + 0.00001) * g), axis=1)
    return anp.mean((z - t) ** 2)


START = (np.array([[0.5, -0.3], [0.2, 0.8]]), np.array([1.5, 0.5]))


def _csv(rows: np.ndarray) -> str:
    return "a[0],a[1],t\n" + "".join(",".join(repr(float(v)) for v in row) + "\n" for row in rows)


def _files(tmp_path: Path, rows: np.ndarray) -> tuple[Path, Path]:
    (tmp_path / "bn.ad").write_text(PROGRAM)
    (tmp_path / "rows.csv").write_text(_csv(rows))
    return tmp_path / "bn.ad", tmp_path / "rows.csv"


def _fit(runner, program: Path, data: Path, *options: str):
    return runner.invoke(main, ["fit", str(program), "--data", str(data), "--feed", "X=a,T=t", "--params", "W,g",
                                "--optimizer", "sgd", "--lr", "0.1", *options])


def _sgd(batches: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    gradient = autograd.grad(_loss)
    w, g = START
    for rows in batches:
        dw, dg = gradient((w, g), ROWS[rows, :2], ROWS[rows, 2])
        w, g = w - 0.1 * dw, g - 0.1 * dg
    return w, g


def test_one_batch_of_every_row_steps_as_autograd_does(runner, tmp_path) -> None:
    program, data = _files(tmp_path, ROWS[:4])
    result = _fit(runner, program, data, "--steps", "2", "-q")
    assert result.exit_code == 0, result.stderr
    learned = json.loads(result.stdout)
    permutations = np.random.RandomState(0)
    w, g = _sgd([permutations.permutation(4), permutations.permutation(4)])
    np.testing.assert_allclose(learned["W"], w, rtol=1e-12)
    np.testing.assert_allclose(learned["g"], g, rtol=1e-12)


def test_batches_are_drawn_each_epoch_and_the_rows_short_of_a_batch_left_out(runner, tmp_path) -> None:
    program, data = _files(tmp_path, ROWS)
    result = _fit(runner, program, data, "--steps", "3", "--progress-every", "1", "-o", str(tmp_path / "p.json"))
    assert result.exit_code == 0, result.stderr
    learned = json.loads((tmp_path / "p.json").read_text())
    draws = np.random.RandomState(0)
    first = draws.permutation(10)  # 10 rows: two batches of 4, the last 2 rows of the shuffle left out
    second = draws.permutation(10)
    w, g = _sgd([first[:4], first[4:8], second[:4]])
    np.testing.assert_allclose(learned["W"], w, rtol=1e-12)
    np.testing.assert_allclose(learned["g"], g, rtol=1e-12)
    # the loss before training: the mean over the rows' consecutive whole batches (rows 0-3, 4-7)
    start = np.mean([_loss(START, ROWS[k:k + 4, :2], ROWS[k:k + 4, 2]) for k in (0, 4)])
    last = result.stderr.splitlines()[-1]
    assert f"({start:.6g} before training; each the mean over the 8 training rows)" in last
    step_1 = float(re.search(r"^step 1/3  loss (\S+)", result.stderr, re.MULTILINE).group(1))
    assert step_1 == pytest.approx(_loss(START, ROWS[first[:4], :2], ROWS[first[:4], 2]), rel=1e-5)


def test_the_validation_loss_is_over_the_validation_rows_whole_batches(runner, tmp_path) -> None:
    program, data = _files(tmp_path, ROWS[:4])
    (tmp_path / "held.csv").write_text(_csv(ROWS[4:]))
    result = _fit(runner, program, data, "--steps", "1", "--validation-data", str(tmp_path / "held.csv"),
                  "--history", str(tmp_path / "h.csv"), "-q")
    assert result.exit_code == 0, result.stderr
    history = (tmp_path / "h.csv").read_text().splitlines()
    assert history[0] == "step,loss,grad_norm,lr,validation_loss"
    held = _loss(START, ROWS[4:8, :2], ROWS[4:8, 2])  # 6 held rows: one whole batch
    assert float(history[1].split(",")[4]) == pytest.approx(held, rel=1e-12)


@pytest.mark.parametrize("options, exit_code, message", [
    (["--batch-size", "2"], 1, "error: --batch-size 2: the program takes 4 rows at once"),
    (["--metric", "z"], 1, "--metric measures a program's variables row by row, and this program takes 4 rows"),
    (["--feed", "X=q"], 1, "error: --feed X=q: rows.csv has no column q or q[...]"),
    (["--feed", "X"], 2, "Error: --feed 'X' is not NAME=COLUMN: name an input and the column that feeds it"),
    (["--feed", "Q=a"], 1, "error: --feed Q=a: 'Q' is not an input of the program"),
], ids=["batch-size", "metric", "no-such-column", "malformed", "no-such-input"])
def test_what_does_not_go_with_a_batch_program_is_refused(runner, tmp_path, monkeypatch, options, exit_code,
                                                          message) -> None:
    monkeypatch.chdir(tmp_path)
    _files(tmp_path, ROWS)
    result = runner.invoke(main, ["fit", "bn.ad", "--data", "rows.csv", "--params", "W,g", "--steps", "2",
                                  *(options if options[0] == "--feed" else ["--feed", "X=a,T=t", *options])])
    assert result.exit_code == exit_code, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_fewer_rows_than_a_batch_is_an_error(runner, tmp_path) -> None:
    program, data = _files(tmp_path, ROWS[:3])
    result = _fit(runner, program, data, "--steps", "1")
    assert result.exit_code == 1
    assert "the program takes 4 rows at once ('X' is declared with 4 rows), and the data has 3" in result.stderr


def test_a_program_mixing_a_batch_input_and_a_row_input_is_refused(runner, tmp_path) -> None:
    program, data = _files(tmp_path, ROWS)
    program.write_text(PROGRAM.replace("T = [0, 0, 0, 0]", "T = 0"))
    result = _fit(runner, program, data, "--steps", "1")
    assert result.exit_code == 1
    assert "'X' takes a batch of 4 rows at once, and 'T' one row" in result.stderr


def test_a_report_of_a_batch_program_is_refused_before_training(runner, tmp_path) -> None:
    # The report runs the program row by row; it once failed after training with a column error.
    program, data = _files(tmp_path, ROWS)
    report, out = tmp_path / "r.html", tmp_path / "v.json"
    result = _fit(runner, program, data, "--steps", "1", "--report", str(report), "-o", str(out))
    assert result.exit_code == 1
    assert "--report draws a program row by row, and this program takes 4 rows at once" in result.stderr
    assert not report.exists() and not out.exists()


def test_ninja_trains_on_the_makemore_rows(runner, tmp_path) -> None:
    """The exercise's own program, on the first 64 rows of train.csv: two batches of 32 an epoch."""
    rows = (SAMPLES / "makemore" / "train.csv").read_text().splitlines()[:65]
    (tmp_path / "rows.csv").write_text("\n".join(rows) + "\n")
    result = runner.invoke(main, ["fit", str(SAMPLES / "makemore" / "ninja.ad"), "--data", str(tmp_path / "rows.csv"),
                                  "--feed", "Xb=x,Yb=y", "--optimizer", "adam", "--lr", "0.01", "--steps", "30",
                                  "--progress-every", "30", "-o", str(tmp_path / "p.json")])
    assert result.exit_code == 0, result.stderr
    last = result.stderr.splitlines()[-1]
    learned, start = (float(v) for v in re.search(r"loss (\S+) \((\S+) before training", last).groups())
    assert learned < start - 0.5  # 15 epochs of two batches: it learns those rows
    assert set(json.loads((tmp_path / "p.json").read_text())) == {"C", "W1", "b1", "W2", "b2", "bngain", "bnbias"}


def test_partitions_are_refused_for_a_batch_program(runner, tmp_path) -> None:
    program, _ = _files(tmp_path, ROWS)
    (tmp_path / "parts").mkdir()
    for name in ("a.csv", "b.csv"):
        (tmp_path / "parts" / name).write_text(_csv(ROWS).replace("a[0],a[1],t", "X[0],X[1],T"))
    result = runner.invoke(main, ["fit", str(program), "--data", str(tmp_path / "parts"), "--params", "W,g",
                                  "--steps", "1"])
    assert result.exit_code == 1, result.stderr
    assert "the program takes a batch of rows at once, and training over partitions takes them row by row" \
        in result.stderr


def test_an_entry_column_left_out_is_an_error_not_a_row_of_whatever_memory_held(runner, tmp_path) -> None:
    """X's rows are [a[0], a[1]]: without the column a[0], the rows span a[1] alone, and the
    entry it leaves out must be refused, not read from an uninitialised array."""
    program, data = _files(tmp_path, ROWS)
    data.write_text("a[1],t\n" + "".join(f"{float(row[1])!r},{float(row[2])!r}\n" for row in ROWS))
    result = _fit(runner, program, data, "--steps", "1")
    assert result.exit_code == 1, result.stdout
    assert "the columns of input 'X' do not make a tensor: the column X[0] is missing" in result.stderr
    assert "Traceback" not in result.stderr
