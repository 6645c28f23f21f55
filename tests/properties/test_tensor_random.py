"""Random shape-typed tensor programs against HIPS autograd, in float64.

A seeded generator draws a computation over vectors, matrices and scalars and writes it
twice from the same drawn structure: as program TEXT in our language (list literals, also
written over several lines with comments, initializers, undeclared inputs given by value,
nested expressions printed with the fewest parentheses the grammar needs, ``;`` and line
breaks), and as an ``autograd.numpy`` function.  Each program uses broadcasting ``+ - * /
**`` (computed and constant exponents), every scalar function (elementwise, kept in its
domain: ``log(exp(x) + 1)``, ``sqrt(x**2 + 1)``, divisors ``b**2 + c``), ``@`` between every
pairing of vectors and matrices, ``sum``/``mean``/``max``/``min`` with and without an axis
(negative axes too), ``transpose``, indexing and slices (negative indices, open bounds),
``softmax``, ``log_softmax``, ``logsumexp``, ``mse`` and ``cross_entropy`` against integer
labels given as literals, slice steps (negative ones too), gathers by integer tensors ``x[I]``
(negative and repeated indices), paired indices ``x[I, J]``, ``pick`` and ``scatter``, lists of
computed values, ``stack`` and ``concat``, the comparisons, ``where`` and ``clip`` (kept off ties:
the reference refuses a comparison within rounding of a tie, and clip's bounds met exactly).

For every program we check, against autograd (never against our own output):

* the value of every named variable and of the output;
* the gradient of the output w.r.t. every input (reverse mode), labels getting zeros;
* the JVP of the output and of one non-scalar intermediate along a random direction,
  against autograd's jacobian-vector product (``make_jvp_reversemode``);
* the batched run (``run_forward(..., batched=...)``, a random non-empty set of inputs with a
  leading axis of N rows) against autograd row by row: values, per-row gradients of the
  batched inputs, the sum over rows for the unbatched ones, and the batched JVP;
* for some programs, ``evaluate_tensors`` with a vector output: its Jacobian against
  ``autograd.jacobian``.

max/min are kept off exact ties: values are random floats, and the reference refuses a
program whose max/min would see a tie (it is drawn again; the number redrawn is bounded).
relu, abs, sign and step are kept off their kinks the same way: an operand within 1e-9 of 0 but
not 0 (logsumexp(log_softmax(x)) is 0 up to rounding) makes the program drawn again.
Values are kept bounded (an operand whose bound passes 30 is squashed by tanh first, exp
takes operands bounded by 8), so both libraries stay well-conditioned and 1e-12 relative
(absolute 1e-12 times the largest magnitude of the compared array, for entries near 0)
holds; see ``TOLERANCE``.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from autograd.differential_operators import make_jvp_reversemode
from autograd.tracer import getval

from autodiff_cli.execute.interpreter import evaluate_tensors, input_arrays, run_forward
from autodiff_cli.language.compiler import parse

TOLERANCE = 1e-12
CHUNKS = 32  # test cases
PER_CHUNK = 75  # programs per test case

# Precedence levels of the grammar: sum < product (* / @) < unary (- +) < power < atom.
SUM, PRODUCT, UNARY, POWER, ATOM = 1, 2, 3, 4, 5


class Tie(Exception):
    """The reference met a tie in max/min, or an operand of a kink within rounding of it: the
    program is drawn again."""


@dataclass
class Node:
    text: str
    prec: int
    fn: Callable[[dict[str, Any]], Any]
    shape: tuple[int, ...]
    bound: float
    constant: bool = False  # no input flows into it


def paren(node: Node, at_least: int) -> str:
    return node.text if node.prec >= at_least else f"({node.text})"


def number_text(x: float) -> str:
    return repr(float(x))


def number_node(x: float) -> Node:
    x = float(x)
    return Node(number_text(x), UNARY if x < 0 or number_text(x).startswith("-") else ATOM,
                lambda env, x=x: x, (), abs(x), constant=True)


def literal_text(values: np.ndarray, rng: np.random.Generator | None = None) -> str:
    """A nested list literal; with ``rng``, sometimes broken over lines with comments."""
    if values.ndim == 0:
        return number_text(values)
    if values.ndim == 1:
        return "[" + ", ".join(number_text(v) for v in values) + "]"
    rows = [literal_text(row) for row in values]
    if rng is not None and rng.random() < 0.3:
        sep = ",  # a row\n    " if rng.random() < 0.5 else ",\n    "
        return "[" + sep.join(rows) + "\n]"
    return "[" + ", ".join(rows) + "]"


def ref_extreme(name: str, x: Any, axis: Any, keepdims: bool = False) -> Any:
    raw = np.asarray(getval(x))
    extreme = getattr(np, name)(raw, axis=axis, keepdims=True)
    if np.any(np.sum(raw == extreme, axis=axis) > 1):
        raise Tie()
    return getattr(anp, name)(x, axis=axis, keepdims=keepdims)


def ref_spread(name: str, x: Any, axis: Any, keepdims: bool, correction: int) -> Any:
    """var or std; std of entries that (nearly) all equal is its kink, drawn again as a tie:
    there autograd gives NaN or 0 by case, and the engine 0, as PyTorch."""
    if name == "std" and np.any(np.var(np.asarray(getval(x)), axis=axis) < 1e-12):
        raise Tie()
    return getattr(anp, name)(x, axis=axis, ddof=correction, keepdims=keepdims)


def ref_argmax(x: Any, axis: Any) -> Any:
    raw = np.asarray(getval(x))
    if np.any(np.sum(raw == np.max(raw, axis=axis, keepdims=True), axis=axis) > 1):
        raise Tie()  # the first index, as both take; drawn again to keep the programs varied
    return np.argmax(raw, axis=axis).astype(np.float64)


def ref_logsumexp(x: Any, keepdims: bool = False, axis: int = -1) -> Any:
    m = np.max(np.asarray(getval(x)), axis=axis, keepdims=True)  # a constant shift
    out = m + anp.log(anp.sum(anp.exp(x - m), axis=axis, keepdims=True))
    return out if keepdims else anp.squeeze(out, axis)


def off_kink(x: Any) -> None:
    """relu, abs, sign and step jump or bend at 0: an operand within rounding of 0 (such as
    logsumexp(log_softmax(x)), 0 up to an ulp) could land on either side in the two libraries."""
    raw = np.asarray(getval(x))
    if np.any((raw != 0) & (np.abs(raw) < 1e-9)):
        raise Tie()


COMPARISONS = [("<", "less"), ("<=", "less_equal"), (">", "greater"), (">=", "greater_equal"),
               ("==", "equal"), ("!=", "not_equal")]


def off_tie(a: Any, b: Any, name: str, equal_too: bool = False) -> Any:
    """The comparison ``name`` of a and b as 0.0/1.0 (a constant to autograd), or Tie where they are
    within rounding of each other but not equal (computed two ways, they could compare either way),
    and with ``equal_too`` where they are equal (clip's bounds: autograd splits the gradient there)."""
    a, b = np.asarray(getval(a)), np.asarray(getval(b))
    if np.any(((a != b) | equal_too) & (np.abs(a - b) < 1e-9 * (1 + np.abs(a) + np.abs(b)))):
        raise Tie()
    return getattr(np, name)(a, b).astype(np.float64)


def ref_relu(x: Any) -> Any:
    off_kink(x)
    return anp.where(x > 0, x, 0.0)  # slope 1 above 0, 0 at and below (our convention)


def ref_sigmoid(x: Any) -> Any:
    return 1.0 / (1.0 + anp.exp(-x))


def ref_step(x: Any) -> Any:
    off_kink(x)
    return anp.where(x > 0, 1.0, 0.0) + 0.0 * x


def ref_sign(x: Any) -> Any:
    off_kink(x)
    return anp.sign(x)


def ref_abs(x: Any) -> Any:
    off_kink(x)
    return anp.abs(x)


# name -> (reference, bound of the result given the operand's bound, the operand bound it needs)
FUNCTIONS: dict[str, tuple[Callable[[Any], Any], Callable[[float], float]]] = {
    "tanh": (anp.tanh, lambda b: 1.0),
    "exp": (anp.exp, lambda b: math.exp(b)),
    "sigmoid": (ref_sigmoid, lambda b: 1.0),
    "softplus": (lambda x: anp.logaddexp(0.0, x), lambda b: b + 1.0),
    "sin": (anp.sin, lambda b: 1.0),
    "cos": (anp.cos, lambda b: 1.0),
    "relu": (ref_relu, lambda b: b),
    "abs": (ref_abs, lambda b: b),
    "sign": (ref_sign, lambda b: 1.0),
    "step": (ref_step, lambda b: 1.0),
}


@dataclass
class Program:
    text: str
    result: str
    inputs: list[tuple[str, tuple[int, ...], str]]  # name, shape, kind: literal, init, given, label
    values: dict[str, np.ndarray]  # what each input holds (initializers: filled in after parsing)
    statements: list[tuple[str, Node]]
    labels: set[str] = field(default_factory=set)

    def differentiable(self) -> list[str]:
        return [name for name, _, kind in self.inputs if kind != "label"]

    def reference(self, values: dict[str, Any], upto: str | None = None) -> dict[str, Any]:
        """Every statement's value from the inputs' (boxed or not), in order."""
        env = dict(values)
        for name, node in self.statements:
            env[name] = node.fn(env)
            if name == upto:
                break
        return env


class Gen:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.dims = [int(d) for d in self.rng.integers(1, 5, size=3)]
        self.lines: list[str] = []
        self.inputs: list[tuple[str, tuple[int, ...], str]] = []
        self.values: dict[str, np.ndarray] = {}
        self.statements: list[tuple[str, Node]] = []
        self.pool: list[Node] = []
        self.used: set[str] = set()
        self.names = 0

    # --- inputs and constants ------------------------------------------------------------------

    def random_values(self, shape: tuple[int, ...]) -> np.ndarray:
        values = self.rng.uniform(-1.5, 1.5, size=shape)
        digits = self.rng.integers(2, 18)
        return np.vectorize(lambda v: float(f"{v:.{digits}g}"), otypes=[float])(values) if shape else \
            np.array(float(f"{float(values):.{digits}g}"))

    def name(self, prefix: str) -> str:
        self.names += 1
        return f"{prefix}{self.names}"

    def var(self, name: str, shape: tuple[int, ...], bound: float) -> Node:
        return Node(name, ATOM, lambda env, name=name: env[name], shape, bound)

    def new_input(self, shape: tuple[int, ...]) -> Node:
        name = self.name("x")
        r = self.rng.random()
        if r < 0.15 and shape:
            std = float(self.rng.choice([0.5, 1.0, 0.25]))
            dims = "[" + ", ".join(map(str, shape)) + "]"
            if self.rng.random() < 0.5:
                self.lines.append(f"{name} = normal({dims}, {std})")
                bound = 6 * std
            else:
                self.lines.append(f"{name} = uniform({dims}, -1, 1)")
                bound = 1.0
            self.inputs.append((name, shape, "init"))
        elif r < 0.3:
            self.values[name] = self.random_values(shape)  # no declaration: given by value
            self.inputs.append((name, shape, "given"))
            bound = 1.5
        else:
            self.values[name] = self.random_values(shape)
            self.lines.append(f"{name} = {literal_text(self.values[name], self.rng)}")
            self.inputs.append((name, shape, "literal"))
            bound = 1.5
        node = self.var(name, shape, bound)
        self.pool.append(node)
        return node

    def new_labels(self, shape: tuple[int, ...], classes: int) -> Node:
        name = self.name("y")
        values = self.rng.integers(0, classes, size=shape).astype(float)
        self.values[name] = np.asarray(values)
        if self.rng.random() < 0.8:
            self.lines.append(f"{name} = {literal_text(np.asarray(values))}")
            self.inputs.append((name, shape, "label"))
        else:
            self.inputs.append((name, shape, "label"))  # given by value, no declaration
        return Node(name, ATOM, lambda env, name=name: env[name], shape, classes, constant=True)

    def constant(self, shape: tuple[int, ...]) -> Node:
        """A number or a list literal written in an expression (no input)."""
        values = self.random_values(shape)
        if not shape:
            return number_node(float(values))
        text = literal_text(values)
        if self.rng.random() < 0.2:  # -[1, 2]: a negated literal
            return Node("-" + text, UNARY, lambda env, v=values: -v, shape, 1.5, constant=True)
        return Node(text, ATOM, lambda env, v=values: v, shape, 1.5, constant=True)

    def random_shape(self) -> tuple[int, ...]:
        rank = int(self.rng.choice([0, 1, 1, 2, 2]))
        return tuple(int(self.rng.choice(self.dims)) for _ in range(rank))

    # --- operands -------------------------------------------------------------------------------

    def pick(self, depth: int, want: Callable[[tuple[int, ...]], bool] = lambda s: True) -> Node | None:
        if depth > 0 and self.rng.random() < 0.3:
            node = self.expr(depth - 1)
            if want(node.shape):
                return node
        candidates = [n for n in self.pool if want(n.shape)]
        if not candidates:
            return None
        # prefer nodes not used yet, so every statement tends to reach the output
        fresh = [n for n in candidates if n.text not in self.used]
        group = fresh if fresh and self.rng.random() < 0.6 else candidates
        chosen = group[int(self.rng.integers(len(group)))]
        self.used.add(chosen.text)
        return chosen

    def need(self, shape: tuple[int, ...], depth: int) -> Node:
        node = self.pick(depth, lambda s: s == shape)
        return node if node is not None else self.new_input(shape)

    def any_operand(self, depth: int) -> Node:
        node = self.pick(depth)
        return node if node is not None else self.new_input(self.random_shape())

    def partner_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """A shape that broadcasts with ``shape`` to ``shape`` or to a larger one."""
        r = self.rng.random()
        if r < 0.3:
            return shape
        if r < 0.45:
            return ()
        if r < 0.6:
            return shape[1:]  # fewer leading axes
        if r < 0.8:
            return tuple(1 if self.rng.random() < 0.5 else n for n in shape)
        if len(shape) == 1:  # a column against a row: [n, 1] with [m]
            return (int(self.rng.choice(self.dims)), 1)
        return shape

    def squash(self, node: Node) -> Node:
        if node.bound <= 30:
            return node
        return Node(f"tanh({node.text})", ATOM, lambda env, f=node.fn: anp.tanh(f(env)), node.shape, 1.0)

    # --- expressions ----------------------------------------------------------------------------

    def expr(self, depth: int) -> Node:
        kind = self.rng.choice(
            ["function", "binary", "binary", "div", "power", "matmul", "reduce", "reduce", "transpose", "index",
             "index", "softmax", "mse", "cross_entropy", "special", "gather", "select", "join", "reshape",
             "constant_of", "constant_of", "constant_of", "extreme_of_two"],
        )
        return self.squash(getattr(self, "op_" + kind)(depth))

    def op_function(self, depth: int) -> Node:
        x = self.any_operand(depth)
        name = str(self.rng.choice(list(FUNCTIONS)))
        if name == "exp" and x.bound > 8:
            name = "sigmoid"
        ref, bound = FUNCTIONS[name]
        return Node(f"{name}({x.text})", ATOM, lambda env, f=x.fn, r=ref: r(f(env)), x.shape, bound(x.bound),
                    x.constant)

    def op_special(self, depth: int) -> Node:
        """Functions kept in their domain, and unary minus and plus."""
        x = self.any_operand(depth)
        r = self.rng.random()
        if r < 0.25 and x.bound <= 8:
            return Node(f"log(exp({x.text}) + 1)", ATOM, lambda env, f=x.fn: anp.log(anp.exp(f(env)) + 1),
                        x.shape, x.bound + 1, x.constant)
        if r < 0.5:
            return Node(f"sqrt({paren(x, POWER + 1)}**2 + 1)", ATOM,
                        lambda env, f=x.fn: anp.sqrt(f(env) ** 2 + 1), x.shape, x.bound + 1, x.constant)
        if r < 0.65:
            return Node(f"log({paren(x, POWER + 1)}**2 + 0.5)", ATOM,
                        lambda env, f=x.fn: anp.log(f(env) ** 2 + 0.5), x.shape, 2 * math.log(x.bound + 2) + 1,
                        x.constant)
        if r < 0.9:
            return Node(f"-{paren(x, UNARY)}", UNARY, lambda env, f=x.fn: -f(env), x.shape, x.bound, x.constant)
        return Node(f"+{paren(x, UNARY)}", UNARY, x.fn, x.shape, x.bound, x.constant)

    def op_binary(self, depth: int) -> Node:
        a = self.any_operand(depth)
        shape = self.partner_shape(a.shape)
        if self.rng.random() < 0.2:
            b = self.constant(shape)
        else:
            b = self.pick(depth, lambda s: s == shape) or self.new_input(shape)
        if self.rng.random() < 0.5:
            a, b = b, a
        if a.constant and b.constant:
            b = self.need(b.shape, 0)
        op = str(self.rng.choice(["+", "-", "*"]))
        out_shape = np.broadcast_shapes(a.shape, b.shape)
        left = paren(a, SUM if op != "*" else PRODUCT)
        right = paren(b, (SUM if op != "*" else PRODUCT) + 1)
        fn = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y}[op]
        bound = a.bound * b.bound if op == "*" else a.bound + b.bound
        return Node(f"{left} {op} {right}", SUM if op != "*" else PRODUCT,
                    lambda env, f=a.fn, g=b.fn, h=fn: h(f(env), g(env)), out_shape, bound)

    def op_select(self, depth: int) -> Node:
        """where(a > b, x, y) (any comparison), clip(x, lo, hi), or a comparison times a value;
        every comparison kept off ties, where the two libraries may choose differently."""
        x = self.any_operand(depth)
        shapes = [self.partner_shape(x.shape), self.partner_shape(x.shape)]
        try:
            np.broadcast_shapes(x.shape, *shapes)
        except ValueError:  # two partners of x that do not fit each other
            shapes[1] = x.shape
        others = [self.pick(depth, lambda s, t=t: s == t) or self.new_input(t) for t in shapes]
        a, b = (paren(n, SUM + 1) for n in others)
        out_shape = np.broadcast_shapes(x.shape, *(n.shape for n in others))
        r = self.rng.random()
        if r < 0.4:
            symbol, name = COMPARISONS[int(self.rng.integers(len(COMPARISONS)))]
            y = self.need(out_shape, 0) if self.rng.random() < 0.5 else self.constant(())

            def pick(env, f=x.fn, g=y.fn, p=others[0].fn, q=others[1].fn, name=name):
                chosen = off_tie(p(env), q(env), name)
                return anp.where(chosen * np.ones(out_shape), f(env) * np.ones(out_shape), g(env) * np.ones(out_shape))

            return Node(f"where({a} {symbol} {b}, {x.text}, {y.text})", ATOM, pick, out_shape,
                        max(x.bound, y.bound))
        if r < 0.8:
            def clip(env, f=x.fn, lo=others[0].fn, hi=others[1].fn):
                xv, lov, hiv = f(env), lo(env), hi(env)
                top = anp.maximum(xv, lov)
                off_tie(xv, lov, "less", equal_too=True)
                off_tie(top, hiv, "less", equal_too=True)
                return anp.minimum(top, hiv)

            return Node(f"clip({x.text}, {others[0].text}, {others[1].text})", ATOM, clip, out_shape,
                        max(x.bound, *(n.bound for n in others)))
        symbol, name = COMPARISONS[int(self.rng.integers(len(COMPARISONS)))]
        return Node(f"({a} {symbol} {b}) * {paren(x, PRODUCT + 1)}", PRODUCT,
                    lambda env, f=x.fn, p=others[0].fn, q=others[1].fn, name=name: off_tie(p(env), q(env), name) * f(env),
                    out_shape, x.bound)

    def op_join(self, depth: int) -> Node:
        """``[a, b]`` of computed values, ``stack([a, b], k)`` or ``concat([a, b], k)``."""
        x = self.any_operand(depth)
        entries = [x] + [self.need(x.shape, depth) for _ in range(int(self.rng.integers(1, 3)))]
        listed = "[" + ", ".join(e.text for e in entries) + "]"
        fns = [e.fn for e in entries]
        bound = max(e.bound for e in entries)
        rank = len(x.shape)
        r = self.rng.random()
        if rank <= 1 and (r < 0.4 or (r < 0.7 and rank == 0)):  # at most 2 axes: what diff writes for
            axis = int(self.rng.integers(-rank - 1, rank + 1))
            text = listed if r < 0.2 else f"stack({listed}, {axis})"
            axis = 0 if r < 0.2 else axis
            shape = list(x.shape)
            shape.insert(axis % (rank + 1), len(entries))
            return Node(text, ATOM, lambda env, fs=fns, k=axis: anp.stack([f(env) for f in fs], axis=k),
                        tuple(shape), bound)
        if rank == 0:
            return Node(f"concat([{', '.join('[' + e.text + ']' for e in entries)}])", ATOM,
                        lambda env, fs=fns: anp.stack([f(env) for f in fs]), (len(entries),), bound)
        axis = int(self.rng.integers(-rank, rank))
        shape = list(x.shape)
        shape[axis] *= len(entries)
        return Node(f"concat({listed}, {axis})", ATOM,
                    lambda env, fs=fns, k=axis: anp.concatenate([f(env) for f in fs], axis=k), tuple(shape), bound)

    def op_extreme_of_two(self, depth: int) -> Node:
        """maximum / minimum with broadcasting; a tie (where the two share the slope) is drawn again."""
        a = self.any_operand(depth)
        shape = self.partner_shape(a.shape)
        b = self.pick(depth, lambda s: s == shape)
        if b is None or b.text == a.text or b.constant:  # maximum(x, x) ties everywhere
            b = self.new_input(shape)
        op = str(self.rng.choice(["maximum", "minimum"]))

        def ref(env: dict[str, Any], f: Any = a.fn, g: Any = b.fn, name: str = op) -> Any:
            x, y = f(env), g(env)
            if np.any(np.abs(np.asarray(getval(x)) - np.asarray(getval(y))) < 1e-9):
                raise Tie()
            return getattr(anp, name)(x, y)

        return Node(f"{op}({a.text}, {b.text})", ATOM, ref, np.broadcast_shapes(a.shape, b.shape),
                    max(a.bound, b.bound), a.constant and b.constant)

    def op_div(self, depth: int) -> Node:
        a = self.any_operand(depth)
        shape = self.partner_shape(a.shape)
        b = self.pick(depth, lambda s: s == shape) or self.new_input(shape)
        c = float(self.rng.choice([0.5, 1.0, 2.0]))
        if self.rng.random() < 0.5:
            text = f"{paren(a, PRODUCT)} / ({paren(b, POWER + 1)}**2 + {c})"
            fn = lambda env, f=a.fn, g=b.fn, c=c: f(env) / (g(env) ** 2 + c)  # noqa: E731
            bound = a.bound / c
        else:  # a divisor bounded away from 0: 1 + exp(b / 2)
            inner = b if b.bound <= 8 else self.squash(Node(b.text, b.prec, b.fn, b.shape, 31))
            text = f"{paren(a, PRODUCT)} / (1 + exp({paren(inner, PRODUCT)} / 2))"
            fn = lambda env, f=a.fn, g=inner.fn: f(env) / (1 + anp.exp(g(env) / 2))  # noqa: E731
            bound = a.bound
        return Node(text, PRODUCT, fn, np.broadcast_shapes(a.shape, b.shape), bound)

    def op_power(self, depth: int) -> Node:
        x = self.any_operand(depth)
        r = self.rng.random()
        if r < 0.35:
            c = int(self.rng.choice([2, 3]))
            if x.bound > 5:
                x = self.squash(Node(x.text, x.prec, x.fn, x.shape, 31))
            return Node(f"{paren(x, ATOM)}**{c}" if self.rng.random() < 0.7 else f"{paren(x, ATOM)} ^ {c}", POWER,
                        lambda env, f=x.fn, c=c: f(env) ** c, x.shape, x.bound ** c, x.constant)
        if r < 0.7:  # a fractional or negative exponent of a positive base
            c = float(self.rng.choice([0.5, -1.0, 1.5, -0.5]))
            if x.bound > 5:
                x = self.squash(Node(x.text, x.prec, x.fn, x.shape, 31))
            base = f"({paren(x, POWER + 1)}**2 + 0.5)"
            exponent = number_text(c)
            return Node(f"{base} ** {exponent}", POWER, lambda env, f=x.fn, c=c: (f(env) ** 2 + 0.5) ** c,
                        x.shape, (x.bound ** 2 + 0.5) ** abs(c) + 2 ** abs(c), x.constant)
        # a computed exponent: (b**2 + 1) ** tanh(e), both tensors
        shape = self.partner_shape(x.shape)
        e = self.pick(depth, lambda s: s == shape) or self.new_input(shape)
        if x.bound > 5:
            x = self.squash(Node(x.text, x.prec, x.fn, x.shape, 31))
        return Node(f"({paren(x, POWER + 1)}**2 + 1) ** tanh({e.text})", POWER,
                    lambda env, f=x.fn, g=e.fn: (f(env) ** 2 + 1) ** anp.tanh(g(env)),
                    np.broadcast_shapes(x.shape, e.shape), x.bound ** 2 + 1)

    def op_matmul(self, depth: int) -> Node:
        a = self.pick(depth, lambda s: len(s) in (1, 2)) or self.new_input(self.random_shape() or (2,))
        if not a.shape:
            a = self.new_input((int(self.rng.choice(self.dims)),))
        k = a.shape[-1]
        shape = (k,) if self.rng.random() < 0.4 else (k, int(self.rng.choice(self.dims)))
        b = self.pick(depth, lambda s: s == shape) or self.new_input(shape)
        if self.rng.random() < 0.5 and len(b.shape) == 2 and len(a.shape) == 1:
            # the mirror: W @ v with a vector on the right
            shape = (int(self.rng.choice(self.dims)), k)
            b, a = a, self.pick(depth, lambda s: s == shape) or self.new_input(shape)
        out = a.shape[:-1] + b.shape[1:]
        return Node(f"{paren(a, PRODUCT)} @ {paren(b, PRODUCT + 1)}", PRODUCT,
                    lambda env, f=a.fn, g=b.fn: anp.matmul(f(env), g(env)), out, a.bound * b.bound * k)

    def op_reduce(self, depth: int) -> Node:
        x = self.any_operand(depth)
        name = str(self.rng.choice(["sum", "mean", "max", "min", "var", "std"]))
        if not x.shape or self.rng.random() < 0.35:
            axis = None
        else:
            r = len(x.shape)
            axis = int(self.rng.integers(-r, r))
        size = math.prod(x.shape) if axis is None else x.shape[axis]
        keep = bool(x.shape) and self.rng.random() < 0.3
        correction = 1 if size > 1 and self.rng.random() < 0.6 else 0
        if name in ("var", "std") and axis is None:
            correction = 1 if size > 1 else 0
            if not correction:  # var(x) of one entry: only an axis can take correction 0
                name = "mean"
        if name in ("var", "std"):
            ref = lambda env, f=x.fn, n=name, a=axis, k=keep, c=correction: ref_spread(  # noqa: E731
                n, f(env), a, k, c)
        elif name in ("max", "min"):
            ref = lambda env, f=x.fn, n=name, a=axis, k=keep: ref_extreme(n, f(env), a, k)  # noqa: E731
        else:
            ref = lambda env, f=x.fn, n=name, a=axis, k=keep: getattr(anp, n)(f(env), axis=a, keepdims=k)  # noqa: E731
        if axis is None:
            shape = (1,) * len(x.shape) if keep else ()
        else:
            k = axis % len(x.shape)
            shape = x.shape[:k] + ((1,) if keep else ()) + x.shape[k + 1:]
        text = f"{name}({x.text})" if axis is None else f"{name}({x.text}, {axis})"
        if keep:
            text = text[:-1] + ", keepdim)"
        if name in ("var", "std") and correction != 1:
            text = text[:-1] + f", {correction})"
        bound = {"sum": x.bound * size, "var": 2 * x.bound ** 2, "std": 2 * x.bound}.get(name, x.bound)
        return Node(text, ATOM, ref, shape, bound, x.constant)

    def op_reshape(self, depth: int) -> Node:
        """reshape to a shape of the same size: its factors in a random order, size-1 axes
        sometimes added, and one size sometimes written -1."""
        x = self.any_operand(depth)
        size = math.prod(x.shape)
        factors, rest, p = [], size, 2
        while rest > 1:  # its prime factors
            while rest % p == 0:
                factors.append(p)
                rest //= p
            p += 1
        self.rng.shuffle(factors)
        shape = []
        for p in factors:
            if shape and self.rng.random() < 0.5:
                shape[-1] *= p
            else:
                shape.append(p)
        if not shape or self.rng.random() < 0.25:
            shape.insert(int(self.rng.integers(0, len(shape) + 1)), 1)
        written = list(shape)
        if self.rng.random() < 0.5:
            written[int(self.rng.integers(0, len(written)))] = -1
        target = tuple(shape)
        return Node(f"reshape({x.text}, [{', '.join(map(str, written))}])", ATOM,
                    lambda env, f=x.fn, t=target: anp.reshape(f(env), t), target, x.bound, x.constant)

    def op_transpose(self, depth: int) -> Node:
        x = self.pick(depth, lambda s: len(s) == 2)
        if x is None:
            x = self.new_input((int(self.rng.choice(self.dims)), int(self.rng.choice(self.dims))))
        return Node(f"transpose({x.text})", ATOM, lambda env, f=x.fn: anp.transpose(f(env)), x.shape[::-1],
                    x.bound, x.constant)

    def op_index(self, depth: int) -> Node:
        x = self.pick(depth, lambda s: len(s) >= 1)
        if x is None:
            x = self.new_input(self.random_shape() or (3,))
        items: list[Any] = []
        texts = []
        count = int(self.rng.integers(1, len(x.shape) + 1))
        for n in x.shape[:count]:
            if self.rng.random() < 0.5:
                i = int(self.rng.integers(-n, n))
                items.append(i)
                texts.append(str(i))
            else:
                start = None if self.rng.random() < 0.3 else int(self.rng.integers(-n, n))
                lo = range(start % n if start is not None else 0, n)
                stop = None if self.rng.random() < 0.3 else int(self.rng.choice(list(lo))) + 1
                if stop is not None and self.rng.random() < 0.3 and stop < n:
                    stop = stop - n  # a negative stop
                if stop is not None and len(range(*slice(start, stop).indices(n))) == 0:
                    stop = None
                step = None
                if self.rng.random() < 0.3:  # a step, negative ones taking what Python takes
                    step = int(self.rng.choice([-2, -1, 2, 3]))
                    if step < 0 or len(range(*slice(start, stop, step).indices(n))) == 0:
                        start, stop = (None, None) if self.rng.random() < 0.5 else (start, None)
                    if len(range(*slice(start, stop, step).indices(n))) == 0:
                        start = None
                items.append(slice(start, stop, step))
                texts.append(("" if start is None else str(start)) + ":" + ("" if stop is None else str(stop))
                             + ("" if step is None else f":{step}"))
        key = tuple(items)
        shape = np.empty(x.shape)[key].shape
        return Node(f"{paren(x, ATOM)}[{', '.join(texts)}]", ATOM, lambda env, f=x.fn, k=key: f(env)[k], shape,
                    x.bound, x.constant)

    def new_indices(self, shape: tuple[int, ...], size: int) -> Node:
        """An index tensor of whole numbers of an axis of ``size``, negative ones too (repeats likely)."""
        labels = self.new_labels(shape, 2 * size)
        self.values[labels.text] -= size  # -size .. size - 1
        if self.lines and self.lines[-1].startswith(f"{labels.text} = "):
            self.lines[-1] = f"{labels.text} = {literal_text(np.asarray(self.values[labels.text]))}"
        return labels

    def op_gather(self, depth: int) -> Node:
        """x[I] (rows of x), x[I, J] (pairs), pick(y, J) or scatter(g, I, n)."""
        kind = self.rng.choice(["rows", "rows", "pairs", "pick", "scatter"])
        want = (lambda s: len(s) >= 2) if kind == "pairs" else (lambda s: len(s) >= 1)
        x = self.pick(depth, want)
        if x is None:
            x = self.new_input(tuple(int(self.rng.choice(self.dims)) for _ in range(2 if kind == "pairs" else 1)))
        shape = self.random_shape()[:1] if kind in ("rows", "pairs") else ()
        if kind == "pick":
            lead = int(self.rng.integers(0, len(x.shape)))
            index = self.new_indices(x.shape[:lead], x.shape[lead])
            ref = lambda env, f=x.fn, j=index.text: f(env)[tuple(np.indices(np.shape(env[j]))) + (
                np.asarray(env[j], dtype=np.intp),)]
            return Node(f"pick({x.text}, {index.text})", ATOM, ref, x.shape[:lead] + x.shape[lead + 1:], x.bound,
                        x.constant)
        if kind == "scatter":
            lead = int(self.rng.integers(0, len(x.shape) + 1))
            n = int(self.rng.choice(self.dims))
            index = self.new_indices(x.shape[:lead], n)

            def put(env: dict[str, Any], f: Any = x.fn, i: str = index.text, n: int = n, lead: int = lead) -> Any:
                g = f(env)
                at = np.asarray(env[i], dtype=np.intp) % n
                onehot = (np.arange(n) == at[..., None]).astype(float)
                return onehot.reshape(onehot.shape + (1,) * (np.ndim(getval(g)) - lead)) * anp.expand_dims(g, lead)

            return Node(f"scatter({x.text}, {index.text}, {n})", ATOM, put, x.shape[:lead] + (n,) + x.shape[lead:],
                        x.bound, x.constant)
        rows = self.new_indices(shape, x.shape[0])
        if kind == "rows":
            ref = lambda env, f=x.fn, i=rows.text: f(env)[np.asarray(env[i], dtype=np.intp)]
            return Node(f"{paren(x, ATOM)}[{rows.text}]", ATOM, ref, shape + x.shape[1:], x.bound, x.constant)
        columns = self.new_indices(shape, x.shape[1])
        ref = lambda env, f=x.fn, i=rows.text, j=columns.text: f(env)[
            np.asarray(env[i], dtype=np.intp), np.asarray(env[j], dtype=np.intp)]
        return Node(f"{paren(x, ATOM)}[{rows.text}, {columns.text}]", ATOM, ref, shape + x.shape[2:], x.bound,
                    x.constant)

    def op_softmax(self, depth: int) -> Node:
        x = self.pick(depth, lambda s: len(s) >= 1) or self.new_input(self.random_shape() or (3,))
        name = str(self.rng.choice(["softmax", "log_softmax", "logsumexp"]))
        r = len(x.shape)
        axis = -1 if r == 1 or self.rng.random() < 0.5 else int(self.rng.integers(-r, r))
        n = x.shape[axis]
        call = f"{name}({x.text})" if axis == -1 else f"{name}({x.text}, {axis})"
        if name == "softmax":
            return Node(call, ATOM, lambda env, f=x.fn, a=axis: anp.exp(f(env) - ref_logsumexp(f(env), True, a)),
                        x.shape, 1.0, x.constant)
        if name == "log_softmax":
            return Node(call, ATOM, lambda env, f=x.fn, a=axis: f(env) - ref_logsumexp(f(env), True, a),
                        x.shape, 2 * x.bound + math.log(n), x.constant)
        k = axis % r
        return Node(call, ATOM, lambda env, f=x.fn, a=axis: ref_logsumexp(f(env), False, a), x.shape[:k] + x.shape[k + 1:],
                    x.bound + math.log(n), x.constant)

    def op_mse(self, depth: int) -> Node:
        a = self.any_operand(depth)
        b = self.pick(depth, lambda s: s == a.shape) or self.new_input(a.shape)
        return Node(f"mse({a.text}, {b.text})", ATOM,
                    lambda env, f=a.fn, g=b.fn: anp.mean((f(env) - g(env)) ** 2), (), (a.bound + b.bound) ** 2)

    def op_cross_entropy(self, depth: int) -> Node:
        x = self.pick(depth, lambda s: len(s) in (1, 2)) or self.new_input(self.random_shape() or (3,))
        if not x.shape:
            x = self.new_input((int(self.rng.choice(self.dims)),))
        labels = self.new_labels(x.shape[:-1], x.shape[-1])

        def ref(env: dict[str, Any], f: Any = x.fn, y: str = labels.text, c: int = x.shape[-1]) -> Any:
            z = f(env)
            onehot = np.arange(c) == np.asarray(env[y])[..., None]
            picked = anp.sum(onehot * (z - ref_logsumexp(z, True)), axis=-1)
            return -anp.mean(picked)

        return Node(f"cross_entropy({x.text}, {labels.text})", ATOM, ref, (),
                    2 * x.bound + math.log(x.shape[-1]), x.constant)

    def op_constant_of(self, depth: int) -> Node:
        """Ops whose value carries no gradient: argmax (ties redrawn), one_hot of labels, and
        ones_like / zeros_like, used in a product so that the program still reads them."""
        kind = str(self.rng.choice(["argmax", "one_hot", "ones_like", "zeros_like"]))
        if kind == "one_hot":
            classes = int(self.rng.choice(self.dims)) + 1
            labels = self.new_labels(self.random_shape(), classes)
            return Node(f"one_hot({labels.text}, {classes})", ATOM,
                        lambda env, y=labels.text, c=classes: (np.asarray(env[y])[..., None] == np.arange(c)) * 1.0,
                        labels.shape + (classes,), 1.0, True)
        x = self.pick(depth, lambda s: len(s) >= 1) or self.new_input(self.random_shape() or (3,))
        if kind != "argmax":
            value = 1.0 if kind == "ones_like" else 0.0
            factor = self.pick(depth, lambda s: s == x.shape) or self.new_input(x.shape)
            return Node(f"{kind}({x.text}) * {paren(factor, PRODUCT + 1)}", PRODUCT,
                        lambda env, f=factor.fn, v=value, sh=x.shape: np.full(sh, v) * f(env), x.shape,
                        factor.bound * value)
        r = len(x.shape)
        axis = None if self.rng.random() < 0.3 else int(self.rng.integers(-r, r))
        shape = () if axis is None else x.shape[:axis % r] + x.shape[axis % r + 1:]
        text = f"argmax({x.text})" if axis is None else f"argmax({x.text}, {axis})"
        return Node(text, ATOM, lambda env, f=x.fn, a=axis: ref_argmax(f(env), a), shape,
                    float(math.prod(x.shape)), True)

    # --- a program ----------------------------------------------------------------------------

    def statement(self, node: Node) -> None:
        name = self.name("v")
        sep_comment = "  # " + name if self.rng.random() < 0.1 else ""
        self.lines.append(f"{name} = {node.text}{sep_comment}")
        self.statements.append((name, node))
        self.pool.append(self.var(name, node.shape, node.bound))

    def program(self) -> Program:
        for _ in range(int(self.rng.integers(1, 3))):
            self.new_input(self.random_shape())
        for _ in range(int(self.rng.integers(2, 7))):
            node = self.expr(int(self.rng.integers(0, 3)))
            if node.constant:
                node = self.squash(self.op_binary(0))
            self.statement(node)
        # the output: every statement not used yet, reduced to a number
        terms = []
        for name, node in self.statements:
            if name in self.used and self.rng.random() < 0.7:
                continue
            v = self.var(name, node.shape, node.bound)
            if not node.shape:
                terms.append(v)
            else:
                how = str(self.rng.choice(["sum", "mean"]))
                terms.append(Node(f"{how}({name})", ATOM, lambda env, f=v.fn, h=how: getattr(anp, h)(f(env)), (),
                                  node.bound))
        if not terms:
            name, node = self.statements[-1]
            terms.append(Node(f"sum({name})", ATOM, lambda env, n=name: anp.sum(env[n]), (), node.bound))
        text = " + ".join(paren(t, SUM) for t in terms)
        fns = [t.fn for t in terms]
        out = Node(text, SUM, lambda env, fs=fns: sum(f(env) for f in fs[1:]) + fns[0](env) if len(fs) > 1
                   else fs[0](env), (), 0)
        if self.rng.random() < 0.2 and not out.text.isidentifier():
            self.lines.append(out.text)  # a bare last expression: the result is called 'output'
            result = "output"
        else:
            self.lines.append(f"L = {out.text}")
            result = "L"
        self.statements.append((result, out))
        sep = "\n"
        text = ""
        for i, line in enumerate(self.lines):
            text += line
            if i < len(self.lines) - 1:
                text += "; " if self.rng.random() < 0.1 and "#" not in line else sep
        # an input made for a subexpression that was then not used appears nowhere: forget it
        words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
        inputs = [entry for entry in self.inputs if entry[0] in words]
        return Program(text + "\n", result, inputs, self.values, self.statements)


