"""Pictures of the curves (render/plot.py): SVG parsed, PNG and PDF checked, text plots read back."""

import itertools
import math
import re
import struct
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from autodiff_cli.analysis.curves import sample_curves
from autodiff_cli.language import parse
from autodiff_cli.render import plot

SVG = "{http://www.w3.org/2000/svg}"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def tanh_curves(**options):
    return sample_curves(parse("y = tanh(x)"), {}, "x", -3.0, 3.0, points=201, **options)


def path_points(svg: bytes, gid: str) -> list[list[tuple[float, float]]]:
    """The runs of points of the line whose group id is ``gid`` (a new run at every 'M')."""
    root = ET.fromstring(svg)
    group = next(g for g in root.iter(f"{SVG}g") if g.get("id") == gid)
    d = next(group.iter(f"{SVG}path")).get("d")
    runs: list[list[tuple[float, float]]] = []
    for command, x, y in re.findall(r"([ML])\s*(-?[\d.]+)\s+(-?[\d.]+)", d):
        if command == "M":
            runs.append([])
        runs[-1].append((float(x), float(y)))
    return runs


def test_svg_parses_and_draws_one_line_per_curve_with_every_point() -> None:
    svg = plot.to_image(tanh_curves(order=2, tangents_at=[0.5]), "svg", title="y = tanh(x)")
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    for gid in ("curve-f", "curve-df", "curve-d2f"):
        [run] = path_points(svg, gid)
        assert len(run) == 201, gid
    [tangent] = path_points(svg, "tangent-0")
    assert len(tangent) == 2
    title = root.find(".//{http://purl.org/dc/elements/1.1/}title")
    assert title is not None and title.text == "y = tanh(x)"


def test_svg_y_coordinates_follow_the_data() -> None:
    # On screen y grows downwards: the highest f is the smallest y, at the right end for tanh.
    curves = tanh_curves()
    [run] = path_points(plot.to_image(curves, "svg", title="t"), "curve-f")
    ys = np.array([y for _, y in run])
    assert np.all(np.diff(ys) < 0)  # tanh increases
    xs = np.array([x for x, _ in run])
    assert np.allclose(np.diff(xs), np.diff(xs)[0], rtol=1e-3)  # an even grid stays even


def test_a_gap_breaks_the_line() -> None:
    curves = sample_curves(parse("y = log(x)"), {}, "x", -1.0, 1.0, points=21)
    [run] = path_points(plot.to_image(curves, "svg", title="t"), "curve-f")
    assert len(run) == 10  # x = 0.1 ... 1: the 11 points up to 0 are undefined


def test_a_line_broken_in_the_middle_has_two_runs() -> None:
    curves = sample_curves(parse("y = log(x*x - 1)"), {}, "x", -3.0, 3.0, points=61)
    runs = path_points(plot.to_image(curves, "svg", title="t"), "curve-f")
    assert [len(run) for run in runs] == [20, 20]  # |x| > 1: x = -3..-1.1 and 1.1..3


@pytest.mark.parametrize("fmt", ["svg", "png", "pdf"])
def test_the_same_curves_give_the_same_bytes(fmt: str) -> None:
    curves = tanh_curves(tangents_at=[1.0])
    assert plot.to_image(curves, fmt, title="t") == plot.to_image(curves, fmt, title="t")


def test_svg_and_pdf_carry_no_date() -> None:
    curves = tanh_curves()
    assert b"<dc:date>" not in plot.to_image(curves, "svg", title="t")
    assert b"/CreationDate" not in plot.to_image(curves, "pdf", title="t")


@pytest.mark.parametrize("order, panels", [(1, 2), (2, 3)])
def test_png_signature_and_size(order: int, panels: int) -> None:
    png = plot.to_image(tanh_curves(order=order), "png", title="t")
    assert png.startswith(PNG_SIGNATURE)
    width, height = struct.unpack(">II", png[16:24])  # the IHDR chunk
    assert width == round(plot.WIDTH_INCHES * plot.DPI)
    assert height == round((plot.PANEL_INCHES * panels + 0.7) * plot.DPI)


