"""The step-through page in a real browser: headless Chromium driven by Selenium.

Each test opens a page made by `autodiff graph ... -o page.html`, presses keys or clicks as a
reader would, and reads what the page then shows: the numbers in the boxes, the step sentence,
which edge is lit.  Expected numbers are worked by hand (Karpathy's graph: e = a*b = -6,
d = e + c = 4, L = d*f = -8, dL/da = b * dL/de = 6; y = a*a + a at a = 3: dy/da = 1 + 3 + 3).

Needs Debian's `chromium` and `chromium-driver` (apt-get install chromium chromium-driver; .ci/run
installs them) and Selenium (a test dependency).  Where the browser is not installed the tests
are skipped, saying so.  Set AUTODIFF_SCREENSHOTS=DIR to keep the screenshots the tests take.
"""

from __future__ import annotations

import os
import struct
import time
from pathlib import Path

import pytest

from autodiff_cli.cli import main

REPO = Path(__file__).resolve().parents[2]
KARPATHY = "samples/karpathy.ad"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
USES_OF_A = [("t1", 0), ("t1", 1), ("y", 1)]  # y = t1 + a, t1 = a*a: (parent, operand) of each use
@pytest.fixture
def make_page(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)  # samples/karpathy.ad is the page's title, as a reader would type it

    def make(*args: str) -> Path:
        out = tmp_path / f"page{len(list(tmp_path.iterdir()))}.html"
        result = runner.invoke(main, ["graph", *args, "-o", str(out), "--renderer", "bundled"],
                               catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return out
    return make


class Page:
    """What a reader sees on the page, read from the DOM."""

    def __init__(self, driver, path: Path) -> None:
        from selenium.webdriver.common.by import By

        self.driver, self.by = driver, By
        driver.get(path.as_uri())
        self.driver.get_log("browser")  # start each page with an empty console log
        assert self.text("counter").startswith("step 0 of ")
        self.names = driver.execute_script(
            "return JSON.parse(document.getElementById('autodiff-data').textContent).nodes.map(n => n.name)")

    def text(self, element_id: str) -> str:
        return self.driver.find_element(self.by.ID, element_id).get_attribute("textContent")

    def step(self) -> int:
        return int(self.text("counter").split()[1])

    def press(self, key: str, times: int = 1) -> None:
        from selenium.webdriver.common.action_chains import ActionChains

        actions = ActionChains(self.driver)
        for _ in range(times):
            actions.send_keys(key)
        actions.perform()

    def box(self, name: str):
        return self.driver.find_element(self.by.CSS_SELECTOR, f'[data-node="{self.names.index(name)}"]')

    def field(self, name: str, which: str) -> str:
        return self.box(name).find_element(self.by.CSS_SELECTOR, f".ad-{which}").get_attribute("textContent")

    def classes(self, selector: str) -> list[str]:
        return self.driver.find_element(self.by.CSS_SELECTOR, selector).get_attribute("class").split()

    def edge(self, child: str, parent: str, operand: int) -> str:
        return (f'[data-child="{self.names.index(child)}"][data-parent="{self.names.index(parent)}"]'
                f'[data-operand="{operand}"]')

    def callout(self) -> str:
        return self.driver.find_element(self.by.CSS_SELECTOR, ".ad-callout text").get_attribute("textContent")

    def errors(self) -> list[str]:
        return [entry["message"] for entry in self.driver.get_log("browser") if entry["level"] == "SEVERE"]

    def screenshot(self, tmp_path: Path, name: str) -> bytes:
        png = self.driver.get_screenshot_as_png()
        keep = os.environ.get("AUTODIFF_SCREENSHOTS")
        for directory in [tmp_path] + ([Path(keep)] if keep else []):
            directory.mkdir(parents=True, exist_ok=True)
            (directory / f"{name}.png").write_bytes(png)
        assert png.startswith(PNG_SIGNATURE)
        width, height = struct.unpack(">II", png[16:24])
        assert (width, height) == tuple(self.driver.execute_script(
            "return [window.innerWidth * devicePixelRatio, window.innerHeight * devicePixelRatio]"))
        return png


def test_karpathy_forward_pass_fills_in_values_in_topological_order(browser, make_page, tmp_path) -> None:
    page = Page(browser, make_page(KARPATHY))
    assert page.text("counter") == "step 0 of 15"
    assert [page.field(name, "data") for name in "abecdfL"] == ["data ?"] * 7
    page.press("\ue014", 3)  # right arrow: a, b, then e = a*b
    assert page.text("counter") == "step 3 of 15"
    assert page.text("step-text") == "e = a * b = -6"
    assert page.text("phase") == "forward pass (topological order)"
    assert [page.field(name, "data") for name in "abecdfL"] == [
        "data 2.0000", "data -3.0000", "data -6.0000", "data ?", "data ?", "data ?", "data ?"]
    assert page.field("e", "grad") == "grad ?"
    assert "ad-current" in page.box("e").get_attribute("class").split()
    assert "ad-pending" in page.box("d").get_attribute("class").split()
    page.press("\ue014", 4)  # c, d = 4, f, L = -8
    assert page.text("step-text") == "L = d * f = -8"
    assert page.field("d", "data") == "data 4.0000" and page.field("L", "data") == "data -8.0000"
    page.screenshot(tmp_path, "karpathy_forward")
    assert page.errors() == []


def test_karpathy_backward_pass_lights_each_edge_with_its_product(browser, make_page, tmp_path) -> None:
    page = Page(browser, make_page(KARPATHY))
    page.press("\ue014", 8)  # the seed: every gradient starts at 0, dL/dL = 1
    assert page.text("step-text") == "dL/dL = 1   seed"
    assert page.field("L", "grad") == "grad 1.0000"
    assert {page.field(name, "grad") for name in "abecdf"} == {"grad 0.0000"}
    page.press("\ue014", 5)  # dL/dd, dL/df, dL/de, dL/dc, then dL/da = b * dL/de = -3 * -2 = 6
    assert page.text("step-text") == ("dL/da = ∂e/∂a * dL/de = -3 * -2 = 6   [∂e/∂a = b]\n"
                                      "local \u00d7 upstream = contribution: -3.0000 \u00d7 -2.0000 = 6.0000")
    assert page.callout() == "-3.0000 \u00d7 -2.0000 = 6.0000"
    assert "ad-now" in page.classes(page.edge("a", "e", 0))
    assert "ad-receiving" in page.box("a").get_attribute("class").split()
    assert "ad-passed" in page.classes(page.edge("c", "d", 1))  # an edge the gradient went along before
    assert (page.field("a", "grad"), page.field("b", "grad")) == ("grad 6.0000", "grad 0.0000")
    page.screenshot(tmp_path, "karpathy_backward")
    page.press("\ue010")  # End: the full gradient picture
    assert page.text("counter") == "step 15 of 15"
    assert page.text("phase") == "the full gradient picture"
    assert page.text("step-text") == "gradients: dL/da = 6, dL/db = -4, dL/dc = -2, dL/df = 4"
    assert [page.field(name, "grad") for name in "abecdfL"] == [
        "grad 6.0000", "grad -4.0000", "grad -2.0000", "grad -2.0000", "grad -2.0000", "grad 4.0000",
        "grad 1.0000"]
    page.press("\ue012", 2)  # left arrow twice: back before dL/db
    assert page.text("counter") == "step 13 of 15"
    assert page.field("b", "grad") == "grad 0.0000"
    page.press("\ue011")  # Home
    assert page.text("counter") == "step 0 of 15"
    assert page.field("a", "data") == "data ?"
    assert page.errors() == []


def test_a_value_used_three_times_accumulates_with_plus_equals(browser, make_page, tmp_path) -> None:
    page = Page(browser, make_page("y = a*a + a", "--set", "a=3"))
    page.press("\ue014", 6)  # ... dy/da = 1 from y = t1 + a
    assert page.field("a", "grad") == "grad 1.0000"
    page.press("\ue014")  # the first use in t1 = a*a: += a * dy/dt1 = 3
    assert page.field("a", "grad") == "grad 4.0000"
    assert page.text("step-text").startswith(
        "dy/da += ∂t1/∂a * dy/dt1 = 3 * 1 = 3   [∂t1/∂a = a]   total 4\n")
    assert page.callout() == "+= 3.0000 \u00d7 1.0000 = 3.0000, total 4.0000"
    assert "accumulate" in page.classes("#step-text")
    assert "ad-now" in page.classes(page.edge("a", "t1", 0))
    assert "ad-now" not in page.classes(page.edge("a", "t1", 1))
    page.screenshot(tmp_path, "accumulation_plus_equals")
    page.press("\ue014")  # the second operand slot of a*a
    assert page.field("a", "grad") == "grad 7.0000"
    assert "ad-now" in page.classes(page.edge("a", "t1", 1))
    page.press("\ue014")  # the sum, now final
    assert page.text("step-text") == "dy/da = 1 + 3 + 3 = 7   sum of 3 contributions"
    assert "ad-summed" in page.box("a").get_attribute("class").split()
    assert all("ad-summed" in page.classes(page.edge("a", parent, k)) for parent, k in USES_OF_A)
    page.screenshot(tmp_path, "accumulation_sum")
    assert page.errors() == []


def test_clicking_a_box_shows_its_gradient_as_the_sum_over_its_uses(browser, make_page, tmp_path) -> None:
    page = Page(browser, make_page("y = a*a + a", "--set", "a=3"))
    assert not browser.find_element(page.by.ID, "node-detail").is_displayed()
    page.box("a").click()
    assert browser.find_element(page.by.ID, "node-detail").is_displayed()
    assert page.text("node-title") == "a  (input)"
    assert page.text("node-sum") == "dy/da = 7.0000, the sum over its 3 uses:"
    uses = [item.get_attribute("textContent")
            for item in browser.find_elements(page.by.CSS_SELECTOR, "#node-uses li")]
    assert uses == ["dy/da = ∂y/∂a * dy/dy = 1 * 1 = 1   [∂y/∂a = 1]",
                    "dy/da += ∂t1/∂a * dy/dt1 = 3 * 1 = 3   [∂t1/∂a = a]   total 4",
                    "dy/da += ∂t1/∂a * dy/dt1 = 3 * 1 = 3   [∂t1/∂a = a]   total 7"]
    assert page.text("node-total") == "dy/da = 1 + 3 + 3 = 7   sum of 3 contributions"
    assert "ad-selected" in page.box("a").get_attribute("class").split()
    assert all("ad-use" in page.classes(page.edge("a", parent, k)) for parent, k in USES_OF_A)
    page.screenshot(tmp_path, "accumulation_detail")
    page.box("t1").click()
    assert page.text("node-title") == "t1  (t1 = a * a)"
    assert page.text("node-sum") == "dy/dt1 = 1.0000, from its one use:"
    page.press("\ue00c")  # Escape
    assert not browser.find_element(page.by.ID, "node-detail").is_displayed()


def test_everything_works_from_the_keyboard_alone(browser, make_page) -> None:
    page = Page(browser, make_page("y = a*a + a", "--set", "a=3"))
    for _ in range(30):  # Tab through the controls to the first box of the graph
        page.press("\ue004")
        focused = browser.switch_to.active_element
        if focused.get_attribute("data-node") is not None:
            break
    else:
        pytest.fail("Tab never reached a box of the graph")
    assert focused.get_attribute("role") == "button"
    assert focused.get_attribute("aria-label").startswith(page.names[int(focused.get_attribute("data-node"))])
    page.press("\ue007")  # Enter
    assert browser.find_element(page.by.ID, "node-detail").is_displayed()
    page.press("\ue014", 2)  # arrows still step with the focus on a box
    assert page.text("counter") == "step 2 of 10"
    buttons = [b.get_attribute("aria-label")
               for b in browser.find_elements(page.by.CSS_SELECTOR, ".controls button")]
    assert buttons == ["first step (Home)", "previous step (left arrow)", "play (space)",
                       "next step (right arrow)", "last step (End)"]
    assert browser.find_element(page.by.ID, "step-text").get_attribute("aria-live") == "polite"


def test_space_plays_and_pauses_at_the_chosen_speed(browser, make_page) -> None:
    from selenium.webdriver.support.ui import Select, WebDriverWait

    page = Page(browser, make_page(KARPATHY))
    Select(browser.find_element(page.by.ID, "speed")).select_by_value("4")
    browser.find_element(page.by.TAG_NAME, "h1").click()  # the focus leaves the list, as a reader's would
    page.press(" ")
    assert browser.find_element(page.by.ID, "play").get_attribute("aria-pressed") == "true"
    WebDriverWait(browser, 10, poll_frequency=0.05).until(lambda _: page.step() >= 3)
    page.press(" ")
    assert browser.find_element(page.by.ID, "play").get_attribute("aria-pressed") == "false"
    paused_at = page.text("counter")
    time.sleep(0.8)  # three frames at 4 steps/s, had it kept playing
    assert page.text("counter") == paused_at
    page.press("\ue010")
    page.press(" ")  # play from the end starts again from the start
    WebDriverWait(browser, 10, poll_frequency=0.05).until(lambda _: 1 <= page.step() < 15)
    page.press(" ")


def test_the_step_keys_step_with_the_focus_left_on_the_speed_list(browser, make_page) -> None:
    from selenium.webdriver.support.ui import Select

    page = Page(browser, make_page(KARPATHY))
    speed = browser.find_element(page.by.ID, "speed")
    Select(speed).select_by_value("1")  # chosen with the mouse: the focus stays on the list
    speed.click()
    page.press("\ue00c")  # Escape closes the list
    assert browser.switch_to.active_element == speed
    page.press("\ue014", 2)  # right arrow
    assert page.step() == 2
    page.press("\ue012")  # left arrow
    assert page.step() == 1
    assert Select(speed).first_selected_option.get_attribute("value") == "1"
    page.press("\ue015")  # down arrow: the list's own key, the next speed
    assert Select(speed).first_selected_option.get_attribute("value") != "1"
    assert page.step() == 1


def test_large_text_enlarges_the_graph_and_the_words(browser, make_page, tmp_path) -> None:
    page = Page(browser, make_page(KARPATHY))
    svg = browser.find_element(page.by.CSS_SELECTOR, "#graph svg")
    width = float(svg.get_attribute("width").removesuffix("pt"))
    size = browser.execute_script("return parseFloat(getComputedStyle(document.body).fontSize)")
    browser.find_element(page.by.ID, "large").click()
    assert float(svg.get_attribute("width").removesuffix("pt")) == pytest.approx(1.5 * width)
    assert browser.execute_script("return parseFloat(getComputedStyle(document.body).fontSize)") >= 1.5 * size
    page.press("\ue014", 13)  # the arrows step with the focus on the check box, too
    assert page.step() == 13
    page.press(" ")  # ...but space is the check box's own
    assert not browser.find_element(page.by.ID, "large").is_selected()
    assert browser.find_element(page.by.ID, "play").get_attribute("aria-pressed") == "false"
    page.press(" ")
    page.screenshot(tmp_path, "karpathy_large")


def test_the_page_runs_its_own_script_and_nothing_else(browser, make_page) -> None:
    page = Page(browser, make_page("y = a*a + a", "--set", "a=3"))
    ran = browser.execute_script(
        "var s = document.createElement('script'); s.textContent = 'window.injected = 1';"
        "document.body.appendChild(s); return window.injected === 1;")
    assert ran is False
    assert any("Content Security Policy" in message for message in page.errors())


def test_markup_in_a_file_name_stays_text(browser, make_page, tmp_path) -> None:
    source = tmp_path / '<img src=x onerror="document.title=1">.ad'
    source.write_text("y = a*a + a\n")
    page = Page(browser, make_page(str(source), "--set", "a=3"))
    assert browser.title == str(source)
    assert browser.find_element(page.by.TAG_NAME, "h1").text == str(source)
    assert browser.find_elements(page.by.TAG_NAME, "img") == []
    assert page.errors() == []