# --- checking one program -------------------------------------------------------------------------


def close(got: Any, want: Any, what: str) -> None:
    want = np.asarray(want, dtype=np.float64)
    got = np.asarray(got)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    if not np.all(np.abs(got - want) <= TOLERANCE * (scale + np.abs(want))):  # fast path first
        np.testing.assert_allclose(got, want, rtol=TOLERANCE, atol=TOLERANCE * scale, err_msg=what)


def reference_gradients(program: Program, values: dict[str, np.ndarray]) -> tuple[float, dict[str, Any]]:
    names = program.differentiable()
    constants = {name: values[name] for name, _, kind in program.inputs if kind == "label"}

    def f(xs: tuple[Any, ...]) -> Any:
        env = program.reference({**constants, **dict(zip(names, xs))}, program.result)
        return env[program.result]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "output seems independent of input"
        vg = autograd.value_and_grad(f)
        value, grads = vg(tuple(np.asarray(values[n], dtype=float) for n in names))
    return value, dict(zip(names, grads))


def reference_jvp(program: Program, values: dict[str, np.ndarray], output: str,
                  tangents: dict[str, np.ndarray]) -> Any:
    names = program.differentiable()
    constants = {name: values[name] for name, _, kind in program.inputs if kind == "label"}

    def f(xs: tuple[Any, ...]) -> Any:
        return program.reference({**constants, **dict(zip(names, xs))}, output)[output]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = tuple(np.asarray(values[n], dtype=float) for n in names)
        return make_jvp_reversemode(f)(x)(tuple(np.asarray(tangents[n], dtype=float) for n in names))


