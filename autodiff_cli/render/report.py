"""Renderers for an evaluation: a Rich table, plain text, JSON and CSV (and forward mode's work).

Pure functions: each returns text or a Rich renderable and never prints.
Rich is imported only by ``table``, so scripts asking for JSON don't load it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ..language.program import INPUT
from .numbers import format_number, json_number

if TYPE_CHECKING:
    from rich.console import RenderableType

    from ..engine.forward import ForwardResult
    from ..execute.scalar import Evaluation

COLUMNS = ("name", "kind", "op", "value", "grad")

class Row(NamedTuple):
    name: str
    kind: str
    op: str
    value: float
    grad: float


def rows(evaluation: Evaluation, wrt: Sequence[str] | None = None) -> list[Row]:
    """One row per named variable in program order (only ``wrt`` ones when given, even none)."""
    names = list(evaluation.nodes) if wrt is None else list(wrt)
    result = []
    for name in names:
        node = evaluation.nodes[name]
        kind = evaluation.kind(name)
        op = "" if evaluation.program.variables[name].kind == INPUT else node._op
        result.append(Row(name, kind, op, node.data, node.grad))
    return result


def to_json(
    evaluation: Evaluation,
    wrt: Sequence[str] | None = None,
    *,
    mode: str = "reverse",
    work: Mapping[str, Any] | None = None,
) -> str:
    """One strict JSON object: output name and value, every value, the gradients asked for.

    ``mode`` says which mode computed the gradients; ``work``, when given, is forward
    mode's comparison of the work of both modes.
    """
    grad_rows = rows(evaluation, wrt)
    document: dict[str, Any] = {
        "output": evaluation.output,
        "value": json_number(evaluation.root.data),
        "values": {name: json_number(node.data) for name, node in evaluation.nodes.items()},
        "grads": {row.name: json_number(row.grad) for row in grad_rows},
        "kinds": {name: evaluation.kind(name) for name in evaluation.nodes},
        "mode": mode,
    }
    if work is not None:
        document["work"] = dict(work)
    return json.dumps(document, indent=2, allow_nan=False) + "\n"


def to_csv(evaluation: Evaluation, wrt: Sequence[str] | None = None) -> str:
    import csv  # here rather than at the top: JSON output, the common scripted case, skips it
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in rows(evaluation, wrt):
        writer.writerow([row.name, row.kind, row.op, format_number(row.value), format_number(row.grad)])
    return buffer.getvalue()


def _text_cells(evaluation: Evaluation, wrt: Sequence[str] | None, precision: int | None) -> list[list[str]]:
    return [
        [row.name, row.kind, row.op, format_number(row.value, precision), format_number(row.grad, precision)]
        for row in rows(evaluation, wrt)
    ]


def to_plain(evaluation: Evaluation, wrt: Sequence[str] | None = None, precision: int | None = None) -> str:
    """Aligned columns without colour or box drawing, for pipes and logs."""
    header = list(COLUMNS)
    table = [header, *_text_cells(evaluation, wrt, precision)]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    lines = []
    for line in table:
        cells = [cell.ljust(width) if i < 3 else cell.rjust(width) for i, (cell, width) in enumerate(zip(line, widths))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines) + "\n"


_KIND_STYLES = {"input": "cyan", "intermediate": "", "output": "bold magenta"}


def to_table(
    evaluation: Evaluation,
    wrt: Sequence[str] | None = None,
    precision: int | None = None,
    note: str | None = None,
) -> RenderableType:
    """A Rich table, and ``note`` below it; number columns never shrink, so digits are never cut."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    title = (f"{evaluation.output} = {format_number(evaluation.root.data, precision)}"
             f"    (grad = d{evaluation.output}/d name)")
    table = Table(title=title, title_justify="left")
    cells = _text_cells(evaluation, wrt, precision)
    table.add_column("name", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("op", no_wrap=True)
    for index, header in ((3, "value"), (4, "grad")):
        width = max([len(header)] + [len(line[index]) for line in cells])
        table.add_column(header, justify="right", no_wrap=True, min_width=width)
    for line in cells:
        table.add_row(*line, style=_KIND_STYLES.get(line[1], ""))
    return table if note is None else Group(table, Text(note))


# --- forward mode's work -----------------------------------------------------------------


def _plural(count: int, word: str, plural: str | None = None) -> str:
    return f"{count} {word if count == 1 else (plural or word + 's')}"


def work_summary(result: ForwardResult) -> str:
    """One line comparing the work of forward and reverse mode for this graph (no newline).

    e.g. ``forward mode: 2 passes (one per input) x 11 nodes = 22 node visits;
    reverse mode: 1 backward pass x 11 nodes = 11 node visits``
    """
    per = "input" if result.wrt_inputs_only else "variable"
    return (
        f"forward mode: {_plural(result.passes, 'pass', 'passes')} (one per {per}) x "
        f"{_plural(result.graph_size, 'node')} = {_plural(result.node_visits, 'node visit')}; "
        f"reverse mode: 1 backward pass x {_plural(result.graph_size, 'node')} = "
        f"{_plural(result.reverse_node_visits, 'node visit')}"
    )


def work_dict(result: ForwardResult) -> dict[str, object]:
    """The same comparison as data, for JSON output."""
    return {
        "forward": {"passes": result.passes, "node_visits": result.node_visits},
        "reverse": {"passes": result.reverse_passes, "node_visits": result.reverse_node_visits},
        "graph_size": result.graph_size,
    }
