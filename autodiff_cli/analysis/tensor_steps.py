"""The backward pass of a tensor program as chain-rule steps in matrix form.

``explain`` runs the program once (``execute.interpreter``), then walks its instructions from the
output back and, for every edge operand -> instruction, records one vector-Jacobian product:
the rule as the op tables write it, with the operands' names put in, the shapes it works on,
and the share of the gradient it gives the operand, e.g.

    dL/dW = transpose(X) @ dL/dP        [2, 8] @ [8, 1] -> [2, 1]

The rules are read, never rewritten here: a structural op's from ``TENSOR_OPS[op].rule``
(``dL/dy = transpose(x) @ dL/dout``), an elementwise op's as ``dL/dout *`` its local derivative
from ``OPS[op].rule`` (``1 - tanh(x)**2``), the product taken entry by entry.  Where an
elementwise op broadcast an operand (a bias added to every row), the step says so and sums
the gradient back over what was stretched, as ``tensor_ops.unbroadcast`` does.

The numbers are the tensor interpreter's own VJPs, edge by edge, summed in the order of its
reverse sweep, so each variable's total is the gradient ``eval`` reports.  As in the scalar
explain (``steps.py``), a variable used twice receives a ``+=`` step per use and then a total;
unnamed results are t1, t2, ... in program order; constants receive no steps.

Each step belongs to a statement (the named variable it computes, a "layer"): ``shares`` holds,
per statement, what each variable it reads receives through it.  Summed over a layer's rows,
the scalar view's gradients (``execute.unroll.layer_view`` with the upstream gradient) are
these shares: the test of the two zoom levels against each other.

The steps are data (arrays, not text); ``render/tensor_explain.py`` writes them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..engine.ops import OPS
from ..engine.tensor_ops import TENSOR_OPS, format_shape, write
from ..errors import InputError
from ..execute.unroll import statement_names
from ..execute.interpreter import TensorRun, evaluate_tensors
from ..language.program import CONST, INPUT, ArrayLiteral, Program
from .graph_model import operand_text
from .steps import Explanation

__all__ = [
    "Broadcast",
    "LayerSteps",
    "TensorDefinition",
    "TensorExplanation",
    "TensorSeed",
    "TensorStep",
    "TensorTotal",
    "explain_tensors",
    "gradient_name",
    "scalar_layers",
    "statement_registers",
]

Shape = tuple[int, ...]


def gradient_name(output: str, name: str) -> str:
    """The gradient of ``output`` with respect to ``name``, as explain writes it: ``dL/dW``."""
    return f"d{output}/d{name}"


@dataclass(frozen=True)
class TensorDefinition:
    """One line of the forward pass: ``P = X @ W``, the same with the operands' shapes put in
    (``shapes``: ``[8, 2] @ [2, 1] -> [8, 1]``) and its value (``expression`` is "" for an input)."""

    name: str
    expression: str
    shapes: str
    shape: Shape
    value: Any


@dataclass(frozen=True)
class TensorSeed:
    """The start of the backward pass: d output / d output = 1."""

    output: str


@dataclass(frozen=True)
class Broadcast:
    """An operand an elementwise op stretched to the result's shape, and the gradient summed
    back: ``axes`` of the result summed, ``unit``, what each copy was (``row``, ``column``,
    ``entry``), ``verb`` how the operand took part (``added to``), ``inner`` the gradient before
    the sum (``dL/dZ``)."""

    axes: tuple[int, ...]
    unit: str
    units: str
    verb: str
    inner: str = ""


@dataclass(frozen=True)
class TensorStep:
    """One edge of the backward pass in matrix form: ``child`` receives ``product``, its share of
    d output / d child through the instruction computing ``parent``.

    ``formula`` is the right-hand side of the rule with the names put in
    (``transpose(X) @ dL/dP``), before any sum over broadcast axes (``broadcast``);
    ``computation`` the shapes it works on (``[2, 8] @ [8, 1] -> [2, 1]``); ``notes`` what the
    rule's other letters stand for here (``n = 8``).  ``accumulate`` is true for the second and
    later contributions to ``child``, ``total`` its gradient after this one.  ``statement`` is
    the named variable whose statement holds the instruction."""

    output: str
    child: str
    parent: str
    op: str
    operand: int
    formula: str
    computation: str
    product: Any
    accumulate: bool
    total: Any
    statement: str
    broadcast: Broadcast | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class TensorTotal:
    """A variable that received several contributions: their sum, now final."""

    output: str
    name: str
    count: int
    total: Any


TensorItem = TensorSeed | TensorStep | TensorTotal


@dataclass
class TensorExplanation:
    """What the renderers show: the output, both passes (capped at ``max_steps`` lines each, the
    rest counted), every input's gradient; per statement what each variable it reads receives
    through it (``shares``, statements in backward order), and every named variable's gradient
    (``adjoints``: d output / d variable, the upstream gradient of its statement)."""

    output: str
    value: Any
    definitions: list[TensorDefinition]
    definitions_omitted: int
    steps: list[TensorItem]
    steps_omitted: int
    gradients: list[tuple[str, Any]]
    max_steps: int
    shares: dict[str, dict[str, Any]] = field(default_factory=dict)
    adjoints: dict[str, Any] = field(default_factory=dict)


# --- names ---------------------------------------------------------------------------------------


def _names(program: Program) -> list[str]:
    """A name for every register: variables keep theirs, constants are their number, other results
    are t1, t2, ... in program order (the prefix grows underscores while it could clash)."""
    named = program.names_by_register()
    prefix = "t"
    while any(re.fullmatch(re.escape(prefix) + r"\d+", name) for name in named.values()):
        prefix += "_"
    names = []
    count = 0
    for register, (op, _, _, param, _) in enumerate(program.rows()):
        if register in named:
            names.append(named[register])
        elif op == CONST:
            names.append(_constant_text(param))
        else:
            count += 1
            names.append(f"{prefix}{count}")
    return names


def _constant_text(param: Any) -> str:
    if isinstance(param, ArrayLiteral):
        return str(param.nested()) if len(param.values) <= 4 else f"constant {format_shape(param.shape)}"
    if isinstance(param, (int, float)):
        return operand_text(float(param))
    return "constant"  # a random draw written inline


def _expression(op: str, operands: Sequence[str], param: Any) -> str:
    """The instruction written with its operands' names, one level (``X @ W``, ``t1**2``)."""
    if op in TENSOR_OPS:
        return write(op, operands, param)
    return OPS[op].written.format(x=operands[0], y=operands[1] if len(operands) > 1 else "",
                                  c=operand_text(param) if param is not None else "c")


