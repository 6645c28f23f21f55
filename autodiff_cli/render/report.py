"""``eval``'s report of a run (``execute.run.Run``): a Rich table, plain text, JSON and CSV.

Pure functions: each returns text or a Rich renderable and never prints.  Rich is imported only
by the tables and NumPy only for a run of tensors, so scripts asking for JSON load neither.

The entries are ``table(run)``, ``chunks(run, format)`` and ``work_note(run)``; the run's shapes
choose the form, never the caller:

* **Numbers only** (every value a float64 number: the engine ran it).  One line per variable,
  ``name, kind, op, value, grad``.  A program can have a million variables, so plain text, JSON
  and CSV are built column by column with the standard library's C functions
  (``float.__repr__``, ``str.ljust``, ``json``'s string encoder, ``str.join`` over ``map``)
  rather than a Python loop per variable, a slice at a time so that the whole text never has
  to exist at once.  The bytes are exactly those of ``json.dumps(..., indent=2)`` and
  ``csv.writer`` (``tests/render/test_report.py`` holds them to both, and to golden files): at
  1e5 variables this is ~8x ``json.dumps`` with an indent (``benchmarks/bench_reports.py``).
  These functions also take an ``Evaluation`` directly (``to_json``, ``csv_chunks``...).
* **Tensors** (any other run).  Each variable has a shape (``[]`` for a number).  A small
  tensor is shown whole; a larger one as its mean, standard deviation, minimum and maximum
  (JSON and CSV always hold every entry).  The derivative column is the gradient of a number
  output, each the shape of its variable; for a vector output it is the Jacobian: one row per
  entry of the output.  As documented in docs/tensors.md: JSON has ``output``, ``value``,
  ``shape``; ``values``, ``shapes``, ``kinds`` by name; then ``grads`` by name (a number
  output), or ``jacobian`` (a vector output): ``outputs`` (the output's entries), ``inputs``
  (every entry of every input, ``W[0, 1]``) and ``rows``, one row per output entry and one
  column per input entry.  CSV has one line per entry, ``name,kind,op,index,value,grad``, where
  ``index`` is the entry's place (``0 1`` for row 0, column 1; empty for a number); with a
  Jacobian the ``grad`` column becomes one column per output entry, ``d y[0]``, ``d y[1]``...

Both forms share the title and derivative header, the number texts, the row styles and
forward mode's note of the work.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from itertools import chain, repeat
from json.encoder import encode_basestring_ascii  # json.dumps's own (C) string encoder
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from .numbers import format_number, json_number

if TYPE_CHECKING:
    from rich.console import RenderableType

    from ..engine.forward import ForwardResult
    from ..execute.run import Run
    from ..execute.scalar import Evaluation

__all__ = ["COLUMNS", "SHOWN_WHOLE", "Row", "chunks", "csv_chunks", "json_chunks", "json_value", "plain_chunks",
           "rows", "table", "tensor_summary", "tensor_text", "to_csv", "to_json", "to_plain", "to_table",
           "value_text", "work_dict", "work_note", "work_summary"]

# --- the report of a run: one entry per layout ---------------------------------------------------


def table(run: Run, precision: int | None = None) -> RenderableType:
    """The run as a Rich table that fits the console (``fitted_table``), forward mode's work below."""
    if run.numbers_only:
        return to_table(run.number_graph(), run.wrt, precision, note=work_note(run))
    return _with_note(_tensor_table(run, precision), work_note(run))


def chunks(run: Run, output_format: str, precision: int | None = None) -> Iterator[str]:
    """The run as ``plain`` text, ``json`` or ``csv``, a slice at a time (a run of numbers can be a
    million lines long).  Forward mode's work is in the JSON document; ``work_note`` gives it for
    the others."""
    if run.numbers_only:
        evaluation = run.number_graph()
        if output_format == "json":
            return json_chunks(evaluation, run.wrt, mode=run.mode, work=_work(run))
        if output_format == "csv":
            return csv_chunks(evaluation, run.wrt)
        return plain_chunks(evaluation, run.wrt, precision)
    if output_format == "json":
        return iter([_tensor_json(run)])
    if output_format == "csv":
        return iter([_tensor_csv(run)])
    return iter([_tensor_plain(run, precision)])


