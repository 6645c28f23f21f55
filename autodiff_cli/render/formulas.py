"""Programs written out as formulas: program text, and derivative programs as text, LaTeX,
Python and JSON.

``program_text`` writes any ``Program`` in the language, one statement per named variable,
so that parsing the text and writing it again gives the same text.  The others write
a ``DerivativeProgram`` (``execute.symbolic``) for people and for other tools.

Every expression is written by one walk shared by all the syntaxes: a first pass up
the expression decides, for each operation, how it is laid out and how tightly it
binds; a second pass writes the pieces from an explicit stack, adding parentheses
where an operand binds more loosely than its place needs.  Nothing recurses, so an
expression nested a million deep is written like any other.  Pure: returns text.
"""

from __future__ import annotations

import json
import keyword
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..engine.ops import CALLS, OPS, short_number
from ..errors import ProgramError
from ..language.program import CONST, INPUT, POWER_CONST, Program

if TYPE_CHECKING:
    from ..execute.symbolic import Derivative, DerivativeProgram

__all__ = [
    "derivatives_json",
    "derivatives_latex",
    "derivatives_program",
    "derivatives_python",
    "derivatives_text",
    "operation_count",
    "program_text",
]

# How tightly each form binds, loosest first (the grammar's levels).
SUM, PRODUCT, UNARY, POWER, ATOM = 1, 2, 3, 4, 5
FRACTION = 4.5  # LaTeX's \frac: an atom in a product, but not a base of a power

# A piece of a layout: literal text, or (operand index, the binding it needs, whether it
# follows other text, so that a leading minus sign must be parenthesized).
Piece = Any
Layout = tuple[float, list[Piece]]


class _Operand:
    """What the layout of an operation may ask about an operand already laid out."""

    __slots__ = ("binding", "first", "number")

    def __init__(self, binding: float, first: str, number: bool) -> None:
        self.binding = binding
        self.first = first  # the first character of its text: "-", a digit "0", or "a"
        self.number = number


class Syntax:
    """How names, numbers and each operation are written; ``program_syntax`` is the language's."""

    open, close = "(", ")"

    def name(self, name: str) -> str:
        return name

    def number(self, value: float) -> tuple[str, float]:
        text = short_number(value)
        return text, (UNARY if value < 0 else ATOM)

    def layout(self, op: str, param: Any, operands: list[_Operand]) -> Layout:
        if op in ("+", "-"):
            return SUM, [(0, SUM, False), f" {op} ", (1, PRODUCT, True)]
        if op in ("*", "/"):
            return PRODUCT, [(0, PRODUCT, False), op, (1, UNARY, True)]
        if op == "neg":
            return UNARY, ["-", (0, UNARY, True)]
        if op == "**":
            return POWER, [(0, ATOM, False), "**", (1, POWER, True)]
        if op == POWER_CONST:
            exponent = short_number(param)
            return POWER, [(0, ATOM, False), "**" + (f"({exponent})" if param < 0 else exponent)]
        _function(op, "program text")
        if OPS[op].arity == 2:  # maximum(x, y)
            return ATOM, [f"{op}(", (0, SUM, False), ", ", (1, SUM, False), ")"]
        return ATOM, [f"{op}(", (0, SUM, False), ")"]


# The operators, laid out by precedence in each syntax; every other op is a function of the
# op table, written from its row (``python``, ``latex``).
OPERATORS = frozenset(("+", "-", "*", "/", "neg", "**", POWER_CONST, "="))


def _function(op: str, form: str, template: str | None = "") -> str:
    """The op table's ``template`` for function ``op`` in ``form``, or an error that says
    what the row lacks: never output that calls what does not exist."""
    row = OPS.get(op)
    if row is None or not (row.is_function or op in CALLS) or op in OPERATORS:
        raise ProgramError(
            f"'{op}' is neither an operator nor a function of the op table, so it cannot be "
            f"written as {form}"
        )
    if template is None:
        raise ProgramError(
            f"the function '{op}' has no {form} form in the op table",
            hint=f"choose another --format, or give '{op}' one in its row of autodiff_cli/engine/ops.py",
        )
    return template