def check_program(seed: int, stats: dict[str, int]) -> None:
    rng = np.random.default_rng(seed + 1_000_003)
    while True:
        spec = Gen(seed).program()
        try:
            check_one(spec, rng, stats)
            return
        except Tie:
            stats["ties"] += 1
            seed += 7_919_000


def check_one(spec: Program, rng: np.random.Generator, stats: dict[str, int]) -> None:
    text = spec.text
    try:
        program = parse(text)
        assert program.result == spec.result
        given = {name: spec.values[name] for name, _, kind in spec.inputs if kind in ("given",)}
        given.update({name: spec.values[name] for name, _, kind in spec.inputs
                      if kind == "label" and program.variables[name].default is None})
        arrays = input_arrays(program, given, seed=3)
        for name, shape, kind in spec.inputs:
            assert program.variables[name].kind == "input", name
            assert arrays[name].shape == shape, (name, arrays[name].shape, shape)
            if kind == "init":
                spec.values[name] = arrays[name]  # drawn data, not computation: both sides get it
            else:
                np.testing.assert_array_equal(arrays[name], spec.values[name], err_msg=name)
        values = spec.values
        env = spec.reference(dict(values))  # may raise Tie
        run = run_forward(program, arrays)
        for name, _ in spec.statements:
            close(run.value(name), env[name], f"value of {name}")
        want_value, want_grads = reference_gradients(spec, values)
        close(run.value(spec.result), want_value, "output")
        wrt = [name for name, _, _ in spec.inputs]
        grads = run.gradients(spec.result, wrt)
        for name, _, kind in spec.inputs:
            if kind == "label":
                assert not np.any(grads[name]), f"labels {name} got a gradient"
            else:
                close(grads[name], want_grads[name], f"d{spec.result}/d{name}")
        # JVP along a random direction: of the output, and of a non-scalar intermediate
        tangents = {n: rng.normal(size=np.shape(values[n])) for n in spec.differentiable()}
        close(run.jvp(spec.result, tangents), reference_jvp(spec, values, spec.result, tangents), "jvp of output")
        tensors = [name for name, node in spec.statements if node.shape]
        if tensors:
            name = tensors[int(rng.integers(len(tensors)))]
            close(run.jvp(name, tangents), reference_jvp(spec, values, name, tangents), f"jvp of {name}")
            stats["jvp_tensor"] += 1
        vectors = [name for name, node in spec.statements if len(node.shape) == 1]
        if vectors and rng.random() < 0.25:
            check_jacobian(spec, program, given, vectors[int(rng.integers(len(vectors)))], values)
            stats["jacobians"] += 1
        check_batched(spec, program, values, rng, stats)
        stats["programs"] += 1
    except Tie:
        raise
    except BaseException as error:  # the program text makes the failure reproducible
        raise AssertionError(f"program:\n{text}\n{type(error).__name__}: {error}") from error


