"""Issue 27: answers that were silently wrong.  diff refuses a constant that overflows (it wrote
``inf``, which reads back as a variable); plot breaks its curves at poles between samples; eval,
batch and fit say where a gradient is not finite; a single-valued option given twice is refused."""

from __future__ import annotations

from autodiff_cli.cli import main


def test_diff_refuses_an_overflowed_constant_as_eval_does(runner) -> None:
    source = "f = x*inf + x*(1e308*10)"
    diffed = runner.invoke(main, ["diff", source])
    evaluated = runner.invoke(main, ["eval", source, "--set", "inf=2", "--set", "x=1"])
    assert diffed.exit_code == evaluated.exit_code == 1
    assert diffed.stdout == ""
    assert diffed.stderr.startswith("<expr>:1:21: error: the result of '*' overflows a float (inf)\n")
    assert diffed.stderr == evaluated.stderr


def test_diff_refuses_a_high_order_before_doing_the_work(runner, samples) -> None:
    import time

    started = time.monotonic()
    result = runner.invoke(main, ["diff", str(samples / "neuron_exp.ad"), "--order", "10"])
    assert time.monotonic() - started < 5  # it took 28-43 s to reach the limit
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines[0].endswith(":10:1: error: the derivatives would take more than 1,000,000 operations (about "
                             "82 million at --order 10, projected from the orders below it)")
    assert lines[-1] == "  hint: --order 7 is estimated to fit; or differentiate with respect to fewer variables (--wrt)"


def test_diff_of_an_order_that_fits_is_not_refused(runner, samples) -> None:
    result = runner.invoke(main, ["diff", str(samples / "neuron_exp.ad"), "--order", "4", "--format", "program"])
    assert result.exit_code == 0, result.stderr


import pytest  # noqa: E402


@pytest.mark.parametrize("args, option", [
    (["eval", "y1 = x; y2 = 2*x", "--set", "x=1", "--output", "y1", "--output", "y2"], "--output"),
    (["eval", "y = x", "--set", "x=1", "--format", "plain", "--format=json"], "--format"),
    (["diff", "y1 = x; y2 = x**2", "--output", "y1", "--output=y2"], "--output"),
    (["diff", "y = x**3", "--order", "1", "--order", "2"], "--order"),
    (["graph", "y = 2*x", "--set", "x=1", "--format", "dot", "--rankdir", "LR", "--rankdir", "TB"], "--rankdir"),
    (["explain", "y = 2*x", "--set", "x=1", "--output", "y", "--output", "x"], "--output"),
    (["plot", "y = x**2", "--range", "x=0:1", "--points", "10", "--points", "20", "--format", "text"], "--points"),
    (["batch", "y = 2*x", "-", "--on-error", "skip", "--on-error", "fail"], "--on-error"),
], ids=["eval-output", "eval-format", "diff-output", "diff-order", "graph-rankdir", "explain-output", "plot-points",
        "batch-on-error"])
def test_a_single_valued_option_given_twice_is_refused(runner, args, option) -> None:
    result = runner.invoke(main, args, input="x\n1\n")
    assert result.exit_code == 2, result.output
    assert f"Error: {option} is given more than once; it takes one value: give it once" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("args, warning", [
    (["eval", "y = sqrt(x)", "--set", "x=0", "--format", "plain"],
     "warning: a gradient is not finite: dy/dx = inf; the derivative of 'sqrt' at 0 is inf "
     "(in the statement of y, <expr>:1:1)"),
    (["eval", "z = 2*x\ny = sqrt(z)*3 + x", "--set", "x=0", "--format", "json"],
     "warning: a gradient is not finite: dy/dx = inf, dy/dz = inf; the derivative of 'sqrt' at 0 is inf "
     "(in the statement of y, <expr>:2:1)"),
])
def test_eval_warns_of_a_gradient_that_is_not_finite(runner, args, warning) -> None:
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.stderr
    assert warning in result.stderr.splitlines(), result.stderr


def test_eval_says_nothing_of_finite_gradients(runner) -> None:
    result = runner.invoke(main, ["eval", "y = sqrt(x)", "--set", "x=4", "--format", "plain"])
    assert result.exit_code == 0 and result.stderr == ""


# --- plot: poles between sample points -------------------------------------------------------------


