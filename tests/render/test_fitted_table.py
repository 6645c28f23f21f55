"""eval's table fits the console's width and never cuts a number (issue 36).

At 60, 80 and 120 columns, for scalar and tensor programs, every line is within the width, and
every number shown is one the program computed: a number of the wide, one-line table (its whole
tensors and its summaries), never a piece of one.  A scalar table that fits is byte for byte the
table it always was.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from autodiff_cli.cli.options import load_inputs
from autodiff_cli.execute import evaluate
from autodiff_cli.execute.run import run_program
from autodiff_cli.render import report
from autodiff_cli.render.fitted_table import pieces

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")

LONG_NAMES = ("a_rather_long_input_name = 0.123456789012345\nsecond_long_input = -2.718281828459045\n"
              "the_output_variable = tanh(a_rather_long_input_name * second_long_input) / 3\n")


def rendered(renderable, width: int) -> str:
    console = Console(width=width, color_system=None, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def tensor_table(name: str, precision=None):
    program, values = load_inputs(str(SAMPLES / name), None, None, {}, None)
    return report.table(run_program(program, values), precision=precision)


def scalar_table(source: str):
    program, values = load_inputs(source, None, None, {}, None)
    return report.to_table(evaluate(program, values))


def numbers_shown(text: str) -> set[str]:
    return set(NUMBER.findall(text))


def numbers_computed(table) -> set[str]:
    """Every number the table may show: those of its entries, whole or summarised."""
    found = set(NUMBER.findall(table.title))
    for entry in table.entries:
        found |= numbers_shown(" ".join(entry.labels))  # shapes, and digits in names
        for text in (entry.value, entry.grad, entry.short_value or "", entry.short_grad or ""):
            found |= numbers_shown(" ".join(pieces(text)))
    return found


TABLES = {
    "moons_mlp": lambda: tensor_table("moons_mlp.ad"),
    "regression_matrix": lambda: tensor_table("regression_matrix.ad"),
    "mlp (scalar)": lambda: scalar_table(str(SAMPLES / "mlp.ad")),
    "long names (scalar)": lambda: scalar_table(LONG_NAMES),
}


@pytest.mark.parametrize("width", [60, 80, 120])
@pytest.mark.parametrize("name", list(TABLES))
def test_a_table_fits_its_width_and_cuts_no_number(name: str, width: int) -> None:
    table = TABLES[name]()
    text = rendered(table, width)
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= width, text
    shown = numbers_shown(text)
    assert shown, text
    assert shown <= numbers_computed(table), (shown - numbers_computed(table), text)


def test_the_moons_gradients_are_whole_at_80_columns() -> None:
    """The issue's case: at 80 columns the grad column was cut to ``[-1.0`` and ``1.``."""
    text = rendered(tensor_table("moons_mlp.ad"), 80)
    # b3's gradient: d hinge/d b3 = -y = 1 (the sample's first row has y = -1; the hinge is active)
    assert "[1.0]" in text
    assert "grad" in text


@pytest.mark.parametrize("width", [80, 120, 200])
def test_a_scalar_table_that_fits_is_unchanged(width: int) -> None:
    program, values = load_inputs(str(SAMPLES / "mlp.ad"), None, None, {}, None)
    evaluation = evaluate(program, values)
    title = f"{evaluation.output} = {evaluation.root.data!r}    (grad = d{evaluation.output}/d name)"
    before = report.cells_table(title, ("name", "kind", "op"), report._text_cells(evaluation, None, None))
    assert rendered(report.to_table(evaluation), width) == rendered(before, width)


def test_the_narrowest_layout_keeps_value_and_grad_apart() -> None:
    text = rendered(tensor_table("regression_matrix.ad"), 40)
    lines = text.splitlines()
    w = lines.index("W  input  [2, 1]")
    assert lines[w + 1].split() == ["value", "[[1.0],", "[-1.0]]"]
    # dL/dW = (2/N) X^T (P - Y) at the sample's W = [1, -1], by NumPy: [[-4.7436383220253955], [0.662354592102919]]
    assert lines[w + 2].startswith("  grad  [[-4.74363832202")


