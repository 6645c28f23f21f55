"""Syntax errors in words: what was found, what could have come next, and a hint.

The LALR runtime reports where it stopped and which terminals it would have
accepted; this module turns terminal names (``RPAR``, ``$END``) into words a person
understands and adds the likely fix (an unclosed parenthesis lines above, a missing
operator in ``2x``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..errors import ParseError, Position, Source

__all__ = ["end_position", "indented_output_error", "initializer_hint", "line_continues_error", "stray_character", "syntax_error"]

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
    "AT": "'@'",
    "LESS": "'<'",
    "LESS_EQUAL": "'<='",
    "MORE": "'>'",
    "MORE_EQUAL": "'>='",
    "SAME": "'=='",
    "NOT_SAME": "'!='",
    "LSQB": "'['",
    "RSQB": "']'",
    "COLON": "':'",
    "_SEP": "a new line or ';'",
    "$END": "the end of the input",
}
_OPERAND_STARTS = {"NAME", "NUMBER", "LPAR", "MINUS", "PLUS"}
_OPERATORS = {"PLUS", "MINUS", "STAR", "SLASH", "POW"}
# Where the operand or operator phrase applies, the tensor syntax that may also come there
# ('[' starting a list literal or an index, '@', a slice's ':', the comparisons) goes unsaid:
# the phrases read as they always did.
_ALSO_OPERAND = {"LSQB", "COLON"}
_ALSO_OPERATOR = {"AT", "LSQB", "LESS", "LESS_EQUAL", "MORE", "MORE_EQUAL", "SAME", "NOT_SAME"}
_STATEMENT_ENDS = {"_SEP", "$END"}
_COMPARISONS = {"LESS", "LESS_EQUAL", "MORE", "MORE_EQUAL", "SAME", "NOT_SAME"}


def _describe_expected(expected: set[str]) -> str:
    phrases = []
    if _OPERAND_STARTS <= expected:
        phrases.append("an operand (a number, a name or '(')")
        expected = expected - _OPERAND_STARTS - _ALSO_OPERAND
    if _OPERATORS <= expected:
        phrases.append("an operator (+ - * / **)")
        # After a name, '(' would make it a call; offering it next to the operators only confuses.
        expected = expected - _OPERATORS - {"LPAR"} - _ALSO_OPERATOR
    if expected & _STATEMENT_ENDS:
        phrases.append("the end of the statement")
        expected = expected - _STATEMENT_ENDS
    phrases += sorted(_TERMINAL_WORDS.get(t, t.lower()) for t in expected)
    if len(phrases) <= 1:
        return "".join(phrases)
    return ", ".join(phrases[:-1]) + " or " + phrases[-1]


def _describe_token(terminal: str, text: str) -> str:
    if terminal == "$END":
        return "end of input"
    if terminal == "_SEP":
        return "';'" if text == ";" else "end of line"
    if terminal == "NAME":
        return f"name '{text}'"
    if terminal == "NUMBER":
        return f"number {text}"
    return f"'{text}'"


def end_position(text: str) -> Position:
    """Just after the last character that is not white space: the caret then lands on the
    line that is unfinished, not on the empty line after a file's final newline."""
    stripped = text.rstrip()
    line_start = stripped.rfind("\n") + 1
    return Position(stripped.count("\n") + 1, len(stripped) - line_start + 1)


def _unclosed_bracket(text: str, line: int, column: int) -> tuple[str, Position] | None:
    """The innermost '(' or '[' still open before (line, column), ignoring comments, and which.

    Line breaks inside brackets continue the statement, so an unclosed one can be lines
    above the place where the parser gave up.
    """
    open_brackets: list[tuple[str, Position]] = []
    closing = {")": "(", "]": "["}
    for number, content in enumerate(text.split("\n")[:line], start=1):
        end = column - 1 if number == line else len(content)
        for index, char in enumerate(content[:end]):
            if char == "#":
                break
            if char in "([":
                open_brackets.append((char, Position(number, index + 1)))
            elif char in closing and open_brackets and open_brackets[-1][0] == closing[char]:
                open_brackets.pop()
            elif char == ";":
                open_brackets.clear()
    return open_brackets[-1] if open_brackets else None


