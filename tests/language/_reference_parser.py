"""The parser's oracle: the language parsed the slow, obvious way, with Lark's own parser.

``autodiff_cli.language.parse`` is a tuned driver over tables taken from Lark: token
kinds as ints, actions written out in its loop, positions worked out only when asked
for, text parsed in chunks.  This module parses the same grammar file with Lark's own
LALR parser and lexer, applies the language's two rules about lines in a postlexer,
builds the Program in straightforward callbacks with every Position computed at once,
and words errors from Lark's exceptions (what could come next from Lark's interactive
parser, replayed up to the bad token).  The differential tests require both to agree
on every instruction, variable, position and error message.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

from lark import Lark, Token
from lark.exceptions import UnexpectedCharacters, UnexpectedToken

from autodiff_cli.engine.ops import FUNCTIONS
from autodiff_cli.errors import AutodiffError, Position, ProgramError, Source
from autodiff_cli.language.compiler import grammar_text
from autodiff_cli.language.program import (
    CONST,
    INPUT,
    INTERMEDIATE,
    POWER_CONST,
    Instruction,
    Program,
    Variable,
)
from autodiff_cli.language.syntax_errors import (
    end_position,
    indented_output_error,
    line_continues_error,
    stray_character,
    syntax_error,
)


class _SignAfterLineBreak(Exception):
    def __init__(self, token: Token) -> None:
        super().__init__(token)
        self.token = token


class LinePostlexer:
    """A line break inside parentheses is not a separator; a statement that starts with + or -
    right after a line break that ended another statement is an error."""

    always_accept = ("_SEP",)

    def process(self, stream: Any) -> Any:
        depth = 0
        previous = None  # the last token passed on
        seen_statement = False
        for token in stream:
            if token.type == "LPAR":
                depth += 1
            elif token.type == "RPAR":
                depth = max(0, depth - 1)
            elif token.type == "_SEP" and depth and token != ";":
                continue
            if (token.type in ("PLUS", "MINUS") and depth == 0 and seen_statement and previous is not None
                    and previous.type == "_SEP" and previous != ";"):
                raise _SignAfterLineBreak(token)
            if token.type != "_SEP":
                seen_statement = True
            previous = token
            yield token


def _position(token: Token) -> Position:
    return Position(token.line, token.column, max(1, len(token.rstrip("\r\n"))))  # a line break is 1 wide


class ReferenceCompiler:
    """Rule callbacks: each reduction appends an ``Instruction`` and returns its register."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.instructions: list[Instruction] = []
        self.variables: dict[str, Variable] = {}
        self.literals: dict[int, float] = {}  # registers holding a number as written
        self.named: set[int] = set()
        self.last: tuple[int, Position] | None = None
        self.last_is_bare = False

    def _error(self, message: str, position: Position, hint: str | None = None) -> ProgramError:
        return ProgramError(message, position, self.source, hint)

    def _emit(self, op: str, args: tuple[int, ...], param: Any, position: Position) -> int:
        self.instructions.append(Instruction(op, args, param, position))
        return len(self.instructions) - 1

    def _drop_literal(self, register: int) -> float | None:
        if register in self.literals and register == len(self.instructions) - 1:
            self.instructions.pop()
            return self.literals.pop(register)
        return None

    def _check_not_function(self, name: str, position: Position, verb: str) -> None:
        if name in FUNCTIONS:
            raise self._error(f"'{name}' is a function; it cannot be a variable", position,
                              f"call it as {name}(x), or {verb} a different name")

    def assign(self, children: list[Any]) -> None:
        name_token, _, register = children
        name, position = str(name_token), _position(name_token)
        self._check_not_function(name, position, "assign to")
        known = self.variables.get(name)
        if known is not None and known.kind == INPUT and known.default is None:
            raise self._error(f"'{name}' is used before it is assigned", known.position,
                              f"'{name}' is assigned on line {position.line}; move that line above its first use")
        if known is not None:
            raise self._error(f"'{name}' is assigned twice", position,
                              f"it was first assigned on line {known.position.line}; each name is assigned once "
                              f"(use a new name, e.g. '{name}2')")
        literal = self._drop_literal(register)
        if literal is not None:
            register = self._emit(INPUT, (), name, position)
            self.variables[name] = Variable(name, INPUT, position, register, literal)
        else:
            if register in self.named:
                register = self._emit("=", (register,), None, position)
            self.variables[name] = Variable(name, INTERMEDIATE, position, register)
        self.named.add(register)
        self.last = (register, position)
        self.last_is_bare = False

    def bare(self, children: list[Any]) -> None:
        register = children[0]
        self.last = (register, self.instructions[register].position)
        self.last_is_bare = True

    def start(self, children: list[Any]) -> None:
        return None

    def number(self, children: list[Any]) -> int:
        token = children[0]
        value = float(token)
        if math.isinf(value):
            raise self._error(f"the number {token} is too large for a float", _position(token),
                              "floats go up to about 1.8e308")
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
        from autodiff_cli.language.compiler import _function_hint

        name_token = children[0]
        name, position = str(name_token), _position(name_token)
        arguments = children[2] if len(children) == 4 else []
        if name not in FUNCTIONS:
            raise self._error(f"unknown function '{name}'", position, _function_hint(name))
        arity = FUNCTIONS[name].arity
        if len(arguments) != arity:
            raise self._error(
                f"{name}() takes exactly {arity} argument{'s' if arity != 1 else ''} ({len(arguments)} given)",
                position, f"write {name}(x)")
        return self._emit(name, tuple(arguments), None, position)

    def arguments(self, children: list[Any]) -> list[int]:
        return children[::2]  # the registers, without the commas

    def group(self, children: list[Any]) -> int:
        return children[1]

    def neg(self, children: list[Any]) -> int:
        sign, register = children
        literal = self._drop_literal(register)
        if literal is not None:
            folded = self._emit(CONST, (), -literal, _position(sign))
            self.literals[folded] = -literal
            return folded
        return self._emit("neg", (register,), None, _position(sign))

    def pos(self, children: list[Any]) -> int:
        return children[1]

    def pow(self, children: list[Any]) -> int:
        base, operator, exponent = children
        literal = self._drop_literal(exponent)
        if literal is not None:
            return self._emit(POWER_CONST, (base,), literal, _position(operator))
        return self._emit("**", (base, exponent), None, _position(operator))

    def _binary(self, children: list[Any]) -> int:
        left, operator, right = children
        return self._emit(str(operator), (left, right), None, _position(operator))

    add = sub = mul = div = lt = le = gt = ge = eq = ne = _binary

    def finish(self) -> Program:
        if self.last is None:
            raise ProgramError("the program is empty", Position(1, 1), self.source,
                               "write an expression such as 'L = (a*b + c)*f'")
        register, position = self.last
        if self.last_is_bare:  # a rule about the text around the statements, shared with the parser
            error = indented_output_error(self.source)
            if error is not None:
                raise error
        result = next((v.name for v in self.variables.values() if v.register == register), None)
        if result is None:
            result = "output"
            while result in self.variables:
                result += "_"
            self.variables[result] = Variable(result, INTERMEDIATE, position, register)
        return Program(self.source, self.instructions, self.variables, result)


