"""Reading claims: ``dOUT/dNAME = expression`` lines, in the language or in LaTeX.

A claim's head (``dL/dw``, ``d2L/dx2``, ``d2L/dxdy``, ``d^2L/dx dy``) is read here, with the
column of every name kept; its right-hand side is read by the language's own parser
(``language.compiler.parse``), and its errors are moved to where the text is in the claim
or the claims file.  A line ``name = expression`` defines a name the claims after it may
use (``t1 = w*x + b - y``), as a derivation names its intermediate results; ``#`` starts
a comment.

LaTeX (``--claim-latex``, or a claims file that starts with a backslash) is read as
``autodiff diff --format latex`` writes it: ``\\frac{\\partial L}{\\partial w} &= 2 x t_{1}``,
lines separated by ``\\\\``, juxtaposition for products, ``\\frac``, ``^{...}``, ``\\left(``,
``\\sqrt{...}``, ``\\tanh``, ``\\sigma\\left(...\\right)`` (sigmoid), ``\\mathrm{name}``,
``x_{1}`` for ``x1``.  It is translated into the language, each character remembering the
column it came from, so an error points into the LaTeX as written.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import product

from ..engine.ops import FUNCTIONS
from ..engine.registry import function_written_as, latex_commands
from ..errors import AutodiffError, InputError, ParseError, Position, Source, variables_hint
from ..language.program import INPUT, Program

__all__ = ["RESULT_PREFIX", "ClaimLine", "has_claim_heads", "is_backward_pass", "parse_right_hand_side",
           "read_claims"]

_RESULT_NAME = "__claim__"
_RESULT = f"{_RESULT_NAME} = 0 + "  # "0 + ": a number alone would declare an input
RESULT_PREFIX = _RESULT  # what a right-hand side is parsed after: its columns are this much further on
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SUPERSCRIPTS = {"²": 2, "³": 3, "⁴": 4}


@dataclass
class ClaimLine:
    """One line of claims: a claim (``output`` and ``wrt`` set) or a definition (``name`` set).

    ``expression`` is the right-hand side parsed as a program whose inputs are the names it
    uses; ``rhs`` its text in the language; ``written`` the line as written; ``where``
    ``FILE:LINE`` (or the claim's name) for messages; ``source``, ``head_at`` and ``rhs_at`` (where
    the two sides are in it) for an error about the claim found after it was read.
    """

    written: str
    rhs: str
    expression: Program
    where: str
    line: int
    output: str | None = None
    wrt: tuple[str, ...] = ()
    name: str | None = None
    source: Source | None = None
    head_at: Position | None = None
    rhs_at: Position | None = None

    @property
    def is_claim(self) -> bool:
        return self.output is not None

    @property
    def label(self) -> str:
        """``dL/dw``, ``d2L/dx2``, ``d2L/dx dy``: the head, written the same way whatever the input."""
        if len(self.wrt) == 1:
            return f"d{self.output}/d{self.wrt[0]}"
        runs: list[list[object]] = []
        for name in self.wrt:
            if runs and runs[-1][0] == name:
                runs[-1][1] += 1  # type: ignore[operator]
            else:
                runs.append([name, 1])
        below = " ".join(f"d{name}{count if count > 1 else ''}" for name, count in runs)
        return f"d{len(self.wrt)}{self.output}/{below}"


class _Text:
    """Language text and, for each character, the 1-based column it came from."""

    def __init__(self) -> None:
        self.chars: list[str] = []
        self.columns: list[int] = []

    def add(self, text: str, column: int) -> None:
        self.chars.extend(text)
        self.columns.extend([column] * len(text))

    @property
    def text(self) -> str:
        return "".join(self.chars)

    def column(self, index: int) -> int:
        if not self.columns:
            return 1
        return self.columns[min(max(index, 0), len(self.columns) - 1)] + (1 if index >= len(self.columns) else 0)


def _plain(text: str) -> _Text:
    out = _Text()
    for i, char in enumerate(text):
        out.add(char, i + 1)
    return out


_CLAIM_HEAD = re.compile(r"\s*d[^=]*/")
_GRADIENT_LINE = re.compile(r"^\s*[A-Za-z_][A-Za-z0-9_]*\s*\+?=(?!=)", re.MULTILINE)


def is_backward_pass(text: str) -> bool:
    """Whether a claims file is a backward pass (``analysis.backward_claims``): some line is
    ``name = ...`` or ``name += ...`` rather than ``dOUT/dNAME = ...`` (comments left out)."""
    content = "\n".join(line.split("#", 1)[0] for line in text.split("\n"))
    return _GRADIENT_LINE.search(content) is not None


def has_claim_heads(text: str) -> bool:
    """Whether some line of a claims file is a claim, ``dOUT/dNAME = ...``."""
    return any(_CLAIM_HEAD.match(line.split("#", 1)[0]) for line in text.split("\n"))


def read_claims(source: Source, variables: set[str], *, latex: bool = False, first_line: int = 1,
                tensors: bool = False) -> list[ClaimLine]:
    """Every claim and definition of ``source`` (one a line), checked against the program's
    ``variables``; a ParseError or InputError at the place in ``source`` that is wrong.  With
    ``tensors`` (a tensor program), a claim may be written in matrix form (``transpose(X) @ D``)."""
    known = set(variables)
    found: list[ClaimLine] = []
    for number, original, text in _lines(source, latex, variables):
        item = _read_line(source, number, original, text, variables, known, tensors)
        if item.name is not None:
            known.add(item.name)
        found.append(item)
    if not any(item.is_claim for item in found):
        raise ParseError("no claim here: a claim is written 'dOUT/dNAME = expression', e.g. 'dL/dw = 2*x'",
                         Position(first_line, 1), source)
    return found


def _lines(source: Source, latex: bool, variables: set[str]) -> list[tuple[int, str, _Text]]:
    lines = []
    for number, line in enumerate(source.text.split("\n"), start=1):
        line = line.rstrip("\r")
        if latex:
            for start, piece in _latex_pieces(line):
                try:
                    translated = _translate_latex(piece, start, variables)
                except _LatexError as error:
                    raise _error(ParseError, error.message, source, number, error.column, error.width,
                                 error.hint) from None
                if translated is not None:
                    lines.append((number, line, translated))
            continue
        content = line.split("#", 1)[0]
        if content.strip():
            lines.append((number, line, _plain(content)))
    return lines


def _error(kind: type[AutodiffError], message: str, source: Source, line: int, column: int, width: int = 1,
           hint: str | None = None) -> AutodiffError:
    return kind(message, Position(line, column, max(1, width)), source, hint)


def _read_line(source: Source, number: int, original: str, text: _Text, variables: set[str],
               known: set[str], tensors: bool = False) -> ClaimLine:
    body = text.text
    where = f"{source.name}:{number}"
    equals = body.find("=")
    if equals < 0:
        start = len(body) - len(body.lstrip())
        raise _error(ParseError, "expected 'dOUT/dNAME = expression' (a claim) or 'name = expression' "
                     "(a definition)", source, number, text.column(start), 1,
                     "e.g. dL/dw = 2*(w*x + b - y)*x")
    lhs = body[:equals]
    rhs = body[equals + 1:]
    expression = _parse_rhs(source, number, text, equals + 1, rhs, known, tensors)
    head = lhs.strip()
    rhs_at = _span(number, text, equals + 1 + len(rhs) - len(rhs.lstrip()), len(body.rstrip()))
    head_at = _span(number, text, len(lhs) - len(lhs.lstrip()), len(lhs.rstrip()))
    if _NAME.fullmatch(head) and "/" not in head:
        return ClaimLine(original.strip(), rhs.strip(), expression, where, number, name=head, source=source,
                         head_at=head_at, rhs_at=rhs_at)
    output, wrt = _read_head(source, number, text, lhs, variables)
    return ClaimLine(original.strip(), rhs.strip(), expression, where, number, output=output, wrt=wrt,
                     source=source, head_at=head_at, rhs_at=rhs_at)


def parse_right_hand_side(source: Source, number: int, line: str, offset: int, known: set[str]) -> Program:
    """``line[offset:]`` (line ``number`` of ``source``) as an expression over the names ``known``,
    tensors allowed; a ParseError or InputError at its place in the line."""
    return _parse_rhs(source, number, _plain(line), offset, line[offset:], known, tensors=True)


def _span(number: int, text: _Text, start: int, end: int) -> Position:
    """The position on line ``number`` of the characters ``start`` to ``end`` of ``text``."""
    first = text.column(start)
    return Position(number, first, max(1, text.column(end - 1) - first + 1))


def _parse_rhs(source: Source, number: int, text: _Text, offset: int, rhs: str, known: set[str],
               tensors: bool = False) -> Program:
    from ..language.compiler import parse

    if not rhs.strip():
        raise _error(ParseError, "nothing after '=': the claim's right-hand side is missing", source, number,
                     text.column(offset), 1)
    # Parsed as an assignment, so that the right-hand side may use any name (a bare expression
    # would be named 'output', which a program may use for a variable of its own).
    try:
        program = parse(_RESULT + rhs, source.name)
    except AutodiffError as error:
        position = error.position or Position(1, len(_RESULT) + len(rhs) + 1)
        index = offset + max(1, position.column - len(_RESULT)) - 1

        def moved(found: re.Match[str]) -> str:
            return f"at line {number}, column {text.column(offset + int(found.group(1)) - len(_RESULT) - 1)}"

        hint = re.sub(r"at line 1, column (\d+)", moved, error.hint) if error.hint else None
        raise type(error)(error.message, Position(number, text.column(index), position.width), source,
                          hint, error.notes) from None
    for variable in program.variables.values():
        bad = None
        if variable.kind == INPUT and variable.default is not None:
            bad = "a right-hand side is one expression, not an assignment"
        elif variable.kind != INPUT and variable.name != _RESULT_NAME:
            bad = "a right-hand side is one expression, not statements"
        if bad is None and program.has_tensors and not tensors:
            bad = "claims in matrix form (on tensors) are not checked yet: write each claim on scalars"
        if bad:
            where = variable.position
            raise _error(ParseError, bad, source, number, text.column(offset + where.column - len(_RESULT) - 1),
                         where.width)
    for variable in program.inputs:
        if variable.name not in known:
            where = variable.position
            raise _error(InputError, f"'{variable.name}' is not a variable of the program (nor defined above)",
                         source, number, text.column(offset + where.column - len(_RESULT) - 1), where.width,
                         variables_hint(sorted(known), [variable.name]))
    return program


def _read_head(source: Source, number: int, text: _Text, lhs: str, variables: set[str]) -> tuple[str, tuple[str, ...]]:
    head = re.match(r"\s*d(?:\^?\(?(\d+)\)?|([²³⁴]))?\s*([A-Za-z_][A-Za-z0-9_]*)\s*/\s*", lhs)
    if head is None:
        start = len(lhs) - len(lhs.lstrip())
        raise _error(ParseError, "expected 'dOUT/dNAME' before '=' (e.g. dL/dw, d2L/dx2, d2L/dxdy), "
                     "or a name to define", source, number, text.column(start), max(1, len(lhs.strip())))
    order = int(head.group(1)) if head.group(1) else _SUPERSCRIPTS.get(head.group(2) or "", 1)
    output = head.group(3)
    if output not in variables:
        start = head.start(3)
        raise _error(InputError, f"'{output}' is not a variable of the program", source, number,
                     text.column(start), len(output), variables_hint(sorted(variables), [output]))
    if order < 1 or order > 4:
        raise _error(ParseError, f"derivatives of order {order} are not checked (1 to 4 are)", source, number,
                     text.column(head.start(1) if head.group(1) else head.start(2)), 1)
    below = lhs[head.end():]
    wrt = _read_below(source, number, text, below, head.end(), variables, order)
    return output, wrt


_SEGMENT_POWER = re.compile(r"(?:\^|\*\*)?\(?(\d+)\)?|([²³⁴])")


def _read_below(source: Source, number: int, text: _Text, below: str, offset: int, variables: set[str],
                order: int) -> tuple[str, ...]:
    chunks = [(m.start() + offset, m.group()) for m in re.finditer(r"[^\s*,·]+", below)]
    if not chunks:
        raise _error(ParseError, "expected the variable after '/', as in dL/dw", source, number,
                     text.column(offset), 1)
    options = [[[(name, power, start + at) for name, power, at in pieces] for pieces in _segmentations(chunk)]
               for start, chunk in chunks]
    for start, chunk in chunks:
        if not chunk.startswith(("d", "∂")):
            raise _error(ParseError, f"expected 'd' before the variable name, as in d{chunk}", source, number,
                         text.column(start), len(chunk))
    readings = []
    for choice in product(*options):
        segments = [seg for segs in choice for seg in segs]
        readings.append(segments)
    good = [r for r in readings
            if all(name in variables for name, _, _ in r) and sum(p for _, p, _ in r) == order]
    if good:
        best = max(good, key=lambda r: (-len(r), sum(len(n) for n, _, _ in r)))
        flat: list[str] = []
        for name, power, _ in best:
            flat.extend([name] * power)
        return tuple(flat)
    # Say what is wrong: an unknown name (the reading with the fewest pieces), else the order.
    named = [r for r in readings if all(name in variables for name, _, _ in r)]
    if named:
        made = sum(p for _, p, _ in named[0])
        raise _error(ParseError, f"the head says order {order}, but the variables below the line make "
                     f"{made}", source, number, text.column(offset), len(below.rstrip()),
                     "write d2L/dx2 for the second derivative in x, d2L/dxdy for the mixed one")
    shortest = min(readings, key=len) if readings else []
    for name, _, at in shortest:
        if name not in variables:
            column = text.column(at)
            raise _error(InputError, f"'{name}' is not a variable of the program", source, number, column,
                         len(name), variables_hint(sorted(variables), [name]))
    raise _error(ParseError, "cannot read the variables below the line", source, number, text.column(offset),
                 len(below.rstrip()))


def _segmentations(chunk: str, limit: int = 64) -> list[list[tuple[str, int, int]]]:
    """Every way to cut ``dxdy2`` into (name, power, index) pieces, each written ``d`` NAME [power]."""
    results: list[list[tuple[str, int, int]]] = []
    stack: list[tuple[int, list[tuple[str, int, int]]]] = [(0, [])]
    while stack and len(results) < limit:
        at, pieces = stack.pop()
        if at == len(chunk):
            if pieces:
                results.append(pieces)
            continue
        if chunk[at] not in "d∂":
            continue
        name_match = _NAME.match(chunk, at + 1)
        if name_match is None:
            continue
        for end in range(name_match.end(), at + 1, -1):
            name = chunk[at + 1:end]
            if not _NAME.fullmatch(name):
                continue
            power = _SEGMENT_POWER.match(chunk, end)
            if power is not None and power.group():
                value = int(power.group(1)) if power.group(1) else _SUPERSCRIPTS[power.group(2)]
                stack.append((power.end(), pieces + [(name, value, at + 1)]))
            stack.append((end, pieces + [(name, 1, at + 1)]))
    return results


# --- LaTeX ----------------------------------------------------------------------------------

# The functions as LaTeX writes them, from their registry entries: a command (\\tanh, \\ln, \\sigma),
# any function's name in \\operatorname{...}, the root \\sqrt and the bars \\left| ... \\right|.
_LATEX_FUNCTIONS = latex_commands()
_OPERATOR_NAMES = frozenset(FUNCTIONS)
_ROOT = function_written_as("\\sqrt")
_ABSOLUTE = function_written_as("\\left|")
# Commands that are also Greek letters, so also names of the program's variables: read as a
# function only where a call follows (\\sigma(x) is sigmoid, \\sigma alone a variable).
_GREEK = frozenset(("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
                    "lambda", "mu", "nu", "xi", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi", "psi",
                    "omega"))
_SKIPPED = {",", ";", "!", ":", "quad", "qquad", "displaystyle", "left.", "right.", "Big", "big", "bigg"}


def _latex_pieces(line: str) -> list[tuple[int, str]]:
    """The claims on one line of LaTeX: split at ``\\\\``, environments and ``$`` removed."""
    pieces = []
    start = 0
    for match in re.finditer(r"\\\\|$", line):
        piece = line[start:match.start()]
        cleaned = re.sub(r"\\(begin|end)\{[a-z*]+\}|\$", lambda m: " " * len(m.group()), piece)
        if cleaned.strip() and not cleaned.lstrip().startswith("%"):
            pieces.append((start, cleaned))
        start = match.end()
    return pieces


class _LatexError(Exception):
    """LaTeX that cannot be translated, at a 1-based column of its line."""

    def __init__(self, message: str, column: int, width: int = 1, hint: str | None = None) -> None:
        super().__init__(message)
        self.message, self.column, self.width, self.hint = message, column, width, hint


# The commands of matrix LaTeX (diff writes X^\top and \odot for a tensor program's derivatives).
_MATRIX_COMMANDS = ("top", "intercal", "odot", "otimes")

# What each command that takes arguments looks like, for the messages about a missing one.
_ARGUMENT_FORMS = {"frac": r"\frac{numerator}{denominator}", "dfrac": r"\dfrac{numerator}{denominator}",
                   "tfrac": r"\tfrac{numerator}{denominator}", "sqrt": r"\sqrt{x} or \sqrt[3]{x}",
                   "^": "x^{2}"}


# The translation is written as recursive descent, with each step that would recurse a
# generator that yields the step it calls; ``run`` drives them from an explicit stack, so that
# groups nested however deep need no Python recursion.
_Step = Iterator["_Step"]


class _Latex:
    """A recursive-descent translation of one LaTeX claim into the language (see ``run``)."""

    def __init__(self, text: str, start: int, variables: set[str]) -> None:
        self.s = text
        self.i = 0
        self.start = start
        self.variables = variables
        self.out = _Text()
        self.last = ""  # "end": the last token ends an operand; "fn": a function name

    def column(self, index: int) -> int:
        return self.start + index + 1

    def emit(self, text: str, at: int, kind: str) -> None:
        """``kind``: "operand" (a name or a number), "open", "close", "fn", "op"."""
        if self.last == "end" and kind in ("operand", "open", "fn"):
            self.out.add("*", self.column(at))
        self.out.add(text, self.column(at))
        self.last = "end" if kind in ("operand", "close") else "fn" if kind == "fn" else ""

    def run(self, step: _Step) -> None:
        """Carry out ``step`` and the steps it yields, each before the one that yielded it resumes."""
        stack = [step]
        while stack:
            called = next(stack[-1], None)
            if called is None:
                stack.pop()
            else:
                stack.append(called)

    def group(self, stop: str, opened: int | None = None) -> _Step:
        """Translate up to the closing ``stop`` (``}`` or ``]``) of the bracket at ``opened``,
        or to the end of the text when there is none to close."""
        s = self.s
        while self.i < len(s):
            char = s[self.i]
            if char == stop:
                self.i += 1
                return
            yield self.token()
        if opened is not None:
            raise _LatexError(f"this '{s[opened]}' is never closed: add '{stop}' where its group ends",
                              self.column(opened))

    def braced(self, command: str, at: int, role: str = "argument") -> _Step:
        """The argument of ``command`` (``frac``, ``sqrt`` or ``^``, written at ``at``): a
        ``{...}`` group, or one token, as TeX reads it (``\\frac12`` is one half).  ``role``
        names the argument in messages: "exponent", "numerator", "denominator", "argument"."""
        self.skip_space()
        start = self.i
        if (start >= len(self.s) or self.s[start] in "})]&=" or self.s.startswith("\\right", start)
                or self.empty_group_at(start)):
            written = "^" if command == "^" else "\\" + command
            needs = {"^": "an exponent", "sqrt": "an argument"}.get(command, "two arguments")
            raise _LatexError(f"'{written}' needs {needs}", self.column(at), len(written),
                              f"write {_ARGUMENT_FORMS[command]}")
        self.emit("(", start, "open")
        if self.s[start] == "{":
            self.i += 1
            yield self.group("}", start)
            self.emit(")", self.i - 1, "close")
        elif self.s[start].isdigit():  # one token is one digit: \\frac12 is \\frac{1}{2}
            self.i = start + 1
            self.emit(self.s[start], start, "operand")
            self.emit(")", start, "close")
            if role != "numerator":  # a numerator's next digit is the denominator
                self.refuse_digits_after(command, at, role)
        else:
            yield self.token()
            self.emit(")", start, "close")

    def empty_group_at(self, index: int) -> bool:
        """Whether ``{}`` (spaces allowed inside) starts at ``index``."""
        return self.s.startswith("{", index) and self.s[index + 1:].lstrip(" \t").startswith("}")

    def refuse_digits_after(self, command: str, at: int, role: str) -> None:
        """``x^10`` is x^{1}0 to TeX, and x^{10} to most people who type it: read neither way."""
        more = re.match(r"[0-9.]+", self.s[self.i:])
        if more is None:
            return
        written = self.s[at:self.i + more.end()]
        raise _LatexError(f"'{written}' is ambiguous: LaTeX takes one digit, {self.s[self.i - 1]}, as the {role} "
                          f"and {more.group()} after it", self.column(at), len(written),
                          f"write ^{{{self.s[self.i - 1]}{more.group()}}} for that power, or ^{{{self.s[self.i - 1]}}} "
                          f"{more.group()} for what LaTeX shows" if command == "^" else
                          f"put the {role} in braces: {_ARGUMENT_FORMS[command]}")

    def skip_space(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t&":
            self.i += 1

    def raw_braced(self) -> str:
        self.skip_space()
        if self.i < len(self.s) and self.s[self.i] == "{":
            end = self.s.find("}", self.i)
            end = len(self.s) if end < 0 else end
            content = self.s[self.i + 1:end]
            self.i = end + 1
            return content.replace("\\_", "_").replace(" ", "")
        return ""

    def name(self, base: str, at: int) -> None:
        """A name, and its subscript: ``x_{1}`` is ``x1`` (or ``x_1`` where the program has that)."""
        s = self.s
        if self.i < len(s) and s[self.i] == "_":
            self.i += 1
            if self.i < len(s) and s[self.i] == "{":
                sub = self.raw_braced()
            else:
                sub = s[self.i:self.i + 1]
                self.i += 1
            joined, underscored = base + sub, f"{base}_{sub}"
            base = underscored if joined not in self.variables and underscored in self.variables else joined
        self.emit(base, at, "operand")

    def call_follows(self) -> bool:
        rest = self.s[self.i:].lstrip()
        return rest.startswith(("\\left(", "(", "\\left[", "\\bigl(", "\\Bigl("))

    def token(self) -> _Step:
        s = self.s
        at = self.i
        if at >= len(s):
            return
        char = s[at]
        if char in " \t&":
            self.i += 1
            return
        if char == "\\":
            command = re.match(r"\\([A-Za-z]+|.)", s[at:])
            word = command.group(1) if command else ""
            self.i = at + 1 + len(word)
            yield self.command(word, at)
            return
        if char.isdigit() or (char == "." and s[at + 1:at + 2].isdigit()):
            number = re.match(r"[0-9]*\.?[0-9]+|[0-9]+\.?", s[at:])
            assert number is not None
            self.i = at + len(number.group())
            self.emit(number.group(), at, "operand")
            return
        if char.isalpha():
            self.i = at + 1
            self.name(char, at)
            return
        self.i = at + 1
        if self.empty_group_at(at):  # {} adds nothing in TeX
            self.i = self.s.index("}", at) + 1
            return
        if char == "{" or char in "([":
            self.emit("(", at, "open")
            if char == "{":
                yield self.group("}", at)
                self.emit(")", self.i - 1, "close")
            return
        if char in ")]":
            self.emit(")", at, "close")
            return
        if char == "^":
            self.emit("**", at, "op")
            yield self.braced("^", at, "exponent")
            return
        if char == "}":
            return
        self.emit(char, at, "op")

    def root(self, at: int) -> _Step:
        """``\\sqrt{x}`` as ``sqrt(x)``; ``\\sqrt[n]{x}`` as ``(x)**(1/(n))``."""
        self.skip_space()
        if not self.s.startswith("[", self.i):
            self.emit(_ROOT, at, "fn")
            yield self.braced("sqrt", at)
            return
        index = _Latex(self.s, self.start, self.variables)
        opened = index.i = self.i
        index.i += 1
        yield index.group("]", opened)
        if not index.out.chars:
            raise _LatexError("the root's index is empty: write the n of \\sqrt[n]{x}, or \\sqrt{x}",
                              self.column(opened), index.i - opened)
        self.i = index.i
        self.emit("(", at, "open")
        yield self.braced("sqrt", at)
        self.emit("**", opened, "op")
        self.emit("(", opened, "open")
        self.emit("1", opened, "operand")
        self.emit("/", opened, "op")
        self.emit("(", opened, "open")
        self.out.chars.extend(index.out.chars)
        self.out.columns.extend(index.out.columns)
        self.last = index.last
        self.emit(")", index.i - 1, "close")
        self.emit(")", index.i - 1, "close")
        self.emit(")", index.i - 1, "close")

    def command(self, word: str, at: int) -> _Step:
        if word == "":
            raise _LatexError("a backslash with no command after it", self.column(at), 1,
                              "remove it, or write the command (\\frac, \\sqrt, \\cdot...)")
        if word in _SKIPPED or word in ("left", "right") and self.i >= len(self.s):
            return
        if word == "left" or word == "right":
            delimiter = self.s[self.i:self.i + 1]
            self.i += 1
            if delimiter == "|":
                if word == "left":
                    self.emit(_ABSOLUTE, at, "fn")
                    self.emit("(", at, "open")
                else:
                    self.emit(")", at, "close")
            elif delimiter in "([":
                self.emit("(", at, "open")
            elif delimiter in ")]":
                self.emit(")", at, "close")
            elif delimiter == "\\":  # \left\{ ... \right\}
                self.i += 1
                self.emit("(" if word == "left" else ")", at, "open" if word == "left" else "close")
            return
        if word in _MATRIX_COMMANDS:  # diff's LaTeX of a tensor program; X W beside them is a matrix product
            raise _LatexError(f"'\\{word}' is matrix LaTeX, which --claim-latex does not read: its products "
                              "written side by side would be read entry by entry", self.column(at), len(word) + 1,
                              "write the claim in the language with --claim, e.g. "
                              "--claim 'dL/dW = transpose(X) @ (P - Y) / 4'")
        if word in ("cdot", "times", "ast"):
            self.emit("*", at, "op")
            return
        if word == "frac" or word == "dfrac" or word == "tfrac":
            self.emit("(", at, "open")
            yield self.braced(word, at, "numerator")
            self.emit("/", at, "op")
            yield self.braced(word, at, "denominator")
            self.emit(")", at, "close")
            return
        if word == "sqrt":
            yield self.root(at)
            return
        if word in ("mathrm", "text", "operatorname", "mathit", "textrm"):
            content = self.raw_braced()
            if content in _OPERATOR_NAMES and self.call_follows():
                self.emit(content, at, "fn")
            else:
                self.name(content, at)
            return
        if word in _LATEX_FUNCTIONS and (word not in _GREEK or self.call_follows()):
            self.emit(_LATEX_FUNCTIONS[word], at, "fn")
            return
        if word == "partial":
            self.emit("d", at, "op")
            return
        if word == "{" or word == "}":
            self.emit("(" if word == "{" else ")", at, "open" if word == "{" else "close")
            return
        self.name(word, at)  # \alpha, \theta: the program's names alpha, theta


def _translate_latex(piece: str, start: int, variables: set[str]) -> _Text | None:
    """One LaTeX claim (or definition) as language text, or None for a line with nothing in it."""
    equals = piece.find("=")
    if equals < 0:
        translator = _Latex(piece, start, variables)
        translator.run(translator.group(""))
        return translator.out if translator.out.chars else None
    head = _latex_head(piece[:equals], start, variables)
    body = _Latex(piece[equals + 1:], start + equals + 1, variables)
    body.run(body.group(""))
    out = _Text()
    out.chars, out.columns = list(head.chars), list(head.columns)
    out.add("=", start + equals + 1)
    out.chars.extend(body.out.chars)
    out.columns.extend(body.out.columns)
    return out


def _latex_head(lhs: str, start: int, variables: set[str]) -> _Text:
    """``\\frac{\\partial^{2} L}{\\partial x \\, \\partial y}`` as ``d2L/dx dy``; a plain name as itself."""
    frac = re.match(r"\s*\\[dt]?frac\s*\{(.*)\}\s*\{(.*)\}[\s&]*$", lhs)
    out = _Text()
    if frac is None:
        translator = _Latex(lhs, start, variables)
        translator.run(translator.group(""))
        return translator.out
    for part, offset, separator in ((frac.group(1), frac.start(1), "/"), (frac.group(2), frac.start(2), "")):
        i = 0
        while i < len(part):
            at = start + offset + i + 1
            if part.startswith("\\partial", i) or (part[i] == "d" and part[i + 1:i + 2] in ("^", " ", "\\")):
                i += len("\\partial") if part.startswith("\\partial", i) else 1
                out.add("d", at)
                power = re.match(r"\s*\^\s*\{?\s*(\d+)\s*\}?", part[i:])
                if power:
                    out.add(power.group(1), start + offset + i + 1)
                    i += power.end()
                while i < len(part) and part[i] == " ":
                    i += 1
                continue
            if part[i] == "^":
                power = re.match(r"\^\s*\{?\s*(\d+)\s*\}?", part[i:])
                if power:
                    out.add(power.group(1), at)
                    i += power.end()
                    continue
            if part.startswith("\\,", i) or part.startswith("\\;", i) or part[i] == " ":
                out.add(" ", at)
                i += 2 if part[i] == "\\" else 1
                continue
            translator = _Latex(part[i:], start + offset + i, variables)
            translator.run(translator.token())
            if translator.out.chars and translator.out.chars[-1:] != ["*"]:
                out.chars.extend(c for c in translator.out.chars)
                out.columns.extend(translator.out.columns)
            i += max(1, translator.i)
        out.add(separator, start + offset + len(part) + 1) if separator else None
    return out