def test_pdf_is_a_pdf() -> None:
    pdf = plot.to_image(tanh_curves(), "pdf", title="t")
    assert pdf.startswith(b"%PDF-") and pdf.rstrip().endswith(b"%%EOF")


def test_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot draw 'gif'"):
        plot.to_image(tanh_curves(), "gif", title="t")


def test_text_plot_has_a_panel_per_curve_with_aligned_axes() -> None:
    text = plot.to_text(tanh_curves(order=2, tangents_at=[0.5]), title="y = tanh(x)", width=40, height=9)
    lines = text.splitlines()
    assert lines[0] == "y = tanh(x)"
    headings = ["y", "dy/dx", "d\u00b2y/dx\u00b2"]
    assert [line for line in lines if line in headings] == headings
    axes = [line for line in lines if line.lstrip().startswith("+-")]
    assert len(axes) == 3 and len({line.index("+") for line in axes}) == 1
    assert lines[-1].startswith("tangent at x = 0.5: y = 0.462117, slope dy/dx = 0.786448")


def test_text_plot_puts_the_curve_where_the_values_are() -> None:
    # y = x on [0, 1]: one star per column, rising one row every (width - 1) / (height - 1) columns.
    curves = sample_curves(parse("y = x"), {}, "x", 0.0, 1.0, points=101)
    lines = plot.to_text(curves, title="t", width=21, height=11).splitlines()
    panel = lines[3:14]  # the panel of y
    assert panel[0].startswith("         1 |") and panel[-1].startswith("         0 |")
    rows = {}
    for r, line in enumerate(panel):
        for c, char in enumerate(line[12:]):
            if char == "*":
                rows[c] = r
    assert rows == {c: 10 - round(c / 2) for c in range(21)}


def test_text_plot_of_an_undefined_curve_says_so() -> None:
    curves = sample_curves(parse("y = log(x)"), {}, "x", -2.0, -1.0, points=11)
    assert "(undefined everywhere from -2 to -1)" in plot.to_text(curves, title="t")


# --- the text plot joins its points (bug 8) -------------------------------------------------
# With few points each character column used to show its nearest point, so y = x with 2 points
# was drawn as a step. The columns now read the line the SVG draws: straight between
# neighbouring points, broken where a point is undefined. The expectations below come from the
# functions themselves (Python's math), not from the program's output.


def _expected_line(function, low: float, high: float, points: int,
                   width: int) -> tuple[list[float | None], list[bool]]:
    """The polyline through the defined points of ``function`` read at each column's x (None: not
    drawn), and whether it runs unbroken from the previous column to each column."""

    def defined(x: float) -> float | None:
        try:
            return function(x)
        except (ValueError, ZeroDivisionError):
            return None

    xs = [low + (high - low) * k / (points - 1) for k in range(points)]
    ys = [defined(x) for x in xs]
    line, joined = [], []
    for c in range(width):
        x = low + (high - low) * c / (width - 1)
        before = low + (high - low) * (c - 1) / (width - 1)
        joined.append(c > 0 and line[-1] is not None
                      and all(y is not None for x_k, y in zip(xs, ys) if before <= x_k <= x))
        k = min(points - 2, int((x - low) / (high - low) * (points - 1)))
        near = [j for j in (k, k + 1) if abs(xs[j] - x) <= 1e-12 * max(1.0, abs(x))]
        if near:  # on a point: that point alone
            line.append(ys[near[0]])
        elif ys[k] is None or ys[k + 1] is None:  # a segment with an undefined end is not drawn
            line.append(None)
        else:
            t = (x - xs[k]) / (xs[k + 1] - xs[k])
            line.append(ys[k] + t * (ys[k + 1] - ys[k]))
    joined = [j and y is not None for j, y in zip(joined, line)]
    return line, joined


def _star_rows(text: str, heading: str, height: int) -> list[list[int]]:
    """The rows holding '*' in each column of the panel under ``heading``."""
    lines = text.splitlines()
    panel = lines[lines.index(heading) + 1:][:height]
    grids = [line[line.index("|") + 1:] for line in panel]
    width = max(len(grid) for grid in grids)
    return [[r for r, grid in enumerate(grids) if c < len(grid) and grid[c] == "*"] for c in range(width)]


