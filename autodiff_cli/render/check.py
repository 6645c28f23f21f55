"""Renderers of a gradient check (``analysis.check``): aligned text, a Rich table, JSON.

Pure: each returns text or a Rich renderable; the CLI prints it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..analysis.check import DIRECTION, CheckResult
from .numbers import format_number, json_number

if TYPE_CHECKING:
    from .fitted_table import FittedRows

__all__ = ["COLUMNS", "to_json", "to_plain", "to_table"]


COLUMNS = ("input", "value", "reverse", "forward", "finite diff", "fd ±", "abs err", "rel err", "result")
# The text columns (left-aligned); the others are numbers.
_TEXT_COLUMNS = (0, len(COLUMNS) - 1)
RESULT_WORDS = {"ok": "ok", "fail": "FAIL", "inconclusive": "inconclusive"}


def _number(x: float | None, precision: int | None) -> str:
    return "-" if x is None else format_number(x, precision)


def _columns(result: CheckResult) -> tuple[str, ...]:
    return COLUMNS if result.mode == "inputs" else ("direction",) + COLUMNS[1:]


def _held(result: CheckResult, precision: int | None = None) -> Callable[[float | None], float | None]:
    """A number as the program's precision holds it: in float32, the float64 nearest its shortest
    float32 text (0.3, not 0.30000001192092896), so no digit float32 does not hold is shown; with
    ``precision`` digits asked for, the float32 number's exact value, whose digits those are."""
    if result.dtype == "float64" or precision is not None:
        return lambda x: x
    import numpy as np

    return lambda x: None if x is None else float(str(np.dtype(result.dtype).type(x)))


def _cells(result: CheckResult, precision: int | None) -> list[list[str]]:
    cells = []
    short = 3 if precision is None else precision
    held = _held(result, precision)  # the input values and both modes' gradients; the difference is float64 arithmetic
    for c in result.inputs:
        errors = [_number(e, short) for e in (c.fd_error, c.abs_error, c.rel_error)]
        # A direction has no value of its own: it moves every input from where it is.
        value = _number(held(c.value), precision) if result.mode == "inputs" else "-"
        cells.append([
            c.name, value, _number(held(c.reverse), precision), _number(held(c.forward), precision),
            _number(c.finite_difference, precision), *errors, RESULT_WORDS[c.verdict],
        ])
    return cells


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'s' if count != 1 else ''}"


def _counted(result: CheckResult) -> str:
    """What the rows are: inputs, or (a tensor program's check) random directions and input entries."""
    total = len(result.inputs)
    directions = sum(1 for check in result.inputs if check.name.startswith(DIRECTION))
    if not directions:
        return _plural(total, "input")
    entries = total - directions
    return f"{_plural(directions, 'random direction')} and {entries:,} input entr{'y' if entries == 1 else 'ies'}"


def _summary(result: CheckResult) -> str:
    if not result.inputs:
        return "nothing to check: the program has no inputs"
    failed, unsure, total = len(result.failures), len(result.inconclusive), len(result.inputs)
    parts = [f"{failed} of {total} disagree"] if failed else []
    if unsure:
        parts.append(f"{unsure} of {total} inconclusive")
    verdict = ", ".join(parts) or "all agree"
    if result.mode == "directions":
        what = (f"d{result.output}/d input along {_plural(total, 'random direction')} (fast mode, seed "
                f"{result.seed}; {_plural(result.input_count or 0, 'input')})")
    else:
        what = f"d{result.output}/d input, {_counted(result)}"
    return f"{what}: {verdict} ({_in_precision(result)}rtol {result.rtol:g}, atol {result.atol:g})"


def _in_precision(result: CheckResult) -> str:
    """"in float32: " where the check ran in float32 (float64, the default, goes unsaid)."""
    return "" if result.dtype == "float64" else f"in {result.dtype}: "


def to_plain(result: CheckResult, precision: int | None = None) -> str:
    """Aligned columns and a summary line (the reasons for failures are ``failure_messages``)."""
    if not result.inputs:
        return _summary(result) + "\n"
    table = [list(_columns(result)), *_cells(result, precision)]
    widths = [max(len(row[i]) for row in table) for i in range(len(COLUMNS))]
    lines = []
    for row in table:
        cells = [cell.ljust(w) if i in _TEXT_COLUMNS else cell.rjust(w)
                 for i, (cell, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
    lines.append(_summary(result))
    return "\n".join(lines) + "\n"


# At a narrow console: the input over its value, reverse over forward, the finite difference over
# its error, the two errors over the result (render.fitted_table), before one input a block.
_STACKS = ((0, 1), (2, 3), (4, 5), (6, 7, 8))


def to_table(result: CheckResult, precision: int | None = None) -> FittedRows:
    """A Rich table with the summary as caption; failing rows in red.  It fits the console's width
    without cutting a number (``render.fitted_table.FittedRows``): stacked, or an input a block."""
    from .fitted_table import Column, FittedRows

    columns = [Column(header, number=i not in _TEXT_COLUMNS, heading=i in _TEXT_COLUMNS)
               for i, header in enumerate(_columns(result))]
    styles = {"ok": "", "fail": "bold red", "inconclusive": "yellow"}
    rows = [(row, styles[check.verdict]) for row, check in zip(_cells(result, precision), result.inputs)]
    return FittedRows(columns, rows, title=f"gradient check of {result.output} = {_number(_held(result, precision)(result.value), precision)}"
                      + ("" if result.dtype == "float64" else f", in {result.dtype}"),
                      caption=_summary(result), stacks=_STACKS)


def _json_number(x: float | None) -> float | str | None:
    return None if x is None else json_number(x)


def to_json(result: CheckResult) -> str:
    """One strict JSON object; non-finite numbers as "NaN"/"Infinity" strings, as eval writes them.
    In float32 the values and both modes' gradients are written as eval writes float32 (0.1)."""
    held = _held(result)
    document = {
        "output": result.output,
        "value": _json_number(held(result.value)),
        "ok": result.ok,
        "verdict": result.verdict,
        "mode": result.mode,
        **({} if result.dtype == "float64" else {"dtype": result.dtype}),
        "rtol": result.rtol,
        "atol": result.atol,
        "notes": result.notes,
        # One entry per input, or per random direction in the fast mode (with its seed).
        **({"seed": result.seed, "input_count": result.input_count} if result.mode == "directions" else {}),
        "inputs" if result.mode == "inputs" else "directions": [
            {
                "name": c.name,
                **({"value": _json_number(held(c.value))} if result.mode == "inputs" else {}),
                "reverse": _json_number(held(c.reverse)),
                "forward": _json_number(held(c.forward)),
                "finite_difference": _json_number(c.finite_difference),
                "fd_error": _json_number(c.fd_error),
                "step": c.step,
                "abs_error": _json_number(c.abs_error),
                "rel_error": _json_number(c.rel_error),
                "ok": c.ok,
                "verdict": c.verdict,
                "reason": c.reason,
            }
            for c in result.inputs
        ],
    }
    return json.dumps(document, indent=2, allow_nan=False) + "\n"