def work_note(run: Run) -> str | None:
    """Forward mode's one line comparing the work of both modes (None in reverse mode)."""
    if run.mode != "forward":
        return None
    if run.forward_result is not None:
        return work_summary(run.forward_result)
    return None if run.evaluation is not None else _tensor_work_summary(run)


def _work(run: Run) -> dict[str, object] | None:
    """Forward mode's work as data: the engine's node visits, or the interpreter's passes."""
    if run.mode != "forward":
        return None
    if run.forward_result is not None:
        return work_dict(run.forward_result)
    return None if run.evaluation is not None else _tensor_work(run)


# --- shared by both forms: the title, the derivative's header, number texts, row styles ------------


def _derivative_header(output: str, jacobian: bool = False, dtype: str = "float64") -> str:
    """``dy/d name``, and what kind of derivative it is when it is not a gradient in float64."""
    return (f"d{output}/d name" + (" (Jacobian: one row per entry of the output)" if jacobian else "")
            + (f", in {dtype}" if dtype != "float64" else ""))


def _title(output: str, value: str, header: str) -> str:
    return f"{output} = {value}    (grad = {header})"


def _with_note(table: Any, note: str | None) -> RenderableType:
    """``table``, and ``note`` as a paragraph below it (wrapped at the console's width)."""
    if note is None:
        return table
    from rich.console import Group
    from rich.text import Text

    return Group(table, Text(note))


def value_text(value: Any, precision: int | None = None) -> str:
    """A value in a report's text: a number as ``format_number`` writes it, a tensor whole when
    small, else its summary (``tensor_text``)."""
    if isinstance(value, (float, int)):
        return format_number(value, precision)
    # Shortest text stands in for a float32 number only when no digits are asked for: padded out
    # to --precision it would show the decimal's digits (0.10000000000000001), not float32's own.
    return tensor_text(_shown(value) if precision is None else _exact(value), precision)


def json_value(value: Any) -> Any:
    """A number or an array (nested lists) as JSON holds it, NaN and infinities as strings."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, list):
        return [json_value(item) for item in value]
    return json_number(value)


# Rows styled by kind: inputs as what is given, the output as what is asked.
_KIND_STYLES = {"input": "cyan", "intermediate": "", "output": "bold magenta"}


# --- numbers only: the engine's run, column by column ------------------------------------------------

COLUMNS = ("name", "kind", "op", "value", "grad")
# Variables per slice of the *_chunks renderers.  Each slice's nodes are read once per column,
# so a slice small enough to stay in the CPU's cache between those passes is ~13% faster than
# 50,000 (bench_reports.py); below a few thousand the per-slice work starts to show.
CHUNK = 8_192
KEPT_CELLS = 200_000  # past this many variables, plain text keeps its numbers packed between its passes


class Row(NamedTuple):
    name: str
    kind: str
    op: str
    value: float
    grad: float


class _Columns(NamedTuple):
    """Some of the report's variables column by column, in program order."""

    names: list[str]
    kinds: list[str]
    ops: list[str]
    values: list[float]
    grads: list[float]


def _names(evaluation: Evaluation, wrt: Sequence[str] | None) -> list[str]:
    return list(evaluation.nodes) if wrt is None else list(wrt)


def _slices(names: list[str]) -> Iterator[list[str]]:
    """``names`` a slice at a time: the columns of a million variables never exist at once."""
    for start in range(0, len(names), CHUNK):
        yield names[start:start + CHUNK]


