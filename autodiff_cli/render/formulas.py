"""Programs written out as formulas: program text, and derivative programs as text, LaTeX,
Python and JSON, for programs of numbers and of tensors alike.

``program_text`` writes any ``Program`` in the language, one statement per named variable,
so that parsing the text and writing it again gives the same text.  ``write_derivatives``
(and ``derivatives_text``, ``derivatives_latex``...) write what ``execute.symbolic`` gives:
a ``DerivativeProgram`` of a program of numbers (a ``Program`` whose registers are numbers:
one derivative a line, ``df/dx = 6*x + y``, Python with ``math``), or a ``TensorDerivatives``
of a program of tensors (``Term`` statements with their shapes, matrix notation in LaTeX,
Python with NumPy).  Both share the precedence levels, the names in LaTeX and Python, the
numbers, and the shape of the Python module and of the JSON document.

Every expression is written by a walk without recursion, so an expression nested a million
deep is written like any other.  A program's registers are laid out by ``_expression``: a
first pass up the expression decides, for each operation, how it is laid out and how tightly
it binds; a second writes the pieces from an explicit stack, adding parentheses where an
operand binds more loosely than its place needs.  A ``Term`` is folded bottom up
(``fold_term``) with the same layouts of the arithmetic operators.  Pure: returns text.
"""

from __future__ import annotations

import json
import keyword
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..engine.ops import CALLS, OPS, short_number
from ..engine.registry import ENTRIES, latex_form, numpy_form, write
from ..engine.tensor_ops import format_shape
from ..errors import ProgramError
from ..execute.tensor_symbolic import NAME, NUMBER, TensorDerivatives, Term, fold_term
from ..language.program import CONST, INPUT, POWER_CONST, ArrayLiteral, Initializer, Program

if TYPE_CHECKING:
    from ..execute.symbolic import Derivative, DerivativeProgram

    Derivatives = DerivativeProgram | TensorDerivatives