def _call(template: str, binding: float) -> list[Piece]:
    """A layout from a template where ``{x}`` stands for the operand (``{y}`` for a second one):
    ``math.tanh({x})``, ``_maximum({x}, {y})``."""
    pieces: list[Piece] = []
    for k, part in enumerate(template.split("{y}")):
        texts = part.split("{x}")
        if k:
            pieces.append((1, binding, False))
        pieces.append(texts[0])
        for text in texts[1:]:
            pieces.extend(((0, binding, False), text))
    return pieces


program_syntax = Syntax()


def _expression(program: Program, root: int, syntax: Syntax, names: dict[int, str]) -> str:
    """The text of register ``root``, inline down to the registers in ``names`` (written by name)."""
    instructions = program.instructions

    def resolve(register: int) -> int:
        while register not in names and instructions[register].op == "=":
            register = instructions[register].args[0]
        return register

    if instructions[root].op == "=":  # `b = a`: the statement is the value copied
        root = resolve(instructions[root].args[0])
        if root in names:
            return syntax.name(names[root])

    # Pass 1: lay out every register of the expression, operands before their users.
    layouts: dict[int, Layout] = {}
    operands_of: dict[int, tuple[int, ...]] = {}
    described: dict[int, _Operand] = {}
    stack = [(root, False)]
    while stack:
        register, ready = stack.pop()
        if register in described:
            continue
        op, args, param, _ = instructions[register]
        if register in names and register != root:
            described[register] = _Operand(ATOM, _first(syntax.name(names[register])), False)
            continue
        if op == INPUT:
            described[register] = _Operand(ATOM, _first(syntax.name(param)), False)
            continue
        if op == CONST:
            text, binding = syntax.number(param)
            layouts[register] = (binding, [text])
            described[register] = _Operand(binding, _first(text), True)
            continue
        operands = tuple(resolve(a) for a in args)
        if not ready:
            stack.append((register, True))
            stack.extend((a, False) for a in operands if a not in described)
            continue
        operands_of[register] = operands
        layout = syntax.layout(op, param, [described[a] for a in operands])
        layouts[register] = layout
        first = layout[1][0]
        if isinstance(first, str):
            lead = _first(first)
        else:
            operand = described[operands[first[0]]]
            lead = "(" if operand.binding < first[1] else operand.first
        described[register] = _Operand(layout[0], lead, False)
    # Pass 2: write the pieces.
    out: list[str] = []
    work: list[Any] = [(root, False)]
    while work:
        item = work.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        register, wrap = item
        if register != root and register in names:
            out.append(syntax.name(names[register]))
            continue
        if instructions[register].op == INPUT:
            out.append(syntax.name(instructions[register].param))
            continue
        if wrap:
            work.append(syntax.close)
        binding, pieces = layouts[register]
        for piece in reversed(pieces):
            if isinstance(piece, str):
                work.append(piece)
            else:
                operand = operands_of[register][piece[0]]
                info = described[operand]
                work.append((operand, info.binding < piece[1] or (piece[2] and info.first == "-")))
        if wrap:
            work.append(syntax.open)
    return "".join(out)


def _first(text: str) -> str:
    if not text:
        return "a"
    if text[0] == "-":
        return "-"
    return "0" if text[0].isdigit() else "a"


def _statements(program: Program, syntax: Syntax, read_back: bool = False) -> list[tuple[str, str]]:
    """(name, expression) for each named variable in program order; inputs without a value are
    not statements.

    With ``read_back`` (program text, to be parsed again), a computed variable whose value is
    a number (``=`` of an unnamed constant, as the differentiator writes ``df_dx``'s 2) is
    written ``df_dx = 2 + 0``: the language reads ``name = <number>`` (signs and parentheses
    included) as an input with a default, which ``--set`` could override and ``diff``
    would differentiate with respect to.  ``2 + 0`` is an operation, so it stays computed,
    and it reads back as an addition that is written the same way again.
    """
    names = {v.register: v.name for v in program.variables.values()}
    instructions = program.instructions
    statements = []
    for variable in sorted(program.variables.values(), key=lambda v: v.register):
        if variable.kind == INPUT:
            if variable.default is not None:
                statements.append((variable.name, syntax.number(variable.default)[0]))
            continue
        text = _expression(program, variable.register, syntax, names)
        if read_back and _copies_a_number(instructions, variable.register, names):
            text += " + 0"
        statements.append((variable.name, text))
    return statements


