"""A number beyond float32's range under --dtype float32 (issue 34): refused at the value, where
the user wrote it (the program, --set, a row and column of the data), never read as an infinity
that an op downstream is blamed for, and never with NumPy's "overflow encountered in cast"
(pytest turns warnings into errors, so a cast that warns fails these tests)."""

import json

import numpy as np
import pytest

from autodiff_cli.cli import main

LARGEST = f"{float(np.finfo(np.float32).max):.2g}".replace("e+", "e")  # NumPy's float32 limit: 3.4e38


def run(runner, *args):
    return runner.invoke(main, [*args], catch_exceptions=False)


def test_the_values_refused_round_to_an_infinity_in_float32() -> None:
    with np.errstate(over="ignore"):
        assert np.isinf(np.float32(1e40)) and np.isinf(np.float32(-1e39))
        assert np.isfinite(np.float32(3e38))  # below the limit: runs
    assert LARGEST == "3.4e38"


def expect_refused(result, value: str, *where: str) -> None:
    assert result.exit_code == 1, result.output
    assert f"{value} is beyond float32's range (about {LARGEST})" in result.stderr or \
        f"holds {value}" in result.stderr and f"beyond float32's range (about {LARGEST})" in result.stderr
    assert "overflow" not in result.output and "Warning" not in result.output
    assert "Traceback" not in result.output
    for text in where:
        assert text in result.stderr, result.stderr


def test_eval_refuses_an_entry_of_a_tensor_at_its_input(runner) -> None:
    result = run(runner, "eval", "x = [1e40, 2]; L = sum(x)", "--dtype", "float32")
    expect_refused(result, "1e40", "<expr>:1:1:", "x[0]")
    assert "sum" not in result.stderr.split("\n")[0]  # not "sum overflows"


def test_eval_refuses_a_number_input(runner) -> None:
    result = run(runner, "eval", "x = 1e40; L = x", "--dtype", "float32")
    expect_refused(result, "1e40", "<expr>:1:1:")
    assert "inf" not in result.stderr


def expect_set_refused(result, name: str, value: str) -> None:
    # A --set value float32 cannot hold is the option's error (exit 2), as one float64 cannot
    # hold is (--set x=1e309)
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '--set': value of {name}: {value} is beyond float32's range (about {LARGEST})" \
        in result.stderr
    assert "overflow" not in result.output and "Traceback" not in result.output


def test_eval_refuses_a_value_given_by_set(runner) -> None:
    result = run(runner, "eval", "x = [1, 2]; L = sum(x)", "--set", "x=[1, -1e39]", "--dtype", "float32")
    expect_set_refused(result, "x", "-1e39 at entry [1]")
    float64 = run(runner, "eval", "x = 1; L = x", "--set", "x=1e309")
    assert float64.exit_code == 2 and "Invalid value for '--set'" in float64.stderr


def test_eval_points_into_the_values_file_at_the_entry(runner, tmp_path) -> None:
    # As a float64 entry it cannot hold is said (v.json:2:2, at the key, with the excerpt), not
    # against the program ("<expr>: error: ...")
    values = tmp_path / "v4.json"
    values.write_text('{\n "W": [[1, 2], [3, 1e39]]\n}\n')
    result = run(runner, "eval", "-e", "W = [[0, 0], [0, 0]]; L = sum(W)", "--values", str(values),
                 "--dtype", "float32")
    expect_refused(result, "1e39", f"{values}:2:2: error: the value of 'W' holds 1e39 at entry [1, 1], beyond "
                   f"float32's range (about {LARGEST})", ' 2 |  "W": [[1, 2], [3, 1e39]]')
    assert "<expr>" not in result.stderr
    overridden = run(runner, "eval", "-e", "W = [[0, 0], [0, 0]]; L = sum(W)", "--values", str(values),
                     "--set", "W=[[1, 1], [1, 1]]", "--dtype", "float32", "--format", "json")
    assert overridden.exit_code == 0, overridden.output  # --set replaces the file's W
    assert json.loads(overridden.stdout)["value"] == 4.0


