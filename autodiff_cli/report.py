"""Renderers for an evaluation: a Rich table, plain text, JSON and CSV.

Pure functions: each returns text or a Rich renderable and never prints.
Rich is imported only by ``table``, so scripts asking for JSON don't load it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from .language import INPUT, Evaluation

if TYPE_CHECKING:
    from rich.console import RenderableType

COLUMNS = ("name", "kind", "op", "value", "grad")

# JSON has no NaN or infinity; they are written as these strings.
NON_FINITE_JSON = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


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


def format_number(x: float, precision: int | None = None) -> str:
    """Shortest round-trip text by default; ``precision`` significant digits when given."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if precision is None:
        return repr(float(x))
    return f"{x:.{precision}g}"


def json_number(x: float) -> float | str:
    """x itself, or the string JSON needs for NaN and the infinities."""
    return x if math.isfinite(x) else NON_FINITE_JSON[repr(float(x))]


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
