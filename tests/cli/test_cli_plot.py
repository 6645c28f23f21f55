"""`autodiff plot`: options, formats, destinations, gaps, errors and exit codes."""

import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from autodiff_cli.cli import main
from autodiff_cli.cli import plot as cli_plot

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def run(runner):
    def invoke(*args, input=None):
        return runner.invoke(main, ["plot", *args], input=input, catch_exceptions=False)

    return invoke


@pytest.mark.parametrize("name, start", [
    ("tanh.svg", b"<?xml"), ("tanh.png", PNG_SIGNATURE), ("tanh.pdf", b"%PDF-"),
    ("tanh.txt", b"y = tanh(x)\n"), ("TANH.SVG", b"<?xml"),
])
def test_the_extension_sets_the_format(run, tmp_path, name, start) -> None:
    out = tmp_path / name
    result = run("y = tanh(x)", "--range", "x=-3:3", "-o", str(out), "--points", "101")
    assert result.exit_code == 0, result.output
    assert out.read_bytes().startswith(start)
    assert result.stdout == "" and result.stderr == ""


def test_svg_to_a_pipe_and_text_on_request(run) -> None:
    result = run("y = tanh(x)", "--range", "x=-3:3", "--points", "51")
    assert result.exit_code == 0
    ET.fromstring(result.stdout_bytes)  # CliRunner's stdout is not a terminal: SVG
    result = run("y = tanh(x)", "--range", "x=-3:3", "--points", "51", "--format", "text")
    assert result.stdout.startswith("y = tanh(x)\n\ny\n")


@pytest.mark.skipif(not __import__("os").path.exists("/dev/stdout"), reason="needs /dev/stdout")
def test_a_stream_as_out_gets_svg_unless_told() -> None:
    command = [sys.executable, "-m", "autodiff_cli", "plot", "y = x*x", "--range", "x=0:1", "--points", "11",
               "-o", "/dev/stdout"]
    result = subprocess.run(command, capture_output=True, check=False)
    assert result.returncode == 0 and result.stdout.startswith(b"<?xml"), result.stderr
    result = subprocess.run([*command, "--format", "text"], capture_output=True, text=True, check=False)
    assert result.returncode == 0 and result.stdout.startswith("y = x*x\n"), result.stderr


def test_text_is_the_default_at_a_terminal(run, monkeypatch) -> None:
    monkeypatch.setattr(cli_plot, "stdout_is_terminal", lambda: True)
    result = run("y = x*x", "--range", "x=-1:1", "--points", "21")
    assert result.exit_code == 0 and result.stdout.startswith("y = x*x\n")


def test_binary_to_a_terminal_is_refused(run, monkeypatch) -> None:
    monkeypatch.setattr(cli_plot, "stdout_is_terminal", lambda: True)
    result = run("y = x*x", "--range", "x=-1:1", "--format", "png")
    assert result.exit_code == 2 and "refusing to write binary PNG to a terminal" in result.stderr


def test_sample_with_a_tangent_and_second_derivative(run, samples, tmp_path) -> None:
    out = tmp_path / "neuron.svg"
    result = run(str(samples / "neuron.ad"), "--range", "x1=-2:2", "--tangent-at", "x1=0.5", "--order", "2",
                 "-o", str(out), "--points", "201")
    assert result.exit_code == 0, result.output
    ids = {g.get("id") for g in ET.parse(out).getroot().iter("{http://www.w3.org/2000/svg}g")}
    assert {"curve-f", "curve-df", "curve-d2f", "tangent-0"} <= ids


def test_the_same_input_gives_the_same_bytes(run, tmp_path) -> None:
    first, second = tmp_path / "1.svg", tmp_path / "2.svg"
    for out in (first, second):
        assert run("y = sin(x)", "--range", "x=-3:3", "-o", str(out), "--tangent-at", "x=1").exit_code == 0
    assert first.read_bytes() == second.read_bytes()


def test_gaps_are_reported_not_errors(run, tmp_path) -> None:
    result = run("y = log(x)", "--range", "x=-1:3", "--points", "401", "-o", str(tmp_path / "log.svg"))
    assert result.exit_code == 0
    assert result.stderr == (
        "warning: y is undefined at x from -1 to 0 (101 of 401 points): log of -1 is undefined (log needs a "
        "positive argument) (in 'log'); the curve has a gap\n")


def test_other_inputs_come_from_set_and_defaults(run) -> None:
    result = run("b = 1; y = a*x + b", "--range", "x=0:1", "--set", "a=2", "--points", "3",
                 "--format", "text")
    assert result.exit_code == 0, result.output
    assert "with b = 1, a = 2" in result.stdout  # program order


def test_a_value_for_the_varied_input_is_ignored_with_a_warning(run) -> None:
    result = run("y = 2*x", "--range", "x=0:1", "--set", "x=5", "--points", "3", "--format", "text")
    assert result.exit_code == 0
    assert "warning: the value given for x is not used: --range varies it from 0 to 1" in result.stderr