@pytest.mark.parametrize("program, function, low, high, points, width", [
    ("y = x", lambda x: x, 0.0, 1.0, 2, 21),
    ("y = x", lambda x: x, -1.0, 1.0, 2, 64),
    ("y = 2 - 3*x", lambda x: 2 - 3 * x, 0.0, 1.0, 2, 64),
    ("y = x*x", lambda x: x * x, -1.0, 1.0, 3, 64),
    ("y = sin(x)", math.sin, -3.0, 3.0, 6, 40),
    ("y = sqrt(x*x - 1)", lambda x: math.sqrt(x * x - 1), -3.0, 3.0, 5, 64),
    ("y = log(x)", math.log, -1.0, 1.0, 5, 64),
    ("y = abs(x)/x", lambda x: abs(x) / x, -1.0, 1.0, 3, 64),
    # Many points, one undefined between two drawn columns: no line across.
    ("y = abs(x)/x", lambda x: abs(x) / x, -1.0, 1.0, 201, 64),
], ids=["line-2-points-narrow", "line-2-points", "falling-line-2-points", "v-3-points", "sin-6-points",
        "gap-in-the-middle", "gap-on-the-left", "one-undefined-point", "jump-over-one-undefined-point"])
def test_text_columns_follow_the_line_between_points_and_gaps_stay_empty(
        program, function, low, high, points, width) -> None:
    height = 11
    curves = sample_curves(parse(program), {}, "x", low, high, points=points)
    expected, joined = _expected_line(function, low, high, points, width)
    at_points = _expected_line(function, low, high, points, points)[0]  # one column per point
    # The test's function is undefined exactly where the program is.
    assert [y is None for y in at_points] == list(np.isnan(curves.f))
    top, bottom = max(y for y in at_points if y is not None), min(y for y in at_points if y is not None)
    text = plot.to_text(curves, title="t", width=width, height=height)
    lines = text.splitlines()
    panel = lines[lines.index("y") + 1:][:height]
    assert panel[0].startswith(f"{top:.4g}".rjust(10) + " |")  # the panel spans the points' values
    assert panel[-1].startswith(f"{bottom:.4g}".rjust(10) + " |")
    rows = _star_rows(text, "y", height)
    assert len(rows) <= width

    def row_of(y: float) -> float:  # where y falls, in rows from the top, before rounding
        return (top - y) / (top - bottom) * (height - 1)

    for c in range(width):
        stars = rows[c] if c < len(rows) else []
        if expected[c] is None:
            assert stars == [], f"column {c} lies in a gap but is drawn"
            continue
        here = row_of(expected[c])
        assert any(abs(r - here) <= 0.5 + 1e-9 for r in stars), (c, here, stars)
        # Any other star of the column joins it to the previous column's row, and goes no further;
        # none where the line breaks between the two.
        previous = row_of(expected[c - 1]) if joined[c] else here
        span = (min(previous, here) - 0.5 - 1e-9, max(previous, here) + 0.5 + 1e-9)
        assert all(span[0] <= r <= span[1] for r in stars), (c, span, stars)


@pytest.mark.parametrize("points", [2, 3, 4], ids=lambda n: f"{n}-points")
def test_a_straight_line_with_few_points_climbs_one_row_at_a_time(points: int) -> None:
    # y = x on [-1, 1] (the bug's example): one star per column, rows moving monotonically from
    # the bottom row to the top row, never more than one row between neighbouring columns.
    curves = sample_curves(parse("y = x"), {}, "x", -1.0, 1.0, points=points)
    rows = _star_rows(plot.to_text(curves, title="t"), "y", 11)
    assert len(rows) == 64
    assert all(len(stars) == 1 for stars in rows), rows
    column_rows = [stars[0] for stars in rows]
    assert column_rows[0] == 10 and column_rows[-1] == 0
    assert all(0 <= a - b <= 1 for a, b in itertools.pairwise(column_rows)), column_rows
