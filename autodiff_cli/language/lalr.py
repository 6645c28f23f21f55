"""A small LALR(1) runtime for the parse tables Lark computes from ``grammars/autodiff.lark``.

Lark stays the grammar's compiler: it checks the grammar, resolves precedence
and builds the LALR(1) tables.  Those tables are saved in a cache file keyed by
the grammar's checksum, and this module drives them with a regex lexer and a
shift/reduce loop, so a command run in a shell loop does not pay for importing
Lark (about as long as importing Click) on every call.  Without a usable cache
the tables are rebuilt in memory, which only costs time.

The runtime reproduces the tree-shaping rules of Lark's tree builder that the
grammar uses: tokens of ``_NAME`` terminals are dropped, ``_rule`` children are
spliced into their parent, ``?rule`` with one child passes the child through,
and ``-> alias`` names the callback.  ``tests/language/test_lalr.py`` checks
that it builds the same programs as Lark's own parser.
"""

from __future__ import annotations

import json
import os
import re
import zlib
from collections.abc import Iterator
from typing import Any

TABLE_FORMAT = 2  # bump when the cached layout changes
END = "$END"


class Token(str):
    """A token's text, with its terminal name and 1-based line and column."""

    type: str
    line: int
    column: int

    def __new__(cls, type_: str, value: str, line: int, column: int) -> Token:
        token = super().__new__(cls, value)
        token.type, token.line, token.column = type_, line, column
        return token


class UnexpectedInput(Exception):
    """The text stops matching the grammar at ``line``:``column``.

    ``token`` is None when no terminal matches there (a stray character);
    ``expected`` holds the terminals the parser could have accepted.
    """

    def __init__(self, line: int, column: int, token: Token | None, expected: set[str]) -> None:
        super().__init__(f"unexpected input at {line}:{column}")
        self.line, self.column, self.token, self.expected = line, column, token, expected


