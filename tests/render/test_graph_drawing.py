"""render.graph_drawing without Click: a request drawn as DOT, warnings collected in a list, and a
request the program contradicts as an OptionConflict."""

import contextlib

import pytest

from autodiff_cli.execute import evaluate
from autodiff_cli.language import parse
from autodiff_cli.render.graph_drawing import (
    GraphRequest,
    OptionConflict,
    Tell,
    scalar_picture,
    tensor_picture,
)


@contextlib.contextmanager
def no_bar(description):
    yield lambda done, total: None


def request(**changes) -> GraphRequest:
    settings = {"output": None, "level": None, "expand": [], "row": None, "params": None, "rankdir": "LR",
                "precision": 4, "grads": True, "edge_grads": False, "max_nodes": 2000, "fmt": "dot",
                "backend": None, "timeout": 120.0}
    return GraphRequest(**{**settings, **changes})


def test_a_scalar_program_as_dot_names_what_is_not_drawn() -> None:
    program = parse("y = 2*x\nz = 3*w", "<expr>")
    evaluation = evaluate(program, {"x": 1.5, "w": 1.0}, "y")
    warnings = []
    dot = scalar_picture(evaluation, {"x": 1.5, "w": 1.0}, request(), Tell(warnings.extend, no_bar)).decode()
    assert dot.startswith("digraph") and "data 3.0000" in dot and "grad 2.0000" in dot  # y = 2x at 1.5; dy/dx = 2
    assert warnings == ["w, z do not affect y, so they are not drawn"]


def test_a_vector_output_at_the_scalar_level_is_an_option_conflict() -> None:
    program = parse("y = [1, 2]*x\nz = sum(y)", "<expr>")
    with pytest.raises(OptionConflict, match="'y' is not one"):
        tensor_picture(program, {"x": 2.0}, request(level="scalar", output="y"), Tell(lambda w: None, no_bar))
