"""`autodiff diff`: formats, pipelines into eval and into diff itself, errors and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from autodiff_cli.cli import main

REPO = Path(__file__).resolve().parents[2]
QUADRATIC = "f = 3*x**2 + x*y + 5*y**2"


def run(runner, *args, input=None):  # type: ignore[no-untyped-def]
    return runner.invoke(main, list(args), input=input, catch_exceptions=False)


def shell(command: str) -> subprocess.CompletedProcess[str]:
    """A pipeline of autodiff commands, each run as `python -m autodiff_cli` from the repository."""
    command = command.replace("autodiff ", f"{sys.executable} -m autodiff_cli ")
    return subprocess.run(command, shell=True, cwd=REPO, capture_output=True, text=True, check=False)


def test_the_posts_example_as_text(runner) -> None:
    result = run(runner, "diff", QUADRATIC, "--format", "text")
    assert result.exit_code == 0
    assert result.stdout == "df/dx = 6*x + y\ndf/dy = x + 10*y\n"
    assert result.stderr == ""


def test_piped_default_is_a_program_with_the_defaults(runner, samples) -> None:
    # CliRunner's stdout is not a terminal, like a pipe.
    result = run(runner, "diff", str(samples / "quadratic.ad"))
    assert result.stdout == "x = 2\ny = 3\ndf_dx = 6*x + y\ndf_dy = x + 10*y\n"


def test_program_feeds_eval() -> None:
    # neuron.ad's expected gradients: x1 -1.5, w1 1.0
    result = shell(
        "autodiff diff samples/neuron.ad --wrt x1,w1 --format program | autodiff eval - --format json"
    )
    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout)["values"]
    assert values["do_dx1"] == pytest.approx(-1.5, rel=1e-12) and values["do_dw1"] == pytest.approx(
        1.0, rel=1e-12
    )


def test_program_feeds_eval_with_set_for_inputs_without_a_default() -> None:
    result = shell(f'autodiff diff "{QUADRATIC}" | autodiff eval - --set x=2 --set y=3 --format json')
    assert json.loads(result.stdout)["values"] == {"x": 2.0, "y": 3.0, "df_dx": 15.0, "df_dy": 32.0}


def test_program_feeds_diff_itself() -> None:
    # d/dx (3*x**2) = 6*x, then d/dx (6*x) = 6
    result = shell('autodiff diff "y = x**3 + x" | autodiff diff - --format text')
    assert result.stdout == "ddy_dx/dx = 6*x\n"


@pytest.mark.parametrize(
    "command, stdout",
    [
        # d/dx (x**2) = 2*x, then d/dx (2*x) = 2 (by hand)
        ('autodiff diff "f = x**2 + 3*y" | autodiff diff - --output df_dx --format text', "ddf_dx/dx = 2\n"),
        # d/dx (x**2*y) = 2*x*y; d/dx of that is 2*y and d/dy is 2*x (by hand)
        ('autodiff diff "f = x**2*y" | autodiff diff - --output df_dx --format text',
         "ddf_dx/dx = 2*y\nddf_dx/dy = 2*x\n"),
    ],
    ids=["constant second derivative", "mixed second derivatives"],
)
def test_diff_of_diff_gives_the_second_derivatives(command: str, stdout: str) -> None:
    result = shell(command)
    assert (result.returncode, result.stdout) == (0, stdout), result.stderr


@pytest.mark.parametrize(
    "program, output",
    [("y = 2*x", "dy_dx"), ("f = x**2 + 3*y", "df_dy"), ("f = -4*x", "df_dx")],
    ids=["2x", "3y", "-4x"],
)
def test_a_constant_derivative_piped_into_diff_is_not_an_input(program: str, output: str) -> None:
    # Its derivative is 0 (by hand).  Read back as an input with a default, it was
    # differentiated with respect to itself: `ddy_dx/ddy_dx = 1`.  Now it is computed and
    # depends on no input, which diff says (as for `f = 2*3`) instead of answering 1.
    result = shell(f'autodiff diff "{program}" | autodiff diff - --format text')
    assert result.returncode == 1 and result.stdout == ""
    assert f"error: '{output}' depends on no input" in result.stderr
    # and eval cannot override it with --set
    result = shell(f'autodiff diff "{program}" | autodiff eval - --set {output}=7')
    assert result.returncode == 1 and result.stdout == ""
    assert f"'{output}' is computed by the program, so --set cannot give it a value" in result.stderr
    assert "Traceback" not in result.stderr


def test_order_two(runner) -> None:
    result = run(runner, "diff", "y = tanh(x)", "--order", "2", "--format", "text")
    assert result.stdout == "y = tanh(x)\n\nd^2y/dx^2 = -2*(1 - y**2)*y\n"


def test_stdin_and_output_option(runner) -> None:
    result = run(runner, "diff", "-", "--output", "e", "--format", "text", input="e = a*b\nL = e*f\n")
    assert result.stdout == "de/da = b\nde/db = a\n"


@pytest.mark.parametrize(
    "output_format, start",
    [
        ("latex", "\\begin{aligned}\n\\frac{\\partial f}{\\partial x} &= 6 x + y"),
        ("python", "import math\n\n\ndef derivatives(*, x, y):\n"),
        ("json", '{\n  "of": "f",'),
        ("program", "df_dx = 6*x + y\n"),
    ],
)
def test_formats(runner, output_format: str, start: str) -> None:
    result = run(runner, "diff", QUADRATIC, "--format", output_format)
    assert result.exit_code == 0 and result.stdout.startswith(start)


def test_wrt_a_computed_variable(runner, samples) -> None:
    result = run(
        runner, "diff", str(samples / "karpathy.ad"), "--wrt", "a,e", "--wrt", "d", "--format", "text"
    )
    assert result.stdout == "dL/da = b*f\ndL/de = f\ndL/dd = f\n"


def test_wrt_a_variable_the_output_does_not_use_warns(runner) -> None:
    result = run(runner, "diff", "a = 1\nf = 2*x", "--wrt", "x,a", "--format", "text")
    assert result.exit_code == 0
    assert result.stdout == "df/dx = 2\ndf/da = 0\n"
    assert result.stderr == "warning: 'f' does not depend on 'a': its derivatives with respect to it are 0\n"


# --- errors ---------------------------------------------------------------------------------


def test_unknown_wrt_name(runner) -> None:
    result = run(runner, "diff", QUADRATIC, "--wrt", "x,yy")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        "<expr>: error: --wrt names yy, which the program does not define\n"
        "  hint: did you mean y? the variables are: x, y, f\n"
    )


@pytest.mark.parametrize("order", ["0", "-1", "11", "two", "1.5", "nan", "99999999999999999999999"])
def test_order_out_of_range_is_a_usage_error(runner, order: str) -> None:
    result = run(runner, "diff", QUADRATIC, "--order", order)
    assert result.exit_code == 2
    assert "--order" in result.stderr and "Traceback" not in result.stderr


def test_too_many_derivatives_is_a_usage_error(runner, samples) -> None:
    # 16 inputs: C(20, 5) = 15,504 derivatives of order 5
    result = run(runner, "diff", str(samples / "mlp.ad"), "--order", "5")
    assert result.exit_code == 2
    assert "--order 5 with respect to 16 variables gives 15,504 derivatives (at most 10,000)" in result.stderr


def test_program_errors_have_positions(runner) -> None:
    result = run(runner, "diff", "f = 3*x +* y")
    assert result.exit_code == 1
    assert result.stderr.startswith("<expr>:1:10: error:")


def test_an_output_of_constants(runner) -> None:
    result = run(runner, "diff", "f = 2*3")
    assert result.exit_code == 1
    assert (
        result.stderr.splitlines()[0]
        == "<expr>:1:1: error: 'f' depends on no input, so there is nothing to differentiate"
    )
    assert "hint: name variables with --wrt" in result.stderr


def test_a_function_without_a_python_form_is_an_error_not_a_traceback(runner, monkeypatch) -> None:
    from autodiff_cli.engine.ops import FUNCTIONS, OPS, Op

    row = Op("cube", 1, "cube({x})", lambda x: (x * x * x, 3.0 * x * x), ("3*x**2",), symbolic=("3*x**2",))
    monkeypatch.setitem(OPS, "cube", row)
    monkeypatch.setitem(FUNCTIONS, "cube", row)
    for output_format, form in (("python", "Python"), ("latex", "LaTeX")):
        result = run(runner, "diff", "y = cube(x)*z", "--format", output_format)
        assert (result.exit_code, result.stdout) == (1, "")
        assert f"error: the function 'cube' has no {form} form in the op table" in result.stderr
        assert "Traceback" not in result.stderr
    text = run(runner, "diff", "y = cube(x)*z", "--format", "text").stdout
    assert text == "dy/dx = 3*x**2*z\ndy/dz = cube(x)\n"


def test_unknown_output(runner) -> None:
    result = run(runner, "diff", QUADRATIC, "--output", "g")
    assert result.exit_code == 1 and "--output 'g' is not a variable of the program" in result.stderr


def test_help_has_examples(runner) -> None:
    result = run(runner, "diff", "--help")
    assert result.exit_code == 0
    assert "autodiff diff samples/neuron.ad --wrt x1,w1 | autodiff eval -" in result.stdout
    assert "diff" in run(runner, "--help").stdout


# --- every derivative program reads back (the language has no `[]`) -----------------------------

SAMPLE_PROGRAMS = sorted(path.relative_to(REPO / "samples").as_posix() for path in (REPO / "samples").rglob("*.ad"))


@pytest.mark.parametrize("sample", SAMPLE_PROGRAMS)
@pytest.mark.parametrize("order", ["1", "2"])
def test_every_samples_derivative_program_parses_back(runner, samples, sample: str, order: str) -> None:
    from autodiff_cli.language.compiler import parse

    result = runner.invoke(main, ["diff", str(samples / sample), "--order", order, "--format", "json"])
    if result.exit_code == 2 and order == "2":
        assert "Traceback" not in result.stderr  # refused as a request (too large), which is said
        return
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    parse(document["program"], sample)  # raises where the text is not the language
    compile(runner.invoke(main, ["diff", str(samples / sample), "--order", order, "--format", "python"]).stdout,
            sample, "exec")


VECTOR, MATRIX = "x = [1, 2, 3, 4]\n", "x = [[1, 2], [3, 4], [5, 6]]\n"


@pytest.mark.parametrize(("given", "taken"), [
    (VECTOR, "x[2:2]"), (VECTOR, "x[4:]"), (VECTOR, "x[::-1][4:]"),
    (MATRIX, "x[2:2]"), (MATRIX, "x[1:1, :]"), (MATRIX, "x[:, 1:1]"), (MATRIX, "x[3:]"),
])
def test_an_empty_slice_passes_no_gradient_and_the_program_reads_back(runner, given, taken) -> None:
    # Before, the slice's adjoint was written `(1 + 0 * t1) @ []`, which the language cannot parse.
    program = f"{given}y = sum({taken}) + sum(x**2)\n"
    written = run(runner, "diff", "-e", program, "--format", "program")
    assert written.exit_code == 0, written.stderr
    assert "[]" not in written.stdout
    values = run(runner, "eval", "-", "--format", "json", input=written.stdout)
    assert values.exit_code == 0, values.stderr
    x = json.loads(values.stdout)["values"]["x"]
    assert json.loads(values.stdout)["values"]["dy_dx"] == [[2 * v for v in row] for row in x] \
        if isinstance(x[0], list) else [2 * v for v in x]  # d sum(x**2) / dx = 2x; the empty part adds 0


def test_an_empty_block_of_a_whole_hessian_reads_back(runner) -> None:
    result = run(runner, "diff", "-e", "y = sum(x**2) + sum(z**2)", "--shapes", "x=0", "--shapes", "z=2",
                 "--hessian", "--format", "program")
    assert result.exit_code == 0, result.stderr
    assert "H_x_z = reshape([0][0:0], [0, 2])\n" in result.stdout  # d2y/dx dz: no rows, each shaped like z
    from autodiff_cli.language.compiler import parse

    parse(result.stdout)


def test_a_variable_of_no_entries_takes_no_direction(runner) -> None:
    # Before, --order 2 wrote its direction as the input `v_x = []`, which does not parse.
    result = run(runner, "diff", "-e", "y = sum(x**2)", "--shapes", "x=0", "--order", "2", "--format", "program")
    assert result.exit_code == 0, result.stderr
    assert "\nv_x = " not in "\n" + result.stdout and "Hv_x = 0 * x\n" in result.stdout
    from autodiff_cli.language.compiler import parse

    parse(result.stdout)
