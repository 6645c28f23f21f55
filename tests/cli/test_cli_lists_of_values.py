"""Lists of computed values, stack and concat in the commands, with numbers worked out by hand.

The program (a = [1, 2], b = 3):
  v = [a[0]*b, a[1] + b, 7]        = [3, 5, 7]
  M = [[a[0], b], [b, a[1]]]       = [[1, 3], [3, 2]];  M @ a = [7, 7]
  S = stack([a, 2*a], 1)           = [[1, 2], [2, 4]];  sum(S*S) = 25
  C = concat([a, 10*a, [5]])       = [1, 2, 10, 20, 5]
  K = concat([[1, 2], [3, 4]], 0)  = [1, 2, 3, 4]
  L = sum(v) + sum(M @ a) + sum(S*S) + sum(C) + sum(K) = 15 + 14 + 25 + 38 + 10 = 102
dL/db: 2 from v (a[0] + 1), 3 from M (dsum(M@a)/dM = [[1, 2], [1, 2]] at b's two places): 5.
dL/da: v gives [3, 1]; M's entries [1, 2] and M^T @ 1 = [4, 5]; S gives 10a = [10, 20];
C gives 1 + 10 each: [29, 39].
"""

from __future__ import annotations

import json
import runpy

import pytest

from autodiff_cli.cli import main

PROGRAM = """a = [1, 2]
b = 3
v = [a[0] * b, a[1] + b, 7]
M = [[a[0], b], [b, a[1]]]
S = stack([a, 2 * a], 1)
C = concat([a, 10 * a, [5]])
K = concat([[1, 2], [3, 4]], 0)
L = sum(v) + sum(M @ a) + sum(S * S) + sum(C) + sum(K)
"""


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "lists.ad"
    path.write_text(PROGRAM)
    return path


def run(runner, *args):
    result = runner.invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_eval_by_hand(runner, program):
    report = json.loads(run(runner, "eval", program, "--format", "json"))
    assert report["value"] == 102.0
    assert report["values"]["M"] == [[1.0, 3.0], [3.0, 2.0]]
    assert report["values"]["S"] == [[1.0, 2.0], [2.0, 4.0]]
    assert report["values"]["C"] == [1.0, 2.0, 10.0, 20.0, 5.0]
    assert report["grads"]["a"] == [29.0, 39.0] and report["grads"]["b"] == 5.0


def test_diff_program_and_python_give_the_gradients(runner, program, tmp_path):
    text = run(runner, "diff", program, "--wrt", "a,b", "--format", "program")
    derivative = tmp_path / "d.ad"
    derivative.write_text(text)
    values = json.loads(run(runner, "eval", derivative, "--format", "json"))["values"]
    assert values["dL_da"] == [29.0, 39.0] and values["dL_db"] == 5.0
    module = tmp_path / "d.py"
    module.write_text(run(runner, "diff", program, "--wrt", "a,b", "--format", "python"))
    got = runpy.run_path(str(module))["derivatives"]()
    assert got["a"].tolist() == [29.0, 39.0] and float(got["b"]) == 5.0
    assert "\\operatorname{stack}" in run(runner, "diff", program, "--wrt", "a", "--format", "latex")


def test_explain_check_and_graph(runner, program, tmp_path):
    assert "dL/da = [29.0, 39.0]" in run(runner, "explain", program)
    assert "dL/da = [29.0, 39.0]" in run(runner, "explain", program, "--scalar")
    assert "all agree" in run(runner, "check", program)
    for level in ("layers", "ops", "scalar"):
        out = tmp_path / f"{level}.dot"
        run(runner, "graph", program, "--level", level, "-o", out)
        assert out.read_text().startswith("digraph")
    out = tmp_path / "e.dot"
    run(runner, "graph", program, "--expand", "S", "-o", out)
    assert "S[0, 1]" in out.read_text()  # row 0; S[0, 0] is a[0] itself, drawn as a's entry


@pytest.mark.parametrize("text, message", [
    ("a = [1, 2]\nb = [1, 2, 3]\nv = [a, b]\n", "stack needs entries of one shape"),
    ("a = [1, 2]\nv = stack([a, a], 2)\n", "axis 2 does not exist"),
    ("a = [[1, 2]]\nb = [[1, 2, 3]]\nv = concat([a, b], 0)\n", "needs the other axes' sizes equal"),
    ("a = 1\nv = concat([a, a])\n", "concat joins tensors of one number of axes"),
    ("a = [1, 2]\nv = stack(a, 0)\n", "stack() takes a list written in the call"),
])
def test_shape_errors_are_located_with_a_hint(runner, tmp_path, text, message):
    path = tmp_path / "bad.ad"
    path.write_text(text)
    result = runner.invoke(main, ["eval", str(path)])
    assert result.exit_code == 1, result.output
    assert message in result.output and "bad.ad:" in result.output and "Traceback" not in result.output
