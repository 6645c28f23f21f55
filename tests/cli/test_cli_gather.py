"""An embedding table gathered by an integer tensor, and one entry per row by paired indices,
through every command: graph --expand shows the rows picked, batch takes the index from
integer columns, fit learns the table, check leaves the indices alone, explain and diff write
them.  Expected numbers come from NumPy and autograd on the same values, not from our output.
"""

from __future__ import annotations

import json
import re

import autograd.numpy as anp
import numpy as np
from autograd import grad

from autodiff_cli.cli import main

TABLE = [[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5], [1.0, 1.0]]
EMBEDDING = f"""\
C = {TABLE}
w = [0.5, -2]
emb = C[X]
L = sum(tanh(emb) * w)
"""
PAIRED = """\
p = [[0.25, 0.5, 0.25], [0.5, 0.25, 0.25]]
rows = [0, 1]
L = -sum(log(p[rows, y]))
"""


def run(runner, *args):
    return runner.invoke(main, [str(a) for a in args], catch_exceptions=False)


def embedding_loss(C, X):
    return anp.sum(anp.tanh(C[np.asarray(X, dtype=int)]) * np.array([0.5, -2.0]))


def test_graph_expand_shows_the_rows_the_index_picks(runner, tmp_path) -> None:
    program = tmp_path / "emb.ad"
    program.write_text(EMBEDDING)
    result = run(runner, "graph", program, "--set", "X=[[3, 1, 3], [0, 2, 2]]", "--expand", "emb", "--row", "0",
                 "--format", "dot")
    assert result.exit_code == 0, result.stderr
    rows = {int(r) for r in re.findall(r"C\[(\d+), \d+\]", result.stdout)}
    assert rows == {3, 1}  # X[0] names rows 3, 1 and 3 again; no other row of C is drawn


def test_batch_takes_the_index_from_integer_columns(runner, tmp_path) -> None:
    program = tmp_path / "emb.ad"
    program.write_text(EMBEDDING)
    indices = [[0, 3], [2, -1], [1, 1]]
    rows = tmp_path / "rows.csv"
    rows.write_text("X[0],X[1]\n" + "".join(f"{a},{b}\n" for a, b in indices))
    result = run(runner, "batch", program, rows, "--to", "jsonl")
    assert result.exit_code == 0, result.stderr
    got = [json.loads(line) for line in result.stdout.splitlines()]
    C = np.array(TABLE)
    for record, index in zip(got, indices):
        assert abs(record["L"] - embedding_loss(C, index)) < 1e-12
        want = grad(embedding_loss)(C, index)
        got = np.array([[record[f"dL/dC[{i}, {j}]"] for j in range(2)] for i in range(4)])
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_a_row_whose_index_is_out_of_range_is_named(runner, tmp_path) -> None:
    program = tmp_path / "emb.ad"
    program.write_text(EMBEDDING)
    rows = tmp_path / "rows.csv"
    rows.write_text("X[0],X[1]\n0,1\n4,0\n")
    result = run(runner, "batch", program, rows)
    assert result.exit_code == 1
    assert "emb.ad:3:8: error: the index's entry [0] is 4, out of range for an axis of 4" in result.stderr
    assert "line 3" in result.stderr
    assert "Traceback" not in result.stderr


def test_fit_learns_the_table_by_the_gradient_autograd_gives(runner, tmp_path) -> None:
    """One full-batch SGD step: C moves by -lr times the mean over rows of autograd's gradient."""
    program = tmp_path / "emb.ad"
    program.write_text(EMBEDDING)
    indices = [[0, 3], [2, 2], [1, 3], [3, 3]]
    rows = tmp_path / "rows.csv"
    rows.write_text("X[0],X[1]\n" + "".join(f"{a},{b}\n" for a, b in indices))
    out = tmp_path / "learned.json"
    result = run(runner, "fit", program, "--data", rows, "--optimizer", "sgd", "--lr", "0.1", "--steps", "1",
                 "--batch-size", "4", "-o", out, "--quiet")
    assert result.exit_code == 0, result.stderr
    learned = json.loads(out.read_text())
    C = np.array(TABLE)
    mean_grad = np.mean([grad(embedding_loss)(C, index) for index in indices], axis=0)
    np.testing.assert_allclose(learned["C"], C - 0.1 * mean_grad, rtol=1e-12, atol=1e-15)


def test_check_does_not_move_the_indices(runner, tmp_path) -> None:
    program = tmp_path / "emb.ad"
    program.write_text(EMBEDDING)
    result = run(runner, "check", program, "--set", "X=[[3, 1, 3], [0, 2, 2]]", "--format", "json")
    assert result.exit_code == 0, result.stdout + result.stderr
    notes = json.loads(result.stdout)["notes"]
    assert any(note.startswith("not moved: X, read as class labels or indices") for note in notes)


def test_paired_indices_through_explain_and_diff(runner, tmp_path) -> None:
    program = tmp_path / "paired.ad"
    program.write_text(PAIRED)
    explained = run(runner, "explain", program, "--set", "y=[1, 0]", "--format", "plain")
    assert explained.exit_code == 0, explained.stderr
    assert "dL/dt1   = zeros shaped like t1, with dL/dt2 at the entries y picks" in explained.stdout
    assert "dL/dp    = zeros shaped like p, with dL/dt1 added at each row rows names" in explained.stdout
    written = run(runner, "diff", program, "--set", "y=[1, 0]", "--wrt", "p", "--format", "python")
    assert written.exit_code == 0, written.stderr
    namespace: dict = {}
    exec(compile(written.stdout, "<diff --format python>", "exec"), namespace)  # noqa: S102 - our output, under test
    got = namespace["derivatives"](y=np.array([1.0, 0.0]))["p"]
    p = np.array([[0.25, 0.5, 0.25], [0.5, 0.25, 0.25]])
    want = grad(lambda q: -anp.sum(anp.log(q[np.arange(2), np.array([1, 0])])))(p)
    np.testing.assert_allclose(got, want, rtol=1e-15)


def test_graph_expand_of_a_scatter_shows_each_zero_by_its_entry(runner, tmp_path) -> None:
    program = tmp_path / "scatter.ad"
    program.write_text("g = [[1, 2], [3, 4]]\ni = [2, 0]\ns = scatter(g, i, 3)\nL = sum(s * [[1], [2], [3]])\n")
    result = run(runner, "graph", program, "--expand", "s", "--row", "1", "--format", "dot")
    assert result.exit_code == 0, result.stderr
    # row 1 puts g[1] at 0 along the new axis: the other places are zeros, each weighted by its row of [1, 2, 3]
    for entry, weight in [("s[1, 1, 0]", 2), ("s[1, 1, 1]", 2), ("s[1, 2, 0]", 3), ("s[1, 2, 1]", 3)]:
        assert f"{{ {entry} | data 0.0000 | grad {weight}.0000 }}" in result.stdout
    assert "{ g[1, 0] | data 3.0000 | grad 1.0000 }" in result.stdout