__all__ = [
    "FORMATS",
    "derivatives_json",
    "derivatives_latex",
    "derivatives_program",
    "derivatives_python",
    "derivatives_text",
    "latex_name",
    "operation_count",
    "program_text",
    "write_derivatives",
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
        arithmetic = _arithmetic(op, param)
        if arithmetic is not None:
            return arithmetic
        _function(op, "program text")
        if OPS[op].arity == 2:  # maximum(x, y)
            return ATOM, [f"{op}(", (0, SUM, False), ", ", (1, SUM, False), ")"]
        return ATOM, [f"{op}(", (0, SUM, False), ")"]


def _arithmetic(op: str, param: Any, spaced: bool = False) -> Layout | None:
    """The language's layout of an arithmetic operator (None for another op); ``spaced`` puts
    spaces around ``*`` and ``/`` as a tensor program's statements are written (``a @ b * c``)."""
    if op in ("+", "-"):
        return SUM, [(0, SUM, False), f" {op} ", (1, PRODUCT, True)]
    if op in ("*", "/", "@"):
        return PRODUCT, [(0, PRODUCT, False), f" {op} " if spaced else op, (1, UNARY, True)]
    if op == "neg":
        return UNARY, ["-", (0, UNARY, True)]
    if op == "**":
        return POWER, [(0, ATOM, False), "**", (1, POWER, True)]
    if op == POWER_CONST:
        exponent = short_number(param)
        return POWER, [(0, ATOM, False), "**" + (f"({exponent})" if param < 0 else exponent)]
    return None


def _latex_arithmetic(op: str, param: Any) -> Layout | None:
    """LaTeX's layout of a quotient and a power, the same for numbers and tensors."""
    if op == "/":
        return FRACTION, [r"\frac{", (0, 0, False), "}{", (1, 0, False), "}"]
    if op == "**":
        return POWER, [(0, ATOM, False), "^{", (1, 0, False), "}"]
    if op == POWER_CONST:
        return POWER, [(0, ATOM, False), f"^{{{short_number(param)}}}"]
    return None


def _latex_scientific(text: str) -> str | None:
    """``1e-05`` as ``1 \\times 10^{-5}`` (None for a number without an exponent)."""
    mantissa, e, exponent = text.partition("e")
    return rf"{mantissa} \times 10^{{{int(exponent)}}}" if e else None


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


def _numbers_program(result: DerivativeProgram) -> str:
    """The derivative program as a program of the language: feed it to eval, graph or diff."""
    return program_text(result.program)


def _parts(
    result: DerivativeProgram, syntax: Syntax
) -> tuple[list[tuple[str, str]], list[tuple[Derivative, str]]]:
    """(intermediate statements, derivatives) with their expressions in ``syntax``."""
    texts = dict(_statements(result.program, syntax))
    intermediates = [(name, texts[name]) for name in result.intermediates]
    return intermediates, [(d, texts[d.name]) for d in result.derivatives]


def _numbers_text(result: DerivativeProgram) -> str:
    """``df/dx = 6*x + y``, one derivative a line, after the shared intermediates they use."""
    intermediates, derivatives = _parts(result, program_syntax)
    lines = [f"{name} = {text}" for name, text in intermediates]
    if lines:
        lines.append("")
    lines.extend(f"{d.label} = {text}" for d, text in derivatives)
    return "\n".join(lines) + "\n"


def _numbers_json(result: DerivativeProgram) -> str:
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
        scientific = _latex_scientific(text)
        if scientific is None:
            return text, (UNARY if value < 0 else ATOM)
        return scientific, PRODUCT

    def layout(self, op: str, param: Any, operands: list[_Operand]) -> Layout:
        if op in ("+", "*"):
            # Sums and products need no grouping on paper (only the program text keeps it, to
            # read back the same).  Factors are juxtaposed (6 x, b f) unless the right one
            # starts with a digit (2 \cdot 3).
            if op == "+":
                return SUM, [(0, SUM, False), " + ", (1, SUM, True)]
            digit = operands[1].first == "0" and operands[1].binding >= PRODUCT
            return PRODUCT, [(0, PRODUCT, False), r" \cdot " if digit else " ", (1, PRODUCT, True)]
        arithmetic = _latex_arithmetic(op, param)
        if arithmetic is not None:
            return arithmetic
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


def _numbers_latex(result: DerivativeProgram) -> str:
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


_MATH_TAKEN = _python_taken()


def _python_names(names: list[str], taken: frozenset[str]) -> dict[str, str]:
    """A distinct Python identifier for every variable of a derivative program.

    A name Python or the module needs (``taken``) gets ``_`` appended until it is free: free of
    the taken names and of every other variable's name, the program's own and the renamed
    (``math`` becomes ``math__`` when the program also has ``math_``).  Names that need
    no change are kept first, so that they never move.
    """
    renamed = {name: name for name in names if name not in taken}
    used = set(renamed) | taken
    for name in names:
        if name in renamed:
            continue
        new = name + "_"
        while new in used:
            new += "_"
        renamed[name] = new
        used.add(new)
    return renamed


def _python_module(imports: str, helpers: list[str], parameters: list[str], docstring: str,
                   body: list[str]) -> str:
    """The generated module: its import, the helpers its expressions call, and one function
    ``derivatives`` of keyword-only ``parameters`` whose ``body`` ends with its return."""
    signature = f"def {FUNCTION_NAME}(*, {', '.join(parameters)}):" if parameters else f"def {FUNCTION_NAME}():"
    lines = [f'    """{docstring}"""', *body]
    return f"import {imports}\n" + "".join(f"\n\n{helper}" for helper in helpers) + "\n\n" + signature + "\n" \
        + "\n".join(lines) + "\n"


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


def _numbers_python(result: DerivativeProgram) -> str:
    """A Python module with one plain function, ``derivatives``, that computes them with ``math``.

    The inputs are keyword-only parameters, with the program's defaults; the function
    returns a dict from each derivative's name to its value.  Domain errors raise
    Python's own exceptions (ValueError, ZeroDivisionError, OverflowError).
    """

    rename = _python_names(list(result.program.variables), _MATH_TAKEN).__getitem__
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
    docstring = f"The derivatives of {result.of} with respect to {wrt}, order {result.order} (written by autodiff diff)."
    body = [f"    {rename(name)} = {text}" for name, text in intermediates]
    body.extend(f"    {rename(d.name)} = {text}" for d, text in derivatives)
    body.append("    return {" + ", ".join(f'"{d.name}": {rename(d.name)}' for d, _ in derivatives) + "}")
    helpers = [OPS[name].python_helper for name in sorted(syntax.used)]
    return _python_module("math", helpers, parameters, docstring, body)  # type: ignore[arg-type]


# --- derivative programs of tensor programs (``TensorDerivatives``) -----------------------------

Part = tuple[float, str, str]  # binding, text, its first character ("-" matters)


def _wrap(part: Part, at_least: float, open_: str = "(", close: str = ")", minus: bool = False) -> str:
    binding, text, first = part
    if binding < at_least or (minus and first == "-"):
        return f"{open_}{text}{close}"
    return text


def _nested(values: ArrayLiteral, number: Callable[[float], str]) -> str:
    items: list[Any] = [number(v) for v in values.values]
    for size in reversed(values.shape[1:]):
        items = ["[" + ", ".join(items[i:i + size]) + "]" for i in range(0, len(items), size)]
    return "[" + ", ".join(items) + "]" if values.shape else items[0]


COMPARISON = 0.5  # how tightly a comparison binds: looser than a sum


def _is_operator(op: str) -> bool:
    """A tensor op written between its operands (``a < b``), other than ``@``."""
    entry = ENTRIES.get(op)
    return entry is not None and not entry.elementwise and op != "@" and entry.written == f"{{x}} {op} {{y}}"


class _TermSyntax:
    """The language's own syntax; the others override what differs."""

    open, close = "(", ")"

    def name(self, text: str) -> str:
        return text

    def number(self, value: float) -> Part:
        text = short_number(value)
        return (UNARY if text.startswith("-") else ATOM), text, text[0]

    def literal(self, values: ArrayLiteral) -> str:
        if not values.values and values.shape:  # no entries: the language has no `[]`, but slices an empty one
            empty = "[0][0:0]"
            return empty if len(values.shape) == 1 else f"reshape({empty}, {list(values.shape)})"
        return _nested(values, short_number)

    def wrap(self, part: Part, at_least: float, minus: bool = False) -> str:
        return _wrap(part, at_least, self.open, self.close, minus)

    def assemble(self, layout: Layout, parts: list[Part]) -> tuple[float, str]:
        """A layout of ``_arithmetic`` (pieces of text and operands) with its operands' parts."""
        binding, pieces = layout
        return binding, "".join(piece if isinstance(piece, str) else self.wrap(parts[piece[0]], piece[1], piece[2])
                                for piece in pieces)

    def operator(self, op: str, term: Term, parts: list[Part]) -> tuple[float, str]:
        arithmetic = _arithmetic(op, term.param, spaced=True)
        if arithmetic is not None:
            return self.assemble(arithmetic, parts)
        if op == "=":
            return parts[0][0], parts[0][1]
        if op == "index":
            return ATOM, write("index", [self.wrap(parts[0], ATOM)], term.param)
        if _is_operator(op):  # a comparison: below every arithmetic operator
            return COMPARISON, f"{self.wrap(parts[0], SUM)} {op} {self.wrap(parts[1], SUM)}"
        if not ENTRIES[op].elementwise:
            texts = [p[1] for p in parts]
            if ENTRIES[op].written.startswith("{x}["):  # a subscript (C[X]): its operand binds as an atom
                texts[0] = self.wrap(parts[0], ATOM)
            return ATOM, write(op, texts, term.param)
        return ATOM, OPS[op].written.format(x=parts[0][1], y=parts[1][1] if len(parts) > 1 else "")

    def layout(self, term: Term, parts: list[Part]) -> Part:
        binding, text = self.operator(term.op, term, parts)
        return binding, text, text[:1]

    def expression(self, term: Term) -> str:
        def leaf(node: Term) -> Part:
            if node.op == NUMBER:
                return self.number(node.param)
            text = self.name(node.param) if node.op == NAME else self.literal(node.param)
            return (ATOM, text, text[:1])

        return fold_term(term, leaf, self.layout)[1]  # type: ignore[no-any-return]


_term_syntax = _TermSyntax()


def _default_text(default: Any) -> str | None:
    if default is None:
        return None
    if isinstance(default, Initializer):
        return default.written()
    if isinstance(default, ArrayLiteral):
        return _term_syntax.literal(default)
    return short_number(float(default))


def _tensors_program(result: TensorDerivatives) -> str:
    """The derivative program in the language: the inputs with their values, the forward
    values the derivatives read, the adjoints, and (as a rule) the output last, so that eval of
    it shows every gradient.  Feed it to eval, graph (``--output dL_dW --no-grad`` for a
    gradient) or diff."""
    lines = [f"{n} = {text}" for n, default in result.inputs if (text := _default_text(default)) is not None]
    lines.extend(f"{n} = {_term_syntax.expression(term)}" for n, term in result.statements)
    return "\n".join(lines) + "\n"


def _as_number(term: Term) -> Term:
    """``2 + 0`` (a constant the program text keeps computed) as the number it is."""
    if term.op == "+" and term.args[0].op == NUMBER and term.args[1].op == NUMBER and term.args[1].param == 0:
        return term.args[0]
    return term


def _tensors_text(result: TensorDerivatives) -> str:
    """The statements with the shape of each (inputs' values left out, constants as numbers):
    what the derivatives are."""
    rows = [(f"{n} = {_term_syntax.expression(_as_number(term))}", format_shape(result.shapes[n]))
            for n, term in result.statements]
    inputs = ", ".join(f"{n} {format_shape(result.shapes[n])}" for n, _ in result.inputs)
    width = min(max((len(text) for text, _ in rows), default=0), 60)
    lines = [f"# inputs: {inputs}"]
    lines.extend(f"{text.ljust(width)}  # {shape}" for text, shape in rows)
    what = _what(result, "Hessian-vector products H v")
    if result.hessian:
        lines.append("# H_W_U holds d2/dW dU: a row per entry of W (row-major), each shaped like U")
    elif result.order == 2:
        lines.append(f"# {result.directional} = the derivative of {result.output} along v; "
                     f"d2_NAME is its adjoint of NAME")
    lines.append(f"# {what}: " + ", ".join(f"{w} -> {d}" for w, d in result.derivatives.items()))
    return "\n".join(lines) + "\n"


def _what(result: TensorDerivatives, products: str) -> str:
    return "Hessian blocks" if result.hessian else products if result.order == 2 else "gradients"


def _tensors_json(result: TensorDerivatives) -> str:
    """One JSON object: what was differentiated, the shapes, each statement as an expression of
    the language, which statement holds each derivative, and the whole program."""
    document = {
        "of": result.output,
        "wrt": list(result.wrt),
        "order": result.order,
        "derivatives": dict(result.derivatives),
        "directions": dict(result.directions),
        "inputs": [{"name": n, "shape": list(result.shapes[n])} for n, _ in result.inputs],
        "statements": [{"name": n, "shape": list(result.shapes[n]), "expression": _term_syntax.expression(term)}
                       for n, term in result.statements],
        "program": _tensors_program(result),
    }
    return json.dumps(document, indent=2) + "\n"


# --- tensors in LaTeX ---


class _TermLatex(_TermSyntax):
    open, close = r"\left(", r"\right)"

    def __init__(self, result: TensorDerivatives) -> None:
        self.result = result

    def name(self, text: str) -> str:
        label = self.result.labels.get(text)
        if label is not None:
            return rf"\frac{{\partial {latex_name(label[0])}}}{{\partial {latex_name(label[1])}}}"
        return latex_name(text)

    def number(self, value: float) -> Part:
        binding, text, first = super().number(value)
        scientific = _latex_scientific(text)
        return (binding, text, first) if scientific is None else (PRODUCT, scientific, first)

    def literal(self, values: ArrayLiteral) -> str:
        rows = [values.values] if len(values.shape) <= 1 else [
            values.values[i:i + values.shape[1]] for i in range(0, len(values.values), values.shape[1])]
        body = r" \\ ".join(" & ".join(short_number(v) for v in row) for row in rows)
        if len(values.shape) == 1:  # a vector is a column on paper
            body = r" \\ ".join(short_number(v) for v in values.values)
        return r"\begin{bmatrix}" + body + r"\end{bmatrix}"

    def operator(self, op: str, term: Term, parts: list[Part]) -> tuple[float, str]:
        if op == "*":
            scalar = any(a.op == NUMBER for a in term.args)
            joint = r" \cdot " if scalar else r" \odot "
            return PRODUCT, f"{self.wrap(parts[0], PRODUCT)}{joint}{self.wrap(parts[1], PRODUCT, True)}"
        if op == "@":
            return PRODUCT, f"{self.wrap(parts[0], PRODUCT)} {self.wrap(parts[1], POWER, True)}"
        arithmetic = _latex_arithmetic(op, term.param)
        if arithmetic is not None:
            return self.assemble(arithmetic, parts)
        if op == "index":
            base = self.wrap(parts[0], ATOM)
            if "_" in base:  # t_{1} or a fraction: a second subscript is TeX's "Double subscript" error
                base = rf"\left({base}\right)"
            return ATOM, f"{base}_{{{write('index', [''], term.param)[1:-1]}}}"
        if not ENTRIES[op].elementwise:
            return self.entry_form(latex_form(op, term.param), term, parts)
        if op in ("+", "-", "neg", "="):
            return super().operator(op, term, parts)
        return ATOM, _fill(OPS[op].latex, parts)


    def entry_form(self, form: str, term: Term, parts: list[Part]) -> tuple[float, str]:
        """An entry's LaTeX form, laid out by its shape: a postfix (``{x}^\\top``) binds as a
        power and a prefix (``\\sum{axis} {x}``) as a product, each around an atom; a call
        (``\\operatorname{softmax}\\left({x}\\right)``) is an atom of its own."""
        form = form.replace("{param}", str(term.param))  # an op's own constant (scatter's size)
        if form.startswith("{x}^"):
            return POWER, _fill(form, [(ATOM, self.wrap(parts[0], ATOM), "")])
        if form.endswith(" {x}"):
            return PRODUCT, _fill(form, [(ATOM, self.wrap(parts[0], ATOM), "")])
        return ATOM, _fill(form, parts)


def _fill(template: str, parts: list[Part]) -> str:
    """A table's LaTeX template with its operands (``str.format`` would read ``\\operatorname{relu}``)."""
    template = template.replace("{operands}", ", ".join(part[1] for part in parts))  # stack, concat
    for field, part in zip(("{x}", "{y}", "{z}"), parts):
        template = template.replace(field, part[1])
    return template


def _tensors_latex(result: TensorDerivatives) -> str:
    """An ``aligned`` block in matrix notation (``X^\\top``, ``\\odot`` for elementwise
    products): the forward values the derivatives read, then the adjoints."""
    syntax = _TermLatex(result)
    lines = [f"{syntax.name(n)} &= {syntax.expression(term)}" for n, term in result.statements]
    return "\\begin{aligned}\n" + " \\\\\n".join(lines) + "\n\\end{aligned}\n"


# --- tensors in Python (NumPy) ---

class _TermPython(_TermSyntax):
    def __init__(self, rename: Callable[[str], str]) -> None:
        self.rename = rename
        self.used: dict[str, str] = {}  # the generated module's helper functions, by name

    def name(self, text: str) -> str:
        return self.rename(text)

    def number(self, value: float) -> Part:
        text = repr(float(value))
        return (UNARY if text.startswith("-") else ATOM), text, text[0]

    def literal(self, values: ArrayLiteral) -> str:
        if not values.values and values.shape:
            return f"np.zeros({tuple(values.shape)!r})"
        return f"np.array({_nested(values, lambda v: repr(float(v)))})"

    def operator(self, op: str, term: Term, parts: list[Part]) -> tuple[float, str]:
        entry = ENTRIES.get(op)
        if getattr(entry, "numpy", None) is None:
            if entry is not None and entry.is_function:
                raise ProgramError(f"the op '{op}' has no NumPy form, so it cannot be written as Python",
                                   hint="choose another --format, or give its registry entry a numpy form")
            return super().operator(op, term, parts)
        for helper, source in entry.numpy_helpers:
            self.used[helper] = source
        return ATOM, numpy_form(op, [p[1] for p in parts], term.param)


# Names the NumPy module needs: its import, the function and its seed, and every helper it may define.
_NUMPY_TAKEN = frozenset({*keyword.kwlist, "__debug__", "np", FUNCTION_NAME, "seed",
                          *(name for entry in ENTRIES.values() for name, _ in entry.numpy_helpers)})


def _tensors_python(result: TensorDerivatives) -> str:
    """A Python module with one function, ``derivatives``, computing them with NumPy.

    Every input is a keyword parameter, by default the program's value (initializers drawn as
    eval draws them, from ``seed``); the function returns a dict from each variable's name to
    its gradient (order 1) or Hessian-vector product (order 2) as an array."""
    renamed = _python_names(result.names, _NUMPY_TAKEN)
    syntax = _TermPython(renamed.__getitem__)
    parameters, body = [], []
    draws = [(n, d) for n, d in result.inputs if isinstance(d, Initializer)]
    for n, default in result.inputs:
        if default is None:
            parameters.append(renamed[n])
            continue
        parameters.append(f"{renamed[n]}=None")
        if isinstance(default, Initializer):
            continue
        value = syntax.literal(default) if isinstance(default, ArrayLiteral) else repr(float(default))
        body.append(f"    {renamed[n]} = {value} if {renamed[n]} is None else {renamed[n]}")
    if draws:
        body.append("    generator = np.random.default_rng(seed)  # drawn in order, as autodiff eval --seed draws")
        for n, init in draws:
            if init.kind == "normal":
                call = f"generator.normal(0.0, {init.arguments[0]!r}, {init.shape!r})"
            elif init.kind == "uniform":
                call = f"generator.uniform({init.arguments[0]!r}, {init.arguments[1]!r}, {init.shape!r})"
            else:
                call = f"np.zeros({init.shape!r})"
            body.append(f"    drawn = {call}")
            body.append(f"    {renamed[n]} = drawn if {renamed[n]} is None else {renamed[n]}")
    body.extend(f"    {renamed[n]} = np.asarray({renamed[n]}, dtype=np.float64)" for n, _ in result.inputs)
    if result.inputs:  # the statements hold for these shapes only: another would broadcast to a wrong answer
        expected = ", ".join(f"({n!r}, {renamed[n]}, {tuple(result.shapes[n])!r})" for n, _ in result.inputs)
        body.append(f"    for name, given, shape in ({expected},):")
        body.append("        if given.shape != shape:")
        body.append('            raise ValueError(f"{name} has shape {given.shape}, but these derivatives were written '
                    'for shape {shape}: run autodiff diff with --set of that shape")')
    body.extend(f"    {renamed[n]} = {syntax.expression(term)}" for n, term in result.statements)
    returned = ", ".join(f'"{w}": {renamed[d]}' for w, d in result.derivatives.items())
    body.append(f"    return {{{returned}}}")
    what = _what(result, "Hessian-vector products")
    docstring = f"The {what} of {result.output} with respect to {', '.join(result.wrt)} (written by autodiff diff)."
    if draws:
        parameters.append("seed=0")
    return _python_module("numpy as np", [syntax.used[name] for name in sorted(syntax.used)], parameters,
                          docstring, body)


# --- one entry per format, for every shape --------------------------------------------------------

# Each format's writer of a program of numbers' derivatives and of a tensor program's.
FORMATS: dict[str, tuple[Callable[[Any], str], Callable[[Any], str]]] = {
    "text": (_numbers_text, _tensors_text),
    "program": (_numbers_program, _tensors_program),
    "latex": (_numbers_latex, _tensors_latex),
    "python": (_numbers_python, _tensors_python),
    "json": (_numbers_json, _tensors_json),
}


def write_derivatives(result: Derivatives, output_format: str) -> str:
    """The derivatives in ``output_format`` (a key of ``FORMATS``), in the form the run's shapes
    call for: one formula per derivative for numbers, statements with shapes for tensors."""
    numbers, tensors = FORMATS[output_format]
    return tensors(result) if isinstance(result, TensorDerivatives) else numbers(result)


def derivatives_text(result: Derivatives) -> str:
    """For people: ``df/dx = 6*x + y`` a line (numbers), or each statement with its shape (tensors)."""
    return write_derivatives(result, "text")


def derivatives_program(result: Derivatives) -> str:
    """A program of the language: feed it to eval, graph or diff."""
    return write_derivatives(result, "program")


def derivatives_latex(result: Derivatives) -> str:
    """An ``aligned`` block of LaTeX (matrix notation for tensors)."""
    return write_derivatives(result, "latex")


def derivatives_python(result: Derivatives) -> str:
    """A Python module with one function, ``derivatives`` (``math`` for numbers, NumPy for tensors)."""
    return write_derivatives(result, "python")


def derivatives_json(result: Derivatives) -> str:
    """One JSON object: what was differentiated, each derivative's expression, the whole program."""
    return write_derivatives(result, "json")
