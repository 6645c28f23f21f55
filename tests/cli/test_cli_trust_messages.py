"""Issue 27: messages where there were tracebacks or small lies.  A CSV or TSV cell longer than
the csv module's field limit is placed wherever it is read (a number cell that overflows or
underflows, read again to place the misread number; a column name), in batch and fit."""

from __future__ import annotations

import csv

import pytest

from autodiff_cli.cli import main

LIMIT = csv.field_size_limit()
TOO_LONG = "this cell is longer than 131,072 characters, the most a cell may hold"


def _long_number_rows(fmt: str, kind: str) -> str:
    sep = "," if fmt == "csv" else "\t"
    number = {"overflow": "1" + "0" * (LIMIT + 10_000), "underflow": "0." + "0" * (LIMIT + 10_000) + "1"}[kind]
    return f"x{sep}y\n2{sep}3\n{number}{sep}1\n"


@pytest.mark.parametrize("on_error", ["fail", "skip", "nan"])
@pytest.mark.parametrize("kind", ["overflow", "underflow"])
@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_a_number_cell_longer_than_the_field_limit_is_placed_in_batch(runner, tmp_path, fmt, kind, on_error) -> None:
    rows = tmp_path / f"r.{fmt}"
    rows.write_text(_long_number_rows(fmt, kind))
    result = runner.invoke(main, ["batch", "L = x*y", str(rows), "--on-error", on_error])
    assert result.exit_code == 1
    assert f"r.{fmt}:3:1: error: {TOO_LONG}\n" in result.stderr, result.stderr[-500:]
    assert "Traceback" not in result.stderr and result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_a_number_cell_longer_than_the_field_limit_is_placed_in_fit(runner, tmp_path, fmt) -> None:
    rows = tmp_path / f"r.{fmt}"
    rows.write_text(_long_number_rows(fmt, "overflow"))
    result = runner.invoke(main, ["fit", "loss = (w-x*y)**2", "--set", "w=0", "--data", str(rows), "--steps", "1"])
    assert result.exit_code == 1
    assert isinstance(result.exception, SystemExit)
    assert f"r.{fmt}:3:1: error: {TOO_LONG}\n" in result.stderr, result.stderr[:300]


def test_a_long_column_name_is_placed_by_read_cells() -> None:
    from autodiff_cli.errors import InputError
    from autodiff_cli.files.rows.delimited import read_cells

    with pytest.raises(InputError) as caught:
        read_cells("h.csv", 1, "x," + "z" * (LIMIT + 1), ",", what="first line")
    assert str(caught.value).startswith("h.csv:1:3: error: this column name is longer than 131,072 characters, "
                                        "the most a column name may hold\n")


@pytest.mark.parametrize("command", ["batch", "fit"])
@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_a_column_name_longer_than_the_field_limit_is_placed(runner, tmp_path, fmt, command) -> None:
    sep = "," if fmt == "csv" else "\t"
    rows = tmp_path / f"h.{fmt}"
    rows.write_text(f"x{sep}{'z' * (LIMIT + 10)}\n1{sep}2\n")
    args = ["batch", "L = x", str(rows)] if command == "batch" else ["fit", "loss = (w-x)**2", "--set", "w=0",
                                                                     "--data", str(rows), "--steps", "1"]
    result = runner.invoke(main, args)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"{rows}:1:3: error: this column name is longer than 131,072 characters"), \
        result.stderr[:300]


# --- small lies ----------------------------------------------------------------------------------


def test_latex_writes_a_variable_named_underscore_as_text(runner) -> None:
    result = runner.invoke(main, ["diff", "f = _*x", "--format", "latex"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ("\\begin{aligned}\n\\frac{\\partial f}{\\partial \\mathrm{\\_}} &= x \\\\\n"
                             "\\frac{\\partial f}{\\partial x} &= \\mathrm{\\_}\n\\end{aligned}\n")


def test_a_structure_only_graph_labels_unnamed_boxes_with_what_they_compute(runner) -> None:
    result = runner.invoke(main, ["graph", "y = (a + b)*c - tanh(a)**2", "--format", "dot"])
    assert result.exit_code == 0, result.stderr
    boxes = [line.split('"{ ')[1].split(' }"')[0] for line in result.stdout.splitlines() if '[label="{ ' in line]
    assert boxes == ["a", "b", "a + b", "c", "(a + b)*c", "tanh(a)", "tanh(a)**2", "y"]


def test_plot_warns_when_the_output_does_not_depend_on_the_range(runner) -> None:
    result = runner.invoke(main, ["plot", "u = w*2; y = x**2", "--output", "u", "--range", "x=0:1", "--set", "w=1",
                                  "--format", "text"])
    assert result.exit_code == 0, result.stderr
    assert ("warning: u does not depend on x: its curve is flat and its derivative 0 over the whole range; plot "
            "another --output, or vary one of its inputs") in result.stderr.splitlines()
    plotted = runner.invoke(main, ["plot", "u = w*2; y = x**2", "--range", "x=0:1", "--set", "w=1", "--format", "text"])
    assert "does not depend" not in plotted.stderr


def test_a_one_point_gap_is_drawn_where_the_legend_says_undefined(runner, tmp_path) -> None:
    import re

    out = tmp_path / "p.svg"
    result = runner.invoke(main, ["plot", "y = 1/x", "--range", "x=-1:1", "--points", "1001", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    assert "(1 point)" in result.stderr
    svg = out.read_text()
    for key in ("f", "df"):
        group = svg[svg.index(f'<g id="gap-{key}-0"'):]
        element = group[:group.index("</g>")]
        assert re.search(r"stroke-width: [1-9]", element), element  # a visible line, not a span of no width
