"""Renderers of a tensor program's explanation (``analysis.tensor_steps``): text, Markdown, Rich.

Pure: each returns text or a Rich renderable.  A backward step is written in matrix form with
the shapes it works on and its value, the entries of a small tensor or a summary of a large one
(``render.report``'s, as ``eval`` shows them):

    dL/dW = transpose(X) @ dL/dP   [2, 8] @ [8, 1] -> [2, 1]   = [[-7.63], [2.67]]

A step that sums a broadcast operand's gradient back says so on the line below it ("b1 was added
to every row of t1, so dL/db1 sums dL/dt2 over the rows").  With ``layers`` (``explain --scalar``)
each statement's matrix steps are followed by the scalar chain rule of one of its rows, written
by ``render.explain`` exactly as ``explain`` writes a scalar program.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ..analysis.tensor_steps import (
    LayerSteps,
    TensorDefinition,
    TensorExplanation,
    TensorItem,
    TensorSeed,
    TensorStep,
    gradient_name,
)
from . import explain as scalar_explain
from .explain import omitted_note
from .report import tensor_text

if TYPE_CHECKING:
    from rich.console import RenderableType

__all__ = ["BACKWARD_HEADING", "FORWARD_HEADING", "broadcast_sentence", "to_markdown", "to_plain", "to_rich"]

FORWARD_HEADING = "forward pass (program order; each operation with its operands' shapes)"
BACKWARD_HEADING = ("backward pass (reverse order, in matrix form: each step is the rule of one tensor operation; "
                    "* is entry by entry; += adds a further use)")


def broadcast_sentence(step: TensorStep) -> str:
    """Why a step sums its gradient: ``b1 was added to every row of t1, so dL/db1 sums dL/dt2
    over the rows``; "" for a step without broadcasting."""
    b = step.broadcast
    if b is None:
        return ""
    return (f"{step.child} was {b.verb} every {b.unit} of {step.parent}, so {gradient_name(step.output, step.child)} "
            f"sums {b.inner} over the {b.units}")


class _Row(NamedTuple):
    """One backward line as text cells."""

    target: str
    sign: str
    formula: str
    shapes: str
    value: str
    note: str
    explained: str  # the broadcast sentence, shown below the line


def _row(item: TensorItem, precision: int | None) -> _Row:
    if isinstance(item, TensorSeed):
        return _Row(gradient_name(item.output, item.output), "=", "1", "[]", "", "seed", "")
    if isinstance(item, TensorStep):
        notes = list(item.notes)
        if item.accumulate:
            notes.append(f"total {tensor_text(item.total, precision)}")
        return _Row(gradient_name(item.output, item.child), "+=" if item.accumulate else "=", item.formula,
                    item.computation, tensor_text(item.product, precision), "; ".join(notes),
                    broadcast_sentence(item))
    return _Row(gradient_name(item.output, item.name), "=", f"sum of its {item.count} contributions", "",
                tensor_text(item.total, precision), "", "")


def _definition_cells(d: TensorDefinition, precision: int | None) -> tuple[str, str, str, str]:
    """variable (or ``name = expression``), shapes, value, note."""
    return (f"{d.name} = {d.expression}" if d.expression else d.name, d.shapes, tensor_text(d.value, precision),
            "" if d.expression else "input")


def _header(explanation: TensorExplanation, precision: int | None) -> str:
    return f"{explanation.output} = {tensor_text(explanation.value, precision)}"


def _gradient_lines(explanation: TensorExplanation, precision: int | None) -> list[str]:
    if not explanation.gradients:
        return ["the program has no inputs"]
    return ["gradients:"] + [f"  {gradient_name(explanation.output, name)} = {tensor_text(grad, precision)}"
                             for name, grad in explanation.gradients]


def _layer_heading(layer: LayerSteps, output: str, precision: int | None) -> str:
    where = f"row {layer.row}" if layer.row is not None else "every entry"
    upstream = f"{gradient_name(output, layer.name)}" + (f"[{layer.row}]" if layer.row is not None else "")
    return (f"statement {layer.name} ({where}), each entry weighted by its upstream gradient "
            f"{upstream} = {tensor_text(layer.upstream, precision)}")


# --- plain text ----------------------------------------------------------------------------------


def _plain_backward(rows: Sequence[_Row]) -> list[str]:
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


def to_plain(explanation: TensorExplanation, precision: int | None = None,
             layers: Sequence[LayerSteps] | None = None) -> str:
    """Aligned text without colour or box drawing, for pipes, logs and diffs.  With ``layers``,
    each statement's steps and one row of it in scalars, instead of the two whole passes."""
    lines = [_header(explanation, precision), ""]
    if layers is not None:
        for layer in layers:
            lines += [_layer_heading(layer, explanation.output, precision), "  in matrix form:"]
            lines += ["  " + line for line in _plain_backward([_row(step, precision) for step in layer.steps])]
            lines += ["  in scalars:"]
            lines += ["    " + line if line else "" for line in
                      scalar_explain.to_plain(layer.scalar, precision).splitlines()]
            lines.append("")
        return "\n".join(lines + _gradient_lines(explanation, precision)) + "\n"
    lines.append(FORWARD_HEADING)
    cells = [_definition_cells(d, precision) for d in explanation.definitions]
    widths = [max((len(c[i]) for c in cells), default=0) for i in range(2)]
    for name, shapes, value, note in cells:
        lines.append(f"  {name.ljust(widths[0])}   {shapes.ljust(widths[1])}   = {value}   {note}".rstrip())
    if explanation.definitions_omitted:
        lines.append("  " + omitted_note(explanation.definitions_omitted, "lines", explanation.max_steps))
    lines += ["", BACKWARD_HEADING]
    lines += _plain_backward([_row(item, precision) for item in explanation.steps])
    if explanation.steps_omitted:
        lines.append("  " + omitted_note(explanation.steps_omitted, "steps", explanation.max_steps))
    lines += [""] + _gradient_lines(explanation, precision)
    return "\n".join(lines) + "\n"


