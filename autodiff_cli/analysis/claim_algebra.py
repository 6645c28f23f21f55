"""What ``claims.py`` does with expressions: write them as text, compare them as polynomials,
and evaluate them at many points.

All of it works on ``execute.expressions.Expressions``, the differentiator's self-simplifying
graph, where the program, the tool's derivative and the person's claim live side by side:

* ``Printer`` writes a node as program text (``b*e + d``), using the program's names for
  the values its variables hold, so a term reads as the person wrote the program;
* ``normal_form`` expands a node into a sum of monomials over "atoms" (inputs, function
  calls, quotients by sums), with exact rational coefficients: two expressions with the same
  normal form are equal wherever both are defined, which proves more claims than the
  graph's own simplification (``2*(w*x + b - y)*x`` and ``2*x*w*x + ...`` alike);
* ``Points`` evaluates nodes at a batch of points with the op table's NumPy kernels.

Reverse mode is the differentiator's own (``execute.expressions.reverse_sweep``), swept again
with one step changed (``Sweep.again``) for the slips people make.

Nothing recurses: node numbers are a topological order, and every walk is a loop.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from functools import cache
from typing import Any

from ..engine.ops import OPS, short_number
from ..execute.expressions import COPY, Expressions
from ..language.program import CONST, INPUT, POWER_CONST, Program

__all__ = ["Points", "Printer", "equal_forms", "instantiate", "normal_form", "substitute"]

# How many monomials a normal form may have before expanding is given up.
MAX_TERMS = 400
# The largest integer power expanded by repeated multiplication.
MAX_EXPANDED_POWER = 6

# --- text -----------------------------------------------------------------------------------

_SUM, _PRODUCT, _UNARY, _POWER, _ATOM = 1, 2, 3, 4, 5


class Printer:
    """Nodes as program text.  ``names`` maps a node to the name it is written as (the
    program's variables); ``limit`` cuts a text that grows past it (a huge derivative)."""

    def __init__(self, graph: Expressions, names: dict[int, str] | None = None) -> None:
        self.graph = graph
        self.names = names or {}

    def text(self, node: int, named_root: bool = True) -> str:
        return self._write(node, named_root)[0]

    def _write(self, root: int, named_root: bool) -> tuple[str, int]:
        graph = self.graph
        done: dict[int, tuple[str, int]] = {}
        stack = [root]
        while stack:
            node = stack[-1]
            if node in done:
                stack.pop()
                continue
            name = self.names.get(node)
            if name is not None and (node != root or named_root):
                done[node] = (name, _ATOM)
                stack.pop()
                continue
            op = graph.ops[node]
            if op == CONST:
                value = graph.params[node]
                done[node] = (short_number(value), _UNARY if value < 0 else _ATOM)  # type: ignore[arg-type]
                stack.pop()
                continue
            if op == INPUT:
                done[node] = (str(graph.params[node]), _ATOM)
                stack.pop()
                continue
            pending = [a for a in graph.args[node] if a not in done]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            done[node] = self._compose(node, [done[a] for a in graph.args[node]])
        return done[root]

    def _compose(self, node: int, operands: list[tuple[str, int]]) -> tuple[str, int]:
        graph = self.graph
        op = graph.ops[node]

        def wrap(item: tuple[str, int], level: int) -> str:
            return item[0] if item[1] >= level else f"({item[0]})"

        if op == COPY:
            return str(graph.params[node]), _ATOM
        if op == "+":
            return f"{wrap(operands[0], _SUM)} + {wrap(operands[1], _PRODUCT)}", _SUM
        if op == "-":
            return f"{wrap(operands[0], _SUM)} - {wrap(operands[1], _PRODUCT)}", _SUM
        if op == "*":
            # a*(b*c) reads a*b*c, a*(b/c) a*b/c: the same up to rounding
            right_level = _PRODUCT if graph.ops[graph.args[node][1]] in ("*", "/") else _UNARY
            if operands[1][0].startswith("-"):
                right_level = _ATOM
            return f"{wrap(operands[0], _PRODUCT)}*{wrap(operands[1], right_level)}", _PRODUCT
        if op == "/":
            return f"{wrap(operands[0], _PRODUCT)}/{wrap(operands[1], _UNARY)}", _PRODUCT
        if op == "neg":
            return f"-{wrap(operands[0], _UNARY)}", _UNARY
        if op == "**":
            return f"{wrap(operands[0], _ATOM)}**{wrap(operands[1], _UNARY)}", _POWER
        if op == POWER_CONST:
            c = float(graph.params[node])  # type: ignore[arg-type]
            exponent = short_number(c)
            return f"{wrap(operands[0], _ATOM)}**{exponent if c >= 0 else f'({exponent})'}", _POWER
        return f"{op}({', '.join(operand[0] for operand in operands)})", _ATOM  # maximum(a, b) too


def signed_term(text: str, negative: bool) -> str:
    """``d`` as ``+ d``, ``-c*f`` as ``- c*f``: a term as it is added to a sum."""
    if negative:
        return f"- {text}"
    if text.startswith("-"):
        return f"- {text[1:]}"
    return f"+ {text}"


# --- exact comparison -----------------------------------------------------------------------

Monomial = tuple[tuple[str, int], ...]
Poly = dict[Monomial, Fraction]


class _TooBig(Exception):
    pass


def _canon(poly: Poly) -> str:
    return " + ".join(f"{coefficient}*{'*'.join(f'{a}^{e}' for a, e in monomial)}"
                      for monomial, coefficient in sorted(poly.items()))


def _atom(key: str, power: int = 1) -> Poly:
    return {((key, power),): Fraction(1)}


def _add(a: Poly, b: Poly, sign: int = 1) -> Poly:
    out = dict(a)
    for monomial, coefficient in b.items():
        total = out.get(monomial, Fraction(0)) + sign * coefficient
        if total:
            out[monomial] = total
        else:
            out.pop(monomial, None)
    return out


def _times_monomials(a: Monomial, b: Monomial) -> Monomial:
    powers = dict(a)
    for atom, power in b:
        powers[atom] = powers.get(atom, 0) + power
    return tuple(sorted((atom, power) for atom, power in powers.items() if power))


def _mul(a: Poly, b: Poly) -> Poly:
    if len(a) * len(b) > MAX_TERMS * 4:
        raise _TooBig
    out: Poly = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            monomial = _times_monomials(ma, mb)
            total = out.get(monomial, Fraction(0)) + ca * cb
            if total:
                out[monomial] = total
            else:
                out.pop(monomial, None)
    if len(out) > MAX_TERMS:
        raise _TooBig
    return out


def _inverse(poly: Poly) -> Poly:
    """1/poly: exact for a single monomial, otherwise an atom of its own."""
    if len(poly) == 1:
        (monomial, coefficient), = poly.items()
        return {tuple((atom, -power) for atom, power in monomial): 1 / coefficient}
    return _atom(f"inv[{_canon(poly)}]")


def _power(poly: Poly, c: float) -> Poly:
    if c.is_integer() and abs(c) <= MAX_EXPANDED_POWER:
        n = int(c)
        base = poly if n >= 0 else _inverse(poly)
        out: Poly = {(): Fraction(1)}
        for _ in range(abs(n)):
            out = _mul(out, base)
        return out
    if len(poly) == 1 and c.is_integer():
        (monomial, coefficient), = poly.items()
        if coefficient == 1:
            return {tuple((atom, int(power * c)) for atom, power in monomial): Fraction(1)}
    return _atom(f"pow[{_canon(poly)}|{short_number(c)}]")


def normal_form(graph: Expressions, root: int) -> Poly | None:
    """``root`` expanded into monomials with exact coefficients, or None when it grows too large."""
    forms: dict[int, Poly] = {}
    stack = [root]
    try:
        while stack:
            node = stack[-1]
            if node in forms:
                stack.pop()
                continue
            pending = [a for a in graph.args[node] if a not in forms]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            forms[node] = _form(graph, node, [forms[a] for a in graph.args[node]])
    except _TooBig:
        return None
    return forms[root]


def _form(graph: Expressions, node: int, operands: list[Poly]) -> Poly:
    op = graph.ops[node]
    if op == CONST:
        value = float(graph.params[node])  # type: ignore[arg-type]
        return {(): Fraction(value)} if value else {}
    if op == INPUT:
        return _atom(f"{graph.params[node]}")
    if op == COPY:
        return operands[0]
    if op == "+":
        return _add(operands[0], operands[1])
    if op == "-":
        return _add(operands[0], operands[1], -1)
    if op == "neg":
        return {m: -c for m, c in operands[0].items()}
    if op == "*":
        return _mul(operands[0], operands[1])
    if op == "/":
        return _mul(operands[0], _inverse(operands[1]))
    if op == POWER_CONST:
        return _power(operands[0], float(graph.params[node]))  # type: ignore[arg-type]
    if op == "**":
        return _atom(f"pow[{_canon(operands[0])}|{_canon(operands[1])}]")
    return _atom(f"{op}[{_canon(operands[0])}]")


def equal_forms(graph: Expressions, a: int, b: int) -> bool:
    """Whether ``a`` and ``b`` are the same expression once expanded (see ``normal_form``)."""
    if a == b:
        return True
    first = normal_form(graph, a)
    if first is None:
        return False
    second = normal_form(graph, b)
    return second is not None and first == second


# --- numbers --------------------------------------------------------------------------------


class Points:
    """Every node of ``graph`` evaluated at a batch of points (one NumPy column per input).

    Nodes are evaluated in order up to the highest one asked for, so nodes added to the
    graph later are evaluated when first asked for.  Outside its domain an op gives NaN or
    an infinity; ``kinks`` marks the points where relu, abs, sign or step meets 0.
    """

    def __init__(self, graph: Expressions, columns: dict[str, Any], size: int) -> None:
        import numpy as np

        self.np = np
        self.graph = graph
        self.columns = columns
        self.size = size
        self.values: list[Any] = []
        self.kinks = np.zeros(size, dtype=bool)
        self.kink_nodes = np.zeros(0, dtype=bool)

    def __getitem__(self, node: int) -> Any:
        np, graph, values = self.np, self.graph, self.values
        if node < len(values):
            return values[node]
        with np.errstate(all="ignore"):
            for current in range(len(values), node + 1):
                op, args, param = graph.ops[current], graph.args[current], graph.params[current]
                if op == INPUT:
                    column = self.columns.get(param)  # type: ignore[arg-type]
                    value = np.full(self.size, np.nan) if column is None else column
                elif op == CONST:
                    value = np.full(self.size, float(param))  # type: ignore[arg-type]
                elif op == COPY or op == "=":
                    value = values[args[0]]
                elif op == POWER_CONST:
                    value = OPS[op].vector(np, values[args[0]], float(param))[0]  # type: ignore[arg-type]
                else:
                    value = OPS[op].vector(np, *(values[a] for a in args))[0]
                values.append(np.asarray(value, dtype=float) + np.zeros(self.size))
        return values[node]

    def kinked(self, nodes: Iterable[int]) -> Any:
        """Where any of ``nodes`` whose op has a kink (relu, abs...) has its operand at 0."""
        np, graph = self.np, self.graph
        out = np.zeros(self.size, dtype=bool)
        for node in nodes:
            op = OPS.get(graph.ops[node])
            if op is not None and op.kink:  # one operand at 0, or two that are equal (maximum)
                args = graph.args[node]
                out |= self[args[0]] == (0.0 if len(args) == 1 else self[args[1]])
        return out


# --- a local derivative as a person writes it ----------------------------------------------


@cache
def _rule(text: str) -> Program:
    from ..language.compiler import parse

    return parse(text, "<rule>")


def instantiate(graph: Expressions, text: str, node: int) -> int:
    """A local-derivative rule as a person may write it (``1 - x**2``), on ``node``
    (``Expressions.instantiate``: ``x``, ``y``, ``out`` and ``c`` as in the op table's rules)."""
    return graph.instantiate(_rule(text), node)


def substitute(graph: Expressions, root: int, replaced: dict[int, int]) -> int:
    """``root`` with each node of ``replaced`` swapped for its replacement, rebuilt above it."""
    low = min(replaced)
    mapping = dict(replaced)
    for node in range(low, root + 1):
        if node in mapping:
            continue
        args = graph.args[node]
        if any(a in mapping for a in args):
            mapping[node] = graph.apply(graph.ops[node], [mapping.get(a, a) for a in args], graph.params[node])
    return mapping.get(root, root)
