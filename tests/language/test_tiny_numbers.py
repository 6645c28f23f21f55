"""Numbers written in a program that a float cannot hold but as 0 (1e-400) are found, with their
place, so that every command can warn instead of silently computing with 0."""

from __future__ import annotations

import pytest

from autodiff_cli.language.compiler import tiny_numbers


@pytest.mark.parametrize("text, found", [
    ("y = x * 1e-400", [(1, 9, "1e-400")]),
    ("a = 1\nb = 2.5E-0400 + 1e-500", [(2, 5, "2.5E-0400"), (2, 17, "1e-500")]),
    ("y = x ** 3e-999", [(1, 10, "3e-999")]),
    ("y = 0." + "0" * 400 + "1", [(1, 5, "0." + "0" * 400 + "1")]),
    ("y = 0." + "0" * 250 + "1e-80", [(1, 5, "0." + "0" * 250 + "1e-80")]),
    ("y = x # 1e-400 is only a comment", []),
    ("x1e400 = 2\ny = x1e400 * 0.0e-500", []),
    ("y = x * 1e-320 + 0e-999 + 1e-100", []),
    ("y = x * 2", []),
], ids=["one", "two-on-line-2", "exponent", "many-zeros", "zeros-and-exponent", "comment", "name-and-written-zero", "subnormal-and-zero",
        "none"])
def test_tiny_numbers_are_found_where_they_are_written(text: str, found: list[tuple[int, int, str]]) -> None:
    assert tiny_numbers(text) == found