def _continue(which: str) -> str:
    """How to write a statement over two lines, for hints about ones that end at a line break."""
    return f"to continue the expression, put it in parentheses or end {which} line with '\\'"


def syntax_error(terminal: str, text: str, position: Position, expected: set[str], source: Source) -> ParseError:
    """The parser stopped at a token of ``terminal`` (``NAME``, ``_SEP``, ``$END``...) spelled
    ``text``, where it could have shifted the terminals ``expected``."""
    found = _describe_token(terminal, text)
    message = f"unexpected {found}; expected {_describe_expected(expected)}"
    hint = None
    bracket = _unclosed_bracket(source.text, position.line, position.column)
    kind, opened = bracket if bracket is not None else (None, None)
    if kind is not None and opened is not None and {"(": "RPAR", "[": "RSQB"}[kind] in expected:
        hint = f"the '{kind}' at line {opened.line}, column {opened.column} is never closed"
    elif _OPERATORS <= expected and terminal in ("NAME", "NUMBER", "LPAR"):
        hint = "write the operator between the operands, e.g. 2*x rather than 2x"
    elif terminal in _COMPARISONS and not expected & _COMPARISONS:
        hint = "comparisons do not chain (a < b < c reads two ways): write (a < b) * (b < c)"
    elif terminal == "EQUAL":
        hint = "only a plain name can be assigned to: 'name = expression' (to compare two values, write a == b)"
    elif terminal == "RPAR" and "RPAR" not in expected:
        if kind == "(":  # '()' or '(a + )': the ')' closes a '(' but comes too early
            hint = "an operand is missing before this ')': write an expression inside the parentheses"
        else:
            hint = "this ')' has no matching '('"
    elif terminal == "_SEP" and text != ";" and _OPERAND_STARTS <= expected:
        hint = f"a line break ends the statement: {_continue('this')}"
    elif terminal in ("STAR", "SLASH", "POW") and _starts_line(source, position):
        hint = f"a line break ends a statement, so a line cannot start with '{text}': {_continue('the previous')}"
    return ParseError(message, position, source, hint)


def _starts_line(source: Source, position: Position) -> bool:
    return not source.line(position.line)[: position.column - 1].strip()


def line_continues_error(position: Position, source: Source) -> ParseError:
    """A statement that starts with + or - on the line after another statement: almost always
    the rest of a formula written over two lines, which a line break cannot continue."""
    sign = source.line(position.line)[position.column - 1]
    statement = " ".join(source.line(position.line).split())
    return ParseError(
        f"this line starts with '{sign}', so it would be a statement of its own, not the rest "
        "of the expression above it",
        position,
        source,
        f"a line break ends a statement: {_continue('the previous')}; for a statement of its own, "
        f"name it: 'y = {statement}'",
    )


def indented_output_error(source: Source) -> ParseError | None:
    """The error for a program whose last statement is an unnamed expression on a line indented
    deeper than the code above it (``loss = a*b`` then ``   c``): it reads as the rest of the
    formula above, but is a statement of its own and would silently become the output.  None
    when the last statement is not like that.  Only called when the last statement is unnamed.
    """
    start = _last_statement_start(source.text)
    if start is None:
        return None
    line, column, previous_indent = start
    text = source.line(line)
    indent = len(text) - len(text.lstrip(" \t"))
    if column != indent + 1 or previous_indent is None or indent <= previous_indent:
        return None
    statement = " ".join(text.split("#")[0].split())
    return ParseError(
        "this indented line reads as the rest of the formula above it, but it is a statement of "
        "its own, and as the last statement it would become the program's output",
        Position(line, column),
        source,
        f"a line break ends a statement: {_continue('the previous')}; for an output of its own, name it "
        f"(y = {statement}) or unindent it",
    )


def _last_statement_start(text: str) -> tuple[int, int, int | None] | None:
    """Where the last statement of ``text`` starts (line, column) and the indentation of the
    code line before it (None if none); None when it starts after a ';'.  Found by walking the
    lines back from the end (never splitting a big text whole): comments run from '#' to the end
    of the line (the language has no strings), a line ending in '\\' runs on into the next, a
    line break inside parentheses does not end a statement."""
    lines = _code_lines_backwards(text)
    current = next(lines, None)
    depth = 0  # ')' minus '(' seen so far, walking backwards
    while current is not None:
        number, code = current
        depth += code.count(")") - code.count("(")
        if depth == 0 and ";" in code:
            return None  # (a ';' inside parentheses is a syntax error, so any ';' here ends a statement)
        before = next(lines, None)
        if depth == 0 and (before is None or not before[1].rstrip().endswith("\\")):
            indent = len(code) - len(code.lstrip(" \t"))
            previous = None if before is None else len(before[1]) - len(before[1].lstrip(" \t"))
            return number, indent + 1, previous
        current = before
    return None


