"""How the language's messages write what a user wrote: an index too large for a float is refused
without showing a rounded number the user never wrote, and JSON's true, false, null and strings
are written as JSON writes them, not as Python's True, None or 'a'."""

from __future__ import annotations

import pytest

from autodiff_cli.errors import AutodiffError
from autodiff_cli.language import parse
from autodiff_cli.language.program import ArrayLiteral


@pytest.mark.parametrize("index", ["12345678901234567890123", "-9007199254740993", "9007199254740992"])
def test_an_index_past_two_to_the_53_is_refused_without_a_rounded_number(index: str) -> None:
    with pytest.raises(AutodiffError) as raised:
        parse(f"x = [1, 2, 3]\ny = x[{index}]")
    text = str(raised.value)
    assert "smaller than 2**53" in text
    assert "e+22" not in text and "12345678901234567741440" not in text  # the float it rounds to


def test_the_largest_index_a_float_holds_exactly_is_still_an_index() -> None:
    parse("x = [1, 2, 3]\ny = x[9007199254740991]")  # found out of range later, by the shape rule


@pytest.mark.parametrize(("value", "written"), [(True, "true"), (False, "false"), (None, "null"), ("a", '"a"')])
def test_a_json_value_that_is_no_number_is_written_as_json(value: object, written: str) -> None:
    with pytest.raises(ValueError) as raised:
        ArrayLiteral.from_nested([1.0, value])
    assert f"entry [1] is {written}, not a finite number" in str(raised.value)
    assert "True" not in str(raised.value) and "None" not in str(raised.value)


def test_a_shape_past_two_to_the_53_is_refused_without_a_rounded_number() -> None:
    with pytest.raises(AutodiffError) as raised:
        parse("x = zeros([99999999999999999999999])")
    text = str(raised.value)
    assert "2**53" in text and "99999999999999991611392" not in text  # the float it rounds to
