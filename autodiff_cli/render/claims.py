"""Renderers of checked claims (``analysis.claims``): plain text, a Rich table, JSON and CSV.

Pure: each returns text or a Rich renderable; the CLI prints it.
"""

from __future__ import annotations

import csv
import io
import json
from typing import TYPE_CHECKING, Any

from ..analysis.claims import AGREES, INCONCLUSIVE, PROVED, WRONG, ClaimResult, ClaimsReport
from .numbers import format_number, json_number

if TYPE_CHECKING:
    from rich.console import RenderableType

__all__ = ["CSV_COLUMNS", "to_csv", "to_json", "to_plain", "to_table"]

VERDICT_WORDS = {PROVED: "proved", WRONG: "WRONG", AGREES: "agrees", INCONCLUSIVE: "inconclusive"}
CSV_COLUMNS = ("claim", "where", "verdict", "point", "claimed", "correct", "difference", "points", "slip",
               "slip_message", "derivative")


def _number(x: float | None, precision: int | None) -> str:
    if x is None:
        return "undefined"
    if x.is_integer() and abs(x) < 1e16 and precision is None:
        return str(int(x))
    return format_number(x, precision)


def _claim(result: ClaimResult) -> str:
    return f"{result.label} = {result.expression}"


def _point(result: ClaimResult, precision: int | None) -> str:
    if result.counterexample is None:
        return ""
    if result.counterexample.entry is not None:  # a tensor claim: the entry that differs most
        return result.counterexample.entry
    return ", ".join(f"{name} = {_number(value, precision)}" for name, value in result.counterexample.point.items())


def _detail(result: ClaimResult, precision: int | None) -> list[str]:
    """The lines under a claim: why, where it differs, the slip, the derivative."""
    lines = []
    if result.verdict == PROVED:
        lines.append(f"  {result.reason}")
    elif result.verdict == AGREES:
        points = f"{result.points:,} point{'s' * (result.points != 1)}"
        lines.append(f"  equal at {points} ({result.domain}); not proved symbolically")
    elif result.verdict == INCONCLUSIVE:
        lines.append(f"  {result.reason}")
    if result.not_compared:
        lines.append(f"  {result.not_compared}")
    example = result.counterexample
    if example is not None:
        claimed = _number(example.claimed, precision)
        difference = "" if example.difference is None else \
            f" (difference {_number(example.difference, precision)})"
        lines.append(f"  at {_point(result, precision)}: the claim gives {claimed}, the derivative "
                     f"{_number(example.correct, precision)}{difference}")
    if result.slip is not None:
        if result.slip.kind == "unknown":
            lines.append(f"  {result.slip.message}")
        else:
            lines.append(f"  likely slip: {result.slip.message}")
            lines.append(f"  correct: {result.label} = {result.correct}")
    return lines


def _summary(report: ClaimsReport) -> str:
    counts: dict[str, int] = {}
    for result in report.results:
        counts[result.verdict] = counts.get(result.verdict, 0) + 1
    total = len(report.results)
    parts = [f"{counts[v]} {VERDICT_WORDS[v].lower()}" for v in (PROVED, AGREES, WRONG, INCONCLUSIVE) if v in counts]
    return f"{total} claim{'s' if total != 1 else ''}: {', '.join(parts)}"


def to_plain(report: ClaimsReport, precision: int | None = None) -> str:
    """Each claim with its verdict, then the lines that support it; a summary line."""
    lines = []
    for result in report.results:
        lines.append(f"{_claim(result)}: {VERDICT_WORDS[result.verdict]}")
        lines.extend(_detail(result, precision))
    lines.append(_summary(report))
    return "\n".join(lines) + "\n"


def to_table(report: ClaimsReport, precision: int | None = None) -> RenderableType:
    """A Rich table (claim, verdict, counterexample and values), the slips below it."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    table = Table(title=f"claims checked against {report.against}", title_justify="left",
                  caption=_summary(report), caption_justify="left")
    for header, justify in (("claim", "left"), ("verdict", "left"), ("at", "left"), ("claim gives", "right"),
                            ("derivative", "right"), ("difference", "right")):
        # Nothing is cut short with an ellipsis: text wraps (a long word folds), and a number
        # keeps to one line (the CLI widens the console for it: cli.console.print_rich).
        table.add_column(header, justify=justify, no_wrap=justify == "right", overflow="fold")  # type: ignore[arg-type]
    styles = {PROVED: "green", AGREES: "", WRONG: "bold red", INCONCLUSIVE: "yellow"}
    notes: list[Any] = []
    for number, result in enumerate(report.results, start=1):
        example = result.counterexample
        verdict = VERDICT_WORDS[result.verdict]
        if result.verdict == AGREES:
            verdict += f" at {result.points:,} points"
        table.add_row(
            f"{number}. {_claim(result)}", Text(verdict, style=styles[result.verdict]),
            _point(result, precision),
            "" if example is None else _number(example.claimed, precision),
            "" if example is None else _number(example.correct, precision),
            "" if example is None or example.difference is None else _number(example.difference, precision),
        )
        if result.slip is not None:
            if result.slip.kind == "unknown":
                notes.append(Text(f"{number}. {result.slip.message}"))
            else:
                notes.append(Text(f"{number}. likely slip: {result.slip.message}"))
                notes.append(Text(f"   correct: {result.label} = {result.correct}"))
        elif result.verdict == INCONCLUSIVE:
            notes.append(Text(f"{number}. {result.reason}"))
        if result.not_compared:
            notes.append(Text(f"{number}. {result.not_compared}"))
    return Group(table, *notes)


def _json_number(x: float | None) -> float | str | None:
    return None if x is None else json_number(x)


def _document(result: ClaimResult) -> dict[str, Any]:
    example = result.counterexample
    return {
        "claim": _claim(result),
        "written": result.written,
        "where": result.where,
        "label": result.label,
        "verdict": result.verdict,
        "derivative": result.correct,
        "reason": result.reason or None,
        "points": result.points,
        "domain": result.domain or None,
        "not_compared": result.not_compared or None,
        "counterexample": None if example is None else {
            "point": {name: _json_number(value) for name, value in example.point.items()},
            "claimed": _json_number(example.claimed),
            "correct": _json_number(example.correct),
            "difference": _json_number(example.difference),
            **({"entry": example.entry} if example.entry is not None else {}),
        },
        "slip": None if result.slip is None else {"kind": result.slip.kind, "message": result.slip.message},
    }


def to_json(report: ClaimsReport) -> str:
    """One JSON object: the overall verdict and one entry per claim."""
    document = {"verdict": report.verdict, "claims": [_document(r) for r in report.results]}
    return json.dumps(document, indent=2, allow_nan=False) + "\n"


def to_csv(report: ClaimsReport, precision: int | None = None) -> str:
    """One row per claim (``CSV_COLUMNS``); empty cells where a column does not apply."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for result in report.results:
        example = result.counterexample
        writer.writerow([
            _claim(result), result.where, result.verdict, _point(result, precision),
            "" if example is None else _number(example.claimed, precision),
            "" if example is None else _number(example.correct, precision),
            "" if example is None or example.difference is None else _number(example.difference, precision),
            result.points or "", "" if result.slip is None else result.slip.kind,
            "" if result.slip is None else result.slip.message, result.correct,
        ])
    return buffer.getvalue()
