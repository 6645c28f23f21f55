"""The LALR(1) tables Lark computes from ``grammars/autodiff.lark``, recoded for a fast driver.

Lark stays the grammar's compiler: it checks the grammar, resolves precedence and
builds the LALR(1) tables.  This module keeps what a driver needs from them, recoded
as lists of small integers, and caches that in a file keyed by the grammar's checksum,
so a command run in a shell loop does not pay for importing Lark (about as long as
importing Click) on every call.  Without a usable cache the tables are rebuilt in
memory, which only costs time.  The driver itself, with the compiler's action for
each rule, is ``compiler.py``.

The recoding (measured in ``benchmarks/bench_parse.py``: the driver parses 4-6x as
fast as one over Lark's own table layout):

* **Token kinds** are small ints: one per terminal, except that ``_SEP`` is split into
  ``NL`` (a line break) and ``SEMI`` (``;``), since a line break inside parentheses is
  not a separator; plus ``$END`` and ``ERROR`` (a character no terminal matches).  The
  white space terminal ``WS`` is never a token: the scanner skips it.
* **Actions** are one flat list indexed by ``state + kind``, states premultiplied by
  the number of kinds: a shift stores the next state (``>= 0``), a reduction ``~rule``
  (``< 0``), and the codes from ``limit`` up mean error, skip (the other ignored
  terminals: comments, ``\\`` line continuations) and accept.  Two pseudo-rules stand
  for the language's two rules about lines, so that they cost nothing where they
  cannot apply: ``newline_rule`` where a line break is not simply shifted (inside
  parentheses it is skipped, elsewhere it acts as ``;``) and ``sign_rule`` where a
  statement starts with ``+`` or ``-`` (``sign_shift`` holds the real shift).
* **Gotos** are ``final[rule][below + kind]``: the state after reducing ``rule`` over
  the state ``below``, with every pass-through reduction (``?sum: product``) that the
  look-ahead ``kind`` triggers next already made, since those change no value.

The scanner finds every token of a piece of text with one ``re.findall`` and gives
their kinds through dictionaries in C (``map``), with no object per token beyond its
text.  Token offsets are not kept; ``token_starts`` recomputes them for a piece of
text when a position is asked for.
"""

from __future__ import annotations

import json
import os
import re
import sys
import zlib
from itertools import accumulate, repeat
from operator import itemgetter, sub
from typing import Any

TABLE_FORMAT = 5  # bump when the cached layout changes
END = "$END"
ERROR = "ERROR"
NL, SEMI = "NL", "SEMI"
SEPARATOR = "_SEP"  # the grammar's statement separator, split into NL and SEMI
BLANK = "WS"  # the grammar's white space, skipped in front of every token
STATEMENT = "statement"  # the nonterminal whose start states get the sign check
# Terms of a sum per window of compiler.py (more: fewer windows; fewer: more of them repeat).
# Measured with benchmarks/bench_parse.py: 1 term 3.9-4.4 MB/s, 3 terms 4.7-5.8, 6 terms 5.3-6.5.
TERMS_PER_WINDOW = 6

__all__ = ["END", "ERROR", "NL", "SEMI", "Tables", "acceptable", "build_tables", "load_tables", "replay"]


