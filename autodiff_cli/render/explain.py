"""Renderers of an explanation (``analysis.steps``), in either form: aligned text, Markdown, Rich.

Pure: each returns text or a Rich renderable; the CLI prints it.  ``definition_sentence`` and
``step_sentence`` write one line of either pass in the same words, unpadded, for the
step-through page (``render.page``), so the page follows any change of wording here.

The wording of a step is made by the public functions below (``gradient_text``,
``local_text``, ``chain_text``, ``rule_text`` and the headings), which every renderer of
steps uses, so that each writes a chain-rule step in the same words:

    dL/dc = ∂d/∂c * dL/dd = 1 * -2 = -2     [∂d/∂c = 1]

``dL/dc`` is a gradient, the derivative of the output through every path; ``∂d/∂c`` is a
local derivative, of the one operation that computes d, with the rule in brackets.
Writing both as d../d.. made a step from the output read as circular
(``dL/dd = dL/dd * dL/dL``).

An explanation in matrix form writes a step with the shapes it works on and its value, the
entries of a small tensor or a summary of a large one (``render.report``'s, as ``eval``
shows them):

    dL/dW = transpose(X) @ dL/dP   [2, 8] @ [8, 1] -> [2, 1]   = [[-7.63], [2.67]]

A step that sums a broadcast operand's gradient back says so on the line below it ("b1 was added
to every row of t1, so dL/db1 sums dL/dt2 over the rows").  With ``layers`` (``explain --scalar``)
each statement's matrix steps are followed by the scalar chain rule of one of its rows, written
exactly as a program of numbers is.  Headers, names, omitted-line notes and tables are shared.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ..analysis.steps import (
    MATRIX,
    Definition,
    Explanation,
    Item,
    LayerSteps,
    MatrixStep,
    Seed,
    Step,
    Total,
    gradient_name,
)
from ..engine.ops import short_number

if TYPE_CHECKING:
    from rich.console import RenderableType

__all__ = [
    "BACKWARD_HEADING",
    "FORWARD_HEADING",
    "MATRIX_BACKWARD_HEADING",
    "MATRIX_FORWARD_HEADING",
    "broadcast_sentence",
    "chain_text",
    "definition_sentence",
    "gradient_text",
    "gradients_line",
    "header_line",
    "local_text",
    "omitted_note",
    "rule_text",
    "step_sentence",
    "table",
    "to_markdown",
    "to_plain",
    "to_rich",
]

FORWARD_HEADING = "forward pass (topological order)"
BACKWARD_HEADING = ("backward pass (reverse topological order; ∂ is the local derivative of one operation; "
                    "+= adds a further use)")
MATRIX_FORWARD_HEADING = "forward pass (program order; each operation with its operands' shapes)"
MATRIX_BACKWARD_HEADING = ("backward pass (reverse order, in matrix form: each step is the rule of one tensor "
                           "operation; * is entry by entry; += adds a further use)")


def _number(x: float, precision: int | None = None) -> str:
    """2.0 -> '2', 0.1 -> '0.1'; ``precision`` significant digits when given."""
    return short_number(x) if precision is None else f"{x:.{precision}g}"


# --- text pieces shared by the renderers ---------------------------------------------------


def gradient_text(output: str, name: str) -> str:
    """The gradient of ``output`` with respect to ``name``, through every path: ``dL/dc``."""
    return gradient_name(output, name)


def local_text(parent: str, child: str) -> str:
    """The local derivative of the operation computing ``parent`` with respect to its operand
    ``child`` alone: ``∂d/∂c``."""
    return f"∂{parent}/∂{child}"


def chain_text(step: Step) -> str:
    """The chain rule of one step in symbols: local derivative * upstream gradient (``∂d/∂c * dL/dd``)."""
    return f"{local_text(step.parent, step.child)} * {gradient_text(step.output, step.parent)}"


def rule_text(step: Step) -> str:
    """The local derivative's rule, operands named: ``∂e/∂a = b``."""
    return f"{local_text(step.parent, step.child)} = {step.rule}"


_d = gradient_text


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


def _row(item: Item, precision: int | None) -> _Row:
    if isinstance(item, Seed):
        return _Row(_d(item.output, item.output), "=", "", "", "1", "", "seed")
    if isinstance(item, Step):
        return _Row(
            _d(item.output, item.child),
            "+=" if item.accumulate else "=",
            chain_text(item),
            f"{_number(item.local, precision)} * {_number(item.upstream, precision)}",
            _number(item.product, precision),
            rule_text(item),
            f"total {_number(item.total, precision)}" if item.accumulate else "",
        )
    assert isinstance(item, Total)  # a scalar explanation holds no matrix steps
    return _Row(_d(item.output, item.name), "=", "", _total_sum(item, precision),
                _number(item.total, precision), "", f"sum of {item.count} contributions")