def _copies_a_number(instructions: Any, register: int, names: dict[int, str]) -> bool:
    """Whether register ``register`` is ``=`` of a number, through unnamed copies."""
    if instructions[register].op != "=":
        return False
    while instructions[register].op == "=":
        register = instructions[register].args[0]
        if register in names:
            return False
    return instructions[register].op == CONST


def program_text(program: Program) -> str:
    """The program in its own language: ``name = expression`` per line, inputs with a value
    first where the program declares them.  Parsing it and writing it again gives the same text,
    and every variable the program computes is read back as computed."""
    return "".join(f"{name} = {text}\n" for name, text in _statements(program, program_syntax, True))


def operation_count(program: Program) -> int:
    """How many operations the program's text writes: every instruction that computes
    (``b = a`` copies, inputs and numbers are not operations; a function call is one)."""
    return sum(1 for instruction in program.instructions if instruction.op not in (INPUT, CONST, "="))


# --- derivative programs -------------------------------------------------------------------


def derivatives_program(result: DerivativeProgram) -> str:
    """The derivative program as a program of the language: feed it to eval, graph or diff."""
    return program_text(result.program)


def _parts(
    result: DerivativeProgram, syntax: Syntax
) -> tuple[list[tuple[str, str]], list[tuple[Derivative, str]]]:
    """(intermediate statements, derivatives) with their expressions in ``syntax``."""
    texts = dict(_statements(result.program, syntax))
    intermediates = [(name, texts[name]) for name in result.intermediates]
    return intermediates, [(d, texts[d.name]) for d in result.derivatives]


def derivatives_text(result: DerivativeProgram) -> str:
    """``df/dx = 6*x + y``, one derivative a line, after the shared intermediates they use."""
    intermediates, derivatives = _parts(result, program_syntax)
    lines = [f"{name} = {text}" for name, text in intermediates]
    if lines:
        lines.append("")
    lines.extend(f"{d.label} = {text}" for d, text in derivatives)
    return "\n".join(lines) + "\n"


def derivatives_json(result: DerivativeProgram) -> str:
    """One JSON object: what was differentiated, the inputs, the intermediates, each derivative
    as an expression of the language, and the whole program."""
    intermediates, derivatives = _parts(result, program_syntax)
    inputs = [
        {"name": v.name, "default": v.default}
        for v in result.program.inputs
        if v.name not in {d.name for d in result.derivatives}
    ]
    document = {
        "of": result.of,
        "wrt": result.wrt,
        "order": result.order,
        "inputs": inputs,
        "intermediates": [{"name": name, "expression": text} for name, text in intermediates],
        "derivatives": [
            {"name": d.name, "label": d.label, "wrt": list(d.wrt), "expression": text}
            for d, text in derivatives
        ],
        "program": program_text(result.program),
    }
    return json.dumps(document, indent=2) + "\n"


# --- LaTeX ---------------------------------------------------------------------------------

_GREEK = frozenset(
    (
        "alpha",
        "beta",
        "gamma",
        "delta",
        "epsilon",
        "zeta",
        "eta",
        "theta",
        "iota",
        "kappa",
        "lambda",
        "mu",
        "nu",
        "xi",
        "pi",
        "rho",
        "sigma",
        "tau",
        "upsilon",
        "phi",
        "chi",
        "psi",
        "omega",
        "Gamma",
        "Delta",
        "Theta",
        "Lambda",
        "Xi",
        "Pi",
        "Sigma",
        "Phi",
        "Psi",
        "Omega",
    )
)
_INDEXED = re.compile(r"([A-Za-z]+?)_?(\d+)\Z")