def _code_lines_backwards(text: str) -> Iterator[tuple[int, str]]:
    """(line number, code) of the lines holding code, last first: comments and blank lines left out."""
    end = len(text)
    number = text.count("\n") + 1
    while end >= 0:
        start = text.rfind("\n", 0, end) + 1
        code = text[start:end].split("#")[0].rstrip("\r")
        if code.strip():
            yield number, code
        number -= 1
        end = start - 1


# Characters people paste from documents and other scripts, and what the language writes.
_LOOKALIKES = {"\u2212": "-", "\u2013": "-", "\u2014": "-", "\u00d7": "*", "\u22c5": "*", "\u00b7": "*",
               "\u2219": "*", "\u2217": "*", "\u00f7": "/", "\u2215": "/", "\u2044": "/"}


def stray_character(position: Position, source: Source) -> ParseError:
    """A character no token starts with, with what to write instead when it is not ASCII."""
    line_text = source.line(position.line)
    char = line_text[position.column - 1] if position.column <= len(line_text) else "?"
    hint = ("operators are + - * / ** (or ^); names are letters, digits and _; "
            "'#' starts a comment")
    message = f"unexpected character {char!r}"
    if char == "." and (method := _method_call_hint(line_text, position.column - 1)):
        hint = method
    elif char == "\\":
        hint = ("a '\\' continues a line only as its very last character (a comment goes on the last "
                "line of the statement, or a line of its own); division is '/'")
    elif not char.isascii():
        import unicodedata  # only on this error path

        message += f" ({unicodedata.name(char, f'U+{ord(char):04X}')})"
        hint = _non_ascii_hint(char, unicodedata)
    return ParseError(message, Position(position.line, position.column), source, hint)


# ``x.sum()``, ``W.T``: a method call or attribute as Python writes it, at the '.'.
_METHOD_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)(?:\s*\(([^()]*)\))?")


def _method_call_hint(line_text: str, dot: int) -> str | None:
    """``x.sum()`` -> "write sum(x)": functions take the tensor as their first argument."""
    for found in _METHOD_CALL.finditer(line_text):
        if line_text.find(".", found.start()) != dot:
            continue
        name, method, arguments = found.groups()
        if method == "T":
            return f"the language has no attributes: write transpose({name})"
        rest = f", {arguments.strip()}" if arguments and arguments.strip() else ""
        return f"the language has no methods: functions take the tensor first, as in {method}({name}{rest})"
    return None


def initializer_hint(name: str, parameters: tuple[str, ...], arguments: list[float | None]) -> str:
    """What to write for ``zeros(2, 3)``: the shape is one list, ``zeros([2, 3])``, followed by
    the initializer's ``parameters``; the usage with words when the numbers do not say."""
    shape = len(arguments) - len(parameters)
    usage = f"{name}([rows, columns]{''.join(', ' + p for p in parameters)})"
    if shape < 2 or any(value is None for value in arguments):
        return f"write {usage}"
    words = [f"{value:g}" for value in arguments]  # type: ignore[str-format]
    rest = "".join(", " + word for word in words[shape:])
    return f"the shape is one list: write {name}([{', '.join(words[:shape])}]{rest})"


def _non_ascii_hint(char: str, unicodedata: Any) -> str:
    rule = "programs are ASCII: numbers are written with the digits 0-9, names with A-Z, a-z, 0-9 and _"
    digit = unicodedata.digit(char, None)
    ascii_form = _LOOKALIKES.get(char) or unicodedata.normalize("NFKC", char)
    if digit is not None:
        return f"{rule}; write {digit} for {char!r}"
    if len(ascii_form) == 1 and ascii_form.isascii() and ascii_form.isprintable():
        return f"{rule}; write {ascii_form!r} for {char!r}"
    return rule
