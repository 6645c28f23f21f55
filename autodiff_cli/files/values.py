"""The values file: a JSON object of numbers (or nested arrays of numbers, tensors), one per input, read with the places of its keys
(JSON keeps none; a text search finds them) so that an error can point at the key it is about."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import InputError, Position, Source, listed
from .text import float_noting_underflows, outside_precision, read_file, read_stdin, taken_as_zero

__all__ = ["DuplicateKey", "key_position", "object_without_duplicates", "read_values", "value_literals",
           "values_in_precision"]


def read_values(path: str, notify: Callable[[str], None]) -> tuple[dict[str, float], Source, list[str]]:
    """The values file at ``path`` ('-' reads stdin, ``notify`` given the notice for a terminal),
    the text it was read from, and the warnings about it (numbers too small for a float)."""
    import json

    if path != "-" and _is_npy(path):
        named = path if path.lower().endswith(".npy") else "FILE.npy"
        raise InputError(f"{path} is a NumPy .npy file: it holds one array, where a values file is a JSON object "
                         "naming each input", hint=f"give the array to its input with --set NAME={named}"
                         f"{'' if named == path else ' (a name ending in .npy)'}, or write a values file: "
                         '{"W": [[1, 2], [3, 4]]}')
    text = read_stdin("values file", notify) if path == "-" else read_file(path, "values file")
    source = Source("<stdin>" if path == "-" else path, text)
    example = 'the values file is a JSON object of numbers, e.g. {"a": 2, "b": -3}'
    try:
        # Integers are read as floats: a 400-digit integer then becomes inf (rejected
        # below) instead of an int that Python refuses to convert.
        underflows: list[str] = []
        document = json.loads(text, parse_int=float, parse_float=float_noting_underflows(underflows),
                              object_pairs_hook=object_without_duplicates)
    except DuplicateKey as duplicate:
        raise InputError(f"{duplicate.key!r} is given twice", key_position(text, duplicate.key, 2), source,
                         "give each input once") from None
    except json.JSONDecodeError as error:
        raise InputError(f"invalid JSON: {error.msg}", Position(error.lineno, error.colno), source,
                         example) from None
    except RecursionError:
        raise InputError("invalid values file: the JSON is nested too deeply", Position(1, 1), source,
                         example) from None
    if not isinstance(document, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", float: "a number"}.get(
            type(document), "null")
        raise InputError(f"expected a JSON object of numbers, got {kind}", Position(1, 1), source, example)
    isfinite = math.isfinite
    # One pass in a comprehension (a values file can hold millions of keys); bool is not float.
    wrong = [key for key, value in document.items() if type(value) is not float or not isfinite(value)]
    for key in wrong:
        if type(document[key]) is not list:
            raise _not_finite(key, document[key], source)
        document[key] = _tensor(key, document[key], source)
    warnings = []
    if underflows:
        verb = "is" if len(underflows) == 1 else "are"
        warnings.append(f"{source.name}: {listed(underflows, 5)} {verb} smaller than the smallest float "
                        "(about 5e-324), so taken as 0")
    return document, source, warnings


def values_in_precision(values: dict[str, Any], source: Source, dtype: str) -> list[str]:
    """Check a values file's ``values`` (those a --set does not replace) in the precision the run
    takes them in (float32: the command's --dtype), as ``read_values`` checks them in float64:
    an InputError at the key of the first entry too large for it, and the warnings for the
    entries it takes as 0."""
    shown: list[str] = []
    count = 0
    for key, value in values.items():
        too_large, zeroed, first = outside_precision(value, dtype)
        if too_large is not None:
            entry, reason, hint = too_large
            raise InputError(f"the value of {key!r} holds {entry}, {reason}", key_position(source.text, key), source,
                             hint)
        shown.extend(f"{text} (of {key!r})" for text in first[:5 - len(shown)])
        count += zeroed
    return [taken_as_zero(source.name, shown, count, dtype)] if count else []


def _is_npy(path: str) -> bool:
    """Whether ``path`` names a .npy file: by its extension, or a regular file's first bytes."""
    import os

    try:
        if not os.path.isfile(path):
            return False  # missing (read_file says so), or a pipe, whose bytes are read once
        if path.lower().endswith(".npy"):
            return True
        with open(path, "rb") as handle:
            return handle.read(6) == b"\x93NUMPY"
    except OSError:
        return False  # read_file says what is wrong


def _tensor(key: str, value: list[Any], source: Source) -> Any:
    """A tensor given as nested arrays of numbers (``"W": [[0.1, 0.2], [0.3, 0.4]]``)."""
    from ..language.program import ArrayLiteral

    try:
        return ArrayLiteral.from_nested(value)
    except ValueError as error:
        raise InputError(f"the value of {key!r} is not a tensor: {error}", _where_written(source.text, key, value)[0],
                         source,
                         'a tensor is nested arrays of numbers with rows of one length, e.g. {"W": [[1, 2], [3, 4]]}'
                         ) from None


def value_literals(values_source: Source | None) -> dict[str, str]:
    """Each number of a values file as it is written there (``"n": 3`` -> ``'3'``, not ``3.0``), so
    that a value written back unchanged keeps its text, digits beyond a float's included.
    ``values_source`` is a values file that ``read_values`` has accepted."""
    import json

    if values_source is None:
        return {}
    return json.loads(values_source.text, parse_int=str, parse_float=str)  # type: ignore[no-any-return]


def _not_finite(key: str, value: Any, source: Source) -> InputError:
    """The error for a value that is not a finite number, quoting it as the file writes it."""
    import json

    where, written = _where_written(source.text, key, value)
    if written is None:  # the text search could not find it: the value as JSON reads it
        written = json.dumps(value, allow_nan=True)
    if _JSON_NUMBER.match(written):  # a number that float() takes to inf: 1e999, or 400 digits
        return InputError(f"the value of {key!r} is too large for a float: {written}", where, source,
                          "a float holds numbers up to about 1.8e308 in size: give a smaller value")
    shown = f"{written[:40]}{'...' if len(written) > 40 else ''}"
    return InputError(f"the value of {key!r} is not a finite number: {shown}", where, source,
                      'every value must be a finite number, e.g. {"a": 2.5}')


# A JSON number, as the values file writes it (JSON has no '+', no '.5', no 'inf').
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?\Z")


def _where_written(text: str, key: str, value: Any) -> tuple[Position, str | None]:
    """Where ``"key":`` is written with ``value`` after it, and the value's text there (``1e999``,
    ``[1]``).  Of the places the text search finds, the one whose value reads as ``value`` is it:
    the others are inside strings.  None for the text if no place is."""
    import json

    shown = json.dumps(value, allow_nan=True)  # compared as text: nan is not equal to itself
    for found in _key_matches(text, key):
        start = found.end()
        while start < len(text) and text[start] in " \t\r\n":  # JSON's white space
            start += 1
        try:
            read, end = json.JSONDecoder(parse_int=float).raw_decode(text, start)
        except ValueError:
            continue
        if json.dumps(read, allow_nan=True) == shown:
            return _match_position(text, found), text[start:end]
    return key_position(text, key), None


class DuplicateKey(Exception):
    """A JSON object names ``key`` twice (raised by ``object_without_duplicates``)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``'s ``object_pairs_hook`` that refuses a key written twice (JSON allows it;
    the last would silently win)."""
    document = dict(pairs)
    if len(document) != len(pairs):  # the slow search only when there is a duplicate
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return document


def key_position(text: str, key: str, occurrence: int = 1) -> Position:
    """Where ``"key":`` is written for the given time (JSON keeps no positions; a text search
    finds them, and can only be fooled by the same text inside a string value)."""
    found = _key_match(text, key, occurrence)
    return Position(1, 1) if found is None else _match_position(text, found)


def _match_position(text: str, found: re.Match[str]) -> Position:
    """The position of a ``"key":`` that ``_key_matches`` found, as wide as the key is written."""
    line = text.count("\n", 0, found.start()) + 1
    column = found.start() - (text.rfind("\n", 0, found.start()) + 1) + 1
    return Position(line, column, len(found.group().rstrip(" \t\r\n:")))


def _key_match(text: str, key: str, occurrence: int = 1) -> re.Match[str] | None:
    """The given time ``"key":`` is written in ``text``, in the first spelling written that often."""
    for spelling in _key_spellings(key):
        matches = list(re.finditer(re.escape(spelling) + r"\s*:", text))
        if len(matches) >= occurrence:
            return matches[occurrence - 1]
    return None


def _key_matches(text: str, key: str) -> Iterator[re.Match[str]]:
    """Every place ``"key":`` is written in ``text``, in each spelling."""
    for spelling in _key_spellings(key):
        yield from re.finditer(re.escape(spelling) + r"\s*:", text)


def _key_spellings(key: str) -> list[str]:
    """A key as JSON may write it: with non-ASCII characters escaped, or not."""
    import json

    return list(dict.fromkeys((json.dumps(key), json.dumps(key, ensure_ascii=False))))