def latex_name(name: str) -> str:
    """``x`` -> ``x``, ``x1`` -> ``x_{1}``, ``alpha`` -> ``\\alpha``, ``loss`` -> ``\\mathrm{loss}``."""
    indexed = _INDEXED.match(name)
    if indexed and (len(indexed.group(1)) == 1 or indexed.group(1) in _GREEK):
        return f"{latex_name(indexed.group(1))}_{{{indexed.group(2)}}}"
    if len(name) == 1 and name != "_":  # a bare _ would start a subscript
        return name
    if name in _GREEK:
        return "\\" + name
    return r"\mathrm{" + name.replace("_", r"\_") + "}"


class _Latex(Syntax):
    open, close = r"\left(", r"\right)"

    def name(self, name: str) -> str:
        return latex_name(name)

    def number(self, value: float) -> tuple[str, float]:
        text = short_number(value)
        mantissa, e, exponent = text.partition("e")
        if not e:
            return text, (UNARY if value < 0 else ATOM)
        return rf"{mantissa} \times 10^{{{int(exponent)}}}", PRODUCT

    def layout(self, op: str, param: Any, operands: list[_Operand]) -> Layout:
        if op in ("+", "*"):
            # Sums and products need no grouping on paper (only the program text keeps it, to
            # read back the same).  Factors are juxtaposed (6 x, b f) unless the right one
            # starts with a digit (2 \cdot 3).
            if op == "+":
                return SUM, [(0, SUM, False), " + ", (1, SUM, True)]
            digit = operands[1].first == "0" and operands[1].binding >= PRODUCT
            return PRODUCT, [(0, PRODUCT, False), r" \cdot " if digit else " ", (1, PRODUCT, True)]
        if op == "/":
            return FRACTION, [r"\frac{", (0, 0, False), "}{", (1, 0, False), "}"]
        if op == "**":
            return POWER, [(0, ATOM, False), "^{", (1, 0, False), "}"]
        if op == POWER_CONST:
            return POWER, [(0, ATOM, False), f"^{{{short_number(param)}}}"]
        if op in OPERATORS:
            return super().layout(op, param, operands)
        # A function: its row's LaTeX (\tanh\left(x\right), \sqrt{x}), delimited by itself.
        return ATOM, _call(_function(op, "LaTeX", OPS[op].latex if op in OPS else None), 0)


def _latex_label(derivative: Derivative) -> str:
    of = latex_name(derivative.of)
    order = derivative.order
    runs: list[list[Any]] = []
    for name in derivative.wrt:
        if runs and runs[-1][0] == name:
            runs[-1][1] += 1
        else:
            runs.append([name, 1])
    below = r" \, ".join(
        r"\partial " + latex_name(name) + (f"^{{{count}}}" if count > 1 else "") for name, count in runs
    )
    above = r"\partial " + of if order == 1 else rf"\partial^{{{order}}} {of}"
    return rf"\frac{{{above}}}{{{below}}}"


def derivatives_latex(result: DerivativeProgram) -> str:
    """An ``aligned`` block: the intermediates, then each derivative as a fraction of partials."""
    intermediates, derivatives = _parts(result, _Latex())
    lines = [f"{latex_name(name)} &= {text}" for name, text in intermediates]
    lines.extend(f"{_latex_label(d)} &= {text}" for d, text in derivatives)
    return "\\begin{aligned}\n" + " \\\\\n".join(lines) + "\n\\end{aligned}\n"


# --- Python --------------------------------------------------------------------------------