class Tables:
    """The int tables, the rules' shapes and the scanner, loaded from their plain-data form."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.kind_names: list[str] = data["kinds"]
        self.terminal_names: list[str | None] = data["kind_terminals"]  # NL and SEMI -> _SEP
        self.kind = {name: number for number, name in enumerate(self.kind_names)}
        self.kinds = len(self.kind_names)
        self.action: list[int] = data["action"]
        self.limit: int = data["limit"]
        self.final = [_expand(row, self.limit) for row in data["final"]]
        self.rules: list[list[Any]] = data["rules"]  # origin, expansion, callback, passes_through
        self.size = [len(expansion) for _, expansion, _, _ in self.rules]
        self.passes_through: list[bool] = data["passes_through"]
        self.error_code, self.skip_code, self.accept_code = self.limit, self.limit + 1, self.limit + 2
        self.newline_rule = len(self.rules)
        self.sign_rule = len(self.rules) + 1
        self.sign_shift = {int(key): value for key, value in data["sign_shift"].items()}
        self.start_state: int = data["start_state"]
        self.scanner = Scanner(data["scanner"])
        # The windows of compiler.py in a chunk's kinds (as bytes): up to TERMS_PER_WINDOW terms
        # of a sum, cut before + and - and after line breaks and ';'.  (findall with this is 2x as
        # fast as splitting at lookarounds.)
        signs = re.escape(bytes([self.kind["PLUS"], self.kind["MINUS"]]))
        ends = re.escape(bytes([self.kind[NL], self.kind[SEMI]]))
        term = b"[^" + signs + ends + b"]*"
        self.windows = re.compile(b"[" + signs + b"]?" + term + b"(?:[" + signs + b"]" + term + b"){0,%d}[" % (
            TERMS_PER_WINDOW - 1) + ends + b"]?")


def _expand(rows: list[list[Any]], limit: int) -> list[int]:
    """A rule's gotos from their cached form, one ``[below, targets by kind]`` per state
    that has a goto on the rule, to a flat list indexed by ``below + kind``."""
    flat = [-1] * limit
    for below, targets in rows:
        flat[below:below + len(targets)] = targets
    return flat


class Scanner:
    """Token texts and kinds of a piece of text, from one ``findall``.

    The pattern is ``WS* (TERMINAL | TERMINAL | ...) | any character``.  Each match is
    a token, its text the group's; a character no terminal matches gives ``""``, and its
    kind is ERROR.  The terminals are tried in an order chosen for speed, not Lark's
    (1.2x on this grammar): the spellings of terminals with finitely many (``**``,
    ``\\r\\n``, ``+``...) longest first, the one-character ones as a single character
    class, then the others in Lark's order.  That matches the same text as Lark's lexer
    because ``build_tables`` checks that no two terminals can start with the same
    character, except finite spellings of which the longer comes first in Lark's order.
    For the same reason a token's kind follows from its first character, except for
    the longer spellings in ``exceptions`` (``**`` starts like ``*``), found by exact text.
    Text must not end in white space (``scan`` strips it): there the pattern would fail
    and retry at every position.
    """

    def __init__(self, data: dict[str, Any]) -> None:
        self.tokens = re.compile(data["tokens"])
        self._pieces: str = data["pieces"]  # white space and token together; compiled when needed
        self.first: dict[str, int] = data["first"]
        self.exceptions: dict[str, int] = data["exceptions"]
        self.blank: str = data["blank"]

    @staticmethod
    def build(terminals: list[list[str]], kind: dict[str, int]) -> dict[str, Any]:
        """The scanner's patterns and kind maps, as plain data for the cache."""
        regexes = dict(terminals)
        spellings: dict[str, int] = {}
        others = []
        first: dict[str, int] = {"": kind[ERROR]}
        for name, regex in terminals:
            if name == BLANK:
                continue
            texts = _spellings(regex)
            if texts is None:
                others.append(regex)
                first.update(dict.fromkeys(_first_characters(regex), kind[name]))
            else:
                for text in texts:
                    spellings.setdefault(text, kind[(NL if text.endswith("\n") else SEMI) if name == SEPARATOR else name])
        exceptions = {}
        for text, text_kind in sorted(spellings.items(), key=lambda item: len(item[0])):
            if first.setdefault(text[0], text_kind) != text_kind:
                exceptions[text] = text_kind  # a longer spelling of another kind (** after *)
        longer = sorted((text for text in spellings if len(text) > 1), key=len, reverse=True)
        single = "".join(sorted(text for text in spellings if len(text) == 1))
        alternation = "|".join([*map(re.escape, longer), f"[{re.escape(single)}]", *others])
        prefix = _repeated(regexes[BLANK])
        return {
            "tokens": f"{prefix}(?:({alternation})|(?s:.))",
            "pieces": f"{prefix}(?:{alternation}|(?s:.))",
            "first": first,
            "exceptions": exceptions,
            "blank": "".join(sorted(_first_characters(regexes[BLANK]))),
        }

    def scan(self, text: str) -> tuple[list[str], bytearray]:
        """The tokens of ``text`` and their kinds, one byte each (trailing white space stripped
        first): indexing gives ints, and the windows of compiler.py are found in them by regex."""
        tokens = self.tokens.findall(text.rstrip(self.blank))
        kinds = bytearray(map(self.first.__getitem__, map(_FIRST_CHARACTER, tokens)))
        for spelling, kind in self.exceptions.items():
            start = 0
            for _ in range(tokens.count(spelling)):
                start = tokens.index(spelling, start)
                kinds[start] = kind
                start += 1
        return tokens, kinds

    def token_starts(self, text: str, tokens: list[str]) -> list[int]:
        """Where each of ``tokens`` (``scan(text)``'s) starts in ``text``: each piece is the white
        space before a token and the token, so the pieces' running lengths are the tokens' ends."""
        pieces = re.findall(self._pieces, text.rstrip(self.blank))  # re caches the compiled pattern
        widths = map(max, map(len, tokens), repeat(1))  # a stray character is one wide
        return list(map(sub, accumulate(map(len, pieces)), widths))


