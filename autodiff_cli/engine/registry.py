"""The op registry: every op of the language by name, one entry each.

An elementwise op's entry is its ``ops.Op`` row (float kernel and local derivatives, NumPy kernel,
rules, forms); a structural or composite op's is its ``tensor_ops.TensorOp`` row (shape rule,
NumPy forward, VJP and JVP, forms).  Both tables are checked field by field when they are built.
Everything that needs a fact of an op (is it exact, is it an activation, its NumPy or LaTeX form)
asks its entry here instead of keeping a list of op names.

Standard library only.
"""

from __future__ import annotations

import re
from typing import Any

from .ops import FUNCTIONS, OPS
from .tensor_ops import TENSOR_OPS

__all__ = ["ENTRIES", "activations", "entry", "function_written_as", "is_exact", "latex_commands"]

ENTRIES: dict[str, Any] = {**OPS, **TENSOR_OPS}
"""Every op by name: an ``Op`` or a ``TensorOp``."""


def entry(name: str) -> Any:
    """The registry entry of an op (KeyError for a name that is none)."""
    return ENTRIES[name]


def is_exact(name: str) -> bool:
    """The op only copies, negates or moves entries, so its result adds no rounding error."""
    found = ENTRIES.get(name)
    return bool(found is not None and found.exact)


def activations() -> dict[str, tuple[float, float | None]]:
    """The functions a layer applies to its units, each with the limits where its gradient
    vanishes (fit's report looks for dead or saturated units)."""
    return {name: op.activation for name, op in OPS.items() if op.activation is not None}


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