@pytest.mark.parametrize("args, message", [
    (["--range", "x=3:-3"], "the low end must be below the high end"),
    (["--range", "x=1:1"], "the low end must be below the high end"),
    (["--range", "x=nan:1"], "is not a number"),
    (["--range", "x=-inf:1"], "is not a number"),
    (["--range", "x=1e999:2e999"], "too large"),
    (["--range", "x=1"], "expected NAME=LOW:HIGH"),
    (["--range", "=0:1"], "expected NAME=LOW:HIGH"),
    (["--range", "x=-1:1", "--tangent-at", "y=0"], "the tangent point names y, but --range varies x"),
    (["--range", "x=-1:1", "--tangent-at", "x=2"], "x=2 is outside --range x=-1:1"),
    (["--range", "x=-1:1", "--tangent-at", "x=inf"], "is not a number"),
    (["--range", "x=-1:1", "--points", "1"], "--points"),
    (["--range", "x=-1:1", "--order", "3"], "--order"),
    ([], "Missing option '--range'"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_bad_options_are_usage_errors(run, args, message) -> None:
    result = run("y = x*x", *args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output


# A second --range used to replace the first without a word (issue: bug 7): the plot went along
# the last one, and an input given only by an earlier --range was reported as missing (exit 1).
@pytest.mark.parametrize("program, ranges, wanted", [
    ("y = x", ["x=0:1", "x=2:3"], ["x=0:1 and x=2:3", "give --range once"]),
    ("y = x", ["x=0:1", "x=0:1"], ["x=0:1 and x=0:1", "give --range once"]),
    ("y = x*z", ["x=0:1", "z=2:3"], ["x=0:1 and z=2:3", "give the others with --set", "--set z=VALUE"]),
    ("y = x*z", ["z=2:3", "x=0:1"], ["z=2:3 and x=0:1", "--set x=VALUE"]),
    ("y = x*z*w", ["x=0:1", "z=2:3", "w=1:2"], ["x=0:1, z=2:3 and w=1:2", "--set z=VALUE --set w=VALUE"]),
], ids=["same-input-twice", "same-range-twice", "two-inputs", "two-inputs-other-order", "three-inputs"])
def test_more_than_one_range_is_a_usage_error_naming_each(run, tmp_path, program, ranges, wanted) -> None:
    out = tmp_path / "plot.txt"
    args = [item for span in ranges for item in ("--range", span)]
    result = run(program, *args, "--points", "11", "-o", str(out))
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--range'" in result.stderr
    assert "it takes one input" in result.stderr and "a plot is along one input" in result.stderr
    for text in wanted:
        assert text in result.stderr
    assert result.stdout == "" and not out.exists()


@pytest.mark.parametrize("program, args, message", [
    ("y = x*x", ["--range", "z=0:1"], "--range z: the program has no variable 'z'"),
    ("t = 2*x; y = t*t", ["--range", "t=0:1"], "'t' is computed by the program, so it cannot be varied"),
    ("y = a*x", ["--range", "x=0:1"], "no value for input a"),
    ("y = log(x)", ["--range", "x=-1:1", "--tangent-at", "x=-0.5"], "log of -0.5 is undefined"),
    ("y = log(x)", ["--range", "x=-1:1", "--tangent-at", "x=-0.5"], "note: --tangent-at x=-0.5 asks for the tangent"),
    ("y = sqrt(x)", ["--range", "x=0:1", "--tangent-at", "x=0"], "no tangent line"),
    ("y = x*x", ["--range", "x=0:1", "--output", "q"], "--output 'q' is not a variable"),
], ids=["unknown", "computed", "missing", "tangent-outside-domain", "tangent-outside-domain-names-option",
        "vertical-tangent", "bad-output"])
def test_program_errors_exit_1_and_write_nothing(run, tmp_path, program, args, message) -> None:
    out = tmp_path / "plot.svg"
    result = run(program, *args, "-o", str(out), "--points", "11")
    assert result.exit_code == 1, result.output
    assert message in result.stderr
    assert not out.exists()


def test_an_unknown_extension_is_a_usage_error(run, tmp_path) -> None:
    result = run("y = x", "--range", "x=0:1", "-o", str(tmp_path / "plot.gif"))
    assert result.exit_code == 2 and "cannot tell the format from the file name" in result.stderr


def test_help_has_examples(run) -> None:
    result = run("--help")
    for text in ("Examples:", 'autodiff plot "y = tanh(x)" --range x=-3:3 -o tanh.svg', "--tangent-at",
                 "--order", "--points"):
        assert text in result.output


def test_importing_the_commands_loads_no_numpy_or_matplotlib() -> None:
    code = ("import sys, autodiff_cli.cli.main; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'matplotlib', 'selenium'}))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout == "[]\n"


# Values near the largest float: the axes' arithmetic must not overflow into tracebacks.
@pytest.mark.parametrize("program, span, tangent, fmt, note", [
    ("y = exp(x)", "x=700:710", "x=705", "svg", ""),  # SVG text is drawn as outlines
    ("y = 1e308*x", "x=-10:10", "x=0", "text", "beyond \u00b11e+300 and not drawn"),
    ("y = 1e308*x", "x=-10:10", "x=0", "png", ""),
    ("y = 1e300*x*x", "x=-3:3", "x=2", "text", "beyond \u00b11e+300 everywhere"),
], ids=["exp-overflows-svg", "huge-slope-text", "huge-slope-png", "huge-everywhere-text"])
def test_values_near_the_largest_float_are_left_out_and_said(run, program, span, tangent, fmt, note) -> None:
    result = run(program, "--range", span, "--points", "201", "--order", "2", "--format", fmt,
                 "--tangent-at", tangent)
    assert result.exit_code == 0, result.output
    if fmt == "text":
        assert note in result.stdout
    else:
        assert result.stdout_bytes.startswith(PNG_SIGNATURE if fmt == "png" else b"<?xml")


@pytest.mark.parametrize("span", ["x=-1e308:1e308", "x=1e307:1e308", "x=-1.7e308:-1e308", "x=0:1e301"])
def test_a_range_near_the_largest_float_is_a_usage_error(run, span) -> None:
    result = run("y = x", "--range", span, "--format", "text")
    assert result.exit_code == 2
    assert "stays within \u00b11e+300" in result.stderr
