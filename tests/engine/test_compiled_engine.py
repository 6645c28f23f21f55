"""The compiled engine (``_native``, built by setup.py from ``native_source.py``) against the
pure-Python ``Value`` it is made from: the same numbers to the bit, the same errors, the same API.

Where the package was installed without a C compiler there is no compiled engine: these tests
skip and say so, except in CI (``AUTODIFF_REQUIRE_COMPILED=1``), where its absence fails.
The rest of the suite runs with whichever engine ``Value`` is; ``test_engine_tests_pass_on_the
_other_engine`` runs tests/engine once more with the pure-Python one.
"""

from __future__ import annotations

import copy
import math
import os
import pickle
import random
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from autodiff_cli.engine import native_source, value
from autodiff_cli.engine.grad_mode import no_grad
from autodiff_cli.engine.ops import FUNCTIONS, DomainError

ROOT = Path(__file__).resolve().parents[2]

compiled_only = pytest.mark.skipif(not value.COMPILED, reason="the compiled engine is not built here "
                                   "(no C compiler at install time, or AUTODIFF_ENGINE=python)")

# Operands that reach every branch of the kernels: zeros of both signs, the domains' edges,
# exp's overflow threshold, the float range's ends, infinities and NaN.
EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, 3.0, -2.5, 1e-300, -1e-300, 1e300, -1e300, 709.0, 710.0,
         math.inf, -math.inf, math.nan, 1e-8, 100.0]
BINARY = ["+", "-", "*", "/", "**"]
UNARY = ["neg", *FUNCTIONS]


def test_ci_builds_the_compiled_engine() -> None:
    # CI has a C compiler: a build that fell back to pure Python there is a broken build.
    if os.environ.get("AUTODIFF_REQUIRE_COMPILED", "") not in ("", "0"):
        assert value.COMPILED, "AUTODIFF_REQUIRE_COMPILED is set but Value is the pure-Python engine"
    assert (value.Value is value.PythonValue) == (not value.COMPILED)
    assert value.COMPILED == (value.Value.__module__ == native_source.MODULE)


@compiled_only
def test_the_compiled_engine_is_built_from_todays_op_table() -> None:
    # A build made before ops.py or native_source.py last changed would be another engine.
    from autodiff_cli.engine import _native

    assert _native.SOURCE_DIGEST == native_source.source_digest(), "rebuild: python setup.py build_ext --inplace"


def _bits(x: float) -> bytes:
    return b"nan" if math.isnan(x) else struct.pack("<d", x)


def _outcome(apply: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "ok", apply()
    except (DomainError, ArithmeticError, ValueError, TypeError) as error:
        return "error", (type(error).__name__, str(error), getattr(error, "op", None))


def _run_program(engine: type, seed: int) -> list[Any]:
    """Apply a random sequence of operations through the public API of ``engine``; what each gave."""
    rng = random.Random(seed)
    nodes = [engine(rng.choice(EDGES) if rng.random() < 0.5 else rng.uniform(-3, 3)) for _ in range(3)]
    seen: list[Any] = []
    for _ in range(rng.randint(5, 40)):
        x = rng.choice(nodes)
        kind = rng.random()
        if kind < 0.45:
            op, y = rng.choice(BINARY), rng.choice(nodes)
        elif kind < 0.6:  # a number operand, on either side
            op, y = rng.choice(BINARY), rng.choice(EDGES)
        else:
            op, y = rng.choice(UNARY), None
        reflected = y is not None and not isinstance(y, engine) and rng.random() < 0.5

        def apply(op: str = op, x: Any = x, y: Any = y, reflected: bool = reflected) -> Any:
            if y is None:
                return -x if op == "neg" else getattr(x, op)()
            a, b = (y, x) if reflected else (x, y)
            return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a / b,
                    "**": lambda: a ** b}[op]()

        status, result = _outcome(apply)
        if status == "ok":
            nodes.append(result)
            seen.append((result._op, _bits(result.data), tuple(map(_bits, result._local)), len(result._prev)))
        else:
            seen.append(result)
    root = nodes[-1]
    seen.append(_outcome(root.backward))
    seen.append([_bits(node.grad) for node in nodes])
    return seen


@compiled_only
@pytest.mark.parametrize("block", range(10), ids=lambda block: f"seeds-{block * 300}-{block * 300 + 299}")
def test_random_programs_give_the_same_bits_and_errors_in_both_engines(block: int) -> None:
    for seed in range(block * 300, block * 300 + 300):
        ours, reference = _run_program(value.Value, seed), _run_program(value.PythonValue, seed)
        assert ours == reference, f"seed {seed}"


