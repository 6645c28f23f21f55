"""The engine: the op table, the scalar ``Value`` and forward mode (standard library only).

``ops.py`` defines every operation once; ``value.py`` is the micrograd-compatible
``Value`` made from it; ``graph.py`` walks graphs of Values without recursion;
``forward.py`` is forward mode over the same graphs.
"""

from .graph import Tape, iter_edges, paused_cycle_collector, topological_order
from .ops import DERIVATIVE_RULES, FUNCTIONS, OPS, DomainError, Op, op_key, short_number
from .value import Value

__all__ = [
    "DERIVATIVE_RULES",
    "FUNCTIONS",
    "OPS",
    "DomainError",
    "Op",
    "Tape",
    "Value",
    "iter_edges",
    "op_key",
    "paused_cycle_collector",
    "short_number",
    "topological_order",
]
