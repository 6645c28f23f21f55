"""Pictures of ``analysis.curves``: f and its derivatives as SVG, PNG or PDF, or as characters.

``to_image`` draws one panel per curve, stacked over the same x axis: f with the tangent
lines asked for, then f' with a dot where each tangent touches (the slope of the tangent is
the value of f' there: the picture of "the derivative is the slope"), then f'' with
``--order 2``.  Runs of points where f is undefined are shaded and the curves break there.
Drawn by matplotlib, imported on first use only, with its own fonts (no system package); the
same curves give the same bytes (a fixed hash salt for SVG ids, no dates in the files).

``to_text`` is the same in characters, for a quick look in a terminal: each column reads the
line the picture draws (straight between neighbouring points, broken where one is undefined).
Pure: bytes or text out, nothing printed or written.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import listed
from .palette import PASSES

if TYPE_CHECKING:
    from ..analysis.curves import Curves

__all__ = ["FORMATS", "PLOT_COLOURS", "curve_names", "to_image", "to_text"]

FORMATS = ("svg", "png", "pdf")
# Okabe and Ito's blue and the step-through page's dark vermillion and wine (checked there for
# colour-blind readers); each curve also has a panel of its own, so none is told by colour alone.
PLOT_COLOURS = {"f": PASSES["forward"], "df": PASSES["backward"], "d2f": PASSES["accumulate"], "tangent": "#000000",
                "gap": "#e4e4e4"}  # render.palette's
WIDTH_INCHES = 7.0
PANEL_INCHES = 2.3
DPI = 150  # PNG: 1050 pixels wide
# A panel whose full range is over this many times the range of its middle 98% of points is cut
# to the latter (1/x near 0: 10x; tanh, exp over a wide range: about 1x).
SQUASHED = 5.0
# A curve whose values differ by less than this, relative to their size, is drawn as flat.
FLAT = 1e-6
TEXT_GUTTER = 10  # characters left of a text panel's axis: "-1.234e+05"
# Values beyond this size are not drawn (and said so): the axes' arithmetic (the width of a range,
# its margins, tick steps) overflows near the largest float, 1.8e308.
DRAWABLE = 1e300


def curve_names(curves: Curves) -> dict[str, str]:
    """How each curve is labelled: y, dy/dx, d²y/dx²."""
    y, x = curves.output, curves.variable
    return {"f": y, "df": f"d{y}/d{x}", "d2f": f"d\u00b2{y}/d{x}\u00b2"}


def _fixed_text(curves: Curves, limit: int = 6) -> str:
    items = [f"{name} = {_fixed_value(value)}" for name, value in curves.fixed.items()]
    if not items:
        return ""
    return f"with {listed(items, limit)}"


def _fixed_value(value: Any) -> str:
    """A number as ``%g``; a tensor as its entries when it has few, else its shape."""
    import numpy as np

    array = np.asarray(value)
    if array.ndim == 0:
        return f"{float(array):g}"
    if array.size <= 4:
        return str(np.vectorize(lambda x: f"{x:g}")(array).tolist()).replace("'", "")
    return "[" + ", ".join(map(str, array.shape)) + "] tensor"


def _panels(curves: Curves) -> list[tuple[str, Any]]:
    panels = [("f", curves.f), ("df", curves.df)]
    if curves.d2f is not None:
        panels.append(("d2f", curves.d2f))
    return panels


def _broken_at_poles(curves: Curves, values: Any) -> tuple[Any, Any]:
    """x and ``values`` with a NaN point put between the two neighbours of each pole, so that
    the line breaks there instead of joining the branches (-999 to 999 through 1/x at 0)."""
    import numpy as np

    if not curves.poles:
        return curves.x, values
    after = np.array([index + 1 for index, _ in curves.poles])
    return (np.insert(curves.x, after, [where for _, where in curves.poles]),
            np.insert(np.asarray(values, dtype=float), after, np.nan))


def _drawable(values: Any) -> Any:
    """``values`` as a float array with NaN for what is not drawn: infinities and beyond ``DRAWABLE``."""
    import numpy as np

    array = np.asarray(values, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where(np.abs(array) <= DRAWABLE, array, np.nan)


def _nowhere_drawn(values: Any) -> str:
    """Why a curve has no point to draw: undefined everywhere, or too large where defined."""
    import numpy as np

    if np.isfinite(np.asarray(values, dtype=float)).any():
        return f"beyond \u00b1{DRAWABLE:g} everywhere"
    return "undefined everywhere"


def _finite_limits(values: Any, margin: float = 0.08) -> tuple[float, float] | None:
    """The range of the finite values, widened by ``margin`` of it (a flat curve gets room too).

    A curve that shoots off near a singularity (1/x near 0) would squash the rest into a line:
    when the full range is over ``SQUASHED`` times that of the middle 98% of the points, the
    limits are those of the middle 98% (widened by half), and ``_cut_off`` says so on the panel.
    Values beyond ``DRAWABLE`` count as undefined here (``_cut_off`` names them).
    """
    import numpy as np

    finite = _drawable(values)
    finite = finite[~np.isnan(finite)]
    if finite.size == 0:
        return None
    low, high = float(finite.min()), float(finite.max())
    if high - low <= FLAT * max(abs(low), abs(high)):
        # Flat, up to rounding (f'' = 6 +- 2e-10 from differences): a range of its own would
        # blow the rounding up into a jagged line.
        middle = (low + high) / 2
        pad = max(1.0, abs(middle)) * 0.5
        return middle - pad, middle + pad
    inner_low, inner_high = (float(q) for q in np.percentile(finite, [1.0, 99.0]))
    inner = inner_high - inner_low
    if inner > 0 and high - low > SQUASHED * inner:
        # Room to show the curve leaving the panel, but none beyond the values on the other side.
        return (max(inner_low - 0.5 * inner, low - margin * inner),
                min(inner_high + 0.5 * inner, high + margin * inner))
    pad = (high - low) * margin
    return low - pad, high + pad


def _cut_off(values: Any, limits: tuple[float, float]) -> str:
    """A note on what the limits leave out ("" when nothing)."""
    import numpy as np

    array = np.asarray(values, dtype=float)
    finite = array[np.isfinite(array)]
    huge = finite[np.abs(finite) > DRAWABLE]
    finite = finite[np.abs(finite) <= DRAWABLE]
    notes = []
    below = finite[finite < limits[0]]
    if below.size:
        notes.append(f"{below.size} {'point lies' if below.size == 1 else 'points lie'} below the panel, "
                     f"down to {float(below.min()):.4g}")
    above = finite[finite > limits[1]]
    if above.size:
        notes.append(f"{above.size} {'point lies' if above.size == 1 else 'points lie'} above the panel, "
                     f"up to {float(above.max()):.4g}")
    if huge.size:
        notes.append(f"{huge.size} {'point is' if huge.size == 1 else 'points are'} beyond \u00b1{DRAWABLE:g} "
                     "and not drawn")
    return "; ".join(notes)


# --- matplotlib ----------------------------------------------------------------------------


def to_image(curves: Curves, fmt: str, *, title: str) -> bytes:
    """The curves as ``fmt`` (svg, png or pdf) bytes."""
    if fmt not in FORMATS:
        raise ValueError(f"cannot draw {fmt!r}; the formats are {', '.join(FORMATS)}")
    import matplotlib
    from matplotlib.figure import Figure

    settings = {
        "svg.hashsalt": "autodiff-cli",  # ids of clip paths from a fixed salt, not a random one
        "svg.fonttype": "path",  # glyphs as outlines: the same picture with or without the fonts
        "font.family": "DejaVu Sans",  # shipped with matplotlib
        "font.size": 9.0,
        "path.simplify": False,  # every computed point is drawn: the picture is the data
        "axes.spines.top": False,
        "axes.spines.right": False,
    }
    with matplotlib.rc_context(settings):
        panels = _panels(curves)
        figure = Figure(figsize=(WIDTH_INCHES, PANEL_INCHES * len(panels) + 0.7), layout="constrained")
        axes = figure.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
        names = curve_names(curves)
        for ax, (key, values) in zip(axes, panels):
            _draw_panel(ax, curves, key, values, names[key])
        axes[-1].set_xlabel(curves.variable)
        axes[0].set_xlim(float(curves.x[0]), float(curves.x[-1]))
        subtitle = _fixed_text(curves)
        figure.suptitle(title + (f"\n{subtitle}" if subtitle else ""), fontsize=10)
        buffer = io.BytesIO()
        # No dates, so that the same curves give the same bytes; the title, for indexes and readers.
        metadata = {"svg": {"Date": None, "Title": title}, "png": {"Title": title},
                    "pdf": {"CreationDate": None, "ModDate": None, "Title": title}}[fmt]
        figure.savefig(buffer, format=fmt, dpi=DPI, metadata=metadata)
    return buffer.getvalue()


def _draw_panel(ax: Any, curves: Curves, key: str, values: Any, name: str) -> None:
    colour = PLOT_COLOURS[key]
    gap_label = "undefined"
    for number, gap in enumerate(curves.gaps):
        if gap.curve == "f" or gap.curve == key:
            if gap.start == gap.end:  # one point: a span of no width would show nothing, so a line
                shaded = ax.axvline(gap.start, color=PLOT_COLOURS["gap"], lw=3, label=gap_label, zorder=0)
            else:
                shaded = ax.axvspan(gap.start, gap.end, color=PLOT_COLOURS["gap"], lw=0, label=gap_label,
                                    zorder=0)
            shaded.set_gid(f"gap-{key}-{number}")
            gap_label = None  # one legend entry per panel
    limits = _finite_limits(values)
    ax.axhline(0.0, color="#999999", lw=0.6, zorder=1)
    line, = ax.plot(*_broken_at_poles(curves, _drawable(values)), color=colour, lw=1.8, label=name, zorder=3)
    line.set_gid(f"curve-{key}")  # the SVG group's id: what tests and scripts can find
    ax.set_ylabel(name)
    ax.grid(True, color="#eeeeee", lw=0.6)
    if limits is None:
        ax.text(0.5, 0.5, f"{name} is {_nowhere_drawn(values)} in this range", transform=ax.transAxes,
                ha="center", va="center", color="#555555")
        ax.set_ylim(-1.0, 1.0)
    else:
        ax.set_ylim(*limits)
        note = _cut_off(values, limits)
        if note:  # above the panel, where it covers nothing
            ax.set_title(note, loc="right", fontsize=7, color="#555555")
    for number, tangent in enumerate(curves.tangents):
        ax.axvline(tangent.at, color="#777777", lw=0.8, ls=":", zorder=2)
        if key == "f":
            ends = _tangent_ends(tangent, float(curves.x[0]), float(curves.x[-1]), limits)
            label = f"tangent at {curves.variable} = {tangent.at:g}: slope {tangent.slope:.4g}"
            touching, = ax.plot(ends, [tangent(e) for e in ends], color=PLOT_COLOURS["tangent"], lw=1.1,
                                ls="--", label=label, zorder=4)
            touching.set_gid(f"tangent-{number}")
            ax.plot([tangent.at], [tangent.value], "o", color=PLOT_COLOURS["tangent"], ms=4.5, zorder=5)
        elif key == "df":
            label = f"{name} = {tangent.slope:.4g} at {curves.variable} = {tangent.at:g}: the tangent's slope"
            ax.plot([tangent.at], [tangent.slope], "o", color=PLOT_COLOURS["tangent"], ms=4.5, zorder=5,
                    label=label)
    if limits is not None:
        ax.set_ylim(*limits)  # tangent lines do not stretch the axis
    ax.legend(loc="best", fontsize=8, frameon=False)


def _tangent_ends(tangent: Any, left: float, right: float, limits: tuple[float, float] | None) -> list[float]:
    """Where the tangent line enters and leaves the panel: the x range, cut where the line
    crosses the panel's top or bottom (so that no end lies out near 1e308, or at infinity)."""
    if limits is None or tangent.slope == 0.0:
        return [left, right]
    crossings = sorted(tangent.at + (y - tangent.value) / tangent.slope for y in limits)
    return [max(left, crossings[0]), min(right, crossings[1])]


