"""Syntax errors in words: what was found, what could have come next, and a hint.

The LALR runtime reports where it stopped and which terminals it would have
accepted; this module turns terminal names (``RPAR``, ``$END``) into words a person
understands and adds the likely fix (an unclosed parenthesis lines above, a missing
operator in ``2x``).
"""

from __future__ import annotations

from typing import Any

from ..errors import ParseError, Position, Source
from . import lalr

__all__ = ["syntax_error"]

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


def syntax_error(error: lalr.UnexpectedInput, source: Source) -> ParseError:
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