class _Lookup:
    """The nodes and variables of a slice of names, and where the output is in it.  When the
    names are all the evaluation's, in order, slices of two lists are taken instead of looking
    each name up."""

    def __init__(self, evaluation: Evaluation, names: list[str]) -> None:
        self.evaluation = evaluation
        nodes, variables = evaluation.nodes, evaluation.program.variables
        # Lists compare item by item in C, an identical name in one step.
        self.in_order = len(names) == len(nodes) == len(variables) and names == list(nodes) == list(variables)
        self.nodes = list(nodes.values()) if self.in_order else []
        self.variables = list(variables.values()) if self.in_order else []
        self.start = 0
        self.output_at = -1
        if self.in_order and names:  # each name once; the output is most often last: look from the end
            self.output_at = len(names) - 1 - names[::-1].index(evaluation.output)

    def take(self, part: list[str]) -> tuple[list[Any], list[Any], list[int]]:
        """The nodes and variables of the next slice, ``part``, and the output's places in it."""
        if self.in_order:  # the next len(part) of each, without hashing a name
            start = self.start
            self.start = end = start + len(part)
            places = [self.output_at - start] if start <= self.output_at < end else []
            return self.nodes[start:end], self.variables[start:end], places
        evaluation = self.evaluation
        return (list(map(evaluation.nodes.__getitem__, part)),
                list(map(evaluation.program.variables.__getitem__, part)),
                _positions(part, evaluation.output))


def _columns(evaluation: Evaluation, names: list[str], wanted: str = "kinds ops values grads",
             lookup: _Lookup | None = None, texts: bool = False) -> _Columns:
    """Kind, op, value and grad of each of ``names`` (those ``wanted``; the others are left empty);
    with ``texts``, values and grads as ``format_number`` writes them."""
    nodes, variables, output_places = (lookup or _Lookup(evaluation, [])).take(names)
    kinds = []
    if "kinds" in wanted:
        kinds = list(map(attrgetter("kind"), variables))
        for index in output_places:
            kinds[index] = evaluation.kind(evaluation.output)
    # An input's node is a leaf, whose op is "".
    ops = list(map(attrgetter("_op"), nodes)) if "ops" in wanted else []
    column = _number_texts if texts else _numbers
    values = column(nodes, "data") if "values" in wanted else []
    grads = column(nodes, "grad") if "grads" in wanted else []
    return _Columns(names, kinds, ops, values, grads)


def _numbers(nodes: list[Any], attribute: str) -> list[Any]:
    return list(map(attrgetter(attribute), nodes))


def _number_texts(nodes: list[Any], attribute: str) -> list[str]:
    """``_texts(_numbers(nodes, attribute))`` in one pass over the nodes, while they are in cache."""
    try:
        return list(map(float.__repr__, map(attrgetter(attribute), nodes)))
    except TypeError:  # ints from the Python API
        return _texts(_numbers(nodes, attribute))


def _positions(names: list[str], name: str) -> list[int]:
    """Where ``name`` is in ``names`` (a --wrt list may repeat it), in one scan."""
    found, start = [], 0
    try:
        while True:
            start = names.index(name, start)
            found.append(start)
            start += 1
    except ValueError:
        return found


def rows(evaluation: Evaluation, wrt: Sequence[str] | None = None) -> list[Row]:
    """One row per named variable in program order (only ``wrt`` ones when given, even none)."""
    return list(map(Row, *_columns(evaluation, _names(evaluation, wrt))))


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
    names = _names(evaluation, None)
    grad_names = names if wrt is None else list(dict.fromkeys(wrt))  # an object has each key once
    yield (f'{{\n  "output": {_json_text(evaluation.output)},\n'
           f'  "value": {_json_value(evaluation.root.data)},\n  "values": ')
    yield from _json_object(evaluation, names, "values")
    yield ',\n  "grads": '
    yield from _json_object(evaluation, grad_names, "grads")
    yield ',\n  "kinds": '
    yield from _json_object(evaluation, names, "kinds")
    yield f',\n  "mode": {_json_text(mode)}'
    if work is not None:
        nested = json.dumps(dict(work), indent=2, allow_nan=False).replace("\n", "\n  ")
        yield f',\n  "work": {nested}'
    yield "\n}\n"


_ENTRY, _NEXT_ENTRY = ": ", ",\n    "