# --- characters ----------------------------------------------------------------------------


def to_text(curves: Curves, *, title: str, width: int = 64, height: int = 11) -> str:
    """The curves as character plots, one panel per curve, ``width`` x ``height`` characters each."""
    names = curve_names(curves)
    lines = [title]
    subtitle = _fixed_text(curves)
    if subtitle:
        lines.append(subtitle)
    for key, values in _panels(curves):
        lines += ["", names[key]]
        lines += _text_panel(curves, key, values, width, height)
    for tangent in curves.tangents:
        lines.append(f"tangent at {curves.variable} = {tangent.at:g}: {curves.output} = {tangent.value:.6g}, "
                     f"slope {names['df']} = {tangent.slope:.6g} (drawn with '.')")
    return "\n".join(lines) + "\n"


def _between(previous: int | None, row: int) -> range:
    """The rows strictly between the previous column's row and this one's (drawn in this column)."""
    if previous is None:
        return range(0)
    step = 1 if row > previous else -1
    return range(previous + step, row, step)


def _line_at_columns(values: Sequence[float], width: int, breaks: Sequence[int] = ()) -> tuple[Any, Any]:
    """The line through the points as ``to_image`` draws it, read at each of ``width`` columns.

    The columns are evenly spaced over the grid of points, the first on the first point and the
    last on the last.  Between two neighbouring points the line is straight (linear
    interpolation, however few the points); a point that is not drawn (undefined, infinite,
    beyond ``DRAWABLE``) leaves out both segments that touch it, so a column there is NaN: a gap
    stays a gap.  Returns the line's value at each column (NaN where it is not drawn) and, per
    column, whether no such point lies between it and the previous column (the two may be joined).
    ``breaks`` are the segments (i: from point i to i + 1) not drawn at all: poles between points.
    """
    import numpy as np

    array = np.asarray(values, dtype=float)
    count = len(array)
    # Where each column falls on the grid, in points: exact where it lands on a point (integers
    # divided), so such a column reads that point alone, even next to a gap.
    position = np.arange(width) * (count - 1) / (width - 1)
    left = np.floor(position).astype(np.intp)
    fraction = position - left
    low, high = _drawable(array[left]), _drawable(array[np.minimum(left + 1, count - 1)])
    between = low + fraction * (high - low)  # NaN if either end is
    # Rounding must not carry a column past the ends of its segment (past the panel's edge).
    between = np.clip(between, np.fmin(low, high), np.fmax(low, high))
    along = np.where(fraction == 0, low, between)
    broken = np.asarray(sorted(breaks), dtype=np.intp)
    if broken.size:
        along = np.where((fraction > 0) & np.isin(left, broken), np.nan, along)
    # The points from column c - 1 to column c are ceil(position[c - 1]) .. floor(position[c]);
    # the line is joined if none of them is left out (counted among the few that are).
    with np.errstate(invalid="ignore"):
        left_out = np.flatnonzero(~(np.abs(array) <= DRAWABLE))
    first, last = left + (fraction > 0), left
    joined = np.zeros(width, dtype=bool)
    joined[1:] = (np.searchsorted(left_out, last[1:], side="right")
                  == np.searchsorted(left_out, first[:-1], side="left"))
    if broken.size:  # the segments from column c - 1 to column c: left[c - 1] .. ceil(position[c]) - 1
        through = np.ceil(position).astype(np.intp) - 1
        joined[1:] &= (np.searchsorted(broken, through[1:], side="right")
                       == np.searchsorted(broken, left[:-1], side="left"))
    return along, joined


