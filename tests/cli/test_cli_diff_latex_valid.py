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