def _rows(explanation: Explanation, precision: int | None) -> list[_Row]:
    return [_row(item, precision) for item in explanation.steps]


def _equation(r: _Row, width_target: int = 0, width_sign: int = 0) -> str:
    """A backward line's equation, its first two cells padded to the given widths."""
    parts = [r.target.ljust(width_target), r.sign.ljust(width_sign)]
    if r.chain:
        parts += [r.chain, "="]
    if r.numbers:
        parts += [r.numbers, "="]
    parts.append(r.result)
    return " ".join(parts)


def _annotation(r: _Row) -> str:
    """What follows a backward line's equation: the local rule in brackets and a note."""
    return "   ".join(x for x in (f"[{r.rule}]" if r.rule else "", r.note) if x)


def _definition_text(d: Definition) -> str:
    return d.name if not d.expression else f"{d.name} = {d.expression}"


def _definition_line(d: Definition, value: str, width: int = 0, width_value: int = 0) -> str:
    note = "input" if not d.expression else ""
    return f"{_definition_text(d).ljust(width)} = {value.ljust(width_value)}   {note}".rstrip()


def definition_sentence(definition: Definition, precision: int | None = None) -> str:
    """One line of the forward pass in explain's words, unpadded: ``e = a * b = -6``."""
    return _definition_line(definition, _number(definition.value, precision))


def step_sentence(item: Item, precision: int | None = None) -> str:
    """One line of the backward pass in explain's words, unpadded:
    ``dL/dc = ∂d/∂c * dL/dd = 1 * -2 = -2   [∂d/∂c = 1]``."""
    r = _row(item, precision)
    return f"{_equation(r)}   {_annotation(r)}".rstrip()


def gradients_line(explanation: Explanation, precision: int | None = None) -> str:
    """explain's last line: every input's gradient."""
    return _gradients_line(explanation, precision)


def header_line(explanation: Explanation, precision: int | None = None) -> str:
    """explain's first line: ``L = -8``."""
    return _header(explanation, precision)


def omitted_note(count: int, what: str, limit: int) -> str:
    """What a capped pass leaves out: ``... 12 more steps not shown (--max-steps 500; ...)``."""
    what = what if count != 1 else what.removesuffix("s")
    return (f"... {count:,} more {what} not shown (--max-steps {limit}; "
            "use --max-steps 0 to show all)")


def _value(explanation: Explanation, value: Any, precision: int | None) -> str:
    """A value as its form shows it: a number short, a tensor as ``eval`` shows it (whole or summed up)."""
    if explanation.form != MATRIX:
        return _number(value, precision)
    from .report import tensor_text

    return tensor_text(value, precision)


def _header(explanation: Explanation, precision: int | None) -> str:
    return f"{explanation.output} = {_value(explanation, explanation.value, precision)}"


def _gradients_line(explanation: Explanation, precision: int | None) -> str:
    if not explanation.gradients:
        return "the program has no inputs"
    parts = [f"{_d(explanation.output, name)} = {_number(grad, precision)}"
             for name, grad in explanation.gradients]
    return "gradients: " + ", ".join(parts)


def _code(text: str) -> str:
    return f"`{text}`" if text else ""


# --- the renderers: each writes either form --------------------------------------------------------


def to_plain(explanation: Explanation, precision: int | None = None) -> str:
    """Aligned text without colour or box drawing, for pipes, logs and diffs.  In matrix form with
    ``layers``, each statement's steps and one row of it in scalars, instead of the two whole passes."""
    if explanation.form == MATRIX:
        return _matrix_plain(explanation, precision)
    return _scalar_plain(explanation, precision)


def to_markdown(explanation: Explanation, precision: int | None = None) -> str:
    """GitHub-flavoured Markdown tables, for notes and slides."""
    if explanation.form == MATRIX:
        return _matrix_markdown(explanation, precision)
    return _scalar_markdown(explanation, precision)


def to_rich(explanation: Explanation, precision: int | None = None) -> RenderableType:
    """Rich tables (forward pass, backward pass) with a heading and the final gradients.

    The headings are lines of their own, not table titles: Rich wraps a title to the
    table's width and pads it with spaces.
    """
    if explanation.form == MATRIX:
        return _matrix_rich(explanation, precision)
    return _scalar_rich(explanation, precision)


