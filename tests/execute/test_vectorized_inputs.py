"""What evaluate_batch takes as a column or a shared number, and what it refuses.

NumPy's ``asarray(..., dtype=float64)`` turns text, booleans, complex numbers, dates and
masked entries into numbers without a word; the executor refuses them with an
``InputError`` naming the column (or the input, for one number every row shares), or, for
missing values (None, pandas' NA, masked entries), fails their rows as it does NaN.
Expected values are worked out by hand for ``y = w*x``: dy/dx = w, dy/dw = x.
"""

from __future__ import annotations

import decimal
import fractions
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from autodiff_cli import InputError, evaluate_batch
from autodiff_cli.execute import batch_evaluator
from autodiff_cli.execute.batch_evaluator import RowError

PROGRAM = "y = w*x"
TEXT_HINT = "pd.to_numeric(column)"
BOOL_HINT = "convert with .astype(float)"
COMPLEX_HINT = "float64 would drop the imaginary parts"
DATE_HINT = "np.timedelta64(1, 's')"
HUGE_HINT = "a float holds at most about 1.8e308"
OTHER_HINT = "give numbers: a float or integer array"


def _pandas() -> Any:
    return pytest.importorskip("pandas", reason="pandas is not installed")


def _arrow() -> Any:
    return pytest.importorskip("pyarrow", reason="pyarrow is not installed")


# (inputs, the error's message, a piece of its hint)
REFUSED: list[tuple[Callable[[], dict], str, str]] = [
    (lambda: {"x": ["1.5", "2"], "w": 2.0},
     "the column 'x' holds text, not numbers: '1.5' in row 0 (counting from 0)", TEXT_HINT),
    (lambda: {"x": [1.5, 2.0], "w": "2"}, "the value of 'w' is text, not a number: '2'", TEXT_HINT),
    (lambda: {"x": [1.0, 2.0, "3"], "w": 2.0},
     "the column 'x' holds text, not numbers: '3' in row 2 (counting from 0)", TEXT_HINT),
    (lambda: {"x": np.array(["1.5", "2"]), "w": 2.0}, "the column 'x' holds text (dtype <U3), not numbers",
     TEXT_HINT),
    (lambda: {"x": [b"1"], "w": 2.0}, "the column 'x' holds text, not numbers: b'1' in row 0 (counting from 0)",
     TEXT_HINT),
    (lambda: {"x": _pandas().Series(["1.5", "2"], dtype=object), "w": 2.0},
     "the column 'x' holds text, not numbers: '1.5' in row 0 (counting from 0)", TEXT_HINT),
    (lambda: {"x": _pandas().Series(["1.5", "2"], dtype="string"), "w": 2.0},
     "the column 'x' holds text, not numbers: '1.5' in row 0 (counting from 0)", TEXT_HINT),
    (lambda: {"x": np.array([1 + 2j, 3 + 4j]), "w": 2.0},
     "the column 'x' holds complex numbers (dtype complex128), not real numbers", COMPLEX_HINT),
    (lambda: {"x": [1.0, 2j], "w": 2.0},
     "the column 'x' holds complex numbers, not real numbers: 2j in row 1 (counting from 0)", COMPLEX_HINT),
    (lambda: {"x": [1.0], "w": 1j}, "the value of 'w' is a complex number, not a real number: 1j", COMPLEX_HINT),
    (lambda: {"x": np.array([True, False]), "w": 2.0}, "the column 'x' holds booleans (dtype bool), not numbers",
     BOOL_HINT),
    (lambda: {"x": [1.0, True], "w": 2.0},
     "the column 'x' holds booleans, not numbers: True in row 1 (counting from 0)", BOOL_HINT),
    (lambda: {"x": [1.0], "w": True}, "the value of 'w' is a boolean, not a number: True", BOOL_HINT),
    (lambda: {"x": [1.0], "w": np.bool_(False)}, "the value of 'w' is a boolean, not a number: False", BOOL_HINT),
    (lambda: {"x": _pandas().Series([True, None], dtype="boolean"), "w": 2.0},
     "the column 'x' holds booleans, not numbers: True in row 0 (counting from 0)", BOOL_HINT),
    (lambda: {"x": np.array(["2020-01-01", "2020-01-02"], dtype="datetime64[ns]"), "w": 2.0},
     "the column 'x' holds dates and times (dtype datetime64[ns]), not numbers", DATE_HINT),
    (lambda: {"x": _pandas().Series(_pandas().to_datetime(["2020-01-01", "2020-01-02"])).astype("datetime64[ns]"),
              "w": 2.0},
     "the column 'x' holds dates and times (dtype datetime64[ns]), not numbers", DATE_HINT),
    (lambda: {"x": [1.0], "w": np.datetime64("2020-01-01")},
     "the value of 'w' is a date or time, not a number: np.datetime64('2020-01-01')", DATE_HINT),
    (lambda: {"x": np.array([1, 2], dtype="timedelta64[s]"), "w": 2.0},
     "the column 'x' holds time spans (dtype timedelta64[s]), not numbers", DATE_HINT),
    (lambda: {"x": np.array([1.0, np.timedelta64(3, "s")], dtype=object), "w": 2.0},
     "the column 'x' holds time spans, not numbers: np.timedelta64(3,'s') in row 1 (counting from 0)", DATE_HINT),
    (lambda: {"x": [10**400], "w": 2.0},
     f"the column 'x' holds an integer too large for a float: {10**400} in row 0 (counting from 0)", HUGE_HINT),
    (lambda: {"x": [1.0], "w": -(10**400)},
     f"the value of 'w' is an integer too large for a float: {-(10**400)}", HUGE_HINT),
    (lambda: {"x": [1.0, {"a": 1}], "w": 2.0},
     "the column 'x' holds dict values, not numbers: {'a': 1} in row 1 (counting from 0)", OTHER_HINT),
    (lambda: {"x": [decimal.Decimal("sNaN")], "w": 2.0},
     "the column 'x' holds a number float() refuses: Decimal('sNaN') in row 0 (counting from 0)", OTHER_HINT),
    (lambda: {"x": np.zeros(2, dtype=[("a", "f8")]), "w": 2.0},
     "the column 'x' holds values of dtype [('a', '<f8')], not numbers", OTHER_HINT),
]
REFUSED_IDS = [
    "text-list", "text-shared", "text-after-numbers", "text-array", "bytes", "text-object-series",
    "text-string-series", "complex-array", "complex-in-list", "complex-shared", "bool-array", "bool-in-list",
    "bool-shared", "numpy-bool-shared", "nullable-boolean-series", "datetime64-array", "to-datetime-series",
    "datetime64-shared", "timedelta64-array", "timedelta64-in-objects", "huge-int", "huge-int-shared",
    "dict-in-list", "signalling-nan-decimal", "structured-array",
]


