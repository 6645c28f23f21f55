"""JSON Lines to chunks of rows: one object per line, the keys of the first naming the columns.

A key whose value on the first line is an array of numbers (``"x": [1, 2]``, ``"W": [[1, 2],
[3, 4]]``) gives a tensor on every row: one column per entry, named as ``execute.columns.entry_column`` names them
(``x[0]``, ``x[1]``, ``W[0, 1]``), each line's array of the first line's shape."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..text import float_noting_underflows
from ..values import DuplicateKey, object_without_duplicates
from ...execute.columns import split_column
from .lines import (Chunk, Overflows, Underflows, beyond_precision, beyond_precision_text, data_error, key_span,
                    may_overflow, may_underflow)

def json_columns(first: dict[str, Any]) -> list[str]:
    """The columns the first object names: each key, or each entry of a key holding an array."""
    from ...execute.columns import entry_column

    columns = []
    for key, value in first.items():
        shape = _shape(value) if _all_numbers(value) else ()  # other arrays are text, passed through
        if shape and _rectangular(value, shape):
            columns += [entry_column(key, index) for index in np.ndindex(shape)]
        else:
            columns.append(key)
    return columns


def _shape(value: Any) -> tuple[int, ...]:
    """The shape of nested arrays, by their first entries (() for a number or an empty array)."""
    shape = []
    while isinstance(value, list) and value:
        shape.append(len(value))
        value = value[0]
    return tuple(shape)


def parse_json_line(name: str, line: int, text: str) -> dict[str, Any]:
    try:
        document = _json_object(text)
    except DuplicateKey as duplicate:
        raise data_error(name, line, f"the key {duplicate.key!r} appears twice in this object", "give each key "
                         "once", text, *key_span(text, duplicate.key)) from None
    except json.JSONDecodeError as error:
        raise data_error(name, line, f"not valid JSON: {error.msg}", "write one JSON object per line, "
                         'e.g. {"x": 1.5, "y": -2}', text, error.colno) from None
    except RecursionError:
        raise data_error(name, line, "not valid JSON here: nested too deeply", "write one flat JSON object "
                         "per line", text) from None
    if not isinstance(document, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}.get(
            type(document), "null")
        raise data_error(name, line, f"expected a JSON object, got {kind}", 'write one JSON object per line, '
                         'e.g. {"x": 1.5, "y": -2}', text)
    return document


def _json_object(text: str) -> Any:
    """``json.loads``, refusing a key given twice; an integer longer than ``int`` takes (4,300
    digits: ``sys.get_int_max_str_digits``) is read as ``float`` reads it, as inf."""
    try:
        return json.loads(text, object_pairs_hook=object_without_duplicates)
    except json.JSONDecodeError:
        raise
    except ValueError:  # an integer too long for int(): json's only ValueError that is not a JSONDecodeError
        return json.loads(text, object_pairs_hook=object_without_duplicates, parse_int=_integer)


def _integer(literal: str) -> int | float:
    """A JSON integer as ``int``, or as ``float`` (inf) when it is too long for ``int``."""
    try:
        return int(literal)
    except ValueError:
        return float(literal)


def _as_float(number: float) -> float:
    """``float``, but an integer beyond the float range is inf (float() raises), as its text reads."""
    try:
        return float(number)
    except OverflowError:
        return math.inf if number > 0 else -math.inf


_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _cell(document: dict[str, Any], column: str) -> Any:
    """A column's cell of one object: its key's value, or one entry of an array (``x[1]``)."""
    if column in document:
        return document[column]
    from ...execute.columns import split_column

    key, index = split_column(column)  # type: ignore[misc]  # json_columns named it so
    value = document[key]
    for i in index:
        value = value[i] if isinstance(value, list) and i < len(value) else None
    return value


def _rectangular(value: Any, shape: tuple[int, ...]) -> bool:
    """Whether every nested array has the length ``shape`` gives its depth (``_shape`` reads the
    first entries only)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth < len(shape):
            if not isinstance(item, list) or len(item) != shape[depth]:
                return False
            stack.extend((entry, depth + 1) for entry in item)
        elif isinstance(item, list):
            return False
    return True