_NUMBER_COLUMNS = ("value", "local", "upstream", "product", "total")
_PROSE_COLUMNS = ("definition", "chain rule", "local rule")  # expressions: they may break at a space


def table(headers: Sequence[str], rows: Sequence[tuple[Sequence[str], str]], prose: Sequence[str] = _PROSE_COLUMNS,
          first: Sequence[str] = _PROSE_COLUMNS) -> Any:
    """A Rich table that fits the console without cutting a number (``fitted_table.FittedRows``):
    a tensor's value breaks between entries, the ``prose`` columns at spaces, and at the narrowest
    each row is a block under its first cell (``first``: the columns that lead such a block)."""
    from .fitted_table import Column, FittedRows

    columns = [Column(header, number=header in _NUMBER_COLUMNS, prose=header in prose, heading=i == 0,
                      first=header in first) for i, header in enumerate(headers)]
    return FittedRows(columns, rows)


# --- scalar form ---------------------------------------------------------------------------------


def _scalar_plain(explanation: Explanation, precision: int | None) -> str:
    lines = [_header(explanation, precision), "", FORWARD_HEADING]
    values = [_number(d.value, precision) for d in explanation.definitions]
    width = max((len(_definition_text(d)) for d in explanation.definitions), default=0)
    width_value = max((len(text) for text in values), default=0)
    for value, definition in zip(values, explanation.definitions):
        lines.append("  " + _definition_line(definition, value, width, width_value))
    if explanation.definitions_omitted:
        lines.append("  " + omitted_note(explanation.definitions_omitted, "lines", explanation.max_steps))
    lines += ["", BACKWARD_HEADING]
    rows = _rows(explanation, precision)
    width_target = max((len(r.target) for r in rows), default=0)
    width_sign = max((len(r.sign) for r in rows), default=0)
    equations = [_equation(r, width_target, width_sign) for r in rows]
    width_equation = max((len(e) for e in equations), default=0)
    for equation, r in zip(equations, rows):
        lines.append(f"  {equation.ljust(width_equation)}   {_annotation(r)}".rstrip())
    if explanation.steps_omitted:
        lines.append("  " + omitted_note(explanation.steps_omitted, "steps", explanation.max_steps))
    lines += ["", _gradients_line(explanation, precision)]
    return "\n".join(lines) + "\n"


