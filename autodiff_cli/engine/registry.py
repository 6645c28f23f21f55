"""The op registry: every op of the language by name, one entry (``ops.Op``) each.

``ENTRIES`` is the one table every consumer reads.  Every entry has the same fields: its
shape rule, NumPy forward, VJP and JVP, its VJP in the language's own ops (what ``diff``
writes), its one-row unrolling and the entries it reads, its forms (written, LaTeX, NumPy)
and facts (``exact``, ``indices``, ``arguments``...).  ``entry.elementwise`` says whether it
is elementwise (``+``, ``tanh``...): such an entry also holds the float kernel and local
derivatives the scalar engine is built from (``ops.py``'s rows), and its other fields are
filled in from its kernels (``tensor_ops.elementwise_entry``); every other op's entry is
written out in ``tensor_ops.py``.  ``check_entry`` checks every field of every entry when the
table is built, at import.  A consumer that needs a fact of an op asks its entry here
instead of keeping a list of op names.

Standard library only.
"""

from __future__ import annotations

import re
from typing import Any

from .ops import FUNCTIONS, OPS, Op, short_number
from .tensor_ops import (ROWS, VARIADIC, WRITES_NO_TERM, Argument, _index_text, argument_values, elementwise_entry,
                         format_shape)

__all__ = ["ENTRIES", "Op", "activations", "check_entry", "entry", "function_written_as", "is_exact",
           "latex_commands", "latex_form", "numpy_form", "passes_no_gradient", "write"]

_KINDS = ("axis", "count", "word", "shape")


def _problems_of_elementwise(op: Op) -> list[str]:
    """What an elementwise entry's own fields (its kernels and their rules) lack."""
    problems = []
    if op.arity not in (1, 2) or (op.arity == 2) != ("{y}" in op.written):
        problems.append("arity and written form disagree")
    if not callable(op.scalar) or not callable(op.vector):
        problems.append("a float kernel (scalar) and a NumPy kernel (vector) are required")
    if len(op.rule) != op.arity or op.symbolic is None or len(op.symbolic) != op.arity:
        problems.append("one rule and one symbolic local derivative per operand are required")
    if op.is_function and not (op.python and op.latex and op.numpy):
        problems.append("a function needs its python, latex and numpy forms")
    if (op.method is None) != op.written.startswith(op.name + "("):
        problems.append("an operator names Value's method that applies it (method); a call has none")
    if op.python_helper is not None and f"def {op.python.split('(')[0]}(" not in op.python_helper:
        problems.append("python_helper must define the function the python form calls")
    if op.activation is not None and (len(op.activation) != 2 or not isinstance(op.activation[0], float)):
        problems.append("activation is None or the limits (low, high) where the gradient vanishes")
    if op.parity not in (None, "even", "odd") or op.sign not in (None, "nonnegative", "operand"):
        problems.append("parity is even, odd or None; sign is nonnegative, operand or None")
    return problems


def _problems_of_structural(op: Op) -> list[str]:
    """What an entry that is not elementwise lacks in its forms and rules."""
    fields = ("operands",) if op.arity == VARIADIC else "xyz"[:op.arity]
    problems = []
    if op.arity not in (VARIADIC, 1, 2, 3) or not all(f"{{{f}}}" in op.written and f"{{{f}}}" in op.latex
                                                     for f in fields):
        problems.append("the written and latex forms must hold every operand")
    if op.numpy is not None and not all(f"{{{f}}}" in op.numpy for f in fields):
        problems.append("the numpy form must hold every operand")
    if len(op.rule) != (1 if op.arity == VARIADIC else op.arity) or not all(r.startswith("dL/d") for r in op.rule):
        problems.append("one rule 'dL/d... = ...' per operand is required")
    return problems


def check_entry(op: Op) -> None:
    """Registration: every field the executors, writers and explain read is there and has the
    form they expect, so that a new entry missing one fails at import, not in the one command
    that reads it.  TypeError naming the entry and each problem."""
    problems = []
    if "{x}" not in op.written and "{operands}" not in op.written and op.arity != 0:
        problems.append("the written form must hold its operands")
    for argument in op.arguments:
        if not isinstance(argument, Argument) or argument.kind not in _KINDS:
            problems.append(f"argument {argument!r} must be an Argument of kind axis, count, word or shape")
        elif op.numpy is not None and f"{{{argument.name}}}" not in op.numpy:
            problems.append(f"the numpy form must hold the argument {{{argument.name}}}")
    called = " ".join(source for _, source in op.numpy_helpers) + (op.numpy or "")
    for name, source in op.numpy_helpers:
        if f"def {name}(" not in source or f"{name}(" not in called.replace(f"def {name}(", ""):
            problems.append(f"the numpy helper {name} must be defined by its source and called")
    if op.rule_n is not None and not callable(op.rule_n):
        problems.append("rule_n is None or a function of (operand, shapes, out_shape)")
    if op.arity == 0:  # a constant made by the compiler: its shape, its entries and its arguments
        if not (callable(op.shape) and callable(op.forward) and op.arguments and op.rule == ()):
            problems.append("an op of no operands needs a shape rule, a forward of its entries and arguments")
    else:
        if not all(callable(f) for f in (op.shape, op.forward, op.vjp, op.jvp, op.language_vjp, op.unroll, op.reads)):
            problems.append("a shape rule, forward, VJP, JVP, the VJP in the language's ops, the unrolling "
                            "and the entries read are required")
        problems += _problems_of_elementwise(op) if op.elementwise else _problems_of_structural(op)
    if problems:
        raise TypeError(f"op {op.name!r}: " + "; ".join(problems))