def check_jacobian(spec: Program, program: Any, given: dict[str, Any], output: str, values: dict[str, Any]) -> None:
    names = spec.differentiable()
    constants = {name: values[name] for name, _, kind in spec.inputs if kind == "label"}
    given = {**given, **{n: values[n] for n, _, kind in spec.inputs if kind == "init"}}
    evaluation = evaluate_tensors(program, given, output=output)
    assert evaluation.jacobian
    for i, name in enumerate(names):
        if program.variables[name].register > program.variables[output].register:
            continue  # declared after the output: not among the derivatives (it cannot reach it)
        def f(x: Any, i: int = i) -> Any:
            xs = {**constants, **{n: np.asarray(values[n], dtype=float) for n in names}, names[i]: x}
            return spec.reference(xs, output)[output]

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = autograd.jacobian(f)(np.asarray(values[name], dtype=float))
        close(evaluation.derivatives[name], want, f"Jacobian d{output}/d{name}")


def check_batched(spec: Program, program: Any, values: dict[str, Any], rng: np.random.Generator,
                  stats: dict[str, int]) -> None:
    names = [name for name, _, _ in spec.inputs]
    chosen = [n for n in names if rng.random() < 0.5] or [names[int(rng.integers(len(names)))]]
    batched = frozenset(chosen)
    rows = int(rng.integers(1, 4))
    inputs = {}
    for name, shape, kind in spec.inputs:
        if name in batched:
            if kind == "label":
                # keep each row's labels valid: permute the labels given (all are classes already)
                inputs[name] = np.stack([rng.permutation(np.asarray(values[name]).ravel()).reshape(shape)
                                         for _ in range(rows)]) if shape else \
                    np.stack([np.asarray(values[name]) for _ in range(rows)])
            else:
                inputs[name] = np.stack([values[name]] + [rng.uniform(-1.5, 1.5, size=shape)
                                                          for _ in range(rows - 1)])
        else:
            inputs[name] = np.asarray(values[name], dtype=float)
    row_values = [{n: inputs[n][r] if n in batched else inputs[n] for n in names} for r in range(rows)]
    references = [reference_gradients(spec, v) for v in row_values]  # may raise Tie
    run = run_forward(program, inputs, batched=batched)
    out = run.value(spec.result)
    output_batched = bool(run.leads[run.register(spec.result)])
    if not output_batched:  # the output depends on no batched input
        assert np.shape(out) == ()
        out = np.broadcast_to(out, (rows,))
    close(out, [value for value, _ in references], "batched output")
    grads = run.gradients(spec.result, names)
    tangents = {n: rng.normal(size=np.shape(inputs[n])) for n in spec.differentiable()}
    jvp = np.broadcast_to(run.jvp(spec.result, tangents), (rows,))
    want_jvp = []
    for r, (_, g) in enumerate(references):
        want_jvp.append(sum(float(np.sum(g[n] * (tangents[n][r] if n in batched else tangents[n])))
                            for n in spec.differentiable()))
    for name, _, kind in spec.inputs:
        if kind == "label":
            assert not np.any(grads[name])
            continue
        per_row = [g[name] for _, g in references]
        if not output_batched:  # one output for all rows: its gradient, once
            want = np.stack(per_row) if name in batched else per_row[0]
        else:
            want = np.stack(per_row) if name in batched else np.sum(per_row, axis=0)
        close(grads[name], want, f"batched d{spec.result}/d{name} ({'batched' if name in batched else 'shared'})")
    close(jvp, want_jvp, "batched jvp")
    stats["batched_rows"] += rows


