"""The expression language: program text -> ``Program``, the representation every interpreter runs.

``parse`` is the entry point; ``program.py`` documents the instructions.
"""

from .compiler import parse
from .program import (
    INPUT,
    INTERMEDIATE,
    OUTPUT,
    Instruction,
    Program,
    Variable,
    check_inputs,
    missing_inputs,
)

__all__ = [
    "INPUT",
    "INTERMEDIATE",
    "OUTPUT",
    "Instruction",
    "Program",
    "Variable",
    "check_inputs",
    "missing_inputs",
    "parse",
]
