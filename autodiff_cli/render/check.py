"""Renderers of a gradient check (``analysis.check``): aligned text, a Rich table, JSON.

Pure: each returns text or a Rich renderable; the CLI prints it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ..analysis.check import CheckResult
from .numbers import format_number, json_number

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ["COLUMNS", "to_json", "to_plain", "to_table"]


COLUMNS = ("input", "value", "reverse", "forward", "finite diff", "abs err", "rel err", "result")


def _number(x: float | None, precision: int | None) -> str:
    return "-" if x is None else format_number(x, precision)


def _cells(result: CheckResult, precision: int | None) -> list[list[str]]:
    cells = []
    for c in result.inputs:
        errors = [_number(e, 3 if precision is None else precision) for e in (c.abs_error, c.rel_error)]
        cells.append([
            c.name, _number(c.value, precision), _number(c.reverse, precision), _number(c.forward, precision),
            _number(c.finite_difference, precision), *errors, "ok" if c.ok else "FAIL",
        ])
    return cells


def _summary(result: CheckResult) -> str:
    if not result.inputs:
        return "nothing to check: the program has no inputs"
    failed = len(result.failures)
    verdict = "all agree" if not failed else f"{failed} of {len(result.inputs)} disagree"
    return (f"d{result.output}/d input, {len(result.inputs)} input{'s' if len(result.inputs) != 1 else ''}: "
            f"{verdict} (rtol {result.rtol:g}, atol {result.atol:g})")


def to_plain(result: CheckResult, precision: int | None = None) -> str:
    """Aligned columns and a summary line (the reasons for failures are ``failure_messages``)."""
    if not result.inputs:
        return _summary(result) + "\n"
    table = [list(COLUMNS), *_cells(result, precision)]
    widths = [max(len(row[i]) for row in table) for i in range(len(COLUMNS))]
    lines = []
    for row in table:
        cells = [cell.ljust(w) if i in (0, 7) else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
    lines.append(_summary(result))
    return "\n".join(lines) + "\n"


def to_table(result: CheckResult, precision: int | None = None) -> Table:
    """A Rich table with the summary as caption; failing rows in red."""
    from rich.table import Table

    table = Table(title=f"gradient check of {result.output} = {_number(result.value, precision)}",
                  title_justify="left", caption=_summary(result), caption_justify="left")
    cells = _cells(result, precision)
    for i, header in enumerate(COLUMNS):
        # Columns never shrink below their widest cell: a cut-off digit would be a wrong number.
        width = max([len(header)] + [len(row[i]) for row in cells])
        table.add_column(header, justify="left" if i in (0, 7) else "right", no_wrap=True, min_width=width)
    for row, check in zip(cells, result.inputs):
        table.add_row(*row, style="" if check.ok else "bold red")
    return table


def _json_number(x: float | None) -> float | str | None:
    return None if x is None else json_number(x)


def to_json(result: CheckResult) -> str:
    """One strict JSON object; non-finite numbers as "NaN"/"Infinity" strings, as eval writes them."""
    document = {
        "output": result.output,
        "value": _json_number(result.value),
        "ok": result.ok,
        "rtol": result.rtol,
        "atol": result.atol,
        "inputs": [
            {
                "name": c.name,
                "value": _json_number(c.value),
                "reverse": _json_number(c.reverse),
                "forward": _json_number(c.forward),
                "finite_difference": _json_number(c.finite_difference),
                "step": c.step,
                "abs_error": _json_number(c.abs_error),
                "rel_error": _json_number(c.rel_error),
                "ok": c.ok,
                "reason": c.reason,
            }
            for c in result.inputs
        ],
    }
    return json.dumps(document, indent=2, allow_nan=False) + "\n"