_FIRST_CHARACTER = itemgetter(slice(0, 1))


def _repeated(blank: str) -> str:
    """``(?:blank)*``, written so that the regex engine runs it fast: ``[ \\t]+|\\r(?!\\n)``
    becomes ``[ \\t]*(?:\\r(?!\\n)[ \\t]*)*`` (a character class repeated at C speed, and no
    nested repetition to backtrack through)."""
    found = re.fullmatch(r"(\[[^\]]*\])\+\|(.*)", blank, re.DOTALL)
    if found is None:
        return f"(?:{blank})*"
    characters, rest = found.groups()
    return f"{characters}*(?:(?:{rest}){characters}*)*"


# --- from Lark's tables ---------------------------------------------------------------------


def build_tables(grammar: str) -> dict[str, Any]:
    """Let Lark compile the grammar (it rejects conflicts) and recode what the driver needs."""
    from lark import Lark
    from lark.grammar import Terminal
    from lark.parsers.lalr_analysis import Shift

    lark = Lark(grammar, parser="lalr", lexer="basic", maybe_placeholders=False)
    table = lark.parser.parser.parser.parse_table
    state_numbers = {state: number for number, state in enumerate(table.states)}
    rule_numbers: dict[Any, int] = {}
    rules: list[list[Any]] = []
    for rule in lark.rules:
        rule_numbers[rule] = len(rules)
        expansion = []
        for symbol in rule.expansion:
            if isinstance(symbol, Terminal):
                expansion.append("drop" if symbol.filter_out else "keep")
            else:
                expansion.append("splice" if symbol.name.startswith("_") else "keep")
        callback = None if rule.origin.name.startswith("_") else (rule.alias or rule.origin.name)
        # `?rule` passes a lone child through, except in alternatives that name their own node.
        passes_through = bool(rule.options.expand1) and not rule.alias
        rules.append([rule.origin.name, expansion, callback, passes_through])
    states: list[dict[str, tuple[bool, int]]] = []
    for state in table.states:
        row = {}
        for symbol, (action, argument) in table.states[state].items():
            row[symbol] = (True, state_numbers[argument]) if action is Shift else (False, rule_numbers[argument])
        states.append(row)
    terminals = [[t.name, t.pattern.to_regexp()] for t in lark.parser.lexer.terminals]
    return _recode(terminals, sorted(lark.ignore_tokens), states, rules,
                   state_numbers[table.start_states["start"]], state_numbers[table.end_states["start"]])