def statement_registers(program: Program) -> dict[int, str]:
    """The statement (the named variable it computes) of every register an instruction writes, as
    ``execute.unroll.layer_view`` takes a statement."""
    return {register: name for register, name in statement_names(program).items()
            if program.variables[name].kind != INPUT}


# --- rules ---------------------------------------------------------------------------------------

_TENSOR_WORDS = re.compile(r"dL/dout|\bx\[index\]|\b(?:x|y|z|out|i)\b")
_SCALAR_WORDS = re.compile(r"\b(?:x|y|c|out)\b")
_SIMPLE = re.compile(r"-?[A-Za-z0-9_.]+(\[[0-9, ]*\])?")  # needs no parentheses after '*'


def _tensor_formula(op: str, operand: int, output: str, parent: str, operands: Sequence[str], param: Any) -> str:
    """The table's rule for one operand, names put in: ``dL/dy = transpose(x) @ dL/dout`` -> the
    right-hand side ``transpose(X) @ dL/dP``."""
    rules = TENSOR_OPS[op].rule
    right = rules[min(operand, len(rules) - 1)].split(" = ", 1)[1]  # one rule for every entry of stack
    words = {"dL/dout": gradient_name(output, parent), "x": operands[0],
             "y": operands[1] if len(operands) > 1 else "y", "z": operands[2] if len(operands) > 2 else "z",
             "out": parent, "i": str(operand),
             "x[index]": write(op, operands, param) if op == "index" else ""}
    return _TENSOR_WORDS.sub(lambda found: words[found.group(0)], right)


