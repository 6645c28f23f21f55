"""`eval` on the NumPy interpreter gives what the compiled engine gives for the same program: forward
mode with respect to a computed variable, the rows reported, and the errors of bad values.

The interpreter runs tensor programs, float32 runs and programs of numbers that use clip, where or a
comparison; the engine runs every other float64 program of numbers.  Expected derivatives are
worked out by hand in each test's comment; where the engine can run the same program (without the
clip, whose interior is the identity) its numbers are compared too.
"""

from __future__ import annotations

import csv
import io
import json

import pytest

from autodiff_cli.cli import main

FORMATS = ("plain", "csv", "json", "table")


def run(runner, *args):
    return runner.invoke(main, [str(a) for a in args], catch_exceptions=False)


def grads_of(result, output_format: str) -> dict[str, object]:
    """The grad column of a report, by name, in any of eval's formats (the table's digits as text)."""
    assert result.exit_code == 0, result.output + result.stderr
    text = result.stdout
    if output_format == "json":
        return json.loads(text)["grads"]
    if output_format == "csv":
        rows = list(csv.DictReader(io.StringIO(text)))
        return {row["name"]: float(row["grad"]) if row["grad"] else None for row in rows}
    found = {}
    for line in text.splitlines():
        cells = line.replace("│", " ").replace("┃", " ").split()
        if len(cells) > 2 and cells[1] in ("input", "intermediate", "output"):
            found[cells[0]] = float(cells[-1])
    return found


# --- forward mode with respect to a computed variable (F1, F2) -----------------------------------

# c = a*b = 6 and L = clip(c*c + a, 0, 100) = 38, inside the clip: dL/dc = 2c = 12 with c's own
# operands held (forward mode seeds c's tangent, upstream of c nothing moves), and
# dL/da = 2c*b + 1 = 37 through c.
CLIPPED = "a=2; b=3; c=a*b; L=clip(c*c+a, 0, 100)"
BY_HAND = {"a": 37.0, "c": 12.0}


