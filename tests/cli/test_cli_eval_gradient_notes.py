"""eval's derivatives say what they are: a gradient that is exactly zero is 0, never -0, and a
gradient asked through an op that passes none on (argmax, a comparison, one_hot) is said to stop
there, at the op's line and column (issue 33: "non-differentiable outputs say so where a gradient
is asked of them").

The expected numbers are worked out by hand: each program is -relu(x) or a product with a
comparison at x = -1, where the derivative is 0 (relu and a comparison are flat there).
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from autodiff_cli.cli import main


def run(runner: CliRunner, *args: str):
    result = runner.invoke(main, ["eval", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


# --- a zero gradient is +0 --------------------------------------------------------------------------

@pytest.mark.parametrize(("program", "mode"), [
    ("y = relu(x)*-1", "forward"),  # the engine's forward pass: 0 * -1
    ("y = -relu(x)", "forward"),
    ("y = where(x > 0, x, 0)*-1", "forward"),  # the NumPy interpreter's JVP
    ("c = x > 0; y = c*-2", "forward"),
])
def test_a_zero_gradient_is_written_as_0_not_minus_0(runner: CliRunner, program: str, mode: str) -> None:
    result = run(runner, "-e", program, "--set", "x=-1", "--mode", mode, "--format", "csv")
    line = next(line for line in result.stdout.splitlines() if line.startswith("x,"))
    assert line.split(",")[-1] == "0.0"


def test_a_zero_entry_of_a_tensor_gradient_is_0(runner: CliRunner) -> None:
    # d sum(-relu(x)) / dx = -[x > 0] = [0, -1] at x = [-1, 2]
    result = run(runner, "-e", "y = sum(-relu(x))", "--set", "x=[-1, 2]", "--format", "csv")
    assert result.stdout.splitlines()[1:3] == ["x,input,,0,-1.0,0.0", "x,input,,1,2.0,-1.0"]


def test_a_zero_gradient_is_0_in_json_and_every_layout(runner: CliRunner) -> None:
    document = json.loads(run(runner, "-e", "c = x > 0; y = c*-2", "--set", "x=-1", "--mode", "forward",
                              "--format", "json").stdout)
    assert json.dumps(document["grads"]["x"]) == "0.0"
    plain = run(runner, "-e", "y = relu(x)*-1", "--set", "x=-1", "--mode", "forward", "--format", "plain").stdout
    assert "-0.0" not in plain.splitlines()[1]  # x's line; y's value -0.0 is a value, not a gradient


def test_a_zero_derivative_along_a_tangent_is_0(runner: CliRunner) -> None:
    for program in ("y = relu(x)*-1", "y = sum(relu(x)*-1)"):
        result = run(runner, "-e", program, "--set", "x=-1", "--tangent", "x=1", "--format", "json")
        assert json.dumps(json.loads(result.stdout)["derivative"]) == "0.0"


# --- a gradient that stops at a flat op says so, where ------------------------------------------------

def notes(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("note: ")]


def test_a_gradient_asked_of_argmax_says_it_stops_there(runner: CliRunner) -> None:
    result = run(runner, "-e", "y = argmax(x)", "--set", "x=[1, 3, 2]", "--format", "csv")
    assert notes(result) == [("note: <expr>:1:5: the gradient of y stops at 'argmax', which passes none to what "
                              "it reads (an index: constant between ties, so not differentiated)")]
    assert "x,input,,0,1.0,0.0" in result.stdout  # the numbers are still shown


def test_a_gradient_through_a_comparison_is_located_at_the_comparison(runner: CliRunner) -> None:
    result = run(runner, "-e", "c = x > 0\ny = c*-2 + x", "--set", "x=-1", "--format", "plain")
    assert notes(result) == [("note: <expr>:1:7: the gradient of y stops at '>', which passes none to what it "
                              "reads (a comparison is flat where it is defined)")]


def test_one_hot_is_noted_only_when_its_labels_are_asked_for(runner: CliRunner) -> None:
    args = ["-e", "z = sum(one_hot(k, 3) * w)", "--set", "k=1", "--set", "w=[1, 2, 3]", "--format", "csv"]
    assert [note.split(": the")[0] for note in notes(run(runner, *args))] == ["note: <expr>:1:9"]
    assert notes(run(runner, *args, "--wrt", "w")) == []  # w's gradient does not pass through one_hot


@pytest.mark.parametrize("program", [
    "y = where(x > 0, x, 0)*1",  # the condition takes no gradient: none is asked through '>'
    "y = relu(x)*-1",
    "y = max(v)",  # max has a gradient (to the largest entry)
])
def test_no_note_where_no_gradient_is_asked_through_a_flat_op(runner: CliRunner, program: str) -> None:
    assert notes(run(runner, "-e", program, "--set", "x=-1", "--set", "v=[1, 2]")) == []


def test_a_tangent_warns_of_an_unused_value_once(runner: CliRunner) -> None:
    result = run(runner, "-e", "y = x*2", "--set", "x=1", "--set", "q=2", "--tangent", "x=1", "--format", "plain")
    assert result.stderr == "warning: 'q' is not used by the program; its value is ignored\n"


def test_a_tangent_through_argmax_is_noted_only_when_it_moves_what_argmax_reads(runner: CliRunner) -> None:
    # d(argmax(x) + sum(z)) along z = [1, 0] is 1, from sum(z) alone: argmax reads x, which does not move
    program = ["-e", "y = argmax(x) + sum(z)", "--set", "x=[1, 3, 2]", "--set", "z=[1, 2]", "--format", "json"]
    along_z = run(runner, *program, "--tangent", "z=[1, 0]")
    assert json.loads(along_z.stdout)["derivative"] == 1.0 and notes(along_z) == []
    along_x = run(runner, *program, "--tangent", "x=[1, 0, 0]")
    assert json.loads(along_x.stdout)["derivative"] == 0.0
    assert [note.split(": the")[0] for note in notes(along_x)] == ["note: <expr>:1:5"]


def test_the_note_names_no_variable_the_program_lacks(runner: CliRunner) -> None:
    # The registry's rule reads "dL/dy = 0 (...)" in the entry's own names; the note once quoted it
    # beside a program with neither an L nor a y.
    result = run(runner, "-e", "out = sum(one_hot(argmax(x), 2) * w)", "--set", "x=[1, 2]", "--set", "w=[3, 4]",
                 "--format", "csv")
    said = notes(result)
    assert said and all("dL/" not in note for note in said), said
    assert "(class labels are not differentiated)" in said[0]
