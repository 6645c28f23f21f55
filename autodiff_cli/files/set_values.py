"""The value of one ``--set NAME=VALUE``: a number, a tensor as JSON's nested arrays, or a tensor
read from a ``.npy`` file.

A value that cannot be read is a ``BadValue`` whose message says why and how to write it; the
CLI shows it as a usage error of the option.  Warnings (a number too small for a float) go to
the caller's ``warn``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from ..errors import listed
from .text import outside_precision, taken_as_zero, underflows

__all__ = ["NAME", "NUMBER", "BadValue", "parse_number", "parse_value", "set_value_in_precision"]

Warn = Callable[[list[str]], None]


class BadValue(ValueError):
    """A value on the command line that cannot be read; the message says how to write it."""


# The numbers of the language (its NUMBER terminal, kept equal by a test), with a sign:
# float() alone would also take '1_000', 'inf' and digits of other scripts.
NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def parse_value(name: str, text: str, warn: Warn) -> tuple[Any, str | None]:
    """The value ``text`` gives input ``name`` (a float or an ``ArrayLiteral``), and the .npy file
    it was read from (None for a value written out)."""
    what = f"value of {name}"
    if text.startswith("["):
        return parse_tensor(text, what, warn), None
    if text.endswith(".npy"):
        return load_npy(text, what), text
    return parse_number(text, what, warn, name), None


def parse_number(text: str, what: str, warn: Warn, name: str | None = None) -> float:
    """``text`` as a number; ``name``, the input it is for, lets the error show the JSON form of a
    tensor written as a comma-separated list (``--set x=0.5,-0.3``)."""
    if not NUMBER.match(text):
        raise BadValue(f"{what}: {text!r} is not a number (write it as 2, -0.5 or 1e-3)"
                       f"{_tensor_advice(text, name)}")
    value = float(text)
    if not math.isfinite(value):
        raise BadValue(f"{what}: {text!r} is too large for a float")
    if underflows(text, value):
        warn([f"{what}: {text} is smaller than the smallest float (about 5e-324), so it is taken as 0"])
    return value


def set_value_in_precision(name: str, value: Any, dtype: str, warn: Warn) -> None:
    """Check the value --set gives ``name`` in the precision the run takes it in (float32: the
    command's --dtype): a BadValue for an entry too large for it, a warning for each it takes as
    0, as float64's own limits are said when the value is read (``parse_value``)."""
    too_large, zeroed, shown = outside_precision(value, dtype)
    what = f"value of {name}"
    if too_large is not None:
        entry, reason, hint = too_large
        raise BadValue(f"{what}: {entry} is {reason}; {hint}")
    if zeroed:
        warn([taken_as_zero(what, shown, zeroed, dtype, "so it is taken as 0" if zeroed == 1 else "so taken as 0")])


def _tensor_advice(text: str, name: str | None) -> str:
    """'; for a tensor, write it as JSON: x='[0.5, -0.3]'' when ``text`` is numbers separated by
    commas (or spaces), the way a tensor is easily mistyped; '' otherwise."""
    parts = [part for part in re.split(r"[,\s]+", text.strip("()[] ")) if part]
    if name is None or len(parts) < 2 or not all(NUMBER.match(part) for part in parts):
        return ""
    return f"; for a tensor, write it as JSON: {name}='[{', '.join(parts)}]'"


def parse_tensor(text: str, what: str, warn: Warn) -> Any:
    """``--set W='[[0.1, 0.2], [0.3, 0.4]]'``: a tensor as JSON's nested arrays of numbers."""
    import json

    from ..language.program import ArrayLiteral
    from .text import float_noting_underflows

    tiny: list[str] = []
    try:
        value = ArrayLiteral.from_nested(json.loads(text, parse_int=float, parse_float=float_noting_underflows(tiny)))
    except json.JSONDecodeError as error:
        raise BadValue(f"{what}: {text!r} is not a JSON array of numbers ({error.msg} at character "
                       f"{error.pos + 1}); write it as [1, 2] or [[1, 2], [3, 4]]") from None
    except (ValueError, RecursionError) as error:
        raise BadValue(f"{what}: {error}; write it as [1, 2] or [[1, 2], [3, 4]]") from None
    if tiny:
        warn([(f"{what}: {listed(tiny, 5)} {'is' if len(tiny) == 1 else 'are'} smaller than the smallest float "
               "(about 5e-324), so taken as 0")])
    return value


_NPY_MAGIC = b"\x93NUMPY"  # how every .npy file begins (NumPy's format, any version)
_NPY_ADVICE = "save the array with NumPy: np.save(path, array.astype(float))"


def load_npy(path: str, what: str) -> Any:
    """``--set W=weights.npy``: a tensor saved by NumPy (numbers only; never pickled objects).

    The file is checked to begin as a .npy file before NumPy reads it: NumPy takes anything
    else for a pickle, and would say that of an empty file, a text file or /dev/zero."""
    from ..language.program import MAX_AXES, ArrayLiteral

    array = _read_npy(path, what)
    import numpy as np

    if array.ndim > MAX_AXES:
        raise BadValue(f"{what}: {path!r} holds an array of {array.ndim} axes, more than a tensor may "
                       f"have ({MAX_AXES}); save one of at most {MAX_AXES} axes")
    if array.dtype.kind in "iuf" and array.size and not np.isfinite(array).all():
        index = tuple(int(i) for i in np.argwhere(~np.isfinite(array))[0])
        raise BadValue(f"{what}: {path!r} holds {float(array[index])} at entry {list(index)}, not a finite "
                       "number; every entry of a value must be finite")
    if array.dtype.kind not in "iuf" or array.size == 0:
        held = "booleans" if array.dtype.kind == "b" else f"{array.dtype}"
        raise BadValue(f"{what}: {path!r} must hold a non-empty array of finite real numbers "
                       f"(it holds {held} of shape {list(array.shape)}); "
                       "save numbers: np.save(path, array.astype(float))")
    if array.ndim == 0:
        return float(array)  # a number saved alone is a number
    return ArrayLiteral(tuple(array.shape), tuple(array.astype(float).ravel().tolist()))


def _read_npy(path: str, what: str) -> Any:
    """The array in the .npy file at ``path``, read without unpickling anything."""
    import io

    import numpy as np

    try:
        with open(path, "rb") as handle:
            head = handle.read(len(_NPY_MAGIC))
            if not head:
                raise BadValue(f"{what}: {path!r} is empty, not a .npy file; {_NPY_ADVICE}")
            if head != _NPY_MAGIC:
                raise BadValue(f"{what}: {path!r} is not a .npy file: it does not begin with NumPy's "
                               f"header (\\x93NUMPY) but with {head!r}; {_NPY_ADVICE}")
            if handle.seekable():
                handle.seek(0)
                return np.load(handle, allow_pickle=False)
            # a pipe, <(...): NumPy reads the header twice
            return np.load(io.BytesIO(head + handle.read()), allow_pickle=False)
    except BadValue:
        raise
    except ValueError as error:
        if "allow_pickle" in str(error):
            raise BadValue(f"{what}: {path!r} holds Python objects, which are never loaded (unpickling "
                           f"can run code); {_NPY_ADVICE}") from None
        raise BadValue(f"{what}: {path!r} is a damaged .npy file: {error}; {_NPY_ADVICE}") from None
    except EOFError as error:
        raise BadValue(f"{what}: {path!r} is a .npy file cut short ({error}); {_NPY_ADVICE}") from None
    except OSError as error:
        raise BadValue(f"{what}: cannot read {path!r} as a .npy file: {error.strerror or error}") from None
    except Exception as error:  # noqa: BLE001  # a damaged header: NumPy parses it as Python text (SyntaxError, ...)
        raise BadValue(f"{what}: {path!r} is a damaged .npy file: its header cannot be read "
                       f"({type(error).__name__}); {_NPY_ADVICE}") from None
