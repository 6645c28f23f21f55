"""The expression language: program text -> checked program -> graph of ``Value`` nodes.

Parsing runs Lark's LALR parser with a transformer attached, so each rule is
reduced bottom-up as the parser goes.  Each reduction appends one instruction to
a flat list and returns its register number; evaluation then runs the list
front to back.  Neither step recurses, so a sum of a million terms or a
million nested parentheses is fine.
"""

from __future__ import annotations

import gc
import math
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from . import lalr
from .engine import FUNCTIONS, DomainError, Value
from .errors import EvaluationError, InputError, ParseError, Position, ProgramError, Source

GRAMMAR_FILE = "autodiff.lark"
FUNCTION_NAMES = tuple(FUNCTIONS)
INPUT, INTERMEDIATE, OUTPUT = "input", "intermediate", "output"

# Instructions are tuples whose first item says what they do:
#   ("input", name)                      a named input
#   ("const", value)                     a number written in the program
#   ("binary", symbol, left, right, pos) + - * / and ** with a computed exponent
#   ("power", base, exponent, pos)       ** with a number written as the exponent
#   ("neg", operand, pos)
#   ("call", function, operand, pos)
#   ("copy", operand, pos)               `b = a`: b gets a node of its own


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
    """A parsed and checked program, ready to evaluate with any input values."""

    source: Source
    instructions: list[tuple[Any, ...]]
    variables: dict[str, Variable]
    result: str

    @property
    def inputs(self) -> list[Variable]:
        return [v for v in self.variables.values() if v.kind == INPUT]


@dataclass
class Evaluation:
    """The graph built for one set of input values, after backpropagation."""

    program: Program
    output: str
    nodes: dict[str, Value]
    warnings: list[str] = field(default_factory=list)
    has_values: bool = True

    @property
    def root(self) -> Value:
        return self.nodes[self.output]

    def kind(self, name: str) -> str:
        return OUTPUT if name == self.output else self.program.variables[name].kind

    def values(self) -> dict[str, float]:
        return {name: node.data for name, node in self.nodes.items()}

    def grads(self) -> dict[str, float]:
        return {name: node.grad for name, node in self.nodes.items()}


# --- parsing -------------------------------------------------------------------------------


def _grammar_text() -> str:
    # os.path rather than pathlib or importlib.resources: this runs on every start-up.
    here = os.path.dirname(os.path.abspath(__file__))
    installed = os.path.join(here, "grammars", GRAMMAR_FILE)  # the wheel ships it in the package
    path = installed if os.path.isfile(installed) else os.path.join(here, os.pardir, "grammars", GRAMMAR_FILE)
    with open(path, encoding="utf-8") as grammar:
        return grammar.read()


@lru_cache(maxsize=None)
def _tables() -> lalr.Tables:
    return lalr.load_tables(_grammar_text())


def parse(text: str, name: str = "<expr>") -> Program:
    """Parse and check a program; raise ParseError or ProgramError saying where it is wrong."""
    source = Source(name, text)
    compiler = _Compiler()
    compiler.reset(source)
    tables = _tables()
    try:
        with _no_cycle_collection():  # tokens and instructions form no cycles either
            lalr.parse(tables, text, compiler)
    except lalr.UnexpectedInput as error:
        raise _syntax_error(error, source) from None
    return compiler.finish()



def _position(token: Any) -> Position:
    return Position(token.line, token.column, max(1, len(token)))