_CALLBACK_NAMES = ("assign", "bare", "start", "number", "var", "call", "arguments", "group", "neg", "pos",
                   "pow", "add", "sub", "mul", "div", "lt", "le", "gt", "ge", "eq", "ne")


class _Delegate:
    """What Lark calls while parsing: the compiler of the parse under way (one Lark parser,
    built once, serves every parse)."""


for _name in _CALLBACK_NAMES:
    setattr(_Delegate, _name, lambda self, children, _name=_name: getattr(_CURRENT[-1], _name)(children))
_CURRENT: list[ReferenceCompiler] = []


@cache
def _lark(with_callbacks: bool) -> Lark:
    return Lark(grammar_text(), parser="lalr", lexer="basic", postlex=LinePostlexer(), maybe_placeholders=False,
                transformer=_Delegate() if with_callbacks else None)


def reference_parse(text: str, name: str = "<expr>") -> Program:
    """The Program of ``text``, or the error, the straightforward way."""
    source = Source(name, text)
    compiler = ReferenceCompiler(source)
    _CURRENT.append(compiler)
    try:
        _lark(True).parse(text)
    except UnexpectedCharacters as error:
        raise stray_character(Position(error.line, error.column), source) from None
    except UnexpectedToken as error:
        raise _syntax_error(text, error.token, source) from None
    except _SignAfterLineBreak as error:
        raise line_continues_error(_position(error.token), source) from None
    finally:
        _CURRENT.pop()
    return compiler.finish()


def _syntax_error(text: str, bad: Token, source: Source) -> AutodiffError:
    """The error for ``bad``, with what Lark's interactive parser accepts just before it."""
    interactive = _lark(False).parse_interactive(text)
    for token in interactive.iter_parse():
        if (token.type, token.start_pos) == (bad.type, bad.start_pos):
            break
    expected = set(interactive.accepts())
    position = end_position(text) if bad.type == "$END" else _position(bad)
    return syntax_error(bad.type, str(bad) if bad.type != "$END" else "", position, expected, source)
