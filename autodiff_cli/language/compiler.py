"""The compiler: program text -> ``Program`` (the intermediate representation in ``program.py``).

The driver runs the LALR tables that ``lalr.py`` takes from Lark, and each rule's
action is written out in the loop: a reduction appends at most one instruction to
flat columns and leaves its register on the stack.  Nothing recurses, so a sum of a
million terms or a million nested parentheses is fine.  Syntax errors are put into
words by ``syntax_errors.py``.

What makes it fast enough for programs of millions of statements (measured in
``benchmarks/bench_parse.py``):

* tokens are the strings of one ``findall`` and their kinds bytes (``lalr.Scanner``);
  the stack holds a token's index, never a token object;
* no position is worked out while parsing: instructions and variables keep the
  token's number, and the ``Source`` locates it when an error or a caller asks
  (``_Locator``), which is the single largest saving;
* the text is parsed in chunks of about ``CHUNK`` characters cut after a line break at
  parenthesis depth 0, so the token lists of a 30 MB program never exist at once, a
  position is located by scanning one chunk again, and progress can be reported.

Two rules about lines live here.  A line break inside parentheses does not end the
statement (it is skipped), elsewhere it acts as ``;``: the table sends such line
breaks to ``NEWLINE``.  And a line that starts with ``+`` or ``-`` right after a
finished statement is an error (``SIGN``), not a statement of its own: ``a*b`` then a
line ``+ c`` would otherwise make ``+c`` the output and silently drop ``a*b``.
"""

from __future__ import annotations

import math
import os
import re
from bisect import bisect_right
from collections.abc import Callable
from functools import cache
from types import CodeType
from typing import Any

from ..engine.graph import paused_cycle_collector
from ..engine.ops import CALLS, FUNCTIONS
from ..errors import ParseError, Position, ProgramError, Source
from . import lalr, templates
from .program import (
    CONST,
    INITIALIZERS,
    INPUT,
    INTERMEDIATE,
    POWER_CONST,
    ArrayLiteral,
    Initializer,
    Instructions,
    Program,
    TensorConstant,
    Variable,
)
from .syntax_errors import (
    end_position,
    indented_output_error,
    initializer_hint,
    line_continues_error,
    stray_character,
    syntax_error,
)
from .templates import Template

__all__ = ["CHUNK", "GRAMMAR_FILE", "grammar_text", "parse", "tiny_numbers"]

GRAMMAR_FILE = "autodiff.lark"
CHUNK = 1 << 16  # characters parsed at a time (a chunk ends at the first line break after this)
# The largest tensor the language writes: NumPy's own limit is 64 axes, and a billion float64 entries
# (8 GB) is more than any program here needs.
MAX_AXES = 32
MAX_ENTRIES = 1_000_000_000

Progress = Callable[[int, int], None]
"""Called after each chunk with the characters parsed so far and the total."""


@cache
def tensor_operators() -> frozenset[str]:
    """The binary operators that are tensor ops (``@``, the comparisons): a program writing one
    runs as tensors."""
    from ..engine.registry import ENTRIES

    return frozenset(name for name, op in ENTRIES.items()
                     if not op.elementwise and op.arity == 2 and not op.written.startswith(name + "("))


@cache
def tensor_calls() -> dict[str, Any]:
    """The tensor ops written as calls (``sum(x)``; ``@`` and ``x[i]`` have syntax of their own), by
    name: read at the first call of no scalar function, so that start-up does not import the table."""
    from ..engine.registry import ENTRIES

    return {name: op for name, op in ENTRIES.items() if not op.elementwise and
            (op.written.startswith(name + "(") or (op.written_param or "").startswith(name + "("))}


def _call_usage(name: str, op: Any) -> str:
    """How a tensor call is written, for hints: ``sum(x), sum(x, axis) or sum(x, axis, keepdim)``."""
    call = op.written.replace("{x}", "x").replace("{y}", "y").replace("{z}", "z")[:-1]
    forms, written = [], call
    for argument in op.arguments:
        if argument.default is None and argument.kind in ("shape", "count"):  # required
            written += ", [2, -1]" if argument.kind == "shape" else f", {argument.name}"
            continue
        forms.append(written + ")")
        written += f", {argument.name}"
    forms.append(written + ")")
    return forms[0] if len(forms) == 1 else ", ".join(forms[:-1]) + " or " + forms[-1]


def function_names() -> tuple[str, ...]:
    return (*CALLS, *tensor_calls(), *INITIALIZERS)


# --- parsing -------------------------------------------------------------------------------


def grammar_text() -> str:
    # os.path rather than pathlib or importlib.resources: this runs on every start-up.
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    installed = os.path.join(package, "grammars", GRAMMAR_FILE)  # the wheel ships it in the package
    path = installed if os.path.isfile(installed) else os.path.join(package, os.pardir, "grammars", GRAMMAR_FILE)
    with open(path, encoding="utf-8") as grammar:
        return grammar.read()


@cache
def tiny_numbers(text: str, dtype: str = "float64") -> list[tuple[int, int, str]]:
    """The line, column and text of each number written in the program ``text`` that is too
    small for a float, so that it is read as 0 (``1e-400``; in float32, ``1e-50``).

    Nearly every program has none, which one search says (an exponent of -100 or below, or
    200 zeros in a row, which any such number with a larger exponent has); only then is the text scanned, with the grammar's own patterns for
    comments, names and numbers, so that neither '# 1e-400' nor a name is taken for one.
    """
    float32 = dtype == "float32"
    if not float32 and not any(pattern.search(text) for pattern in _MAY_BE_TINY) and "0" * 200 not in text:
        return []
    if float32 and not _MAY_BE_TINY_IN_FLOAT32.search(text) and "0" * 40 not in text:
        return []
    stored = _in_float32 if float32 else float
    patterns = {name: re.findall(rf"^{name}: /(.*)/$", grammar_text(), flags=re.M)[0]
                for name in ("COMMENT", "NAME", "NUMBER")}
    tokens = re.compile("|".join(f"(?P<{name}>{pattern})" for name, pattern in patterns.items()))
    found = []
    line, line_start = 1, 0
    for match in tokens.finditer(text):
        literal = match.group()
        mantissa = literal.lower().partition("e")[0]
        if match.lastgroup != "NUMBER" or stored(literal) != 0.0 or not _NONZERO_DIGIT.search(mantissa):
            continue
        start = match.start()
        line += text.count("\n", line_start, start)
        line_start = text.rfind("\n", 0, start) + 1
        found.append((line, start - line_start + 1, literal))
    return found


# Each starts with a literal, which the regex engine finds as a plain substring: ~10x faster.
_MAY_BE_TINY = (re.compile(r"e-0*[1-9][0-9]{2}"), re.compile(r"E-0*[1-9][0-9]{2}"))
_NONZERO_DIGIT = re.compile(r"[1-9]")
_MAY_BE_TINY_IN_FLOAT32 = re.compile(r"[eE]-0*[1-9][0-9]")  # float32 reads 1e-46 as 0


def _in_float32(literal: str) -> float:
    import numpy as np

    return float(np.float32(float(literal)))


def _tables() -> lalr.Tables:
    return lalr.load_tables(grammar_text())


