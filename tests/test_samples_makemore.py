"""The makemore sample's data: make_names.py's rows as makemore's build_dataset makes them (worked
out by hand), and the committed files read back into names independently of the script."""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

MAKEMORE = Path(__file__).resolve().parent.parent / "samples" / "makemore"


def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_names", MAKEMORE / "make_names.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_name_is_one_row_a_character_with_the_three_before_it() -> None:
    # "emma": e = 5, m = 13, a = 1, and '.' = 0 before the start and at the end.
    assert script().rows(["emma"]) == [[0, 0, 0, 5], [0, 0, 5, 13], [0, 5, 13, 13], [5, 13, 13, 1], [13, 13, 1, 0]]


def test_a_census_file_is_read_in_order_and_a_bad_name_is_refused_at_its_line() -> None:
    module = script()
    lines = ["MARY           2.629  2.629      1", "", "PATRICIA       1.073  3.702      2"]
    assert module.read_census(lines) == ["mary", "patricia"]
    with pytest.raises(ValueError, match="line 2: 'O-BRIEN'"):
        module.read_census(["ANN 1 1 1", "O-BRIEN 1 2 2"])
    assert module.merged([["ann", "lee"], ["lee", "bob"]]) == ["ann", "lee", "bob"]


def names_of(path: Path) -> list[str]:
    """The names a rows file spells: a row with an empty context starts one, y = 0 ends it."""
    with path.open() as rows_file:
        reader = csv.reader(rows_file)
        assert next(reader) == ["x[0]", "x[1]", "x[2]", "y"]
        found, current = [], ""
        for row in reader:
            context, y = [int(v) for v in row[:3]], int(row[3])
            assert context == [0, 0, 0] if not current else context[-1] == ord(current[-1]) - ord("a") + 1
            if y == 0:
                found.append(current)
                current = ""
            else:
                current += chr(ord("a") + y - 1)
        assert current == ""
        return found


def test_the_committed_rows_spell_the_names_of_names_txt_split_80_10_10() -> None:
    names = (MAKEMORE / "names.txt").read_text().split("\n")[:-1]
    assert len(names) == len(set(names)) == 5163
    assert names[:3] == ["mary", "patricia", "linda"]  # the Census's most frequent female names first
    parts = [names_of(MAKEMORE / f"{part}.csv") for part in ("train", "dev", "test")]
    assert [len(p) for p in parts] == [4130, 516, 517]  # int(0.8 * 5163), then int(0.9 * 5163) - 4130
    assert sorted(name for part in parts for name in part) == sorted(names)