def test_random_programs_reach_every_op_and_many_errors() -> None:
    # The comparison above is only as good as what the programs do: check they do it.
    seen = [step for seed in range(3000) for step in _run_program(value.PythonValue, seed)]
    ops_made = {step[0] for step in seen if isinstance(step, tuple) and len(step) == 4}
    errors = {step[0] for step in seen if isinstance(step, tuple) and len(step) == 3}
    assert {"+", "-", "*", "/", "**", "**2", "neg", *FUNCTIONS} <= ops_made
    assert {"DomainError", "DivisionByZero"} <= errors


def _shared_graph(engine: type, seed: int) -> Any:
    """A random graph with heavy reuse (each node feeds many), the same in every engine."""
    rng = random.Random(seed)
    nodes = [engine(rng.uniform(0.5, 1.5)) for _ in range(4)]
    for _ in range(200):
        x, y = rng.choice(nodes), rng.choice(nodes[-8:])
        kind = rng.randrange(4)
        nodes.append(x * y if kind == 0 else x + y if kind == 1 else (x - y).tanh() if kind == 2 else x * 0.5)
    return nodes[-1]


@compiled_only
@pytest.mark.parametrize("seed", range(20))
def test_the_compiled_walks_visit_nodes_in_the_same_order(seed: int) -> None:
    # graph.py hands compiled nodes to the compiled module's walks; the order decides every
    # numbering shown to users and the order gradients are added in.
    from autodiff_cli.engine import graph

    def described(order: list[Any]) -> list[tuple[str, bytes]]:
        return [(node._op, _bits(node.data)) for node in order]

    reference = described(graph.topological_order(_shared_graph(value.PythonValue, seed)))
    root = _shared_graph(value.Value, seed)
    assert described(graph.topological_order(root)) == reference
    assert described(graph.new_graph_order(root)) == reference
    assert all(node.grad == 0.0 for node in graph.topological_order(root))  # the marks were undone
    progress: list[tuple[int, int]] = []
    order = graph.topological_order(root)
    graph.backpropagate(order, lambda done, total: progress.append((done, total)))
    python_root = _shared_graph(value.PythonValue, seed)
    python_order = graph.topological_order(python_root)
    graph.backpropagate(python_order)
    assert [_bits(node.grad) for node in order] == [_bits(node.grad) for node in python_order]
    assert progress == [(len(order), len(order))]


@compiled_only
@pytest.mark.parametrize("make", [
    lambda V: repr(V(2.5, label="w")),
    lambda V: repr(V(3) * 2),
    lambda V: (V(2) ** 3).exponent,
    lambda V: (V(2) ** -0.5)._op,
    lambda V: (2 ** V(3))._op,
    lambda V: (V(1.0, (V(2.0),), "f", local=(4.0,)))._local,
    lambda V: V(1.0, (V(2.0), V(3.0)), "g")._local,
    lambda V: type(V(True).data).__name__,
    lambda V: V(2) + "3",
    lambda V: V("1"),
    lambda V: V(1.0, (V(1.0),) * 3),
    lambda V: V(1.0, (V(1.0),), local=(1.0, 2.0)),
    lambda V: setattr(V(1.0), "_backward", lambda: None),
    lambda V: V(1.0, [V(2.0)], "f", local=[3.0])._local,
    lambda V: V(1.0, (V(2.0) for _ in range(2)), "g", local=iter([1.0, 2.0]))._local,
    lambda V: repr(V(1.0, label=None)),
    lambda V: V(1.0, (3.0,), "f"),
    lambda V: V(1.0, label=5),
], ids=["repr-label", "repr-int", "exponent", "pow-op", "rpow", "local", "local-nan", "bool-data",
        "str-operand", "str-data", "three-operands", "local-length", "set-backward", "list-operands",
        "generator-operands", "label-none", "number-operand", "int-label"])
def test_the_api_behaves_the_same_in_both_engines(make: Callable[[type], Any]) -> None:
    def outcome(engine: type) -> Any:
        try:
            return "ok", make(engine)
        except (TypeError, ValueError, AttributeError) as error:
            return type(error).__name__, str(error).replace("PythonValue", "Value")

    def comparable(result: Any) -> Any:  # NaNs compare by being NaN
        if isinstance(result, tuple):
            return tuple(comparable(item) for item in result)
        return "nan" if isinstance(result, float) and math.isnan(result) else result

    assert comparable(outcome(value.Value)) == comparable(outcome(value.PythonValue))


