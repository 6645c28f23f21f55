"""A value-and-gradient table that fits the console's width and never cuts a number.

``eval`` shows each variable's labels (name, kind, op, and for tensors the shape) beside its
value and gradient.  When the whole table does not fit the width Rich gives it, this renderable
picks, widest first:

1. value and gradient side by side, each on one line (the table as it always was);
2. side by side, each cell wrapped between its entries, and a tensor too long for a few lines
   shown as its summary (mean, std, min, max) instead;
3. value stacked over gradient, in one number column;
4. no table: one variable a block, one line for the labels and one each for value and gradient.

A cell breaks only between its pieces (a number with its brackets and comma, or a summary's
``mean 0.499,``), so a number is whole in every layout; a piece wider than the console overflows
the line instead of being cut (``__rich_measure__`` asks for that much width).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Entry", "FittedTable", "pieces"]

MAX_LINES = 4  # a whole tensor that wraps to more lines than this is shown as its summary
BLOCK_INDENT = 8  # layout 4: the value and grad lines under a variable's labels


@dataclass(frozen=True)
class Entry:
    """One variable: its label cells, its value and gradient texts, and (for a tensor shown whole)
    the shorter summaries that may replace them."""

    labels: tuple[str, ...]
    value: str
    grad: str
    style: str = ""
    short_value: str | None = None
    short_grad: str | None = None


def pieces(text: str) -> list[str]:
    """The places a cell may break: after each ``, `` (a list's entries, a summary's fields)."""
    parts = text.split(", ")
    return [part + "," for part in parts[:-1]] + parts[-1:] if text else [""]


def _wrap(text: str, width: int) -> list[str]:
    lines: list[str] = []
    for piece in pieces(text):
        if lines and len(lines[-1]) + 1 + len(piece) <= width:
            lines[-1] += " " + piece
        else:
            lines.append(piece)
    return lines


def _widest_piece(texts: Sequence[str]) -> int:
    return max((len(piece) for text in texts for piece in pieces(text)), default=0)


def _chosen(full: str, short: str | None, width: int) -> list[str]:
    """The cell's lines at ``width``: whole if it fits in ``MAX_LINES`` lines, else the summary."""
    lines = _wrap(full, width)
    if short is None or (len(lines) <= MAX_LINES and max(map(len, lines)) <= width):
        return lines
    return _wrap(short, width)


def _table_width(widths: Sequence[int]) -> int:
    """A Rich table's width with the default box: a space each side of a cell, a rule between."""
    return sum(widths) + 3 * len(widths) + 1


