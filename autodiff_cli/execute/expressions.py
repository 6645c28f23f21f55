"""A graph of expressions that simplifies itself as it is built: the differentiator's workspace.

A node is an integer; its operands are always smaller integers, so the node numbers are
a topological order and every walk is a loop, never a recursion.  Nodes are
hash-consed: asking for the same operation on the same operands twice returns the same
node, so a value the program computes once stays one node however many derivatives use
it (``x*y`` and ``y*x`` are one node too: IEEE addition and multiplication commute
exactly).

Every node is built by a constructor that simplifies first, with rules that keep the
value exactly or up to rounding wherever the original program is defined:

* constant folding, by the op table's own kernels, never to an infinity (``1e308*10``
  and ``1e308*(10*x)`` stay as written: ``inf`` would read back as a variable) (so ``sign(0)`` folds to 0 as the
  engine computes it): always for + - * and the kinks, otherwise when the result is a
  short number (``exp(0)`` is 1, ``1/4`` is 0.25, but ``log(2)`` and ``1/3`` stay as
  written); an operation that fails on its constants (``log(0)``) is kept as written,
  to fail where the program does;
* identities: ``x + 0``, ``x - 0``, ``0 - x``, ``x*1``, ``x*0``, ``x/1``, ``0/x``,
  ``x**1``, ``x**0``, ``--x``, ``1**y``, ``x - x``, ``x/x``, ``sqrt(x)**2``;
* constant factors collected to the front (``3*(2*x)`` is ``6*x``, ``x*(2*y)`` is
  ``2*(x*y)``, ``3*(1/x)`` is ``3/x``, ``6*x/(16*y)`` is ``3*x/(8*y)``) and constant
  offsets merged (``x - 1 - 1`` is ``x - 2``);
* like terms combined (``2*x + 3*x`` is ``5*x``, ``x + x`` is ``2*x``), also a few terms
  apart in a sum (``x + y + 2*x`` is ``3*x + y``; ``_LIKE_TERM_REACH`` terms back at most);
* in a product or quotient of a few factors, the factors with a common base combined
  (``x*x`` is ``x**2``, ``x*y*x`` is ``x**2*y``, ``(x/y**2)*(y/x)`` is ``1/y``,
  ``x/x**3`` is ``1/x**2``);
* what is known of signs used, in float64: a node is known positive (a positive constant,
  a sum of positive and non-negative terms such as ``x**2 + 1``...) or non-negative
  (``abs``, ``x**2``, ``exp``, ``sigmoid``, which underflow to 0...), and then ``abs(x)``
  and ``relu(x)`` are ``x`` where x >= 0, ``sign(x)`` and ``step(x)`` are 1 where x > 0
  (see ``_sign_of``: a rule fires only where it is exact at every float the program can
  compute);
* even and odd functions: ``cos(-x)`` and ``abs(-x)`` are ``cos(x)`` and ``abs(x)``,
  ``sin(-x)``, ``tanh(-x)`` and ``sign(-x)`` are ``-sin(x)``, ``-tanh(x)``, ``-sign(x)``;
* a minus sign moved to the front of a product or quotient and out of sums
  (``y + -2*x`` is ``y - 2*x``, ``x*(-y)`` is ``-x*y``), so results read as people
  write them.

Coefficients are combined only while they stay finite, so no node is an infinite constant.

A ``COPY`` node is a named value that no rule looks through: a variable the user
differentiates with respect to that the program computes (``--wrt e`` where ``e = a*b``).

The local derivative of a node is its op's ``symbolic`` rule from the op table, an
expression in the language itself, parsed once and instantiated on the node's operands
(``derivative``).

Reverse mode over the graph is written once, here (``reverse_sweep``): the symbolic
differentiator sweeps with it (``execute.symbolic``), and so does ``check --claim`` when it
names a slip, by sweeping again with one step changed (``Sweep.again``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache

from ..engine.ops import OPS, DomainError, short_number
from ..errors import Position
from ..language.program import CONST, INPUT, POWER_CONST, Program

__all__ = ["COPY", "LEAVES", "Edge", "Expressions", "GraphTooLarge", "Sweep", "reverse_sweep", "rule_program"]

COPY = "copy"
LEAVES = frozenset((INPUT, CONST))
_COMMUTATIVE = frozenset(("+", "*"))
# How far down the left operands of a product a minus sign is moved.  Bounded so that a
# product of ten thousand factors costs constant time per new node, not a walk of the chain.
_SPINE_LIMIT = 8
# What is known of a node's sign (see _sign_of).
UNKNOWN, NONNEGATIVE, POSITIVE = 0, 1, 2
# Constants are folded by these ops always (+ - * and the op table's exact ops), by the others
# only when the result is a number of at most _SHORT_NUMBER characters (exp(0) is 1, sqrt(4)
# is 2, 1/4 is 0.25, log(2) stays).
_ALWAYS_FOLDED = frozenset(("+", "-", "*", *(op.name for op in OPS.values() if op.exact and op.name != "=")))
_SHORT_NUMBER = 8
# How many factors a product may have for common ones to be combined (bounded likewise).
_FACTOR_LIMIT = 8
# How many terms back a sum is searched for a term like the one added (bounded likewise).
_LIKE_TERM_REACH = 8


class GraphTooLarge(Exception):
    """The graph grew past its node limit (a derivative of too high an order, usually)."""


@cache
def rule_program(op: str, operand: int) -> Program:
    """The op table's symbolic rule for d op / d operand, parsed (once) into a Program."""
    from ..language.compiler import parse  # the language layer's parser, for our own rules

    return parse(OPS[op].symbolic[operand], f"<symbolic rule of {op}>")


