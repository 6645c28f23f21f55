"""The backward pass written out as chain-rule steps.

``explain`` walks the graph of an evaluation in reverse topological order and,
for every edge child -> parent, records the local derivative (its formula from
``DERIVATIVE_RULES`` with the operands' names put in, and its value), the
upstream gradient d output / d parent, and their product, e.g.

    dL/dc = dd/dc * dL/dd = 1 * -2 = -2          [dd/dc = 1]

A node that feeds several others receives one contribution per edge; the second
and later ones are written ``+=`` and, once the last one is in, a total line
shows the sum.  Overwriting instead of summing is the classic backprop bug.

Names: variables keep their program names; unnamed intermediate results are
called t1, t2, ... numbered in topological order (the forward-pass listing says
what each one is); numbers written in the program appear as themselves and,
having nothing to learn, get no steps of their own.

The walk computes its own gradients from the stored local derivatives, so it
needs only the values of an evaluation.  Traversals are iterative; the walk is a
generator, and the renderers show at most ``max_steps`` lines per pass (the rest
is counted, not dropped silently), so a graph a million nodes deep is fine.
Renderers are pure: text, or a Rich renderable that the CLI prints.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, NamedTuple

from .engine import DERIVATIVE_RULES, Value, short_number, topological_order

if TYPE_CHECKING:
    from rich.console import RenderableType

    from .language import Evaluation

__all__ = [
    "DEFAULT_MAX_STEPS",
    "Definition",
    "Explanation",
    "Seed",
    "Step",
    "Total",
    "backward_steps",
    "definitions",
    "explain",
    "node_names",
    "rule_key",
    "to_markdown",
    "to_plain",
    "to_rich",
]

DEFAULT_MAX_STEPS = 500

# How many contributions a total line spells out before it writes "..." and a count.
SHOWN_TERMS = 6


class Definition(NamedTuple):
    """One line of the forward pass: ``name = expression``, and its value ("" for an input)."""

    name: str
    expression: str
    value: float


class Seed(NamedTuple):
    """The start of the backward pass: d output / d output = 1."""

    output: str


class Step(NamedTuple):
    """One edge of the backward pass: grad(child) (+)= local * upstream.

    ``rule`` is the local derivative d parent / d child as a formula in the operands'
    names (``"b"`` for ``e = a * b`` and child ``a``); ``local`` is its value,
    ``upstream`` is d output / d parent, and ``product`` their product.
    ``accumulate`` is true for the second and later contributions to ``child``;
    ``total`` is the child's gradient after this contribution.
    """

    output: str
    child: str
    parent: str
    rule: str
    local: float
    upstream: float
    product: float
    accumulate: bool
    total: float


class Total(NamedTuple):
    """A node that received several contributions: their sum, now final.

    ``terms`` holds the first ``SHOWN_TERMS`` contributions; ``count`` is how many there were.
    """

    output: str
    name: str
    terms: tuple[float, ...]
    count: int
    total: float


Item = Seed | Step | Total


# --- naming --------------------------------------------------------------------------------


def _number(x: float, precision: int | None = None) -> str:
    """2.0 -> '2', 0.1 -> '0.1'; ``precision`` significant digits when given."""
    return short_number(x) if precision is None else f"{x:.{precision}g}"


def _operand_text(x: float) -> str:
    """A constant as an operand in a formula: negative numbers in parentheses."""
    text = _number(x)
    return f"({text})" if text.startswith("-") else text


def node_names(order: Sequence[Value]) -> list[str]:
    """A name for every node of ``order``, by position.

    Labelled nodes (the program's variables) keep their label; constants are their
    number; other nodes are t1, t2, ... in topological order.  The prefix gets
    underscores added until no label looks like a temporary, so names never clash.
    """
    labels = {node.label for node in order if node.label}
    prefix = "t"
    while any(re.fullmatch(re.escape(prefix) + r"\d+", label) for label in labels):
        prefix += "_"
    names = []
    append = names.append
    count = 0
    for node in order:
        if node.label:
            append(node.label)
        elif node._a is None:
            append(_operand_text(node.data))
        else:
            count += 1
            append(f"{prefix}{count}")
    return names


def rule_key(node: Value) -> str:
    """The DERIVATIVE_RULES key of a node's op ('**2' -> '**c')."""
    op = node._op
    if op.startswith("**") and op != "**":
        return "**c"
    return op


def _template(rule: str) -> str:
    """A rule as a str.format template: 'c * x**(c-1)' -> '{c} * {x}**({c}-1)'."""
    escaped = rule.replace("{", "{{").replace("}", "}}")
    return re.sub(r"\b(x|y|c|out)\b", r"{\1}", escaped)


# Formatting a template is several times faster than a regex substitution per step,
# which matters on graphs of a million edges.
_TEMPLATES = {key: tuple(_template(rule) for rule in rules) for key, rules in DERIVATIVE_RULES.items()}


def _rule_text(node: Value, operand: int, names: list[str], graph: _Graph, i: int) -> str:
    templates = _TEMPLATES.get(rule_key(node))
    if templates is None or operand >= len(templates):
        return "?"  # a hand-built node with no recorded op; its local value is shown regardless
    a, b = graph.a[i], graph.b[i]
    exponent = node.exponent
    return templates[operand].format(
        x=names[a] if a >= 0 else "x",
        y=names[b] if b >= 0 else "y",
        c=_operand_text(exponent) if exponent is not None else "c",
        out=names[i],
    )


def _expression(node: Value, a: str, b: str | None) -> str:
    """The node's operation written with its operands' names (one level, never nested)."""
    op = node._op
    if b is not None:
        return f"{a} {op} {b}"
    if op == "neg":
        return f"-{a}"
    if op == "=":
        return a
    if node.exponent is not None:
        return f"{a}**{_operand_text(node.exponent)}"
    return f"{op}({a})"


class _Graph:
    """The graph of a root as flat lists by topological position, shared by both walks."""

    def __init__(self, root: Value) -> None:
        order = topological_order(root)
        index = {node: i for i, node in enumerate(order)}
        self.order = order
        self.index = index
        # Operand positions, -1 where there is none (None is never a key of index).
        self.a = [index.get(node._a, -1) for node in order]
        self.b = [index.get(node._b, -1) for node in order]
        self.names = node_names(order)
        # Constants receive no gradient steps: nothing depends on their gradient.
        self.learns = [node._a is not None or bool(node.label) for node in order]


# --- the walk ------------------------------------------------------------------------------


def definitions(root: Value) -> Iterator[Definition]:
    """The forward pass of ``root`` in topological order: inputs, then each operation and its value."""
    return _definitions(_Graph(root))


def _definitions(graph: _Graph) -> Iterator[Definition]:
    names = graph.names
    for i, node in enumerate(graph.order):
        a = graph.a[i]
        if a >= 0:
            b = graph.b[i]
            yield Definition(names[i], _expression(node, names[a], names[b] if b >= 0 else None), node.data)
        elif graph.learns[i]:
            yield Definition(names[i], "", node.data)


def backward_steps(root: Value) -> Iterator[Item]:
    """The backward pass from ``root``: a Seed, then Steps and Totals in reverse topological order.

    The gradients are summed here, in the same order as ``Value.backward``, so the
    totals equal the engine's ``grad`` exactly; the nodes' own ``grad`` is not read.
    """
    return _steps(_Graph(root))


def _steps(graph: _Graph) -> Iterator[Item]:
    order, names, learns = graph.order, graph.names, graph.learns
    size = len(order)
    grads = [0.0] * size
    counts = [0] * size
    terms: dict[int, list[float]] = {}  # the first contributions of each node, for its total line
    output = names[-1]
    grads[-1] = 1.0
    yield Seed(output)
    for i in range(size - 1, -1, -1):
        if counts[i] > 1:
            # Reverse topological order: every node that uses this one is done, so the sum is final.
            yield Total(output, names[i], tuple(terms[i]), counts[i], grads[i])
        terms.pop(i, None)
        a = graph.a[i]
        if a < 0:
            continue
        node = order[i]
        upstream = grads[i]
        for position, j, local in ((0, a, node._da), (1, graph.b[i], node._db)):
            if j < 0 or not learns[j]:
                continue
            product = local * upstream
            grads[j] += product
            counts[j] += 1
            shown = terms.setdefault(j, [])
            if len(shown) < SHOWN_TERMS:
                shown.append(product)
            yield Step(
                output, names[j], names[i], _rule_text(node, position, names, graph, i),
                local, upstream, product, counts[j] > 1, grads[j],
            )


def _totals(graph: _Graph) -> tuple[list[float], int]:
    """Every node's gradient and the number of items ``_steps`` yields, without building them.

    The same sums in the same order as ``_steps``, so the numbers are identical; used
    when only the first few steps are shown, to finish the walk at a fraction of the cost.
    """
    order, learns, a_of, b_of = graph.order, graph.learns, graph.a, graph.b
    size = len(order)
    grads = [0.0] * size
    counts = [0] * size
    grads[-1] = 1.0
    items = 1  # the seed
    for i in range(size - 1, -1, -1):
        if counts[i] > 1:
            items += 1
        a = a_of[i]
        if a < 0:
            continue
        node = order[i]
        g = grads[i]
        if learns[a]:
            grads[a] += node._da * g
            counts[a] += 1
            items += 1
        b = b_of[i]
        if b >= 0 and learns[b]:
            grads[b] += node._db * g
            counts[b] += 1
            items += 1
    return grads, items


# --- collected for rendering ---------------------------------------------------------------


@dataclass
class Explanation:
    """What the renderers show: the output, both passes (capped) and the final input gradients."""

    output: str
    value: float
    definitions: list[Definition]
    definitions_omitted: int
    steps: list[Item]
    steps_omitted: int
    gradients: list[tuple[str, float]]
    max_steps: int


def explain(evaluation: Evaluation, max_steps: int = DEFAULT_MAX_STEPS) -> Explanation:
    """Walk both passes of ``evaluation`` and keep the first ``max_steps`` lines of each (0 = all).

    ``gradients`` are d output / d input for every input of the program, in program order.
    Only the lines shown are built; the rest are counted.
    """
    graph = _Graph(evaluation.root)
    graph.names[-1] = evaluation.output  # the same unless the root was built without a label
    limit = max_steps or None
    shown_definitions = list(islice(_definitions(graph), limit))
    total_definitions = sum(graph.learns)  # every node but the constants
    shown_steps = list(islice(_steps(graph), limit))
    grads, total_steps = _totals(graph)
    gradients = []
    for variable in evaluation.program.inputs:
        i = graph.index.get(evaluation.nodes[variable.name])
        # An input the output does not depend on has gradient 0, as eval reports it.
        gradients.append((variable.name, 0.0 if i is None else grads[i]))
    return Explanation(
        evaluation.output, evaluation.root.data, shown_definitions,
        total_definitions - len(shown_definitions), shown_steps, total_steps - len(shown_steps),
        gradients, max_steps,
    )


# --- text pieces shared by the renderers ---------------------------------------------------


def _d(top: str, bottom: str) -> str:
    return f"d{top}/d{bottom}"


def _total_sum(item: Total, precision: int | None) -> str:
    shown = [_number(term, precision) for term in item.terms]
    text = " + ".join(f"({t})" if t.startswith("-") and i else t for i, t in enumerate(shown))
    if item.count > len(item.terms):
        text += f" + ... ({item.count} terms)"
    return text


class _Row(NamedTuple):
    """One line of the backward pass as text cells: lhs, sign, chain, numbers, rule, note."""

    target: str
    sign: str
    chain: str
    numbers: str
    result: str
    rule: str
    note: str


def _rows(explanation: Explanation, precision: int | None) -> list[_Row]:
    rows = []
    for item in explanation.steps:
        if isinstance(item, Seed):
            rows.append(_Row(_d(item.output, item.output), "=", "", "", "1", "", "seed"))
        elif isinstance(item, Step):
            rows.append(_Row(
                _d(item.output, item.child),
                "+=" if item.accumulate else "=",
                f"{_d(item.parent, item.child)} * {_d(item.output, item.parent)}",
                f"{_number(item.local, precision)} * {_number(item.upstream, precision)}",
                _number(item.product, precision),
                f"{_d(item.parent, item.child)} = {item.rule}",
                f"total {_number(item.total, precision)}" if item.accumulate else "",
            ))
        else:
            rows.append(_Row(_d(item.output, item.name), "=", "", _total_sum(item, precision),
                             _number(item.total, precision), "", f"sum of {item.count} contributions"))
    return rows


def _omitted_note(count: int, what: str, limit: int) -> str:
    what = what if count != 1 else what.removesuffix("s")
    return (f"... {count:,} more {what} not shown (--max-steps {limit}; "
            "use --max-steps 0 to show all)")


def _header(explanation: Explanation, precision: int | None) -> str:
    return f"{explanation.output} = {_number(explanation.value, precision)}"


def _gradients_line(explanation: Explanation, precision: int | None) -> str:
    if not explanation.gradients:
        return "the program has no inputs"
    parts = [f"{_d(explanation.output, name)} = {_number(grad, precision)}"
             for name, grad in explanation.gradients]
    return "gradients: " + ", ".join(parts)


# --- plain text ----------------------------------------------------------------------------


def to_plain(explanation: Explanation, precision: int | None = None) -> str:
    """Aligned text without colour or box drawing, for pipes, logs and diffs."""
    lines = [_header(explanation, precision), "", "forward pass (topological order)"]
    lhs = [d.name if not d.expression else f"{d.name} = {d.expression}" for d in explanation.definitions]
    values = [_number(d.value, precision) for d in explanation.definitions]
    width = max((len(text) for text in lhs), default=0)
    width_value = max((len(text) for text in values), default=0)
    for text, value, definition in zip(lhs, values, explanation.definitions):
        note = "input" if not definition.expression else ""
        lines.append(f"  {text.ljust(width)} = {value.ljust(width_value)}   {note}".rstrip())
    if explanation.definitions_omitted:
        lines.append("  " + _omitted_note(explanation.definitions_omitted, "lines", explanation.max_steps))
    lines += ["", "backward pass (reverse topological order; += adds the contribution of a further use)"]
    rows = _rows(explanation, precision)
    width_target = max((len(r.target) for r in rows), default=0)
    width_sign = max((len(r.sign) for r in rows), default=0)
    equations = []
    for r in rows:
        parts = [r.target.ljust(width_target), r.sign.ljust(width_sign)]
        if r.chain:
            parts += [r.chain, "="]
        if r.numbers:
            parts += [r.numbers, "="]
        parts.append(r.result)
        equations.append(" ".join(parts))
    width_equation = max((len(e) for e in equations), default=0)
    for equation, r in zip(equations, rows):
        extras = "   ".join(x for x in (f"[{r.rule}]" if r.rule else "", r.note) if x)
        lines.append(f"  {equation.ljust(width_equation)}   {extras}".rstrip())
    if explanation.steps_omitted:
        lines.append("  " + _omitted_note(explanation.steps_omitted, "steps", explanation.max_steps))
    lines += ["", _gradients_line(explanation, precision)]
    return "\n".join(lines) + "\n"


# --- Markdown ------------------------------------------------------------------------------


def _code(text: str) -> str:
    return f"`{text}`" if text else ""


def to_markdown(explanation: Explanation, precision: int | None = None) -> str:
    """GitHub-flavoured Markdown: two tables, for notes and slides."""
    lines = [f"**{_code(_header(explanation, precision))}**", "", "Forward pass:", "",
             "| variable | definition | value |", "|---|---|---:|"]
    for d in explanation.definitions:
        lines.append(f"| {_code(d.name)} | {_code(d.expression) or 'input'} | {_number(d.value, precision)} |")
    if explanation.definitions_omitted:
        lines += ["", _omitted_note(explanation.definitions_omitted, "lines", explanation.max_steps)]
    lines += ["", "Backward pass (reverse topological order; `+=` adds the contribution of a further use):", "",
              "| gradient | chain rule | local rule | local | upstream | product | total |",
              "|---|---|---|---:|---:|---:|---:|"]
    for item, r in zip(explanation.steps, _rows(explanation, precision)):
        lhs = f"{r.target} {r.sign}"
        if isinstance(item, Seed):
            lines.append(f"| {_code(lhs)} | seed | | | | | 1 |")
        elif isinstance(item, Step):
            lines.append(
                f"| {_code(lhs)} | {_code(r.chain)} | {_code(r.rule)} | {_number(item.local, precision)} "
                f"| {_number(item.upstream, precision)} | {r.result} | {_number(item.total, precision)} |"
            )
        else:
            lines.append(f"| **{_code(lhs)}** | {_code(r.numbers)} | | | | | **{r.result}** |")
    if explanation.steps_omitted:
        lines += ["", _omitted_note(explanation.steps_omitted, "steps", explanation.max_steps)]
    lines += ["", _code(_gradients_line(explanation, precision))]
    return "\n".join(lines) + "\n"


# --- Rich ----------------------------------------------------------------------------------


def _table(title: str, headers: Sequence[str], rows: list[tuple[list[str], str]]):  # type: ignore[no-untyped-def]
    """A Rich table whose columns never shrink below their widest cell (Rich would cut numbers)."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for i, header in enumerate(headers):
        width = max([len(header)] + [len(cells[i]) for cells, _ in rows])
        numeric = header in ("value", "local", "upstream", "product", "total")
        table.add_column(header, justify="right" if numeric else "left", no_wrap=True, min_width=width)
    for cells, style in rows:
        table.add_row(*cells, style=style)
    return table


def to_rich(explanation: Explanation, precision: int | None = None) -> RenderableType:
    """Two Rich tables (forward pass, backward pass) with a heading and the final gradients."""
    from rich.console import Group
    from rich.text import Text

    parts: list[RenderableType] = [Text(_header(explanation, precision), style="bold magenta")]
    forward_rows = [
        ([d.name, d.expression or "input", _number(d.value, precision)], "cyan" if not d.expression else "")
        for d in explanation.definitions
    ]
    parts.append(_table("forward pass (topological order)", ("variable", "definition", "value"), forward_rows))
    if explanation.definitions_omitted:
        parts.append(Text(_omitted_note(explanation.definitions_omitted, "lines", explanation.max_steps)))
    backward_rows = []
    for item, r in zip(explanation.steps, _rows(explanation, precision)):
        lhs = f"{r.target} {r.sign}"
        if isinstance(item, Seed):
            backward_rows.append(([lhs, "seed", "", "", "", "", "1"], "bold"))
        elif isinstance(item, Step):
            backward_rows.append(([
                lhs, r.chain, r.rule, _number(item.local, precision), _number(item.upstream, precision),
                r.result, _number(item.total, precision),
            ], "yellow" if item.accumulate else ""))
        else:
            backward_rows.append(([lhs, r.numbers, "", "", "", "", r.result], "bold yellow"))
    parts.append(_table(
        "backward pass (reverse topological order; += adds the contribution of a further use)",
        ("gradient", "chain rule", "local rule", "local", "upstream", "product", "total"), backward_rows,
    ))
    if explanation.steps_omitted:
        parts.append(Text(_omitted_note(explanation.steps_omitted, "steps", explanation.max_steps)))
    parts.append(Text(_gradients_line(explanation, precision), style="bold"))
    return Group(*parts)