def _all_numbers(value: Any) -> bool:
    """Whether nested arrays hold numbers only (not booleans, strings or null)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif type(item) not in (int, float):
            return False
    return True


class JsonChunks:
    """JSON Lines to a Chunk: one ``json.loads`` over the whole chunk, line by line when it fails."""

    def __init__(self, name: str, columns: Sequence[str], numeric: Sequence[str], passed: Sequence[str],
                 underflows: Underflows | None = None, source: Any = None,
                 overflows: Overflows | None = None, first: dict[str, Any] | None = None,
                 dtype: Any = None) -> None:
        self.name, self.columns, self.numeric, self.passed = name, list(columns), list(numeric), list(passed)
        self.key_list = list(columns) if first is None else list(first)  # the objects' keys
        self.keys = set(self.key_list)
        # The shape of each key that holds arrays of numbers, as the first line gives it.
        self.shapes = {key: _shape(value) for key, value in (first or {}).items()
                       if _shape(value) and _all_numbers(value)}
        self.underflows = underflows or Underflows(name)
        self.overflows = overflows or Overflows(name)
        self.source = source  # the Lines, whose ``tiny`` says whether to look for underflows at all
        self.dtype = dtype  # the precision the numbers run in (float32): a number it cannot hold is a bad cell

    def __call__(self, lines: list[str], first_line: int, documents: list[dict[str, Any]] | None = None) -> Chunk:
        line_numbers = [first_line + offset for offset, text in enumerate(lines) if text.strip()]
        texts = [lines[n - first_line] for n in line_numbers]
        if documents is None:
            documents = self._parse(texts, line_numbers)
        keys = self.keys
        for document, line, text in zip(documents, line_numbers, texts):
            if document.keys() != keys:
                self._keys_error(document, line, text)
        numbers = {}
        arrays: dict[str, Any] = {}
        for name in self.numeric:
            if name not in keys:  # an entry of a key holding arrays: x[0]
                numbers[name] = self._entry(name, arrays, documents, line_numbers, texts)
                continue
            cells = [document[name] for document in documents]
            if not set(map(type, cells)) <= {float, int}:
                # "NaN", "Infinity" and "-Infinity" are how JSON output writes non-finite numbers
                # (batch's own and eval's), so they read back as the numbers they stand for.
                cells = [_NON_FINITE.get(cell, cell) if type(cell) is str else cell for cell in cells]
                if not set(map(type, cells)) <= {float, int}:
                    self._cell_error(name, cells, line_numbers, texts)
            try:
                numbers[name] = np.array(cells, dtype=np.float64)
            except OverflowError:  # an integer beyond the float range
                numbers[name] = np.array([_as_float(cell) for cell in cells], dtype=np.float64)
        if ((self.source is None or self.source.tiny) and any((column == 0).any() for column in numbers.values())
                and may_underflow(texts)):
            self._look_for_underflows(numbers, line_numbers, texts)
        if any(np.isinf(column).any() for column in numbers.values()) and may_overflow(texts):
            self._look_for_overflows(numbers, line_numbers, texts)
        if self.dtype is not None:
            self._refuse_beyond_precision(numbers, line_numbers, texts)
        passed = {name: [_cell(document, name) for document in documents] for name in self.passed}
        return Chunk(numbers, passed, np.array(line_numbers, dtype=np.int64))

    def _entry(self, column: str, arrays: dict[str, Any], documents: list[dict[str, Any]], line_numbers: list[int],
               texts: list[str]) -> np.ndarray:
        """One entry's column of a key holding arrays, whose rows are read once per chunk."""
        from ...execute.columns import split_column

        key, index = split_column(column)  # type: ignore[misc]  # json_columns named it so
        if key not in arrays:
            cells = [document[key] for document in documents]
            shape = self.shapes[key]
            for cell, line, text in zip(cells, line_numbers, texts):
                if _shape(cell) != shape or not _all_numbers(cell) or not _rectangular(cell, shape):
                    first = "x".join(map(str, shape)) if shape else "a number"
                    raise data_error(self.name, line, f"the key {key!r} holds {json.dumps(cell)[:40]}, where the "
                                     f"first line has an array of shape [{', '.join(map(str, shape))}]",
                                     f"give {key!r} an array of numbers of the same shape ({first}) on every line",
                                     text, *key_span(text, key))
            arrays[key] = np.array(cells, dtype=np.float64)
        return arrays[key][(slice(None), *index)]  # type: ignore[no-any-return]

    def _look_for_underflows(self, numbers: dict[str, np.ndarray], line_numbers: list[int],
                             texts: list[str]) -> None:
        zero = np.zeros(len(texts), dtype=bool)
        for column in numbers.values():
            zero |= column == 0
        rows = np.flatnonzero(zero).tolist()
        for row in rows:
            found: list[str] = []
            json.loads(texts[row], parse_float=float_noting_underflows(found))
            for literal in found:
                self.underflows.add(line_numbers[row], texts[row].find(literal) + 1, literal)

    def _look_for_overflows(self, numbers: dict[str, np.ndarray], line_numbers: list[int],
                            texts: list[str]) -> None:
        """Count the numbers written in full that read as inf (1e400), not the "Infinity" written."""
        infinite = np.zeros(len(texts), dtype=bool)
        for column in numbers.values():
            infinite |= np.isinf(column)
        for row in np.flatnonzero(infinite).tolist():
            text = texts[row]
            written = json.loads(text, parse_float=str, parse_int=str)  # each number as its text
            for name in numbers:
                literal = written.get(name) if name in written else _written_entry(written, name)
                # A str here is a number's text, or one of the strings that stand for NaN and the
                # infinities; the constant Infinity reads as a float.
                if type(literal) is str and literal not in _NON_FINITE and math.isinf(float(literal)):
                    key, width = key_span(text, name)
                    self.overflows.add(line_numbers[row], text.find(literal, key - 1 + width) + 1, literal)

    def _refuse_beyond_precision(self, numbers: dict[str, np.ndarray], line_numbers: list[int],
                                 texts: list[str]) -> None:
        """An error at the first number the run's ``dtype`` cannot hold (1e40 in float32)."""
        found = [(place[0], index, name) for index, (name, column) in enumerate(numbers.items())
                 if (place := beyond_precision(column.reshape(-1, 1), self.dtype)) is not None]
        if not found:
            return
        row, _, name = min(found)  # the first line's; on it, the first column's
        text = texts[row]
        message, hint = beyond_precision_text(name, float(numbers[name][row]), self.dtype)
        written = json.loads(text, parse_float=str, parse_int=str)  # each number as its text
        literal = written.get(name) if name in written else _written_entry(written, name)
        entry = split_column(name)
        key = entry[0] if name not in written and entry is not None else name
        start, width = key_span(text, key)
        at = text.find(str(literal), start - 1 + width) if type(literal) is str else -1
        column, size = (at + 1, len(literal)) if at >= 0 else (start, width)
        raise data_error(self.name, line_numbers[row], message, hint, text, column, size)

    def check_first(self, text: str, line: int, document: dict[str, Any]) -> None:
        """The data errors of the first line's numeric cells, before any row is run (a bad array
        for a tensor input would otherwise be taken for a number and fail as a shape in the program)."""
        self([text], line, [document])

    def _parse(self, texts: list[str], line_numbers: list[int]) -> list[dict[str, Any]]:
        try:
            documents = json.loads("[" + ",".join(texts) + "]", object_pairs_hook=object_without_duplicates)
            if len(documents) == len(texts) and all(type(d) is dict for d in documents):
                return documents
        except (ValueError, DuplicateKey, RecursionError):
            pass
        return [parse_json_line(self.name, line, text) for line, text in zip(line_numbers, texts)]

    def _keys_error(self, document: dict[str, Any], line: int, text: str) -> None:
        missing = [key for key in self.key_list if key not in document]
        if missing:
            raise data_error(self.name, line, f"this object has no {missing[0]!r}", "give every line the keys of "
                             f"the first: {', '.join(self.key_list[:10])}", text)
        extra = next(key for key in document if key not in self.keys)
        raise data_error(self.name, line, f"this object has {extra!r}, which the first line does not",
                         f"give every line the keys of the first: {', '.join(self.key_list[:10])}", text,
                         *key_span(text, extra))

    def _cell_error(self, name: str, cells: list[Any], line_numbers: list[int], texts: list[str]) -> None:
        for cell, line, text in zip(cells, line_numbers, texts):
            if type(cell) not in (float, int):
                found = json.dumps(cell)
                if isinstance(cell, (list, dict)):  # meant as a tensor: say what an array must be
                    what = ("an empty array" if cell in ([], {}) else "an object" if isinstance(cell, dict) else
                            "an array holding more than numbers" if not _all_numbers(cell) else
                            "an array whose rows differ in length")
                    raise data_error(self.name, line, f"the key {name!r} holds {found[:40]}, {what}, not a number "
                                     "or an array of numbers", "give a number, or for a tensor an array of "
                                     "numbers of one shape on every line, e.g. [1.5, -2]", text, *key_span(text, name))
                raise data_error(self.name, line, f"the key {name!r} holds {found[:40]}, not a number",
                                 "give numbers, e.g. 1.5 or -2 (NaN marks a value to fail the row on)", text,
                                 *key_span(text, name))


def _written_entry(written: dict[str, Any], column: str) -> Any:
    """The text of one entry (``x[1]``) of an array a line writes, None if there is none."""
    from ...execute.columns import split_column

    entry = split_column(column)
    if entry is None or entry[0] not in written:
        return None
    value = written[entry[0]]
    for i in entry[1]:
        value = value[i] if isinstance(value, list) and i < len(value) else None
    return value
