"""One run for every shape (issue 32): ``run_program`` picks the executor, and the ``Run`` it returns
answers the same questions whichever ran it, a number being a 0-d value of shape ().

Expected derivatives are worked out by hand: L = (a*b + c)*f at a=2, b=-3, c=10, f=-2 has
dL/da = b*f = 6, dL/db = a*f = -4, dL/dc = f = -2, dL/df = a*b + c = 4 (micrograd's example).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from autodiff_cli.errors import InputError
from autodiff_cli.execute.run import ENGINE, NUMPY, run_program, runs_on_engine
from autodiff_cli.language import parse
from autodiff_cli.render import report

KARPATHY = "L = (a*b + c)*f"
GIVEN = {"a": 2.0, "b": -3.0, "c": 10.0, "f": -2.0}
BY_HAND = {"a": 6.0, "b": -4.0, "c": -2.0, "f": 4.0, "L": 1.0}


def test_a_program_of_numbers_runs_on_the_engine_and_its_values_are_0_d() -> None:
    run = run_program(parse(KARPATHY), GIVEN)
    assert run.backend == ENGINE and run.numbers_only and run.dtype == "float64"
    assert run.evaluation is not None and run.tensors is None  # the Value graph, for explain and the page
    assert {name: run.derivative(name) for name in run.names} == BY_HAND
    assert run.value("L") == (2.0 * -3.0 + 10.0) * -2.0 and run.shape("L") == ()
    assert [run.kind(name) for name in run.names] == ["input"] * 4 + ["output"]


@pytest.mark.parametrize(("dtype", "forward", "backend"), [
    ("float32", False, NUMPY),  # float32: the interpreter, every value 0-d
    ("float32", True, NUMPY),
    (None, True, ENGINE),
])
def test_the_same_numbers_from_either_executor_and_mode(dtype: str | None, forward: bool, backend: str) -> None:
    run = run_program(parse(KARPATHY), GIVEN, dtype=dtype, forward=forward)
    assert run.backend == backend
    for name in "abcf":  # every value here is exact in float32
        assert run.shape(name) == ()
        assert float(run.derivative(name)) == BY_HAND[name]


def test_a_tensor_program_runs_on_numpy_with_shapes() -> None:
    # y = sum(W * x): dy/dW = x (broadcast over W's rows), dy/dx = the sum of W's rows
    run = run_program(parse("W = [[1, 2], [3, 4]]\nx = [5, -6]\ny = sum(W * x)"))
    assert run.backend == NUMPY and not run.numbers_only and not run.jacobian
    assert run.shape("W") == (2, 2) and run.shape("y") == ()
    assert run.derivative("W").tolist() == [[5.0, -6.0], [5.0, -6.0]]
    assert run.derivative("x").tolist() == [4.0, 6.0]


def test_comparisons_run_on_numpy_even_for_numbers() -> None:
    program = parse("y = where(x > 0, x, 0)")
    assert not runs_on_engine(program, {"x": 1.0})
    assert run_program(program, {"x": 2.0}).derivative("x") == 1.0


def test_wrt_keeps_the_names_asked_for_and_refuses_unknown_ones() -> None:
    run = run_program(parse(KARPATHY), GIVEN, wrt=["f", "a", "f"])
    assert run.wrt == ["f", "a"] and run.derivative("b") is None and run.derivative("f") == 4.0
    with pytest.raises(InputError, match="--wrt names zz, which the program does not define"):
        run_program(parse(KARPATHY), GIVEN, wrt=["zz"])


def test_forward_mode_gives_reverse_mode_s_numbers_and_its_work() -> None:
    run = run_program(parse(KARPATHY), GIVEN, forward=True)
    assert run.mode == "forward" and run.wrt == ["a", "b", "c", "f"]
    assert [run.derivative(name) for name in run.wrt] == [6.0, -4.0, -2.0, 4.0]
    assert report.work_note(run).startswith("forward mode: 4 passes (one per input)")


@pytest.mark.parametrize(("program", "given", "value"), [
    ("y = sum(x * x)", {"x": [1.0, 2.0]}, 5.0),
    ("y = x * x", {"x": 3.0}, 9.0),  # on the engine, whose nodes' grads are 0 until a backward pass
])
def test_values_only(program: str, given: dict, value: float) -> None:
    run = run_program(parse(program), given, differentiate=False)
    assert run.value("y") == value and run.derivative("x") is None


def test_the_report_of_a_run_of_numbers_is_the_report_of_its_evaluation() -> None:
    run = run_program(parse(KARPATHY), GIVEN)
    for layout, text in (("json", report.to_json(run.evaluation)), ("csv", report.to_csv(run.evaluation)),
                         ("plain", report.to_plain(run.evaluation))):
        assert "".join(report.chunks(run, layout)) == text


def test_a_run_of_numbers_imports_no_numpy() -> None:
    code = ("import sys\nfrom autodiff_cli.execute.run import run_program\nfrom autodiff_cli.language import parse\n"
            "from autodiff_cli.render import report\n"
            f"run = run_program(parse({KARPATHY!r}), {GIVEN!r})\n"
            "text = ''.join(report.chunks(run, 'json'))\n"
            "assert 'numpy' not in sys.modules, 'numpy imported'\nprint(run.derivative('a'))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "6.0\n"


@pytest.mark.parametrize("dtype", [None, "float32"])
def test_forward_mode_differentiates_a_computed_variable_on_either_executor(dtype: str | None) -> None:
    # e = a*b, L = (e + c)*f: dL/de = f = -2 with a and b held; dL/da = b*f = 6 through e
    program = parse("e = a*b\nL = (e + c)*f")
    run = run_program(program, GIVEN, dtype=dtype, forward=True, wrt=["e", "a"])
    assert run.backend == (ENGINE if dtype is None else NUMPY)
    assert run.wrt == ["a", "e"]  # program order, as forward mode runs its passes
    assert [float(run.derivative(name)) for name in run.wrt] == [6.0, -2.0]
    assert report.work_note(run).startswith("forward mode: 2 passes (one per variable")