class FittedTable:
    """A Rich renderable; ``one_line`` is the table of layout 1 (built by the caller, so that a
    table that fits is exactly the table it always was)."""

    def __init__(self, title: str, headers: Sequence[str], entries: Sequence[Entry], one_line: Any) -> None:
        self.title = title
        self.headers = tuple(headers)
        self.entries = list(entries)
        self.one_line = one_line

    def _label_widths(self) -> list[int]:
        return [max([len(header)] + [len(entry.labels[i]) for entry in self.entries])
                for i, header in enumerate(self.headers)]

    def _least_width(self) -> int:
        """Layout 4's width: the labels' line, or the widest piece under its indent."""
        labels = max((len("  ".join(entry.labels)) for entry in self.entries), default=0)
        texts = [text for entry in self.entries for text in (entry.value, entry.grad, entry.short_value or "",
                                                                 entry.short_grad or "")]
        return max(labels, BLOCK_INDENT + _widest_piece(texts), len(self.title.split("    ")[0]))

    def __rich_measure__(self, console: Any, options: Any) -> Any:
        from rich.measure import Measurement

        natural = Measurement.get(console, options, self.one_line).maximum
        return Measurement(min(self._least_width(), natural), natural)

    def __rich_console__(self, console: Any, options: Any) -> Iterator[Any]:
        width = options.max_width
        if _natural_width(console, options, self.one_line) <= width:
            yield self.one_line
            return
        labels = self._label_widths()
        side_by_side = self._side_by_side(width - _table_width([*labels, 0, 0]))
        if side_by_side is not None:
            yield side_by_side
            return
        stacked = self._stacked(width - _table_width([*labels, len("value"), 0]))
        if stacked is not None:
            yield stacked
            return
        yield from self._blocks(width)

    def _number_min(self, full: list[str], short: list[str | None], header: str) -> int:
        """The narrowest a number column may be: its header, and every piece of what it must show
        (the summary where there is one, else the whole text)."""
        return max(len(header), _widest_piece([s if s is not None else f for f, s in zip(full, short)]))

    def _side_by_side(self, room: int) -> Any:
        values, grads = [e.value for e in self.entries], [e.grad for e in self.entries]
        least = [self._number_min(values, [e.short_value for e in self.entries], "value"),
                 self._number_min(grads, [e.short_grad for e in self.entries], "grad")]
        if sum(least) > room:
            return None
        natural = [max(map(len, values + ["value"])), max(map(len, grads + ["grad"]))]
        spare = room - sum(least)
        wanted = [max(0, n - m) for n, m in zip(natural, least)]
        extra = [spare * w // max(1, sum(wanted)) if sum(wanted) > spare else w for w in wanted]
        widths = [m + e for m, e in zip(least, extra)]
        rows = [(entry, ["\n".join(_chosen(entry.value, entry.short_value, widths[0])),
                         "\n".join(_chosen(entry.grad, entry.short_grad, widths[1]))]) for entry in self.entries]
        return self._table(("value", "grad"), rows, widths)

    def _stacked(self, room: int) -> Any:
        texts = [(e.value, e.short_value) for e in self.entries] + [(e.grad, e.short_grad) for e in self.entries]
        least = max(len("value / grad"), _widest_piece([short if short is not None else full
                                                        for full, short in texts]))
        if least > room:
            return None
        natural = max(len(full) for full, _ in texts)
        width = min(room, max(least, natural))
        rows = []
        for entry in self.entries:
            rows.append((entry, ["value", "\n".join(_chosen(entry.value, entry.short_value, width))]))
            rows.append((Entry(("",) * len(entry.labels), "", "", entry.style),
                         ["grad", "\n".join(_chosen(entry.grad, entry.short_grad, width))]))
        return self._table(("", "value / grad"), rows, [len("value"), width], end_section_every=2)

    def _table(self, headers: Sequence[str], rows: list[tuple[Entry, list[str]]], widths: Sequence[int],
               end_section_every: int = 0) -> Any:
        from rich.table import Table

        table = Table(title=self.title, title_justify="left")
        for header in self.headers:
            table.add_column(header, no_wrap=True)
        for column, (header, width) in enumerate(zip(headers, widths)):
            used = max([len(header)] + [len(line) for _, cells in rows for line in cells[column].split("\n")])
            table.add_column(header, justify="right" if header else "left", no_wrap=True, width=min(width, used))
        for number, (entry, cells) in enumerate(rows, 1):
            table.add_row(*entry.labels, *cells, style=entry.style,
                          end_section=bool(end_section_every) and number % end_section_every == 0
                          and number < len(rows))
        return table

    def _blocks(self, width: int) -> Iterator[Any]:
        from rich.text import Text

        yield Text(self.title)
        room = max(1, width - BLOCK_INDENT)
        for entry in self.entries:
            yield Text("  ".join(label for label in entry.labels if label), style=entry.style)
            for label, full, short in (("value", entry.value, entry.short_value),
                                       ("grad", entry.grad, entry.short_grad)):
                for number, line in enumerate(_chosen(full, short, room)):
                    head = f"  {label}".ljust(BLOCK_INDENT) if number == 0 else " " * BLOCK_INDENT
                    yield Text(head + line, no_wrap=True, overflow="ignore")


def _natural_width(console: Any, options: Any, renderable: Any) -> int:
    """The width ``renderable`` takes when nothing in it wraps."""
    from rich.measure import Measurement

    return Measurement.get(console, options.update_width(1 << 16), renderable).maximum