def parse(text: str, name: str = "<expr>", *, progress: Progress | None = None, chunk: int = CHUNK) -> Program:
    """Parse and check a program; raise ParseError or ProgramError saying where it is wrong.

    ``progress`` is told how far the parse has got after each chunk of about ``chunk``
    characters.
    """
    tables = _tables()
    locator = _Locator(tables.scanner, text)
    source = Source(name, text, locator.locate)
    compiler = _Compiler(tables, source, locator)
    with paused_cycle_collector():  # nothing built here can form a cycle
        compiler.run(text, chunk, progress)
    return compiler.finish()


class _Locator:
    """Token numbers -> Positions for one text: the chunk holding the token is scanned again.

    Token ``n`` is the ``n``-th token of the whole text, counting from 1; the end of
    the input is one past the last.  Each chunk records where it starts in the text and
    how many tokens came before it.  The last chunk scanned is kept, since the
    positions asked for together (an error and its notes) are usually close.
    """

    def __init__(self, scanner: lalr.Scanner, text: str) -> None:
        self.scanner = scanner
        self.text = text
        self.starts: list[int] = []  # each chunk's first character
        self.ends: list[int] = []
        self.bases: list[int] = []  # tokens before each chunk
        self._lines: dict[int, int] = {}  # chunk -> line breaks before it
        self._scanned: tuple[int, list[str], list[int]] | None = None

    def add_chunk(self, start: int, end: int, base: int) -> None:
        self.starts.append(start)
        self.ends.append(end)
        self.bases.append(base)

    def offset(self, number: int) -> tuple[int, int]:
        """Where token ``number`` starts in the text, and its width."""
        chunk = bisect_right(self.bases, number - 1) - 1
        start = self.starts[chunk]
        piece = self.text[start:self.ends[chunk]]
        if self._scanned is None or self._scanned[0] != chunk:
            tokens = self.scanner.scan(piece)[0]
            self._scanned = (chunk, tokens, self.scanner.token_starts(piece, tokens))
        _, tokens, starts = self._scanned
        index = number - 1 - self.bases[chunk]
        if index >= len(tokens):  # the end of the input
            return start + len(piece.rstrip(self.scanner.blank)), 1
        # A line break is one character wide, CRLF too, as a stray character is.
        return start + starts[index], max(1, len(tokens[index].rstrip("\r\n")))

    def locate(self, number: int) -> Position:
        offset, width = self.offset(number)
        chunk = bisect_right(self.starts, offset) - 1
        if chunk not in self._lines:
            self._lines[chunk] = self.text.count("\n", 0, self.starts[chunk])
        line = self._lines[chunk] + self.text.count("\n", self.starts[chunk], offset) + 1
        column = offset - (self.text.rfind("\n", 0, offset) + 1) + 1
        return Position(line, column, width)


# The action of each rule of the grammar, by its callback name (the grammar's `-> alias`).
(LIST, PASS, VAR, NUMBER, BINARY, ASSIGN, BARE, CALL, ARGUMENTS, MORE_ARGUMENTS, FIRST_EXTRA, NEXT_EXTRA,
 NEG, POW, SECOND, NEWLINE, SIGN) = ACTION_NAMES = ("LIST", "PASS", "VAR", "NUMBER", "BINARY", "ASSIGN", "BARE",
                                                    "CALL", "ARGUMENTS", "MORE_ARGUMENTS", "FIRST_EXTRA",
                                                    "NEXT_EXTRA", "NEG", "POW", "SECOND", "NEWLINE", "SIGN")
# The tensor syntax's actions: rare, so the driver hands them to one method, and windows
# that use them get no template (templates.py has no code for them).
ARRAY, INDEX, SLICE_ALL, SLICE_FROM, SLICE_TO, SLICE_BETWEEN, SLICE_STEP, SLICE_NO_STEP = TENSOR_ACTIONS = (
    "ARRAY", "INDEX", "SLICE_ALL", "SLICE_FROM", "SLICE_TO", "SLICE_BETWEEN", "SLICE_STEP", "SLICE_NO_STEP")
_ACTIONS = {"var": VAR, "number": NUMBER, "add": BINARY, "sub": BINARY, "mul": BINARY, "div": BINARY,
            "matmul": BINARY, "lt": BINARY, "le": BINARY, "gt": BINARY, "ge": BINARY, "eq": BINARY, "ne": BINARY,
            "assign": ASSIGN, "bare": BARE, "call": CALL, "neg": NEG, "pow": POW, "pos": SECOND,
            "group": SECOND, "start": LIST, "list": ARRAY, "index": INDEX, "slice_all": SLICE_ALL,
            "slice_from": SLICE_FROM, "slice_to": SLICE_TO, "slice_between": SLICE_BETWEEN, "slice_step": SLICE_STEP,
            "slice_no_step": SLICE_NO_STEP}
_OPERATORS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "matmul": "@",
              "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
TEMPLATE_AFTER = 2  # a window gets its own code the second time it is seen (see templates.py)
TEMPLATES_PER_WINDOW = 4  # the same kinds from the same state, with different states below


def _rule_actions(tables: lalr.Tables) -> tuple[list[str], list[str | None]]:
    """Each rule's action and, for binary operators, the op it emits; then the two
    pseudo-rules (``tables.newline_rule``, ``tables.sign_rule``)."""
    actions: list[str] = []
    for (origin, expansion, callback, _), passes in zip(tables.rules, tables.passes_through):
        if passes:
            actions.append(PASS)
        elif callback == "arguments":  # arguments: expr (COMMA expr)*
            actions.append(ARGUMENTS if expansion == ["keep"] else MORE_ARGUMENTS)
        elif origin.startswith("__arguments"):  # the (COMMA expr)* list Lark makes of it
            actions.append(FIRST_EXTRA if expansion == ["keep", "keep"] else NEXT_EXTRA)
        elif callback is None:
            actions.append(LIST)
        else:
            actions.append(_ACTIONS[callback])
    actions += [NEWLINE, SIGN]
    return actions, [_OPERATORS.get(callback) for _, _, callback, _ in tables.rules]


class _Window:
    """What is known about one window of kinds from one state: how often it was run by the
    driver, and its templates (one per set of states found below it)."""

    __slots__ = ("seen", "templates")

    def __init__(self, seen: int = 0, known: list[Template] | None = None) -> None:
        self.seen = seen
        self.templates: list[Template] = known or []

    def find(self, states: list[int]) -> Template | None:
        for template in self.templates:
            if states[len(states) - template.depth:] == template.below:
                return template
        return None