def _elementwise_formula(op: str, operand: int, output: str, parent: str, operands: Sequence[str],
                         param: Any) -> str:
    """dL/dout times the op's local derivative (``OPS[op].rule``), names put in; a local
    derivative of 1 or -1 is written as the sign it is."""
    local = OPS[op].rule[operand]
    words = {"x": operands[0], "y": operands[1] if len(operands) > 1 else "y", "out": parent,
             "c": operand_text(param) if param is not None else "c"}
    local = _SCALAR_WORDS.sub(lambda found: words[found.group(0)], local)
    upstream = gradient_name(output, parent)
    if local == "1":
        return upstream
    if local == "-1":
        return f"-{upstream}"
    return f"{upstream} * {local if _SIMPLE.fullmatch(local) else f'({local})'}"


def _notes(op: str, operand: int, shapes: Sequence[Shape], out_shape: Shape, param: Any) -> tuple[str, ...]:
    """What the letters of a rule that are not operands stand for here: n, the count a mean
    divides by."""
    if op == "mean":
        n = int(np.prod(shapes[0])) // max(1, int(np.prod(out_shape)))
        return (f"n = {n}",)
    if op == "mse":
        return (f"n = {int(np.prod(shapes[0]))}",)
    if op == "cross_entropy" and operand == 0:
        return (f"n = {int(np.prod(shapes[0][:-1]))}",)
    return ()


def _matmul_computation(operand: int, shapes: Sequence[Shape], out_shape: Shape) -> str:
    """The shapes of ``@``'s VJP, vectors taken as a row (left) and a column (right) as the
    product does: dL/dx = dL/dout @ transpose(y), dL/dy = transpose(x) @ dL/dout."""
    x, y = shapes
    a = (1, x[0]) if len(x) == 1 else x
    b = (y[0], 1) if len(y) == 1 else y
    g = (a[0], b[1])
    if operand == 0:
        text = f"{format_shape(g)} @ {format_shape((b[1], b[0]))} -> {format_shape(x)}"
    else:
        text = f"{format_shape((a[1], a[0]))} @ {format_shape(g)} -> {format_shape(y)}"
    return text


def _matmul_notes(shapes: Sequence[Shape], operands: Sequence[str]) -> tuple[str, ...]:
    """How ``@`` takes a vector: as a one-row matrix on the left, a one-column one on the right."""
    (x, y), notes = shapes, []
    if len(x) == 1:
        notes.append(f"{operands[0]} {format_shape(x)} as a row {format_shape((1, x[0]))}")
    if len(y) == 1:
        notes.append(f"{operands[1]} {format_shape(y)} as a column {format_shape((y[0], 1))}")
    return tuple(notes)


_VERBS = {("+", 0): "added to", ("+", 1): "added to", ("-", 0): "used in", ("-", 1): "subtracted from",
          ("*", 0): "multiplied into", ("*", 1): "multiplied into", ("/", 1): "divided into"}


def _broadcast(op: str, operand: int, shape: Shape, out_shape: Shape, inner: str) -> Broadcast | None:
    """How an elementwise op stretched an operand of ``shape`` to ``out_shape``, or None."""
    if tuple(shape) == tuple(out_shape):
        return None
    extra = len(out_shape) - len(shape)
    axes = tuple(range(extra)) + tuple(i + extra for i, n in enumerate(shape) if n == 1 and out_shape[i + extra] != 1)
    if not shape:
        unit, units = "entry", "entries"
    elif len(out_shape) == 2 and axes == (0,):
        unit, units = "row", "rows"
    elif len(out_shape) == 2 and axes == (1,):
        unit, units = "column", "columns"
    else:
        listed = ", ".join(map(str, axes))
        unit, units = f"slice along axis {listed}", f"axis {listed}" if len(axes) == 1 else f"axes {listed}"
    return Broadcast(axes, unit, units, _VERBS.get((op, operand), "used in"), inner)


