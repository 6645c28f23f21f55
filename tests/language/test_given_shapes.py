"""language.shapes: the shape a value given for an input must fit (its default's), checked by
``infer`` itself for every caller of the library, not only the command line."""

from __future__ import annotations

import pytest

from autodiff_cli.errors import ShapeError
from autodiff_cli.language import parse
from autodiff_cli.language.shapes import given_shape_mismatch, infer

PROGRAM = "W = [[0], [0]]\nX = zeros([8, 2])\nb = 0\nP = X @ W + b\n"


@pytest.mark.parametrize(("name", "shape", "fits"), [
    ("W", (2, 1), True), ("W", (5, 1), True),   # another size where neither is 1: the ops check it
    ("X", (200, 2), True), ("X", (0, 2), True),
    ("W", (2,), False), ("W", (1, 2), False), ("W", (2, 3), False), ("W", (), False), ("W", (1, 2, 1), False),
    ("X", (1, 2), False), ("X", (8, 1), False),
    ("b", (3, 3), True),  # a number default takes any shape
])
def test_what_fits_a_default_s_shape(name, shape, fits) -> None:
    program = parse(PROGRAM)
    assert (given_shape_mismatch(program, name, shape) is None) == fits


def test_infer_refuses_a_shape_that_would_broadcast_at_the_input(tmp_path) -> None:
    program = parse(PROGRAM, "p.ad")
    with pytest.raises(ShapeError) as raised:
        infer(program, {"W": (2,)})
    error = raised.value
    assert (error.position.line, error.position.column) == (1, 1)
    assert error.message == ("the value given for W has shape [2], but W's default has shape [2, 1] "
                             "(1 axis where it has 2: the value would be broadcast)")
    assert error.hint == "give W a value of shape [2, 1]"
    assert infer(program, {"W": (2, 1), "X": (3, 2)})[-1] == (3, 1)


@pytest.mark.parametrize("text, axes", [
    ("x = [1, 2]\ny = reshape(x, [" + "1, " * 40 + "2])\nL = sum(y)", 41),
    ("x = [1, 2]\ny = reshape(x, [" + "1, " * 31 + "2])\nz = stack([y, y])\nL = sum(z)", 33),
], ids=["reshape", "stack"])
def test_an_op_making_more_axes_than_a_tensor_may_have_is_refused_at_the_op(text, axes) -> None:
    # Past NumPy's 64 axes these were a ValueError or IndexError from inside NumPy, unlocated.
    program = parse(text)
    with pytest.raises(ShapeError, match=f"its result would have {axes} axes, more than a tensor may have") as raised:
        infer(program, {})
    assert raised.value.position.line == text.count("\n")