def _json_object(evaluation: Evaluation, names: list[str], column: str) -> Iterator[str]:
    """The object of each name's ``column`` (values, grads or kinds) one level into the
    document, as json.dumps with indent=2 writes it."""
    if not names:
        yield "{}"
        return
    yield "{\n    "
    last = len(names) - 1
    lookup = _Lookup(evaluation, names)
    for start, part in zip(range(0, len(names), CHUNK), _slices(names)):
        items = getattr(_columns(evaluation, part, column, lookup), column)
        texts = _json_strings(items) if column == "kinds" else _json_numbers(items)
        # key, ": ", value, ",\n    " for every entry, flattened in C; the last separator is cut.
        # Names that need no escaping (all the language makes) go in between quotes as they are.
        if _plain_keys(part):
            pieces = zip(repeat('"'), part, repeat('"' + _ENTRY), texts, repeat(_NEXT_ENTRY))
        else:
            pieces = zip(_json_strings(part), repeat(_ENTRY), texts, repeat(_NEXT_ENTRY))  # type: ignore[assignment]
        text = "".join(chain.from_iterable(pieces))
        yield text if start + len(part) <= last else text[:-len(_NEXT_ENTRY)]
    yield "\n  }"


_JSON_NUMBERS = {"nan": '"NaN"', "inf": '"Infinity"', "-inf": '"-Infinity"'}
_ESCAPED = re.compile(r'["\\\x00-\x1f]')  # what json.dumps escapes in ASCII text


def _plain_keys(names: list[str]) -> bool:
    """Whether json.dumps would write each of ``names`` as it is, between quotes."""
    joined = "".join(names)
    return joined.isascii() and _ESCAPED.search(joined) is None


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
    names = _names(evaluation, wrt)
    lookup = _Lookup(evaluation, names)
    for part_names in _slices(names):
        part = _columns(evaluation, part_names, lookup=lookup, texts=True)
        fields = (part.names, part.kinds, part.ops, part.values, part.grads)
        if _needs_quotes(part.names) or _needs_quotes(part.ops):  # kinds are words of a fixed few
            yield _csv_module(zip(*fields))
        else:  # each row's five fields joined by commas, the rows by newlines, in C
            yield "\n".join(map(",".join, zip(*fields)))
            yield "\n"


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
        try:
            return list(map(float.__repr__, numbers))
        except TypeError:  # ints from the Python API: checked only then, a pass saved otherwise
            return list(map(float.__repr__, map(float, numbers)))
    return list(map(format, numbers, repeat(f".{precision}g")))


def to_plain(evaluation: Evaluation, wrt: Sequence[str] | None = None, precision: int | None = None) -> str:
    """Aligned columns without colour or box drawing, for pipes and logs."""
    return "".join(plain_chunks(evaluation, wrt, precision))


def plain_chunks(evaluation: Evaluation, wrt: Sequence[str] | None = None,
                 precision: int | None = None) -> Iterator[str]:
    """``to_plain``'s text in slices.  Every column is as wide as its widest cell anywhere, so
    the cells are measured before any is written.  Past ``KEPT_CELLS`` variables each slice's
    numbers are kept as one string apiece, split again when written: formatting them twice
    would cost more than all the rest, and a string per cell ~100 MB for a million."""
    names = _names(evaluation, wrt)
    pads = [str.ljust, str.ljust, str.ljust, str.rjust, str.rjust]  # names left, numbers right
    widths = [len(title) for title in COLUMNS]
    packed = len(names) > KEPT_CELLS
    kept: list[list[Any]] = []
    lookup = _Lookup(evaluation, names)
    for part in _slices(names):
        cells: list[Any] = _plain_cells(evaluation, part, precision, lookup)
        for index, column in enumerate(cells):
            widths[index] = max(widths[index], max(map(len, column), default=0))
        if packed:  # a number's text has no line break, so the join splits back exactly
            cells[3:] = ["\n".join(cells[3]), "\n".join(cells[4])]
        kept.append(cells)
    header = [pad(title, width) for pad, title, width in zip(pads, COLUMNS, widths)]
    yield "  ".join(header).rstrip() + "\n"
    for cells in kept:
        if packed:
            cells[3:] = [cells[3].split("\n"), cells[4].split("\n")]
        padded = [list(map(pad, column, repeat(width))) for pad, column, width in zip(pads, cells, widths)]
        yield "\n".join(map(str.rstrip, map("  ".join, zip(*padded)))) + "\n"