@pytest.mark.parametrize("engine", ["Value", "PythonValue"])
def test_no_grad_makes_leaves_and_the_interpreter_still_records(engine: str) -> None:
    from autodiff_cli.execute import evaluate
    from autodiff_cli.language import parse

    x = getattr(value, engine)(2.0)
    with no_grad():
        y = x * x + x ** 2 + x.tanh()
        # The interpreter's power node was a leaf here, and dy/dx came out as 6.
        evaluation = evaluate(parse("y = x**2 + x*x", "<test>"), {"x": 3.0})
        with pytest.raises(TypeError):
            x + "3"  # was 5.0 in no_grad, and a TypeError outside it
    assert y._prev == () and y.data == 8.0 + math.tanh(2.0)
    assert evaluation.grads()["x"] == 12.0
    assert (x * x)._prev == (x, x)  # recording again after the block


@compiled_only
def test_engine_tests_pass_on_the_other_engine() -> None:
    # The rest of the suite ran on the compiled engine; the pure-Python one is the fallback
    # wherever there is no C compiler, so its own tests run too.
    environment = {**os.environ, "AUTODIFF_ENGINE": "python"}
    environment.pop("AUTODIFF_REQUIRE_COMPILED", None)  # the pure engine is what is asked for here
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/engine", "tests/execute/test_scalar.py",
         "-k", "not test_engine_tests_pass_on_the_other_engine"],
        cwd=ROOT, env=environment, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and " failed" not in result.stdout


class NamedValue(value.Value):  # a user's subclass, at module level so that pickle finds it
    pass


class NamedPythonValue(value.PythonValue):
    __slots__ = ("tag",)


@pytest.mark.parametrize("copier", [copy.copy, copy.deepcopy, lambda node: pickle.loads(pickle.dumps(node))],
                         ids=["copy", "deepcopy", "pickle"])
@pytest.mark.parametrize("cls", [NamedValue, NamedPythonValue], ids=["Value", "PythonValue"])
def test_a_subclass_keeps_its_own_attributes_through_copies(cls: type, copier: Callable[[Any], Any]) -> None:
    node = cls(2.0, label="w")
    node.tag = "kept"  # in __dict__ for NamedValue, in a slot for NamedPythonValue
    copied = copier(node)
    assert type(copied) is cls and copied.tag == "kept" and (copied.data, copied.label) == (2.0, "w")


@compiled_only
def test_a_graph_pickled_by_either_engine_loads_in_the_other() -> None:
    def saved(engine: type) -> bytes:
        a = engine(2.0, label="a")
        loss = (a * 3.0).tanh()
        loss.backward()
        return pickle.dumps(loss)

    loaded = pickle.loads(saved(value.PythonValue))  # a pure-Python install's pickle, loaded here
    assert type(loaded) is value.Value and type(loaded._prev[0]._prev[0]) is value.Value
    assert (loaded.data, loaded._prev[0]._prev[0].label, loaded._prev[0]._prev[0].grad) == (
        math.tanh(6.0), "a", 3.0 * (1.0 - math.tanh(6.0) ** 2))
    # The loaded nodes walk like the saved ones: a second backward() accumulates as it would have.
    loaded.backward()
    a = value.Value(2.0)
    again = (a * 3.0).tanh()
    again.backward()
    again.backward()
    assert loaded._prev[0]._prev[0].grad == a.grad
    # ... and this one's, loaded by the pure engine in another process.
    script = ("import pickle, sys; from autodiff_cli.engine.value import Value, COMPILED; "
              "node = pickle.loads(sys.stdin.buffer.read()); "
              "print(COMPILED, type(node) is Value, repr(node._prev[0]._prev[0]))")
    result = subprocess.run([sys.executable, "-c", script], input=saved(value.Value), capture_output=True,
                            env={**os.environ, "AUTODIFF_ENGINE": "python"}, check=True)
    grad = 3.0 * (1.0 - math.tanh(6.0) ** 2)
    assert result.stdout.decode().split(" ", 2) == ["False", "True", f"Value(data=2.0, grad={grad!r}, label='a')\n"]


def test_a_broken_compiled_build_falls_back_with_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(name: str) -> Any:
        raise ImportError("libsomething.so: cannot open shared object file")

    monkeypatch.delenv("AUTODIFF_ENGINE", raising=False)
    monkeypatch.setattr(value.importlib.util, "find_spec", lambda name: type("Spec", (), {"origin": "x.so"})())
    monkeypatch.setattr(value.importlib, "import_module", broken)
    with pytest.warns(RuntimeWarning, match="could not be loaded .*libsomething.*pure-Python engine"):
        assert value._compiled_value() is None