def _summed(broadcast: Broadcast, shape: Shape, out_shape: Shape) -> str:
    """The gradient of a broadcast operand as the language would write the sum: ``sum(dL/dZ, 0)``,
    ``sum(dL/dZ)`` for a scalar; in words where a kept size-1 axis needs no language form."""
    inner = broadcast.inner
    if not shape:
        return f"sum({inner})"
    if len(broadcast.axes) == 1 and len(out_shape) == len(shape) + 1:
        return f"sum({inner}, {broadcast.axes[0]})"
    return f"{inner} summed over the {broadcast.units} to {format_shape(shape)}"


# --- the walk ------------------------------------------------------------------------------------


def explain_tensors(program: Program, given: Mapping[str, Any], output: str | None = None, *,
                    seed: int | None = 0, max_steps: int = 500) -> TensorExplanation:
    """Both passes of the tensor program ``program`` on ``given`` values, in matrix form; the first
    ``max_steps`` lines of each (0 = all) are kept, the rest counted.  The output must be a number."""
    evaluation = evaluate_tensors(program, given, output, seed)
    run, output = evaluation.run, evaluation.output
    if evaluation.jacobian:
        shape = format_shape(evaluation.shape(output))
        raise InputError(f"'{output}' is a vector ({shape}); explain follows the gradient of a number back",
                         hint=f"explain sum({output}) or an entry such as {output}[0] (--output names another "
                              f"variable)", source=program.source)
    names = _names(program)
    definitions = _definitions(run, names, run.register(output))
    items, shares, totals = _backward(run, names, output)
    gradients = [(v.name, evaluation.derivatives.get(v.name, np.zeros_like(run.value(v.name))))
                 for v in program.inputs]
    limit = max_steps or None
    return TensorExplanation(
        output, run.value(output), definitions[:limit], len(definitions) - len(definitions[:limit]),
        items[:limit], len(items) - len(items[:limit]), gradients, max_steps, shares,
        {v.name: totals[v.register] for v in program.variables.values() if v.register in totals})


def _definitions(run: TensorRun, names: list[str], out: int) -> list[TensorDefinition]:
    """The forward pass up to the output: inputs, then each instruction (constants are written in place)."""
    definitions = []
    for register, (op, first, second, param, _) in enumerate(run.rows[:out + 1]):
        if op == CONST:
            continue
        if op == INPUT:
            shape = run.shapes[register]
            definitions.append(TensorDefinition(names[register], "", format_shape(shape), shape, run.values[register]))
            continue
        operands = run.program.operands(register, first, second)
        shape = run.shapes[register]
        typed = _expression(op, [format_shape(run.shapes[r]) for r in operands], param)
        definitions.append(TensorDefinition(
            names[register], _expression(op, [names[r] for r in operands], param),
            f"{typed} -> {format_shape(shape)}", shape, run.values[register]))
    return definitions


def _backward(run: TensorRun, names: list[str], output: str
              ) -> tuple[list[TensorItem], dict[str, dict[str, Any]], dict[int, Any]]:
    """The seed, then every edge's step and every total, in the order of the interpreter's reverse
    sweep (so totals equal its gradients); each statement's shares; every register's gradient."""
    rows = run.rows
    out = run.register(output)
    statements = statement_registers(run.program)
    variables = {v.register for v in run.program.variables.values()}
    learns = [row[0] != CONST for row in rows]
    totals: dict[int, Any] = {out: np.ones_like(run.values[out])}
    counts = [0] * len(rows)
    items: list[TensorItem] = [TensorSeed(output)]
    shares: dict[str, dict[str, Any]] = {}
    with np.errstate(all="ignore"):  # a derivative that does not exist shows as inf, as eval's does
        for register in range(out, -1, -1):
            g = totals.get(register)
            if g is None:
                continue
            if counts[register] > 1:  # every use is done: the sum is final
                items.append(TensorTotal(output, names[register], counts[register], g))
            _, first, second, _, _ = rows[register]
            if first < 0:
                continue
            operands = run.program.operands(register, first, second)
            needs = tuple(learns[r] for r in operands)
            if not any(needs):
                continue
            products = run.vjp(register, g, needs)  # the interpreter's own VJP of this instruction
            statement = statements.get(register, names[register])
            for position, (child, product) in enumerate(zip(operands, products)):
                if product is None or not learns[child]:
                    continue
                totals[child] = product if child not in totals else totals[child] + product
                counts[child] += 1
                if child in variables:
                    into = shares.setdefault(statement, {})
                    name = names[child]
                    into[name] = product if name not in into else into[name] + product
                items.append(_step(run, names, output, register, position, operands, product,
                                   counts[child] > 1, totals[child], statement))
    return items, shares, totals