def _scalar_markdown(explanation: Explanation, precision: int | None) -> str:
    lines = [f"**{_code(_header(explanation, precision))}**", "", "Forward pass:", "",
             "| variable | definition | value |", "|---|---|---:|"]
    for d in explanation.definitions:
        lines.append(f"| {_code(d.name)} | {_code(d.expression) or 'input'} | {_number(d.value, precision)} |")
    if explanation.definitions_omitted:
        lines += ["", omitted_note(explanation.definitions_omitted, "lines", explanation.max_steps)]
    lines += ["", BACKWARD_HEADING.replace("backward", "Backward", 1).replace("+=", "`+=`") + ":", "",
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
        lines += ["", omitted_note(explanation.steps_omitted, "steps", explanation.max_steps)]
    lines += ["", _code(_gradients_line(explanation, precision))]
    return "\n".join(lines) + "\n"


def _scalar_rich(explanation: Explanation, precision: int | None) -> RenderableType:
    from rich.console import Group
    from rich.text import Text

    parts: list[RenderableType] = [Text(_header(explanation, precision), style="bold magenta")]
    forward_rows = [
        ([d.name, d.expression or "input", _number(d.value, precision)], "cyan" if not d.expression else "")
        for d in explanation.definitions
    ]
    parts.append(Text(FORWARD_HEADING, style="italic"))
    parts.append(table(("variable", "definition", "value"), forward_rows))
    if explanation.definitions_omitted:
        parts.append(Text(omitted_note(explanation.definitions_omitted, "lines", explanation.max_steps)))
    backward_rows: list[tuple[Sequence[str], str]] = []
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
    parts.append(Text(BACKWARD_HEADING, style="italic"))
    parts.append(table(("gradient", "chain rule", "local rule", "local", "upstream", "product", "total"),
                       backward_rows))
    if explanation.steps_omitted:
        parts.append(Text(omitted_note(explanation.steps_omitted, "steps", explanation.max_steps)))
    parts.append(Text(_gradients_line(explanation, precision), style="bold"))
    return Group(*parts)


# --- matrix form ---------------------------------------------------------------------------------


def broadcast_sentence(step: MatrixStep) -> str:
    """Why a step sums its gradient: ``b1 was added to every row of t1, so dL/db1 sums dL/dt2
    over the rows``; "" for a step without broadcasting."""
    b = step.broadcast
    if b is None:
        return ""
    return (f"{step.child} was {b.verb} every {b.unit} of {step.parent}, so {_d(step.output, step.child)} "
            f"sums {b.inner} over the {b.units}")


class _MatrixRow(NamedTuple):
    """One backward line in matrix form as text cells."""

    target: str
    sign: str
    formula: str
    shapes: str
    value: str
    note: str
    explained: str  # the broadcast sentence, shown below the line


def _matrix_row(explanation: Explanation, item: Item, precision: int | None) -> _MatrixRow:
    if isinstance(item, Seed):
        return _MatrixRow(_d(item.output, item.output), "=", "1", "[]", "", "seed", "")
    if isinstance(item, MatrixStep):
        notes = list(item.notes)
        if item.accumulate:
            notes.append(f"total {_value(explanation, item.total, precision)}")
        return _MatrixRow(_d(item.output, item.child), "+=" if item.accumulate else "=", item.formula,
                          item.computation, _value(explanation, item.product, precision), "; ".join(notes),
                          broadcast_sentence(item))
    assert isinstance(item, Total)
    return _MatrixRow(_d(item.output, item.name), "=", f"sum of its {item.count} contributions", "",
                      _value(explanation, item.total, precision), "", "")


def _matrix_rows(explanation: Explanation, items: Sequence[Item], precision: int | None) -> list[_MatrixRow]:
    return [_matrix_row(explanation, item, precision) for item in items]


def _definition_cells(explanation: Explanation, d: Definition, precision: int | None) -> tuple[str, str, str, str]:
    """variable (or ``name = expression``), shapes, value, note."""
    return (_definition_text(d), d.shapes, _value(explanation, d.value, precision), "" if d.expression else "input")


def _gradient_lines(explanation: Explanation, precision: int | None) -> list[str]:
    if not explanation.gradients:
        return ["the program has no inputs"]
    return ["gradients:"] + [f"  {_d(explanation.output, name)} = {_value(explanation, grad, precision)}"
                             for name, grad in explanation.gradients]


def _layer_heading(explanation: Explanation, layer: LayerSteps, precision: int | None) -> str:
    where = f"row {layer.row}" if layer.row is not None else "every entry"
    upstream = _d(explanation.output, layer.name) + (f"[{layer.row}]" if layer.row is not None else "")
    return (f"statement {layer.name} ({where}), each entry weighted by its upstream gradient "
            f"{upstream} = {_value(explanation, layer.upstream, precision)}")


def _plain_backward(rows: Sequence[_MatrixRow]) -> list[str]:
    width_target = max((len(r.target) for r in rows), default=0)
    width_sign = max((len(r.sign) for r in rows), default=0)
    equations = [f"{r.target.ljust(width_target)} {r.sign.ljust(width_sign)} {r.formula}" for r in rows]
    width_equation = max((len(e) for e in equations), default=0)
    width_shapes = max((len(r.shapes) for r in rows), default=0)
    lines = []
    for equation, r in zip(equations, rows):
        value = f"= {r.value}" if r.value else ""
        line = "   ".join([equation.ljust(width_equation), r.shapes.ljust(width_shapes), value, r.note])
        lines.append("  " + line.rstrip())
        if r.explained:
            lines.append(" " * (4 + width_target + width_sign) + r.explained)
    return lines


def _matrix_plain(explanation: Explanation, precision: int | None) -> str:
    lines = [_header(explanation, precision), ""]
    if explanation.layers is not None:
        for layer in explanation.layers:
            lines += [_layer_heading(explanation, layer, precision), "  in matrix form:"]
            lines += ["  " + line for line in _plain_backward(_matrix_rows(explanation, layer.steps, precision))]
            lines += ["  in scalars:"]
            lines += ["    " + line if line else "" for line in _scalar_plain(layer.scalar, precision).splitlines()]
            lines.append("")
        return "\n".join(lines + _gradient_lines(explanation, precision)) + "\n"
    lines.append(MATRIX_FORWARD_HEADING)
    cells = [_definition_cells(explanation, d, precision) for d in explanation.definitions]
    widths = [max((len(c[i]) for c in cells), default=0) for i in range(2)]
    for name, shapes, value, note in cells:
        lines.append(f"  {name.ljust(widths[0])}   {shapes.ljust(widths[1])}   = {value}   {note}".rstrip())
    if explanation.definitions_omitted:
        lines.append("  " + omitted_note(explanation.definitions_omitted, "lines", explanation.max_steps))
    lines += ["", MATRIX_BACKWARD_HEADING]
    lines += _plain_backward(_matrix_rows(explanation, explanation.steps, precision))
    if explanation.steps_omitted:
        lines.append("  " + omitted_note(explanation.steps_omitted, "steps", explanation.max_steps))
    lines += [""] + _gradient_lines(explanation, precision)
    return "\n".join(lines) + "\n"


def _markdown_backward(rows: Sequence[_MatrixRow]) -> list[str]:
    lines = ["| gradient | matrix form | shapes | value | note |", "|---|---|---|---:|---|"]
    for r in rows:
        note = "; ".join(x for x in (r.note, r.explained) if x)
        lines.append(f"| {_code(f'{r.target} {r.sign}')} | {_code(r.formula)} | {_code(r.shapes)} | {r.value} "
                     f"| {note} |")
    return lines


def _markdown_gradients(explanation: Explanation, precision: int | None) -> list[str]:
    """The gradients as a list, one item per input."""
    return ["- " + _code(line.strip()) if line.startswith("  ") else line
            for line in _gradient_lines(explanation, precision)]


def _matrix_markdown(explanation: Explanation, precision: int | None) -> str:
    lines = [f"**{_code(_header(explanation, precision))}**", ""]
    if explanation.layers is not None:
        for layer in explanation.layers:
            lines += [f"### {_layer_heading(explanation, layer, precision)}", "", "In matrix form:", ""]
            lines += _markdown_backward(_matrix_rows(explanation, layer.steps, precision))
            lines += ["", "In scalars:", "", _scalar_markdown(layer.scalar, precision)]
        return "\n".join(lines + _markdown_gradients(explanation, precision)) + "\n"
    lines += ["Forward pass:", "", "| variable | definition | shapes | value |", "|---|---|---|---:|"]
    for d in explanation.definitions:
        lines.append(f"| {_code(d.name)} | {_code(d.expression) or 'input'} | {_code(d.shapes)} "
                     f"| {_value(explanation, d.value, precision)} |")
    if explanation.definitions_omitted:
        lines += ["", omitted_note(explanation.definitions_omitted, "lines", explanation.max_steps)]
    lines += ["", MATRIX_BACKWARD_HEADING.replace("backward", "Backward", 1) + ":", ""]
    lines += _markdown_backward(_matrix_rows(explanation, explanation.steps, precision))
    if explanation.steps_omitted:
        lines += ["", omitted_note(explanation.steps_omitted, "steps", explanation.max_steps)]
    lines += [""] + _markdown_gradients(explanation, precision)
    return "\n".join(lines) + "\n"


def _rich_backward(explanation: Explanation, items: Sequence[Item], precision: int | None) -> Any:
    rows = []
    for item in items:
        r = _matrix_row(explanation, item, precision)
        if isinstance(item, Seed):
            style = "bold"
        elif isinstance(item, Total):
            style = "bold yellow"
        else:  # a step: yellow when it adds a further use
            style = "yellow" if r.sign == "+=" else ""
        note = "; ".join(x for x in (r.note, r.explained) if x)
        rows.append(([f"{r.target} {r.sign}", r.formula, r.shapes, r.value, note], style))
    return table(("gradient", "matrix form", "shapes", "value", "note"), rows, ("matrix form", "note"),
                 ("matrix form",))


def _matrix_rich(explanation: Explanation, precision: int | None) -> RenderableType:
    from rich.console import Group
    from rich.text import Text

    parts: list[Any] = [Text(_header(explanation, precision), style="bold magenta")]
    if explanation.layers is not None:
        for layer in explanation.layers:
            parts += [Text(_layer_heading(explanation, layer, precision), style="italic"),
                      _rich_backward(explanation, layer.steps, precision), _scalar_rich(layer.scalar, precision)]
    else:
        forward = [(list(_definition_cells(explanation, d, precision)[:3]), "" if d.expression else "cyan")
                   for d in explanation.definitions]
        parts += [Text(MATRIX_FORWARD_HEADING, style="italic"), table(("variable", "shapes", "value"), forward, (), ())]
        if explanation.definitions_omitted:
            parts.append(Text(omitted_note(explanation.definitions_omitted, "lines", explanation.max_steps)))
        parts += [Text(MATRIX_BACKWARD_HEADING, style="italic"), _rich_backward(explanation, explanation.steps, precision)]
        if explanation.steps_omitted:
            parts.append(Text(omitted_note(explanation.steps_omitted, "steps", explanation.max_steps)))
    parts.append(Text("\n".join(_gradient_lines(explanation, precision)), style="bold"))
    return Group(*parts)
