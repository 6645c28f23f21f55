"""Text read from the user's files and standard input: decoded as UTF-8 (an error points at the
first byte that is not), and numbers read with a note of those a float rounds to 0."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, BinaryIO

from ..errors import InputError, Position, Source
from .streams import waiting_notice

__all__ = ["LineSource", "decode", "float_noting_underflows", "flushed_to_zero", "not_utf8", "outside_precision",
           "read_file", "read_stdin", "smallest_float", "taken_as_zero", "underflows"]

class LineSource(Source):
    """One line of a file, as an error excerpt shows it: the one line is all it holds."""

    def __init__(self, name: str, number: int, text: str) -> None:
        super().__init__(name, text)
        object.__setattr__(self, "number", number)

    def line(self, number: int) -> str:
        return self.text if number == self.number else ""  # type: ignore[attr-defined]


def not_utf8(data: bytes, start: int, name: str, what: str, line: int = 1, cr_ends_lines: bool = False) -> InputError:
    """The error for byte ``start`` of ``data``, which cannot start or continue a UTF-8 character.

    ``data`` begins at the start of line ``line`` (after any byte order mark); a line ends at LF,
    and also at CR when ``cr_ends_lines`` (CRLF then counts once).  The error points at the byte's
    line and column, counted in characters as the line is shown: decoded, with each byte that is
    not UTF-8 replaced by U+FFFD.
    """
    line += data.count(b"\n", 0, start)
    begin = data.rfind(b"\n", 0, start) + 1
    stop = data.find(b"\n", start)
    if cr_ends_lines:
        line += data.count(b"\r", 0, start) - data.count(b"\r\n", 0, start)
        begin = max(begin, data.rfind(b"\r", 0, start) + 1)
        cr = data.find(b"\r", start)
        stop = cr if stop < 0 or 0 <= cr < stop else stop
    stop = len(data) if stop < 0 else stop
    column = len(data[begin:start].decode("utf-8", "replace")) + 1
    shown = data[begin:stop].decode("utf-8", "replace").rstrip("\r")
    return InputError(f"not valid UTF-8: byte 0x{data[start]:02x} cannot start or continue a character",
                      Position(line, column), LineSource(name, line, shown), f"save the {what} as UTF-8 text")


def decode(data: bytes, name: str, what: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        # error.object is what was decoded: ``data`` without its byte order mark, if it has one.
        raise not_utf8(error.object, error.start, name, what) from None


_WAITING_FOR = {"program": "the program", "values file": "the values (JSON)"}


def read_stdin(what: str, notify: Callable[[str], None]) -> str:
    """All of standard input as text; ``notify`` is given the notice to show when it is a terminal."""
    if sys.stdin is None:
        raise InputError("standard input is closed, so the " + what + " cannot be read from it",
                         hint="pipe the " + what + " in, or name a file")
    notice = waiting_notice(_WAITING_FOR.get(what, what))
    if notice is not None:
        notify(notice)
    return decode(_read_capped(sys.stdin.buffer, "<stdin>", what), "<stdin>", what)


def read_file(path: str, what: str) -> str:
    if os.path.isdir(path):
        raise InputError(f"cannot read {path}: it is a directory",
                         hint=f"name the {what.removesuffix(' file')} file itself, not its directory")
    try:
        with open(path, "rb") as handle:
            data = _read_capped(handle, path, what)
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror or error}",
                         hint="check the path and its permissions") from None
    return decode(data, path, what)


MAX_TEXT_BYTES = 1 << 28  # 256 MiB: a program or values file larger than this is surely not one
_BLOCK = 1 << 20


def _read_capped(handle: BinaryIO, name: str, what: str) -> bytes:
    """All of ``handle``, up to ``MAX_TEXT_BYTES``: more is an error, not a read that fills the
    memory (``--values /dev/zero``, a log file named by mistake)."""
    import stat

    try:
        status = os.fstat(handle.fileno())
        if stat.S_ISREG(status.st_mode) and status.st_size > MAX_TEXT_BYTES:
            raise _too_large(name, what)
    except (OSError, AttributeError, ValueError):
        pass  # no descriptor (an embedding program's stream): the blocks below count
    blocks: list[bytes] = []
    total = 0
    try:
        while block := handle.read(_BLOCK):
            total += len(block)
            if total > MAX_TEXT_BYTES:
                raise _too_large(name, what)
            blocks.append(block)
        return b"".join(blocks)
    except MemoryError:
        blocks.clear()
        raise InputError(f"cannot read {name}: not enough memory for its {total:,} bytes",
                         hint=f"give a smaller {what}") from None


def _too_large(name: str, what: str) -> InputError:
    return InputError(f"cannot read {name}: it holds more than {MAX_TEXT_BYTES:,} bytes, more than any {what} "
                      f"this tool reads", hint=f"check that {name} is the {what} you meant")


def underflows(text: str, value: float) -> bool:
    """A number written with a non-zero digit that float() rounds to 0 (1e-400)."""
    mantissa = text.lower().partition("e")[0]
    return value == 0.0 and any(digit in mantissa for digit in "123456789")


def float_noting_underflows(found: list[str]) -> Callable[[str], float]:
    """``float`` for ``json.loads(parse_float=...)`` that appends to ``found`` each number it
    reads as 0 although it is not written as 0 (``underflows``)."""
    def parse_float(literal: str) -> float:
        value = float(literal)
        if underflows(literal, value):
            found.append(literal)
        return value

    return parse_float


# The smallest number above 0 of each precision, as the warnings say it.
_SMALLEST = {"float64": "float (about 5e-324)", "float32": "float32 (about 1.4e-45)"}


def smallest_float(dtype: str = "float64") -> str:
    """'float (about 5e-324)': the smallest number above 0 that ``dtype`` holds, for a warning
    that a number smaller than it is taken as 0."""
    return _SMALLEST[dtype]


def flushed_to_zero(values: Any, dtype: str) -> Any:
    """Where the float64 ``values`` (an array) are not 0 but become 0 in ``dtype`` (1e-50 in
    float32), as a boolean array; float64 itself loses none of them."""
    import numpy as np

    wide = np.asarray(values, dtype=float)
    if dtype == "float64":
        return np.zeros(wide.shape, dtype=bool)
    with np.errstate(over="ignore"):  # a number too large becomes inf, not 0: said elsewhere
        return (wide.astype(dtype) == 0) & (wide != 0)


def outside_precision(value: Any, dtype: str) -> tuple[tuple[str, str, str] | None, int, list[str]]:
    """What ``dtype`` cannot hold of a value given to an input (a float or an ``ArrayLiteral``):
    its first entry too large for it, as (the entry: '1e39 at entry [1, 1]', why, the hint), or
    None; how many of its entries it rounds to 0, and the first few ('1e-50 at entry [0]').
    Nothing in float64, whose limits the reading of the value applied already."""
    if dtype == "float64":
        return None, 0, []
    import numpy as np

    from ..execute.interpreter import as_array, beyond_range, narrowed

    wide = as_array(value)

    def entry(index: int) -> str:
        return "" if wide.ndim == 0 else f" at entry [{', '.join(str(int(i)) for i in np.unravel_index(index, wide.shape))}]"

    too_large = None
    _, lost = narrowed(wide, np.dtype(dtype))
    if lost is not None:
        shown, reason, hint = beyond_range(wide.flat[lost], dtype)
        too_large = (f"{shown}{entry(lost)}", reason, hint)
    zeroed = np.flatnonzero(flushed_to_zero(wide, dtype))
    return too_large, len(zeroed), [f"{float(wide.flat[i])!r}{entry(i)}" for i in zeroed[:_TINY_SHOWN]]


_TINY_SHOWN = 5


def taken_as_zero(where: str, shown: list[str], count: int, dtype: str, ending: str = "so taken as 0") -> str:
    """The warning that ``count`` numbers given at ``where``, the first of them ``shown``, are
    taken as 0 in ``dtype``: 'value of x: 1e-50 is smaller than the smallest float32 (about
    1.4e-45), so taken as 0'."""
    more = f" and {count - len(shown):,} more" if count > len(shown) else ""
    return (f"{where}: {', '.join(shown)}{more} {'is' if count == 1 else 'are'} smaller than the smallest "
            f"{smallest_float(dtype)}, {ending}")
