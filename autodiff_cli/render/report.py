"""Renderers for an evaluation: a Rich table, plain text, JSON and CSV (and forward mode's work).

Pure functions: each returns text or a Rich renderable and never prints.
Rich is imported only by ``table``, so scripts asking for JSON don't load it.

A program can have a million variables, so plain text, JSON and CSV are built column
by column with the standard library's C functions (``float.__repr__``, ``str.ljust``,
``json``'s string encoder, ``str.join`` over ``map``) rather than a Python loop per
variable, and ``*_chunks`` give them a slice at a time so that the whole text never
has to exist at once.  The bytes are exactly those of ``json.dumps(..., indent=2)`` and
``csv.writer`` (``tests/render/test_report.py`` holds them to both, and to golden files):
at 1e5 variables this is ~8x ``json.dumps`` with an indent, which runs in Python
(``benchmarks/bench_reports.py``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from itertools import chain, repeat
from json.encoder import encode_basestring_ascii  # json.dumps's own (C) string encoder
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from ..language.program import INPUT
from .numbers import format_number, json_number

if TYPE_CHECKING:
    from rich.console import RenderableType

    from ..engine.forward import ForwardResult
    from ..execute.scalar import Evaluation

__all__ = ["COLUMNS", "Row", "csv_chunks", "json_chunks", "plain_chunks", "rows", "to_csv", "to_json",
           "to_plain", "to_table", "work_dict", "work_summary"]

COLUMNS = ("name", "kind", "op", "value", "grad")
CHUNK = 50_000  # variables per slice of the *_chunks renderers


class Row(NamedTuple):
    name: str
    kind: str
    op: str
    value: float
    grad: float


class _Columns(NamedTuple):
    """The report's variables column by column, in program order."""

    names: list[str]
    kinds: list[str]
    ops: list[str]
    values: list[float]
    grads: list[float]

    def slices(self, size: int = CHUNK) -> Iterator[_Columns]:
        for start in range(0, len(self.names), size):
            yield _Columns(*(column[start:start + size] for column in self))


def _columns(evaluation: Evaluation, wrt: Sequence[str] | None) -> _Columns:
    """Name, kind, op, value and grad of every named variable (only the ``wrt`` ones when given)."""
    variables = evaluation.program.variables
    if wrt is None and list(variables) == list(evaluation.nodes):  # every variable, in program order
        names, nodes = list(evaluation.nodes), list(evaluation.nodes.values())
        declared = list(map(attrgetter("kind"), variables.values()))
    else:
        names = list(evaluation.nodes) if wrt is None else list(wrt)
        nodes = list(map(evaluation.nodes.__getitem__, names))
        declared = list(map(attrgetter("kind"), map(variables.__getitem__, names)))
    ops = list(map(_NO_OP.get, declared, map(attrgetter("_op"), nodes)))  # "" for an input, else its op
    kinds = list(declared)
    if evaluation.output in evaluation.nodes:
        for index in _positions(names, evaluation.output):
            kinds[index] = evaluation.kind(evaluation.output)
    return _Columns(names, kinds, ops, list(map(attrgetter("data"), nodes)), list(map(attrgetter("grad"), nodes)))


_NO_OP = {INPUT: ""}


def _positions(names: list[str], name: str) -> list[int]:
    """Where ``name`` is in ``names`` (a --wrt list may repeat it)."""
    found, start = [], 0
    for _ in range(names.count(name)):
        start = names.index(name, start)
        found.append(start)
        start += 1
    return found


def rows(evaluation: Evaluation, wrt: Sequence[str] | None = None) -> list[Row]:
    """One row per named variable in program order (only ``wrt`` ones when given, even none)."""
    return list(map(Row, *_columns(evaluation, wrt)))


# --- JSON --------------------------------------------------------------------------------------


def to_json(
    evaluation: Evaluation,
    wrt: Sequence[str] | None = None,
    *,
    mode: str = "reverse",
    work: Mapping[str, Any] | None = None,
) -> str:
    """One strict JSON object: output name and value, every value, the gradients asked for.

    ``mode`` says which mode computed the gradients; ``work``, when given, is forward
    mode's comparison of the work of both modes.  The text is ``json.dumps(document,
    indent=2, allow_nan=False)`` and a newline, NaN and infinities written as strings.
    """
    return "".join(json_chunks(evaluation, wrt, mode=mode, work=work))


def json_chunks(
    evaluation: Evaluation,
    wrt: Sequence[str] | None = None,
    *,
    mode: str = "reverse",
    work: Mapping[str, Any] | None = None,
) -> Iterator[str]:
    """``to_json``'s text in slices, for writing out a big report without holding all of it."""
    every = _columns(evaluation, None)
    keys = _json_strings(every.names)  # each name encoded once, for all three objects
    if wrt is None:
        grad_keys, grads = keys, every.grads
    else:
        chosen = _columns(evaluation, wrt)
        grad_keys, grads = _json_strings(chosen.names), chosen.grads
    encoded_kinds = {kind: _json_text(kind) for kind in set(every.kinds)}
    yield (f'{{\n  "output": {_json_text(evaluation.output)},\n'
           f'  "value": {_json_value(evaluation.root.data)},\n  "values": ')
    yield from _json_object(keys, every.values, _json_numbers)
    yield ',\n  "grads": '
    yield from _json_object(grad_keys, grads, _json_numbers)
    yield ',\n  "kinds": '
    yield from _json_object(keys, every.kinds, lambda kinds: list(map(encoded_kinds.__getitem__, kinds)))
    yield f',\n  "mode": {_json_text(mode)}'
    if work is not None:
        nested = json.dumps(dict(work), indent=2, allow_nan=False).replace("\n", "\n  ")
        yield f',\n  "work": {nested}'
    yield "\n}\n"


