"""The report of ``autodiff batch --reduce``: sums or means over rows as a table, text, JSON or CSV.

The same four formats as ``eval``'s report, with one row per variable: the output,
then each variable differentiated, with the sum or mean over the rows of its value
and of the gradient of the output with respect to it.  Pure functions.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..execute.batch_rows import Reduction
from .numbers import format_number, json_number
from .report import cells_table

if TYPE_CHECKING:
    from rich.console import RenderableType

COLUMNS = ("name", "kind", "value", "grad")


def _cells(reduction: Reduction, precision: int | None) -> list[list[str]]:
    return [[name, reduction.kinds[name], format_number(reduction.values[name], precision),
             format_number(reduction.grads[name], precision)] for name in reduction.names]


def to_plain(reduction: Reduction, precision: int | None = None) -> str:
    table = [list(COLUMNS), *_cells(reduction, precision)]
    widths = [max(len(line[i]) for line in table) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.ljust(width) if i < 2 else cell.rjust(width)
                       for i, (cell, width) in enumerate(zip(line, widths))).rstrip() for line in table]
    return "\n".join(lines) + "\n"


def to_csv(reduction: Reduction) -> str:
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(_cells(reduction, None))
    return buffer.getvalue()


def to_json(reduction: Reduction) -> str:
    document: dict[str, Any] = {
        "output": reduction.output,
        "reduce": reduction.how,
        "rows": reduction.rows,
        "failed": reduction.failed,
        "value": json_number(reduction.value),
        "values": {name: json_number(reduction.values[name]) for name in reduction.names},
        "grads": {name: json_number(reduction.grads[name]) for name in reduction.names},
        "kinds": {name: reduction.kinds[name] for name in reduction.names},
        **({} if reduction.dtype == "float64" else {"dtype": reduction.dtype}),  # as eval's JSON says it
    }
    return json.dumps(document, indent=2, allow_nan=False) + "\n"


def title(reduction: Reduction, precision: int | None = None) -> str:
    rows = f"{reduction.rows:,} row{'s' * (reduction.rows != 1)}"
    return (f"{reduction.how} over {rows}: {reduction.output} = {format_number(reduction.value, precision)}"
            f"    (grad = {reduction.how} of d{reduction.output}/d name{_precision(reduction)})")


def _precision(reduction: Reduction) -> str:
    """', in float32' where the rows ran in float32, as eval's header says it (float64 goes unsaid)."""
    return "" if reduction.dtype == "float64" else f", in {reduction.dtype}"


def to_table(reduction: Reduction, precision: int | None = None) -> RenderableType:
    return cells_table(title(reduction, precision), ("name", "kind"), _cells(reduction, precision))
