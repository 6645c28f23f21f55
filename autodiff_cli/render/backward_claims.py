"""Renderers of a backward pass checked line by line (``analysis.backward_claims``): plain text, a
Rich table that fits 80 columns, JSON and CSV.  Pure: each returns text or a renderable.
"""

from __future__ import annotations

import csv
import io
import json
from typing import TYPE_CHECKING, Any

from ..analysis.backward_claims import BackwardReport, Entry, LineResult, LineVerdict
from ..analysis.claims import AGREES, INCONCLUSIVE, PROVED, WRONG
from .numbers import format_number, json_number

if TYPE_CHECKING:
    from rich.console import RenderableType

__all__ = ["CSV_COLUMNS", "to_csv", "to_json", "to_plain", "to_table"]

VERDICT_WORDS = {PROVED: "proved", AGREES: "agrees", WRONG: "WRONG", INCONCLUSIVE: "cannot be judged"}
CSV_COLUMNS = ("where", "gradient", "line", "covers", "verdict", "point", "first_entry", "entry", "claimed",
               "correct", "difference", "slip", "slip_message", "chain_verdict", "chain_from", "reason")


def _number(x: float | None, precision: int | None) -> str:
    if x is None:
        return "undefined"
    if x.is_integer() and abs(x) < 1e16 and precision is None:
        return str(int(x))
    return format_number(x, precision)


def _values(entry: Entry, precision: int | None) -> str:
    difference = "" if entry.difference is None else f" (difference {_number(entry.difference, precision)})"
    return (f"the line gives {_number(entry.claimed, precision)}, the gradient "
            f"{_number(entry.correct, precision)}{difference}")


def _differences(verdict: LineVerdict, precision: int | None) -> list[str]:
    """Where a wrong line differs: the first entry and, when another, the largest difference."""
    if verdict.first is None:  # a shape that differs (the slip says how) or no point to compare at
        return [] if verdict.slip is not None or not verdict.reason else [verdict.reason]
    if "[" not in verdict.first.entry:  # a number: one entry
        return [f"{verdict.where}: {_values(verdict.first, precision)}"]
    first = f"{verdict.where}, the first entry that differs is {verdict.first.entry}: {_values(verdict.first, precision)}"
    lines = [first]
    if verdict.largest is not None and verdict.largest.entry != verdict.first.entry:
        lines.append(f"the largest difference is at {verdict.largest.entry}: {_values(verdict.largest, precision)}")
    return lines


def _chain(result: LineResult) -> str:
    text = _chain_origin(result)
    return f"{text} ({result.chain.note})" if result.chain.note else text


def _chain_origin(result: LineResult) -> str:
    chain = result.chain
    word = VERDICT_WORDS[chain.verdict]
    if chain.verdict == AGREES:
        return word
    if chain.causes:
        lines = ", ".join(map(str, chain.causes))
        origin = f"from line{'s' * (len(chain.causes) > 1)} {lines}"
        if result.given.verdict == WRONG:
            origin = f"its own slip, and {origin}"
        return f"{word}, {origin}"
    return f"{word}, its own slip" if result.given.verdict == WRONG else word


def _heading(result: LineResult) -> str:
    covers = "" if result.covers == "the whole gradient" else f", as {result.covers}"
    return f"{result.line.where}: {result.line.written}: {VERDICT_WORDS[result.given.verdict]}{covers}"


def _summary(report: BackwardReport) -> str:
    total = len(report.results)

    def counts(verdicts: list[str]) -> str:
        found = {v: verdicts.count(v) for v in (PROVED, AGREES, WRONG, INCONCLUSIVE) if v in verdicts}
        words = {PROVED: "proved", AGREES: "agree" if found.get(AGREES, 0) != 1 else "agrees", WRONG: "wrong",
                 INCONCLUSIVE: "cannot be judged"}
        return ", ".join(f"{n} {words[v]}" for v, n in found.items())

    given = counts([r.given.verdict for r in report.results])
    chain = counts([r.chain.verdict for r in report.results])
    how = "proved where it says so, else" if any(r.given.verdict == PROVED for r in report.results) else ""
    points = f"{report.points} point{'s' * (report.points != 1)}"
    return (f"{total} line{'s' * (total != 1)}, each judged with the true gradients it uses ({how or 'sampled'} "
            f"{'sampled ' if how else ''}at {points}{'' if how else ', not proved'}): {given}; in your own chain: "
            f"{chain}")


