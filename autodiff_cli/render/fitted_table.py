"""Tables that fit the console's width and never cut a number: eval's (``FittedTable``), and
check's and explain's (``FittedRows``).

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

__all__ = ["Column", "Entry", "FittedRows", "FittedTable", "pieces"]

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


# --- any table of text cells: check's and explain's -----------------------------------------------


@dataclass(frozen=True)
class Column:
    """A column of ``FittedRows``: its header; ``number`` cells are right-aligned and break only
    between their pieces (``, ``); ``prose`` cells (a formula, a note) may break at any space;
    other cells never break.  A ``heading`` column's cell heads its row's block in the narrowest
    layout.  A ``first`` column (prose a reader wants whole: a formula) gets its full width
    before the others share what is left."""

    header: str
    number: bool = False
    prose: bool = False
    heading: bool = False
    first: bool = False


def _words(text: str, column: Column) -> list[str]:
    """The pieces a cell may break into: its lines, then pieces or words by the column's kind."""
    found: list[str] = []
    for line in text.split("\n"):
        if column.number:
            found += pieces(line)
        elif column.prose:
            found += line.split(" ")
        else:
            found.append(line)
    return found


def _fill(text: str, column: Column, width: int) -> str:
    """A cell's lines at ``width``: each of its lines broken where the column allows."""
    out: list[str] = []
    for line in text.split("\n"):
        out += _wrap_words(_words(line, column), width) if (column.number or column.prose) else [line]
    return "\n".join(out)


def _wrap_words(words: Sequence[str], width: int) -> list[str]:
    lines: list[str] = []
    for word in words:
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


def _longest_line(text: str) -> int:
    return max(len(line) for line in text.split("\n"))


BLOCK_FIELD_INDENT = 2  # the narrowest layout: a row's fields under its heading


def _shared(least: Sequence[int], most: Sequence[int], first: Sequence[bool], spare: int) -> list[int]:
    """Column widths from their least, the ``first`` ones grown to their most while ``spare``
    lasts, then the others in proportion to what they lack."""
    widths = list(least)
    for i, wanted in enumerate(first):
        if wanted:
            grown = min(most[i] - widths[i], spare)
            widths[i] += grown
            spare -= grown
    lacking = [0 if first[i] else most[i] - widths[i] for i in range(len(widths))]
    for i, lack in enumerate(lacking):
        widths[i] += spare * lack // sum(lacking) if sum(lacking) > spare else lack
    return widths