def _recode(terminals: list[list[str]], ignore: list[str], states: list[dict[str, tuple[bool, int]]],
            rules: list[list[Any]], start_state: int, end_state: int) -> dict[str, Any]:
    names = [name for name, _ in terminals]
    if BLANK not in ignore or SEPARATOR not in names:
        raise ValueError(f"the grammar must define {SEPARATOR} and ignore a white space terminal {BLANK}")
    for name, regex in terminals:
        if re.compile(regex).groups:
            raise ValueError(f"terminal {name} has a capturing group: write (?:...) in the grammar")
    kinds = [name for name in names if name not in (SEPARATOR, BLANK)] + [NL, SEMI, END, ERROR]
    kind_terminals = [SEPARATOR if kind in (NL, SEMI) else None if kind == ERROR else kind for kind in kinds]
    width = len(kinds)
    limit = len(states) * width
    error_code, skip_code, accept_code = limit, limit + 1, limit + 2
    newline_rule, sign_rule = len(rules), len(rules) + 1
    passes_through = [bool(expand1) and expansion == ["keep"] and callback is not None
                      for _, expansion, callback, expand1 in rules]
    action: list[int] = []
    for number, row in enumerate(states):
        for kind_name, terminal in zip(kinds, kind_terminals):
            entry = row.get(terminal) if terminal is not None else None
            if terminal in ignore:
                code = skip_code
            elif entry is None:
                code = error_code
            else:
                shift, argument = entry
                code = argument * width if shift else ~argument
            if kind_name == END and number == end_state:
                code = accept_code
            if kind_name == NL and not (entry is not None and entry[0]):
                code = ~newline_rule  # a line break that is not simply shifted: see compiler.py
            action.append(code)
    sign_shift = {}
    for number, row in enumerate(states):
        if STATEMENT in row:  # a statement can start here
            for sign in ("PLUS", "MINUS"):
                index = number * width + kinds.index(sign)
                if action[index] >= 0:
                    sign_shift[index] = action[index]
                    action[index] = ~sign_rule
    goto = [{symbol: target for symbol, (shift, target) in row.items() if not symbol.isupper()} for row in states]
    final = []  # per rule, [below, target by kind] for each state with a goto on the rule
    for origin, _, _, _ in rules:
        rows = []
        for below, gotos in enumerate(goto):
            target = gotos.get(origin)
            if target is None:
                continue
            targets = []
            for kind in range(width):
                state = target
                while kinds[kind] != NL:  # a line break acts only after the newline rule: see above
                    code = action[state * width + kind]
                    if not (code < 0 and ~code < len(rules) and passes_through[~code]):
                        break
                    state = gotos[rules[~code][0]]
                targets.append(state * width)
            rows.append([below * width, targets])
        final.append(rows)
    _check_scanner(terminals, kinds)
    return {
        "scanner": Scanner.build(terminals, {name: number for number, name in enumerate(kinds)}),
        "format": TABLE_FORMAT,
        "terminals": terminals,
        "ignore": ignore,
        "kinds": kinds,
        "kind_terminals": kind_terminals,
        "action": action,
        "final": final,
        "rules": rules,
        "passes_through": passes_through,
        "limit": limit,
        "sign_shift": {str(key): value for key, value in sign_shift.items()},
        "start_state": start_state * width,
    }


def _check_scanner(terminals: list[list[str]], kinds: list[str]) -> None:
    """The scanner tells kinds apart by first character and tries terminals in its own order
    (see ``Scanner``): make sure that matches what Lark's lexer would."""
    by_first: dict[str, str] = {}
    spelled: list[tuple[str, str]] = []  # (text, terminal) in Lark's order
    for name, regex in terminals:
        if name == BLANK:
            continue
        texts = _spellings(regex)
        if texts is None:
            for char in _first_characters(regex):
                if by_first.setdefault(char, name) != name:
                    raise ValueError(f"terminals {by_first[char]} and {name} can both start with {char!r}")
        else:
            spelled += [(text, name) for text in texts]
    for index, (text, name) in enumerate(spelled):
        if text[:1] in by_first:
            raise ValueError(f"terminal {name} ({text!r}) starts like {by_first[text[:1]]}")
        for longer, other in spelled[index + 1:]:
            if other != name and longer.startswith(text) and len(longer) > len(text):
                raise ValueError(f"{other} ({longer!r}) must come before {name} ({text!r}) in Lark's order")


# --- what a terminal's regex can match, read from its parse tree -----------------------------

if sys.version_info >= (3, 11):
    from re import _constants as _sre
    from re import _parser as _sre_parse
