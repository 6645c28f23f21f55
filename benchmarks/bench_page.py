"""What the step-through page (`autodiff graph -o steps.html`) costs on top of the SVG, and in a browser.

For chains of about 100, 500 and 2,000 values (``bench_render.chain_program``; 2,000 is the
default ``--max-nodes``), in one process:

* the baseline: the SVG of ``autodiff graph`` (DOT text and the bundled renderer's layout);
* the page's own work on top: both passes with their places (``analysis.steps.walkthrough``)
  and the HTML (``render.page.to_html``: frames, marked-up SVG, script), timed separately;

runs interleaved (SVG, page, SVG, page...), medians and the ratio page-work / SVG printed, with
the page's size.  Then, where headless Chromium and Selenium are installed, each page is opened
and the median time of one step (the script replays every frame up to the new one and repaints)
is measured in the browser.

    python benchmarks/bench_page.py                 # 100, 500, 2000 values, 5 runs each
    python benchmarks/bench_page.py --sizes 2000 --runs 3
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_render import chain_program

from autodiff_cli.analysis.graph_model import GraphModel
from autodiff_cli.analysis.steps import walkthrough
from autodiff_cli.execute import evaluate
from autodiff_cli.language import parse
from autodiff_cli.render import backends, page
from autodiff_cli.render.dot import to_dot

CHROMIUM_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1400,900"]


def svg_of(model: GraphModel, renderer: backends.Renderer) -> bytes:
    return backends.render(to_dot(model), "svg", renderer)


def page_of(evaluation, model: GraphModel, svg: bytes) -> str:  # type: ignore[no-untyped-def]
    return page.to_html(walkthrough(evaluation, model), svg, title="bench")


def browser():  # type: ignore[no-untyped-def]
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        return None
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None or driver is None:
        return None
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={tempfile.mkdtemp(prefix='bench-page-')}"]:
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=Service(driver))


STEP_TIME = """
const last = Number(document.getElementById('counter').textContent.split(' ').pop());
document.dispatchEvent(new KeyboardEvent('keydown', {key: 'End'}));
const times = [];
for (let i = 0; i < arguments[0]; i++) {
  const start = performance.now();
  document.dispatchEvent(new KeyboardEvent('keydown', {key: 'ArrowLeft'}));
  document.body.getBoundingClientRect();  // let the repaint's layout happen inside the timing
  times.push(performance.now() - start);
}
times.sort((a, b) => a - b);
return [last, times[Math.floor(times.length / 2)]];
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 500, 2000], metavar="N")
    parser.add_argument("--runs", type=int, default=5)
    arguments = parser.parse_args()
    renderer = backends.choose_renderer("svg", "bundled")
    print(f"renderer: {renderer.program}; {arguments.runs} interleaved runs, medians\n")
    header = ("values", "SVG s", "page work s", "ratio", "page MB", "frames", "step ms")
    print(" ".join(f"{h:>{w}}" for h, w in zip(header, (7, 8, 12, 6, 8, 7, 8))))
    driver = browser()
    workdir = Path(tempfile.mkdtemp(prefix="bench-page-"))
    try:
        for size in arguments.sizes:
            evaluation = evaluate(parse(chain_program(size), "<chain>"))
            model = GraphModel.of(evaluation)
            svg_times, page_times = [], []
            for _ in range(arguments.runs):
                start = time.perf_counter()
                svg = svg_of(model, renderer)
                svg_times.append(time.perf_counter() - start)
                start = time.perf_counter()
                html = page_of(evaluation, model, svg)
                page_times.append(time.perf_counter() - start)
            svg_median, page_median = statistics.median(svg_times), statistics.median(page_times)
            step = frames = "-"
            if driver is not None:
                path = workdir / f"chain{size}.html"
                path.write_text(html, encoding="utf-8")
                driver.get(path.as_uri())
                last, milliseconds = driver.execute_script(STEP_TIME, 21)
                frames, step = f"{last:,}", f"{milliseconds:.1f}"
            print(f"{model.size:>7,} {svg_median:>8.3f} {page_median:>12.3f} "
                  f"{page_median / svg_median:>6.2f} {len(html.encode()) / 1e6:>8.2f} {frames:>7} {step:>8}",
                  flush=True)
    finally:
        if driver is not None:
            driver.quit()
        shutil.rmtree(workdir, ignore_errors=True)
    if driver is None:
        print("\n(step times need Chromium, chromedriver and Selenium: "
              "apt-get install chromium chromium-driver)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