def _panel_rows(text: str, name: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index(name) + 1
    return [line.split("|", 1)[1] for line in lines[start:start + 11]]


def _vertical_lines(rows: list[str]) -> list[int]:
    """The columns with a '*' in the top three rows and in the bottom three: a line through a pole."""
    width = max(map(len, rows))
    padded = [row.ljust(width) for row in rows]
    return [c for c in range(width) if any(r[c] == "*" for r in padded[:4]) and any(r[c] == "*" for r in padded[-4:])]


@pytest.mark.parametrize("source, span, points, count", [
    ("y = 1/x", "x=-1:1", "1000", 1),
    ("y = 1/sin(x)", "x=-10:10", "2001", 6),
])
def test_plot_breaks_the_curve_at_a_pole_between_points(runner, source, span, points, count) -> None:
    result = runner.invoke(main, ["plot", source, "--range", span, "--points", points, "--format", "text"])
    assert result.exit_code == 0, result.stderr
    assert _vertical_lines(_panel_rows(result.stdout, "y")) == []
    poles = [line for line in result.stderr.splitlines() if "has a pole between" in line]
    assert len(poles) == min(count, 5) and all("the curves break there" in line for line in poles)
    if count == 1:
        assert poles[0] == ("warning: y has a pole between x = -0.001001 and 0.001001 (near 0), between two "
                            "points: -999 and 999 are not joined, the curves break there")


def test_plot_image_breaks_the_line_at_a_pole(runner, tmp_path) -> None:
    import re

    out = tmp_path / "p.svg"
    result = runner.invoke(main, ["plot", "y = 1/x", "--range", "x=-1:1", "--points", "1000", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    svg = out.read_text()
    group = svg[svg.index('<g id="curve-f"'):]
    path = re.search(r' d="([^"]*)"', group).group(1)
    assert path.count("M") == 2  # two branches, not one line through x = 0


@pytest.mark.parametrize("source", ["y = tanh(1000*x)", "y = exp(-1000000*x**2)", "y = x**3 - 2*x"])
def test_plot_joins_a_steep_or_narrow_but_continuous_curve(runner, source) -> None:
    from autodiff_cli.analysis.curves import sample_curves
    from autodiff_cli.language import parse

    assert sample_curves(parse(source), {}, "x", -1.0, 1.0, points=1000).poles == []
    result = runner.invoke(main, ["plot", source, "--range", "x=-1:1", "--points", "1000", "--format", "text"])
    assert "pole" not in result.stderr


def test_fit_stops_on_a_gradient_that_is_not_finite(runner) -> None:
    # the loss sqrt(w) + x is finite at w = 0, its gradient 1/(2 sqrt(w)) is not
    result = runner.invoke(main, ["fit", "loss = sqrt(w) + x", "--data", "-", "--set", "w=0", "--steps", "5", "-q"],
                           input="x\n1\n2\n", catch_exceptions=False)
    assert result.exit_code == 1 and "the gradient's norm is inf at step 1" in result.stderr


# --- issue 35: a tensor program's gradient that is not finite gets the same warning ------------------


@pytest.mark.parametrize("args, warning", [
    # d sum(sqrt(x - 1)) / dx = 1 / (2 sqrt(x - 1)): infinite at x = 1 (entry 0) only
    (["eval", "x = [1, 2, 5]; L = sum(sqrt(x - 1))", "--format", "plain"],
     "warning: a gradient is not finite: dL/dx[0] = inf; the derivative of 'sqrt' at 0 is inf "
     "(in the statement of L, <expr>:1:16)"),
    (["eval", "x = [1, 2, 5]\nz = x - 1\ny = sqrt(z) * 3\nL = sum(y) + sum(x)", "--format", "json"],
     "warning: a gradient is not finite: dL/dx[0] = inf, dL/dz[0] = inf; the derivative of 'sqrt' at 0 is inf "
     "(in the statement of y, <expr>:3:1)"),
    # a Jacobian: d y[0] / d x[0]; forward mode computes the same numbers and says the same
    (["eval", "x = [1, 2]; y = sqrt(x - 1)", "--format", "csv"],
     "warning: a gradient is not finite: dy[0]/dx[0] = inf; the derivative of 'sqrt' at 0 is inf "
     "(in the statement of y, <expr>:1:13)"),
    (["eval", "x = [1, 2]; y = sqrt(x - 1)", "--format", "plain", "--mode", "forward"],
     "warning: a gradient is not finite: dy[0]/dx[0] = inf; the derivative of 'sqrt' at 0 is inf "
     "(in the statement of y, <expr>:1:13)"),
    # 0 * inf: NaN, from the same infinite slope
    (["eval", "x = [0, 4]; L = sum(0 * sqrt(x))", "--format", "plain"],
     "warning: a gradient is not finite: dL/dx[0] = nan; the derivative of 'sqrt' at 0 is inf "
     "(in the statement of L, <expr>:1:13)"),
    (["eval", "x = [0, 4]; L = sum(x ** 0.5)", "--format", "plain"],
     "warning: a gradient is not finite: dL/dx[0] = inf; the derivative of 'x**0.5' at 0 is inf "
     "(in the statement of L, <expr>:1:13)"),
], ids=["sum", "intermediate", "jacobian", "forward", "nan", "power"])
def test_eval_of_a_tensor_program_warns_of_a_gradient_that_is_not_finite(runner, args, warning) -> None:
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.stderr
    assert warning in result.stderr.splitlines(), result.stderr


def test_eval_of_a_tensor_program_says_nothing_of_finite_gradients(runner) -> None:
    result = runner.invoke(main, ["eval", "x = [1, 2, 5]; L = sum(sqrt(x))", "--format", "plain"])
    assert result.exit_code == 0 and result.stderr == ""
    # --wrt leaves the infinite one out: nothing shown is not finite
    result = runner.invoke(main, ["eval", "x = [1, 2]; c = sum(sqrt(x - 1)); L = c * 2", "--wrt", "c",
                                  "--format", "plain"])
    assert result.exit_code == 0 and result.stderr == ""
