"""Straight-line code for windows of tokens that come back again and again.

Generated programs (unrolled networks, exported models) repeat a few statement shapes
thousands of times, and a long sum repeats ``+ x*2``.  What the LALR driver does with a
window of tokens depends only on their kinds and on the states it starts from, never on
the tokens' text.  So the driver (``compiler.py``) cuts each chunk's tokens into
windows (before every ``+`` and ``-``, after every line break and ``;``), and the
second time it meets the same kinds from the same state, ``record`` replays the table
moves without their actions, noting each shift and reduction, and ``generate`` writes
a Python function that performs just those actions in order: the stack lives in local
variables, and there is no table lookup, no dispatch and no push or pop per token.
From then on the window costs a dictionary lookup and one call (about 2.5x faster on
the benchmark programs).

The actions in the generated code are the driver's own, written once in ``_SNIPPETS``
and checked against the driver by ``tests/language/test_parser_differential.py``;
anything unusual (an error, the end of the input, a statement that starts with a sign,
a line break inside parentheses) is left to the driver.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import CodeType
from typing import Any

from . import lalr

__all__ = ["MAX_WINDOW", "Template", "generate", "record"]

MAX_WINDOW = 48  # longer windows rarely repeat; they are left to the driver
SHIFT, NEWLINE = -1, -2  # events other than reductions


@dataclass(slots=True)
class Template:
    """What a window does: the states it reads below it, what it leaves, and its code.

    The window may be used wherever the driver is in ``state`` with ``below`` on top
    of its state stack; it replaces those states with ``above`` and ends in ``end``.
    ``balance`` is set when the window ends with a line break that ends a statement:
    the parentheses it opens minus those it closes, so that the driver can check the
    line break is not inside parentheses.
    """

    events: list[tuple[int, int]]  # (rule, SHIFT or NEWLINE; offset of the token looked at)
    below: list[int]
    above: list[int]
    end: int
    balance: int | None
    parentheses: int = 0  # the parentheses the whole window opens minus those it closes
    run: Any = None  # the generated function, bound to one parse (see compiler._Compiler)
    depth: int = 0  # len(below)

    def __post_init__(self) -> None:
        self.depth = len(self.below)


def record(tables: lalr.Tables, state: int, states: list[int], kinds: bytearray, start: int, end: int,
           newline_separates: bool) -> Template | None:
    """The moves of the driver over ``kinds[start:end]`` from ``states`` and ``state``, or None
    for a window the driver must run itself."""
    action, final, size, limit = tables.action, tables.final, tables.size, tables.limit
    skip_code, newline_rule, sign_rule = tables.skip_code, tables.newline_rule, tables.sign_rule
    semi = tables.kind[lalr.SEMI]
    stack = list(states)
    low = len(stack)  # entries below this index are never read or replaced
    events: list[tuple[int, int]] = []
    balance = None
    for offset, kind in enumerate(kinds[start:end]):
        code = action[state + kind]
        while code < 0:
            rule = ~code
            if rule == newline_rule:
                if not newline_separates or start + offset != end - 1:
                    return None
                lpar, rpar = tables.kind["LPAR"], tables.kind["RPAR"]
                window = kinds[start:end - 1]
                balance = window.count(lpar) - window.count(rpar)
                events.append((NEWLINE, offset))
                kind = semi
                code = action[state + kind]
                continue
            if rule == sign_rule:
                return None
            count = size[rule]
            if count:
                low = min(low, len(stack) - count)
                below = stack[-count]
                del stack[len(stack) - count + 1:]
            else:
                below = state
                stack.append(state)
            events.append((rule, offset))
            state = final[rule][below + kind]
            code = action[state + kind]
        if code < limit:
            events.append((SHIFT, offset))
            stack.append(state)
            state = code
        elif code != skip_code:
            return None  # an error or the end of the input
    window = kinds[start:end]
    parentheses = window.count(tables.kind["LPAR"]) - window.count(tables.kind["RPAR"])
    return Template(events, states[low:], stack[low:], state, balance, parentheses)


# --- the code --------------------------------------------------------------------------------
#
# Each snippet is the driver's action for one kind of rule, written with the rule's
# symbols as {0}, {1}... (Python expressions) and its result as {r}.  Tokens are
# `tokens[i + k]` (`{0.token}` is the `i + k`), their numbers `where + k`; `count` is the next register, `literal`
# the register of the last number written while it is the last instruction.

_SNIPPETS = {
    "VAR": """\
name = tokens[{0.token}]
known = variables_get(name)
if known is not None:
    {r} = known.register
else:
    compiler.new_input(name, {0.where}, count)
    {r} = count
    count += 1""",
    "NUMBER": """\
value = float(tokens[{0.token}])
if value == INFINITY:
    raise compiler.too_large(tokens[{0.token}], {0.where})
emit_op(CONST); emit_first(-1); emit_second(-1); emit_param(value); emit_where({0.where})
{r} = literal = count
literal_value = value
count += 1""",
    "BINARY": """\
emit_op({op!r}); emit_first({0}); emit_second({2}); emit_param(None); emit_where({1.where})
{r} = count
count += 1""",
    "ASSIGN": """\
