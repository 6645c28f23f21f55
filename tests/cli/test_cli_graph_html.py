"""`autodiff graph ... -o steps.html`: the step-through page from the command line.

The page's content is tested in tests/render/test_page.py and in a browser in
tests/render/test_page_browser.py; here: choosing the format, the limits and errors it shares
with SVG, and what is written.
"""

import json
import re

import pytest

from autodiff_cli.cli import main


@pytest.fixture
def run(runner):
    def invoke(*args, input=None):
        return runner.invoke(main, ["graph", *args], input=input, catch_exceptions=False)

    return invoke


def embedded(html: str) -> dict:
    return json.loads(re.search(r'<script type="application/json" id="autodiff-data">(.*?)</script>', html,
                                re.DOTALL).group(1))


@pytest.mark.parametrize("name", ["steps.html", "steps.htm", "STEPS.HTML"])
def test_the_extension_html_writes_the_page(run, samples, tmp_path, name) -> None:
    out = tmp_path / name
    result = run(str(samples / "karpathy.ad"), "-o", str(out), "--renderer", "bundled")
    assert result.exit_code == 0, result.output
    html = out.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>\n") and html.endswith("</html>\n")
    assert "<title>" + str(samples / "karpathy.ad") + "</title>" in html
    assert [n["name"] for n in embedded(html)["nodes"]] == ["a", "b", "e", "c", "d", "f", "L"]
    assert result.stdout == ""


def test_format_html_writes_to_stdout(run) -> None:
    result = run("y = a*a + a", "--set", "a=3", "--format", "html", "--renderer", "bundled")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("<!DOCTYPE html>")
    assert "<title>y = a*a + a</title>" in result.stdout


def test_the_same_input_gives_the_same_bytes(run, samples, tmp_path) -> None:
    first, second = tmp_path / "1.html", tmp_path / "2.html"
    for out in (first, second):
        assert run(str(samples / "neuron.ad"), "-o", str(out), "--renderer", "bundled").exit_code == 0
    assert first.read_bytes() == second.read_bytes()


def test_a_missing_input_is_an_error_and_writes_nothing(run, tmp_path) -> None:
    out = tmp_path / "steps.html"
    result = run("L = (a*b + c)*f", "--set", "a=2", "-o", str(out))
    assert result.exit_code == 1
    assert "error: no value for inputs b, c, f" in result.stderr
    assert "Traceback" not in result.output
    assert not out.exists()


def test_the_node_limit_of_svg_applies(run, samples, tmp_path) -> None:
    out = tmp_path / "steps.html"
    result = run(str(samples / "karpathy.ad"), "-o", str(out), "--max-nodes", "6")
    assert result.exit_code == 1
    assert "the graph of L has 7 values, more than --max-nodes 6" in result.stderr
    assert not out.exists()
    assert run(str(samples / "karpathy.ad"), "-o", str(out), "--max-nodes", "7",
               "--renderer", "bundled").exit_code == 0


def test_no_grad_steps_through_the_forward_pass_only(run, samples, tmp_path) -> None:
    out = tmp_path / "steps.html"
    result = run(str(samples / "karpathy.ad"), "-o", str(out), "--no-grad", "--renderer", "bundled")
    assert result.exit_code == 0, result.output
    html = out.read_text()
    data = embedded(html)
    assert {f["pass"] for f in data["frames"]} == {"start", "forward", "end"}
    assert data["backward"] is False
    assert 'class="ad-grad"' not in html


def test_precision_sets_the_numbers_in_the_boxes(run, samples, tmp_path) -> None:
    out = tmp_path / "steps.html"
    assert run(str(samples / "neuron.ad"), "-o", str(out), "--precision", "2",
               "--renderer", "bundled").exit_code == 0
    data = embedded(out.read_text())
    assert {n["name"]: n["data"] for n in data["nodes"]}["o"] == "0.71"  # tanh(0.8814) = 1/sqrt(2)


def test_help_names_the_page(run) -> None:
    result = run("--help")
    assert "-o steps.html" in result.output and "html" in result.output