else:  # pragma: no cover - Python 3.10
    import sre_constants as _sre
    import sre_parse as _sre_parse


def _spellings(regex: str) -> list[str] | None:
    """Every text ``regex`` matches, if there are finitely many (``\\*\\*|\\^``), else None."""

    def texts(items: Any) -> list[str] | None:
        out = [""]
        for op, argument in items:
            if op is _sre.LITERAL:
                choices: list[str] | None = [chr(argument)]
            elif op is _sre.SUBPATTERN:
                choices = texts(argument[-1])
            elif op is _sre.BRANCH:
                branches = [texts(branch) for branch in argument[1]]
                choices = None if None in branches else [t for branch in branches for t in branch]  # type: ignore[union-attr]
            elif op is _sre.MAX_REPEAT and argument[:2] == (0, 1):
                inner = texts(argument[2])
                choices = None if inner is None else ["", *inner]
            elif op is _sre.IN and all(kind is _sre.LITERAL for kind, _ in argument):
                choices = [chr(code) for _, code in argument]
            else:
                return None
            if choices is None:
                return None
            out = [before + after for before in out for after in choices]
        return out

    return texts(_sre_parse.parse(regex))


def _first_characters(regex: str) -> set[str]:
    """The characters a match of ``regex`` can start with (it must not match the empty text)."""
    found: set[str] = set()

    def sequence(items: Any) -> bool:  # True when the whole sequence can match nothing
        return all(can_be_empty(op, argument) for op, argument in items)

    def can_be_empty(op: Any, argument: Any) -> bool:
        if op is _sre.LITERAL:
            found.add(chr(argument))
            return False
        if op is _sre.IN:
            for kind, value in argument:
                if kind is _sre.LITERAL:
                    found.add(chr(value))
                elif kind is _sre.RANGE:
                    found.update(map(chr, range(value[0], value[1] + 1)))
                else:
                    raise ValueError(f"cannot list the first characters of {regex!r}")
            return False
        if op is _sre.SUBPATTERN:
            return sequence(argument[-1])
        if op is _sre.BRANCH:
            empty = [sequence(branch) for branch in argument[1]]  # every branch: each adds characters
            return any(empty)
        if op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT):
            return sequence(argument[2]) or argument[0] == 0
        if op is _sre.ASSERT_NOT:
            return True
        raise ValueError(f"cannot list the first characters of {regex!r}")

    if sequence(_sre_parse.parse(regex)):
        raise ValueError(f"terminal {regex!r} can match the empty text")
    return found


# --- the cache ------------------------------------------------------------------------------


def _cache_dir() -> str | None:
    """Where the tables are cached: $AUTODIFF_CACHE_DIR, else $XDG_CACHE_HOME/autodiff-cli, else
    ~/.cache/autodiff-cli; None when AUTODIFF_NO_CACHE is set (to anything but '' or '0')."""
    if os.environ.get("AUTODIFF_NO_CACHE", "") not in ("", "0"):
        return None
    configured = os.environ.get("AUTODIFF_CACHE_DIR")
    if configured:
        return configured
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "autodiff-cli")


def load_tables(grammar: str) -> Tables:
    """The tables for ``grammar``: from the cache when it holds them, else built (and cached).

    A cached file is used only if it starts with the checksum of the rest of its text, which
    catches any change to it (a truncated file, an edited one, a bad disk) for the cost of one
    CRC over the text; anything else is rebuilt and written again, so a broken cache costs one
    rebuild, never a wrong parse or a traceback."""
    key = f"{zlib.crc32(grammar.encode('utf-8')):08x}-{len(grammar)}-v{TABLE_FORMAT}"
    directory = _cache_dir()
    path = None if directory is None else os.path.join(directory, f"parser-{key}.json")
    if path is not None:
        try:
            with open(path, encoding="utf-8") as cached:
                text = cached.read()
            if _checked(text):
                data = json.loads(text)
                data.pop("checksum")
                if data.get("format") == TABLE_FORMAT and data.get("grammar") == key:
                    return Tables(data)
        except (OSError, ValueError, LookupError, TypeError, AttributeError, re.error, RecursionError):
            pass  # no cache yet, or an unreadable one: rebuild below
    data = build_tables(grammar)
    data["grammar"] = key
    if path is not None:
        _save(path, data)
    return Tables(data)