class Tables:
    """Lexer and parser tables, as plain data that round-trips through JSON."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.lexer = re.compile("|".join(f"(?P<{name}>{regex})" for name, regex in data["terminals"]))
        self.ignore = frozenset(data["ignore"])
        # states[state][symbol] = (shift?, next state or rule number)
        self.states = [{symbol: tuple(action) for symbol, action in row.items()} for row in data["states"]]
        self.rules = [tuple(rule) for rule in data["rules"]]
        self.start_state: int = data["start_state"]
        self.end_state: int = data["end_state"]


def build_tables(grammar: str) -> dict[str, Any]:
    """Let Lark compile the grammar (it rejects conflicts) and keep what the runtime needs."""
    from lark import Lark
    from lark.grammar import Terminal
    from lark.parsers.lalr_analysis import Shift

    lark = Lark(grammar, parser="lalr", lexer="basic", maybe_placeholders=False)
    table = lark.parser.parser.parser.parse_table
    state_numbers = {state: number for number, state in enumerate(table.states)}
    rule_numbers: dict[Any, int] = {}
    rules = []
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
    states = []
    for state in table.states:
        row = {}
        for symbol, (action, argument) in table.states[state].items():
            if action is Shift:
                row[symbol] = [True, state_numbers[argument]]
            else:
                row[symbol] = [False, rule_numbers[argument]]
        states.append(row)
    terminals = [[t.name, t.pattern.to_regexp()] for t in lark.parser.lexer.terminals]
    return {
        "format": TABLE_FORMAT,
        "terminals": terminals,
        "ignore": sorted(lark.ignore_tokens),
        "states": states,
        "rules": rules,
        "start_state": state_numbers[table.start_states["start"]],
        "end_state": state_numbers[table.end_states["start"]],
    }


def _cache_dir() -> str:
    configured = os.environ.get("AUTODIFF_CACHE_DIR")
    if configured:
        return configured
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "autodiff-cli")


def load_tables(grammar: str) -> Tables:
    """The tables for ``grammar``: from the cache when it holds them, else built (and cached)."""
    key = f"{zlib.crc32(grammar.encode('utf-8')):08x}-{len(grammar)}-v{TABLE_FORMAT}"
    path = os.path.join(_cache_dir(), f"parser-{key}.json")
    try:
        with open(path, encoding="utf-8") as cached:
            data = json.load(cached)
        if data.get("format") == TABLE_FORMAT and data.get("grammar") == key:
            return Tables(data)
    except (OSError, ValueError):
        pass  # no cache yet, or an unreadable one: rebuild below
    data = build_tables(grammar)
    data["grammar"] = key
    _save(path, data)
    return Tables(data)


def _save(path: str, data: dict[str, Any]) -> None:
    """Write the cache atomically; a read-only home only means no cache."""
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        os.replace(temporary, path)
    except OSError:
        try:
            os.remove(temporary)
        except OSError:
            pass


def tokenize(tables: Tables, text: str) -> Iterator[Token]:
    """Tokens of ``text``; line breaks inside parentheses are dropped so expressions can span lines."""
    match = tables.lexer.match
    ignore = tables.ignore
    position, line, line_start, depth = 0, 1, 0, 0
    length = len(text)
    while position < length:
        found = match(text, position)
        if found is None:
            raise UnexpectedInput(line, position - line_start + 1, None, set())
        kind = found.lastgroup
        value = found.group()
        if kind not in ignore:
            if kind == "LPAR":
                depth += 1
            elif kind == "RPAR":
                depth = max(0, depth - 1)
            if not (kind == "_SEP" and depth and value != ";"):
                yield Token(kind, value, line, position - line_start + 1)
        newlines = value.count("\n")
        if newlines:
            line += newlines
            line_start = position + value.rindex("\n") + 1
        position = found.end()
    yield Token(END, "", line, position - line_start + 1)


_PASS_THROUGH, _ALL_KEPT, _SHAPED = range(3)


def _reduction_kind(expansion: list[str], callback: str | None, expand1: bool) -> int:
    """Most reductions are `?rule: child` or keep every child; they get fast paths."""
    if callback is not None and expand1 and expansion == ["keep"]:
        return _PASS_THROUGH
    if callback is not None and not expand1 and all(how == "keep" for how in expansion):
        return _ALL_KEPT
    return _SHAPED


def _shape(expansion: list[str], popped: list[Any], callback: str | None) -> list[Any]:
    children: list[Any] = []
    for index, (how, value) in enumerate(zip(expansion, popped)):
        if how == "keep":
            children.append(value)
        elif how == "splice":
            if index == 0 and callback is None:
                # A left-recursive list rule (`item*`): grow its list in place;
                # copying it at each reduction would be quadratic.
                children = value
            else:
                children.extend(value)
    return children


def parse(tables: Tables, text: str, callbacks: Any) -> Any:
    """Run the LALR(1) automaton over ``text``, calling ``callbacks.<rule name>(children)``."""
    states = tables.states
    rules = [
        (origin, len(expansion), expansion, callback, expand1, _reduction_kind(expansion, callback, expand1))
        for origin, expansion, callback, expand1 in tables.rules
    ]
    # `?rule` names that only ever pass a child through need no method.
    methods = {callback: getattr(callbacks, callback, None) for _, _, _, callback, _, _ in rules if callback}
    end_state = tables.end_state
    state_stack = [tables.start_state]
    value_stack: list[Any] = []
    for token in tokenize(tables, text):
        kind = token.type
        while True:
            action = states[state_stack[-1]].get(kind)
            if action is None:
                expected = _acceptable(tables, _states_before(tables, text, token))
                raise UnexpectedInput(token.line, token.column, token, expected)
            shift, argument = action
            if shift:
                state_stack.append(argument)
                value_stack.append(token)
                break
            origin, size, expansion, callback, expand1, reduction = rules[argument]
            if reduction == _PASS_THROUGH:  # the value stays; only the state changes
                state_stack.pop()
                state_stack.append(states[state_stack[-1]][origin][1])
            else:
                if size:
                    popped = value_stack[-size:]
                    del state_stack[-size:]
                    del value_stack[-size:]
                else:
                    popped = []
                if reduction == _ALL_KEPT:
                    result = methods[callback](popped)
                else:
                    children = _shape(expansion, popped, callback)
                    if callback is None:
                        result = children
                    elif expand1 and len(children) == 1:
                        result = children[0]
                    else:
                        result = methods[callback](children)
                state_stack.append(states[state_stack[-1]][origin][1])
                value_stack.append(result)
            if kind == END and state_stack[-1] == end_state:
                return value_stack[-1]
    raise AssertionError("the automaton ended without accepting or rejecting")  # pragma: no cover


def _states_before(tables: Tables, text: str, bad: Token) -> list[int]:
    """The state stack as it was when ``bad`` was first looked at.

    Before rejecting a token the automaton may already have made reductions
    for it (``c`` in ``(a + c`` becomes a whole expression), after which fewer
    terminals are possible.  Replaying the parse up to that token, without
    callbacks, recovers what could have come next; it runs only on errors.
    """
    states, rules = tables.states, tables.rules
    stack = [tables.start_state]
    for token in tokenize(tables, text):
        if (token.line, token.column, token.type) == (bad.line, bad.column, bad.type):
            return stack
        while True:
            shift, argument = states[stack[-1]][token.type]
            if shift:
                stack.append(argument)
                break
            origin, expansion, _, _ = rules[argument]
            if expansion:
                del stack[-len(expansion):]
            stack.append(states[stack[-1]][origin][1])
    return stack


def _acceptable(tables: Tables, state_stack: list[int]) -> set[str]:
    """Terminals that would really be shifted from here.

    LALR tables merge look-aheads, so a state can list a terminal that is only
    rejected after some reductions; simulating those reductions tells them apart.
    """
    states, rules = tables.states, tables.rules
    accepted = set()
    for terminal in (s for s in states[state_stack[-1]] if s.isupper() or s == END):
        stack = list(state_stack)
        while True:
            action = states[stack[-1]].get(terminal)
            if action is None:
                break
            shift, argument = action
            if shift:
                accepted.add(terminal)
                break
            origin, expansion, _, _ = rules[argument]
            if expansion:
                del stack[-len(expansion):]
            stack.append(states[stack[-1]][origin][1])
            if terminal == END and stack[-1] == tables.end_state:
                accepted.add(terminal)
                break
    return accepted
