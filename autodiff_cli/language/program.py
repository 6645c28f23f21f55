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
"const"    ()              the number (float)  a number written in the program, or a
                           or a ``Tensor-``    list literal (``ArrayLiteral``) or a
                           ``Constant``        random draw (``Initializer``)
"**c"      (base,)         the exponent        ``base ** exponent``, a number exponent
a key of   (x,) or (x, y)  None                the op of that name in ``engine.ops.OPS``
``OPS``                                        applied to the operand registers:
                                               ``+ - * / **`` (computed exponent),
                                               ``neg``, ``=`` (``b = a``: a copy of its
                                               own), and every function (``tanh``...),
                                               elementwise on tensors
any other (x,), (x, y),   the op's constant   the op of that name in
key of     or more (for    (an axis, the       ``engine.registry.ENTRIES``: ``@``,
ENTRIES    ``where``,      indices) or None    reductions, ``transpose``, ``index``...
           ``stack``...)
=========  ==============  ==================  =====================================

Every register has a **shape**: a tuple of ints, ``()`` for a scalar.  Shapes are not
stored by the compiler, because an input's shape is known only once its value is: an
input takes the shape of its default or of the value given for it.  ``shapes.infer``
gives the shape of every register for the inputs' shapes, checking every op's operands
on the way (a ``ShapeError`` at the op's line and column), before anything runs; every
interpreter of tensor programs reads those shapes.  A program of scalars only
(``Program.has_tensors`` false, every input given a number) has every shape ``()``,
and the scalar interpreters run it as they always have.

``position`` is where the instruction is written (the operator, the function name,
the number or the name), for error messages: a ``Position``, or a token number that
``program.source.position(...)`` turns into one (``errors.Where``).  Errors given a
token number and the source locate it themselves, so an interpreter passes
``position`` on as it is.  The compiler stores token numbers: working out the line and
column of every instruction of a big program would cost more than parsing it.

An op's operands past the second (``where(c, a, b)``, ``clip(x, lo, hi)``, ``stack``'s
entries) are rare, so rows do not carry them: ``Program.operands(register, first, second)``
gives every operand of an instruction, and is what an interpreter of tensor ops reads.

``instructions`` is a sequence of ``Instruction``: a list, or, as the compiler makes it,
an ``Instructions``, which stores them column by column (a few dozen bytes each rather
than a few hundred) and builds each ``Instruction`` when it is read.  Interpreters that
run every instruction read the columns through ``Program.rows()``.

``variables`` maps every name to a ``Variable``: its kind (an ``input``, possibly
with a ``default``, or an ``intermediate``), where it is first written, and the
register holding its value.  ``result`` names the output (the last statement; an
unnamed last expression is given the name ``output``).

