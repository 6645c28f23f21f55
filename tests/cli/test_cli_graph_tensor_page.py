"""The step-through page of a tensor program, in a real browser (headless Chromium, Selenium),
and as data.

The expected numbers are the post's linear regression worked in NumPy: P = X W, L = mean((P - Y)^2),
dL/dP = (2/N)(P - Y), dL/dW = X^T dL/dP.  The browser tests share the conventions (and the
browser fixture, in tests/conftest.py) of tests/render/test_page_browser.py: skipped, saying why, where Chromium or
Selenium is missing; AUTODIFF_SCREENSHOTS=DIR keeps the screenshots.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from autodiff_cli.cli import main
from autodiff_cli.render import backends

REPO = Path(__file__).resolve().parents[2]


REGRESSION = "samples/regression_matrix.ad"
W_SET = ["--set", "W=[[2.5], [-1.25]]"]
RIGHT, LEFT, END, HOME, ESCAPE = "\ue014", "\ue012", "\ue010", "\ue011", "\ue00c"

pytestmark = pytest.mark.skipif(backends.bundled_program() is None, reason="graphviz-pure is not installed")


def embedded(html: str) -> dict:
    return json.loads(re.search(r'<script type="application/json" id="autodiff-data">(.*?)</script>', html,
                                re.DOTALL).group(1))


def regression_numbers():
    text = (REPO / REGRESSION).read_text()
    X = np.array(json.loads(re.search(r"X = (\[\[.*?\]\])\n", text, re.DOTALL).group(1)))
    Y = np.array(json.loads(re.search(r"Y = (\[\[.*?\]\])\n", text, re.DOTALL).group(1)))
    W = np.array([[2.5], [-1.25]])
    P = X @ W
    grad_P = 2 / len(X) * (P - Y)
    return X, Y, W, P, grad_P, X.T @ grad_P


@pytest.fixture
def make_page(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)

    def make(*args: str) -> Path:
        out = tmp_path / f"page{len(list(tmp_path.iterdir()))}.html"
        result = runner.invoke(main, ["graph", *args, "-o", str(out), "--renderer", "bundled"],
                               catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return out
    return make


# --- as data -----------------------------------------------------------------------------------


def test_the_page_holds_every_layer_as_grids_and_the_frames_of_both_passes(make_page) -> None:
    html = make_page(REGRESSION, *W_SET).read_text(encoding="utf-8")
    data = embedded(html)
    X, Y, W, P, grad_P, grad_W = regression_numbers()
    assert data["kind"] == "tensor" and data["output"] == "L"
    layers = {layer["name"]: layer for layer in data["layers"]}
    assert list(layers) == ["X", "Y", "W", "P", "L"]
    assert layers["W"]["value"]["rows"] == [["2.5"], ["-1.25"]]
    assert layers["W"]["grad"]["rows"] == [[f"{g:.4g}"] for g in grad_W.ravel()]
    assert layers["P"]["grad"]["rows"] == [[f"{g:.4g}"] for g in grad_P.ravel()]
    assert layers["P"]["about"] == "P = X @ W" and layers["P"]["uses"] == [4]
    passes = [(f["pass"], data["layers"][f["layer"]]["name"] if "layer" in f else None) for f in data["frames"]]
    assert passes == [("start", None), *[("forward", n) for n in "XYWPL"], *[("backward", n) for n in "LPWYX"],
                      ("end", None)]
    assert data["frames"][7]["text"] == "dL/dP [8, 1]: from its use in L = mean((P - Y)**2)"
    # every statement's scalar graph is on the page, hidden until its layer is chosen
    assert html.count('<div class="scalar-svg" data-layer="3" hidden>') == 1
    assert 'id="node1"' not in html.split('<div id="scalar-views">')[1]  # the views' ids are gone


def test_the_same_input_gives_the_same_page(make_page) -> None:
    assert make_page(REGRESSION).read_bytes() == make_page(REGRESSION).read_bytes()


def test_no_grad_stops_after_the_forward_pass(make_page) -> None:
    data = embedded(make_page(REGRESSION, "--no-grad").read_text())
    assert {f["pass"] for f in data["frames"]} == {"start", "forward", "end"}
    assert all(layer["grad"] is None for layer in data["layers"])


# --- in the browser ----------------------------------------------------------------------------


class TensorPage:
    def __init__(self, driver, path: Path) -> None:
        from selenium.webdriver.common.by import By

        self.driver, self.by = driver, By
        driver.get(path.as_uri())
        driver.get_log("browser")
        self.names = driver.execute_script(
            "return JSON.parse(document.getElementById('autodiff-data').textContent).layers.map(l => l.name)")

    def text(self, element_id: str) -> str:
        return self.driver.find_element(self.by.ID, element_id).get_attribute("textContent")

    def press(self, key: str, times: int = 1) -> None:
        from selenium.webdriver.common.action_chains import ActionChains

        actions = ActionChains(self.driver)
        for _ in range(times):
            actions.send_keys(key)
        actions.perform()

    def box(self, name: str):
        return self.driver.find_element(self.by.CSS_SELECTOR, f'[data-layer="{self.names.index(name)}"]')

    def classes(self, name: str) -> list[str]:
        return self.box(name).get_attribute("class").split()

    def grid(self, container: str) -> list[list[str]]:
        rows = self.driver.find_elements(self.by.CSS_SELECTOR, f"#{container} table.grid tr")
        return [[cell.get_attribute("textContent") for cell in row.find_elements(self.by.TAG_NAME, "td")]
                for row in rows]

    def errors(self) -> list[str]:
        return [entry["message"] for entry in self.driver.get_log("browser") if entry["level"] == "SEVERE"]

    def screenshot(self, name: str) -> None:
        import os

        keep = os.environ.get("AUTODIFF_SCREENSHOTS")
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            (Path(keep) / f"{name}.png").write_bytes(self.driver.get_screenshot_as_png())


def test_the_forward_pass_steps_layer_by_layer_with_its_grid(browser, make_page) -> None:
    page = TensorPage(browser, make_page(REGRESSION, *W_SET))
    X, Y, W, P, grad_P, grad_W = regression_numbers()
    assert page.text("counter") == "step 0 of 11"
    assert all("ad-pending" in page.classes(name) for name in ["X", "W", "P", "L"])
    page.press(RIGHT, 4)  # X, Y, W, then P = X @ W
    assert page.text("step-text") == "P = X @ W   from X [8, 2], W [2, 1] -> [8, 1]"
    assert page.text("phase") == "forward pass (layer by layer)"
    assert "ad-current" in page.classes("P") and "ad-pending" in page.classes("L")
    assert "ad-pending" not in page.classes("W")
    assert page.grid("step-grid") == [[f"{p:.4g}"] for p in P.ravel()]
    edges = browser.find_elements(page.by.CSS_SELECTOR, f'[data-to="{page.names.index("P")}"]')
    assert len(edges) == 2 and all("ad-flow" in e.get_attribute("class").split() for e in edges)
    page.screenshot("tensor_forward")
    assert page.errors() == []


def test_the_backward_pass_gives_each_layer_its_gradient(browser, make_page) -> None:
    page = TensorPage(browser, make_page(REGRESSION, *W_SET))
    X, Y, W, P, grad_P, grad_W = regression_numbers()
    page.press(RIGHT, 8)  # forward (5), then dL/dL, dL/dP, dL/dW
    assert page.text("step-text") == "dL/dW [2, 1]: from its use in P = X @ W"
    assert page.grid("step-grid") == [[f"{g:.4g}"] for g in grad_W.ravel()]
    assert "ad-receiving" in page.classes("W") and "ad-upstream" in page.classes("P")
    page.press(END)
    assert page.text("phase") == "the full gradient picture"
    page.press(HOME)
    assert page.text("counter") == "step 0 of 11"
    assert page.errors() == []


def test_a_click_on_a_layer_opens_its_numbers_and_its_scalar_graph(browser, make_page) -> None:
    page = TensorPage(browser, make_page(REGRESSION, *W_SET))
    X, Y, W, P, grad_P, grad_W = regression_numbers()
    assert not browser.find_element(page.by.ID, "layer-detail").is_displayed()
    page.box("P").click()
    assert browser.find_element(page.by.ID, "layer-detail").is_displayed()
    assert page.text("layer-title") == "P  [8, 1]"
    assert page.grid("layer-value") == [[f"{p:.4g}"] for p in P.ravel()]
    assert page.grid("layer-grad") == [[f"{g:.4g}"] for g in grad_P.ravel()]
    view = browser.find_element(page.by.CSS_SELECTOR, f'.scalar-svg[data-layer="{page.names.index("P")}"]')
    assert view.is_displayed()
    texts = [t.get_attribute("textContent") for t in view.find_elements(page.by.TAG_NAME, "text")]
    assert "P[0, 0]" in texts and f"data {P[0, 0]:.4f}" in texts and f"grad {grad_P[0, 0]:.4f}" in texts
    assert page.text("scalar-heading").startswith("scalar graph: P = X @ W")
    page.screenshot("tensor_detail")
    page.box("X").click()  # an input has no scalar graph of its own
    assert not view.is_displayed()
    assert "its entries are the inputs" in page.text("scalar-note")
    page.press(ESCAPE)
    assert not browser.find_element(page.by.ID, "layer-detail").is_displayed()
    assert page.errors() == []


def test_the_scalar_level_page_is_the_scalar_page_of_every_entry(make_page) -> None:
    data = embedded(make_page(REGRESSION, *W_SET, "--level", "scalar").read_text())
    X, Y, W, P, grad_P, grad_W = regression_numbers()
    nodes = {node["name"]: node for node in data["nodes"]}
    assert "kind" not in data  # render.page's page of a scalar program
    assert nodes["P[3, 0]"]["data"] == f"{P[3, 0]:.4f}"
    assert nodes["W[1, 0]"]["grad"] == f"{grad_W[1, 0]:.4f}"


def test_the_keyboard_alone_steps_and_opens_a_layer(browser, make_page) -> None:
    page = TensorPage(browser, make_page(REGRESSION, *W_SET))
    page.press(END)
    assert page.text("counter") == "step 11 of 11"
    page.press(LEFT, 2)  # two steps back from the end: dL/dY (dL/dX is the last layer's)
    assert page.text("step-text").startswith("dL/dY [8, 1]")
    browser.execute_script(f"document.querySelector('[data-layer=\"{page.names.index('W')}\"]').focus()")
    page.press("\ue007")  # Enter on the focused layer
    assert browser.find_element(page.by.ID, "layer-detail").is_displayed()
    assert page.text("layer-title") == "W  [2, 1]"
    assert page.text("scalar-note") == ("An input: its entries are the inputs of the scalar graphs of the layers "
                                        "that use it.")
    page.press(ESCAPE)
    assert not browser.find_element(page.by.ID, "layer-detail").is_displayed()
    page.press(HOME)
    assert page.text("counter") == "step 0 of 11"
    assert page.errors() == []


def test_an_edge_drawn_backwards_still_runs_from_operand_to_use(make_page) -> None:
    # b1 sits right of h1, its edge written from h1 (dir=back): the page must still see b1 -> h1.
    html = make_page("samples/moons_mlp.ad").read_text()
    names = [layer["name"] for layer in embedded(html)["layers"]]
    edges = {(int(a), int(b)) for a, b in re.findall(r'data-from="(\d+)" data-to="(\d+)"', html)}
    h1 = names.index("h1")
    assert {(names.index(operand), h1) for operand in ("W1", "x", "b1")} <= edges
    assert all(a < b for a, b in edges)


def _shown_gradients(page: TensorPage) -> dict[str, list[str]]:
    """Each layer's gradient field as the browser shows it: the texts drawn visibly in its box."""
    shown = {}
    for name in page.names:
        parts = page.box(name).find_elements(page.by.CSS_SELECTOR, "text.ad-grad-part")
        shown[name] = [part.get_attribute("textContent") for part in parts if part.is_displayed()]
    return shown


@pytest.mark.parametrize("sample", ["samples/moons_mlp.ad", REGRESSION])
def test_the_last_step_shows_every_gradient_and_the_first_none(browser, make_page, sample) -> None:
    page = TensorPage(browser, make_page(sample))
    assert all(texts == [] for texts in _shown_gradients(page).values())  # before the backward pass
    page.press(END)
    assert page.text("phase") == "the full gradient picture"
    shown = _shown_gradients(page)
    assert all(texts and texts[0].startswith("grad") for texts in shown.values()), shown
    page.screenshot("tensor_end_" + Path(sample).stem)
    assert page.errors() == []


def test_a_gradient_appears_when_the_backward_pass_reaches_its_layer(browser, make_page) -> None:
    page = TensorPage(browser, make_page(REGRESSION, *W_SET))
    X, Y, W, P, grad_P, grad_W = regression_numbers()
    page.press(RIGHT, 7)  # forward (5), then dL/dL, dL/dP
    shown = _shown_gradients(page)
    assert shown["L"] == ["grad 1"] and shown["W"] == [] and shown["X"] == []
    assert shown["P"][0] == "grad" and shown["P"][1:] == [f"{g:.4g}" for g in grad_P.ravel()]