# --- Markdown ------------------------------------------------------------------------------------


def _code(text: str) -> str:
    return f"`{text}`" if text else ""


def _markdown_backward(rows: Sequence[_Row]) -> list[str]:
    lines = ["| gradient | matrix form | shapes | value | note |", "|---|---|---|---:|---|"]
    for r in rows:
        note = "; ".join(x for x in (r.note, r.explained) if x)
        lines.append(f"| {_code(f'{r.target} {r.sign}')} | {_code(r.formula)} | {_code(r.shapes)} | {r.value} "
                     f"| {note} |")
    return lines


def _markdown_gradients(explanation: TensorExplanation, precision: int | None) -> list[str]:
    """The gradients as a list, one item per input."""
    return ["- " + _code(line.strip()) if line.startswith("  ") else line
            for line in _gradient_lines(explanation, precision)]


def to_markdown(explanation: TensorExplanation, precision: int | None = None,
                layers: Sequence[LayerSteps] | None = None) -> str:
    """GitHub-flavoured Markdown tables, for notes and slides."""
    lines = [f"**{_code(_header(explanation, precision))}**", ""]
    if layers is not None:
        for layer in layers:
            lines += [f"### {_layer_heading(layer, explanation.output, precision)}", "", "In matrix form:", ""]
            lines += _markdown_backward([_row(step, precision) for step in layer.steps])
            lines += ["", "In scalars:", "", scalar_explain.to_markdown(layer.scalar, precision)]
        return "\n".join(lines + _markdown_gradients(explanation, precision)) + "\n"
    lines += ["Forward pass:", "", "| variable | definition | shapes | value |", "|---|---|---|---:|"]
    for d in explanation.definitions:
        lines.append(f"| {_code(d.name)} | {_code(d.expression) or 'input'} | {_code(d.shapes)} "
                     f"| {tensor_text(d.value, precision)} |")
    if explanation.definitions_omitted:
        lines += ["", omitted_note(explanation.definitions_omitted, "lines", explanation.max_steps)]
    lines += ["", BACKWARD_HEADING.replace("backward", "Backward", 1) + ":", ""]
    lines += _markdown_backward([_row(item, precision) for item in explanation.steps])
    if explanation.steps_omitted:
        lines += ["", omitted_note(explanation.steps_omitted, "steps", explanation.max_steps)]
    lines += [""] + _markdown_gradients(explanation, precision)
    return "\n".join(lines) + "\n"


# --- Rich ----------------------------------------------------------------------------------------


def _table(headers: Sequence[str], rows: list[tuple[Sequence[str], str]], prose: Sequence[str]) -> Any:
    """A Rich table that fits the console without cutting a number (``fitted_table.FittedRows``): a
    tensor's value breaks between entries, the ``prose`` columns at spaces, and at the narrowest
    each row is a block under its first cell."""
    from .fitted_table import Column, FittedRows

    columns = [Column(header, number=header == "value", prose=header in prose, heading=i == 0,
                      first=header == "matrix form") for i, header in enumerate(headers)]
    return FittedRows(columns, rows)


_STYLES = {"TensorSeed": "bold", "TensorTotal": "bold yellow"}  # a step: yellow when it adds a further use


def _rich_backward(items: Sequence[TensorItem], precision: int | None) -> Any:
    rows = []
    for item in items:
        r = _row(item, precision)
        style = _STYLES.get(type(item).__name__, "yellow" if r.sign == "+=" else "")
        note = "; ".join(x for x in (r.note, r.explained) if x)
        rows.append(([f"{r.target} {r.sign}", r.formula, r.shapes, r.value, note], style))
    return _table(("gradient", "matrix form", "shapes", "value", "note"), rows, ("matrix form", "note"))


def to_rich(explanation: TensorExplanation, precision: int | None = None,
            layers: Sequence[LayerSteps] | None = None) -> RenderableType:
    """Rich tables (forward pass, backward pass) with a heading and the final gradients."""
    from rich.console import Group
    from rich.text import Text

    parts: list[Any] = [Text(_header(explanation, precision), style="bold magenta")]
    if layers is not None:
        for layer in layers:
            parts += [Text(_layer_heading(layer, explanation.output, precision), style="italic"),
                      _rich_backward(layer.steps, precision), scalar_explain.to_rich(layer.scalar, precision)]
    else:
        forward = [(list(_definition_cells(d, precision)[:3]), "" if d.expression else "cyan")
                   for d in explanation.definitions]
        parts += [Text(FORWARD_HEADING, style="italic"),
                  _table(("variable", "shapes", "value"), forward, ())]
        if explanation.definitions_omitted:
            parts.append(Text(omitted_note(explanation.definitions_omitted, "lines", explanation.max_steps)))
        parts += [Text(BACKWARD_HEADING, style="italic"), _rich_backward(explanation.steps, precision)]
        if explanation.steps_omitted:
            parts.append(Text(omitted_note(explanation.steps_omitted, "steps", explanation.max_steps)))
    parts.append(Text("\n".join(_gradient_lines(explanation, precision)), style="bold"))
    return Group(*parts)
