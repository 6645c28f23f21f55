"""files.program_inputs and files.set_values without Click: a program and its values read for a
caller that collects warnings in a list, and each mistake as the library's own exception."""

import contextlib

import numpy as np
import pytest

from autodiff_cli.errors import InputError
from autodiff_cli.files.program_inputs import UsageMistake, load_program_and_values
from autodiff_cli.files.set_values import BadValue, parse_value
from autodiff_cli.language.program import ArrayLiteral


@contextlib.contextmanager
def no_bar(description):
    yield lambda done, total: None


def load(source=None, expr=None, file=None, assignments=None, values_file=None):
    warnings = []
    program, values, values_source = load_program_and_values(
        source, expr, file, assignments or {}, values_file, warn=warnings.extend, notify=lambda message: None,
        progress=no_bar)
    return program, values, values_source, warnings


def test_set_wins_over_the_values_file(tmp_path) -> None:
    values_file = tmp_path / "v.json"
    values_file.write_text('{"a": 1, "b": 2}')
    program, values, values_source, warnings = load(expr="y = a*b", assignments={"b": 5.0},
                                                    values_file=str(values_file))
    assert values == {"a": 1.0, "b": 5.0} and values_source.name == str(values_file) and warnings == []
    assert [v.name for v in program.inputs] == ["a", "b"]


def test_text_that_looks_like_a_missing_file_is_run_with_a_warning() -> None:
    _, _, _, warnings = load(source="x/2")
    assert warnings == [("there is no file named 'x/2'; reading it as program text (-e/--expr says so and "
                        "silences this)")]


def test_the_program_given_twice_is_a_usage_mistake() -> None:
    with pytest.raises(UsageMistake, match="give the program once"):
        load(source="y = 1", expr="y = 2")


def test_a_computed_name_is_refused_at_its_statement() -> None:
    with pytest.raises(InputError, match="'y' is computed by the program, so --set cannot give it a value"):
        load(expr="y = 2*x", assignments={"y": 1.0})


def test_a_value_is_a_number_a_json_tensor_or_an_npy_file(tmp_path) -> None:
    warnings = []
    assert parse_value("x", "-2.5e-1", warnings.extend) == (-0.25, None)
    assert parse_value("W", "[[1, 2], [3, 4]]", warnings.extend) == (ArrayLiteral((2, 2), (1.0, 2.0, 3.0, 4.0)),
                                                                      None)
    path = tmp_path / "w.npy"
    np.save(path, np.array([0.5, -1.0]))
    assert parse_value("w", str(path), warnings.extend) == (ArrayLiteral((2,), (0.5, -1.0)), str(path))
    assert parse_value("t", "1e-400", warnings.extend) == (0.0, None)
    assert warnings == ["value of t: 1e-400 is smaller than the smallest float (about 5e-324), so it is taken as 0"]


@pytest.mark.parametrize(("text", "said"), [
    ("0.5,-0.3", "for a tensor, write it as JSON: x='[0.5, -0.3]'"),
    ("[1, ", "is not a JSON array of numbers"),
    ("missing.npy", "cannot read 'missing.npy' as a .npy file"),
])
def test_a_bad_value_says_how_to_write_it(text: str, said: str) -> None:
    with pytest.raises(BadValue, match=None) as raised:
        parse_value("x", text, lambda warnings: None)
    assert said in str(raised.value)