class _Compiler:
    """Rule callbacks: each reduction appends an instruction and returns its register."""

    def reset(self, source: Source) -> None:
        self.source = source
        self.instructions: list[tuple[Any, ...]] = []
        self.positions: list[Position] = []  # where each register's value is written
        self.variables: dict[str, Variable] = {}
        self.literals: dict[int, float] = {}  # registers holding a number as written
        self.named: set[int] = set()  # registers that hold a named variable
        self.statements = 0
        self.last: tuple[int, Position] | None = None  # the last statement's register

    def _error(self, message: str, position: Position, hint: str | None = None) -> ProgramError:
        return ProgramError(message, position, self.source, hint)

    def _emit(self, instruction: tuple[Any, ...], position: Position) -> int:
        self.instructions.append(instruction)
        self.positions.append(position)
        return len(self.instructions) - 1

    def _drop_literal(self, register: int) -> float | None:
        """If ``register`` is a number literal just written, remove it and return its value."""
        if register in self.literals and register == len(self.instructions) - 1:
            self.instructions.pop()
            self.positions.pop()
            return self.literals.pop(register)
        return None

    # statements

    def assign(self, children: list[Any]) -> None:
        name_token, _, register = children
        name, position = str(name_token), _position(name_token)
        self._check_not_function(name, position, "assign to")
        known = self.variables.get(name)
        if known is not None and known.kind == INPUT and known.default is None:
            raise self._error(
                f"'{name}' is used before it is assigned",
                known.position,
                f"'{name}' is assigned on line {position.line}; move that line above its first use",
            )
        if known is not None:
            raise self._error(
                f"'{name}' is assigned twice",
                position,
                f"it was first assigned on line {known.position.line}; each name is assigned once "
                "(use a new name, e.g. '{name}2')".replace("{name}", name),
            )
        literal = self._drop_literal(register)
        if literal is not None:
            register = self._emit(("input", name), position)
            self.variables[name] = Variable(name, INPUT, position, register, literal)
            self.named.add(register)
        else:
            if register in self.named:  # `b = a`: give b a node of its own
                register = self._emit(("copy", register, position), position)
            self.variables[name] = Variable(name, INTERMEDIATE, position, register)
        self.named.add(register)
        self._end_statement(register, position)

    def bare(self, children: list[Any]) -> None:
        register = children[0]
        self._end_statement(register, self.positions[register])

    def _end_statement(self, register: int, position: Position) -> None:
        self.statements += 1
        self.last = (register, position)

    def start(self, children: list[Any]) -> None:
        return None

    # expressions

    def number(self, children: list[Any]) -> int:
        token = children[0]
        value = float(token)
        if math.isinf(value):
            raise self._error(
                f"the number {token} is too large for a float",
                _position(token),
                "floats go up to about 1.8e308",
            )
        register = self._emit(("const", value), _position(token))
        self.literals[register] = value
        return register

    def var(self, children: list[Any]) -> int:
        token = children[0]
        name, position = str(token), _position(token)
        self._check_not_function(name, position, "use")
        known = self.variables.get(name)
        if known is not None:
            return known.register
        register = self._emit(("input", name), position)
        self.variables[name] = Variable(name, INPUT, position, register)
        self.named.add(register)
        return register

    def call(self, children: list[Any]) -> int:
        name_token = children[0]
        name, position = str(name_token), _position(name_token)
        arguments = children[2] if len(children) == 4 else []
        if name not in FUNCTIONS:
            raise self._error(f"unknown function '{name}'", position, _function_hint(name))
        if len(arguments) != 1:
            raise self._error(
                f"{name}() takes exactly 1 argument ({len(arguments)} given)",
                position,
                f"write {name}(x)",
            )
        return self._emit(("call", name, arguments[0], position), position)

    def arguments(self, children: list[Any]) -> list[int]:
        return children[::2]  # the registers, without the commas

    def group(self, children: list[Any]) -> int:
        return children[1]

    def neg(self, children: list[Any]) -> int:
        sign, register = children
        literal = self._drop_literal(register)
        if literal is not None:  # -2 is the number -2, not an operation on 2
            folded = self._emit(("const", -literal), _position(sign))
            self.literals[folded] = -literal
            return folded
        return self._emit(("neg", register, _position(sign)), _position(sign))

    def pos(self, children: list[Any]) -> int:
        return children[1]

    def pow(self, children: list[Any]) -> int:
        base, operator, exponent = children
        position = _position(operator)
        literal = self._drop_literal(exponent)
        if literal is not None:
            return self._emit(("power", base, literal, position), position)
        return self._emit(("binary", "**", base, exponent, position), position)

    def _binary(self, children: list[Any]) -> int:
        left, operator, right = children
        position = _position(operator)
        return self._emit(("binary", str(operator), left, right, position), position)

    add = sub = mul = div = _binary

    # checks

    def _check_not_function(self, name: str, position: Position, verb: str) -> None:
        if name in FUNCTIONS:
            raise self._error(
                f"'{name}' is a function; it cannot be a variable",
                position,
                f"call it as {name}(x), or {verb} a different name",
            )

    def finish(self) -> Program:
        if self.last is None:
            raise ProgramError(
                "the program is empty",
                Position(1, 1),
                self.source,
                "write an expression such as 'L = (a*b + c)*f'",
            )
        register, position = self.last
        result = next((v.name for v in self.variables.values() if v.register == register), None)
        if result is None:  # the last statement is an unnamed expression
            result = "output"
            while result in self.variables:
                result += "_"
            self.variables[result] = Variable(result, INTERMEDIATE, position, register)
        return Program(self.source, self.instructions, self.variables, result)


# --- syntax errors in words ----------------------------------------------------------------

_TERMINAL_WORDS = {
    "NAME": "a name",
    "NUMBER": "a number",
    "LPAR": "'('",
    "RPAR": "')'",
    "COMMA": "','",
    "EQUAL": "'='",
    "PLUS": "'+'",
    "MINUS": "'-'",
    "STAR": "'*'",
    "SLASH": "'/'",
    "POW": "'**'",
    "_SEP": "a new line or ';'",
    "$END": "the end of the input",
}
_OPERAND_STARTS = {"NAME", "NUMBER", "LPAR", "MINUS", "PLUS"}
_OPERATORS = {"PLUS", "MINUS", "STAR", "SLASH", "POW"}
_STATEMENT_ENDS = {"_SEP", "$END"}


