"""The compiled program: the intermediate representation every interpreter consumes.

The compiler turns program text into a ``Program``; nothing downstream reads text
again.  A program is a flat list of instructions in execution order.  Instruction
``i`` computes register ``i``, and operands are always earlier registers, so one pass
front to back evaluates it and one pass back to front differentiates it, with no
recursion however deep the expression.

Every instruction is an ``Instruction(op, args, param, position)``:

=========  ==============  ==================  =====================================
``op``     ``args``        ``param``           computes
=========  ==============  ==================  =====================================
"input"    ()              the name (str)      the value of a named input
"const"    ()              the number (float)  a number written in the program
"**c"      (base,)         the exponent        ``base ** exponent``, a number exponent
any other  (x,) or (x, y)  None                the op of that name in ``engine.ops.OPS``
key of                                         applied to the operand registers:
``OPS``                                        ``+ - * / **`` (computed exponent),
                                               ``neg``, ``=`` (``b = a``: a copy of its
                                               own), and every function (``tanh``...)
=========  ==============  ==================  =====================================

``position`` is where the instruction is written (the operator, the function name,
the number or the name), for error messages.

``variables`` maps every name to a ``Variable``: its kind (an ``input``, possibly
with a ``default``, or an ``intermediate``), where it is first written, and the
register holding its value.  ``result`` names the output (the last statement; an
unnamed last expression is given the name ``output``).

Interpreters: ``execute.scalar`` builds a graph of ``Value`` nodes from it; the
vectorized executor runs it over NumPy columns; the symbolic differentiator turns it
into the program of its derivatives.  Each reads the op's maths from the op table.
"""

from __future__ import annotations

import math
from collections import namedtuple
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from ..errors import InputError, Position, Source, variables_hint

__all__ = [
    "CONST",
    "INPUT",
    "INTERMEDIATE",
    "OUTPUT",
    "POWER_CONST",
    "Instruction",
    "Program",
    "Variable",
    "check_inputs",
    "input_value",
    "missing_inputs",
    "missing_inputs_error",
    "output_name",
]

# Variable kinds (``OUTPUT`` is the kind reports give the variable being differentiated).
INPUT, INTERMEDIATE, OUTPUT = "input", "intermediate", "output"
# The two instructions that are not ops of the table, and the one op with a parameter.
CONST = "const"
POWER_CONST = "**c"


class Instruction(namedtuple("Instruction", "op args param position")):
    """One step of a program: ``op`` (str), ``args`` (tuple of registers), ``param`` (the
    input's name, the constant, the exponent, or None) and ``position``; see the module
    docstring for every kind."""

    __slots__ = ()


@dataclass
class Variable:
    """A named quantity: an input (with an optional default) or an intermediate."""

    name: str
    kind: str
    position: Position
    register: int
    default: float | None = None


@dataclass
class Program:
    """A parsed and checked program, ready to run with any input values."""

    source: Source
    instructions: list[Instruction]
    variables: dict[str, Variable]
    result: str

    @property
    def inputs(self) -> list[Variable]:
        return [v for v in self.variables.values() if v.kind == INPUT]

    def __len__(self) -> int:
        return len(self.instructions)

    def __iter__(self) -> Iterator[Instruction]:
        return iter(self.instructions)

    def names_by_register(self) -> dict[int, str]:
        """The variable name of each register that has one (the first name, for a shared one)."""
        names: dict[int, str] = {}
        for variable in self.variables.values():
            names.setdefault(variable.register, variable.name)
        return names

    def dependencies(self, output: str) -> list[bool]:
        """For each register, whether ``output`` depends on it (itself included)."""
        needed = [False] * len(self.instructions)
        needed[self.variables[output].register] = True
        for register in range(len(self.instructions) - 1, -1, -1):
            if needed[register]:
                for operand in self.instructions[register].args:
                    needed[operand] = True
        return needed


# --- checking the values given for the inputs ------------------------------------------------


# How many unused names a warning lists before it counts the rest.
UNUSED_SHOWN = 20


def check_inputs(program: Program, values: Mapping[str, object]) -> list[str]:
    """Reject values for computed names; return a warning for names the program doesn't use.

    However many unused names there are (a values file can hold millions), there is one
    warning, naming the first ``UNUSED_SHOWN`` and counting the rest.
    """
    unused = []
    for name in values:
        variable = program.variables.get(name)
        if variable is None:
            unused.append(name)
        elif variable.kind != INPUT:
            raise InputError(
                f"'{name}' is computed by the program, so it cannot be set",
                variable.position,
                program.source,
                f"'{name}' is assigned on line {variable.position.line}; set one of its inputs instead",
            )
    if not unused:
        return []
    if len(unused) == 1:
        return [f"'{unused[0]}' is not used by the program; its value is ignored"]
    shown = ", ".join(f"'{name}'" for name in unused[:UNUSED_SHOWN])
    more = len(unused) - UNUSED_SHOWN
    listed = shown + (f" and {more:,} more" if more > 0 else "")
    return [f"{len(unused):,} values are given for names the program does not use, so they are ignored: {listed}"]


def missing_inputs(program: Program, values: Mapping[str, object]) -> list[Variable]:
    """The inputs with neither a value in ``values`` nor a default, in program order."""
    return [v for v in program.inputs if v.default is None and v.name not in values]


# How many missing inputs an error names one by one; the rest are counted.
MISSING_SHOWN = 10


def missing_inputs_error(program: Program, missing: list[Variable]) -> InputError:
    """'no value for inputs a, b', pointing at the first use of the first, with how to give them."""
    shown = missing[:MISSING_SHOWN]
    more = len(missing) - len(shown)
    names = ", ".join(v.name for v in shown) + (f" and {more:,} more" if more else "")
    sets = " ".join(f"--set {v.name}=VALUE" for v in shown[:3]) + (" ..." if len(missing) > 3 else "")
    plural = "s" if len(missing) > 1 else ""
    notes = [f"'{v.name}' is first used at line {v.position.line}, column {v.position.column}"
             for v in shown[1:]]
    return InputError(
        f"no value for input{plural} {names}",
        missing[0].position,
        program.source,
        f"give values with {sets}, with --values FILE.json, or declare a default in the "
        f"program ('{missing[0].name} = 1.0')",
        notes,
    )


def output_name(program: Program, output: str | None) -> str:
    """The variable to differentiate: ``output`` when given (it must exist), else the result."""
    if output is None:
        return program.result
    if output not in program.variables:
        raise InputError(
            f"--output '{output}' is not a variable of the program",
            hint=variables_hint(list(program.variables), [output]),
            source=Source(program.source.name, ""),
        )
    return output


def input_value(variable: Variable, values: Mapping[str, float]) -> float:
    """The value an input takes: the one given, else its default (NaN when it has neither)."""
    given = values.get(variable.name)
    if given is not None:
        return float(given)
    return math.nan if variable.default is None else float(variable.default)