class _Compiler:
    """The parse of one text: the LALR stacks and what the actions have built so far.

    ``run`` parses chunk after chunk; the stacks, the variables and the templates carry
    over from one chunk to the next.  Within a chunk, instructions are appended as tuples
    to ``pending``, then moved to the compact columns.  The methods without an underscore
    are actions that both the driver and generated templates call.
    """

    def __init__(self, tables: lalr.Tables, source: Source, locator: _Locator) -> None:
        self.tables = tables
        self.source = source
        self.locator = locator
        self.actions, self.operators = _rule_actions(tables)
        self.instructions = Instructions()
        # Instructions of the chunk being parsed, by column: ops, firsts, seconds, params, wheres.
        self.pending: tuple[list[str], list[int], list[int], list[Any], list[int]] = ([], [], [], [], [])
        self.more: dict[int, tuple[int, ...]] = {}  # pending operands past the second, by register
        self.variables: dict[str, Variable] = {}
        self.named = bytearray()  # named[r]: register r holds a named variable
        self.states: list[int] = []  # the state below each value on ``values``
        self.values: list[Any] = []
        self.state = tables.start_state
        self.last: tuple[int, int] | None = None  # the last statement's register and token
        self.last_is_bare = False  # whether the last statement is an expression, not 'name = ...'
        self.accepted = False
        self.windows: dict[tuple[int, bytes], _Window | Template] = {}  # the only template, once there is one
        self._brackets = (tables.kind["LSQB"], tables.kind["RSQB"])  # windows with these get no template
        self.tensor_syntax = False  # whether a list literal, an index, an initializer or a tensor call was written
        self.list_registers: set[int] = set()  # registers of list literals (what stack() and concat() take)
        columns = dict(zip(("ops", "firsts", "seconds", "params", "wheres"), self.pending))
        self.template_globals = {
            **columns, **{f"emit_{name[:-1]}": column.append for name, column in columns.items()},
            "values": self.values, "variables": self.variables, "variables_get": self.variables.get,
            "named": self.named,
            "functions_get": FUNCTIONS.get, "FUNCTIONS": FUNCTIONS, "compiler": self, "source": source,
            "new": object.__new__, "Variable": Variable, "INTERMEDIATE": INTERMEDIATE,
            "CONST": CONST, "POWER_CONST": POWER_CONST, "INFINITY": _INFINITY,
            "TENSOR_CONSTANTS": (ArrayLiteral, Initializer),
        }

    # --- the driver ----------------------------------------------------------------------

    def run(self, text: str, chunk: int, progress: Progress | None) -> None:
        scanner, kind = self.tables.scanner, self.tables.kind
        lpar, rpar, continuation = kind["LPAR"], kind["RPAR"], kind["CONTINUATION"]
        lsqb, rsqb = kind["LSQB"], kind["RSQB"]
        start, base, length = 0, 0, len(text)
        while not self.accepted:
            end = self._chunk_end(text, start + chunk)
            tokens, kinds = scanner.scan(text[start:end])
            depth = kinds.count(lpar) - kinds.count(rpar) + kinds.count(lsqb) - kinds.count(rsqb)
            # Cut only where a line break ends the statement, so no value on the stack
            # refers to a token of an earlier chunk.
            while end < length and (depth > 0 or (kinds and kinds[-1] == continuation)):
                more_end = self._chunk_end(text, end + chunk)
                more_tokens, more_kinds = scanner.scan(text[end:more_end])
                tokens += more_tokens
                kinds += more_kinds
                depth += (more_kinds.count(lpar) - more_kinds.count(rpar) + more_kinds.count(lsqb)
                          - more_kinds.count(rsqb))
                end = more_end
            if end == length:
                kinds.append(kind[lalr.END])
            self.locator.add_chunk(start, end, base)
            self._parse_chunk(tokens, kinds, base)
            self._flush()
            base += len(tokens)
            start = end
            if progress is not None:
                progress(end, length)

    @staticmethod
    def _chunk_end(text: str, at_least: int) -> int:
        """Just after the first line break at or after ``at_least`` (or the end of the text)."""
        if at_least >= len(text):
            return len(text)
        found = text.find("\n", at_least)
        return len(text) if found < 0 else found + 1

    def _flush(self) -> None:
        """Move the chunk's instructions to the compact columns (none can be dropped any more:
        a chunk ends with a statement)."""
        self.instructions.extend(*self.pending, more=self.more)
        for column in self.pending:
            column.clear()
        self.more.clear()

    def _parse_chunk(self, tokens: list[str], kinds: bytearray, base: int) -> None:
        """Run the automaton over one chunk's tokens, window by window (see templates.py).

        A window with a template runs its generated code; any other runs the loop
        below, with each rule's action written out.  Hot code: everything it touches is
        a local name, and the actions are ordered by how often programs use them.
        """
        tables = self.tables
        action, final, size, limit = tables.action, tables.final, tables.size, tables.limit
        skip_code, accept_code = tables.skip_code, tables.accept_code
        actions, operators, sign_shift = self.actions, self.operators, tables.sign_shift
        lpar, rpar, semi, line_break = tables.kind["LPAR"], tables.kind["RPAR"], tables.kind[lalr.SEMI], \
            tables.kind[lalr.NL]
        lsqb, rsqb = tables.kind["LSQB"], tables.kind["RSQB"]
        variables_get = self.variables.get
        states, values, state = self.states, self.values, self.state
        push_state, push_value = states.append, values.append
        ops, firsts, seconds, params, wheres = self.pending
        emit_op, emit_first, emit_second = ops.append, firsts.append, seconds.append
        emit_param, emit_where = params.append, wheres.append
        windows = self.windows
        count = len(self.instructions)  # the next register
        literal = -1  # the register of the last number written, while it is the last instruction
        literal_value = 0.0
        number1 = base + 1  # token number of the chunk's first token
        depth = 0  # parentheses open at the start of the window (a chunk starts outside any)
        named = self.named
        if len(named) < count + len(kinds) + 1:  # room for every register this chunk can make
            named.extend(bytes(count + len(kinds) + 1 - len(named)))
        chunk_states, chunk_state = list(states), state  # for the error path's replay
        kind_bytes = bytes(kinds)
        self.template_globals["tokens"] = tokens  # what every template reads, set once per chunk
        self.template_globals["number1"] = number1
        start = 0
        for piece in tables.windows.findall(kind_bytes):
            end = start + len(piece)
            if not piece:
                continue
            # --- the window's template, if it has one that fits here ------------------------
            key = (state, piece)
            cached = windows.get(key)
            template: Template | None
            if cached.__class__ is Template and (not cached.depth or states[-cached.depth:] == cached.below):
                template = cached  # type: ignore[assignment]  # the common case: the only template fits
            else:
                template = self._find_template(key, cached, kinds, start, end, kind_bytes, depth)
            if template is not None and template.balance is not None and depth + template.balance > 0:
                template = None  # it ends with a line break, here inside parentheses: the driver skips it
            if template is not None:
                count, literal, literal_value = template.run(start, count, literal, literal_value)
                states[len(states) - template.depth:] = template.above
                state = template.end
                depth += template.parentheses
                start = end
                continue
            # --- the driver ---------------------------------------------------------------------
            for i in range(start, end):
                kind = kinds[i]
                code = action[state + kind]
                while code < 0:
                    rule = ~code
                    what = actions[rule]
                    if what == VAR:
                        below = states[-1]
                        name = tokens[values[-1]]
                        known = variables_get(name)
                        if known is not None:
                            values[-1] = known.register
                        else:
                            self.new_input(name, number1 + values[-1], count)
                            values[-1] = count
                            count += 1
                    elif what == BINARY:
                        below = states[-3]
                        del states[-2:]
                        emit_second(values.pop())
                        emit_where(number1 + values.pop())
                        emit_op(operators[rule]), emit_first(values[-1]), emit_param(None)
                        values[-1] = count
                        count += 1
                    elif what == NUMBER:
                        below = states[-1]
                        token = values[-1]
                        value = float(tokens[token])
                        if value == _INFINITY:
                            raise self.too_large(tokens[token], number1 + token)
                        emit_op(CONST), emit_first(-1), emit_second(-1), emit_param(value)
                        emit_where(number1 + token)
                        literal = values[-1] = count
                        literal_value = value
                        count += 1
                    elif what == LIST:  # statement lists and separators: no value
                        count_ = size[rule]
                        if count_:
                            below = states[-count_]
                            if count_ > 1:
                                del states[1 - count_:]
                                del values[1 - count_:]
                            values[-1] = None
                        else:
                            below = state
                            push_state(state)
                            push_value(None)
                    elif what == NEWLINE:  # a line break that is not simply shifted
                        segment = kinds[start:i]
                        if depth + segment.count(lpar) - segment.count(rpar) + segment.count(lsqb) \
                                - segment.count(rsqb) > 0:
                            code = skip_code  # inside parentheses: the statement goes on
                            break
                        kind = semi
                        code = action[state + kind]
                        continue
                    elif what == ASSIGN:
                        below = states[-3]
                        del states[-2:]
                        register = values.pop()
                        values.pop()
                        token = values[-1]
                        count, literal = self.assign(tokens[token], number1 + token, register, count, literal,
                                                     literal_value)
                        values[-1] = None
                    elif what == CALL:
                        count_ = size[rule]
                        below = states[-count_]
                        del states[1 - count_:]
                        arguments = values[-2] if count_ == 4 else []
                        del values[1 - count_:]
                        token = values[-1]
                        count = self.call(tokens[token], number1 + token, arguments, count)
                        values[-1] = count - 1
                        literal = -1
                    elif what == ARGUMENTS:
                        below = states[-1]
                        values[-1] = [values[-1]]
                    elif what == BARE:
                        below = states[-1]
                        self.bare(values[-1])
                        values[-1] = None
                    elif what == NEG:
                        below = states[-2]
                        del states[-1:]
                        register = values.pop()
                        where = number1 + values[-1]
                        if register == literal == count - 1:  # -2 is the number -2, not an operation on 2
                            literal_value = -literal_value
                            params[-1], wheres[-1] = literal_value, where
                        elif register == count - 1 and params and params[-1].__class__ is ArrayLiteral:
                            params[-1], wheres[-1] = -params[-1], where  # -[1, 2] is the literal [-1, -2]
                        else:
                            emit_op("neg"), emit_first(register), emit_second(-1), emit_param(None)
                            emit_where(where)
                            count += 1
                        values[-1] = count - 1
                    elif what == POW:
                        below = states[-3]
                        del states[-2:]
                        exponent = values.pop()
                        where = number1 + values.pop()
                        if exponent == literal == count - 1:  # x**2: the exponent is part of the op
                            ops[-1], firsts[-1], wheres[-1] = POWER_CONST, values[-1], where
                            literal = -1
                        else:
                            emit_op("**"), emit_first(values[-1]), emit_second(exponent), emit_param(None)
                            emit_where(where)
                            count += 1
                        values[-1] = count - 1
                    elif what == SECOND:  # `+x` and `(x)`: the value of the second symbol
                        count_ = size[rule]
                        below = states[-count_]
                        del states[1 - count_:]
                        value = values[1 - count_]
                        del values[1 - count_:]
                        values[-1] = value
                    elif what == MORE_ARGUMENTS:  # expr, [more...]
                        below = states[-2]
                        del states[-1:]
                        more = values.pop()
                        values[-1] = [values[-1], *more]
                    elif what == FIRST_EXTRA:  # COMMA expr
                        below = states[-2]
                        del states[-1:]
                        value = values.pop()
                        values[-1] = [value]
                    elif what == NEXT_EXTRA:  # [...] COMMA expr: the list grows in place
                        below = states[-3]
                        del states[-2:]
                        value = values.pop()
                        values.pop()
                        values[-1].append(value)
                    elif what == SIGN:  # a statement starts with + or -
                        if self.last is not None and _after_line_break(kinds, i, base, skip_code, line_break,
                                                                       tables):
                            raise line_continues_error(self.locator.locate(number1 + i), self.source)
                        code = sign_shift[state + kind]
                        break
                    elif what == PASS:  # the value stays, only the state changes
                        below = states[-1]
                    else:  # the tensor syntax
                        below, count = self._tensor_syntax(what, size[rule], tokens, number1, count)
                        literal = -1
                    state = final[rule][below + kind]
                    code = action[state + kind]
                if code < limit:
                    push_state(state)
                    push_value(i)
                    state = code
                elif code == skip_code:
                    continue
                elif code == accept_code:
                    self.accepted = True
                    break
                else:
                    raise self._syntax_error(tokens, kinds, i, base, chunk_states, chunk_state)
            depth += (kind_bytes.count(lpar, start, end) - kind_bytes.count(rpar, start, end)
                      + kind_bytes.count(lsqb, start, end) - kind_bytes.count(rsqb, start, end))
            start = end
        self.state = state

    def _find_template(self, key: tuple[int, bytes], known: Template | _Window | None, kinds: bytearray,
                       start: int, end: int, kind_bytes: bytes, depth: int) -> Template | None:
        """The template for the window ``kinds[start:end]`` with the stacks as they are, made now
        if it is seen often enough; ``windows[key]`` keeps count (or is the only template)."""
        if known is None:
            if end - start > templates.MAX_WINDOW or any(bracket in key[1] for bracket in self._brackets):
                return None
            known = self.windows[key] = _Window()
        elif known.__class__ is Template:  # the only template, which does not fit here
            known = self.windows[key] = _Window(TEMPLATE_AFTER, [known])  # type: ignore[list-item]
        window: _Window = known  # type: ignore[assignment]
        window.seen += 1
        template = window.find(self.states)
        if template is None and window.seen >= TEMPLATE_AFTER and len(window.templates) < TEMPLATES_PER_WINDOW:
            template = self._template(key[0], kinds, start, end, kind_bytes, depth)
            if template is not None:
                window.templates.append(template)
                if len(window.templates) == 1:
                    self.windows[key] = template  # the fast path of _parse_chunk from now on
        return template

    def _template(self, state: int, kinds: bytearray, start: int, end: int, kind_bytes: bytes,
                  depth: int) -> templates.Template | None:
        """The template of ``kinds[start:end]`` from the current stacks (``depth`` parentheses open),
        bound to this parse."""
        tables = self.tables
        separates = True
        if kinds[end - 1] == tables.kind[lalr.NL]:  # does the window's line break end a statement here?
            lpar, rpar = tables.kind["LPAR"], tables.kind["RPAR"]
            separates = depth + kind_bytes.count(lpar, start, end) - kind_bytes.count(rpar, start, end) <= 0
        template = templates.record(tables, state, self.states, kinds, start, end, separates)
        if template is None or any(rule >= 0 and self.actions[rule] in TENSOR_ACTIONS for rule, _ in template.events):
            return None
        key = (state, bytes(kinds[start:end]), tuple(template.below))
        code = _CODE.get(key)
        if code is None:
            if len(_CODE) >= _CODE_KEPT:
                _CODE.clear()  # a long-lived process parsing many different programs
            code = _CODE[key] = templates.generate(template, tables, self.actions, self.operators)
        namespace = self.template_globals  # shared by every template of this parse
        exec(code, namespace)  # noqa: S102 - our own generated code (templates.generate)
        template.run = namespace.pop("run")
        return template

    # --- actions shared by the driver and the templates ------------------------------------

    def new_input(self, name: str, where: int, register: int) -> None:
        """The first use of ``name``: an input instruction and its variable."""
        if name in FUNCTIONS:
            raise self._function_as_variable(name, where, "use")
        self._emit(INPUT, -1, -1, name, where)
        variable = object.__new__(Variable)  # Variable(...) without the call: one per name
        variable.name, variable.kind, variable.register, variable.default = name, INPUT, register, None
        variable._where, variable._source = where, self.source
        self.variables[name] = variable
        self._mark_named(register)

    def assign(self, name: str, where: int, register: int, count: int, literal: int,
               literal_value: float) -> tuple[int, int]:
        """``name = <register>``; returns the next register and the literal register."""
        if name in FUNCTIONS:
            raise self._function_as_variable(name, where, "assign to")
        known = self.variables.get(name)
        if known is not None:
            raise self._assigned_twice(name, where, known)
        variable = object.__new__(Variable)
        pending_params = self.pending[3]
        if register == literal == count - 1:  # `a = 2`: an input with a default
            for column, value in zip(self.pending, (INPUT, -1, -1, name, where)):
                column[-1] = value
            variable.kind, variable.default = INPUT, literal_value
            literal = -1
        elif (register == count - 1 and pending_params and isinstance(pending_params[-1], TensorConstant)
              and self.pending[0][-1] == CONST):  # `W = [[1, 2]]`, `W = normal([2, 2], 0.1)`
            default = pending_params[-1]
            for column, value in zip(self.pending, (INPUT, -1, -1, name, where)):
                column[-1] = value
            variable.kind, variable.default = INPUT, default
        else:
            named = self.named
            if register < len(named) and named[register]:  # `b = a`: b gets a node of its own
                self._emit("=", register, -1, None, where)
                register = count
                count += 1
            variable.kind, variable.default = INTERMEDIATE, None
        variable.name, variable.register, variable._where, variable._source = name, register, where, self.source
        self.variables[name] = variable
        named = self.named
        if register >= len(named):
            named.extend(bytes(register - len(named) + 4096))
        named[register] = 1
        self.last = (register, where)
        self.last_is_bare = False
        return count, literal

    def bare(self, register: int) -> None:
        """A statement that is an expression: the program's output if it is the last."""
        self.last = (register, self._where(register))
        self.last_is_bare = True

    def call(self, name: str, where: int, arguments: list[int], register: int) -> int:
        """``name(arguments)`` as instruction ``register``; returns the next register (one past
        the call's own instruction, which is the last; constant parameters' registers are dropped)."""
        for argument in arguments:
            if isinstance(argument, _Slice):
                raise self._error("a slice ':' belongs inside brackets", argument.where,
                                  f"write x[1:3] to take part of x; {name}() takes values")
        op = FUNCTIONS.get(name) or CALLS.get(name)
        if op is None:
            if name in tensor_calls():
                return self._tensor_call(name, where, arguments, register)
            if name in INITIALIZERS:
                return self._initializer(name, where, arguments, register)
            raise self._error(f"unknown function '{name}'", where, _function_hint(name))
        if len(arguments) != op.arity:
            arity = op.arity
            raise self._error(f"{name}() takes exactly {arity} argument{'s' if arity != 1 else ''} "
                              f"({len(arguments)} given)", where, f"write {op.written.format(x='x', y='y')}")
        ops, firsts, seconds, params, wheres = self.pending
        ops.append(name)
        firsts.append(arguments[0])
        seconds.append(arguments[1] if len(arguments) > 1 else -1)
        params.append(None)
        wheres.append(where)
        return register + 1

    # --- the tensor syntax -------------------------------------------------------------------

    def _tensor_syntax(self, what: str, size: int, tokens: list[str], number1: int, count: int) -> tuple[int, int]:
        """The driver's reduction of a list literal, a subscript or a slice: pops its ``size``
        symbols, leaves its value on the stack; returns the state below it and the next register."""
        states, values = self.states, self.values
        below = states[-size]
        del states[len(states) - size + 1:]
        items = values[len(values) - size:]
        del values[len(values) - size + 1:]
        if what == ARRAY:  # [ arguments ]
            count = self._array(number1 + items[0], items[1], count)
            values[-1] = count - 1
        elif what == INDEX:  # atom [ arguments ]
            count = self._index(items[0], number1 + items[1], items[2], count)
            values[-1] = count - 1
        else:  # slices: the registers of their bounds (None where left out) and the colon
            if what in (SLICE_STEP, SLICE_NO_STEP):  # a slice, then ':' and maybe a step
                items[0].stride = items[2] if what == SLICE_STEP else None
                values[-1] = items[0]
                return below, count
            colon = {SLICE_ALL: 0, SLICE_FROM: 1, SLICE_TO: 0, SLICE_BETWEEN: 1}[what]
            start = items[0] if what in (SLICE_FROM, SLICE_BETWEEN) else None
            stop = items[-1] if what in (SLICE_TO, SLICE_BETWEEN) else None
            values[-1] = _Slice(start, stop, number1 + items[colon])
        return below, count

    def _constant(self, register: int, what: str, example: str, at: int) -> float | TensorConstant:
        """The number or list literal a register holds, for a place that needs a constant; ``at``
        is the token of the construct (its '[' or name), where a variable's use is reported."""
        moved = len(self.instructions)
        ops, params = self.pending[0], self.pending[3]
        if register >= moved and ops[register - moved] == CONST:
            return params[register - moved]
        where: int | Position = self._where(register)
        if register < len(self.named) and self.named[register] or where < at:  # type: ignore[operator]
            where = self._use_of(register, at)  # a name written before: point at this use of it
        raise self._error(f"{what} must be written as numbers", where, f"e.g. {example}")

    def _use_of(self, register: int, at: int) -> Position | int:
        """Where the variable held in ``register`` is written first after token ``at`` (the values
        on the stack are registers, so the token of this use is found again in the text)."""
        name = next((v.name for v in self.variables.values() if v.register == register), None)
        text = self.locator.text
        found = None if name is None else re.compile(rf"(?<![A-Za-z0-9_]){name}(?![A-Za-z0-9_])").search(
            text, self.locator.offset(at)[0])
        if found is None:
            return at
        offset = found.start()
        line_start = text.rfind("\n", 0, offset) + 1
        return Position(text.count("\n", 0, offset) + 1, offset - line_start + 1, len(name))  # type: ignore[arg-type]

    def _drop_constants(self, registers: list[int], count: int) -> int:
        """Remove the constant instructions of ``registers`` (the last ones written) and return
        the next register: a constant read as a parameter is no value of the program."""
        moved = len(self.instructions)
        dropped = [r for r in registers if r is not None]
        if dropped and sorted(dropped) == list(range(count - len(dropped), count)) and count - len(dropped) >= moved:
            for column in self.pending:
                del column[len(column) - len(dropped):]
            return count - len(dropped)
        return count

    def _array(self, where: int, entries: list[Any], count: int) -> int:
        """``[a, b, ...]`` of numbers or of list literals of one shape: one constant; with a
        computed entry, the entries stacked along a new first axis."""
        if not any(isinstance(entry, _Slice) for entry in entries) and not all(map(self._is_constant, entries)):
            return self._stacked(where, entries, count)
        return self._constant_array(where, entries, count)

    def _is_constant(self, register: int) -> bool:
        moved = len(self.instructions)
        return register >= moved and self.pending[0][register - moved] == CONST and not isinstance(
            self.pending[3][register - moved], Initializer)

    def _stacked(self, where: int, entries: list[int], count: int) -> int:
        """``[a, b]`` with a computed entry: a ``stack`` of the entries (numbers stay constants)."""
        for entry in entries:
            if not self._is_constant(entry) and entry >= len(self.instructions) and \
                    self.pending[0][entry - len(self.instructions)] == CONST:
                raise self._error("a list holds numbers and values, not random draws", self._where(entry),
                                  "assign the draw to a name first: W = normal([2, 3], 0.1), then [W, ...]")
        self._emit("stack", entries[0], entries[1] if len(entries) > 1 else -1, None, where, *entries[2:])
        self.list_registers.add(count)
        self.tensor_syntax = True
        return count + 1

    def _constant_array(self, where: int, entries: list[Any], count: int) -> int:
        example = "[1, -2.5, 3e-2] or [[1, 2], [3, 4]]"
        shapes: set[tuple[int, ...]] = set()
        flat: list[float] = []
        first_shape: tuple[int, ...] | None = None
        for index, entry in enumerate(entries):
            if isinstance(entry, _Slice):
                raise self._error("a slice ':' belongs inside brackets after a value", entry.where,
                                  f"a list literal holds numbers: {example}")
            value = self._constant(entry, "the entries of a list literal", example, where)
            if isinstance(value, Initializer):
                raise self._error("a list literal holds numbers, not random draws", self._where(entry),
                                  "write the whole tensor as one draw: normal([2, 3], 0.1)")
            shape = value.shape if isinstance(value, ArrayLiteral) else ()
            if first_shape is None:
                first_shape = shape
            elif shape != first_shape:
                raise self._error(f"entry {index + 1} of this list has shape {_shape_text(shape)}, but entry 1 "
                                  f"has {_shape_text(first_shape)}", self._where(entry),
                                  "every row of a matrix needs the same number of entries")
            shapes.add(shape)
            flat.extend(value.values if isinstance(value, ArrayLiteral) else (value,))
        assert first_shape is not None  # the grammar gives a list at least one entry
        if len(first_shape) >= MAX_AXES:
            raise self._error(f"a list literal nested {len(first_shape) + 1} deep has more axes than a tensor may "
                              f"({MAX_AXES})", where, "a tensor of that many axes is no program's; check the brackets")
        count = self._drop_constants(entries, count)
        self._emit(CONST, -1, -1, ArrayLiteral((len(entries), *first_shape), tuple(flat)), where)
        self.list_registers.add(count)
        self.tensor_syntax = True
        return count + 1

    def _whole(self, register: int, what: str, example: str, at: int) -> int:
        value = self._constant(register, what, example, at)
        if not isinstance(value, float) or not value.is_integer():
            raise self._error(f"{what} must be a whole number", self._where(register), f"e.g. {example}")
        if abs(value) >= 2.0 ** 53:  # past 2**53 a float holds only every other integer: not the one written
            raise self._error(f"{what} must be smaller than 2**53 in size: no axis has that many entries",
                              self._where(register), f"e.g. {example}")
        return int(value)

    def _index(self, target: int, where: int, subscripts: list[Any], count: int) -> int:
        """``x[i, j]``, ``x[1:3]``: constant integer subscripts, as the ``index`` op's param; a
        subscript that is a tensor or a variable makes a gather (``C[Xb]``) or, two of them,
        one entry per pair (``x[arange(n), y]``, which is ``pick(x[I], J)``)."""
        computed = [s for s in subscripts if not isinstance(s, _Slice) and not self._is_number(s)]
        if computed:
            return self._gather(target, where, subscripts, computed, count)
        items: list[int | slice] = []
        registers: list[int | None] = []
        for subscript in subscripts:
            if isinstance(subscript, _Slice):
                bounds = [None if r is None else self._whole(r, "a slice's bounds", "x[1:3] or x[::2]", where)
                          for r in (subscript.start, subscript.stop, subscript.stride)]
                if bounds[2] == 0:
                    raise self._error("a slice's step cannot be 0", self._where(subscript.stride),
                                      "use a positive step (x[::2]) or a negative one (x[::-1])")
                items.append(slice(*bounds))
                registers += [subscript.start, subscript.stop, subscript.stride]
            else:
                items.append(self._whole(subscript, "an index", "x[0], x[-1] or x[1, 2]", where))
                registers.append(subscript)
        count = self._drop_constants(registers, count)  # type: ignore[arg-type]
        self._emit("index", target, -1, tuple(items), where)
        self.tensor_syntax = True
        return count + 1

    def _is_number(self, register: int) -> bool:
        """Whether a register is a number written in the program (a constant index)."""
        moved = len(self.instructions)
        return register >= moved and self.pending[0][register - moved] == CONST \
            and isinstance(self.pending[3][register - moved], float)

    def _gather(self, target: int, where: int, subscripts: list[Any], computed: list[int], count: int) -> int:
        """``C[Xb]`` (the rows Xb names) and ``x[I, J]`` (``pick(x[I], J)``: x[I[p], J[p]] for each p;
        a third index tensor picks again)."""
        from ..engine.tensor_ops import GATHER, PICK

        if len(computed) != len(subscripts):
            other = next(s for s in subscripts if isinstance(s, _Slice) or s not in computed)
            at = other.where if isinstance(other, _Slice) else self._where(other)
            raise self._error("a tensor index takes rows (x[i]) or entries by index tensors of one shape (x[i, j]), "
                              "not mixed with numbers or slices", at,
                              "take the slice first and index it after: y = x[:, 0:2]; y[i]")
        self._emit(GATHER, target, computed[0], None, where)
        for index in computed[1:]:  # x[i, j, k] is pick(pick(x[i], j), k): x[i[p], j[p], k[p]]
            self._emit(PICK, count, index, None, where)
            count += 1
        self.tensor_syntax = True
        return count + 1

    def _tensor_call(self, name: str, where: int, arguments: list[int], register: int) -> int:
        """``sum(x, 1, keepdim)``: the operands, then the constant arguments the op's entry lists
        (the entry's ``arguments``): numbers and lists by position, words (``keepdim``) anywhere
        among them; the constants' registers are dropped, the arguments become the param."""
        from ..engine.tensor_ops import VARIADIC, pack_arguments

        op = tensor_calls()[name]
        if op.arity == VARIADIC:
            return self._joined(name, where, arguments, register)
        schema = op.arguments
        operands, extra = arguments[:op.arity], arguments[op.arity:]
        usage = _call_usage(name, op)
        if len(operands) < op.arity or len(extra) > len(schema):
            least, most = op.arity + sum(a.default is None and a.kind in ("shape", "count") for a in schema), \
                op.arity + len(schema)
            takes = f"{least} or {most}" if most == least + 1 else f"{least} to {most}" if most > least else str(least)
            raise self._error(f"{name}() takes {takes} argument{'s' if most > 1 else ''} ({len(arguments)} given)",
                              where, f"write {usage}")
        values = [a.default for a in schema]
        by_position = [a for a in schema if a.kind != "word"]
        words = []
        for argument in extra:
            word = self._fresh_word(argument, where)
            self._refuse_word_as_variable(name, schema, argument, where)
            found = next((k for k, a in enumerate(schema) if a.kind == "word" and a.name == word), None)
            if found is not None:
                if values[found]:
                    raise self._error(f"{word} is written twice in {name}()", self._where(argument), f"write {usage}")
                values[found] = True
                words.append((word, argument))
                continue
            words_taken = [a.name for a in schema if a.kind == "word"]
            if word is not None and words_taken and not by_position:  # else a name where a number goes
                raise self._error(f"'{word}' is not a word {name}() takes: it takes {' or '.join(words_taken)}",
                                  self._where(argument), f"write {usage}")
            if not by_position:
                numbers = [a.name for a in schema if a.kind != "word"]
                words = [a.name for a in schema if a.kind == "word"]
                takes = (f"{len(numbers)} number{'s' if len(numbers) > 1 else ''} ({', '.join(numbers)})"
                         if numbers else "no number")
                also = f" and the word{'s' if len(words) > 1 else ''} {', '.join(words)}" if words else ""
                raise self._error(f"{name}() takes {takes}{also} after its operand{'s' if op.arity > 1 else ''}, "
                                  "and this argument is one too many", self._where(argument), f"write {usage}")
            spec = by_position.pop(0)
            values[schema.index(spec)] = self._argument(spec, argument, name, usage, where)
        missing = [a.name for a in by_position if a.kind in ("shape", "count") and a.default is None]
        if missing:
            raise self._error(f"{name}() needs its {missing[0]}", where, f"write {usage}")
        register = self._drop_constants(extra, register)
        for word, argument in words:  # a word is no variable of the program
            del self.variables[word]
            self.named[argument] = 0
        param = pack_arguments(schema, values)
        if not op.arity:  # no operands: a constant, made now from the arguments (arange(5))
            return self._made_constant(op, param, where, register)
        self._emit(name, operands[0], operands[1] if len(operands) > 1 else -1, param, where, *operands[2:])
        self.tensor_syntax = True
        return register + 1

    def _joined(self, name: str, where: int, arguments: list[int], register: int) -> int:
        """``stack([a, b], axis)``, ``concat([a, b], axis)``: the list written in the call (the
        last instruction before the axis), made into the op."""
        usage = f"{name}([a, b]) or {name}([a, b], axis)"
        if not 1 <= len(arguments) <= 2 or arguments[0] not in self.list_registers:
            raise self._error(f"{name}() takes a list written in the call, and an axis", where, f"write {usage}")
        axis = self._whole(arguments[1], f"the axis of {name}()", usage, where) if len(arguments) > 1 else None
        register = self._drop_constants(arguments[1:], register)
        listed, moved = arguments[0], len(self.instructions)
        at = listed - moved
        ops, _, _, params, wheres = self.pending
        named = listed < len(self.named) and self.named[listed]
        if listed != register - 1 or at < 0 or named or ops[at] not in (CONST, "stack"):
            raise self._error(f"{name}() takes a list written in the call, and an axis", where,
                              f"write {usage}")  # not a list literal of this call (a variable holding one)
        self.tensor_syntax = True
        if ops[at] != CONST:  # a list of computed values: its stack becomes the call
            ops[at], params[at], wheres[at] = name, axis, where
            return register
        literal, written = params[at], wheres[at]  # a list of numbers: each row a constant of its own, joined
        for column in self.pending:
            del column[at:]
        size = math.prod(literal.shape[1:])
        rows = [literal.values[i * size:(i + 1) * size] for i in range(literal.shape[0])]
        entries = list(range(listed, listed + len(rows)))
        for values in rows:
            self._emit(CONST, -1, -1, ArrayLiteral(literal.shape[1:], values) if literal.shape[1:] else values[0],
                       written)
        self._emit(name, entries[0], entries[1] if len(entries) > 1 else -1, axis, where, *entries[2:])
        return entries[-1] + 2

    def _made_constant(self, op: Any, param: Any, where: int, register: int) -> int:
        """The constant an op of no operands makes (its entry's shape and entries), as a literal."""
        from ..engine.tensor_ops import ShapeMismatch

        try:
            shape = op.shape((), param)
        except ShapeMismatch as mismatch:
            raise self._error(mismatch.message, where, mismatch.hint) from None
        self._emit(CONST, -1, -1, ArrayLiteral(tuple(shape), op.forward(None, (), (), param)), where)
        self.tensor_syntax = True
        return register + 1

    def _refuse_word_as_variable(self, name: str, schema: Any, register: int, at: int) -> None:
        """A word of the call (``keepdim``) that names a variable of the program cannot be read as the word."""
        for argument in schema:
            known = self.variables.get(argument.name)
            if argument.kind == "word" and known is not None and known.register == register \
                    and self._fresh_word(register, at) is None:
                raise self._error(f"'{argument.name}' is a variable of this program, so it cannot be the word "
                                  f"{argument.name} of {name}()", self._use_of(register, at),
                                  f"give the variable another name, and write {name}(x, axis, {argument.name})")

    def _fresh_word(self, register: int, at: int) -> str | None:
        """The name written as ``register`` when that is its first use, here in the call at
        token ``at`` (a bare word such as ``keepdim``, which the parser took for a new input)."""
        moved = len(self.instructions)
        if register < moved or self.pending[0][register - moved] != INPUT:
            return None
        word = self.pending[3][register - moved]
        variable = self.variables.get(word)
        if variable is None or variable.register != register or variable._where < at:
            return None
        return str(word)

    def _argument(self, spec: Any, register: int, name: str, usage: str, at: int) -> Any:
        """The value of one constant argument of a call, or a located error saying how to write it."""
        if spec.kind in ("axis", "count"):
            value = self._whole(register, f"the {spec.name} of {name}()", usage, at)
            if spec.kind == "count" and value < 0:
                raise self._error(f"the {spec.name} of {name}() must be 0 or more (it is {value})",
                                  self._where(register), f"e.g. {usage}")
            return value
        written = self._constant(register, f"the {spec.name} of {name}()", usage, at)
        if isinstance(written, float):
            written = ArrayLiteral((1,), (written,))
        if (not isinstance(written, ArrayLiteral) or len(written.shape) != 1
                or not all(v.is_integer() and abs(v) < 2.0 ** 53 for v in written.values)):
            raise self._error(f"the {spec.name} of {name}() must be a list of whole numbers",
                              self._where(register), f"write {usage}")
        return tuple(int(v) for v in written.values)

    def _initializer(self, name: str, where: int, arguments: list[int], register: int) -> int:
        """``normal([16, 2], 0.5)``: one constant that is drawn when the program runs."""
        names, defaults = INITIALIZERS[name]
        usage = f"{name}([rows, columns]{''.join(', ' + n for n in names)})"
        if not 1 <= len(arguments) <= 1 + len(names):
            moved, ops, params = len(self.instructions), self.pending[0], self.pending[3]
            numbers = [params[a - moved] if a >= moved and ops[a - moved] == CONST and isinstance(
                params[a - moved], float) else None for a in arguments]
            raise self._error(f"{name}() takes the shape{' and ' + ', '.join(names) if names else ''} "
                              f"({len(arguments)} given)", where, initializer_hint(name, names, numbers))
        shape_value = self._constant(arguments[0], f"the shape of {name}()", usage, where)
        if isinstance(shape_value, float):
            shape_value = ArrayLiteral((1,), (shape_value,))
        if (not isinstance(shape_value, ArrayLiteral) or len(shape_value.shape) != 1
                or not all(v.is_integer() and v >= 0 for v in shape_value.values)):
            raise self._error(f"the shape of {name}() must be a list of whole numbers", self._where(arguments[0]),
                              f"write {usage}")
        numbers = []
        for argument, what in zip(arguments[1:], names):
            value = self._constant(argument, f"the {what} of {name}()", usage, where)
            if not isinstance(value, float):
                raise self._error(f"the {what} of {name}() must be a number", self._where(argument), f"write {usage}")
            numbers.append(value)
        numbers += defaults[len(numbers):]
        if name == "normal" and numbers[0] < 0:
            raise self._error(f"the std of normal() must not be negative (it is {numbers[0]:g})",
                              self._where(arguments[1]), "a standard deviation is 0 or more: normal([3, 2], 0.5)")
        if name == "uniform" and not math.isfinite(numbers[1] - numbers[0]):
            raise self._error(f"uniform() draws between {numbers[0]:g} and {numbers[1]:g}, a range too wide for a "
                              "float", self._where(arguments[1]), "draw from a narrower range: uniform([3], -1, 1)")
        if name == "uniform" and numbers[0] > numbers[1]:
            raise self._error(f"uniform() draws from low to high, and low {numbers[0]:g} is above high {numbers[1]:g}",
                              self._where(arguments[1]), "write the smaller bound first: uniform([3], -1, 1)")
        shape = tuple(int(v) for v in shape_value.values)
        if any(abs(v) >= 2.0 ** 53 for v in shape_value.values):  # a float holds only every other integer there
            raise self._error(f"{name}() of a shape with a size of 2**53 or more is too large: a tensor has at most "
                              f"{MAX_AXES} axes and {MAX_ENTRIES:,} entries", self._where(arguments[0]), f"write {usage}")
        if len(shape) > MAX_AXES or math.prod(shape) > MAX_ENTRIES:
            raise self._error(f"{name}() of shape [{', '.join(map(str, shape))}] is too large: a tensor has at most "
                              f"{MAX_AXES} axes and {MAX_ENTRIES:,} entries", self._where(arguments[0]),
                              f"write {usage}")
        register = self._drop_constants(arguments, register)
        self._emit(CONST, -1, -1, Initializer(name, shape, tuple(numbers)), where)
        self.tensor_syntax = True
        return register + 1

    def too_large(self, text: str, where: int) -> ProgramError:
        return self._error(f"the number {text} is too large for a float", where, "floats go up to about 1.8e308")

    # --- rarely needed ---------------------------------------------------------------------

    def _emit(self, op: str, first: int, second: int, param: Any, where: int, *more: int) -> None:
        if more:
            self.more[len(self.instructions) + len(self.pending[0])] = more
        for column, value in zip(self.pending, (op, first, second, param, where)):
            column.append(value)

    def _mark_named(self, register: int) -> None:
        named = self.named
        if register >= len(named):
            named.extend(bytes(register - len(named) + 4096))
        named[register] = 1

    def _where(self, register: int) -> int:
        """The token number of an instruction, pending or moved to the columns."""
        moved = len(self.instructions)
        return self.instructions.where[register] if register < moved else self.pending[4][register - moved]

    def _error(self, message: str, where: int, hint: str | None = None) -> ProgramError:
        return ProgramError(message, where, self.source, hint)  # type: ignore[arg-type]

    def _function_as_variable(self, name: str, where: int, verb: str) -> ProgramError:
        return self._error(f"'{name}' is a function; it cannot be a variable", where,
                           f"call it as {name}(x), or {verb} a different name")

    def _assigned_twice(self, name: str, where: int, known: Variable) -> ProgramError:
        if known.kind == INPUT and known.default is None:
            line = self.locator.locate(where).line
            return ProgramError(f"'{name}' is used before it is assigned", known.position, self.source,
                                f"'{name}' is assigned on line {line}; move that line above its first use")
        return self._error(f"'{name}' is assigned twice", where,
                           f"it was first assigned on line {known.position.line}; each name is assigned once "
                           f"(use a new name, e.g. '{name}2')")

    def _refuse_loose_initializers(self) -> None:
        """An initializer is the whole right side of a statement (``W = normal([2, 2], 0.1)``), which
        makes it an input drawn from the seed; inside an expression it would be drawn again on every
        run (fit's every step), so it is refused there."""
        instructions = self.instructions
        for register, param in enumerate(instructions.params):
            if isinstance(param, Initializer) and instructions.op_names[instructions.ops[register]] == CONST:
                raise self._error(f"{param.kind}() draws a starting value, so it is the whole right side of a "
                                  "statement", instructions.where[register],
                                  f"name it first, then use the name: W = {param.written()}")

    def _syntax_error(self, tokens: list[str], kinds: bytearray, bad: int, base: int,
                      chunk_states: list[int], chunk_state: int) -> ParseError:
        tables = self.tables
        kind = kinds[bad]
        if kind == tables.kind[lalr.ERROR]:
            return stray_character(self.locator.locate(base + bad + 1), self.source)
        terminal = tables.terminal_names[kind]
        text = tokens[bad] if bad < len(tokens) else ""
        if terminal == lalr.END:
            position = end_position(self.source.text)
        else:
            position = self.locator.locate(base + bad + 1)
        expected = lalr.acceptable(tables, lalr.replay(tables, kinds, bad, chunk_states, chunk_state))
        return syntax_error(terminal, text, position, expected, self.source)  # type: ignore[arg-type]

    def finish(self) -> Program:
        self._flush()
        if self.last is None:
            raise ProgramError(
                "the program is empty",
                Position(1, 1),
                self.source,
                "write an expression such as 'L = (a*b + c)*f'",
            )
        register, where = self.last
        if self.last_is_bare:
            error = indented_output_error(self.source)
            if error is not None:
                raise error
        result = next((v.name for v in self.variables.values() if v.register == register), None)
        if result is None:  # the last statement is an unnamed expression
            result = "output"
            while result in self.variables:
                result += "_"
            self.variables[result] = Variable(result, INTERMEDIATE, where, register, None, self.source)
        if self.tensor_syntax:
            self._refuse_loose_initializers()
        # @ and the comparisons are plain binary operators, but tensor ops
        tensor_syntax = self.tensor_syntax or any(op in tensor_operators() for op in self.instructions.op_names)
        return Program(self.source, self.instructions, self.variables, result, tensor_syntax)