# A cache file is '{"checksum":"<8 hex digits>",' and then the rest of the JSON object, whose
# text the checksum (CRC-32) is of.
_CHECKSUM_AT = len('{"checksum":"')
_REST_AT = _CHECKSUM_AT + len('01234567",')


def _checked(text: str) -> bool:
    """Whether a cache file's text is whole and unchanged: its checksum is of the rest of it."""
    return (text.startswith('{"checksum":"') and text[_REST_AT - 2:_REST_AT] == '",'
            and text[_CHECKSUM_AT:_REST_AT - 2] == f"{zlib.crc32(text[_REST_AT:].encode('utf-8')):08x}")


def _with_checksum(data: dict[str, Any]) -> str:
    rest = json.dumps(data, separators=(",", ":"))[1:]  # the object's members, after its "{"
    return f'{{"checksum":"{zlib.crc32(rest.encode("utf-8")):08x}",{rest}'


def _save(path: str, data: dict[str, Any]) -> None:
    """Write the cache atomically; a read-only home only means no cache."""
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(_with_checksum(data))
        os.replace(temporary, path)
    except OSError:
        try:
            os.remove(temporary)
        except OSError:
            pass


# --- error paths: what could have come next -------------------------------------------------


def replay(tables: Tables, kinds: bytearray, stop: int, states: list[int], state: int) -> list[int]:
    """The state stack (top last) when token ``stop`` of ``kinds`` was first looked at.

    Starts from ``states`` and ``state`` (the stack before ``kinds[0]``) and makes the
    same moves as the driver, without its actions.  Before rejecting a token the driver
    may already have made reductions for it (``c`` in ``(a + c`` becomes a whole
    expression), after which fewer terminals are possible; replaying recovers what could
    have come next.  It runs only on errors.
    """
    action, final, size = tables.action, tables.final, tables.size
    limit, newline_rule, sign_rule = tables.limit, tables.newline_rule, tables.sign_rule
    lpar, rpar, semi = tables.kind["LPAR"], tables.kind["RPAR"], tables.kind[SEMI]
    stack = list(states)
    depth = 0
    for kind in kinds[:stop]:
        if kind == lpar:
            depth += 1
        elif kind == rpar:
            depth -= 1
        code = action[state + kind]
        while code < 0:
            rule = ~code
            if rule == newline_rule:
                if depth > 0:
                    break  # inside parentheses: not a separator
                kind = semi
            elif rule == sign_rule:
                code = tables.sign_shift[state + kind]
                break
            else:
                # ``stack`` holds the state below each value: the rule's values become one.
                count = size[rule]
                if count:
                    below = stack[-count]
                    del stack[len(stack) - count + 1:]
                else:
                    below = state
                    stack.append(state)
                state = final[rule][below + kind]
            code = action[state + kind]
        if 0 <= code < limit:
            stack.append(state)
            state = code
    return [*stack, state]


def acceptable(tables: Tables, stack: list[int]) -> set[str]:
    """Terminal names (``_SEP``, ``$END``...) that would really be shifted from ``stack``.

    LALR tables merge look-aheads, so a state can list a terminal that is only rejected
    after some reductions; simulating those reductions tells them apart.
    """
    action, final, size = tables.action, tables.final, tables.size
    accepted = set()
    for kind, terminal in enumerate(tables.terminal_names):
        if terminal is None or tables.kind_names[kind] == NL:  # SEMI speaks for the separator
            continue
        states = list(stack)
        while True:
            code = action[states[-1] + kind]
            if code == tables.accept_code or 0 <= code < tables.limit or ~code == tables.sign_rule:
                accepted.add(terminal)
                break
            if code >= 0 or ~code >= len(tables.rules):
                break  # an error, or an ignored terminal (never expected)
            rule = ~code
            count = size[rule]
            below = states[-count - 1]
            del states[len(states) - count:]
            states.append(final[rule][below + kind])
    return accepted