class Expressions:
    """A hash-consed, self-simplifying expression graph (see the module docstring)."""

    def __init__(self, max_nodes: int | None = None) -> None:
        self.ops: list[str] = []
        self.args: list[tuple[int, ...]] = []
        self.params: list[float | str | None] = []
        self.positions: list[Position | None] = []
        self.position: Position | None = None  # stamped on the nodes built from now on
        self.max_nodes = max_nodes
        self._sign: list[int] = []  # POSITIVE, NONNEGATIVE or UNKNOWN, wherever the node is defined
        self._minus: list[bool] = []  # written with a leading minus sign
        self._spine: list[int] = []  # how many * and / down the left operands
        self._index: dict[tuple[object, ...], int] = {}
        self._monomials: dict[int, tuple[float, dict[int, float]] | None] = {}

    def __len__(self) -> int:
        return len(self.ops)

    # --- leaves and the table of nodes ----------------------------------------------------

    def _intern(
        self, op: str, args: tuple[int, ...], param: float | str | None = None, ordered: bool = False
    ) -> int:
        key = (op, tuple(sorted(args)) if op in _COMMUTATIVE and not ordered else args, param, ordered)
        node = self._index.get(key)
        if node is not None:
            return node
        node = len(self.ops)
        if self.max_nodes is not None and node >= self.max_nodes:
            raise GraphTooLarge(node)
        self.ops.append(op)
        self.args.append(args)
        self.params.append(param)
        self.positions.append(self.position)
        self._sign.append(self._sign_of(op, args, param))
        if op in ("*", "/"):
            self._minus.append(self._minus[args[0]])
            self._spine.append(self._spine[args[0]] + 1)
        else:
            self._minus.append(op == "neg" or (op == CONST and param < 0))  # type: ignore[operator]
            self._spine.append(0)
        self._index[key] = node
        return node

    def written(self, op: str, args: tuple[int, ...]) -> int:
        """The node ``op(args)`` exactly as given, operands in this order and unsimplified:
        for writing a result out in a grouping of one's choice, once the graph is complete."""
        return self._intern(op, args, None, ordered=True)

    def _sign_of(self, op: str, args: tuple[int, ...], param: float | str | None) -> int:
        """What is known of a new node's sign *in float64*, from its op and its operands' signs.

        POSITIVE only where the float value cannot be 0: ``sign`` and ``step`` of a positive
        node fold to 1, so a value that is positive in exact arithmetic but underflows to 0
        in floats would make the derivative program disagree with the engine (``step(exp(x))``
        is 0 at x = -1000).  Hence ``exp``, ``sigmoid`` and powers are only non-negative
        (exp(-1000), sigmoid(-1000), 1e-200**2 and 2**-2000 are 0), and so are products and
        quotients of positives (1e-200*1e-200 is 0), except with a constant factor that
        cannot shrink the other (a constant >= 1 in a product or numerator, <= 1 in a
        denominator; a finite positive float is at most 1.8e308, so 1/x > 0).  A sum of a
        positive and a non-negative is positive (rounding is monotonic: a + b >= a), and
        ``abs`` and ``sqrt`` of a positive are positive (sqrt(5e-324) > 0).  Overflow needs no
        care: an infinite value is a domain error, where nothing need agree.
        """
        signs = [self._sign[a] for a in args]
        if op == CONST:
            return POSITIVE if param > 0 else NONNEGATIVE if param == 0 else UNKNOWN  # type: ignore[operator]
        known = OPS[op].sign if op in OPS else None  # the op table's fact
        if known == "nonnegative":
            return NONNEGATIVE
        if known == "operand":
            return POSITIVE if signs[0] == POSITIVE else NONNEGATIVE
        if op in (POWER_CONST, "**"):
            exponent = float(param) if op == POWER_CONST else 1.0  # type: ignore[arg-type]
            even = exponent.is_integer() and exponent % 2 == 0
            return NONNEGATIVE if even or signs[0] != UNKNOWN else UNKNOWN
        if op in ("+", "*", "/"):
            if min(signs) == UNKNOWN:
                return UNKNOWN
            if op == "+":
                return max(signs)  # one positive term makes a non-negative sum positive
            if min(signs) == POSITIVE:
                first, second = self.value(args[0]), self.value(args[1])
                if op == "*" and ((first or 0.0) >= 1.0 or (second or 0.0) >= 1.0):
                    return POSITIVE
                if op == "/" and ((first or 0.0) >= 1.0 or (second is not None and second <= 1.0)):
                    return POSITIVE
            return NONNEGATIVE
        return UNKNOWN

    def known_sign(self, node: int) -> int:
        """POSITIVE (> 0), NONNEGATIVE (>= 0) or UNKNOWN, wherever the node is defined."""
        return self._sign[node]

    def const(self, value: float) -> int:
        """A constant node; never an infinity or NaN, which would be written as a name (``inf``)."""
        assert math.isfinite(value), value
        return self._intern(CONST, (), float(value) + 0.0)  # + 0.0: -0.0 is 0.0

    def input(self, name: str) -> int:
        return self._intern(INPUT, (), name)

    def find_input(self, name: str) -> int | None:
        """The node of input ``name``, if the graph has one."""
        return self._index.get((INPUT, (), name, False))

    def copy(self, node: int, name: str) -> int:
        """``name``, a value equal to ``node`` that simplification treats as opaque."""
        return self._intern(COPY, (node,), name)

    def value(self, node: int) -> float | None:
        """The number a node is, when it is a constant."""
        return self.params[node] if self.ops[node] == CONST else None  # type: ignore[return-value]

    def is_leaf(self, node: int) -> bool:
        return self.ops[node] in LEAVES

    def negative(self, node: int) -> bool:
        """Whether the node is written with a leading minus that ``neg`` would remove."""
        return self._minus[node] and self._spine[node] <= _SPINE_LIMIT

    # --- the constructors ------------------------------------------------------------------

    def apply(self, op: str, args: tuple[int, ...] | list[int], param: float | str | None = None) -> int:
        """The node for ``op`` applied to ``args`` (program instruction semantics), simplified."""
        if op == "+":
            return self.add(args[0], args[1])
        if op == "-":
            return self.sub(args[0], args[1])
        if op == "*":
            return self.mul(args[0], args[1])
        if op == "/":
            return self.div(args[0], args[1])
        if op == "neg":
            return self.neg(args[0])
        if op == "**":
            return self.pow(args[0], args[1])
        if op == POWER_CONST:
            return self.powc(args[0], param)  # type: ignore[arg-type]
        if op == "=":
            return args[0]
        if op == COPY:
            return self.copy(args[0], param)  # type: ignore[arg-type]
        if len(args) == 2:  # a call of two operands (maximum): folded when both are constants
            folded = self._of_constants(op, args[0], args[1])
            return folded if folded is not None else self._intern(op, (args[0], args[1]))
        return self.call(op, args[0])

    def _of_constants(self, op: str, a: int, b: int) -> int | None:
        """``a op b`` when both are constants: folded, or kept as written where the kernel fails
        (it overflows or divides by 0); None when either is not a constant."""
        folded = self._fold(op, (a, b))
        if folded is not None:
            return folded
        if self.value(a) is not None and self.value(b) is not None:
            return self._intern(op, (a, b))
        return None

    def _fold(self, op: str, args: tuple[int, ...], param: float | None = None) -> int | None:
        """The constant an op on constants gives, by the op's kernel (None if it fails)."""
        values = [self.value(a) for a in args]
        if None in values:
            return None
        try:
            result = OPS[op].scalar(*values, *(() if param is None else (param,)))[0]
        except (DomainError, ArithmeticError, ValueError):
            return None  # kept as written: it fails where the program fails
        if not math.isfinite(result):
            return None
        if op not in _ALWAYS_FOLDED and len(short_number(result)) > _SHORT_NUMBER:
            return None  # log(2) reads better than 0.6931471805599453, and is the same number
        return self.const(result)

    def _term(self, node: int) -> tuple[float, int]:
        """``node`` as coefficient * term: ``3*x`` -> (3, x), ``-x`` -> (-1, x), ``x`` -> (1, x)."""
        op = self.ops[node]
        if op == "*":
            c = self.value(self.args[node][0])
            if c is not None:
                return c, self.args[node][1]
        elif op == "neg":
            return -1.0, self.args[node][0]
        return 1.0, node

    def _factor(self, node: int) -> tuple[int, int] | None:
        """``node`` as (constant, rest) when it has a constant factor other than 1:
        ``6*x`` -> (6, x), ``6*x/y`` -> (6, x/y); else None."""
        ops, args = self.ops, self.args
        if ops[node] == "*" and self.value(args[node][0]) is not None:
            return args[node][0], args[node][1]
        if ops[node] == "/" and ops[args[node][0]] == "*":
            numerator = args[node][0]
            if self.value(args[numerator][0]) is not None:
                return args[numerator][0], self.div(args[numerator][1], args[node][1])
        return None

    def _offset(self, node: int) -> tuple[int, float]:
        """``node`` as term + constant: ``x + 2`` -> (x, 2), ``x - 2`` -> (x, -2), ``x`` -> (x, 0)."""
        op = self.ops[node]
        if op in ("+", "-"):
            c = self.value(self.args[node][1])
            if c is not None:
                return self.args[node][0], c if op == "+" else -c
        return node, 0.0

    def _power(self, node: int) -> tuple[int, float]:
        """``node`` as base ** constant: ``x**3`` -> (x, 3), ``x`` -> (x, 1)."""
        if self.ops[node] == POWER_CONST:
            return self.args[node][0], self.params[node]  # type: ignore[return-value]
        return node, 1.0

    def _monomial(self, node: int, sign: float = 1.0) -> tuple[float, dict[int, float]] | None:
        """``node`` as coefficient * product of base**exponent (``-2*x/y**2`` is
        (-2, {x: 1, y: -2})), raised to ``sign`` (1 or -1), or None when it has more than
        ``_FACTOR_LIMIT`` factors.  Cached: a node never changes."""
        if node not in self._monomials:
            self._monomials[node] = self._factors(node)
        found = self._monomials[node]
        if found is None or sign > 0:
            return found
        coefficient, factors = found
        if coefficient == 0.0:
            return None
        return 1.0 / coefficient, {base: -power for base, power in factors.items()}

    def _factors(self, node: int) -> tuple[float, dict[int, float]] | None:
        coefficient = 1.0
        factors: dict[int, float] = {}
        stack = [(node, 1.0)]
        ops, args = self.ops, self.args
        while stack:
            current, power = stack.pop()
            op = ops[current]
            if not power.is_integer():  # (x*y)**0.5 is not x**0.5*y**0.5 for negative x and y
                op = ""
            if op == "*" or op == "/":
                stack.append((args[current][1], power if op == "*" else -power))
                stack.append((args[current][0], power))
            elif op == "neg":
                coefficient = -coefficient
                stack.append((args[current][0], power))
            elif op == CONST and power == -1.0 and self.params[current] == 0.0:
                return None  # x/0: left as written, to fail where the program fails
            elif op == CONST and power in (1.0, -1.0):
                coefficient = (
                    coefficient * self.params[current] if power > 0 else coefficient / self.params[current]
                )  # type: ignore[operator]
            elif op == POWER_CONST:
                stack.append((args[current][0], power * self.params[current]))  # type: ignore[operator]
            else:
                factors[current] = factors.get(current, 0.0) + power
            if len(factors) + len(stack) > _FACTOR_LIMIT:
                return None
        return coefficient, factors

    def _merged(self, a: int, b: int, sign: float) -> int | None:
        """``a * b`` (sign 1) or ``a / b`` (sign -1) with the factors they share combined
        (``x*y * x`` is ``x**2*y``, ``(a/b**2) * (b/a)`` is ``1/b``), or None when they share none."""
        first = self._monomial(a)
        if first is None:
            return None
        second = self._monomial(b, sign)
        if second is None or not first[1].keys() & second[1].keys():
            return None
        coefficient = first[0] * second[0]  # the second's is already raised to ``sign``
        factors = dict(first[1])
        for base, power in second[1].items():
            factors[base] = factors.get(base, 0.0) + power
        if not math.isfinite(coefficient) or not all(map(math.isfinite, factors.values())):
            return None  # (x**1e200)**1e200 is not x**inf
        numerator = self.const(coefficient)
        denominator = self.const(1.0)
        for base, power in factors.items():
            if power > 0:
                numerator = self.mul(numerator, self.powc(base, power))
            elif power < 0:
                denominator = self.mul(denominator, self.powc(base, -power))
        return self.div(numerator, denominator)

    def add(self, a: int, b: int) -> int:
        of_constants = self._of_constants("+", a, b)
        if of_constants is not None:
            return of_constants
        va, vb = self.value(a), self.value(b)
        if va == 0.0:
            return b
        if vb == 0.0:
            return a
        if self.negative(b):
            return self.sub(a, self.neg(b))
        if va is not None:  # a constant goes last: x + 1
            return self.add(b, a)
        combined = self._combined(a, b, 1.0)
        return self._intern("+", (a, b)) if combined is None else combined

    def sub(self, a: int, b: int) -> int:
        of_constants = self._of_constants("-", a, b)
        if of_constants is not None:
            return of_constants
        va, vb = self.value(a), self.value(b)
        if vb == 0.0:
            return a
        if va == 0.0:
            return self.neg(b)
        if a == b:
            return self.const(0.0)
        if self.negative(b):
            return self.add(a, self.neg(b))
        combined = self._combined(a, b, -1.0)
        return self._intern("-", (a, b)) if combined is None else combined

    def _combined(self, a: int, b: int, sign: float) -> int | None:
        """``a + sign*b`` (sign 1 or -1, which negates exactly) where ``b`` merges with ``a``: a like
        term (``2*x + 3*x``, also a few terms back in the sum ``a``) or a constant offset
        (``x + 1 - 3``); None where it does not."""
        ca, ta = self._term(a)
        cb, tb = self._term(b)
        if ta == tb:
            coefficient = ca + sign * cb
            return self.mul(self.const(coefficient), ta) if math.isfinite(coefficient) else None
        vb = self.value(b)
        if vb is None:
            return self._add_like_term(a, sign * cb, tb)
        term, offset = self._offset(a)
        if not offset or not math.isfinite(offset + sign * vb):
            return None  # 1e308 + 1e308 is inf: the terms stay as written
        return self.add(term, self.const(offset + sign * vb))

    def _add_like_term(self, total: int, c: float, term: int) -> int | None:
        """``total + c*term`` where the sum ``total`` has a term like it (``k*term``) at most
        ``_LIKE_TERM_REACH`` terms back: that term becomes ``(k + c)*term`` and the terms
        after it are added again in order; None where there is none."""
        ops, args = self.ops, self.args
        after: list[tuple[str, int]] = []
        node = total
        for _ in range(_LIKE_TERM_REACH):
            op = ops[node]
            if op not in ("+", "-"):
                k, like = self._term(node)  # the sum's first term
                if like != term or not math.isfinite(k + c):
                    return None
                rebuilt = self.mul(self.const(k + c), term)
                break
            left, right = args[node]
            k, like = self._term(right)
            if like == term:
                if not math.isfinite((k if op == "+" else -k) + c):
                    return None
                rebuilt = self.add(left, self.mul(self.const((k if op == "+" else -k) + c), term))
                break
            after.append((op, right))
            node = left
        else:
            return None
        for op, right in reversed(after):
            rebuilt = self.add(rebuilt, right) if op == "+" else self.sub(rebuilt, right)
        return rebuilt

    def mul(self, a: int, b: int) -> int:
        of_constants = self._of_constants("*", a, b)
        if of_constants is not None:
            return of_constants
        va, vb = self.value(a), self.value(b)
        if va == 0.0 or vb == 0.0:
            return self.const(0.0)
        if va == 1.0:
            return b
        if vb == 1.0:
            return a
        if va == -1.0:
            return self.neg(b)
        if vb == -1.0:
            return self.neg(a)
        if vb is not None:  # a constant factor goes first: 6*x
            return self.mul(b, a)
        ops, args = self.ops, self.args
        if va is not None:
            if self.negative(b):
                return self.mul(self.const(-va), self.neg(b))
            inner = self.value(args[b][0]) if ops[b] in ("*", "/") else None
            if inner is not None and math.isfinite(va * inner):  # 1e308*(10*x) is not inf*x
                if ops[b] == "*":
                    return self.mul(self.const(va * inner), args[b][1])
                return self.div(self.const(va * inner), args[b][1])
            if ops[b] == "/":  # 2*(3*x/y) is 6*x/y, 2*(x/(2*y)) is x/y
                return self.div(self.mul(a, args[b][0]), args[b][1])
            return self._intern("*", (a, b))
        # (c/t) * b is c*b/t: 1/x * y reads y/x
        if ops[a] == "/" and self.value(args[a][0]) is not None:
            return self.div(self.mul(args[a][0], b), args[a][1])
        if ops[b] == "/" and self.value(args[b][0]) is not None:
            return self.div(self.mul(args[b][0], a), args[b][1])
        # Constant factors move to the front, minus signs to the left operand.
        factor = self._factor(b)
        if factor is not None:
            return self.mul(factor[0], self.mul(a, factor[1]))
        factor = self._factor(a)
        if factor is not None:
            return self.mul(factor[0], self.mul(factor[1], b))
        if self.negative(b):  # x*(-y*z) is -x*y*z, and (-x)*(-y) is x*y
            return self.mul(self.neg(a), self.neg(b))
        if ops[a] == "/" and args[a][1] == b:  # (x/y)*y is x
            return args[a][0]
        if ops[b] == "/" and args[b][1] == a:
            return args[b][0]
        if a == b:
            return self.powc(a, 2.0)
        merged = self._merged(a, b, 1.0)
        if merged is not None:
            return merged
        return self._intern("*", (a, b))

    def div(self, a: int, b: int) -> int:
        of_constants = self._of_constants("/", a, b)
        if of_constants is not None:
            return of_constants
        va, vb = self.value(a), self.value(b)
        if vb == 1.0:
            return a
        if vb == -1.0:
            return self.neg(a)
        if va == 0.0:
            return self.const(0.0)  # where the divisor is 0 the program fails anyway
        if self.negative(b):
            return self.neg(self.div(a, self.neg(b)))
        cancelled = self._cancel(a, b)
        if cancelled is not None:
            return cancelled
        reduced = self._reduced(a, b)
        if reduced is not None:
            return reduced
        return self._intern("/", (a, b))

    def _reduced(self, a: int, b: int) -> int | None:
        """``6*x/(16*y)`` as ``3*x/(8*y)``: integer coefficients divided by their common divisor."""
        ops, args = self.ops, self.args
        if ops[b] != "*" or self.value(args[b][0]) is None:
            return None
        below = self.value(args[b][0])
        above = self.value(a) if ops[a] == CONST else self.value(args[a][0]) if ops[a] == "*" else None
        if (
            above is None
            or not (above.is_integer() and below.is_integer())
            or max(abs(above), abs(below)) > 2**53
        ):
            return None
        divisor = math.gcd(int(above), int(below))
        if divisor == 1:
            return None
        numerator = (
            self.const(above / divisor)
            if ops[a] == CONST
            else self.mul(self.const(above / divisor), args[a][1])
        )
        return self.div(numerator, self.mul(self.const(below / divisor), args[b][1]))

    def _cancel(self, a: int, b: int) -> int | None:
        """``a / b`` with a factor common to both cancelled, or None.

        The forms reverse mode produces most, directly; then any common base of the two
        sides (``_merged``); and x/(y/z) becomes x*z/y, where they may show.  A cancelled
        factor is nonzero wherever the program and its derivative are defined (the
        derivative divides by it).
        """
        ops, args = self.ops, self.args
        if a == b:
            return self.const(1.0)
        if ops[a] == "*" and b in args[a]:
            return args[a][1] if args[a][0] == b else args[a][0]
        if ops[b] == "*" and a in args[b]:
            return self.div(self.const(1.0), args[b][1] if args[b][0] == a else args[b][0])
        if ops[a] == "/" and args[a][0] == b:
            return self.div(self.const(1.0), args[a][1])
        if ops[b] == "/" and args[b][0] == a:
            return args[b][1]
        if ops[b] == "/":  # x/(y/z) is x*z/y
            return self.div(self.mul(a, args[b][1]), args[b][0])
        if ops[a] == "/" and ops[b] == "/" and args[a][0] == args[b][0]:
            return self.div(args[b][1], args[a][1])
        return self._merged(a, b, -1.0)

    def neg(self, a: int) -> int:
        va = self.value(a)
        if va is not None:
            return self.const(-va)
        op, args = self.ops[a], self.args[a]
        if op == "neg":
            return args[0]
        if op == "-":
            return self.sub(args[1], args[0])
        if op in ("*", "/") and self._spine[a] <= _SPINE_LIMIT:
            # -(x*y) is (-x)*y exactly: the sign goes to the leftmost factor
            left = self.neg(args[0])
            return self.mul(left, args[1]) if op == "*" else self.div(left, args[1])
        return self._intern("neg", (a,))

    def powc(self, a: int, c: float) -> int:
        c = float(c)
        if c == 1.0:
            return a
        if c == 0.0:
            return self.const(1.0)  # x**0 is 1 for every x, 0 included, as the engine computes it
        folded = self._fold(POWER_CONST, (a,), c)
        if folded is not None:
            return folded
        op = self.ops[a]
        if op == POWER_CONST and c.is_integer() and math.isfinite(self.params[a] * c):  # type: ignore[operator]
            # (x**p)**n is x**(p*n) wherever x**p exists
            return self.powc(self.args[a][0], self.params[a] * c)  # type: ignore[operator]
        if op == "neg" and c.is_integer() and c % 2.0 == 0.0:
            return self.powc(self.args[a][0], c)
        power = OPS[op].power if op in OPS else None
        if power is not None and c.is_integer() and (c * power).is_integer():
            # sqrt(x)**2 is x wherever sqrt(x) is: f(x)**c is x**(c*p) for f(x) = x**p
            return self.powc(self.args[a][0], c * power)
        return self._intern(POWER_CONST, (a,), c)

    def pow(self, a: int, b: int) -> int:
        folded = self._fold("**", (a, b))
        if folded is not None:
            return folded
        vb = self.value(b)
        if vb is not None:
            return self.powc(a, vb)
        if self.value(a) == 1.0:
            return self.const(1.0)
        return self._intern("**", (a, b))

    def call(self, function: str, a: int) -> int:
        folded = self._fold(function, (a,))
        if folded is not None:
            return folded
        if self.ops[a] == "neg":  # even and odd functions: cos(-x) is cos(x), sin(-x) is -sin(x)
            parity = OPS[function].parity
            if parity == "even":
                return self.call(function, self.args[a][0])
            if parity == "odd":
                return self.neg(self.call(function, self.args[a][0]))
        sign, where_positive = self._sign[a], OPS[function].where_positive
        if where_positive == "operand" and sign != UNKNOWN:
            return a  # |x| and relu(x) are x where x >= 0
        if where_positive == "one" and sign == POSITIVE:
            return self.const(1.0)
        return self._intern(function, (a,))

    # --- local derivatives -----------------------------------------------------------------

    def derivative(self, node: int, operand: int) -> int:
        """d node / d (its operand number ``operand``), from the op table's symbolic rule."""
        if self.ops[node] == COPY:
            return self.const(1.0)
        return self.instantiate(rule_program(self.ops[node], operand), node)

    def instantiate(self, rule: Program, node: int) -> int:
        """A rule written in the language (``1 - out**2``) on ``node``: ``x`` and ``y`` its
        operands, ``out`` the node itself, ``c`` its constant exponent."""
        args = self.args[node]
        named = {"x": args[0], "out": node}
        if len(args) > 1:
            named["y"] = args[1]
        registers: list[int] = []
        for rule_op, rule_args, param, _ in rule.instructions:
            if rule_op == INPUT:
                if param == "c":
                    registers.append(self.const(self.params[node]))  # type: ignore[arg-type]
                else:
                    registers.append(named[param])  # type: ignore[index]
            elif rule_op == CONST:
                registers.append(self.const(param))  # type: ignore[arg-type]
            else:
                registers.append(self.apply(rule_op, [registers[a] for a in rule_args], param))
        return registers[rule.variables[rule.result].register]