def _describe_expected(expected: set[str]) -> str:
    phrases = []
    if _OPERAND_STARTS <= expected:
        phrases.append("an operand (a number, a name or '(')")
        expected = expected - _OPERAND_STARTS
    if _OPERATORS <= expected:
        phrases.append("an operator (+ - * / **)")
        # After a name, '(' would make it a call; offering it next to the operators only confuses.
        expected = expected - _OPERATORS - {"LPAR"}
    if expected & _STATEMENT_ENDS:
        phrases.append("the end of the statement")
        expected = expected - _STATEMENT_ENDS
    phrases += sorted(_TERMINAL_WORDS.get(t, t.lower()) for t in expected)
    if len(phrases) <= 1:
        return "".join(phrases)
    return ", ".join(phrases[:-1]) + " or " + phrases[-1]


def _describe_token(token: Any) -> str:
    if token.type == "$END":
        return "end of input"
    if token.type == "_SEP":
        return "';'" if token == ";" else "end of line"
    if token.type == "NAME":
        return f"name '{token}'"
    if token.type == "NUMBER":
        return f"number {token}"
    return f"'{token}'"


def _end_position(text: str) -> Position:
    """Just after the last character that is not white space: the caret then lands on the
    line that is unfinished, not on the empty line after a file's final newline."""
    lines = text.rstrip().split("\n")
    return Position(len(lines), len(lines[-1].rstrip("\r")) + 1)


def _unclosed_parenthesis(text: str, line: int, column: int) -> Position | None:
    """The last '(' still open before (line, column), ignoring comments.

    Line breaks inside parentheses continue the statement, so an unclosed '('
    can be lines above the place where the parser gave up.
    """
    open_positions: list[Position] = []
    for number, content in enumerate(text.split("\n")[:line], start=1):
        end = column - 1 if number == line else len(content)
        for index, char in enumerate(content[:end]):
            if char == "#":
                break
            if char == "(":
                open_positions.append(Position(number, index + 1))
            elif char == ")" and open_positions:
                open_positions.pop()
            elif char == ";":
                open_positions.clear()
    return open_positions[-1] if open_positions else None


def _syntax_error(error: lalr.UnexpectedInput, source: Source) -> ParseError:
    token = error.token
    if token is None:
        line_text = source.line(error.line)
        char = line_text[error.column - 1] if error.column <= len(line_text) else "?"
        return ParseError(
            f"unexpected character {char!r}",
            Position(error.line, error.column),
            source,
            "operators are + - * / ** (or ^); names are letters, digits and _; "
            "'#' starts a comment",
        )
    expected = error.expected
    if token.type == "$END":
        position = _end_position(source.text)
    else:
        position = Position(token.line, token.column, max(1, len(token)))
    found = _describe_token(token)
    message = f"unexpected {found}; expected {_describe_expected(expected)}"
    hint = None
    opened = _unclosed_parenthesis(source.text, position.line, position.column)
    if "RPAR" in expected and opened is not None:
        hint = f"the '(' at line {opened.line}, column {opened.column} is never closed"
    elif _OPERATORS <= expected and token.type in ("NAME", "NUMBER", "LPAR"):
        hint = "write the operator between the operands, e.g. 2*x rather than 2x"
    elif token.type == "EQUAL":
        hint = "only a plain name can be assigned to: 'name = expression' (comparisons are not supported)"
    elif token.type == "RPAR" and "RPAR" not in expected:
        hint = "this ')' has no matching '('"
    return ParseError(message, position, source, hint)


# --- evaluation ----------------------------------------------------------------------------


def check_inputs(program: Program, values: Mapping[str, float]) -> list[str]:
    """Reject values for computed names; return warnings for names the program doesn't use."""
    warnings = []
    for name in values:
        variable = program.variables.get(name)
        if variable is None:
            warnings.append(f"'{name}' is not used by the program; its value is ignored")
        elif variable.kind != INPUT:
            raise InputError(
                f"'{name}' is computed by the program, so it cannot be set",
                variable.position,
                program.source,
                f"'{name}' is assigned on line {variable.position.line}; set one of its inputs instead",
            )
    return warnings


def missing_inputs(program: Program, values: Mapping[str, float]) -> list[Variable]:
    return [v for v in program.inputs if v.default is None and v.name not in values]