FUNCTION_NAME = "derivatives"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Names a Python function cannot use for its variables: keywords, `__debug__` (assigning it is
# a SyntaxError), `math` and `math.pow` (powers), and the names the op table's Python forms
# call or its helpers define (a variable `max` would hide the builtin that relu calls).


def _python_taken() -> frozenset[str]:
    names = set(keyword.kwlist) | {"__debug__", "math", FUNCTION_NAME}
    for op in OPS.values():
        if op.python is not None:
            names.update(_IDENTIFIER.findall(op.python.replace("{x}", "").replace("{y}", "")))
        if op.python_helper is not None:
            names.update(re.findall(r"^def ([A-Za-z_][A-Za-z0-9_]*)", op.python_helper, re.MULTILINE))
    return frozenset(names)


_PYTHON_TAKEN = _python_taken()


def _python_names(result: DerivativeProgram) -> dict[str, str]:
    """A distinct Python identifier for every variable of the derivative program.

    A name Python or the module needs gets ``_`` appended until it is free: free of the
    taken names and of every other variable's name, the program's own and the renamed
    (``math`` becomes ``math__`` when the program also has ``math_``).  Names that need
    no change are kept first, so that they never move.
    """
    names = list(result.program.variables)
    renamed = {name: name for name in names if name not in _PYTHON_TAKEN}
    used = set(renamed) | _PYTHON_TAKEN
    for name in names:
        if name in renamed:
            continue
        new = name + "_"
        while new in used:
            new += "_"
        renamed[name] = new
        used.add(new)
    return renamed


class _Python(Syntax):
    def __init__(self, rename: Callable[[str], str]) -> None:
        self.rename = rename
        self.used: set[str] = set()

    def name(self, name: str) -> str:
        return self.rename(name)

    def layout(self, op: str, param: Any, operands: list[_Operand]) -> Layout:
        if op == "**":  # math.pow raises ValueError where ** would return a complex number
            return ATOM, ["math.pow(", (0, SUM, False), ", ", (1, SUM, False), ")"]
        if op == POWER_CONST and not float(param).is_integer():
            return ATOM, ["math.pow(", (0, SUM, False), f", {short_number(param)})"]
        if op in OPERATORS:
            return super().layout(op, param, operands)
        # A function: its row's Python (math.tanh(x), max(0.0, x), _step(x)), and the
        # helper the module must then define.
        template = _function(op, "Python", OPS[op].python if op in OPS else None)
        if OPS[op].python_helper is not None:
            self.used.add(op)
        return ATOM, _call(template, SUM)


def derivatives_python(result: DerivativeProgram) -> str:
    """A Python module with one plain function, ``derivatives``, that computes them with ``math``.

    The inputs are keyword-only parameters, with the program's defaults; the function
    returns a dict from each derivative's name to its value.  Domain errors raise
    Python's own exceptions (ValueError, ZeroDivisionError, OverflowError).
    """

    rename = _python_names(result).__getitem__
    syntax = _Python(rename)
    intermediates, derivatives = _parts(result, syntax)
    outputs = {d.name for d in result.derivatives}
    parameters = []
    for variable in result.program.inputs:
        if variable.name in outputs:
            continue
        default = "" if variable.default is None else f"={float(variable.default)!r}"
        parameters.append(rename(variable.name) + default)
    wrt = ", ".join(result.wrt)
    docstring = (
        f"The derivatives of {result.of} with respect to {wrt}, order {result.order} "
        "(written by autodiff diff)."
    )
    body = [f'    """{docstring}"""']
    body.extend(f"    {rename(name)} = {text}" for name, text in intermediates)
    body.extend(f"    {rename(d.name)} = {text}" for d, text in derivatives)
    body.append("    return {" + ", ".join(f'"{d.name}": {rename(d.name)}' for d, _ in derivatives) + "}")
    signature = (
        f"def {FUNCTION_NAME}(*, {', '.join(parameters)}):" if parameters else f"def {FUNCTION_NAME}():"
    )
    helpers = "".join(f"\n\n{OPS[name].python_helper}" for name in sorted(syntax.used))
    return "import math\n" + helpers + "\n\n" + signature + "\n" + "\n".join(body) + "\n"


def write_derivatives(result: Any, output_format: str) -> str:
    """The derivatives in ``output_format`` (text, program, latex, python, json)."""
    from ..execute.symbolic import DerivativeProgram

    if isinstance(result, DerivativeProgram):
        writers = {"text": derivatives_text, "program": derivatives_program, "latex": derivatives_latex,
                   "python": derivatives_python, "json": derivatives_json}
        return writers[output_format](result)
    from . import tensor_formulas

    writers = {"text": tensor_formulas.tensor_text, "program": tensor_formulas.tensor_program,
               "latex": tensor_formulas.tensor_latex, "python": tensor_formulas.tensor_python,
               "json": tensor_formulas.tensor_json}
    return writers[output_format](result)
