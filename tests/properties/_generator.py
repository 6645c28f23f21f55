"""The random program generator the property tests share (and benchmarks/bench_diff.py).

One generator draws a random computation over every op of the language and writes
it from the same drawn structure as program TEXT (nested expressions, named
intermediates, `b = a` copies, defaults and --set-style values) and as a list of
nodes (``Gen.ops``) that other oracles rebuild in their own terms (autograd in
test_differential.py, SymPy in test_symbolic.py).

Inputs are in-domain by construction: the generator computes each node's value as it
goes (with math, independently of the engine) and, where an op needs it, first moves
its operand well inside the domain, with an extra node written in the program (see
``apply_op`` and test_differential.py's docstring for the guards).

The choices come from a ``Chooser``: Hypothesis draws in the tests (``cases``, which
shrinks and replays), or ``random.Random`` in scripts (``random_case``).  The leading
underscore keeps pytest from collecting this module.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck
from hypothesis import strategies as st

OPS = ("+", "-", "*", "/", "**", "neg", "**c", "tanh", "exp", "log", "sqrt", "relu", "sigmoid",
       "softplus", "sin", "cos", "abs", "sign", "step", "=", "maximum", "minimum")
UNARY = ("neg", "tanh", "exp", "log", "sqrt", "relu", "sigmoid", "softplus", "sin", "cos", "abs", "sign",
         "step")
BINARY = ("+", "-", "*", "/", "**", "maximum", "minimum")
EXPONENTS = (2.0, 3.0, -1.0, -2.0, 0.5, 1.5, 0.0, 1.0, 2.5)

# Below this, two derivatives are both zero for the comparisons here: a derivative this small is
# the rounding of inputs this small (exp(1e-238) is 1.0, so log(exp(x)) is 0 where SymPy, taking
# x real, simplifies it to x), not a mistake of the differentiator, whose errors scale with the values.
TINY = 1e-200

SETTINGS = {"deadline": None, "derandomize": True, "database": None,
            "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}


def number_text(c: float) -> str:
    text = repr(float(c))
    return f"({text})" if c < 0 else text


@dataclass
class Gen:
    """A computation as a list of nodes, written as program text as it grows."""

    input_values: list[float]
    ops: list[tuple] = field(default_factory=list)  # (op, operand ids, constant) per non-input node
    values: list[float] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)  # how the node is written where it is used
    exprs: list[str] = field(default_factory=list)  # its own expression
    statements: list[str] = field(default_factory=list)
    named: int = 0

    def __post_init__(self) -> None:
        for i, v in enumerate(self.input_values):
            self.ops.append(("input", (), i))
            self.values.append(v)
            self.texts.append(f"x{i}")
            self.exprs.append(f"x{i}")

    def add(self, op: str, args: tuple[int, ...], const: float | None = None) -> int:
        v = [self.values[a] for a in args]
        t = [self.texts[a] for a in args]
        if op == "+c":
            value, expr = v[0] + const, f"{t[0]} + {number_text(const)}"
        elif op == "*c":
            value, expr = v[0] * const, f"{t[0]} * {number_text(const)}"
        elif op == "+":
            value, expr = v[0] + v[1], f"{t[0]} + {t[1]}"
        elif op == "-":
            value, expr = v[0] - v[1], f"{t[0]} - {t[1]}"
        elif op == "*":
            value, expr = v[0] * v[1], f"{t[0]} * {t[1]}"
        elif op == "/":
            value, expr = v[0] / v[1], f"{t[0]} / {t[1]}"
        elif op == "**":
            value, expr = v[0] ** v[1], f"{t[0]} ** {t[1]}"
        elif op in ("maximum", "minimum"):
            value, expr = (max if op == "maximum" else min)(v[0], v[1]), f"{op}({t[0]}, {t[1]})"
        elif op == "**c":
            value, expr = v[0] ** const, f"{t[0]} ** {number_text(const)}"
        elif op == "neg":
            value, expr = -v[0], f"-{t[0]}"
        elif op == "=":
            value, expr = v[0], t[0]
        elif op == "sigmoid":
            value, expr = 1.0 / (1.0 + math.exp(-v[0])), f"sigmoid({t[0]})"
        elif op == "softplus":  # log(1 + e**u), written independently of the engine's form
            value, expr = math.log1p(math.exp(v[0])), f"softplus({t[0]})"
        elif op == "relu":
            value, expr = max(v[0], 0.0), f"relu({t[0]})"
        elif op == "sign":
            value, expr = math.copysign(1.0, v[0]), f"sign({t[0]})"  # guarded away from 0
        elif op == "step":
            value, expr = 1.0 if v[0] > 0 else 0.0, f"step({t[0]})"
        else:
            value, expr = getattr(math, "fabs" if op == "abs" else op)(v[0]), f"{op}({t[0]})"
        self.ops.append((op, args, const))
        self.values.append(value)
        self.exprs.append(expr)
        self.texts.append(f"({expr})")
        return len(self.ops) - 1

    def name(self, node: int) -> None:
        """Give a node a statement of its own; later uses refer to it by name."""
        if self.ops[node][0] == "input" or self.texts[node].startswith("v"):
            return
        self.named += 1
        name = f"v{self.named}"
        self.statements.append(f"{name} = {self.exprs[node]}")
        self.texts[node] = name

    # guards: each returns a node with the same role whose value is safely in range

    def at_least(self, node: int, low: float) -> int:
        if self.values[node] >= low:
            return node
        return self.add("+c", (self.add("*", (node, node)),), 0.5)

    def away_from_zero(self, node: int, margin: float) -> int:
        v = self.values[node]
        if abs(v) >= margin:
            return node
        return self.add("+c", (node,), -1.0 if v < 0 else 1.0)

    def at_most(self, node: int, bound: float) -> int:
        v = abs(self.values[node])
        if v <= bound:
            return node
        k = math.ceil(math.log2(v / bound))
        return self.add("*c", (node,), 2.0**-k)

    def text(self) -> str:
        return "\n".join(self.statements) + "\n"


def apply_op(gen: Gen, op: str, pick: Any, last: bool) -> int:
    """Add ``op`` to ``gen`` on operands chosen by ``pick``, guarding its domain first.

    A large result is scaled down for the ops that may use it, but not when it is
    the output (``last``), so that the op drawn for the output stays there.
    """
    if op in BINARY:
        a, b = pick(), pick()
        if op == "/":
            b = gen.away_from_zero(b, 0.5)
        elif op in ("maximum", "minimum") and abs(gen.values[a] - gen.values[b]) < 0.25:
            # away from a tie, where the derivative is a convention; moved away from 0, so that the
            # shift never cancels one before it ((x - 1) + 1 at x = 1e-7 rounds one way evaluated,
            # another simplified)
            b = gen.add("+c", (b,), 1.0 if gen.values[b] >= 0 else -1.0)
        elif op == "**":
            a = gen.at_most(gen.at_least(a, 0.5), 100.0)
            log_base = abs(math.log(gen.values[a])) or 1.0
            b = gen.at_most(b, 4.0 / log_base)
        node = gen.add(op, (a, b))
    elif op == "**c":
        a, c = pick(), pick.exponent()
        if not c.is_integer() or c < 0:
            a = gen.at_least(a, 0.5)
        node = gen.add("**c", (gen.at_most(a, 4.0),), c)
    elif op == "=":
        a = pick()
        gen.name(a)  # a copy is `b = a` between two names
        node = gen.add("=", (a,))
        gen.name(node)
    else:
        a = pick()
        if op in ("log", "sqrt"):
            a = gen.at_least(a, 0.5)
        elif op in ("relu", "abs", "sign", "step"):
            a = gen.away_from_zero(a, 0.25)
        elif op in ("tanh", "sigmoid", "softplus"):
            a = gen.at_most(a, 3.0)
        elif op == "exp":
            a = gen.at_most(a, 4.0)
        elif op in ("sin", "cos"):
            a = gen.at_most(a, 10.0)
        node = gen.add(op, (a,))
    return node if last else gen.at_most(node, 100.0)


@dataclass
class Case:
    text: str
    values: dict[str, float]  # given as --set would give them (the others are defaults in the text)
    inputs: list[float]  # every input's value, x0, x1, ...
    gen: Gen


class Chooser:
    """Where the generator's choices come from."""

    def integer(self, low: int, high: int) -> int:
        raise NotImplementedError

    def floating(self, low: float, high: float) -> float:
        raise NotImplementedError

    def sample(self, options: Sequence[Any]) -> Any:
        raise NotImplementedError

    def boolean(self) -> bool:
        raise NotImplementedError