def test_an_optimizer_step_leaves_floats(monkeypatch: pytest.MonkeyPatch) -> None:
    # The compiled Value stores a float whatever is assigned; the pure one stores what it is
    # given, so an np.float32 learning rate made its parameters float32 (and its results differ).
    np = pytest.importorskip("numpy")
    from autodiff_cli.engine.optim import SGD

    w = value.Value(0.3)
    optimizer = SGD([w], lr=np.float32(0.1))
    loss = (w * 3.7 - 1.1) ** 2
    loss.backward()
    expected = float(np.float32(0.3) - np.float32(0.1) * np.float32(w.grad))  # the rule's own arithmetic
    optimizer.step()
    assert type(w.data) is float and w.data == expected


@pytest.mark.parametrize("call, expected", [
    (lambda: value.METHODS["+"](value.Value(3.0), 2.0), ("+", 5.0)),
    (lambda: value.METHODS["*"](value.Value(3.0), 2), ("*", 6.0)),
    (lambda: value.METHODS["**"](value.Value(3.0), 2.0), ("**2", 9.0)),
    (lambda: value.METHODS["**"](value.Value(3.0), value.Value(2.0)), ("**", 9.0)),
    (lambda: value.METHODS["-"](value.Value(3.0), "x"), NotImplemented),
], ids=["add-number", "mul-int", "pow-number", "pow-value", "sub-text"])
def test_the_interpreters_table_takes_what_the_methods_take(call: Callable[[], Any], expected: Any) -> None:
    # METHODS was the pure class's methods; in the compiled build it holds functions, which
    # refused a number operand.
    result = call()
    assert result is NotImplemented if expected is NotImplemented else (result._op, result.data) == expected


@pytest.mark.parametrize("engine", ["Value", "PythonValue"])
@pytest.mark.parametrize("field", ["_a", "_da", "data", "grad", "_autodiff_walk"])
def test_a_subclass_cannot_redefine_a_nodes_fields(engine: str, field: str) -> None:
    # The compiled walks read the fields directly and would ignore a property: both builds refuse.
    with pytest.raises(TypeError, match=f"redefines {field} of Value"):
        type("Lazy", (getattr(value, engine),), {field: property(lambda self: None)})


@pytest.mark.parametrize("engine", ["Value", "PythonValue"])
def test_a_subclass_may_use_other_names(engine: str) -> None:
    class Tagged(getattr(value, engine)):  # type: ignore[misc]
        def __init__(self, data: float, walk: str) -> None:
            super().__init__(data)
            self._walk = walk  # a name the compiled engine once used for its marks

    a = Tagged(2.0, "north")
    (a * a).backward()
    assert (a._walk, a.grad) == ("north", 4.0)


@pytest.mark.parametrize("engine", ["Value", "PythonValue"])
def test_a_pickle_from_before_loads(engine: str) -> None:
    # Before reduce_node, pickle wrote the slotted class's default: the class, then BUILD with
    # (None, {slot: value}); loading makes the object with cls.__new__ and calls __setstate__.
    cls = getattr(value, engine)
    leaf = {"data": 2.0, "grad": 6.0, "label": "a", "_op": "", "_a": None, "_da": 0.0, "_b": None, "_db": 0.0}
    node = cls.__new__(cls)
    node.__setstate__((None, leaf))
    assert type(node) is cls and repr(node) == "Value(data=2.0, grad=6.0, label='a')"
    assert (node * 3.0).data == 6.0


def test_a_compiled_engine_older_than_the_op_table_is_not_used(monkeypatch) -> None:
    # A build made before an op joined the table once failed with KeyError on the first program
    # that used the op; it is set aside, with a warning that says how to rebuild.
    import importlib
    import types

    stale = types.SimpleNamespace(Value=object(), RECORDING={name: None for name in list(value.CALLS)[1:]})
    real_import = importlib.import_module
    monkeypatch.setattr(value.importlib.util, "find_spec", lambda name: types.SimpleNamespace(origin="_native.so"))
    monkeypatch.setattr(value.importlib, "import_module",
                        lambda name, *rest: stale if name.endswith("._native") else real_import(name, *rest))
    monkeypatch.delenv("AUTODIFF_ENGINE", raising=False)
    with pytest.warns(RuntimeWarning, match=f"older than the op table .*lacks {list(value.CALLS)[0]}"):
        assert value._compiled_value() is None
