"""Comparisons, where and clip in every command, with numbers worked out by hand.

The program: y = clip(x, lo, 2) * where(x > 0, x, 2*x), L = sum(y), at x = [-2, 0.5, 3], lo = -1.
Entry by entry: x = -2 is below lo, so clip gives lo = -1 and where gives 2x = -4: y = 4,
dy/dx = -1 * 2 = -2 (clip passes nothing below lo), dy/dlo = -4.  x = 0.5 is inside: y = 0.25,
dy/dx = 0.5 + 0.5 = 1.  x = 3 is above 2: y = 2 * 3 = 6, dy/dx = 2 (clip passes nothing above).
So L = 10.25, dL/dx = [-2, 1, 2], dL/dlo = -4.
"""

from __future__ import annotations

import json
import runpy

import pytest

from autodiff_cli.cli import main

PROGRAM = "x = [-2, 0.5, 3]\nlo = -1\ny = clip(x, lo, 2) * where(x > 0, x, 2*x)\nL = sum(y)\n"
GRADIENT_X, GRADIENT_LO = [-2.0, 1.0, 2.0], -4.0


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "choose.ad"
    path.write_text(PROGRAM)
    return path


def run(runner, *args):
    result = runner.invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_eval_gives_the_values_and_gradients_by_hand(runner, program):
    report = json.loads(run(runner, "eval", program, "--format", "json"))
    assert report["value"] == 10.25
    assert report["values"]["y"] == [4.0, 0.25, 6.0]
    assert report["grads"]["x"] == GRADIENT_X and report["grads"]["lo"] == GRADIENT_LO


@pytest.mark.parametrize("fmt", ["text", "program", "latex", "json"])
def test_diff_writes_every_format(runner, program, fmt):
    out = run(runner, "diff", program, "--wrt", "x,lo", "--format", fmt)
    assert "where" in out and "clip" in out


def test_diffs_program_gives_evals_gradients(runner, program, tmp_path):
    derivative = tmp_path / "d.ad"
    derivative.write_text(run(runner, "diff", program, "--wrt", "x,lo", "--format", "program"))
    values = json.loads(run(runner, "eval", derivative, "--format", "json"))["values"]
    assert values["dL_dx"] == GRADIENT_X and values["dL_dlo"] == GRADIENT_LO


def test_diffs_python_gives_evals_gradients(runner, program, tmp_path):
    module = tmp_path / "d.py"
    module.write_text(run(runner, "diff", program, "--wrt", "x,lo", "--format", "python"))
    got = runpy.run_path(str(module))["derivatives"]()
    assert got["x"].tolist() == GRADIENT_X and float(got["lo"]) == GRADIENT_LO


def test_a_comparison_inside_a_product_keeps_its_parentheses(runner, program):
    text = run(runner, "diff", program, "--wrt", "x,lo", "--format", "program")
    assert "where((x < lo) * (top1 <= 2), dL_dt1, 0)" in text  # clip's rule for lo: x below lo, max(x, lo) <= 2


@pytest.mark.parametrize("extra", [[], ["--scalar"]])
def test_explain_in_matrix_and_scalar_form(runner, program, extra):
    out = run(runner, "explain", program, *extra)
    assert "dL/dlo = -4.0" in out
    if not extra:
        assert "clip(x, lo, 2)" in out
        assert "dL/dlo =  dL/dt1 where x < lo (and lo <= 2), else 0" in out


def test_check_agrees(runner, program):
    out = run(runner, "check", program)
    assert "all agree" in out


def test_check_a_claim_about_the_gradient(runner, tmp_path):
    path = tmp_path / "c.ad"
    path.write_text("x = 0.5\ny = clip(x, -1, 1) * 3\n")
    out = run(runner, "check", path, "--claim", "dy/dx = where(x > -1, 3, 0) * (x < 1)")
    assert "wrong" not in out


@pytest.mark.parametrize("level", ["layers", "ops", "scalar"])
def test_graph_at_every_level(runner, program, tmp_path, level):
    out = tmp_path / f"g-{level}.dot"
    run(runner, "graph", program, "--level", level, "-o", out)
    text = out.read_text()
    assert "clip" in text or level == "scalar"


def test_graph_expands_a_statement_into_the_entries_it_chose(runner, program, tmp_path):
    out = tmp_path / "e.dot"
    run(runner, "graph", program, "--expand", "y", "-o", out)
    text = out.read_text()
    assert "y[0]" in text and "y[2]" in text