class FittedRows:
    """A Rich renderable of ``rows`` (cells, style) under ``columns`` that fits the console's width
    without cutting a number, by the first layout that fits, widest first:

    1. the table as it is, every cell on its own lines;
    2. numbers broken between entries and prose between words, each column at least its widest
       piece wide;
    3. ``stacks``: groups of columns (by index) drawn as one, a line per member (``reverse`` over
       ``forward``), broken as in 2 if need be;
    4. no table: a row a block, its ``heading`` cells on one line and the other columns' headers
       and cells after them, packed on indented lines.
    """

    def __init__(self, columns: Sequence[Column], rows: Sequence[tuple[Sequence[str], str]], *, title: str = "",
                 caption: str = "", stacks: Sequence[Sequence[int]] = ()) -> None:
        self.columns = list(columns)
        self.rows = [(list(cells), style) for cells, style in rows]
        self.title, self.caption = title, caption
        self.stacks = [list(group) for group in stacks]

    def _stacked(self) -> tuple[list[Column], list[tuple[list[str], str]]]:
        columns = [Column("\n".join(self.columns[i].header for i in group),
                          number=all(self.columns[i].number for i in group),
                          prose=any(self.columns[i].prose for i in group)) for group in self.stacks]
        rows = [(["\n".join(cells[i] for i in group) for group in self.stacks], style) for cells, style in self.rows]
        return columns, rows

    def _layouts(self) -> list[tuple[list[Column], list[tuple[list[str], str]]]]:
        return [(self.columns, self.rows)] + ([self._stacked()] if self.stacks else [])

    def _least_block_width(self) -> int:
        headings = [i for i, column in enumerate(self.columns) if column.heading] or [0]
        widest = 0
        for cells, _ in self.rows:
            widest = max(widest, len("  ".join(cells[i] for i in headings if cells[i])))
            for i, column in enumerate(self.columns):
                if i not in headings and cells[i]:
                    words = _words(cells[i], column)
                    widest = max(widest, BLOCK_FIELD_INDENT + max(len(column.header) + 1 + len(words[0]),
                                                                  max(map(len, words))))
        return widest

    def __rich_measure__(self, console: Any, options: Any) -> Any:
        from rich.measure import Measurement

        natural = _table_width(self._natural(self.columns, self.rows))
        return Measurement(min(self._least_block_width(), natural), max(natural, len(self.title)))

    @staticmethod
    def _natural(columns: Sequence[Column], rows: Sequence[tuple[Sequence[str], str]]) -> list[int]:
        return [max([_longest_line(column.header)] + [_longest_line(cells[i]) for cells, _ in rows])
                for i, column in enumerate(columns)]

    @staticmethod
    def _least(columns: Sequence[Column], rows: Sequence[tuple[Sequence[str], str]]) -> list[int]:
        return [max([_longest_line(column.header)] + [len(word) for cells, _ in rows
                                                      for word in _words(cells[i], column)])
                for i, column in enumerate(columns)]

    def __rich_console__(self, console: Any, options: Any) -> Iterator[Any]:
        width = options.max_width
        natural = self._natural(self.columns, self.rows)
        if _table_width(natural) <= width:
            yield from self._titled(self._table(self.columns, self.rows, natural))
            return
        for columns, rows in self._layouts():
            least, most = self._least(columns, rows), self._natural(columns, rows)
            if _table_width(least) > width:
                continue
            widths = _shared(least, most, [column.first for column in columns], width - _table_width(least))
            filled = [([_fill(cell, column, w) for cell, column, w in zip(cells, columns, widths)], style)
                      for cells, style in rows]
            yield from self._titled(self._table(columns, filled, self._natural(columns, filled)))
            return
        yield from self._blocks(width)

    def _titled(self, table: Any) -> Iterator[Any]:
        """The table, with its title above and caption below as lines of their own when the table
        left them out (they are wider than it)."""
        from rich.text import Text

        if table.title is None and self.title:
            yield Text(self.title)
        yield table
        if table.caption is None and self.caption:
            yield Text(self.caption)

    def _table(self, columns: Sequence[Column], rows: Sequence[tuple[Sequence[str], str]],
               widths: Sequence[int]) -> Any:
        from rich.table import Table

        # The title and caption are lines of their own, wrapped to the console, not to a narrow table.
        table = Table(title=self.title or None, title_justify="left", caption=self.caption or None,
                      caption_justify="left")
        if _longest_line(self.title) > _table_width(widths) or _longest_line(self.caption) > _table_width(widths):
            table.title = table.caption = None
        for column, width in zip(columns, widths):
            table.add_column(column.header, justify="right" if column.number else "left", no_wrap=True,
                             min_width=width)
        for cells, style in rows:
            table.add_row(*cells, style=style)
        return table

    def _blocks(self, width: int) -> Iterator[Any]:
        from rich.text import Text

        if self.title:
            yield Text(self.title)
        headings = [i for i, column in enumerate(self.columns) if column.heading] or [0]
        room = max(1, width - BLOCK_FIELD_INDENT)
        for cells, style in self.rows:
            yield Text("  ".join(cells[i] for i in headings if cells[i]), style=style or "bold")
            lines: list[str] = []
            for i, column in enumerate(self.columns):
                if i in headings or not cells[i]:
                    continue
                words = _words(cells[i], column)
                field = [f"{column.header} {words[0]}", *words[1:]]
                text = " ".join(field)
                if lines and len(lines[-1]) + 2 + len(text) <= room:
                    lines[-1] += "  " + text
                else:
                    lines += _wrap_words(field, room)
            for line in lines:
                yield Text(" " * BLOCK_FIELD_INDENT + line, style=style, no_wrap=True, overflow="ignore")
        if self.caption:
            yield Text(self.caption)