# --- reverse mode ------------------------------------------------------------------------------

Edge = tuple[int, int]  # (user node, operand number): one use of a value


@dataclass
class Sweep:
    """What one reverse sweep from ``root`` found (``reverse_sweep``).  A node or an edge it
    does not hold is 0: nothing reached it, or only contributions of 0."""

    graph: Expressions
    root: int
    active: bytearray  # active[node]: the node is on a path from a target up to the root
    adjoints: dict[int, int]  # d root / d node
    contributions: dict[Edge, int]  # an edge's (local derivative) * (its user's adjoint)
    zero: int

    def adjoint(self, node: int) -> int:
        return self.adjoints.get(node, self.zero)

    def contribution(self, edge: Edge) -> int:
        return self.contributions.get(edge, self.zero)

    def uses(self) -> dict[int, list[Edge]]:
        """For each node on a path from a target to the root, the edges by which it is used
        on such a path, in the order of the users (earliest first)."""
        graph, active = self.graph, self.active
        found: dict[int, list[Edge]] = {}
        for node in range(self.root + 1):
            if active[node] and graph.ops[node] not in LEAVES:
                for index, operand in enumerate(graph.args[node]):
                    if active[operand]:
                        found.setdefault(operand, []).append((node, index))
        return found

    def again(self, *, local: Mapping[Edge, int] | None = None, dropped: Edge | None = None,
              flipped: Edge | None = None) -> Sweep:
        """The same sweep with one step changed, as a person's slip would change it: ``local``
        other local derivatives at the edges it names, ``dropped`` an edge's contribution left
        out (an overwritten gradient, micrograd's classic bug), ``flipped`` one subtracted."""
        return _accumulate(self.graph, self.root, self.active, local or {}, dropped, flipped)


