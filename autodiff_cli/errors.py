"""Errors that carry where they happened, and their rendering as compiler-style text.

Every error a user can cause is an ``AutodiffError``: it knows its message, the
source position (when there is one) and a hint on how to fix it.  Only the CLI
turns them into output and exit codes.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Source:
    """Program text and the name it is reported under (a path, ``<stdin>`` or ``<expr>``).

    ``locate`` is set by the parser that read the text: it turns a token number (see
    ``Where``) into the token's ``Position``.  Positions are worked out only when asked
    for, since a program of a million statements has millions of them and few are read.
    """

    name: str
    text: str
    locate: Callable[[int], Position] | None = field(default=None, compare=False, repr=False)

    def line(self, number: int) -> str:
        # Split on '\n' only: that is what the lexer counts as a line break.
        lines = self.text.split("\n")
        return lines[number - 1].rstrip("\r") if 0 < number <= len(lines) else ""

    def position(self, where: Where) -> Position:
        """``where`` as a Position: a Position is returned as it is, a token number is located."""
        if isinstance(where, int):
            if self.locate is None:
                raise ValueError(f"{self.name}: token {where} cannot be located: this source was not parsed")
            return self.locate(where)
        return where


class Position(namedtuple("Position", "line column width", defaults=(1,))):
    """1-based ``line`` and ``column`` of a token, and how many characters it spans (``width``).

    A tuple rather than a dataclass: the compiler makes one per instruction, and a
    million-statement program makes millions.  (``collections.namedtuple`` rather than
    ``typing.NamedTuple``, which compiles its annotations at every start-up.)
    """

    __slots__ = ()


Where = Position | int
"""Where something is written: a ``Position``, or a token number (1 for the first token of
the text) that the ``Source`` it was parsed from turns into one (``Source.position``)."""


@dataclass(eq=False)
class AutodiffError(Exception):
    """Base class of every error caused by the program text or its inputs.

    ``position`` may be given as a token number (``Where``); it is a ``Position`` once the
    error exists.
    """

    message: str
    position: Position | None = None
    source: Source | None = None
    hint: str | None = None
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(self.message)
        if isinstance(self.position, int) and self.source is not None:
            self.position = self.source.position(self.position)

    def __str__(self) -> str:
        return format_error(self)


class ParseError(AutodiffError):
    """The text is not a well-formed program."""


class ProgramError(AutodiffError):
    """The program is well-formed but not meaningful (a name assigned twice, an unknown function...)."""


class ShapeError(ProgramError):
    """An op's operands have shapes it cannot take (``[4, 3] @ [2, 1]``), found before anything runs."""


class InputError(AutodiffError):
    """The values given for the program's inputs are missing or wrong."""


class EvaluationError(AutodiffError):
    """An operation failed on the given values (log of a negative number, division by zero...)."""


class OutputError(AutodiffError):
    """The result could not be written where it was asked to go."""


# --- text the user wrote, shown safely --------------------------------------------------------

# Unicode categories that have no visible glyph or that move the cursor: controls (ESC, NUL,
# CR, DEL, C1), format characters (bidirectional overrides, zero-width space, BOM), lone
# surrogates (undecodable bytes of a file name) and the line/paragraph separators.
_INVISIBLE = frozenset(("Cc", "Cf", "Cs", "Zl", "Zp"))
_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r"}


def _visible(char: str) -> str:
    import unicodedata

    if char == "\t" or unicodedata.category(char) not in _INVISIBLE:
        return char
    if char in _NAMED_ESCAPES:
        return _NAMED_ESCAPES[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text: str) -> str:
    """``text`` with every invisible or cursor-moving character written as an escape (``\\x1b``).

    Tabs stay.  Anything that echoes user text to a terminal (file names, names from a
    values file, program lines) goes through this, so an ESC sequence cannot recolour or
    clear the screen and a bidirectional override cannot reorder what is shown.
    """
    if text.isprintable():  # the common case, in C
        return text
    return "".join(_visible(char) for char in text)


# A run of non-space characters longer than this is shortened in messages (a 400-digit
# literal, a generated name): the start and the end are kept, with the length between.
# Paths are left whole, so that they can be copied.
LONG_WORD = 60


def shorten(text: str, limit: int = LONG_WORD) -> str:
    """``text`` with each run of more than ``limit`` non-space characters cut in the middle,
    unless it is a path (has a ``/`` or ``\\``)."""
    import re

    def cut(found: re.Match[str]) -> str:
        word = found.group()
        if "/" in word or "\\" in word:
            return word
        return f"{word[:limit // 2 - 6]}...({len(word):,} characters)...{word[-12:]}"

    return re.sub(rf"\S{{{limit + 1},}}", cut, text)


def _say(text: str) -> str:
    return shorten(printable(text))


def format_error(error: AutodiffError) -> str:
    """``FILE:LINE:COL: error: message``, the source line with a caret, then hint and notes.

    User text in any part is shown escaped (``printable``) and long words shortened.
    """
    where = ""
    if error.source is not None:
        where = printable(error.source.name)  # in full: a path to copy
        if error.position is not None:
            where += f":{error.position.line}:{error.position.column}"
        where += ": "
    lines = [f"{where}error: {_say(error.message)}"]
    if error.source is not None and error.position is not None:
        lines.extend(_excerpt(error.source, error.position))
    lines.extend(f"  note: {_say(note)}" for note in error.notes)
    if error.hint:
        lines.append(f"  hint: {_say(error.hint)}")
    return "\n".join(lines)


# Source lines longer than this are cut to a window around the column (a generated
# program can have a line of a million characters).
EXCERPT_WIDTH = 100


def _excerpt(source: Source, position: Position) -> list[str]:
    text = source.line(position.line)
    gutter = str(position.line)
    start = 0
    column = position.column
    if len(text) > EXCERPT_WIDTH:
        start = max(0, min(column - 1 - EXCERPT_WIDTH // 2, len(text) - EXCERPT_WIDTH))
        end = start + EXCERPT_WIDTH
        prefix = "..." if start else ""
        text = prefix + text[start:end] + ("..." if end < len(text) else "")
        column = column - start + len(prefix)
    # Each character as it is shown: invisible ones escaped, several columns wide.
    shown = [_visible(char) for char in text] if not text.isprintable() else list(text)
    # Keep tabs in the padding so the caret lines up however the terminal expands them.
    padding = "".join(piece if piece == "\t" else " " * len(piece) for piece in shown[: column - 1])
    span = shown[column - 1: column - 1 + max(1, position.width)]
    width = sum(len(piece) for piece in span) if span else 1
    caret = "^" + "~" * (width - 1)
    return [
        f" {gutter} | {''.join(shown)}",
        f" {' ' * len(gutter)} | {padding}{caret}",
    ]


# How many names a hint lists before it counts the rest.
NAMES_SHOWN = 20


def variables_hint(names: list[str], wrong: list[str]) -> str:
    """'did you mean ...? the variables are: a, b, ...' for names given that do not exist."""
    import difflib  # only on error paths: it is not free at start-up

    close = [match for name in wrong for match in difflib.get_close_matches(name, names, n=1)]
    shown = listed(names, NAMES_SHOWN)
    guess = f"did you mean {', '.join(dict.fromkeys(close))}? " if close else ""
    return f"{guess}the variables are: {shown}"


def listed(items: Iterable[str], limit: int, separator: str = ", ") -> str:
    """The first ``limit`` items joined, and how many more there are: 'a, b, c and 1,234 more'."""
    items = list(items)
    shown = separator.join(items[:limit])
    return shown + f" and {len(items) - limit:,} more" if len(items) > limit else shown
