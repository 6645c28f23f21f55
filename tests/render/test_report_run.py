"""eval's report reads a ``Run`` (issue 32): one entry per layout, the form chosen by the run.

Expected texts are worked out by hand: W = [[1, 2]], y = sum(W*W) has dy/dW = 2W = [[2, 4]];
forward mode runs one pass per entry of W (2) over the program's two ops (``*``, ``sum``), and
reverse mode one backward pass (y is a number).
"""

from __future__ import annotations

import io
import json

from rich.console import Console

from autodiff_cli.execute.run import run_program
from autodiff_cli.language import parse
from autodiff_cli.render import report

SQUARES = "W = [[1, 2]]\ny = sum(W*W)"


def rendered(renderable, width: int = 120) -> str:
    console = Console(width=width, color_system=None, file=io.StringIO())
    with console.capture() as captured:
        console.print(renderable)
    return "\n".join(line.rstrip() for line in captured.get().splitlines())  # Rich pads a title


def test_forward_mode_s_work_is_one_note_for_every_form() -> None:
    run = run_program(parse(SQUARES), forward=True)
    note = "forward mode: 2 passes (one per input entry) over 2 ops; reverse mode: 1 backward pass over 2 ops"
    assert report.work_note(run) == note
    assert rendered(report.table(run)).splitlines()[-1] == note  # under the table, as for numbers
    document = json.loads("".join(report.chunks(run, "json")))
    assert document["work"] == {"forward": {"passes": 2}, "reverse": {"passes": 1}, "ops": 2}
    assert document["grads"]["W"] == [[2.0, 4.0]]
    assert report.work_note(run_program(parse(SQUARES))) is None  # reverse mode says nothing


def test_the_title_and_header_are_shared_by_both_forms() -> None:
    numbers = run_program(parse("y = 3*x"), {"x": 2.0})
    tensors = run_program(parse("y = 3*x"), {"x": 2.0}, dtype="float32")
    assert rendered(report.table(numbers)).splitlines()[0] == "y = 6.0    (grad = dy/d name)"
    assert rendered(report.table(tensors)).splitlines()[0] == "y = 6.0    (grad = dy/d name, in float32)"
    assert "".join(report.chunks(tensors, "plain")).splitlines()[0] == "# grad = dy/d name, in float32"
    assert json.loads("".join(report.chunks(tensors, "json")))["dtype"] == "float32"


def test_value_text_writes_a_number_and_a_0_d_array_alike() -> None:
    import numpy as np

    assert report.value_text(-7.5) == report.value_text(np.array(-7.5)) == "-7.5"
    assert report.value_text(np.array([1.0, 2.0], dtype=np.float32)) == "[1.0, 2.0]"
    assert report.json_value(np.array([[1.0, float("inf")]])) == [[1.0, "Infinity"]]


# --- a program of numbers has the number layout, whichever executor ran it --------------------------

# clip and where run on the NumPy interpreter (the engine has no such nodes), yet every value is a
# number.  At x = 2: clip(2, 0, 1) = 1 (saturated, slope 0) and where(2 < 1, x, 2x) = 4 (slope 2),
# so y = 5 and dy/dx = 2.
SELECTING = "x = 2.0\ny = clip(x, 0, 1) + where(x < 1, x, 2*x)"


def test_a_run_of_numbers_off_the_engine_has_no_shape_column() -> None:
    run = run_program(parse(SELECTING))
    assert run.backend == "numpy" and run.numbers_only
    assert "".join(report.chunks(run, "plain")) == (
        "name  kind    op  value  grad\n"
        "x     input         2.0   2.0\n"
        "y     output  +     5.0   1.0\n")
    assert "".join(report.chunks(run, "csv")) == "name,kind,op,value,grad\nx,input,,2.0,2.0\ny,output,+,5.0,1.0\n"
    document = json.loads("".join(report.chunks(run, "json")))
    assert document == {"output": "y", "value": 5.0, "values": {"x": 2.0, "y": 5.0},
                        "grads": {"x": 2.0, "y": 1.0}, "kinds": {"x": "input", "y": "output"}, "mode": "reverse"}


def test_both_executors_give_one_number_layout() -> None:
    """Exact arithmetic only (+ - * and constant powers), so both executors give the same bits and
    every byte of every form must agree; ``**2`` is labelled as the engine labels it."""
    from autodiff_cli.execute.run import ENGINE, _on_numpy

    program = parse("x = 1.5\nb = 3\nc = x\nh = x**2 - b\ny = -h * x + c*c\nz = y*3")
    for output in (None, "y"):
        engine = run_program(program, output=output)
        interpreted = _on_numpy(program, {}, output, "reverse", None, True, 0, None)
        assert engine.backend == ENGINE and interpreted.numbers_only
        for form in ("plain", "csv", "json"):
            assert "".join(report.chunks(interpreted, form)) == "".join(report.chunks(engine, form))
        assert rendered(report.table(interpreted)) == rendered(report.table(engine))


def test_a_float32_run_of_numbers_says_its_precision_and_labels_powers_as_the_engine() -> None:
    run = run_program(parse("x = 2.0\ny = x**2"), dtype="float32")
    assert not run.numbers_only  # the float32 layout keeps its precision note and shape column
    text = "".join(report.chunks(run, "plain"))
    assert text.splitlines()[0] == "# grad = dy/d name, in float32"
    assert text.splitlines()[3].split() == ["y", "output", "**2", "[]", "4.0", "1.0"]