def test_eval_refuses_a_constant_of_the_program_at_it(runner) -> None:
    result = run(runner, "eval", "x = 2; L = x*1e39", "--dtype", "float32")
    assert result.exit_code == 1
    assert result.stderr.startswith(f"<expr>:1:14: error: the constant 1e39 is beyond float32's range (about {LARGEST})")


def test_a_value_within_range_still_runs(runner) -> None:
    result = run(runner, "eval", "x = [3e38, 2]; L = x[0]*1", "--dtype", "float32", "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["value"] == float(str(np.float32(3e38)))


def test_float64_takes_the_same_value(runner) -> None:
    result = run(runner, "eval", "x = [1e40, 2]; L = sum(x)", "--format", "json")
    assert result.exit_code == 0 and json.loads(result.stdout)["value"] == 1e40 + 2


def test_check_refuses_it_too(runner) -> None:
    result = run(runner, "check", "x = [1e40, 2]; L = sum(x)", "--dtype", "float32")
    expect_refused(result, "1e40", "x[0]")


@pytest.mark.parametrize("on_error", ["fail", "skip", "nan"])
def test_batch_names_the_row_and_column_as_the_file_writes_it(runner, tmp_path, on_error) -> None:
    rows = tmp_path / "big.csv"
    rows.write_text("x,y\n2,3\n1e40,5\n")
    result = run(runner, "batch", "L = x*y", str(rows), "--dtype", "float32", "--on-error", on_error)
    expect_refused(result, "1e40", f"{rows}:3:1: error: the column 'x' holds 1e40, beyond", " 3 | 1e40,5")
    assert "x=inf" not in result.stderr


def test_batch_refuses_a_value_given_by_set(runner, tmp_path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("x\n2\n")
    result = run(runner, "batch", "L = x*w", str(rows), "--set", "w=1e39", "--dtype", "float32")
    expect_set_refused(result, "w", "1e39")


def test_fit_names_the_data_row_not_an_op(runner, tmp_path) -> None:
    rows = tmp_path / "data.csv"
    rows.write_text("x,y\n1,2\n1e39,3\n2,4\n")
    result = run(runner, "fit", "w = 0.5; L = mean((w*x - y)**2)", "--data", str(rows), "--dtype", "float32",
                 "--steps", "3")
    expect_refused(result, "1e39", "the column 'x' holds 1e39", "line 3 of")
    assert "w*x" not in result.stderr and "overflows" not in result.stderr


def test_fit_refuses_a_starting_value_given_by_set(runner, tmp_path) -> None:
    rows = tmp_path / "data.csv"
    rows.write_text("x,y\n1,2\n2,4\n")
    result = run(runner, "fit", "w = 0.5; L = mean((w*x - y)**2)", "--data", str(rows), "--dtype", "float32",
                 "--steps", "3", "--set", "w=1e39")
    expect_set_refused(result, "w", "1e39")


# --- an overflow's hint names the limits of the precision the program ran in -------------------

EXP_LIMIT_32 = f"{float(np.log(np.finfo(np.float32).max)):.2f}"  # 88.72: exp(88.73) is inf in float32
EXP_LIMIT_64 = f"{float(np.log(np.finfo(np.float64).max)):.2f}"  # 709.78


def test_exp_limit_is_where_float32_overflows() -> None:
    with np.errstate(over="ignore"):
        assert np.isfinite(np.exp(np.float32(88.72))) and np.isinf(np.exp(np.float32(88.73)))
    assert EXP_LIMIT_32 == "88.72"


@pytest.mark.parametrize("program", ["x = [1, 100]; L = sum(exp(x))", "x = 100; L = exp(x)"])
def test_a_float32_overflow_hint_says_float32s_limits(runner, program) -> None:
    result = run(runner, "eval", program, "--dtype", "float32")
    assert result.exit_code == 1
    hint = result.stderr.splitlines()[-1]
    assert hint == (f"  hint: exp overflows above about {EXP_LIMIT_32}; rescale the inputs, or rewrite the "
                    f"expression so intermediates stay below {LARGEST}")
    assert EXP_LIMIT_64 not in result.stderr and "1e308" not in result.stderr


def test_a_float32_batch_row_overflow_hint_says_float32s_limits(runner, tmp_path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("x\n1\n100\n")
    result = run(runner, "batch", "y = exp(x)", str(rows), "--dtype", "float32")
    assert result.exit_code == 1
    assert f"hint: exp overflows above about {EXP_LIMIT_32};" in result.stderr
    assert f"below {LARGEST}" in result.stderr


def test_float64_keeps_its_limits(runner) -> None:
    result = run(runner, "eval", "x = [1, 1000]; L = sum(exp(x))")
    assert f"hint: exp overflows above about {EXP_LIMIT_64}; rescale the inputs, or rewrite the expression so " \
           "intermediates stay below 1e308" in result.stderr


def test_a_draw_of_an_initializer_beyond_float32_is_refused_at_the_input(runner) -> None:
    drawn = np.random.default_rng(0).normal(0.0, 1e40, [2])  # eval's draw: seed 0, in float64
    with np.errstate(over="ignore"):
        assert np.isinf(drawn.astype(np.float32)).all()
    result = run(runner, "eval", "W = normal([2], 1e40); L = sum(W)", "--dtype", "float32")
    shown = repr(float(drawn[0])).replace("e+", "e")
    expect_refused(result, shown, "<expr>:1:1:", "it is W[0]")


# --- a number float32 takes as 0 is warned about, as float64 warns of one it takes as 0 --------

SMALLEST_32 = "1.4e-45"  # float32's smallest number above 0 (a subnormal), checked below


def test_float32s_smallest_number() -> None:
    smallest = np.nextafter(np.float32(0), np.float32(1))
    assert f"{float(smallest):.2g}" == SMALLEST_32
    assert np.float32(1e-50) == 0 and np.float32(1e-45) != 0  # 1e-45 rounds up to the smallest


def test_a_tiny_set_value_is_warned_about_in_float32(runner) -> None:
    result = run(runner, "eval", "L = x*2", "--set", "x=1e-50", "--dtype", "float32", "--format", "json")
    assert result.exit_code == 0, result.output
    assert result.stderr == (f"warning: value of x: 1e-50 is smaller than the smallest float32 (about {SMALLEST_32}), "
                             "so it is taken as 0\n")
    assert json.loads(result.stdout)["value"] == 0.0
    float64 = run(runner, "eval", "L = x*2", "--set", "x=1e-50")
    assert float64.exit_code == 0 and float64.stderr == ""  # float64 holds it


def test_tiny_entries_of_a_set_tensor_are_counted(runner) -> None:
    result = run(runner, "eval", "x = [1, 1, 1]; L = sum(x)", "--set", "x=[1e-50, 1, -1e-47]", "--dtype", "float32")
    assert result.exit_code == 0, result.output
    assert ("warning: value of x: 1e-50 at entry [0], -1e-47 at entry [2] are smaller than the smallest float32 "
            f"(about {SMALLEST_32}), so taken as 0") in result.stderr


def test_a_tiny_values_file_entry_is_warned_about_in_float32(runner, tmp_path) -> None:
    values = tmp_path / "v.json"
    values.write_text('{"W": [[1e-50, 2], [3, 1]], "b": 1e-60}')
    result = run(runner, "eval", "W = [[0, 0], [0, 0]]; b = 1; L = sum(W) + b", "--values", str(values),
                 "--dtype", "float32")
    assert result.exit_code == 0, result.output
    assert result.stderr == (f"warning: {values}: 1e-50 at entry [0, 0] (of 'W'), 1e-60 (of 'b') are smaller than "
                             f"the smallest float32 (about {SMALLEST_32}), so taken as 0\n")


def test_a_tiny_constant_of_the_program_is_warned_about_at_its_place_in_float32(runner) -> None:
    result = run(runner, "eval", "# 1e-50 in a comment\nL = x + 1e-50", "--set", "x=1", "--dtype", "float32")
    assert result.exit_code == 0, result.output
    assert result.stderr == (f"warning: <expr>:2:9: 1e-50 is smaller than the smallest float32 (about {SMALLEST_32}), "
                             "so it is taken as 0\n")
    assert run(runner, "eval", "L = x + 1e-50", "--set", "x=1").stderr == ""