def to_plain(report: BackwardReport, precision: int | None = None) -> str:
    """Each line with its verdict; under a line that is not right, where it differs, the slip and
    its verdict in the person's own chain; a summary."""
    out = []
    for result in report.results:
        out.append(_heading(result))
        if result.given.verdict not in (AGREES, PROVED):
            out.extend(f"  {text}" for text in _differences(result.given, precision))
            if result.given.slip is not None:
                out.append(f"  likely slip: {result.given.slip.message}")
            elif result.given.verdict == WRONG:
                out.append("  no usual slip explains the difference")
        if result.given.verdict not in (AGREES, PROVED) or result.chain.verdict != AGREES:
            out.append(f"  in your chain: {_chain(result)}")
    out.append(_summary(report))
    return "\n".join(out) + "\n"


def to_table(report: BackwardReport, precision: int | None = None) -> RenderableType:
    """A Rich table (line, gradient line, verdict with the true gradients, in your chain); the
    slips and the entries that differ below it."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    table = Table(title=f"a backward pass of {report.output}, line by line", title_justify="left",
                  caption=_summary(report), caption_justify="left", expand=True)
    table.add_column("line", no_wrap=True)
    for header, ratio in (("gradient", 5), ("with true gradients", 3), ("in your chain", 3)):
        table.add_column(header, overflow="fold", ratio=ratio)
    styles = {PROVED: "green", AGREES: "green", WRONG: "bold red", INCONCLUSIVE: "yellow"}
    notes: list[Any] = []
    for result in report.results:
        given = VERDICT_WORDS[result.given.verdict]
        if result.given.slip is not None and result.given.verdict == WRONG:
            given += f": {result.given.slip.kind}"
        table.add_row(str(result.line.line), f"{result.line.gradient} {result.line.operator} {result.line.rhs}",
                      Text(given, style=styles[result.given.verdict]),
                      Text(_chain(result), style=styles[result.chain.verdict]))
        if result.given.verdict not in (AGREES, PROVED):
            slip = result.given.slip
            said = [f"likely slip: {slip.message}"] if slip is not None else []
            notes.append(Text(f"line {result.line.line}: " + "; ".join(said + _differences(result.given, precision))))
    return Group(table, *notes)


def _entry(entry: Entry | None) -> dict[str, Any] | None:
    if entry is None:
        return None
    return {"entry": entry.entry, "claimed": None if entry.claimed is None else json_number(entry.claimed),
            "correct": json_number(entry.correct),
            "difference": None if entry.difference is None else json_number(entry.difference)}


def _verdict(verdict: LineVerdict) -> dict[str, Any]:
    return {"verdict": verdict.verdict, "reason": verdict.reason or None, "point": verdict.where or None,
            "first": _entry(verdict.first), "largest": _entry(verdict.largest),
            "slip": None if verdict.slip is None else {"kind": verdict.slip.kind, "message": verdict.slip.message},
            "from_lines": verdict.causes, "note": verdict.note or None}


def to_json(report: BackwardReport) -> str:
    """One JSON object: the overall verdict and, for each line, both readings."""
    document = {
        "verdict": report.verdict, "output": report.output, "points": report.points,
        "lines": [{"where": r.line.where, "line": r.line.line, "gradient": r.line.gradient,
                   "variable": r.line.variable, "operator": r.line.operator, "expression": r.line.rhs,
                   "covers": r.covers, "true_inputs": _verdict(r.given), "your_chain": _verdict(r.chain)}
                  for r in report.results],
    }
    return json.dumps(document, indent=2, allow_nan=False) + "\n"


def to_csv(report: BackwardReport, precision: int | None = None) -> str:
    """One row per line (``CSV_COLUMNS``); empty cells where a column does not apply."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for r in report.results:
        given = r.given
        largest = given.largest
        writer.writerow([
            r.line.where, r.line.gradient, r.line.written, r.covers, given.verdict, given.where,
            "" if given.first is None else given.first.entry,
            "" if largest is None else largest.entry,
            "" if largest is None else _number(largest.claimed, precision),
            "" if largest is None else _number(largest.correct, precision),
            "" if largest is None or largest.difference is None else _number(largest.difference, precision),
            "" if given.slip is None else given.slip.kind, "" if given.slip is None else given.slip.message,
            r.chain.verdict, " ".join(map(str, r.chain.causes)), given.reason or r.chain.reason,
        ])
    return buffer.getvalue()
