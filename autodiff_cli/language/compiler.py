"""The compiler: program text -> ``Program`` (the intermediate representation in ``program.py``).

Parsing runs Lark's LALR tables (``lalr.py``) with the compiler's callbacks attached,
so each rule is reduced bottom-up as the parser goes.  Each reduction appends one
instruction to a flat list and returns its register number.  Nothing recurses, so a
sum of a million terms or a million nested parentheses is fine.  Syntax errors are
put into words by ``syntax_errors.py``.
"""

from __future__ import annotations

import math
import os
from functools import lru_cache
from typing import Any

from ..engine.graph import paused_cycle_collector
from ..engine.ops import FUNCTIONS
from ..errors import ParseError, Position, ProgramError, Source
from . import lalr
from .program import CONST, INPUT, INTERMEDIATE, POWER_CONST, Instruction, Program, Variable
from .syntax_errors import syntax_error

__all__ = ["GRAMMAR_FILE", "grammar_text", "parse"]

GRAMMAR_FILE = "autodiff.lark"
FUNCTION_NAMES = tuple(FUNCTIONS)

_instruction = tuple.__new__  # Instruction(...) through its generated __new__ costs twice as much


# --- parsing -------------------------------------------------------------------------------


def grammar_text() -> str:
    # os.path rather than pathlib or importlib.resources: this runs on every start-up.
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    installed = os.path.join(package, "grammars", GRAMMAR_FILE)  # the wheel ships it in the package
    path = installed if os.path.isfile(installed) else os.path.join(package, os.pardir, "grammars", GRAMMAR_FILE)
    with open(path, encoding="utf-8") as grammar:
        return grammar.read()


@lru_cache(maxsize=None)
def _tables() -> lalr.Tables:
    return lalr.load_tables(grammar_text())


def parse(text: str, name: str = "<expr>") -> Program:
    """Parse and check a program; raise ParseError or ProgramError saying where it is wrong."""
    source = Source(name, text)
    compiler = _Compiler()
    compiler.reset(source)
    tables = _tables()
    try:
        with paused_cycle_collector():  # tokens and instructions form no cycles either
            lalr.parse(tables, text, compiler)
    except lalr.UnexpectedInput as error:
        raise syntax_error(error, source) from None
    return compiler.finish()


def _position(token: Any) -> Position:
    return Position(token.line, token.column, max(1, len(token)))


class _Compiler:
    """Rule callbacks: each reduction appends an instruction and returns its register."""

    def reset(self, source: Source) -> None:
        self.source = source
        self.instructions: list[Instruction] = []
        self.variables: dict[str, Variable] = {}
        self.literals: dict[int, float] = {}  # registers holding a number as written
        self.named: set[int] = set()  # registers that hold a named variable
        self.statements = 0
        self.last: tuple[int, Position] | None = None  # the last statement's register

    def _error(self, message: str, position: Position, hint: str | None = None) -> ProgramError:
        return ProgramError(message, position, self.source, hint)

    def _emit(self, op: str, args: tuple[int, ...], param: float | str | None, position: Position) -> int:
        self.instructions.append(_instruction(Instruction, (op, args, param, position)))
        return len(self.instructions) - 1

    def _drop_literal(self, register: int) -> float | None:
        """If ``register`` is a number literal just written, remove it and return its value."""
        if register in self.literals and register == len(self.instructions) - 1:
            self.instructions.pop()
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
            register = self._emit(INPUT, (), name, position)
            self.variables[name] = Variable(name, INPUT, position, register, literal)
            self.named.add(register)
        else:
            if register in self.named:  # `b = a`: give b a node of its own
                register = self._emit("=", (register,), None, position)
            self.variables[name] = Variable(name, INTERMEDIATE, position, register)
        self.named.add(register)
        self._end_statement(register, position)

    def bare(self, children: list[Any]) -> None:
        register = children[0]
        self._end_statement(register, self.instructions[register].position)

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
        register = self._emit(CONST, (), value, _position(token))
        self.literals[register] = value
        return register

    def var(self, children: list[Any]) -> int:
        token = children[0]
        name, position = str(token), _position(token)
        self._check_not_function(name, position, "use")
        known = self.variables.get(name)
        if known is not None:
            return known.register
        register = self._emit(INPUT, (), name, position)
        self.variables[name] = Variable(name, INPUT, position, register)
        self.named.add(register)
        return register

    def call(self, children: list[Any]) -> int:
        name_token = children[0]
        name, position = str(name_token), _position(name_token)
        arguments = children[2] if len(children) == 4 else []
        if name not in FUNCTIONS:
            raise self._error(f"unknown function '{name}'", position, _function_hint(name))
        arity = FUNCTIONS[name].arity
        if len(arguments) != arity:
            raise self._error(
                f"{name}() takes exactly {arity} argument{'s' if arity != 1 else ''} ({len(arguments)} given)",
                position,
                f"write {name}(x)",
            )
        return self._emit(name, tuple(arguments), None, position)

    def arguments(self, children: list[Any]) -> list[int]:
        return children[::2]  # the registers, without the commas

    def group(self, children: list[Any]) -> int:
        return children[1]

    def neg(self, children: list[Any]) -> int:
        sign, register = children
        literal = self._drop_literal(register)
        if literal is not None:  # -2 is the number -2, not an operation on 2
            folded = self._emit(CONST, (), -literal, _position(sign))
            self.literals[folded] = -literal
            return folded
        return self._emit("neg", (register,), None, _position(sign))

    def pos(self, children: list[Any]) -> int:
        return children[1]

    def pow(self, children: list[Any]) -> int:
        base, operator, exponent = children
        position = _position(operator)
        literal = self._drop_literal(exponent)
        if literal is not None:
            return self._emit(POWER_CONST, (base,), literal, position)
        return self._emit("**", (base, exponent), None, position)

    def _binary(self, children: list[Any]) -> int:
        left, operator, right = children
        position = _position(operator)
        return self._emit(str(operator), (left, right), None, position)

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


def _function_hint(name: str) -> str:
    import difflib  # only on this error path: it is not free at start-up

    close = difflib.get_close_matches(name, FUNCTION_NAMES, n=1)
    known = ", ".join(FUNCTION_NAMES)
    if close:
        return f"did you mean {close[0]}()? The functions are: {known}"
    return f"the functions are: {known}"
