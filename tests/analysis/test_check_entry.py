"""One gradient check for every program (issue 32): ``analysis.check.check`` picks the executor
from the run's shapes and precision, and returns one result type either way."""

import math

import pytest

from autodiff_cli.analysis.check import OK, CheckResult, check
from autodiff_cli.execute import Evaluation
from autodiff_cli.execute.interpreter import TensorRun
from autodiff_cli.language.compiler import parse as _program


@pytest.mark.parametrize(
    ("text", "values", "dtype", "ran_on", "rows"),
    [
        ("y = x*x + 3*z", {"x": 2.0, "z": 1.0}, None, Evaluation, ["x", "z"]),  # the compiled engine
        ("y = x*x + 3*z", {"x": 2.0, "z": 1.0}, "float32", TensorRun, ["x", "z"]),  # float32: the interpreter
    ],
    ids=["scalar-float64", "scalar-float32"],
)
def test_a_scalar_program_is_checked_input_by_input_on_either_executor(text, values, dtype, ran_on, rows) -> None:
    result = check(_program(text), values, dtype=dtype)
    assert isinstance(result, CheckResult) and isinstance(result.run, ran_on)
    assert [row.name for row in result.inputs] == rows
    assert result.verdict == OK
    assert [row.reverse for row in result.inputs] == [4.0, 3.0]  # 2x at x = 2, and 3: exact in both precisions
    assert result.dtype == (dtype or "float64")


def test_a_tensor_program_is_checked_along_directions_and_at_entries() -> None:
    result = check(_program("w = [1.0, -2.0]\ny = sum(w * w)"), {}, directions=1)
    assert isinstance(result.run, TensorRun)
    assert [row.name for row in result.inputs] == ["direction 1", "w[0]", "w[1]"]
    assert [row.reverse for row in result.inputs[1:]] == [2.0, -4.0]
    assert math.isfinite(result.inputs[0].reverse) and result.verdict == OK


def test_an_unknown_precision_is_refused() -> None:
    with pytest.raises(ValueError, match="float64 or float32"):
        check(_program("y = x"), {"x": 1.0}, dtype="float16")
