"""Small message defects from the trust review: wording, what a message leaves out, and what it
repeats in full."""

import json

import pytest

from autodiff_cli.cli import main


def test_a_directory_given_as_values_file_has_a_clean_hint(runner, tmp_path) -> None:
    result = runner.invoke(main, ["eval", "y = x", "--values", str(tmp_path)])
    assert result.exit_code == 1
    assert "file file" not in result.stderr
    assert result.stderr.endswith("  hint: name the values file itself, not its directory\n")


def test_graph_with_some_values_says_which_given_values_are_not_drawn(runner) -> None:
    result = runner.invoke(main, ["graph", "L = (a*b + c)*f", "--set", "a=2", "--set", "b=-3", "--format", "dot"])
    assert result.exit_code == 0
    assert result.stderr == (
        "warning: no value for c, f: drawing the structure only, without the values of a, b "
        "(give every input a value to see the numbers: --set c=VALUE --set f=VALUE)\n")


def test_graph_names_a_default_that_is_not_drawn(runner) -> None:
    result = runner.invoke(main, ["graph", "a = 2\ny = a*b", "--format", "dot"])
    assert result.stderr.startswith("warning: no value for b: drawing the structure only, without the values of a ")


def test_graph_with_no_values_at_all(runner) -> None:
    result = runner.invoke(main, ["graph", "L = (a*b + c)*f", "--format", "dot"])
    assert result.stderr == ("warning: no value for a, b, c, f: drawing the structure only "
                             "(give values with --set NAME=VALUE)\n")


def test_graph_with_many_missing_values_counts_them(runner) -> None:
    program = " + ".join(f"x{i}" for i in range(500))
    result = runner.invoke(main, ["graph", f"y = {program}", "--set", "x0=1", "--format", "dot"])
    assert result.exit_code == 0
    (line,) = result.stderr.splitlines()
    assert line.startswith("warning: no value for x1, x2,") and "and 479 more" in line and len(line) < 500


def test_a_huge_literal_is_not_repeated_in_full(runner) -> None:
    digits = "9" * 400
    for args in (["eval", f"y = {digits}*x", "--set", "x=1"], ["eval", "y = x", "--set", f"x={digits}"]):
        result = runner.invoke(main, args)
        assert result.exit_code in (1, 2)
        assert digits not in result.stderr and "characters)..." in result.stderr, result.stderr


def test_a_huge_number_in_a_values_file_is_not_repeated_in_full(runner, tmp_path) -> None:
    path = tmp_path / "v.json"
    path.write_text(json.dumps({"x": 0}).replace("0", "9" * 400))
    result = runner.invoke(main, ["eval", "y = x", "--values", str(path)])
    assert result.exit_code == 1
    assert "9" * 120 not in result.stderr


@pytest.mark.parametrize(("program", "column", "hint"), [
    ("x = [1, 2]\ny = x.sum()", 6, "sum(x)"),
    ("x = [[1, 2]]\ny = x.sum(0)", 6, "sum(x, 0)"),
    ("W = [[1, 2]]\ny = sum(W.T)", 10, "transpose(W)"),
])
def test_a_method_call_is_hinted_as_a_function_call(runner, program: str, column: int, hint: str) -> None:
    """Issue 36: ``x.sum()`` said only "unexpected character '.'"."""
    result = runner.invoke(main, ["eval", program])
    assert result.exit_code == 1
    assert f"<expr>:2:{column}: error: unexpected character '.'" in result.stderr
    assert hint in result.stderr.split("hint:")[1]


@pytest.mark.parametrize(("program", "hint"), [
    ("x = zeros(2, 3)\ny = sum(x)", "zeros([2, 3])"),
    ("x = uniform(16, 2, -1, 1)\ny = sum(x)", "uniform([16, 2], -1, 1)"),
    ("x = normal(4, 3, 0.5)\ny = sum(x)", "normal([4, 3], 0.5)"),
])
def test_a_shape_written_as_arguments_is_hinted_as_one_list(runner, program: str, hint: str) -> None:
    result = runner.invoke(main, ["eval", program])
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert f"hint: the shape is one list: write {hint}" in result.stderr
    fixed = runner.invoke(main, ["eval", program.replace(program[program.index("(") + 1:program.index(")")],
                                                         hint[hint.index("(") + 1:-1]), "--format", "json"])
    assert fixed.exit_code == 0, fixed.stderr
