"""Differential tests: random programs in our language against HIPS autograd, in float64.

One generator draws a random computation over every op (the keys of
DERIVATIVE_RULES) and writes it twice from the same drawn structure: as program
TEXT in our language (nested expressions, named intermediates, `b = a` copies,
defaults and --set-style values), and as an autograd.numpy function.  For each
program we check that

* the value and every input's gradient (reverse mode, through the parser and the
  evaluator) agree with autograd;
* forward mode gives the same gradients as reverse mode;
* `check` (finite differences) passes.

Inputs are in-domain by construction.  The generator computes each node's value
as it goes (with math, independently of the engine) and, where an op needs it,
first moves its operand well inside the domain and away from the places where
an op is ill-conditioned, with an extra node written in the program:

* log, sqrt, a fractional or negative constant exponent, the base of x**y:
  u -> u*u + 0.5 when u < 0.5;
* the divisor of /: u -> u +- 1 when |u| < 0.5;  relu, abs: u -> u + 1 when |u| < 0.25
  (away from the kink by far more than any finite-difference step moves u);
* tanh and sigmoid (|u| <= 3), exp (|u| <= 4), sin and cos (|u| <= 10), the
  exponent of x**y (|y ln x| <= 4) and any value over 100: u -> u * 2**-k,
  which is exact in binary floating point.

Tolerances.  Where the two libraries use the same formula (+ - * /, exp, log,
sin, cos) results are bit-identical or within an ulp; elsewhere they use
different but equal formulas (tanh' = 1 - tanh**2 against 1/cosh**2, our
overflow-safe sigmoid against 1/(1 + exp(-x)), d(x/y)/dy = -(x/y)/y against
-x/y**2), each a few ulps apart inside the guarded ranges above.  Those
differences are then summed along every path to the output, so a gradient's
error is bounded by a few ulps times the sum over paths of |product of local
derivatives| -- the "absolute gradient" A, which equals |gradient| when no paths
cancel and is larger when they do.  We therefore require

    |ours - autograd| <= 1e-12 * max(A, |autograd|) + 1e-300      (gradients)
    |ours - autograd| <= 1e-12 * max(V, |autograd|) + 1e-300      (value)

where V is the same bound for the value (sum over nodes of A(node) * |node|).
1e-12 is ~4500 ulps: room for ~10 ops each a few ulps off, times the
conditioning of their derivative formulas (<= ~100 inside the guarded ranges),
yet far below any real error in a derivative rule, which is O(1).  Forward and
reverse mode sum the very same products in different orders, so they must agree
to 1e-13 * A.

Examples: 2000 mixed programs plus 100 for each of the 17 ops forced at the output,
3700 in all; derandomized so CI runs the same programs every time.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autodiff_cli.analysis.check import check_gradients
from autodiff_cli.engine import DERIVATIVE_RULES, topological_order
from autodiff_cli.execute import forward_gradients
from autodiff_cli.execute import evaluate
from autodiff_cli.language import parse

OPS = ("+", "-", "*", "/", "**", "neg", "**c", "tanh", "exp", "log", "sqrt", "relu", "sigmoid",
       "sin", "cos", "abs", "sign", "step", "=")
UNARY = ("neg", "tanh", "exp", "log", "sqrt", "relu", "sigmoid", "sin", "cos", "abs", "sign", "step")
BINARY = ("+", "-", "*", "/", "**")
EXPONENTS = (2.0, 3.0, -1.0, -2.0, 0.5, 1.5, 0.0, 1.0, 2.5)

REL = 1e-12
FORWARD_REL = 1e-13
TINY = 1e-300

SETTINGS = {"deadline": None, "derandomize": True, "database": None,
            "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}


def test_ops_cover_every_derivative_rule() -> None:
    # A new op in the engine must be added to the generator, or this fails.
    assert set(OPS) == set(DERIVATIVE_RULES)


# --- the generator -------------------------------------------------------------------------


def _num(c: float) -> str:
    text = repr(float(c))
    return f"({text})" if c < 0 else text


@dataclass
class Gen:
    """A computation as a list of nodes, each written both as text and as autograd code."""

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
            value, expr = v[0] + const, f"{t[0]} + {_num(const)}"
        elif op == "*c":
            value, expr = v[0] * const, f"{t[0]} * {_num(const)}"
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
        elif op == "**c":
            value, expr = v[0] ** const, f"{t[0]} ** {_num(const)}"
        elif op == "neg":
            value, expr = -v[0], f"-{t[0]}"
        elif op == "=":
            value, expr = v[0], t[0]
        elif op == "sigmoid":
            value, expr = 1.0 / (1.0 + math.exp(-v[0])), f"sigmoid({t[0]})"
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

    # autograd's side, from the same list of nodes

    def autograd_function(self):
        ops = list(self.ops)

        def f(xs):
            vals = []
            for op, args, const in ops:
                a = [vals[i] for i in args]
                if op == "input":
                    vals.append(xs[const])
                elif op == "+c":
                    vals.append(a[0] + const)
                elif op == "*c":
                    vals.append(a[0] * const)
                elif op == "+":
                    vals.append(a[0] + a[1])
                elif op == "-":
                    vals.append(a[0] - a[1])
                elif op == "*":
                    vals.append(a[0] * a[1])
                elif op == "/":
                    vals.append(a[0] / a[1])
                elif op == "**":
                    vals.append(a[0] ** a[1])
                elif op == "**c":
                    vals.append(a[0] ** const)
                elif op == "neg":
                    vals.append(-a[0])
                elif op == "=":
                    vals.append(a[0])
                elif op == "relu":
                    vals.append(anp.maximum(a[0], 0.0))
                elif op == "sigmoid":
                    vals.append(1.0 / (1.0 + anp.exp(-a[0])))
                elif op == "step":
                    vals.append(anp.where(a[0] > 0, 1.0, 0.0) + 0.0 * a[0])
                else:
                    vals.append(getattr(anp, op)(a[0]))
            return vals[-1]

        return f


def _apply(gen: Gen, op: str, pick, last: bool) -> int:  # type: ignore[no-untyped-def]
    """Add ``op`` to ``gen`` on operands chosen by ``pick``, guarding its domain first.

    A large result is scaled down for the ops that may use it, but not when it is
    the output (``last``), so that the op drawn for the output stays there.
    """
    if op in BINARY:
        a, b = pick(), pick()
        if op == "/":
            b = gen.away_from_zero(b, 0.5)
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
        elif op in ("tanh", "sigmoid"):
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


@st.composite
def cases(draw, root_op: str | None = None) -> Case:  # type: ignore[no-untyped-def]
    n_inputs = draw(st.integers(1, 4))
    inputs = [draw(st.floats(-2.0, 2.0, allow_nan=False, allow_subnormal=False)) for _ in range(n_inputs)]
    gen = Gen(inputs)

    class Pick:
        def __call__(self) -> int:
            return draw(st.integers(0, len(gen.ops) - 1))  # any earlier node: shared subexpressions

        def exponent(self) -> float:
            return draw(st.sampled_from(EXPONENTS))

    pick = Pick()
    n_ops = draw(st.integers(1, 7))
    for k in range(n_ops):
        last = k == n_ops - 1
        op = root_op if (root_op is not None and last) else draw(st.sampled_from(OPS))
        node = _apply(gen, op, pick, last)
        if draw(st.booleans()):
            gen.name(node)
    root = len(gen.ops) - 1
    assert root_op is None or gen.ops[root][0] == root_op
    if not gen.texts[root].startswith("v"):
        if draw(st.booleans()):
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
        if draw(st.booleans()):
            defaults.append(f"x{i} = {v!r}")
        else:
            values[f"x{i}"] = v
    return Case("\n".join(defaults + [text]), values, inputs, gen)


# --- the oracle and the bounds -------------------------------------------------------------


def autograd_value_and_grad(case: Case) -> tuple[float, list[float]]:
    f = case.gen.autograd_function()
    xs = np.array(case.inputs, dtype=np.float64)
    with warnings.catch_warnings():
        # "Output seems independent of input" when the output does not use the inputs.
        warnings.simplefilter("ignore", UserWarning)
        value = float(f(xs))
        grad = autograd.grad(f)(xs)
    return value, [float(g) for g in grad]


def absolute_gradients(root) -> dict:  # type: ignore[no-untyped-def]
    """Sum over paths of |product of local derivatives|, per node (backprop with |local|)."""
    order = topological_order(root)
    total = {node: 0.0 for node in order}
    total[root] = 1.0
    for node in reversed(order):
        for child, local in zip(node._prev, node._local):
            total[child] += abs(local) * total[node]
    return total


def close(got: float, want: float, scale: float, rel: float = REL) -> bool:
    return abs(got - want) <= rel * max(scale, abs(want)) + TINY


def check_case(case: Case) -> None:
    program = parse(case.text, "<generated>")
    evaluation = evaluate(program, case.values)
    assert evaluation.warnings == []
    value, grads = autograd_value_and_grad(case)
    absolute = absolute_gradients(evaluation.root)
    value_scale = sum(a * abs(node.data) for node, a in absolute.items())
    assert close(evaluation.root.data, value, value_scale), (case.text, evaluation.root.data, value)

    forward = forward_gradients(evaluation)
    for i, want in enumerate(grads):
        name = f"x{i}"
        if name not in evaluation.nodes:
            assert want == 0.0
            continue
        node = evaluation.nodes[name]
        scale = absolute.get(node, 0.0)
        assert close(node.grad, want, scale), (case.text, name, node.grad, want, scale)
        assert close(forward.grads[name], node.grad, scale, FORWARD_REL), (case.text, name)

    result = check_gradients(evaluation)
    assert result.ok, (case.text, [c.reason for c in result.failures])


@settings(max_examples=2000, **SETTINGS)
@given(cases())
def test_random_programs_agree_with_autograd_forward_mode_and_check(case: Case) -> None:
    check_case(case)


@pytest.mark.parametrize("op", OPS, ids=lambda op: f"root={op}")
def test_every_op_at_the_output(op: str) -> None:
    @settings(max_examples=100, **SETTINGS)
    @given(cases(root_op=op))
    def run(case: Case) -> None:
        check_case(case)

    run()
