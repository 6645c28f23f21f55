"""The loss curve of a training run (``autodiff fit --plot``) as SVG, PNG or PDF bytes.

Drawn by matplotlib, as ``autodiff plot``'s pictures are (``render/plot.py``): imported on
first use only, with the same look (its colours, matplotlib's own DejaVu fonts, glyphs as
outlines) and the same reproducibility (a fixed hash salt for SVG ids, no dates in the
files), so the same history gives the same bytes.  On an object-oriented ``Figure``, never
through ``pyplot``'s global state.  Pure: bytes out, nothing printed or written.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

from ..errors import AutodiffError
from .plot import DPI, PLOT_COLOURS

__all__ = ["FORMATS", "PlotUnavailable", "loss_curve", "require_matplotlib"]

FORMATS = ("svg", "png", "pdf")
# A log scale when every loss is positive and they span this factor or more: the usual shape of
# a loss curve, a cliff then a long tail, is flat on a linear scale.
LOG_SCALE_SPAN = 100.0


class PlotUnavailable(AutodiffError):
    """matplotlib cannot be imported."""


def require_matplotlib() -> None:
    """Raise PlotUnavailable, with the command that installs it, when matplotlib is missing."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise PlotUnavailable("--plot needs matplotlib, which is not installed",
                              hint="pip install matplotlib (autodiff-cli installs it; the installation "
                                   "may be broken)")


def loss_curve(steps: Sequence[int], losses: Sequence[float], fmt: str, *, title: str = "training loss") -> bytes:
    """The loss at each step as ``fmt`` bytes."""
    if fmt not in FORMATS:
        raise ValueError(f"cannot draw {fmt!r}; the formats are {', '.join(FORMATS)}")
    require_matplotlib()
    import matplotlib
    from matplotlib.figure import Figure

    settings = {
        "svg.hashsalt": "autodiff-cli",
        "svg.fonttype": "path",
        "font.family": "DejaVu Sans",
        "font.size": 9.0,
        "axes.spines.top": False,
        "axes.spines.right": False,
    }
    with matplotlib.rc_context(settings):
        figure = Figure(figsize=(7.0, 3.6), layout="constrained")
        axes = figure.subplots()
        line, = axes.plot(steps, losses, color=PLOT_COLOURS["f"], lw=1.6)
        line.set_gid("loss")  # the SVG group's id: what tests and scripts can find
        finite = [x for x in losses if math.isfinite(x)]
        if finite and min(finite) > 0 and max(finite) >= LOG_SCALE_SPAN * min(finite):
            axes.set_yscale("log")
        axes.set_xlabel("step")
        axes.set_ylabel("loss")
        axes.grid(True, color="#eeeeee", lw=0.6)
        figure.suptitle(title, fontsize=10)
        buffer = io.BytesIO()
        metadata = {"svg": {"Date": None, "Title": title}, "png": {"Title": title},
                    "pdf": {"CreationDate": None, "ModDate": None, "Title": title}}[fmt]
        figure.savefig(buffer, format=fmt, dpi=DPI, metadata=metadata)
    return buffer.getvalue()