def evaluate(
    program: Program,
    values: Mapping[str, float] | None = None,
    output: str | None = None,
    *,
    backward: bool = True,
    allow_missing: bool = False,
) -> Evaluation:
    """Build the graph for ``values`` (overriding the defaults) and backpropagate from ``output``.

    With ``allow_missing``, inputs without a value are NaN and no domain checks run:
    the graph then shows structure only (``Evaluation.has_values`` is False).
    """
    values = dict(values or {})
    warnings = check_inputs(program, values)
    output = output if output is not None else program.result
    if output not in program.variables:
        raise InputError(
            f"--output '{output}' is not a variable of the program",
            hint=variables_hint(list(program.variables), [output]),
            source=Source(program.source.name, ""),
        )
    missing = missing_inputs(program, values)
    if missing and not allow_missing:
        raise _missing_error(program, missing)
    for variable in missing:
        values[variable.name] = math.nan
    registers = _run(program, values, checked=not missing)
    nodes = {name: registers[v.register] for name, v in program.variables.items()}
    if backward and not missing:
        nodes[output].backward()
    return Evaluation(program, output, nodes, warnings, has_values=not missing)


# How many missing inputs an error names one by one; the rest are counted.
MISSING_SHOWN = 10


def _missing_error(program: Program, missing: list[Variable]) -> InputError:
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


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Pause the cycle collector while building acyclic data: it would only rescan it, again and again."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _run(program: Program, values: Mapping[str, float], checked: bool) -> list[Value]:
    with _no_cycle_collection():
        return _execute(program, values, checked)


_BINARY = {
    "+": Value.__add__,
    "-": Value.__sub__,
    "*": Value.__mul__,
    "/": Value.__truediv__,
    "**": Value.__pow__,
}


def _execute(program: Program, values: Mapping[str, float], checked: bool) -> list[Value]:
    registers: list[Value] = []
    emit = registers.append
    isfinite = math.isfinite
    for instruction in program.instructions:
        kind = instruction[0]
        try:
            if kind == "binary":
                node = _BINARY[instruction[1]](registers[instruction[2]], registers[instruction[3]])
            elif kind == "input":
                name = instruction[1]
                given = values.get(name)
                node = Value(float(program.variables[name].default if given is None else given), label=name)
            elif kind == "const":
                node = Value(instruction[1])
            elif kind == "call":
                node = FUNCTIONS[instruction[1]](registers[instruction[2]])
            elif kind == "power":
                node = registers[instruction[1]] ** instruction[2]
            elif kind == "neg":
                node = -registers[instruction[1]]
            else:  # copy
                node = registers[instruction[1]].identity()
        except DomainError as error:
            hint = _OVERFLOW_HINTS.get(error.op, _OVERFLOW_HINT) if error.overflow else _DOMAIN_HINTS.get(error.op)
            raise EvaluationError(f"{error.message} (in '{error.op}')", instruction[-1], program.source,
                                  hint) from None
        if checked and not isfinite(node.data):
            symbol = instruction[1] if kind in ("binary", "call") else kind
            raise EvaluationError(
                f"the result of '{symbol}' overflows a float ({node.data})",
                instruction[-1], program.source,
                _OVERFLOW_HINT,
            )
        emit(node)
    for variable in program.variables.values():
        node = registers[variable.register]
        if not node.label:
            node.label = variable.name
    return registers


_DOMAIN_HINTS = {
    "log": "log needs a positive argument; check the inputs that feed it",
    "sqrt": "sqrt needs a non-negative argument; check the inputs that feed it",
    "/": "the divisor is 0 for these inputs; choose other values or guard it (e.g. x / (y*y + 1))",
    "**": "a negative base needs an integer exponent, and 0 needs a non-negative one",
}
_OVERFLOW_HINT = "rescale the inputs, or rewrite the expression so intermediates stay below 1e308"
_OVERFLOW_HINTS = {"exp": "exp overflows above about 709.78; " + _OVERFLOW_HINT}


# How many variable names a hint lists before it counts the rest.
NAMES_SHOWN = 20


def variables_hint(names: list[str], wrong: list[str]) -> str:
    """'did you mean ...? the variables are: a, b, ...' for names given that do not exist."""
    import difflib

    close = [match for name in wrong for match in difflib.get_close_matches(name, names, n=1)]
    shown = ", ".join(names[:NAMES_SHOWN])
    if len(names) > NAMES_SHOWN:
        shown += f" and {len(names) - NAMES_SHOWN:,} more"
    guess = f"did you mean {', '.join(dict.fromkeys(close))}? " if close else ""
    return f"{guess}the variables are: {shown}"


def _function_hint(name: str) -> str:
    import difflib  # only on this error path: it is not free at start-up

    close = difflib.get_close_matches(name, FUNCTION_NAMES, n=1)
    known = ", ".join(FUNCTION_NAMES)
    if close:
        return f"did you mean {close[0]}()? The functions are: {known}"
    return f"the functions are: {known}"