def test_batch_over_rows(runner, tmp_path):
    path = tmp_path / "b.ad"
    path.write_text("x = 0.5\nw = [1.0, -2.0]\nb = 0.1\nh = where(x > 0, w * x, 0.5 * w * x) + b\n"
                    "y = clip(sum(h), -1, 1)\n")
    rows = tmp_path / "rows.csv"
    rows.write_text("x\n-1\n0.25\n2\n")
    out = run(runner, "batch", path, rows, "--wrt", "w,b").splitlines()
    assert out[0] == "x,y,dy/dw[0],dy/dw[1],dy/db"
    # x = -1: h = 0.5*w*x + b = [-0.4, 1.1], sum 0.7 (inside the clip): dy/dw = 0.5x = -0.5, dy/db = 2
    first = [float(v) for v in out[1].split(",")]
    assert first == pytest.approx([-1.0, 0.7, -0.5, -0.5, 2.0], abs=1e-15)
    # x = 2: sum(w*x + b) = -1.8, clipped to -1: nothing flows back
    assert [float(v) for v in out[3].split(",")] == pytest.approx([2.0, -1.0, 0.0, 0.0, 0.0], abs=1e-15)


def test_fit_learns_through_where_and_clip(runner, tmp_path):
    path = tmp_path / "f.ad"
    path.write_text("x = 0.5\nt = 0\nw = 0.0\ny = clip(where(x > 0, w * x, 0), -10, 10)\nloss = (y - t)**2\n")
    rows = tmp_path / "rows.csv"
    rows.write_text("x,t\n1,3\n2,6\n-1,0\n")  # t = 3x where x > 0: w learns 3
    values = tmp_path / "v.json"
    run(runner, "fit", path, "--data", rows, "--params", "w", "--steps", "300", "--lr", "0.05", "-o", values)
    assert json.loads(values.read_text())["w"] == pytest.approx(3.0, abs=1e-6)


def test_plot_of_clip_is_flat_outside_its_bounds(runner, program, tmp_path):
    path = tmp_path / "p.ad"
    path.write_text("x = 0\ny = clip(x, -1, 1)\n")
    out = tmp_path / "p.svg"
    run(runner, "plot", path, "--range", "x=-2:2", "-o", out)
    assert out.read_text().startswith("<?xml")


def test_comparisons_do_not_chain(runner, tmp_path):
    path = tmp_path / "bad.ad"
    path.write_text("y = 1 < 2 < 3\n")
    result = runner.invoke(main, ["eval", str(path)])
    assert result.exit_code == 1
    assert "bad.ad:1:11" in result.output and "Traceback" not in result.output
    assert "comparisons do not chain" in result.output and "(a < b) * (b < c)" in result.output


def test_where_with_two_arguments_says_how_to_call_it(runner, tmp_path):
    path = tmp_path / "bad.ad"
    path.write_text("x = [1, 2]\ny = where(x > 1, x)\n")
    result = runner.invoke(main, ["eval", str(path)])
    assert result.exit_code == 1
    assert "where() takes 3 arguments (2 given)" in result.output
    assert "where(x, y, z)" in result.output


def test_assigning_where_a_comparison_was_meant_hints_at_double_equals(runner, tmp_path):
    path = tmp_path / "bad.ad"
    path.write_text("a = 1\na + 1 = 2\n")
    result = runner.invoke(main, ["eval", str(path)])
    assert result.exit_code == 1 and "write a == b" in result.output


def test_a_scalar_program_with_a_comparison_gives_numbers(runner, tmp_path):
    path = tmp_path / "s.ad"
    path.write_text("x = 2\ny = where(x >= 2, x**2, -x)\n")
    report = json.loads(run(runner, "eval", path, "--format", "json"))
    assert report["value"] == 4.0 and report["grads"]["x"] == 4.0
    assert "shape" not in report  # the number layout, as the engine's runs have


def test_diff_hessian_writes_the_whole_hessian_eval_shows(runner, tmp_path):
    """L = sum(x**3) + x0*x1 at [1, 2]: H = [[6, 1], [1, 12]] by hand."""
    derivative = tmp_path / "h.ad"
    derivative.write_text(run(runner, "diff", "x = [1, 2]; L = sum(x**3) + x[0]*x[1]", "--hessian", "--format",
                              "program"))
    assert json.loads(run(runner, "eval", derivative, "--format", "json"))["values"]["H_x"] == [[6.0, 1.0],
                                                                                               [1.0, 12.0]]


def test_diff_hessian_of_a_large_input_is_a_usage_error(runner):
    result = runner.invoke(main, ["diff", "x = zeros([70]); L = sum(x**3)", "--hessian"])
    assert result.exit_code == 2 and "at most 64" in result.output