def reverse_sweep(graph: Expressions, root: int, targets: Sequence[int]) -> Sweep:
    """Reverse mode from ``root``: the adjoint of every node on a path from a target to it.

    A node's adjoint is the sum, over the nodes that use it, of (local derivative) * (that
    user's adjoint), in the order of the users (earliest first), the local derivative being
    the op table's rule (``Expressions.derivative``).  Each adjoint is one node referring to
    the primal nodes and the users' adjoints, so it takes O(n) nodes for n operations.
    Contributions of 0 are left out, and a node whose adjoint is 0 passes nothing on.  A
    target passes its adjoint on to the targets below it (``--wrt e,a`` with ``e = a*b``).
    """
    return _accumulate(graph, root, _active(graph, root, targets), {}, None, None)


def _active(graph: Expressions, root: int, targets: Sequence[int]) -> bytearray:
    """The nodes on a path from one of ``targets`` up to ``root``."""
    args = graph.args
    wanted = set(targets)
    on_path = bytearray(root + 1)  # the root depends on it
    on_path[root] = 1
    for node in range(root, -1, -1):
        if on_path[node]:
            for operand in args[node]:
                on_path[operand] = 1
    active = bytearray(root + 1)
    for node in range(root + 1):
        if on_path[node] and (node in wanted or any(active[a] for a in args[node])):
            active[node] = 1
    return active


