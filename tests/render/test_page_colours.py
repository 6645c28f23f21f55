"""The step-through page's colours, as seen with each kind of dichromacy.

Each colour is simulated for protanopia, deuteranopia and tritanopia with the matrices of
Machado, Oliveira and Fernandes (2009, severity 1.0), applied to linear RGB.  (For
tritanopia their model is the least exact of the three; the margins below are wide.)  Under
every simulation and without one:

* every mark the page draws (render.page.PAGE_COLOURS) keeps a contrast of at least 3:1, WCAG's
  minimum for graphical objects, against every fill it is drawn on (the graph's background,
  its five kinds of box and its operation circles);
* the three colours of the passes (forward, backward, accumulate), which can be on screen
  together, stay at least 20 apart in CIELAB (CIE76 delta E; about 2.3 is a just-noticeable
  difference).

The test also checks itself: the simulation leaves grey alone, collapses a protanope's or a
deuteranope's confusion line to one colour, and brings a blue and a green together for tritanopia.
"""

import itertools

import pytest

from autodiff_cli.render.dot import KIND_STYLES, OP_FILL
from autodiff_cli.render.page import PAGE_COLOURS

MACHADO_2009 = {
    "protanopia": ((0.152286, 1.052583, -0.204868),
                   (0.114503, 0.786281, 0.099216),
                   (-0.003882, -0.048116, 1.051998)),
    "deuteranopia": ((0.367322, 0.860646, -0.227968),
                     (0.280085, 0.672501, 0.047413),
                     (-0.011820, 0.042940, 0.968881)),
    "tritanopia": ((1.255528, -0.076749, -0.178779),
                   (-0.078411, 0.930809, 0.147602),
                   (0.004733, 0.691367, 0.303900)),
}
VISIONS = ["typical", *MACHADO_2009]
BACKGROUNDS = ["#ffffff", OP_FILL, *(style["fillcolor"] for style in KIND_STYLES.values())]
PASSES = ("forward", "backward", "accumulate")


def linear_rgb(colour: str) -> tuple[float, ...]:
    channels = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    return tuple(c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)


def seen(colour: str, vision: str) -> tuple[float, ...]:
    rgb = linear_rgb(colour)
    if vision == "typical":
        return rgb
    return tuple(min(1.0, max(0.0, sum(m * c for m, c in zip(row, rgb)))) for row in MACHADO_2009[vision])


def luminance(rgb: tuple[float, ...]) -> float:
    return 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]


def contrast(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def lab(rgb: tuple[float, ...]) -> tuple[float, float, float]:
    x = (0.4124 * rgb[0] + 0.3576 * rgb[1] + 0.1805 * rgb[2]) / 0.95047
    y = 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]
    z = (0.0193 * rgb[0] + 0.1192 * rgb[1] + 0.9505 * rgb[2]) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def delta_e(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    return sum((p - q) ** 2 for p, q in zip(lab(a), lab(b))) ** 0.5


@pytest.mark.parametrize("vision", VISIONS)
@pytest.mark.parametrize("mark", sorted(PAGE_COLOURS))
def test_every_mark_stands_out_from_every_fill(mark: str, vision: str) -> None:
    worst = min(contrast(seen(PAGE_COLOURS[mark], vision), seen(fill, vision)) for fill in BACKGROUNDS)
    assert worst >= 3.0, f"{mark} {PAGE_COLOURS[mark]} has contrast {worst:.2f} for {vision} vision"


@pytest.mark.parametrize("vision", VISIONS)
@pytest.mark.parametrize("pair", list(itertools.combinations(PASSES, 2)), ids="-".join)
def test_the_pass_colours_stay_apart(pair: tuple[str, str], vision: str) -> None:
    a, b = (seen(PAGE_COLOURS[name], vision) for name in pair)
    assert delta_e(a, b) >= 20, f"{pair} are {delta_e(a, b):.1f} apart for {vision} vision"


@pytest.mark.parametrize("vision", list(MACHADO_2009))
def test_the_simulation_keeps_greys_and_confuses_what_it_should(vision: str) -> None:
    grey = seen("#808080", vision)
    assert max(grey) - min(grey) < 1e-3
    if vision in ("protanopia", "deuteranopia"):
        # A dichromat sees a plane of colours: two colours that differ only along the direction
        # the matrix sends to zero (its rows' cross product) must look the same, however far apart.
        (a1, a2, a3), (b1, b2, b3), _ = MACHADO_2009[vision]
        null = (a2 * b3 - a3 * b2, a3 * b1 - a1 * b3, a1 * b2 - a2 * b1)
        scale = 0.2 / max(abs(v) for v in null)
        middle = (0.4, 0.4, 0.4)
        one = tuple(m + scale * v for m, v in zip(middle, null))
        other = tuple(m - scale * v for m, v in zip(middle, null))
        matrix = MACHADO_2009[vision]
        one_seen, other_seen = (tuple(sum(m * c for m, c in zip(row, rgb)) for row in matrix)
                                for rgb in (one, other))
        assert delta_e(one, other) > 20
        assert delta_e(one_seen, other_seen) < 0.01
    else:
        # Tritanopes confuse blue with green: a blue and a green of similar lightness.
        blue, green = seen("#4a8fd4", vision), seen("#3f9e6b", vision)
        assert delta_e(blue, green) < 0.5 * delta_e(linear_rgb("#4a8fd4"), linear_rgb("#3f9e6b"))