def _plain_cells(evaluation: Evaluation, names: list[str], precision: int | None,
                 lookup: _Lookup | None = None) -> list[list[str]]:
    if precision is None:
        columns = _columns(evaluation, names, lookup=lookup, texts=True)
        return [columns.names, columns.kinds, columns.ops, columns.values, columns.grads]
    columns = _columns(evaluation, names, lookup=lookup)
    return [columns.names, columns.kinds, columns.ops, _texts(columns.values, precision),
            _texts(columns.grads, precision)]


def _text_cells(evaluation: Evaluation, wrt: Sequence[str] | None, precision: int | None) -> list[list[str]]:
    return [list(line) for line in zip(*_plain_cells(evaluation, _names(evaluation, wrt), precision))]



def to_table(
    evaluation: Evaluation,
    wrt: Sequence[str] | None = None,
    precision: int | None = None,
    note: str | None = None,
) -> RenderableType:
    """A Rich table, and ``note`` below it; number columns never shrink, so digits are never cut."""
    title = _title(evaluation.output, format_number(evaluation.root.data, precision),
                   _derivative_header(evaluation.output))
    return _with_note(fitted_cells_table(title, ("name", "kind", "op"), _text_cells(evaluation, wrt, precision)),
                      note)


def fitted_cells_table(title: str, text_columns: Sequence[str], cells: list[list[str]],
                       summaries: list[tuple[str | None, str | None]] | None = None,
                       styles: dict[str, str] | None = None) -> Any:
    """``cells_table`` when it fits the console's width, else a narrower layout of the same cells
    (``fitted_table``); ``summaries`` are the shorter texts that may stand for a value or grad."""
    from .fitted_table import Entry, FittedTable

    styles = _KIND_STYLES if styles is None else styles
    labels = len(text_columns)
    shorter = summaries or [(None, None)] * len(cells)
    entries = [Entry(tuple(line[:labels]), line[labels], line[labels + 1], styles.get(line[1], ""), *short)
               for line, short in zip(cells, shorter)]
    return FittedTable(title, text_columns, entries, cells_table(title, text_columns, cells, styles))


def cells_table(title: str, text_columns: Sequence[str], cells: list[list[str]],
                styles: dict[str, str] | None = None) -> Any:
    """A Rich table of ``text_columns`` (the second is the kind, which styles the row) and then
    right-aligned value and grad columns as wide as their widest cell, so digits are never cut."""
    from rich.table import Table

    styles = _KIND_STYLES if styles is None else styles

    table = Table(title=title, title_justify="left")
    for header in text_columns:
        table.add_column(header, no_wrap=True)
    for index, header in ((len(text_columns), "value"), (len(text_columns) + 1, "grad")):
        width = max([len(header)] + [len(line[index]) for line in cells])
        table.add_column(header, justify="right", no_wrap=True, min_width=width)
    for line in cells:
        table.add_row(*line, style=styles.get(line[1], ""))
    return table


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


# --- tensors: any other run, a line per variable with its shape -----------------------------------

SHOWN_WHOLE = 12  # a tensor of at most this many entries is shown whole in the table


def _shown(array: Any) -> Any:
    """An array as float64 numbers that print in the array's own precision: a float32 entry as its
    shortest float32 text (1.1, not 1.100000023841858), so float32 shows no digits it does not hold."""
    import numpy as np

    array = np.asarray(array)
    if array.dtype != np.float32:
        return array
    return np.array([float(str(v)) for v in array.ravel()], dtype=np.float64).reshape(array.shape)


def _exact(array: Any) -> Any:
    """An array's numbers as the float64 values they are (a float32 entry exactly)."""
    import numpy as np

    return np.asarray(array, dtype=np.float64)


def tensor_text(array: Any, precision: int | None) -> str:
    """A tensor in a table cell: whole when small, else a summary."""
    if array.ndim == 0:
        return format_number(float(array), precision)
    if array.size <= SHOWN_WHOLE:
        return _nested_text(array.tolist(), precision)
    return tensor_summary(array, precision)


