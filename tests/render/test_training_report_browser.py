"""The training report in a real browser: headless Chromium driven by Selenium.

The browser and its skip (no Chromium, no chromedriver, no Selenium) are tests/conftest.py's
``browser`` fixture.  Each test opens a report made from a short recorded run, moves the step
slider or the log-scale box as a reader would, and reads what the page then draws: the boundary
path, the fitted curve, the loss line.  Set AUTODIFF_SCREENSHOTS=DIR to keep the screenshot.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np
import pytest
from test_page_browser import PNG_SIGNATURE
from test_training_report import read_csv, recorded_run

from autodiff_cli.execute.fit import FitSettings
from autodiff_cli.render.training_report import training_report_html

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


@pytest.fixture(scope="module")
def moons_page(tmp_path_factory) -> Path:
    """The tensor moons network (samples/moons_mlp.ad) trained as its docstring says, for 60 steps."""
    recording = recorded_run((SAMPLES / "moons_mlp.ad").read_text(), read_csv(SAMPLES / "moons_xy.csv"),
                             FitSettings(lr=1.0, lr_schedule="linear", steps=60), every=3)
    path = tmp_path_factory.mktemp("report") / "moons.html"
    path.write_bytes(training_report_html(recording))
    return path


@pytest.fixture(scope="module")
def line_page(tmp_path_factory) -> Path:
    recording = recorded_run((SAMPLES / "line.ad").read_text(), read_csv(SAMPLES / "line.csv"),
                             FitSettings(lr=0.01, steps=40))
    path = tmp_path_factory.mktemp("report") / "line.html"
    path.write_bytes(training_report_html(recording))
    return path


class ReportPage:
    """The report as a reader sees it, read from the DOM."""

    def __init__(self, driver, path: Path) -> None:
        from selenium.webdriver.common.by import By

        self.driver, self.by = driver, By
        driver.get(path.as_uri())
        assert driver.execute_script("return document.body.dataset.ready") == "true"

    def attribute(self, selector: str, name: str) -> str:
        return self.driver.find_element(self.by.CSS_SELECTOR, selector).get_attribute(name)

    def slide_to(self, key: str) -> None:
        """Press ``key`` (Home, End, an arrow) on the focused step slider."""
        from selenium.webdriver.common.keys import Keys

        self.driver.find_element(self.by.ID, "step-slider").send_keys(getattr(Keys, key))

    def label(self) -> str:
        return self.driver.find_element(self.by.ID, "step-label").get_attribute("textContent")

    def field_pixels(self) -> str:
        return self.driver.execute_script("return document.getElementById('model-field').toDataURL()")

    def errors(self) -> list[str]:
        return [entry["message"] for entry in self.driver.get_log("browser") if entry["level"] == "SEVERE"]


def test_the_page_loads_offline_and_fetches_nothing(browser, moons_page) -> None:  # noqa: F811
    browser.get_log("browser")
    page = ReportPage(browser, moons_page)
    assert page.errors() == []  # a blocked fetch or script would be logged here (the page's CSP)
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    assert page.label() == "step 60 of 60"
    assert page.attribute("#boundary", "d").startswith("M")


def test_the_slider_moves_the_decision_boundary(browser, moons_page) -> None:  # noqa: F811
    page = ReportPage(browser, moons_page)
    last, last_pixels = page.attribute("#boundary", "d"), page.field_pixels()
    page.slide_to("HOME")
    assert page.label() == "step 1 of 60"
    first = page.attribute("#boundary", "d")
    assert first != last
    assert page.field_pixels() != last_pixels
    page.slide_to("END")
    assert page.attribute("#boundary", "d") == last  # each step has its own frame, drawn the same again


def test_the_slider_moves_the_fitted_curve(browser, line_page) -> None:  # noqa: F811
    page = ReportPage(browser, line_page)
    last = page.attribute("#fitted-curve", "d")
    page.slide_to("HOME")
    first = page.attribute("#fitted-curve", "d")
    assert first != last
    # line.ad starts at w = b = 0: the first frame is the flat line prediction = 0 across the plot
    ys = {point.split(",")[1] for point in first[1:].replace("L", " ").split()}
    assert len(ys) == 1


def test_the_log_toggle_redraws_the_loss_on_a_log_scale(browser, moons_page) -> None:  # noqa: F811
    page = ReportPage(browser, moons_page)
    linear = page.attribute("#loss-chart polyline", "points")
    assert page.attribute("#loss-chart svg", "data-log") == "false"
    browser.find_element(page.by.ID, "log-scale").click()
    assert page.attribute("#loss-chart svg", "data-log") == "true"
    logarithmic = page.attribute("#loss-chart polyline", "points")
    assert logarithmic != linear
    # on a log scale the height of each point is linear in log(loss): check three of them
    losses = browser.execute_script("return JSON.parse(document.getElementById('report-data').textContent).history_loss")
    heights = [float(p.split(",")[1]) for p in logarithmic.split()]
    logs = np.log10(losses)
    slope = (heights[-1] - heights[0]) / (logs[-1] - logs[0])
    for i in (5, 20, 40):
        assert heights[i] == pytest.approx(heights[0] + slope * (logs[i] - logs[0]), abs=0.15)


def test_screenshot_of_the_moons_report(browser, moons_page, tmp_path) -> None:  # noqa: F811
    page = ReportPage(browser, moons_page)
    browser.execute_script("document.getElementById('stepping').scrollIntoView()")
    png = browser.get_screenshot_as_png()
    keep = os.environ.get("AUTODIFF_SCREENSHOTS")
    for directory in [tmp_path] + ([Path(keep)] if keep else []):
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "moons_report.png").write_bytes(png)
    assert png.startswith(PNG_SIGNATURE)
    width, height = struct.unpack(">II", png[16:24])
    assert width > 0 and height > 0
    assert page.errors() == []


def test_three_classes_are_drawn_as_regions_with_edges_between_them(browser, tmp_path) -> None:  # noqa: F811
    rng = np.random.RandomState(7)
    x0, x1 = rng.uniform(-2, 2, 90), rng.uniform(-2, 2, 90)
    label = np.argmax(np.stack([x0, x1, -x0 - x1], axis=1), axis=1).astype(float)
    program = "x = [0, 0]\nlabel = 0\nW = normal([3, 2], 0.5)\nb = zeros([3])\nz = W @ x + b\nL = cross_entropy(z, label)\n"
    recording = recorded_run(program, {"x[0]": x0, "x[1]": x1, "label": label}, FitSettings(lr=0.5, steps=20))
    assert recording.view.kind == "classes"
    path = tmp_path / "classes.html"
    path.write_bytes(training_report_html(recording))
    page = ReportPage(browser, path)
    last = page.attribute("#boundary", "d")
    assert last.count("M") > 10  # cell edges between the three regions
    page.slide_to("HOME")
    assert page.attribute("#boundary", "d") != last
    assert page.errors() == []


def _round_ticks(labels: list[str]) -> float:
    """The step between tick labels, checked to be 1, 2 or 5 x 10^k, with every label a multiple of it."""
    values = [float(label) for label in labels]
    steps = {round(b - a, 12) for a, b in zip(values, values[1:])}
    assert len(steps) == 1, labels
    step = steps.pop()
    mantissa = step / 10 ** np.floor(np.log10(step))
    assert round(mantissa, 9) in (1, 2, 5), labels
    assert all(abs(v / step - round(v / step)) < 1e-9 for v in values), labels
    return step


def test_the_axes_have_round_ticks_and_the_key_covers_no_curve(browser, tmp_path) -> None:  # noqa: F811
    # 1000 steps, recorded every 37: ticks were 1/251/501/750/1000 and 2.351, 0.5885, 8.99e-4
    rng = np.random.RandomState(3)
    x = rng.uniform(0, 1, 50)
    recording = recorded_run("w = 0\nb = 0\ny = 0\np = w*x + b\nloss = (p - y)**2\n",
                             {"x": x, "y": 3 * x + 0.5 + rng.normal(0, 0.03, 50)},
                             FitSettings(lr=0.3, steps=1000), every=37)
    path = tmp_path / "line.html"
    path.write_bytes(training_report_html(recording))
    page = ReportPage(browser, path)
    for chart in ("#loss-chart", "#grad-chart"):
        xs = [e.get_attribute("textContent") for e in browser.find_elements(page.by.CSS_SELECTOR, f"{chart} .x-tick")]
        assert _round_ticks(xs) in (100, 200, 250, 500) and xs[0] == "0" and float(xs[-1]) >= 1000
    ys = [e.get_attribute("textContent") for e in browser.find_elements(page.by.CSS_SELECTOR, "#loss-chart .y-tick")]
    _round_ticks(ys)
    # the log axis: powers of ten (labels such as 0.001, 1e-6, 10)
    logs = [e.get_attribute("textContent") for e in browser.find_elements(page.by.CSS_SELECTOR, "#grad-chart .y-tick")]
    assert all(np.log10(float(label)) == pytest.approx(round(np.log10(float(label)))) for label in logs), logs
    for chart in ("#loss-chart", "#grad-chart"):
        frame = browser.execute_script(
            f"return document.querySelector('{chart} rect.frame').getBoundingClientRect().toJSON()")
        key = browser.execute_script(f"return document.querySelector('{chart} .key').getBoundingClientRect().toJSON()")
        assert key["top"] >= frame["bottom"], (chart, key, frame)  # under the plot, on no curve
        names = browser.execute_script(f"return [...document.querySelectorAll('{chart} .key-entry')].map(e => e.textContent)")
        assert names[0] in ("training loss", "all parameters")
    assert page.errors() == []


def test_a_wide_row_graph_fits_the_page_and_opens_at_full_size(browser, tmp_path) -> None:  # noqa: F811
    from autodiff_cli.render.training_report import row_graph_svg

    recording = recorded_run((SAMPLES / "moons_mlp.ad").read_text(), read_csv(SAMPLES / "moons_xy.csv"),
                             FitSettings(lr=1.0, lr_schedule="linear", steps=6), every=3)
    path = tmp_path / "graph.html"
    path.write_bytes(training_report_html(recording, graph_svg=row_graph_svg(recording)))
    page = ReportPage(browser, path)
    size = "const b = document.getElementById('row-graph'); return [b.scrollWidth, b.clientWidth, " \
           "b.querySelector('svg').getBoundingClientRect().width];"
    scroll, client, drawn = browser.execute_script(size)
    assert scroll <= client + 1 and drawn <= client + 1  # no horizontal scroll box: the whole graph is in view
    browser.find_element(page.by.ID, "graph-size").click()
    scroll, client, drawn = browser.execute_script(size)
    assert scroll > client and drawn > client  # its full size, in a scrolling box
    assert page.attribute("#graph-size", "textContent") == "fit to the page"
    assert page.errors() == []


def test_the_model_and_the_histograms_have_round_ticks(browser, moons_page) -> None:  # noqa: F811
    # the model's axes said only their ends, -1.634 and 2.541; the histograms their bins' ends
    page = ReportPage(browser, moons_page)
    for axis in (".x-tick", ".y-tick"):
        labels = [e.get_attribute("textContent") for e in browser.find_elements(page.by.CSS_SELECTOR, f"#model-svg {axis}")]
        assert len(labels) >= 3
        _round_ticks(labels)
    histograms = browser.find_elements(page.by.CSS_SELECTOR, "svg.histogram")
    assert histograms
    for histogram in histograms:
        labels = [e.get_attribute("textContent") for e in histogram.find_elements(page.by.CSS_SELECTOR, ".tick")]
        if len(labels) > 1:
            _round_ticks(labels)
    assert page.errors() == []


def _rgb(colour) -> str:
    return "rgb({}, {}, {})".format(*colour)


def test_signs_have_the_graph_s_colours(browser, moons_page) -> None:  # noqa: F811
    from autodiff_cli.render.palette import GRADIENT, NEGATIVE, POSITIVE, VALUE

    page = ReportPage(browser, moons_page)
    # the points: y = 1 (above the boundary) orange as a positive entry in the graph, y = -1 blue
    fills = set(browser.execute_script(
        "return [...document.querySelectorAll('#model-svg circle.point')].map(c => getComputedStyle(c).fill)"))
    assert fills == {_rgb(POSITIVE), _rgb(NEGATIVE)}
    # a heat map's strongest entry is the full colour of its sign, as in the graph's layer boxes
    pixels = browser.execute_script(
        "const c = document.querySelector('canvas.heat-values');"
        "const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
        "const out = new Set(); for (let i = 0; i < d.length; i += 4) out.add(`${d[i]},${d[i + 1]},${d[i + 2]}`);"
        "return [...out];")
    assert {",".join(map(str, POSITIVE)), ",".join(map(str, NEGATIVE))} & set(pixels)
    for pixel in pixels:  # every cell is white mixed with one of the two ends
        rgb = [int(c) for c in pixel.split(",")]
        shares = [[(255 - c) / (255 - e) for c, e in zip(rgb, end)] for end in (POSITIVE, NEGATIVE)]
        assert any(max(s) - min(s) < 0.03 for s in shares), pixel
    bars = {page.driver.execute_script("return getComputedStyle(arguments[0]).fill", bar)
            for bar in browser.find_elements(page.by.CSS_SELECTOR, "svg.histogram rect")}
    as_rgb = [tuple(int(h[i:i + 2], 16) for i in (1, 3, 5)) for h in (VALUE, GRADIENT)]
    assert bars == {_rgb(as_rgb[0]), _rgb(as_rgb[1])}


def test_a_histogram_far_narrower_than_its_values_has_one_label_not_three_alike(browser, tmp_path) -> None:  # noqa: F811
    # converged: each parameter's gradient histogram spans about 1e-32 around 1e-16, so round
    # ticks read -2.448e-17 three times
    rng = np.random.RandomState(3)
    x = rng.uniform(0, 1, 50)
    recording = recorded_run("w = 0\nb = 0\ny = 0\np = w*x + b\nloss = (p - y)**2\n",
                             {"x": x, "y": 3 * x + 0.5}, FitSettings(lr=0.3, steps=1000), every=100)
    path = tmp_path / "converged.html"
    path.write_bytes(training_report_html(recording))
    page = ReportPage(browser, path)
    for histogram in browser.find_elements(page.by.CSS_SELECTOR, "svg.histogram"):
        labels = [e.get_attribute("textContent") for e in histogram.find_elements(page.by.CSS_SELECTOR, ".tick")]
        assert labels and len(set(labels)) == len(labels), labels
    assert page.errors() == []