_ENTRY, _NEXT_ENTRY = ": ", ",\n    "


def _json_object(keys: list[str], items: list[Any], texts: Any) -> Iterator[str]:
    """An object one level into the document, as json.dumps with indent=2 writes it; ``keys``
    are already JSON text, ``texts`` makes JSON text of a slice of ``items``."""
    if not keys:
        yield "{}"
        return
    yield "{\n    "
    for start in range(0, len(keys), CHUNK):
        piece = slice(start, start + CHUNK)
        # key, ": ", value, ",\n    " for every entry, flattened in C; the last separator is cut
        text = "".join(chain.from_iterable(zip(keys[piece], repeat(_ENTRY), texts(items[piece]),
                                               repeat(_NEXT_ENTRY))))
        yield text if start + CHUNK < len(keys) else text[:-len(_NEXT_ENTRY)]
    yield "\n  }"


_JSON_NUMBERS = {"nan": '"NaN"', "inf": '"Infinity"', "-inf": '"-Infinity"'}


def _json_numbers(numbers: list[float]) -> list[str]:
    """Each number as JSON text, non-finite ones as the strings ``json_number`` makes of them."""
    if not all(map(float.__instancecheck__, numbers)):
        return list(map(_json_value, numbers))  # ints or anything else: the json module decides
    texts = list(map(float.__repr__, numbers))  # what json.dumps writes for a float
    if not all(map(math.isfinite, numbers)):
        texts = [_JSON_NUMBERS.get(text, text) for text in texts]
    return texts


def _json_value(x: Any) -> str:
    return json.dumps(json_number(x), allow_nan=False)


def _json_strings(texts: list[str]) -> list[str]:
    return list(map(encode_basestring_ascii, texts))


def _json_text(text: str) -> str:
    return encode_basestring_ascii(text)


# --- CSV and plain text ----------------------------------------------------------------------


def to_csv(evaluation: Evaluation, wrt: Sequence[str] | None = None) -> str:
    """``name,kind,op,value,grad`` lines, as ``csv.writer`` writes them (numbers round-trip)."""
    return "".join(csv_chunks(evaluation, wrt))


def csv_chunks(evaluation: Evaluation, wrt: Sequence[str] | None = None) -> Iterator[str]:
    """``to_csv``'s text in slices."""
    yield ",".join(COLUMNS) + "\n"
    for part in _columns(evaluation, wrt).slices():
        fields = (part.names, part.kinds, part.ops, _texts(part.values), _texts(part.grads))
        if any(_needs_quotes(column) for column in fields[:3]):
            yield _csv_module(zip(*fields))
        else:  # name, ",", kind, ",", op, ",", value, ",", grad, "\n" for every row, flattened in C
            comma = repeat(",")
            yield "".join(chain.from_iterable(zip(fields[0], comma, fields[1], comma, fields[2], comma,
                                                  fields[3], comma, fields[4], repeat("\n"))))


def _needs_quotes(column: list[str]) -> bool:
    """Whether csv.writer would quote a field of ``column`` (numbers never need it)."""
    joined = "".join(column)
    return any(char in joined for char in ',"\r\n')


def _csv_module(lines: Any) -> str:
    import csv  # only for names with commas or quotes, which the language does not make
    import io

    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(lines)
    return buffer.getvalue()


def _texts(numbers: list[float], precision: int | None = None) -> list[str]:
    """``format_number`` of each number (round-trip text, or ``precision`` significant digits)."""
    if precision is None:
        return list(map(float.__repr__, map(float, numbers)))
    return list(map(format, numbers, repeat(f".{precision}g")))


def to_plain(evaluation: Evaluation, wrt: Sequence[str] | None = None, precision: int | None = None) -> str:
    """Aligned columns without colour or box drawing, for pipes and logs."""
    return "".join(plain_chunks(evaluation, wrt, precision))


def plain_chunks(evaluation: Evaluation, wrt: Sequence[str] | None = None,
                 precision: int | None = None) -> Iterator[str]:
    """``to_plain``'s text in slices (the columns are as wide as their widest cell anywhere)."""
    columns = _columns(evaluation, wrt)
    cells = [columns.names, columns.kinds, columns.ops,
             _texts(columns.values, precision), _texts(columns.grads, precision)]
    widths = [max(len(header), max(map(len, column), default=0)) for header, column in zip(COLUMNS, cells)]
    pads = [str.ljust, str.ljust, str.ljust, str.rjust, str.rjust]  # names left, numbers right
    header = [pad(title, width) for pad, title, width in zip(pads, COLUMNS, widths)]
    yield "  ".join(header).rstrip() + "\n"
    for start in range(0, len(columns.names), CHUNK):
        padded = [list(map(pad, column[start:start + CHUNK], repeat(width)))
                  for pad, column, width in zip(pads, cells, widths)]
        lines = map(str.rstrip, map("  ".join, zip(*padded)))
        yield "\n".join(lines) + "\n"


def _text_cells(evaluation: Evaluation, wrt: Sequence[str] | None, precision: int | None) -> list[list[str]]:
    columns = _columns(evaluation, wrt)
    return [list(line) for line in zip(columns.names, columns.kinds, columns.ops,
                                        _texts(columns.values, precision), _texts(columns.grads, precision))]


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