# --- check's and explain's tables (FittedRows) -------------------------------------------------------


def check_table(name: str):
    from autodiff_cli.analysis.check import check
    from autodiff_cli.render import check as render_check

    program, values = load_inputs(str(SAMPLES / name), None, None, {}, None)
    return render_check.to_table(check(program, values))


def explain_rich(name: str):
    from autodiff_cli.analysis.steps import explain_program
    from autodiff_cli.render.explain import to_rich

    program, values = load_inputs(str(SAMPLES / name), None, None, {}, None)
    return to_rich(explain_program(program, values))


def cell_numbers(renderable) -> set[str]:
    """Every number the cells, headers, title and caption of FittedRows tables hold, whole."""
    from autodiff_cli.render.fitted_table import FittedRows

    tables = [renderable] if isinstance(renderable, FittedRows) else [
        part for part in getattr(renderable, "renderables", []) if isinstance(part, FittedRows)]
    found: set[str] = set()
    for table in tables:
        found |= numbers_shown(table.title + " " + table.caption)
        found |= numbers_shown(" ".join(column.header for column in table.columns))
        for cells, _ in table.rows:
            found |= numbers_shown(" ".join(cells))
    return found


@pytest.mark.parametrize("width", [60, 80, 120])
@pytest.mark.parametrize("name", ["karpathy.ad", "regression_matrix.ad", "moons_mlp.ad"])
def test_check_and_explain_fit_the_width_without_cutting_a_number(name, width) -> None:
    # At 80 columns these tables were 100 to 157 wide (a terminal wraps every line) or cut
    for renderable in (check_table(name), explain_rich(name)):
        text = rendered_as_the_cli_does(renderable, width)
        lines = text.splitlines()
        assert max(map(len, lines)) <= width, (name, width, max(lines, key=len))
        shown = numbers_shown(text)
        assert shown <= cell_numbers(renderable) | numbers_shown(_heading_lines(renderable)), \
            sorted(shown - cell_numbers(renderable))[:5]


def rendered_as_the_cli_does(renderable, width: int) -> str:
    """As cli.console.print_rich prints: the console widened to the renderable's least width, since
    Rich would otherwise crop each line at the console's edge (the cropped columns lost)."""
    from rich.measure import Measurement

    console = Console(width=width, color_system=None, record=True, file=io.StringIO())
    console.width = max(width, Measurement.get(console, console.options.update_width(1 << 16), renderable).minimum)
    console.print(renderable)
    return console.export_text()


def _heading_lines(renderable) -> str:
    """The text outside the tables: headings and the gradients' lines of explain."""
    from rich.text import Text

    return " ".join(part.plain for part in getattr(renderable, "renderables", []) if isinstance(part, Text))


def test_a_narrow_check_stacks_its_columns_before_it_gives_up_the_table() -> None:
    table = check_table("karpathy.ad")
    wide, narrow = rendered(table, 120), rendered(table, 60)
    assert "┃ input ┃ value ┃ reverse ┃ forward ┃" in wide  # as it always was, where it fits
    lines = narrow.splitlines()
    a = next(i for i, line in enumerate(lines) if line.startswith("│ a "))
    # a over its value 2.0; reverse 6.0 over forward 6.0; the finite difference over its error
    assert re.fullmatch(r"│ a +│ +6\.0 │ +5\.9999999999633316 │ 3\.67e-11 +│", lines[a])
    assert re.fullmatch(r"│ 2\.0 +│ +6\.0 │ +3\.98e-09 │ 6\.11e-12 +│", lines[a + 1])
    assert re.fullmatch(r"│ +│ +│ +│ ok +│", lines[a + 2])


def test_the_narrowest_check_is_an_input_a_block() -> None:
    text = rendered(check_table("regression_matrix.ad"), 40)
    lines = text.splitlines()
    assert "┃" not in text and max(map(len, lines)) <= 40
    start = lines.index("W[0, 0]  ok")
    assert lines[start + 1].startswith("  value 1.0  reverse -4.7436383220253955")  # NumPy's (2/N) X^T (P - Y)
