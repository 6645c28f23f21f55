"""cumsum in every command, with numbers worked out by hand.

The program: y = cumsum(x), L = sum(y * y), at x = [1, 2, 3, 4].  The running totals are
y = [1, 3, 6, 10], so L = 1 + 9 + 36 + 100 = 146.  dL/dy = 2y = [2, 6, 12, 20], and entry i of x
feeds every total from i on, so dL/dx_i is the sum of dL/dy from i to the end:
dL/dx = [40, 38, 32, 20].
"""

from __future__ import annotations

import json
import runpy

import pytest

from autodiff_cli.cli import main

PROGRAM = "x = [1, 2, 3, 4]\ny = cumsum(x)\nL = sum(y * y)\n"
GRADIENT_X = [40.0, 38.0, 32.0, 20.0]


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "running.ad"
    path.write_text(PROGRAM)
    return path


def run(runner, *args, code=0):
    result = runner.invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.output


def test_eval_gives_the_running_totals_and_the_gradient_by_hand(runner, program):
    report = json.loads(run(runner, "eval", program, "--format", "json"))
    assert report["value"] == 146.0
    assert report["values"]["y"] == [1.0, 3.0, 6.0, 10.0]
    assert report["grads"]["x"] == GRADIENT_X


def test_eval_along_the_first_axis_of_a_matrix(runner, tmp_path):
    # C = [[1, 2], [4, 6]] (rows added down each column); L = 1 + 4 + 16 + 36 = 57;
    # dL/dC = 2C, and dL/dW[0] = dL/dC[0] + dL/dC[1] = [10, 16], dL/dW[1] = dL/dC[1] = [8, 12]
    path = tmp_path / "m.ad"
    path.write_text("W = [[1, 2], [3, 4]]\nC = cumsum(W, 0)\nL = sum(C * C)\n")
    report = json.loads(run(runner, "eval", path, "--format", "json"))
    assert report["values"]["C"] == [[1.0, 2.0], [4.0, 6.0]] and report["value"] == 57.0
    assert report["grads"]["W"] == [[10.0, 16.0], [8.0, 12.0]]


def test_a_scalar_has_no_axis_to_add_along(runner, tmp_path):
    path = tmp_path / "s.ad"
    path.write_text("x = [1, 2]\ny = cumsum(sum(x))\n")
    result = runner.invoke(main, ["eval", str(path)])
    assert result.exit_code == 1 and "cumsum works along an axis, and a scalar has none" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("fmt", ["text", "program", "latex", "python", "json"])
def test_diff_writes_every_format(runner, program, fmt):
    out = run(runner, "diff", program, "--wrt", "x", "--format", fmt)
    assert "cumsum" in out


def test_diffs_program_gives_the_gradient_by_hand(runner, program, tmp_path):
    derivative = tmp_path / "d.ad"
    derivative.write_text(run(runner, "diff", program, "--wrt", "x", "--format", "program"))
    assert json.loads(run(runner, "eval", derivative, "--format", "json"))["values"]["dL_dx"] == GRADIENT_X


def test_diffs_python_gives_the_gradient_by_hand(runner, program, tmp_path):
    module = tmp_path / "d.py"
    module.write_text(run(runner, "diff", program, "--wrt", "x", "--format", "python"))
    assert runpy.run_path(str(module))["derivatives"]()["x"].tolist() == GRADIENT_X


def test_diff_of_the_second_order(runner, program, tmp_path):
    # L = |C x|^2 with C the lower triangle of ones: its Hessian is 2 C^T C, and
    # (C^T C)_ij = 4 - max(i, j) (the totals both entries feed); times v = [1, 0, 0, 0]:
    # H v = 2 * [4, 3, 2, 1]
    derivative = tmp_path / "h.ad"
    derivative.write_text(run(runner, "diff", program, "--wrt", "x", "--order", "2", "--format", "program"))
    values = json.loads(run(runner, "eval", derivative, "--set", "v_x=[1, 0, 0, 0]", "--format", "json"))["values"]
    assert values["Hv_x"] == [8.0, 6.0, 4.0, 2.0]


@pytest.mark.parametrize("extra", [[], ["--scalar"]])
def test_explain_in_matrix_and_scalar_form(runner, program, extra):
    out = run(runner, "explain", program, *extra)
    assert "40.0" in out
    if not extra:
        assert "y = cumsum(x)" in out and "the running totals of dL/dy from the end" in out


def test_check_agrees(runner, program):
    assert "all agree" in run(runner, "check", program)