def tensor_summary(array: Any, precision: int | None) -> str:
    """``mean 0.499, std 0.9853, min -1.887, max 1.606``: four significant digits unless asked."""
    digits = 4 if precision is None else precision
    return (f"mean {format_number(float(array.mean()), digits)}, std {format_number(float(array.std()), digits)}, "
            f"min {format_number(float(array.min()), digits)}, max {format_number(float(array.max()), digits)}")


def _shorter(array: Any, precision: int | None) -> str | None:
    """The summary that may stand for a tensor shown whole, where a table is too narrow for it."""
    return tensor_summary(array, precision) if 0 < array.ndim and 0 < array.size <= SHOWN_WHOLE else None


def _nested_text(value: Any, precision: int | None) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_nested_text(item, precision) for item in value) + "]"
    return format_number(value, precision)


def _tensor_value(run: Run, name: str, precision: int | None = None) -> Any:
    return _shown(run.value(name)) if precision is None else _exact(run.value(name))


def _tensor_derivatives(run: Run, precision: int | None = None) -> dict[str, Any]:
    held = _shown if precision is None else _exact  # as value_text chooses
    return {name: held(d) for name, d in run.tensors.derivatives.items()}  # type: ignore[union-attr]


def _shape(shape: Sequence[int]) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


def _tensor_header(run: Run) -> str:
    return _derivative_header(run.output, run.jacobian, run.dtype)


def _tensor_cells(run: Run, names: Sequence[str], precision: int | None) -> list[list[str]]:
    derivatives = _tensor_derivatives(run, precision)
    return [[name, run.kind(name), run.op_label(name), _shape(run.shape(name)),
             tensor_text(_tensor_value(run, name, precision), precision),
             tensor_text(derivatives[name], precision) if name in derivatives else ""]
            for name in names]


def _tensor_names(run: Run) -> list[str]:
    """The variables reported: every one, as the engine's report lists them (those computed after
    the output with a derivative of 0), or those differentiated (``wrt``: the names asked for,
    forward mode's inputs).  A run with a tensor in it lists the output beside them too, its
    derivative the identity (docs/tensors.md); a run of numbers lists what the engine's run of the
    same program lists, in the same order (float32 differs from float64 in its digits only)."""
    variables = run.program.variables
    if run.wrt is None:
        return list(variables)
    if all(not run.shape(name) for name in variables):
        return list(run.wrt)
    return [name for name in variables if name in run.wrt or name == run.output]


def _jacobian_columns(run: Run, names: Sequence[str]) -> list[str]:
    """The variables whose entries are a Jacobian's columns in JSON: those differentiated (every
    input, unless --wrt names others)."""
    if run.wrt is None:
        return [name for name in names if run.kind(name) == "input"]
    return [name for name in names if name in run.wrt]


def _tensor_table(run: Run, precision: int | None = None) -> RenderableType:
    """A Rich table that fits the console: at a narrow width a small tensor shown whole gives way
    to its summary, the gradient goes under the value, or each variable takes a block of lines
    (``render.fitted_table``); a number is never cut."""
    title = _title(run.output, tensor_text(_tensor_value(run, run.output, precision), precision), _tensor_header(run))
    names = _tensor_names(run)
    derivatives = _tensor_derivatives(run, precision)
    summaries = [(_shorter(_tensor_value(run, name, precision), precision),
                  _shorter(derivatives[name], precision) if name in derivatives else None)
                 for name in names]
    return fitted_cells_table(title, ("name", "kind", "op", "shape"), _tensor_cells(run, names, precision),
                              summaries)


def _tensor_plain(run: Run, precision: int | None = None) -> str:
    """The table's columns as aligned text, with no box: for pipes and logs."""
    header = ["name", "kind", "op", "shape", "value", "grad"]
    lines = [header, *_tensor_cells(run, _tensor_names(run), precision)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in lines]
    return "\n".join([f"# grad = {_tensor_header(run)}", *text]) + "\n"


def _entries(name: str, shape: Sequence[int]) -> list[str]:
    """``W[0, 0]``, ``W[0, 1]``... in row-major order; a number is its name."""
    import itertools

    if not shape:
        return [name]
    return [f"{name}[{', '.join(map(str, index))}]" for index in itertools.product(*map(range, shape))]


