"""The op registry: every op of the language by name, one entry each.

An elementwise op's entry is its ``ops.Op`` row (float kernel and local derivatives, NumPy kernel,
rules, forms); a structural or composite op's is its ``tensor_ops.TensorOp`` row (shape rule,
NumPy forward, VJP and JVP, forms).  Both tables are checked field by field when they are built.
Everything that needs a fact of an op (is it exact, is it an activation, its NumPy or LaTeX form)
asks its entry here instead of keeping a list of op names.

Standard library only.
"""

from __future__ import annotations

from typing import Any

from .ops import OPS
from .tensor_ops import TENSOR_OPS

__all__ = ["ENTRIES", "activations", "entry", "is_exact"]

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