Interpreters: ``execute.scalar`` builds a graph of ``Value`` nodes from it; the
vectorized executor runs it over NumPy columns; the symbolic differentiator turns it
into the program of its derivatives.  Each reads the op's maths from the op table.
"""

from __future__ import annotations

import json
import math
from array import array
from collections import namedtuple
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

from ..errors import InputError, Position, Source, Where, variables_hint

__all__ = [
    "ArrayLiteral",
    "CONST",
    "Initializer",
    "TensorConstant",
    "INPUT",
    "INTERMEDIATE",
    "OUTPUT",
    "POWER_CONST",
    "Instruction",
    "Instructions",
    "Program",
    "Variable",
    "check_inputs",
    "input_value",
    "missing_inputs",
    "missing_inputs_error",
    "output_name",
    "runs_as_tensors",
]

# Variable kinds (``OUTPUT`` is the kind reports give the variable being differentiated).
INPUT, INTERMEDIATE, OUTPUT = "input", "intermediate", "output"
# The two instructions that are not ops of the table, and the one op with a parameter.
CONST = "const"
POWER_CONST = "**c"


class TensorConstant:
    """A constant that is not a number: the ``param`` of a ``const`` instruction, and the
    ``default`` of an input declared with one.  ``shape`` is known when it is written."""

    __slots__ = ("shape",)
    shape: tuple[int, ...]


MAX_AXES = 32  # the most axes a tensor given as nested lists may have (NumPy's own limit is 64)


class ArrayLiteral(TensorConstant):
    """A list literal, ``[[1, 2], [3, 4]]``: its shape and its entries in row-major order."""

    __slots__ = ("values",)

    def __init__(self, shape: tuple[int, ...], values: tuple[float, ...]) -> None:
        self.shape = shape
        self.values = values

    @classmethod
    def from_nested(cls, value: Any) -> ArrayLiteral:
        """Nested lists of finite numbers (JSON's arrays, ``--set W='[[1, 2], [3, 4]]'``) as a literal;
        ValueError saying what is wrong for ragged rows, an empty list or an entry that is no number."""
        shape: list[int] = []
        level = value
        while isinstance(level, list):
            if not level:
                raise ValueError("an empty list has no entries to give a tensor")
            shape.append(len(level))
            if len(shape) > MAX_AXES:
                raise ValueError(f"the lists are nested more than {MAX_AXES} deep, more axes than a tensor may have")
            level = level[0]
        flat: list[float] = []
        stack = [(value, 0, "")]
        while stack:  # depth first, left to right: row-major order
            item, depth, path = stack.pop()
            if depth < len(shape):
                if not isinstance(item, list) or len(item) != shape[depth]:
                    has = (f"{len(item)} entr{'y' if len(item) == 1 else 'ies'}" if isinstance(item, list)
                           else "a number")
                    raise ValueError(f"the rows differ in length: row {path} has {has} where the first "
                                     f"has {shape[depth]}")
                stack.extend((entry, depth + 1, f"{path}[{i}]") for i, entry in reversed(list(enumerate(item))))
                continue
            if isinstance(item, bool) or not isinstance(item, (int, float)) or not math.isfinite(item):
                written = json.dumps(item) if isinstance(item, (bool, str)) or item is None else repr(item)
                raise ValueError(f"entry {path} is {written}, not a finite number")
            flat.append(float(item))
        return cls(tuple(shape), tuple(flat))

    def __neg__(self) -> ArrayLiteral:
        return ArrayLiteral(self.shape, tuple(-value for value in self.values))

    def nested(self) -> Any:
        """The entries as nested lists, as JSON writes them."""
        values: list[Any] = list(self.values)
        for size in reversed(self.shape[1:]):
            values = [values[i:i + size] for i in range(0, len(values), size)]
        return values

    def written(self) -> str:
        """The literal as the language writes it: ``[[1, 2], [3, 4]]``."""
        def text(value: Any) -> str:
            return "[" + ", ".join(map(text, value)) + "]" if isinstance(value, list) else _number_text(value)

        return text(self.nested())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ArrayLiteral):
            return NotImplemented
        return (self.shape, self.values) == (other.shape, other.values)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ArrayLiteral({self.shape!r}, {self.values!r})"


class Initializer(TensorConstant):
    """A random starting value, ``normal([16, 2], 0.5)``: drawn from the run's seed.

    ``kind`` is one of ``INITIALIZERS``; ``arguments`` its numbers after the shape (the
    standard deviation of ``normal``, the bounds of ``uniform``, none for ``zeros``).
    Initializers are drawn in the order they are written, so a seed fixes every one."""

    __slots__ = ("arguments", "kind")

    def __init__(self, kind: str, shape: tuple[int, ...], arguments: tuple[float, ...]) -> None:
        self.kind = kind
        self.shape = shape
        self.arguments = arguments

    def written(self) -> str:
        shape = "[" + ", ".join(map(str, self.shape)) + "]"
        return f"{self.kind}({', '.join([shape, *map(_number_text, self.arguments)])})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Initializer):
            return NotImplemented
        return (self.kind, self.shape, self.arguments) == (other.kind, other.shape, other.arguments)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Initializer({self.kind!r}, {self.shape!r}, {self.arguments!r})"


def _number_text(x: float) -> str:
    return str(int(x)) if x.is_integer() and abs(x) < 1e16 else repr(x)


# The initializers of the language: name -> (the numbers after the shape, their defaults).
# normal(shape, std): N(0, std^2); uniform(shape, low, high); zeros(shape).
INITIALIZERS: dict[str, tuple[tuple[str, ...], tuple[float, ...]]] = {
    "normal": (("std",), (1.0,)),
    "uniform": (("low", "high"), (-1.0, 1.0)),
    "zeros": ((), ()),
}


class Instruction(namedtuple("Instruction", "op args param position")):
    """One step of a program: ``op`` (str), ``args`` (tuple of registers), ``param`` (the
    input's name, the constant, the exponent, or None) and ``position`` (``errors.Where``);
    see the module docstring for every kind."""

    __slots__ = ()


Row = tuple[str, int, int, Any, Where]
"""An instruction as ``Program.rows()`` gives it: op, first and second operand (-1 for
none), param and position.  Operands past the second: ``Program.operands``."""


class Instructions(Sequence[Instruction]):
    """Instructions stored column by column, as the compiler makes them.

    ``ops`` (the op of each, as a small number: ``op_names[code]``), ``first`` and
    ``second`` (the operand registers, -1 for none), ``params`` (list) and ``where`` (token
    numbers).  Codes, registers and token numbers live in arrays of machine integers
    (widened when a number needs it), so an instruction costs about 20 bytes instead of
    the ~200 of an ``Instruction`` with its ``args`` tuple and int objects; a program of a
    million statements has several million instructions.
    """

    __slots__ = ("codes", "first", "more", "op_names", "ops", "params", "second", "where")

    def __init__(self) -> None:
        self.ops = array("B")
        self.op_names: list[str] = []  # code -> op
        self.codes: dict[str, int] = {}  # op -> code
        self.first = array("i")
        self.second = array("i")
        self.params: list[Any] = []
        self.where = array("i")
        self.more: dict[int, tuple[int, ...]] = {}  # register -> its operands past the second

    def extend(self, ops: list[str], first: list[int], second: list[int], params: list[Any],
               where: list[int], more: Mapping[int, tuple[int, ...]] | None = None) -> None:
        """Append instructions given as columns of equal length (``more``: the operands past the
        second of those that have more, by register)."""
        codes = self.codes
        for op in set(ops) - codes.keys():  # an op seen for the first time gets the next code
            codes[op] = len(self.op_names)
            self.op_names.append(op)
        self.ops = _append(self.ops, list(map(codes.__getitem__, ops)))
        self.first = _append(self.first, first)
        self.second = _append(self.second, second)
        self.params += params
        self.where = _append(self.where, where)
        if more:
            self.more.update(more)

    def __len__(self) -> int:
        return len(self.ops)

    @overload
    def __getitem__(self, index: int) -> Instruction: ...

    @overload
    def __getitem__(self, index: slice) -> list[Instruction]: ...

    def __getitem__(self, index: int | slice) -> Instruction | list[Instruction]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        a, b = self.first[index], self.second[index]
        args = () if a < 0 else (a,) if b < 0 else (a, b, *self.more.get(index, ()))
        return Instruction(self.op_names[self.ops[index]], args, self.params[index], self.where[index])

    def __iter__(self) -> Iterator[Instruction]:
        more = self.more
        for index, (op, a, b, param, where) in enumerate(self.rows()):
            yield Instruction(op, () if a < 0 else (a,) if b < 0 else (a, b, *more.get(index, ())), param, where)

    def rows(self) -> Iterator[Row]:
        return zip(map(self.op_names.__getitem__, self.ops), self.first, self.second, self.params, self.where)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(mine == theirs for mine, theirs in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<Instructions: {len(self):,}>"


def _append(column: array, numbers: list[int]) -> array:
    """``column`` with ``numbers`` appended, widened to 64-bit integers if one needs it."""
    try:
        column.fromlist(numbers)  # fromlist: twice as fast as extend; on an error it adds nothing
    except OverflowError:
        column = array("q", column)
        column.fromlist(numbers)
    return column


def _rows(instructions: Iterable[Instruction]) -> Iterator[Row]:
    for op, args, param, position in instructions:
        yield (op, args[0] if args else -1, args[1] if len(args) > 1 else -1, param, position)


class Variable:
    """A named quantity: an input (with an optional default) or an intermediate.

    ``position`` is where the name is first written.  The compiler gives it as a token
    number together with the ``source`` that locates it (``errors.Where``), so it is
    worked out only when read: the positions of a million variables would cost more
    than the rest of the parse.
    """

    # Slots, not a dataclass: a program can have millions of variables.
    __slots__ = ("_source", "_where", "default", "kind", "name", "register")

    def __init__(self, name: str, kind: str, position: Where, register: int, default: float | None = None,
                 source: Source | None = None) -> None:
        self.name = name
        self.kind = kind
        self.register = register
        self.default = default
        self._where = position
        self._source = source

    @property
    def position(self) -> Position:
        where = self._where
        if isinstance(where, int):
            if self._source is None:
                raise ValueError(f"variable {self.name!r}: token {where} given without the source that locates it")
            return self._source.position(where)
        return where

    def _fields(self) -> tuple[Any, ...]:
        return (self.name, self.kind, self.position, self.register, self.default)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Variable):
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        name, kind, position, register, default = self._fields()
        return (f"Variable(name={name!r}, kind={kind!r}, position={position!r}, register={register!r}, "
                f"default={default!r})")


@dataclass
class Program:
    """A parsed and checked program, ready to run with any input values."""

    source: Source
    instructions: Sequence[Instruction]
    variables: dict[str, Variable]
    result: str
    # Set by the compiler when the text writes any tensor syntax (a scan of every instruction would
    # cost a big scalar program time, and the tensor table's import every start-up); None: unknown.
    tensor_syntax: bool | None = None

    @property
    def inputs(self) -> list[Variable]:
        return [v for v in self.variables.values() if v.kind == INPUT]

    @property
    def has_tensors(self) -> bool:
        """Whether the program itself writes a tensor: a list literal, an initializer or a
        tensor op.  (Given tensor values, a program without any still runs as tensors.)"""
        if self.tensor_syntax is not None:
            return self.tensor_syntax
        from ..engine.registry import ENTRIES

        return any(op in ENTRIES and not ENTRIES[op].elementwise or isinstance(param, TensorConstant)
                   for op, _, param, _ in self.instructions)

    def __len__(self) -> int:
        return len(self.instructions)

    def __iter__(self) -> Iterator[Instruction]:
        return iter(self.instructions)

    def rows(self) -> Iterator[Row]:
        """Every instruction as a ``Row`` (op, first, second, param, position), in order: the
        fast way to run all of them, without an ``Instruction`` and ``args`` tuple apiece."""
        instructions = self.instructions
        if isinstance(instructions, Instructions):
            return instructions.rows()
        return _rows(instructions)

    @property
    def more_operands(self) -> Mapping[int, tuple[int, ...]]:
        """The operands past the second of the instructions that have more, by register."""
        instructions = self.instructions
        if isinstance(instructions, Instructions):
            return instructions.more
        return {register: instruction.args[2:] for register, instruction in enumerate(instructions)
                if len(instruction.args) > 2}

    def operands(self, register: int, first: int, second: int) -> tuple[int, ...]:
        """Every operand register of instruction ``register``, whose row holds ``first`` and
        ``second``: the row's own for most, with those past the second for ``where``, ``clip``..."""
        if second < 0:
            return () if first < 0 else (first,)
        instructions = self.instructions
        more = instructions.more.get(register) if isinstance(instructions, Instructions) \
            else instructions[register].args[2:]
        return (first, second, *more) if more else (first, second)

    def position(self, where: Where) -> Position:
        """An instruction's ``position`` as a Position (it may be a token number)."""
        return self.source.position(where)

    def names_by_register(self) -> dict[int, str]:
        """The variable name of each register that has one (the first name, for a shared one)."""
        names: dict[int, str] = {}
        for variable in self.variables.values():
            names.setdefault(variable.register, variable.name)
        return names

    def dependencies(self, output: str) -> list[bool]:
        """For each register, whether ``output`` depends on it (itself included)."""
        rows = list(self.rows())
        needed = [False] * len(rows)
        needed[self.variables[output].register] = True
        for register in range(len(rows) - 1, -1, -1):
            if needed[register]:
                _, first, second, _, _ = rows[register]
                for operand in self.operands(register, first, second):
                    needed[operand] = True
        return needed


def runs_as_tensors(program: Program, values: Mapping[str, object]) -> bool:
    """Whether a run needs the tensor interpreter: the program writes a tensor, or a value given
    for an input is one.  Otherwise every shape is ``()`` and the scalar interpreters run it."""
    variables = program.variables
    return program.has_tensors or any(isinstance(value, TensorConstant) for name, value in values.items()
                                      if name in variables)  # a value for no name of the program is unused


def first_tensor_instruction(program: Program) -> Instruction | None:
    """The first instruction that makes a tensor (for errors of commands that take scalars only)."""
    from ..engine.registry import ENTRIES

    variables = program.variables
    for instruction in program.instructions:
        op, param = instruction.op, instruction.param
        if op in ENTRIES and not ENTRIES[op].elementwise or isinstance(param, TensorConstant) or (
                op == INPUT and isinstance(variables[param].default, TensorConstant)):
            return instruction
    return None


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


def missing_inputs_error(program: Program, missing: list[Variable], give: str | None = None) -> InputError:
    """'no value for inputs a, b', pointing at the first use of the first, with how to give them:
    ``give`` in the caller's terms (Python arguments), or by default the command line's options."""
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
        f"{give or f'give values with {sets}, with --values FILE.json'}, or declare a default in the "
        f"program ('{missing[0].name} = 1.0')",
        notes,
    )


def output_name(program: Program, output: str | None, spelled: str | None = None) -> str:
    """The variable to differentiate: ``output`` when given (it must exist), else the result.

    ``spelled``: how the caller writes the option it came from, for the error, e.g.
    ``output='q'`` for a Python argument; by default the command line's ``--output 'q'``."""
    if output is None:
        return program.result
    if output not in program.variables:
        spelled = spelled or f"--output '{output}'"
        raise InputError(
            f"{spelled} is not a variable of the program",
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
