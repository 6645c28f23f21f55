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