def test_check_a_claim_about_the_gradient(runner, program):
    out = run(runner, "check", program, "--claim", "dL/dx = sum(2*y) - cumsum(2*y) + 2*y")
    assert "agrees" in out
    out = run(runner, "check", program, "--claim", "dL/dx = 2*y", code=1)
    assert "WRONG" in out


@pytest.mark.parametrize("level", ["layers", "ops", "scalar"])
def test_graph_at_every_level(runner, program, tmp_path, level):
    out = tmp_path / f"g-{level}.dot"
    run(runner, "graph", program, "--level", level, "-o", out)
    text = out.read_text()
    assert ("cumsum" in text) if level != "scalar" else ("y[3]" in text)


def test_batch_over_rows(runner, tmp_path):
    # v = [a, b, c], L = sum(cumsum(v) * v): row 1, v = [1, 2, 3], totals [1, 3, 6], L = 1 + 6 + 18 = 25;
    # dL/dv_i = total_i + (v_i + ... + v_last): [1 + 6, 3 + 5, 6 + 3] = [7, 8, 9]
    path = tmp_path / "b.ad"
    path.write_text("a = 0\nb = 0\nc = 0\nv = [a, b, c]\nL = sum(cumsum(v) * v)\n")
    rows = tmp_path / "rows.csv"
    rows.write_text("a,b,c\n1,2,3\n4,5,6\n")
    out = run(runner, "batch", path, rows, "--wrt", "a,b,c").splitlines()
    assert out[0] == "a,b,c,L,dL/da,dL/db,dL/dc"
    assert [float(v) for v in out[1].split(",")] == [1.0, 2.0, 3.0, 25.0, 7.0, 8.0, 9.0]
    # row 2: v = [4, 5, 6], totals [4, 9, 15], L = 16 + 45 + 90 = 151; [4 + 15, 9 + 11, 15 + 6]
    assert [float(v) for v in out[2].split(",")] == [4.0, 5.0, 6.0, 151.0, 19.0, 20.0, 21.0]


def test_fit_learns_through_cumsum(runner, tmp_path):
    # y = cumsum([w x, w])[1] = w (x + 1), t = 3x: least squares gives
    # w = sum(3x (x + 1)) / sum((x + 1)^2) = 3 (2 + 6 + 12) / (4 + 9 + 16) = 60/29
    path = tmp_path / "f.ad"
    path.write_text("x = 1\nt = 0\nw = 0.5\nv = [w * x, w]\ny = cumsum(v)[1]\nloss = (y - t)**2\n")
    rows = tmp_path / "rows.csv"
    rows.write_text("x,t\n1,3\n2,6\n3,9\n")
    values = tmp_path / "v.json"
    run(runner, "fit", path, "--data", rows, "--params", "w", "--steps", "400", "-o", values)
    assert json.loads(values.read_text())["w"] == pytest.approx(60 / 29, abs=1e-9)


def test_plot_along_one_entry(runner, tmp_path):
    path = tmp_path / "p.ad"
    path.write_text("x = [1, 2, 3]\nL = sum(cumsum(x) ** 2)\n")
    out = tmp_path / "p.svg"
    run(runner, "plot", path, "--range", "x[1]=-1:1", "-o", out)
    assert out.read_text().startswith("<?xml")


@pytest.mark.parametrize("fmt", ["program", "python"])
def test_diffs_gradient_keeps_entries_many_orders_apart(runner, tmp_path, fmt):
    """L = sum(cumsum(r) * 0.001**k) over eight ones: dL/dr_i = sum over j >= i of 0.001**j, whose
    last entries are 1e-18 and 1e-21.  Written as sum(g) - cumsum(g) + g they came out near -2e-16
    (a difference of two totals of about 1.001); a total taken from the end keeps them."""
    source = tmp_path / "spread.ad"
    source.write_text("r = [1, 1, 1, 1, 1, 1, 1, 1]\nk = [0, 1, 2, 3, 4, 5, 6, 7]\nL = sum(cumsum(r) * 0.001**k)\n")
    expected = [sum(0.001**j for j in range(i, 8)) for i in range(8)]
    written = run(runner, "diff", source, "--wrt", "r", "--format", fmt)
    if fmt == "program":
        derivative = tmp_path / "d.ad"
        derivative.write_text(written)
        got = json.loads(run(runner, "eval", derivative, "--format", "json"))["values"]["dL_dr"]
    else:
        module = tmp_path / "d.py"
        module.write_text(written)
        got = list(runpy.run_path(str(module))["derivatives"]()["r"])
    for have, want in zip(got, expected):
        assert have == pytest.approx(want, rel=1e-12)