def _build() -> dict[str, Op]:
    table: dict[str, Op] = {}
    for op in (*(elementwise_entry(row) for row in OPS.values()), *ROWS):
        if op.name in table:
            raise TypeError(f"op {op.name!r}: two entries of one name")
        check_entry(op)
        table[op.name] = op
    return table


ENTRIES: dict[str, Op] = _build()
"""Every op by name: the elementwise ones first, in ``ops.py``'s order, then the others in
``tensor_ops.py``'s."""


def entry(name: str) -> Op:
    """The registry entry of an op (KeyError for a name that is none)."""
    return ENTRIES[name]


def is_exact(name: str) -> bool:
    """The op only copies, negates or moves entries, so its result adds no rounding error."""
    found = ENTRIES.get(name)
    return bool(found is not None and found.exact)


def passes_no_gradient(name: str) -> bool:
    """Whether no gradient flows through op ``name`` to any operand: its VJP writes no term, as for
    argmax, one_hot and the comparisons (eval says so where a gradient is asked through one)."""
    found = ENTRIES.get(name)
    return found is not None and found.language_vjp in WRITES_NO_TERM


def activations() -> dict[str, tuple[float, float | None]]:
    """The functions a layer applies to its units, each with the limits where its gradient
    vanishes (fit's report looks for dead or saturated units)."""
    return {name: op.activation for name, op in ENTRIES.items() if op.activation is not None}


def latex_commands() -> dict[str, str]:
    """The LaTeX command that writes each function, read back as it (``tanh`` for ``\\tanh``,
    ``sigmoid`` for ``\\sigma``, ``sqrt`` for ``\\sqrt``), and each entry's aliases (``\\ln``)."""
    found = {}
    for name, op in FUNCTIONS.items():
        head = re.match(r"\\([A-Za-z]+)(?:\\left\(|\{)", op.latex)
        if head and head.group(1) != "operatorname":
            found[head.group(1)] = name
        found.update(dict.fromkeys(op.latex_aliases, name))
    return found


def function_written_as(latex_head: str) -> str:
    """The function whose LaTeX form begins with ``latex_head`` (``\\left|`` is abs)."""
    (name,) = [name for name, op in FUNCTIONS.items() if op.latex.startswith(latex_head)]
    return name


# --- forms: an op written with its operands and arguments -------------------------------------------


def _argument_texts(op: Op, param: Any) -> list[str]:
    """The arguments of a call as the language writes them, up to the last one not at its default."""
    values = argument_values(op.arguments, param)
    texts = []
    for argument, value in zip(op.arguments, values):
        if value == argument.default and argument.kind != "shape":
            texts.append("")
        elif argument.kind == "word":
            texts.append(argument.name)
        elif argument.kind == "shape":
            texts.append(format_shape(value))
        else:
            texts.append(str(value))
    while texts and not texts[-1]:
        texts.pop()
    return [text for text in texts if text]


def write(name: str, operands: Any, param: Any = None) -> str:
    """An op written with its operands (texts) and its parameter: ``sum(x)``, ``sum(x, -1)``,
    ``sum(x, 1, keepdim)``, ``reshape(x, [2, -1])``, ``x[0, 1:3]``, ``x @ y``, ``x + y``,
    ``x**2`` (an elementwise op's constant exponent as a program writes it)."""
    op = ENTRIES[name]
    if op.elementwise:
        return op.written.format(x=operands[0], y=operands[1] if len(operands) > 1 else "",
                                 c=short_number(float(param)) if "{c}" in op.written and param is not None else "c")
    fields = {"operands": ", ".join(operands)} if op.arity == VARIADIC else dict(zip("xyz", operands))
    if op.written_param is not None and not op.arguments:  # indexing: its items are its form
        return op.written_param.format(index=_index_text(param or ()), **fields)
    texts = _argument_texts(op, param)
    if not texts:
        return op.written.format(**fields)
    if op.written_param is not None:  # a form of its own with its arguments: stack([a, b], 1)
        return op.written_param.format(**fields, **dict(zip((a.name for a in op.arguments), texts)))
    return op.written.format(**fields)[:-1] + "".join(", " + text for text in texts) + ")"


def numpy_form(name: str, operands: Any, param: Any = None) -> str:
    """The op's NumPy form (``diff --format python``) with its operands and arguments:
    ``np.sum(x, axis=1, keepdims=True)``, ``np.reshape(x, (2, -1))``, ``np.tanh(x)``."""
    op = ENTRIES[name]
    fields = {}
    for argument, value in zip(op.arguments, argument_values(op.arguments, param)):
        python = tuple(value) if argument.kind == "shape" else value
        if argument.numpy:
            fields[argument.name] = "" if value == argument.default else f", {argument.numpy}={python!r}"
        else:
            fields[argument.name] = repr(python)
    return op.numpy.format(**fields, param=param, operands=", ".join(operands),  # type: ignore[no-any-return]
                           **dict(zip("xyz", operands)))


def latex_form(name: str, param: Any = None) -> str:
    """The op's LaTeX form with its arguments filled in (``{x}`` and ``{y}`` left for the
    operands): an axis as a subscript, ``_{\\text{axis } 1}``; a shape as one, ``_{[2, -1]}``;
    a count not at its default as a superscript; a word (keepdim) changes only the shape."""
    op = ENTRIES[name]
    form: str = op.latex
    for argument, value in zip(op.arguments, argument_values(op.arguments, param)):
        if argument.kind == "word" or value == argument.default and argument.kind != "shape":
            text = ""
        elif argument.kind == "axis":
            text = f"_{{\\text{{axis }} {value}}}"
        elif argument.kind == "shape":
            text = f"_{{{format_shape(value)}}}"
        else:
            text = f"^{{\\text{{{argument.name} }} {value}}}"
        form = form.replace("{" + argument.name + "}", text)
    return form