class _Drawn(Chooser):
    def __init__(self, draw: Any) -> None:
        self.draw = draw

    def integer(self, low: int, high: int) -> int:
        return self.draw(st.integers(low, high))

    def floating(self, low: float, high: float) -> float:
        return self.draw(st.floats(low, high, allow_nan=False, allow_subnormal=False))

    def sample(self, options: Sequence[Any]) -> Any:
        return self.draw(st.sampled_from(options))

    def boolean(self) -> bool:
        return self.draw(st.booleans())


class Seeded(Chooser):
    """Choices from ``random.Random(seed)``: the same programs on every run, without Hypothesis."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def integer(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)

    def floating(self, low: float, high: float) -> float:
        return self.rng.uniform(low, high)

    def sample(self, options: Sequence[Any]) -> Any:
        return self.rng.choice(list(options))

    def boolean(self) -> bool:
        return self.rng.random() < 0.5


def build_case(
    choose: Chooser, root_op: str | None = None, n_ops: tuple[int, int] = (1, 7),
    n_inputs: tuple[int, int] = (1, 4), ops: Sequence[str] = OPS, recent: int | None = None,
) -> Case:
    """A random program of ``n_ops`` drawn ops (plus the guards they need) over ``n_inputs`` inputs.

    Operands are any earlier node, or with ``recent`` one of the last ``recent`` nodes,
    which makes deep programs whose values are shared by the steps that follow.
    """
    count = choose.integer(*n_inputs)
    inputs = [choose.floating(-2.0, 2.0) for _ in range(count)]
    gen = Gen(inputs)

    class Pick:
        def __call__(self) -> int:
            first = 0 if recent is None else max(0, len(gen.ops) - recent)
            return choose.integer(first, len(gen.ops) - 1)  # an earlier node: shared subexpressions

        def exponent(self) -> float:
            return choose.sample(EXPONENTS)

    pick = Pick()
    total = choose.integer(*n_ops)
    for k in range(total):
        last = k == total - 1
        op = root_op if (root_op is not None and last) else choose.sample(ops)
        node = apply_op(gen, op, pick, last)
        if choose.boolean():
            gen.name(node)
    root = len(gen.ops) - 1
    assert root_op is None or gen.ops[root][0] == root_op
    if not gen.texts[root].startswith("v"):
        if choose.boolean():
            gen.statements.append(f"out = {gen.exprs[root]}")
        else:
            # A bare last expression: the output is 'output'.  One that starts with a sign goes in
            # parentheses: on a line of its own it would read as the rest of the line above.
            bare = gen.exprs[root]
            gen.statements.append(f"({bare})" if bare[:1] in "+-" else bare)
    # Inputs either get a default in the program or a value from outside, like --set.
    text = gen.text()
    defaults, values = [], {}
    for i, v in enumerate(inputs):
        if f"x{i}" not in text:
            continue
        if choose.boolean():
            defaults.append(f"x{i} = {v!r}")
        else:
            values[f"x{i}"] = v
    return Case("\n".join(defaults + [text]), values, inputs, gen)


@st.composite
def cases(draw: Any, root_op: str | None = None) -> Case:
    """Hypothesis strategy: a random program of 1 to 7 drawn ops (see ``build_case``)."""
    return build_case(_Drawn(draw), root_op)


def random_case(seed: int, n_ops: int, n_inputs: int = 4, ops: Sequence[str] = OPS,
                recent: int | None = None) -> Case:
    """A program of exactly ``n_ops`` drawn ops from a seed (for scripts: no Hypothesis involved)."""
    return build_case(Seeded(seed), n_ops=(n_ops, n_ops), n_inputs=(n_inputs, n_inputs), ops=ops,
                      recent=recent)


# --- the error bounds the oracles share ------------------------------------------------------


def absolute_gradients(root: Any) -> dict[Any, float]:
    """Sum over paths of |product of local derivatives|, per node (backprop with |local|).

    A gradient's rounding error is bounded by a few ulps times this: it equals |gradient|
    when no paths cancel, and is larger when they do.
    """
    from autodiff_cli.engine import topological_order

    order = topological_order(root)
    total = {node: 0.0 for node in order}
    total[root] = 1.0
    for node in reversed(order):
        for child, local in zip(node._prev, node._local):
            total[child] += abs(local) * total[node]
    return total


def close(got: float, want: float, scale: float, rel: float) -> bool:
    """|got - want| <= rel * max(scale, |want|): ``scale`` is the size of what cancelled."""
    return abs(got - want) <= rel * max(scale, abs(want)) + TINY