def _accumulate(graph: Expressions, root: int, active: bytearray, local: Mapping[Edge, int],
                dropped: Edge | None, flipped: Edge | None) -> Sweep:
    """The sweep over ``active`` nodes, from the root down (see ``reverse_sweep``)."""
    ops, args = graph.ops, graph.args
    terms: dict[int, list[int]] = {root: [graph.const(1.0)]}
    adjoints: dict[int, int] = {}
    contributions: dict[Edge, int] = {}
    for node in range(root, -1, -1):
        if not active[node]:
            continue
        pending = terms.pop(node, None)
        if pending is None:
            continue
        graph.position = graph.positions[node]  # the nodes built here are written at this node
        adjoint = pending[-1]
        for term in reversed(pending[:-1]):  # in the order of the users: earliest first
            adjoint = graph.add(adjoint, term)
        adjoints[node] = adjoint
        if graph.value(adjoint) == 0.0 or ops[node] in LEAVES:
            continue
        for index, operand in enumerate(args[node]):
            if not active[operand]:
                continue
            edge = (node, index)
            derivative = local.get(edge)
            if derivative is None:
                derivative = graph.derivative(node, index)
            if graph.value(derivative) == 0.0:
                continue
            term = graph.mul(derivative, adjoint)
            contributions[edge] = term
            if edge == dropped:
                continue
            if edge == flipped:
                term = graph.neg(term)
            terms.setdefault(operand, []).append(term)
    return Sweep(graph, root, active, adjoints, contributions, graph.const(0.0))
