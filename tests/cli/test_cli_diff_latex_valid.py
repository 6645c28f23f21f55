"""diff --format latex writes LaTeX that parses: every statement, on programs that index
temporaries (t_{1}) and gradients (fractions), checked by matplotlib's mathtext parser, which
refuses a double subscript as TeX does (literal matrices, which it cannot read, stand as one
symbol)."""

from __future__ import annotations

import re

import pytest

from autodiff_cli.cli import main

PROGRAMS = [
    "x = [[1, 2], [3, 4]]; y = sum((x * x)[1])",
    "x = [-2, 0.5, 3]; w = [1, 2, 3]; y = sum(stack([x, w], -1)[1]) + sum(concat([x, [x[0] * w[1]]]))",
    "x = [[1, 2], [3, 4]]; t = x @ x; y = sum(t[0]) + t[1, 1]",
]


def statements(latex: str) -> list[str]:
    body = latex.strip().removeprefix(r"\begin{aligned}").removesuffix(r"\end{aligned}")
    lines = [line.strip().removesuffix(r"\\").replace("&", "") for line in body.strip().split("\n")]
    # mathtext has no matrices: a literal matrix stands as one symbol.
    return [re.sub(r"\\begin\{bmatrix\}.*?\\end\{bmatrix\}", "M", line) for line in lines]


@pytest.mark.parametrize("program", PROGRAMS)
def test_every_latex_statement_parses(runner, program) -> None:
    from matplotlib.mathtext import MathTextParser

    result = runner.invoke(main, ["diff", program, "--format", "latex"])
    assert result.exit_code == 0, result.output
    parser = MathTextParser("path")
    lines = statements(result.output)
    assert len(lines) >= 3
    for line in lines:
        parser.parse(f"${line}$")  # raises on a double subscript


def test_an_indexed_temporary_keeps_its_own_subscript_apart() -> None:
    from click.testing import CliRunner

    result = CliRunner().invoke(main, ["diff", PROGRAMS[0], "--format", "latex"])
    assert r"\left(t_{1}\right)_{1}" in result.output


# --- the Python form refuses inputs of another shape ---------------------------------------------


def test_the_python_form_refuses_an_input_of_another_shape_than_it_was_written_for(runner) -> None:
    # Written for a number x (--shapes x= says so): dy/dx = 2x + 1.  For x = [1, 2, 3] the gradient of
    # mean(x) + sum(x*x) would be 2x + 1/3, so answering 2x + 1 silently would be wrong.
    result = runner.invoke(main, ["diff", "y = mean(x) + sum(x*x)", "--shapes", "x=", "--format", "python"])
    assert result.exit_code == 0, result.output
    namespace: dict = {}
    exec(compile(result.output, "<diff --format python>", "exec"), namespace)  # noqa: S102 - our own output
    assert namespace["derivatives"](x=2.0)["x"] == 5.0
    with pytest.raises(ValueError, match=r"x has shape \(3,\), but these derivatives were written for shape \(\)"):
        namespace["derivatives"](x=[1.0, 2.0, 3.0])


def test_the_python_form_takes_its_own_shapes(runner) -> None:
    import numpy as np

    result = runner.invoke(main, ["diff", "W = [[1, 2], [3, 4]]; y = sum(W @ W)", "--format", "python"])
    namespace: dict = {}
    exec(compile(result.output, "<diff --format python>", "exec"), namespace)  # noqa: S102 - our own output
    w = np.array([[0.5, 1.0], [2.0, -1.0]])
    ones = np.ones((2, 2))
    np.testing.assert_allclose(namespace["derivatives"](W=w)["W"], ones @ w.T + w.T @ ones)
    with pytest.raises(ValueError, match=r"W has shape \(2, 3\)"):
        namespace["derivatives"](W=np.ones((2, 3)))
