"""Every colour that means something in the pictures, in one place, so that the same thing has
the same colour wherever it is drawn: the graph (``render.dot``), the
step-through page (``render.page``), ``plot`` and fit's training report (``render.training_report``,
whose script reads ``report_palette()``).

- the kinds of value box (input, named intermediate, output, unnamed result, constant);
- the sign of an entry: blue for negative, orange for positive, mixed with white by its size
  against the largest (ColorBrewer's diverging ends, told apart by every kind of colour vision);
- the passes: a value and the forward pass in blue, a gradient and the backward pass in dark
  vermillion, a further contribution (+=) in wine (Okabe and Ito's palette, darkened where a
  3:1 contrast needed it: tests/render/test_page_colours.py);
- series: curves and classes told apart, in Okabe and Ito's order.

Greys (lines, borders, text) carry no meaning and stay with the code that draws them.
Pure data and arithmetic: no imports beyond the standard library.
"""

from __future__ import annotations

import math

__all__ = ["GRADIENT", "KIND_FILLS", "NEGATIVE", "OP_FILL", "PASSES", "POSITIVE", "SERIES", "VALUE",
           "heat_colour", "hex_colour", "report_palette"]

# The fill of each kind of value box (analysis.graph_model.KINDS).
KIND_FILLS: dict[str, str] = {
    "input": "#cfe3ff",  # light blue
    "intermediate": "#fff1c2",  # light amber
    "output": "#c9f2d0",  # light green (drawn with a heavier border)
    "result": "#ffffff",
    "constant": "#eeeeee",  # grey: not a variable
}
OP_FILL = "#f2f2f2"  # the small circles of the operations

NEGATIVE = (0x21, 0x66, 0xAC)  # a negative entry at full strength: blue
POSITIVE = (0xD9, 0x5F, 0x0E)  # a positive entry at full strength: orange

PASSES: dict[str, str] = {
    "forward": "#0072b2",  # blue: the node being computed, and the edges into it
    "backward": "#b84a00",  # dark vermillion: the edge the gradient flows along, and those it has passed
    "accumulate": "#882255",  # wine: a further contribution (+=) and the sum of several
    "selected": "#000000",  # black: the node clicked for its gradient, and its uses
}
VALUE = PASSES["forward"]  # a value drawn alone (a histogram of values, f in a plot)
GRADIENT = PASSES["backward"]  # a gradient drawn alone (a histogram of gradients, f' in a plot)

SERIES = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#882255", "#117733",
          "#999933", "#332288")  # curves and classes, in this order


def hex_colour(rgb: tuple[int, int, int]) -> str:
    """``#rrggbb`` of an (r, g, b) triple."""
    return "#" + "".join(f"{c:02x}" for c in rgb)


def heat_colour(x: float, largest: float, strength: float = 1.0) -> str:
    """``#rrggbb`` for ``x`` on a scale from -``largest`` (blue) through white (0) to ``largest``
    (orange); ``strength`` < 1 stops short of the full colour."""
    if not largest or math.isnan(x):  # all zeros, or NaN: white
        return "#ffffff"
    share = min(1.0, abs(x) / largest) * strength
    end = POSITIVE if x > 0 else NEGATIVE
    return hex_colour(tuple(round(255 + (c - 255) * share) for c in end))  # type: ignore[arg-type]


def report_palette() -> dict[str, object]:
    """The colours the training report's script draws with, as JSON-ready data."""
    return {"negative": list(NEGATIVE), "positive": list(POSITIVE), "value": VALUE, "gradient": GRADIENT,
            "series": list(SERIES)}