@pytest.mark.parametrize("make, message, hint", REFUSED, ids=REFUSED_IDS)
def test_what_is_not_a_real_number_is_refused_naming_the_column(make, message, hint) -> None:
    with pytest.raises(InputError) as raised:
        evaluate_batch(PROGRAM, make(), on_error="nan")
    assert raised.value.message == message
    assert hint in raised.value.hint


def test_a_huge_integer_is_shortened_when_shown() -> None:
    with pytest.raises(InputError) as raised:
        evaluate_batch(PROGRAM, {"x": [1.0, 10**400], "w": 2.0})
    assert str(raised.value).splitlines()[0] == (
        "error: the column 'x' holds an integer too large for a float: "
        "100000000000000000000000...(401 characters)...000000000000 in row 1 (counting from 0)")


NAN = float("nan")

# (x, y = 2*x on each row with NaN where the row fails, which rows fail)
ACCEPTED: list[tuple[Callable[[], Any], list[float], list[bool]]] = [
    (lambda: np.array([1.5, -2.0], dtype=np.float32), [3.0, -4.0], [False, False]),
    (lambda: np.array([1.5, -2.0], dtype=np.float16), [3.0, -4.0], [False, False]),
    (lambda: np.array([3, -4], dtype=np.int8), [6.0, -8.0], [False, False]),
    (lambda: np.array([2**64 - 1, 1], dtype=np.uint64), [2.0**65, 2.0], [False, False]),
    (lambda: [1, 2.5], [2.0, 5.0], [False, False]),
    (lambda: (1, 2.5), [2.0, 5.0], [False, False]),
    (lambda: [2**70, -3], [2.0**71, -6.0], [False, False]),
    (lambda: [np.float32(0.5), np.int16(-3)], [1.0, -6.0], [False, False]),
    (lambda: np.array([np.float32(0.5), 7], dtype=object), [1.0, 14.0], [False, False]),
    (lambda: [fractions.Fraction(1, 2), decimal.Decimal("0.25")], [1.0, 0.5], [False, False]),
    (lambda: [1.0, None], [2.0, NAN], [False, True]),
    (lambda: np.ma.array([1.0, 999.0], mask=[False, True]), [2.0, NAN], [False, True]),
    (lambda: np.ma.array([7, 3], mask=[True, False]), [NAN, 6.0], [True, False]),
    (lambda: np.ma.array(["text", 3.0], dtype=object, mask=[True, False]), [NAN, 6.0], [True, False]),
    (lambda: np.ma.array([1.0, 2.0]), [2.0, 4.0], [False, False]),
    (lambda: _pandas().Series([1.5, 2.0]), [3.0, 4.0], [False, False]),
    (lambda: _pandas().Series([1.5, None], dtype="Float64"), [3.0, NAN], [False, True]),
    (lambda: _pandas().Series([None, 4], dtype="Int64"), [NAN, 8.0], [True, False]),
    (lambda: _pandas().Series([1.5, _pandas().NA], dtype=object), [3.0, NAN], [False, True]),
    (lambda: _arrow().array([1.5, None]), [3.0, NAN], [False, True]),
]
ACCEPTED_IDS = [
    "float32", "float16", "int8", "uint64", "list", "tuple", "big-int-list", "numpy-scalars-in-list",
    "numpy-scalars-in-objects", "fraction-and-decimal", "none-is-missing", "masked-float", "masked-int",
    "masked-text-under-the-mask", "masked-nothing", "pandas-float64", "pandas-Float64-NA", "pandas-Int64-NA",
    "pandas-NA-in-objects", "arrow-null",
]


