"""The loss curve of a training run as SVG or PNG bytes, drawn by matplotlib.

matplotlib is an optional dependency (``pip install 'autodiff-cli[plot]'``), imported only
when a plot is asked for.  It is the library people already read loss curves in, it
writes both formats from one figure with no display, and with its hash salt and file
metadata pinned its output is the same bytes for the same curve.  The figure is drawn
on an object-oriented ``Figure`` with the Agg canvas, never through ``pyplot``'s global
state, so nothing here depends on a display or leaks figures.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

from ..errors import AutodiffError

__all__ = ["PlotUnavailable", "loss_curve", "require_matplotlib"]


class PlotUnavailable(AutodiffError):
    """matplotlib is not installed."""


def require_matplotlib() -> None:
    """Raise PlotUnavailable, with the command that installs it, when matplotlib is missing."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise PlotUnavailable("--plot needs matplotlib, which is not installed",
                              hint="pip install 'autodiff-cli[plot]' (or pip install matplotlib)")


def loss_curve(steps: Sequence[int], losses: Sequence[float], file_format: str) -> bytes:
    """The loss against the step, on a log scale when every loss is positive and they span a
    factor of 100 or more (the usual shape of a loss curve, flattened on a linear scale)."""
    require_matplotlib()
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.4, 4.0), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    axes.plot(steps, losses, color="#1f77b4", linewidth=1.5)
    finite = [x for x in losses if math.isfinite(x)]
    if finite and min(finite) > 0 and max(finite) >= 100 * min(finite):
        axes.set_yscale("log")
    axes.set_xlabel("step")
    axes.set_ylabel("loss")
    axes.set_title("training loss")
    axes.grid(True, alpha=0.3)
    figure.tight_layout()
    buffer = io.BytesIO()
    metadata = {"Date": None, "Creator": None} if file_format == "svg" else {"Software": None}
    with matplotlib.rc_context({"svg.hashsalt": "autodiff-cli", "svg.fonttype": "path"}):
        figure.savefig(buffer, format=file_format, metadata=metadata)
    return buffer.getvalue()