name = tokens[{0.token}]
if (name in FUNCTIONS or name in variables or {2} == literal == count - 1 or named[{2}]
        or params[-1].__class__ in TENSOR_CONSTANTS):
    count, literal = compiler.assign(name, {0.where}, {2}, count, literal, literal_value)
else:  # the common case, as compiler.assign does it (named has room for every register)
    variable = new(Variable)
    variable.name, variable.kind, variable.register, variable.default = name, INTERMEDIATE, {2}, None
    variable._where, variable._source = {0.where}, source
    variables[name] = variable
    named[{2}] = 1
    compiler.last = ({2}, {0.where})
{r} = None""",
    "BARE": """\
compiler.bare({0})
{r} = None""",
    "CALL": """\
arguments = {arguments}
op = functions_get(tokens[{0.token}])
if op is None or op.arity != len(arguments):
    count = compiler.call(tokens[{0.token}], {0.where}, arguments, count)
    literal = -1  # a call may take constants as parameters (sum(x, 1)), and drops their registers
else:  # the common case, as compiler.call does it
    emit_op(op.name); emit_first(arguments[0]); emit_second(arguments[1] if len(arguments) > 1 else -1)
    emit_param(None); emit_where({0.where})
    count += 1
{r} = count - 1""",
    "ARGUMENTS": "{r} = [{0}]",
    "MORE_ARGUMENTS": "{r} = [{0}, *{1}]",
    "FIRST_EXTRA": "{r} = [{1}]",
    "NEXT_EXTRA": """\
{0}.append({2})
{r} = {0}""",
    "NEG": """\
if {1} == literal == count - 1:
    literal_value = -literal_value
    params[-1] = literal_value
    wheres[-1] = {0.where}
else:
    emit_op("neg"); emit_first({1}); emit_second(-1); emit_param(None); emit_where({0.where})
    count += 1
{r} = count - 1""",
    "POW": """\
if {2} == literal == count - 1:
    ops[-1] = POWER_CONST
    firsts[-1] = {0}
    wheres[-1] = {1.where}
    literal = -1
else:
    emit_op("**"); emit_first({0}); emit_second({2}); emit_param(None); emit_where({1.where})
    count += 1
{r} = count - 1""",
}


class _Symbol(str):
    """A value on the stack as Python code: the text is its value; for a token, ``token`` is
    its index in the chunk (which is its value) and ``where`` its token number."""

    token: str
    where: str

    @classmethod
    def shifted(cls, offset: int) -> _Symbol:
        """A token shifted in the window, ``offset`` tokens after its first (``i``, ``where``)."""
        symbol = cls(f"i + {offset}" if offset else "i")
        symbol.token, symbol.where = str(symbol), f"where + {offset}" if offset else "where"
        return symbol

    @classmethod
    def from_below(cls, number: int) -> _Symbol:
        """A value from below the window, read into ``b<number>``: a register, a list, or the index
        of a token shifted before the window (its number follows from the window's own)."""
        symbol = cls(f"b{number}")
        symbol.token, symbol.where = str(symbol), f"(where - i + b{number})"
        return symbol


def generate(template: Template, tables: lalr.Tables, actions: list[str], operators: list[str | None]) -> CodeType:
    """Compile the function that performs ``template``'s actions.

    It is called as ``run(i, count, literal, literal_value)`` (``i``: the window's first
    token in the chunk) and returns ``count, literal, literal_value``.  It finds the rest
    among its globals, which the parse sets (``compiler._Compiler.template_globals``):
    the chunk's ``tokens`` and the token number of its first (``number1``), the stack of
    ``values``, the columns of the pending instructions (``ops``... and their ``emit_``
    appends), ``variables``, ``compiler``...
    """
    size = tables.size
    taken = len(template.below)  # values below the window that it replaces
    stack: list[str] = [_Symbol.from_below(n) for n in range(taken)]
    lines = [f"{', '.join(stack)}, = values[-{taken}:]"] if taken else []
    results = 0
    for rule, offset in template.events:
        if rule == SHIFT:
            stack.append(_Symbol.shifted(offset))
            continue
        if rule == NEWLINE:
            continue
        count = size[rule]
        symbols = stack[len(stack) - count:]
        del stack[len(stack) - count:]
        what = actions[rule]
        if what == "PASS":
            stack.extend(symbols)  # the value stays
            continue
        if what == "LIST":
            stack.append("None")
            continue
        if what == "SECOND":
            stack.append(symbols[1])
            continue
        result = f"r{results}"
        results += 1
        snippet = _SNIPPETS[what]
        arguments = symbols[2] if what == "CALL" and count == 4 else "[]"
        lines.append(snippet.format(*symbols, r=result, op=operators[rule], arguments=arguments))
        stack.append(result)
    written = ", ".join(str(symbol) for symbol in stack)
    if taken:
        lines.append(f"values[-{taken}:] = [{written}]")
    elif stack:
        lines.append(f"values.extend(({written},))")
    lines.append("return count, literal, literal_value")
    body = "\n".join(lines).replace("\n", "\n    ")
    source = f"def run(i, count, literal, literal_value):\n    where = number1 + i\n    {body}\n"
    return compile(source, "<window>", "exec")
