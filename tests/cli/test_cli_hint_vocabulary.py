"""Hints speak the caller's language: options at the command line (batch's --on-error skip; fit,
which has no --on-error, says what to do instead; --output 'q'), Python arguments from evaluate_batch
(on_error='skip', output='q')."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from autodiff_cli import BatchEvaluator, evaluate_batch
from autodiff_cli.cli import main
from autodiff_cli.errors import InputError
from autodiff_cli.execute.batch_evaluator import RowError


def _hint(stderr: str) -> str:
    return stderr.split("hint:", 1)[1]


@pytest.mark.parametrize("args, wanted, unwanted", [
    (["batch", "L = x*y", "-"], "(--on-error skip)", "on_error="),
    (["batch", "L = x*y", "-", "--reduce", "mean"], "(--on-error skip)", "on_error="),
    (["fit", "w = 1; L = (w*x - y)**2", "--data", "-", "--steps", "2"], "fit trains on every row", "on_error"),
], ids=["batch", "batch-reduce", "fit"])
def test_nan_cell_hint_names_command_line_options(runner, args, wanted, unwanted) -> None:
    result = runner.invoke(main, args, input="x,y\nnan,2\n")
    assert result.exit_code == 1
    hint = _hint(result.stderr)
    assert wanted in hint and unwanted not in hint


def test_fit_hint_does_not_offer_an_option_fit_lacks(runner) -> None:
    result = runner.invoke(main, ["fit", "w = 1; L = (w*x - y)**2", "--data", "-", "--steps", "2"],
                           input="x,y\nnan,2\n")
    assert "--on-error skip)" not in _hint(result.stderr).replace("no --on-error skip)", "")


@pytest.mark.parametrize("program, inputs, wanted", [
    ("L = (w*x + b - t)**2", {"x": np.ones(3), "t": np.ones(3)}, "{'w': VALUE, 'b': VALUE}"),
    ("L = w*x", {"x": [1.0]}, "give it in the inputs"),
], ids=["two-missing", "one-missing"])
def test_evaluate_batch_missing_inputs_hint_speaks_python(program, inputs, wanted) -> None:
    with pytest.raises(InputError) as caught:
        evaluate_batch(program, inputs)
    assert wanted in caught.value.hint and "--set" not in caught.value.hint


@pytest.mark.parametrize("inputs", [{"x": [np.nan], "y": [1.0]}], ids=["nan"])
def test_evaluate_batch_nan_hint_speaks_python(inputs) -> None:
    with pytest.raises(RowError) as caught:
        evaluate_batch("L = x*y", inputs)
    assert "on_error='skip'" in caught.value.hint and "--on-error" not in caught.value.hint


def test_eval_still_suggests_set(runner) -> None:
    result = runner.invoke(main, ["eval", "L = w*x", "--set", "x=1"])
    assert result.exit_code == 1
    assert "--set w=VALUE" in _hint(result.stderr)


@pytest.mark.parametrize("api, output, shown", [
    ("evaluate_batch", "q", "output='q'"),
    ("BatchEvaluator", "q", "output='q'"),
    ("BatchEvaluator", "it's", 'output="it\'s"'),
], ids=["evaluate_batch", "BatchEvaluator", "quote-in-name"])
def test_an_unknown_output_is_named_as_the_python_argument(api, output, shown) -> None:
    with pytest.raises(InputError) as caught:
        if api == "evaluate_batch":
            evaluate_batch("y = w*x + b", {"x": [1.0], "w": 2.0, "b": 0.5}, output=output)
        else:
            BatchEvaluator("y = w*x + b", output=output)
    assert str(caught.value) == (f"<program>: error: {shown} is not a variable of the program\n"
                                 "  hint: the variables are: w, x, b, y")


def test_an_evaluator_with_python_advice_still_pickles() -> None:
    # Dask sends evaluators to its workers; the advice's spellings must travel with them.
    evaluator = pickle.loads(pickle.dumps(BatchEvaluator("y = w*x", output="y")))
    assert evaluator.advice.output("q") == "output='q'"
    np.testing.assert_array_equal(evaluator.evaluate({"x": [1.0, 2.0], "w": 3.0}).value, [3.0, 6.0])


@pytest.mark.parametrize("args", [
    ["batch", "y = w*x + b", "-", "--set", "w=2", "--set", "b=0.5", "--output", "q"],
    ["batch", "y = w*x + b", "-", "--set", "w=2", "--set", "b=0.5", "--output", "q", "--reduce", "sum"],
    ["fit", "y = w*x + b", "--data", "-", "--set", "w=1", "--set", "b=0", "--output", "q", "--steps", "2"],
    ["eval", "y = w*x + b", "--set", "x=1", "--set", "w=2", "--set", "b=0.5", "--output", "q"],
], ids=["batch", "batch-reduce", "fit", "eval"])
def test_an_unknown_output_is_named_as_the_command_line_option(runner, args) -> None:
    result = runner.invoke(main, args, input="x\n1\n")
    assert result.exit_code == 1
    assert result.stderr == ("<expr>: error: --output 'q' is not a variable of the program\n"
                             "  hint: the variables are: w, x, b, y\n")