@pytest.mark.parametrize("output_format", FORMATS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_forward_mode_differentiates_a_computed_variable(runner, output_format, dtype) -> None:
    result = run(runner, "eval", CLIPPED, "--wrt", "a,c", "--mode", "forward", "--dtype", dtype,
                 "--format", output_format)
    grads = grads_of(result, output_format)
    assert {name: float(grad) for name, grad in grads.items()} == BY_HAND  # every number exact in float32


def test_forward_mode_on_the_interpreter_agrees_with_reverse_mode_and_the_engine(runner) -> None:
    args = ["--wrt", "a,c", "--format", "json"]
    forward = json.loads(run(runner, "eval", CLIPPED, *args, "--mode", "forward").stdout)
    reverse = json.loads(run(runner, "eval", CLIPPED, *args).stdout)
    engine = json.loads(run(runner, "eval", "a=2; b=3; c=a*b; L=c*c+a", *args, "--mode", "forward").stdout)
    assert forward["grads"] == reverse["grads"] == engine["grads"] == BY_HAND


def test_forward_mode_through_a_computed_variable_alone_says_its_passes(runner) -> None:
    result = run(runner, "eval", "a=2; c=clip(a*a, 0, 9); L=c+1", "--wrt", "c", "--mode", "forward",
                 "--format", "plain")
    assert result.stdout.splitlines()[1].split() == ["c", "intermediate", "clip", "4.0", "1.0"]  # dL/dc = 1
    assert "forward mode: 1 pass (one per variable entry) over 3 ops" in result.stderr
    doc = json.loads(run(runner, "eval", "a=2; c=clip(a*a, 0, 9); L=c+1", "--wrt", "c", "--mode", "forward",
                         "--format", "json").stdout)
    assert doc["grads"] == {"c": 1.0} and doc["work"]["forward"]["passes"] == 1


def test_forward_mode_holds_what_is_upstream_of_the_computed_variable(runner) -> None:
    # L = clip(c*a, 0, 100) with c = a*a: dL/dc = a = 2 (a held), but dL/da = 3a² = 12 (c moves with a)
    text = "a=2; c=a*a; L=clip(c*a, 0, 100)"
    for wrt, expected in (("c", {"c": 2.0}), ("a", {"a": 12.0}), ("a,c", {"a": 12.0, "c": 2.0})):
        doc = json.loads(run(runner, "eval", text, "--wrt", wrt, "--mode", "forward", "--format", "json").stdout)
        assert doc["grads"] == expected


def test_forward_mode_of_a_tensor_program_differentiates_a_computed_tensor(runner) -> None:
    # L = sum(c*c) with c = x*x = [1, 4]: dL/dc = 2c = [2, 8]; dL/dx = 4x³ = [4, 32]
    text = "x=[1,2]; c=x*x; L=sum(c*c)"
    for output_format in ("json", "csv", "plain"):
        result = run(runner, "eval", text, "--wrt", "c,x", "--mode", "forward", "--format", output_format)
        assert result.exit_code == 0
        if output_format == "json":
            doc = json.loads(result.stdout)
            assert doc["grads"]["c"] == [2.0, 8.0] and doc["grads"]["x"] == [4.0, 32.0]
            assert doc["work"]["forward"]["passes"] == 4  # two entries of x, two of c
        elif output_format == "csv":
            rows = {(row["name"], row["index"]): float(row["grad"]) for row in csv.DictReader(io.StringIO(result.stdout))}
            assert rows[("c", "0")] == 2.0 and rows[("c", "1")] == 8.0
        else:
            assert "[2.0, 8.0]" in result.stdout


def test_forward_mode_gives_the_jacobian_of_a_vector_output_along_a_computed_variable(runner) -> None:
    # y = 3c with c = x*x: dy/dc = 3I, whatever x is
    text = "x=[1,2]; c=x*x; y=c*3"
    for mode in ("forward", "reverse"):
        doc = json.loads(run(runner, "eval", text, "--wrt", "c", "--mode", mode, "--format", "json").stdout)
        assert doc["jacobian"]["inputs"] == ["c[0]", "c[1]"]
        assert doc["jacobian"]["rows"] == [[3.0, 0.0], [0.0, 3.0]]


def test_forward_mode_with_respect_to_a_variable_after_the_output_gives_zero(runner) -> None:
    # dL/dz = 0: L is computed before z, as the engine says
    text = "a=2; c=clip(a, 0, 9); L=c*c; z=L+1"
    doc = json.loads(run(runner, "eval", text, "--output", "L", "--wrt", "z,c", "--mode", "forward",
                         "--format", "json").stdout)
    assert doc["grads"] == {"c": 4.0, "z": 0.0}


def test_forward_mode_with_respect_to_an_input_is_unchanged(runner) -> None:
    # L = clip(x*x, 0, 100) at x = 3: dL/dx = 2x = 6
    doc = json.loads(run(runner, "eval", "x=3; L=clip(x*x, 0, 100)", "--mode", "forward", "--format", "json").stdout)
    assert doc["grads"] == {"x": 6.0} and doc["work"]["forward"]["passes"] == 1


# --- the rows of the report: the same for float32 as for float64 (F14) -------------------------------

LINE = "w = 0\nb = 0\ny = 0\nprediction = w*x + b\nloss = (prediction - y)**2"


def row_names(runner, *args) -> list[str]:
    result = run(runner, "eval", LINE, "--set", "x=3", *args, "--format", "csv")
    assert result.exit_code == 0, result.output
    return [row["name"] for row in csv.DictReader(io.StringIO(result.stdout))]


@pytest.mark.parametrize(("args", "names"), [
    ((), ["w", "b", "y", "x", "prediction", "loss"]),
    (("--output", "prediction"), ["w", "b", "y", "x", "prediction", "loss"]),  # loss comes after, dloss = 0
    (("--mode", "forward"), ["w", "b", "y", "x"]),  # forward mode differentiates the inputs
    (("--mode", "forward", "--output", "prediction"), ["w", "b", "y", "x"]),
    (("--wrt", "x,w"), ["x", "w"]),  # in the order asked
    (("--wrt", "x,w", "--mode", "forward"), ["w", "x"]),  # in program order, one pass each
    (("--wrt", "loss,prediction", "--output", "prediction", "--mode", "forward"), ["prediction", "loss"]),
])
def test_float32_reports_the_rows_float64_reports(runner, args, names) -> None:
    assert row_names(runner, *args) == names  # the engine
    assert row_names(runner, *args, "--dtype", "float32") == names  # the interpreter


def test_float32_gives_a_later_variable_a_derivative_of_zero(runner) -> None:
    # with --output prediction, loss is computed after it: dprediction/dloss = 0; dprediction/dw = x = 3
    result = run(runner, "eval", LINE, "--set", "x=3", "--output", "prediction", "--dtype", "float32",
                 "--format", "json")
    doc = json.loads(result.stdout)
    assert doc["grads"] == {"w": 3.0, "b": 1.0, "y": 0.0, "x": 0.0, "prediction": 1.0, "loss": 0.0}
    assert doc["kinds"]["loss"] == "intermediate" and doc["shapes"]["loss"] == []


def test_a_tensor_program_lists_the_variables_after_its_output(runner) -> None:
    # y = sum(x*x) at x = [1, 2]: dy/dx = 2x = [2, 4]; z comes after y, so dy/dz = 0
    doc = json.loads(run(runner, "eval", "x=[1,2]; y=sum(x*x); z=y*x", "--output", "y", "--format", "json").stdout)
    assert doc["grads"] == {"x": [2.0, 4.0], "y": 1.0, "z": [0.0, 0.0]}


# --- an op outside its domain, in the op's own words (F10) ----------------------------------------

LOG_HINT = "maximum(p, 1e-12) for a probability"  # log's hint in the op table
LOG_OF_0 = "error: log of 0 is undefined (log needs a positive argument)"  # the engine's words


@pytest.mark.parametrize(("args", "message"), [
    (("x=[0,1]; y = sum(log(x))",), f"{LOG_OF_0} at entry [0], where x[0] = 0"),
    (("y = log(x)", "--set", "x=0", "--dtype", "float32"), f"{LOG_OF_0}, where x = 0"),
    (("y = clip(log(x), 0, 1)", "--set", "x=0"), f"{LOG_OF_0}, where x = 0"),  # a number, on the interpreter
])
def test_log_of_zero_is_undefined_not_an_overflow(runner, args, message) -> None:
    result = run(runner, "eval", *args)
    assert result.exit_code == 1
    assert message in result.stderr and LOG_HINT in result.stderr
    assert "overflows" not in result.stderr and "Traceback" not in result.stderr


def test_zero_to_a_negative_power_says_so_with_the_power_s_hint(runner) -> None:
    result = run(runner, "eval", "x=[0,1]; y = sum(x**-1)")
    assert result.exit_code == 1
    assert "0 raised to the negative power -1 is a division by zero at entry [0], where x[0] = 0" in result.stderr
    assert "0 needs a non-negative one" in result.stderr and "overflows" not in result.stderr


def test_an_overflow_in_float32_is_still_an_overflow(runner) -> None:
    # exp(100) is about 2.7e43: beyond float32's 3.4e38, though float64's kernel computes it
    result = run(runner, "eval", "x=[100,1]; y = sum(exp(x))", "--dtype", "float32")
    assert result.exit_code == 1
    assert "error: exp overflows at entry [0], where x[0] = 100" in result.stderr
    assert "exp overflows above about 88.72" in result.stderr  # log(3.4e38), float32's limit


# --- a value that is not finite is named as the input it is (F8) ----------------------------------------


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("cell", ["inf", "nan"])
def test_batch_names_an_input_that_is_not_finite(runner, tmp_path, samples, dtype, cell) -> None:
    data = tmp_path / "bad.csv"
    data.write_text(f"x,y\n1,2\n1,{cell}\n")
    result = run(runner, "batch", samples / "line.ad", data, "--dtype", dtype)
    assert result.exit_code == 1
    assert f"line.ad:10:1: error: the input 'y' is {cell}, not a finite number" in result.stderr  # y = 0 is line 10
    assert f"in {data} line 3" in result.stderr  # the row, as batch says it
    assert "every input must be a finite number" in result.stderr and "overflows" not in result.stderr


def test_a_tensor_program_names_the_entry_of_an_input_that_is_not_finite(runner, tmp_path, samples) -> None:
    data = tmp_path / "bad.csv"
    data.write_text("x[0],x[1],y\n1,1,2\n1,-inf,3\n")
    result = run(runner, "batch", samples / "regression_rows.ad", data)
    assert result.exit_code == 1
    assert "regression_rows.ad:8:1: error: the input 'x' is -inf at entry [1], not a finite number" in result.stderr
    assert f"in {data} line 3" in result.stderr


def test_fit_in_float32_names_an_input_that_is_not_finite(runner, tmp_path, samples) -> None:
    data = tmp_path / "bad.csv"
    data.write_text("x,y\n1,2\n1,nan\n")
    result = run(runner, "fit", samples / "line.ad", "--data", data, "--steps", "2", "--dtype", "float32", "--quiet")
    assert result.exit_code == 1
    assert "error: the input 'y' is nan, not a finite number" in result.stderr
    assert f"in line 3 of {data}" in result.stderr