def _text_panel(curves: Curves, key: str, values: Sequence[float], width: int, height: int) -> list[str]:
    low_x, high_x = float(curves.x[0]), float(curves.x[-1])
    limits = _finite_limits(values, margin=0.0)
    if limits is None:
        return [f"  ({_nowhere_drawn(values)} from {low_x:g} to {high_x:g})"]
    low_y, high_y = limits
    grid = [[" "] * width for _ in range(height)]

    def row_of(y: float) -> int | None:
        if not math.isfinite(y) or y < low_y or y > high_y:
            return None
        return min(height - 1, max(0, round((high_y - y) / (high_y - low_y) * (height - 1))))

    zero = row_of(0.0)
    if zero is not None:
        grid[zero] = ["-" if c % 2 == 0 else " " for c in range(width)]
    columns = [low_x + (high_x - low_x) * c / (width - 1) for c in range(width)]
    if key == "f":
        for tangent in curves.tangents:
            for c, x in enumerate(columns):
                row = row_of(tangent(x))
                if row is not None:
                    grid[row][c] = "."
    along, joined = _line_at_columns(values, width, [index for index, _ in curves.poles])
    previous = None
    for c in range(width):
        row = row_of(float(along[c]))
        if not joined[c]:
            previous = None  # a gap between the two columns: the line breaks there
        if row is not None:
            # A steep stretch climbs several rows between two columns: fill them in, so the curve
            # reads as one line.
            for between in _between(previous, row):
                grid[between][c] = "*"
            grid[row][c] = "*"
        previous = row
    labels = {0: f"{high_y:.4g}", height - 1: f"{low_y:.4g}"}
    if zero is not None and zero not in labels:
        labels[zero] = "0"
    middle = (height - 1) // 2
    if not any(abs(row - middle) < 2 for row in labels):
        labels[middle] = f"{high_y - (high_y - low_y) * middle / (height - 1):.4g}"
    gutter = TEXT_GUTTER  # the same in every panel, so that their x axes line up
    lines = [f"{labels.get(r, '').rjust(gutter)} |{''.join(grid[r]).rstrip()}" for r in range(height)]
    lines.append(" " * gutter + " +" + "-" * width)
    left, right = f"{low_x:g}", f"{high_x:g}"
    middle = curves.variable
    space = width - len(left) - len(right)
    if space > len(middle) + 1:
        axis = left + middle.center(space) + right
    else:
        axis = left + " " * max(1, space) + right
    lines.append(" " * (gutter + 2) + axis)
    note = _cut_off(values, limits)
    if note:
        lines.append(" " * (gutter + 2) + note)
    return lines