_CODE: dict[tuple[int, bytes, tuple[int, ...]], CodeType] = {}  # generated code, kept for later parses
_CODE_KEPT = 10_000
_INFINITY = float("inf")


def _after_line_break(kinds: bytearray, index: int, base: int, skip_code: int, line_break: int,
                      tables: lalr.Tables) -> bool:
    """Whether the token before ``kinds[index]``, comments and continuations aside, is a line
    break (a chunk starts after one, so the first token of a later chunk follows one too)."""
    start = tables.start_state
    for before in range(index - 1, -1, -1):
        kind = kinds[before]
        if tables.action[start + kind] != skip_code:  # comments and continuations are skipped everywhere
            return kind == line_break
    return base > 0


class _Slice:
    """A slice in a subscript while it is parsed: the registers of its bounds (None where
    left out) and the token number of its colon."""

    __slots__ = ("start", "stop", "stride", "where")

    def __init__(self, start: int | None, stop: int | None, where: int, stride: int | None = None) -> None:
        self.start, self.stop, self.where, self.stride = start, stop, where, stride


def _shape_text(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


def _function_hint(name: str) -> str:
    import difflib  # only on this error path: it is not free at start-up

    close = difflib.get_close_matches(name, function_names(), n=1)
    known = ", ".join(function_names())
    if close:
        return f"did you mean {close[0]}()? The functions are: {known}"
    return f"the functions are: {known}"