@pytest.mark.parametrize("make, values, failed", ACCEPTED, ids=ACCEPTED_IDS)
def test_real_numbers_are_taken_and_missing_values_fail_their_rows(make, values, failed) -> None:
    result = evaluate_batch(PROGRAM, {"x": make(), "w": 2.0}, on_error="nan")
    np.testing.assert_array_equal(result.value, values)
    np.testing.assert_array_equal(result.failed, failed)


@pytest.mark.parametrize("w", [2, np.float32(2.0), np.int8(2), decimal.Decimal(2), np.array(2.0)],
                         ids=["int", "float32", "int8", "decimal", "zero-dimensional"])
def test_a_shared_number_may_be_any_real_number(w) -> None:
    np.testing.assert_array_equal(evaluate_batch(PROGRAM, {"x": [1.5, -1.0], "w": w}).value, [3.0, -2.0])


def test_a_masked_entry_is_a_missing_value_not_the_number_under_the_mask() -> None:
    x = np.ma.array([1.0, 999.0, 3.0], mask=[False, True, False])
    with pytest.raises(RowError) as raised:
        evaluate_batch(PROGRAM, {"x": x, "w": 2.0})
    assert (raised.value.row, raised.value.message) == (1, "the input 'x' is nan, not a finite number")
    assert "drop or fill the missing values, or skip the rows that have them (on_error='skip')" in raised.value.hint
    skipped = evaluate_batch(PROGRAM, {"x": x, "w": 2.0}, on_error="skip", reduce="sum")
    assert (skipped.value, skipped.grads["w"], skipped.count) == (8.0, 4.0, 2)
    assert x.data[1] == 999.0 and x.mask[1]  # the caller's array is left as it was


def test_a_float_column_is_judged_by_its_dtype_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    # Only objects are looked at one by one: a float or integer column costs a dtype check.
    def refuse(*args: object) -> None:
        raise AssertionError("elements were looked at")

    monkeypatch.setattr(batch_evaluator, "_real_objects", refuse)
    column = np.linspace(0.0, 1.0, 5)
    assert batch_evaluator._as_column("x", column) is column
    result = evaluate_batch(PROGRAM, {"x": np.arange(3, dtype=np.int32), "w": 2.0})
    np.testing.assert_array_equal(result.value, [0.0, 2.0, 4.0])
