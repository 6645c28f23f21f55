"""execute/columns.py: an entry's name, and the inputs that columns of rows give (entry columns
stacked into tensors), for a program of one row and for a program of a whole batch of rows.
Expected arrays are written out by hand from the columns."""

from __future__ import annotations

import numpy as np
import pytest

from autodiff_cli.errors import InputError
from autodiff_cli.execute.columns import entry_column, entry_columns, input_rows, split_column
from autodiff_cli.language import parse


def test_an_entry_is_named_in_row_major_order_and_read_back() -> None:
    assert entry_columns("W", (2, 2)) == ["W[0, 0]", "W[0, 1]", "W[1, 0]", "W[1, 1]"]
    assert entry_columns("b", ()) == ["b"]
    assert entry_column("x", (3,)) == "x[3]"
    assert split_column("W[ 1,0]") == ("W", (1, 0))
    assert split_column("W") is None


def test_entry_columns_are_stacked_into_each_row_s_tensor() -> None:
    program = parse("x = [0, 0]\nw = [1, 1]\ny = 0\nloss = (sum(x * w) - y)**2\n", "t.ad")
    rows = input_rows(program, {"x[1]": [3.0, 4.0], "y": [1.0, 2.0], "x[0]": [5.0, 6.0]})
    assert rows["x"].tolist() == [[5.0, 3.0], [6.0, 4.0]]
    assert rows["y"].tolist() == [1.0, 2.0]


def test_an_entry_left_out_of_a_declared_shape_is_named() -> None:
    program = parse("x = [0, 0, 0]\nloss = sum(x)\n", "t.ad")
    with pytest.raises(InputError) as caught:
        input_rows(program, {"x[0]": [1.0], "x[2]": [2.0]})
    assert caught.value.message == ("the columns of input 'x' do not make a tensor (the program declares 'x' "
                                    "of shape [3]): the column x[1] is missing")


def test_a_batch_program_s_rows_take_the_shape_given_for_one_row() -> None:
    """X is declared with the batch's 2 rows in front; a row of it is [2], from X[0] and X[1]; T's
    column gives one number a row although T is declared [2]."""
    program = parse("X = [[0, 0], [0, 0]]\nT = [0, 0]\nw = [1, 1]\nloss = mean((X @ w - T)**2)\n", "t.ad")
    rows = input_rows(program, {"X[0]": [1.0, 2.0, 3.0], "X[1]": [4.0, 5.0, 6.0], "T": [7.0, 8.0, 9.0]},
                      {"X": (2,), "T": ()})
    np.testing.assert_array_equal(rows["X"], [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]])
    np.testing.assert_array_equal(rows["T"], [7.0, 8.0, 9.0])
    with pytest.raises(InputError) as caught:
        input_rows(program, {"X[1]": [1.0], "T": [2.0]}, {"X": (2,), "T": ()})
    assert caught.value.message == "the columns of input 'X' do not make a tensor: the column X[0] is missing"
    assert "a row of 'X' of shape [2] is read from the columns X[0], X[1]" in caught.value.hint