def _step(run: TensorRun, names: list[str], output: str, register: int, position: int,
          operands: tuple[int, ...], product: Any, accumulate: bool, total: Any, statement: str) -> TensorStep:
    op, _, _, param, _ = run.rows[register]
    shapes = [run.shapes[r] for r in operands]
    out_shape = run.shapes[register]
    operand_names = [names[r] for r in operands]
    child_shape = shapes[position]
    broadcast = None
    notes = _notes(op, position, shapes, out_shape, param)
    if op in TENSOR_OPS:
        formula = _tensor_formula(op, position, output, names[register], operand_names, param)
        if op == "@":
            computation = _matmul_computation(position, shapes, out_shape)
            notes += _matmul_notes(shapes, operand_names)
        else:
            computation = f"{format_shape(out_shape)} -> {format_shape(child_shape)}"
    else:
        formula = _elementwise_formula(op, position, output, names[register], operand_names, param)
        broadcast = _broadcast(op, position, child_shape, out_shape, formula)
        computation = f"{format_shape(out_shape)} -> {format_shape(child_shape)}"
        if broadcast is not None:
            formula = _summed(broadcast, child_shape, out_shape)
    return TensorStep(output, names[operands[position]], names[register], op, position, formula, computation,
                      product, accumulate, total, statement, broadcast, notes)


# --- one row, in scalars -------------------------------------------------------------------------


@dataclass
class LayerSteps:
    """One statement ("layer") at two zoom levels: its matrix-form ``steps``, and the scalar chain
    rule of one ``row`` of it (``scalar``, ``analysis.steps``' explanation of the scalar view whose
    output weighs the row's entries by ``upstream``, the row of d output / d ``name``)."""

    name: str
    row: int | None
    upstream: Any
    steps: list[TensorStep]
    scalar: Explanation


def scalar_layers(program: Program, given: Mapping[str, Any], explanation: TensorExplanation, row: int = 0, *,
                  seed: int | None = 0, max_steps: int = 500) -> list[LayerSteps]:
    """Every statement of ``explanation``'s backward pass, in its order, with row ``row`` of it in
    scalars (a statement whose variable has fewer than two axes is shown whole)."""
    from ..execute import evaluate
    from ..execute.unroll import TooLarge, layer_view
    from .steps import explain

    layers = []
    for name in explanation.shares:
        adjoint = np.asarray(explanation.adjoints[name])
        chosen = row if adjoint.ndim >= 2 else None
        if chosen is not None and not chosen < adjoint.shape[0]:
            raise InputError(f"--row {row}: {name} has {adjoint.shape[0]} rows (0 to {adjoint.shape[0] - 1})",
                             program.variables[name].position, program.source,
                             f"choose a row from 0 to {adjoint.shape[0] - 1}")
        upstream = adjoint[chosen] if chosen is not None else adjoint
        try:
            view = layer_view(program, given, name, row=chosen, upstream=upstream,
                              label=f"{explanation.output}_via_{name}", seed=seed)
        except TooLarge as error:  # its hint names graph's options; explain's way out is another
            raise InputError(f"--scalar: statement {name} is too large to write out in scalars: {error.message}",
                             program.variables[name].position, program.source,
                             "--scalar is for small examples: explain fewer rows, or the matrix form alone "
                             "(without --scalar)") from None
        evaluation = evaluate(view.program, view.values, view.output, backward=False)
        steps = [item for item in explanation.steps if isinstance(item, TensorStep) and item.statement == name]
        layers.append(LayerSteps(name, chosen, upstream, steps, explain(evaluation, max_steps)))
    return layers
