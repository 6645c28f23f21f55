"""The op table is complete and consistent: every interpreter and every document reads it."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from autodiff_cli.engine import DERIVATIVE_RULES, FUNCTIONS, OPS, Value
from autodiff_cli.engine.value import METHODS

LANGUAGE_PAGE = Path(__file__).resolve().parents[2] / "docs" / "language.md"


@pytest.mark.parametrize("name", list(OPS), ids=list(OPS))
def test_row_is_complete(name: str) -> None:
    op = OPS[name]
    assert op.name == name
    assert len(op.rule) == op.arity, "one rule per operand"
    placeholders = set(re.findall(r"{(\w+)}", op.written))
    assert placeholders == ({"x", "y"} if op.arity == 2 else {"x", "c"} if name == "**c" else {"x"})
    # The kernel returns the value and one local derivative per operand.
    args = (1.5, 0.5)[: op.arity] if name != "**c" else (1.5, 2.0)
    result = op.scalar(*args)
    assert len(result) == 1 + op.arity and all(isinstance(v, float) for v in result)
    assert DERIVATIVE_RULES[name] == op.rule


@pytest.mark.parametrize("name", list(OPS), ids=list(OPS))
def test_every_op_is_reachable_from_value(name: str) -> None:
    operands = (Value(0.5), 3.0 if name == "**c" else Value(1.5))[:2 if name == "**c" else OPS[name].arity]
    node = METHODS[name](*operands)
    assert node._op == ("**3" if name == "**c" else name) and node._prev == operands[:1 if name == "**c" else 2]
    if name in FUNCTIONS:  # and as a method of the same name, which makes the same node
        same = getattr(operands[0], name)()
        assert (same._op, same.data, same._local) == (node._op, node.data, node._local)


def test_functions_are_the_ops_written_as_calls() -> None:
    assert list(FUNCTIONS) == ["tanh", "exp", "log", "sqrt", "relu", "sigmoid", "softplus", "sin", "cos", "abs",
                               "sign", "step"]
    assert all(op.arity == 1 for op in FUNCTIONS.values())


def test_the_language_page_lists_every_function() -> None:
    line = next(line for line in LANGUAGE_PAGE.read_text().splitlines() if line.startswith("- Functions:"))
    assert re.search(r"`([a-z ]+)`", line).group(1).split() == list(FUNCTIONS)


@pytest.mark.parametrize(
    "name, args, message",
    [("log", (0.0,), "log of 0"), ("sqrt", (-1.0,), "sqrt of -1"), ("/", (1.0, 0.0), "division by zero"),
     ("**", (-2.0, 0.5), "negative base"), ("exp", (1000.0,), "overflows")],
    ids=["log", "sqrt", "div", "pow", "exp"],
)
def test_domain_errors_and_hints(name: str, args: tuple[float, ...], message: str) -> None:
    from autodiff_cli.engine import DomainError

    with pytest.raises(DomainError, match=message) as raised:
        OPS[name].scalar(*args)
    op = OPS[raised.value.op]
    assert (op.overflow_hint if raised.value.overflow else op.hint) is not None


def test_kink_conventions_are_pytorchs() -> None:
    assert OPS["relu"].scalar(0.0) == (0.0, 0.0)
    assert OPS["abs"].scalar(0.0) == (0.0, 0.0)
    assert OPS["sqrt"].scalar(0.0) == (0.0, math.inf)


@pytest.mark.parametrize("name", ["abs", "sign", "step", "relu"])
def test_no_negative_zero_at_zero(name: str) -> None:
    # A -0.0 would print as "-0.0" in a report; the kinks give plain zeros on both zeros.
    for x in (0.0, -0.0):
        for number in OPS[name].scalar(x)[1:] + ((OPS[name].scalar(x)[0],) if name != "abs" else ()):
            assert math.copysign(1.0, number) == 1.0, (name, x, OPS[name].scalar(x))


def test_type_checkers_see_every_function_without_a_second_list() -> None:
    # The methods are made from the table at import. Type checkers see them through one typed
    # __getattr__ under TYPE_CHECKING, so a function added to the table is declared nowhere else.
    import ast
    from pathlib import Path

    import autodiff_cli
    from autodiff_cli.engine import tensor, value
    from autodiff_cli.engine.ops import FUNCTIONS

    for module, class_name in ((value, "Value"), (tensor, "Tensor")):
        tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
        cls = next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == class_name)
        block = next(node for node in cls.body
                     if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
        assert [node.name for node in block.body if isinstance(node, ast.FunctionDef)] == ["__getattr__"]
        made = getattr(module, class_name)
        assert all(callable(getattr(made, name, None)) for name in FUNCTIONS), class_name
    assert (Path(autodiff_cli.__file__).parent / "py.typed").is_file()  # PEP 561: the hints are for users