# --- the tests -----------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_random_tensor_programs_against_autograd(chunk: int) -> None:
    stats = {"programs": 0, "ties": 0, "jvp_tensor": 0, "jacobians": 0, "batched_rows": 0}
    for i in range(PER_CHUNK):
        check_program(chunk * PER_CHUNK + i, stats)
    assert stats["programs"] == PER_CHUNK
    assert stats["ties"] <= PER_CHUNK // 5, stats  # ties are rare, so the programs are varied
    assert stats["jvp_tensor"] >= PER_CHUNK // 2, stats


def test_the_generator_covers_every_form() -> None:
    """The programs drawn use every form of the language the issue lists, many times."""
    texts = "\n".join(Gen(seed).program().text for seed in range(CHUNKS * PER_CHUNK))
    for form in ["@", "sum(", "mean(", "max(", "min(", "transpose(", "softmax(", "log_softmax(", "logsumexp(",
                 "mse(", "cross_entropy(", "reshape(", ", -1])", ", keepdim)", "var(", "std(", ", 0)", "softmax(x", "logsumexp(", "argmax(", "one_hot(", "ones_like(", "zeros_like(", "maximum(", "minimum(", "normal(", "uniform(", ", -1)", ", -2)", "[-1", ":]", "[:", "**2",
                 "** -0.5", "** tanh(", "/ (", "exp(", "log(", "sqrt(", "tanh(", "sigmoid(", "relu(", "sin(",
                 "cos(", "abs(", "sign(", "step(", " ^ ", "-[", "],\n", "# a row", "; ", "\nL = ", "pick(",
                 "scatter(", "::-", ":2]", "where(", "clip(", " < ", " <= ", " > ", " >= ", " == ", " != ",
                 "stack([", "concat(["]:
        assert texts.count(form) >= 20, form