def _tensor_json(run: Run) -> str:
    output = run.output
    names = _tensor_names(run)
    document: dict[str, Any] = {
        "output": output,
        "value": json_value(_tensor_value(run, output)),
        "shape": list(run.shape(output)),
        "values": {name: json_value(_tensor_value(run, name)) for name in names},
        "shapes": {name: list(run.shape(name)) for name in names},
        "kinds": {name: run.kind(name) for name in names},
    }
    if run.jacobian:
        inputs = _jacobian_columns(run, names)
        document["jacobian"] = {
            "outputs": _entries(output, run.shape(output)),
            "inputs": [entry for name in inputs for entry in _entries(name, run.shape(name))],
            "rows": [json_value(_shown(row)) for row in _jacobian_rows(run, inputs)],
        }
    else:
        derivatives = _tensor_derivatives(run)
        document["grads"] = {name: json_value(derivatives[name]) for name in names if name in derivatives}
    document["mode"] = run.mode
    if run.dtype != "float64":
        document["dtype"] = run.dtype
    if run.mode == "forward":
        document["work"] = _tensor_work(run)
    return json.dumps(document, indent=2) + "\n"


def _tensor_work(run: Run) -> dict[str, object]:
    """What each mode costs for this program, as data: forward mode runs one JVP sweep per entry
    of the variables it differentiates (the inputs, or the --wrt names) computed up to the output,
    reverse mode one backward sweep per entry of the output."""
    names = run.tensors.forward_names  # type: ignore[union-attr]
    last = run.program.variables[run.output].register
    if names is None:  # reverse mode: what forward mode would take for every input
        names = tuple(name for name, v in run.program.variables.items() if v.kind == "input")
    forward = sum(int(run.value(name).size) for name in names if run.program.variables[name].register <= last)
    reverse = max(1, int(run.value(run.output).size))
    return {"forward": {"passes": forward}, "reverse": {"passes": reverse}, "ops": run.ops}


def _tensor_work_summary(run: Run) -> str:
    """One line comparing the two modes' work, e.g. ``forward mode: 6 passes (one per input entry)
    over 4 ops; reverse mode: 1 backward pass over 4 ops``."""
    from ..execute.interpreter import pass_unit

    work = _tensor_work(run)
    forward, reverse, ops = work["forward"]["passes"], work["reverse"]["passes"], work["ops"]  # type: ignore[index]
    unit = pass_unit(run.program, run.tensors.forward_names or ())  # type: ignore[union-attr]
    return (f"forward mode: {_plural(forward, 'pass', 'passes')} (one per {unit}) over {ops} ops; "
            f"reverse mode: {_plural(reverse, 'backward pass', 'backward passes')} over {ops} ops")


def _jacobian_rows(run: Run, inputs: list[str]) -> Iterator[Any]:
    import numpy as np

    blocks = []
    for name in inputs:
        derivative = run.derivative(name)
        blocks.append(derivative.reshape(derivative.shape[0], int(np.prod(derivative.shape[1:]))))
    yield from np.concatenate(blocks, axis=1) if blocks else []


def _tensor_csv(run: Run) -> str:
    import csv
    import io

    import numpy as np

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    out_entries = _entries(run.output, run.shape(run.output))
    grad_columns = [f"d {entry}" for entry in out_entries] if run.jacobian else ["grad"]
    writer.writerow(["name", "kind", "op", "index", "value", *grad_columns])
    derivatives = _tensor_derivatives(run)
    for name in _tensor_names(run):
        value = _tensor_value(run, name)
        derivative = derivatives.get(name)
        kind, op = run.kind(name), run.op_label(name)
        for index in np.ndindex(value.shape):
            if derivative is None:  # forward mode differentiates the inputs only
                grads = [""] * len(grad_columns)
            elif run.jacobian:
                grads = [repr(float(derivative[(row, *index)])) for row in range(derivative.shape[0])]
            else:
                grads = [repr(float(derivative[index]))]
            writer.writerow([name, kind, op, " ".join(map(str, index)), repr(float(value[index])), *grads])
    return buffer.getvalue()
