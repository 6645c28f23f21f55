"""`autodiff eval`: sources, inputs, formats, errors and exit codes."""

import csv
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autodiff_cli.cli import main

REPO = Path(__file__).resolve().parents[2]

KARPATHY = "L = (a*b + c)*f"
KARPATHY_SETS = ["--set", "a=2", "--set", "b=-3", "--set", "c=10", "--set", "f=-2"]


def run(runner, *args, input=None):
    return runner.invoke(main, list(args), input=input, catch_exceptions=False)


def test_karpathy_json(runner) -> None:
    result = run(runner, "eval", KARPATHY, *KARPATHY_SETS, "--format", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["output"] == "L"
    assert document["value"] == -8.0
    assert document["grads"] == {"a": 6.0, "b": -4.0, "c": -2.0, "f": 4.0, "L": 1.0}
    assert document["values"] == {"a": 2.0, "b": -3.0, "c": 10.0, "f": -2.0, "L": -8.0}


def test_sample_file_with_intermediates(runner, samples) -> None:
    result = run(runner, "eval", str(samples / "karpathy.ad"), "--format", "json")
    grads = json.loads(result.stdout)["grads"]
    assert grads == {"a": 6.0, "b": -4.0, "c": -2.0, "e": -2.0, "d": -2.0, "f": 4.0, "L": 1.0}


def test_plain_is_aligned_columns_in_program_order(runner) -> None:
    result = run(runner, "eval", KARPATHY, *KARPATHY_SETS, "--format", "plain")
    assert result.stdout == (
        "name  kind    op  value  grad\n"
        "a     input         2.0   6.0\n"
        "b     input        -3.0  -4.0\n"
        "c     input        10.0  -2.0\n"
        "f     input        -2.0   4.0\n"
        "L     output  *    -8.0   1.0\n"
    )


def test_piped_default_is_plain(runner) -> None:
    # CliRunner's stdout is not a terminal, like a pipe.
    assert run(runner, "eval", KARPATHY, *KARPATHY_SETS).stdout.startswith("name  kind")


def test_table_has_every_digit(runner) -> None:
    result = run(runner, "eval", "y = x/3", "--set", "x=1", "--format", "table", "--no-color")
    assert "0.3333333333333333" in result.stdout
    assert "\x1b[" not in result.stdout


def test_precision_rounds_text_output(runner) -> None:
    result = run(runner, "eval", "y = x/3", "--set", "x=1", "--format", "plain", "--precision", "3")
    assert "0.333" in result.stdout and "0.3333" not in result.stdout


def test_csv(runner) -> None:
    result = run(runner, "eval", KARPATHY, *KARPATHY_SETS, "--format", "csv")
    table = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [r["name"] for r in table] == ["a", "b", "c", "f", "L"]
    assert {r["name"]: float(r["grad"]) for r in table} == {"a": 6, "b": -4, "c": -2, "f": 4, "L": 1}


def test_wrt_limits_the_gradients(runner) -> None:
    result = run(runner, "eval", KARPATHY, *KARPATHY_SETS, "--wrt", "a,f", "--format", "json")
    document = json.loads(result.stdout)
    assert document["grads"] == {"a": 6.0, "f": 4.0}
    assert len(document["values"]) == 5


def test_wrt_unknown_name_is_an_error(runner) -> None:
    result = run(runner, "eval", KARPATHY, *KARPATHY_SETS, "--wrt", "zz")
    assert result.exit_code == 1
    assert "zz" in result.stderr


def test_stdin_dash_and_implicit_pipe(runner) -> None:
    for args in (["eval", "-"], ["eval"]):
        result = run(runner, *args, "--format", "json", input="x = 3\ny = x*x\n")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["grads"]["x"] == 6.0


def test_expr_and_file_options(runner, samples, tmp_path) -> None:
    assert json.loads(run(runner, "eval", "-e", "y = 2*x", "--set", "x=1", "--format", "json").stdout)[
        "value"] == 2.0
    path = tmp_path / "m.ad"
    path.write_text("x = 4\ny = sqrt(x)\n")
    assert json.loads(run(runner, "eval", "-f", str(path), "--format", "json").stdout)["grads"]["x"] == 0.25


def test_values_file_and_set_precedence(runner, tmp_path) -> None:
    values = tmp_path / "v.json"
    values.write_text('{"a": 1, "b": 2}')
    result = run(runner, "eval", "y = a*b", "--values", str(values), "--set", "b=5", "--format", "json")
    assert json.loads(result.stdout)["value"] == 5.0


def test_full_round_trip_precision(runner) -> None:
    result = run(runner, "eval", "y = x/3", "--set", "x=1", "--format", "json")
    assert json.loads(result.stdout)["value"] == 1 / 3


def test_non_finite_gradient_is_a_string_in_json(runner) -> None:
    result = run(runner, "eval", "y = sqrt(x)", "--set", "x=0", "--format", "json")
    document = json.loads(result.stdout)
    assert document["grads"]["x"] == "Infinity"
    assert "Infinity" not in result.stdout.replace('"Infinity"', "")  # never a bare token


def test_unused_set_warns_on_stderr(runner) -> None:
    result = run(runner, "eval", "y = 2*x", "--set", "x=1", "--set", "q=2", "--format", "json")
    assert result.exit_code == 0
    assert "warning: 'q' is not used by the program" in result.stderr
    json.loads(result.stdout)


def test_setting_a_computed_name_says_where(runner) -> None:
    result = run(runner, "eval", "e = a*b\nL = e+1", "--set", "a=1", "--set", "b=1", "--set", "e=3")
    assert result.exit_code == 1
    assert result.stderr.startswith("<expr>:1:1: error: 'e' is computed by the program")


@pytest.mark.parametrize(
    "args, first_line",
    [
        (["y = a*"], "<expr>:1:7: error: unexpected end of input; expected an operand"),
        (["y = a*b"], "<expr>:1:5: error: no value for inputs a, b"),
        (["y = log(x)", "--set", "x=-1"], "<expr>:1:5: error: log of -1 is undefined"),
        (["y = 1/x", "--set", "x=0"], "<expr>:1:6: error: division by zero (in '/')"),
        (["missing.ad"], "error: no such file: missing.ad"),
    ],
    ids=["syntax", "missing-inputs", "domain", "division-by-zero", "missing-file"],
)
def test_program_errors_exit_1_without_traceback(runner, args, first_line) -> None:
    result = run(runner, "eval", *args)
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0].startswith(first_line)
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_file_errors_name_the_file(runner, tmp_path) -> None:
    path = tmp_path / "bad.ad"
    path.write_text("a = 1\nb = a +\n")
    result = run(runner, "eval", str(path))
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0].startswith(f"{path}:2:")


def test_non_utf8_file_is_a_clean_error(runner, tmp_path) -> None:
    path = tmp_path / "latin1.ad"
    path.write_bytes(b"y = x\xe9 + 1\n")
    result = run(runner, "eval", str(path))
    assert result.exit_code == 1
    assert "not valid UTF-8" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["eval", "y = x", "--set", "x"],
        ["eval", "y = x", "--set", "x=abc"],
        ["eval", "y = x", "--set", "x=inf"],
        ["eval", "y = x", "--format", "xml"],
        ["eval", "y = x", "--bogus"],
        ["eval", "y = x", "-e", "y = 2"],
        ["nosuchcommand"],
    ],
    ids=["set-without-value", "set-not-a-number", "set-not-finite", "bad-format", "unknown-option",
         "two-sources", "unknown-command"],
)
def test_usage_errors_exit_2(runner, args) -> None:
    result = run(runner, *args)
    assert result.exit_code == 2
    assert "Traceback" not in result.output


@pytest.mark.parametrize(("item", "message"), [
    ("1x=3", ("'1x' is not a name of the language, whose names are ASCII letters, digits and _, and start "
              "with a letter or _ (got '1x=3')")),
    ("a b=1", ("'a b' is not a name of the language, whose names are ASCII letters, digits and _, and start "
               "with a letter or _ (got 'a b=1')")),
    ("\u00e9=1", ("'\u00e9' is not a name of the language, whose names are ASCII letters, digits and _, and "
                  "start with a letter or _ (got '\u00e9=1')")),
    ("=2", "expected NAME=VALUE (e.g. a=2.5), got '=2'"),
    ("x", "expected NAME=VALUE (e.g. a=2.5), got 'x'"),
], ids=["leading-digit", "space-inside", "non-ascii", "no-name", "no-equals-sign"])
def test_a_set_that_names_no_possible_variable_says_why(runner, item, message) -> None:
    result = run(runner, "eval", "y = x", "--set", item)
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == f"Error: Invalid value for '--set': {message}"


@pytest.mark.parametrize(
    ("content", "where", "message"),
    [
        ('{"a": 1,\n "b": "2"}', ":2:2:", "the value of 'b' is not a finite number: \"2\""),
        # A number too large for a float is quoted as written, as --set quotes it; a long one is
        # cut in the middle with its length, as every long word in a message is.
        ('{"a": 1e999}', ":1:2:", "the value of 'a' is too large for a float: 1e999"),
        ('{"a": -1E+999}', ":1:2:", "the value of 'a' is too large for a float: -1E+999"),
        ('{"a": 1' + "0" * 400 + "}", ":1:2:",
         "the value of 'a' is too large for a float: 1" + "0" * 23 + "...(401 characters)..." + "0" * 12),
        ('{"a": 1' + "0" * 5000 + "}", ":1:2:",
         "the value of 'a' is too large for a float: 1" + "0" * 23 + "...(5,001 characters)..." + "0" * 12),
        ('{"a": true}', ":1:2:", "the value of 'a' is not a finite number: true"),
        # An array is a tensor: nested arrays of finite numbers, with rows of one length.
        ('{"a": [1, "x"]}', ":1:2:", "the value of 'a' is not a tensor: entry [1] is \"x\", not a finite number"),
        ('{"a": [ [1e0],  [2, 3] ]}', ":1:2:",
         "the value of 'a' is not a tensor: the rows differ in length: row [1] has 2 entries where the first has 1"),
        ('{"a": Infinity}', ":1:2:", "the value of 'a' is not a finite number: Infinity"),
        # '"a":' also ends the key before it; the place whose value is the bad one is the one named.
        ('{"x \\"a": 1, "a": [true]}', ":1:14:", "the value of 'a' is not a tensor: entry [0] is true, not a finite number"),
        ("[1, 2]", ":1:1:", "expected a JSON object of numbers, got an array"),
        ("[" * 100_000, ":1:1:", "invalid values file: the JSON is nested too deeply"),
        ('{"a": 1,\n "b": }', ":2:7:", "invalid JSON: Expecting value"),
        ('{"a": 1,\n "a": 2}', ":2:2:", "'a' is given twice"),
    ],
    ids=["string", "float_overflow", "negative_overflow", "int_overflow", "int_too_many_digits", "boolean",
         "array", "array_spaced", "infinity", "key_lookalike_before", "not_an_object", "deep", "invalid_json",
         "key_twice"],
)
def test_bad_values_are_errors_that_point_at_them(runner, tmp_path, content, where, message) -> None:
    values = tmp_path / "v.json"
    values.write_text(content)
    result = run(runner, "eval", "y = a*b", "--set", "b=1", "--values", str(values))
    assert result.exit_code == 1
    first = result.stderr.splitlines()[0]
    assert first == f"{values}{where} error: {message}"
    assert "Traceback" not in result.output


@pytest.mark.parametrize("content", ['{"b": 1,\n "a": 1e400}'], ids=["float_overflow"])
def test_a_value_too_large_for_a_float_says_how_large_a_float_goes(runner, tmp_path, content) -> None:
    values = tmp_path / "v.json"
    values.write_text(content)
    result = run(runner, "eval", "y = a*b", "--values", str(values))
    assert result.exit_code == 1
    assert result.stderr == (f"{values}:2:2: error: the value of 'a' is too large for a float: 1e400\n"
                             ' 2 |  "a": 1e400}\n'
                             "   |  ^~~\n"
                             "  hint: a float holds numbers up to about 1.8e308 in size: give a smaller value\n")


def test_forward_mode_gives_the_reverse_gradients_and_the_work(runner) -> None:
    result = run(runner, "eval", KARPATHY, *KARPATHY_SETS, "--mode", "forward", "--format", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["mode"] == "forward"
    assert document["grads"] == {"a": 6.0, "b": -4.0, "c": -2.0, "f": 4.0}
    # 7 values (a b a*b c + f *): 4 passes of 7 nodes forward, one backward pass of 7.
    assert document["work"] == {"forward": {"passes": 4, "node_visits": 28},
                                "reverse": {"passes": 1, "node_visits": 7}, "graph_size": 7}


def test_forward_mode_wrt_and_text_formats(runner, samples) -> None:
    result = run(runner, "eval", str(samples / "karpathy.ad"), "--mode", "forward", "--wrt", "e,a",
                 "--format", "csv")
    assert result.exit_code == 0, result.output
    assert result.stdout == "name,kind,op,value,grad\na,input,,2.0,6.0\ne,intermediate,*,-6.0,-2.0\n"
    assert result.stderr == ("note: forward mode: 2 passes (one per variable) x 7 nodes = 14 node visits; "
                             "reverse mode: 1 backward pass x 7 nodes = 7 node visits\n")
    table = run(runner, "eval", KARPATHY, *KARPATHY_SETS, "--mode", "forward", "--format", "table",
                "--no-color")
    assert "forward mode: 4 passes (one per input)" in table.stdout
    assert "\u2502 f    \u2502 input \u2502" in table.stdout


def test_reverse_mode_is_named_in_json(runner) -> None:
    document = json.loads(run(runner, "eval", KARPATHY, *KARPATHY_SETS, "--format", "json").stdout)
    assert document["mode"] == "reverse" and "work" not in document


def test_help_documents_exit_codes(runner) -> None:
    for args in (["--help"], ["eval", "--help"]):
        result = run(runner, *args)
        assert result.exit_code == 0
        assert "Exit status" in result.stdout and "command-line usage" in result.stdout


@pytest.mark.parametrize("name", ["karpathy", "neuron", "neuron_exp", "mlp", "softmax_xent", "quadratic"])
def test_every_sample_runs(runner, samples, name) -> None:
    result = run(runner, "eval", str(samples / f"{name}.ad"), "--format", "json")
    assert result.exit_code == 0, result.output
    assert all(math.isfinite(v) for v in json.loads(result.stdout)["grads"].values())


# --- the installed command, as a user runs it -------------------------------------------------

AUTODIFF = shutil.which("autodiff")


@pytest.mark.skipif(AUTODIFF is None, reason="the autodiff command is not installed (pip install .)")
def test_installed_command_from_another_directory(tmp_path, samples) -> None:
    result = subprocess.run(
        [AUTODIFF, "eval", str(samples / "quadratic.ad"), "--format", "json"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert (document["value"], document["grads"]["x"], document["grads"]["y"]) == (63.0, 15.0, 32.0)


def test_python_dash_m(tmp_path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "autodiff_cli", "eval", "y = 3*x**2", "--set", "x=2", "--format", "csv"],
        cwd=tmp_path, capture_output=True, text=True, check=False, env={**os.environ, "NO_COLOR": "1"},
    )
    assert result.returncode == 0, result.stderr
    assert "x,input,,2.0,12.0" in result.stdout


# --- streams and files that are not plain files ----------------------------------------------


def autodiff_process(args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autodiff_cli", *args], capture_output=True, text=True,
                          check=False, **kwargs)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["eval", "-"], "error: standard input is closed, so the program cannot be read from it"),
        (["eval", "y = x", "--values", "-"], "error: standard input is closed, so the values file cannot be read from it"),
    ],
    ids=["program", "values"],
)
def test_closed_stdin_is_an_error(args, message) -> None:
    result = autodiff_process(args, stdin=subprocess.DEVNULL, preexec_fn=lambda: os.close(0))
    assert (result.returncode, result.stderr.splitlines()[0]) == (1, message)


@pytest.mark.parametrize("output_format", ["plain", "json", "table"])
def test_closed_stdout_is_an_error_not_a_silent_success(output_format) -> None:
    command = [sys.executable, "-m", "autodiff_cli", "eval", "y = 2*x", "--set", "x=1", "--format", output_format]
    result = subprocess.run(command, stderr=subprocess.PIPE, text=True, check=False,
                            preexec_fn=lambda: os.close(1))
    assert result.returncode == 1
    assert result.stderr.startswith("error: standard output is closed"), result.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("command", [["eval", "--format", "json"], ["explain"], ["graph", "--format", "dot"]],
                         ids=["eval", "explain", "graph"])
def test_a_full_disk_is_an_error(command, samples) -> None:
    with open("/dev/full", "w") as full:
        result = subprocess.run([sys.executable, "-m", "autodiff_cli", command[0], str(samples / "mlp.ad"),
                                 *command[1:]], stdout=full, stderr=subprocess.PIPE, text=True, check=False)
    assert result.returncode == 1
    assert result.stderr.startswith("error: cannot write to standard output: No space left on device")


def test_stdin_cannot_carry_both_program_and_values(runner) -> None:
    result = run(runner, "eval", "-", "--values", "-", input="y = x*x\n")
    assert result.exit_code == 2
    assert "standard input can carry the program or the --values, not both" in result.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_pipe_is_read_as_a_file() -> None:
    # What `autodiff eval <(echo ...)` and `autodiff eval /dev/stdin` pass.
    result = autodiff_process(["eval", "/dev/stdin", "--format", "csv"], input="x = 2; y = x*x\n")
    assert result.returncode == 0, result.stderr
    assert "y,output,*,4.0,1.0" in result.stdout


@pytest.mark.parametrize("option", [[], ["-f"]], ids=["source", "file_option"])
def test_a_directory_is_an_error(runner, tmp_path, option) -> None:
    result = run(runner, "eval", *option, str(tmp_path))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: cannot read {tmp_path}: it is a directory")


def test_a_lone_name_that_is_not_a_file_warns(runner) -> None:
    result = run(runner, "eval", "mymodel", "--set", "mymodel=2", "--format", "csv")
    assert result.exit_code == 0
    assert result.stderr.startswith("warning: there is no file named 'mymodel'; reading it as program text")
    assert run(runner, "eval", "-e", "mymodel", "--set", "mymodel=2").stderr == ""


def test_set_number_syntax_is_the_grammars() -> None:
    # --set checks numbers before the program is parsed, with its own copy of the pattern.
    from autodiff_cli.files import set_values

    grammar = (REPO / "grammars" / "autodiff.lark").read_text()
    (number,) = re.findall(r"^NUMBER: /(.*)/$", grammar, flags=re.M)
    assert set_values.NUMBER.pattern == r"[+-]?" + number + r"\Z"


@pytest.mark.parametrize("text", ["1_000", "inf", "nan", "\uff12", "0x10", ""],
                         ids=["underscore", "inf", "nan", "fullwidth_digit", "hex", "empty"])
def test_set_takes_only_the_languages_numbers(runner, text) -> None:
    result = run(runner, "eval", "y = x", "--set", f"x={text}")
    assert result.exit_code == 2
    assert "value of x" in result.stderr


def test_non_utf8_values_file_points_at_the_byte(runner, tmp_path) -> None:
    values = tmp_path / "v.json"
    values.write_bytes(b'{"a": 1,\n "b": \xff}')
    result = run(runner, "eval", "y = a*b", "--values", str(values))
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines[0] == f"{values}:2:7: error: not valid UTF-8: byte 0xff cannot start or continue a character"
    assert lines[2].endswith("|       ^")
    assert lines[-1] == "  hint: save the values file as UTF-8 text"


def test_forward_mode_without_inputs_differentiates_nothing(runner) -> None:
    result = run(runner, "eval", "f = sqrt(2)", "--mode", "forward", "--format", "csv")
    assert result.exit_code == 0
    assert result.stdout == "name,kind,op,value,grad\n"
    assert "forward mode: 0 passes" in result.stderr


def test_unknown_names_get_a_suggestion_and_a_short_list(runner) -> None:
    program = "\n".join(["x0 = 1"] + [f"x{i} = x{i - 1} + 1" for i in range(1, 100)])
    result = run(runner, "eval", "-e", program, "--wrt", "x1000", "--format", "csv")
    assert result.exit_code == 1
    hint = result.stderr.splitlines()[-1]
    assert hint.startswith("  hint: did you mean ")
    assert hint.endswith("x16, x17, x18, x19 and 80 more")
    output = run(runner, "eval", "L = a*b; M = L*2", "--set", "a=1", "--set", "b=2", "--output", "LL")
    assert output.stderr.splitlines()[-1] == "  hint: did you mean L? the variables are: a, b, L, M"


# --- eval --tangent: one forward pass along a direction (issue 36) -------------------------------

MOONS_MLP = str(Path(__file__).resolve().parents[2] / "samples" / "moons_mlp.ad")


def _json_of(runner, args: list[str]) -> dict:
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_a_tangent_gives_the_gradient_dotted_with_the_direction(runner) -> None:
    """The moons MLP: 337 parameters, one JVP along a random direction of W1 and W2 equals the
    reverse-mode gradient dotted with it (and the JSON says one pass was run)."""
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(7)
    v1, v2 = rng.normal(size=(16, 2)), rng.normal(size=(16, 16))
    point = ["--set", "x=[0.5, -0.25]"]
    reverse = _json_of(runner, ["eval", MOONS_MLP, *point, "--format", "json"])
    expected = float(np.sum(np.array(reverse["grads"]["W1"]) * v1) + np.sum(np.array(reverse["grads"]["W2"]) * v2))
    along = _json_of(runner, ["eval", MOONS_MLP, *point, "--tangent", f"W1={v1.tolist()}",
                              "--tangent", f"W2={v2.tolist()}", "--format", "json"])
    assert along["derivative"] == pytest.approx(expected, rel=1e-12, abs=1e-15)
    assert along["value"] == reverse["value"] and along["work"]["forward"]["passes"] == 1


def test_a_tangent_agrees_with_autograd(runner) -> None:
    """d mean((XW - Y)^2) along (V_X, V_W), by HIPS autograd's forward-mode-free check: the
    gradient from autograd dotted with the direction."""
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    import numpy as np

    X = np.array([[1.0, 2.0], [3.0, -4.0], [0.5, 6.0]])
    W = np.array([[0.3], [-0.7]])
    Y = np.array([[1.0], [0.0], [2.0]])
    VX, VW = np.array([[0.1, 0.0], [0.0, -1.0], [2.0, 0.5]]), np.array([[1.0], [-2.0]])

    def loss(X, W):
        return anp.mean((anp.dot(X, W) - Y) ** 2)

    expected = float(np.sum(autograd.grad(loss, 0)(X, W) * VX) + np.sum(autograd.grad(loss, 1)(X, W) * VW))
    along = _json_of(runner, ["eval", "P = X @ W\nL = mean((P - Y)**2)", "--set", f"X={X.tolist()}",
                              "--set", f"W={W.tolist()}", "--set", f"Y={Y.tolist()}",
                              "--tangent", f"X={VX.tolist()}", "--tangent", f"W={VW.tolist()}", "--format", "json"])
    assert along["derivative"] == pytest.approx(expected, rel=1e-12)


def test_a_tangent_of_a_scalar_program_is_one_pass(runner) -> None:
    # L = (a*b + c)*f: dL/da = b*f = 6 and dL/df = a*b + c = 4, so along (a: 1, f: 0.5) it is 8
    args = ["eval", "L = (a*b + c)*f", "--set", "a=2", "--set", "b=-3", "--set", "c=10", "--set", "f=-2",
            "--tangent", "a=1", "--tangent", "f=0.5"]
    document = _json_of(runner, [*args, "--format", "json"])
    assert document["derivative"] == 8.0 and document["tangent"] == {"a": 1.0, "f": 0.5}
    text = runner.invoke(main, args)
    assert "dL along the tangent = 8.0" in text.stdout


# y = 3x^2 + z at x = 2: dy/dx = 6x = 12 and dy/dz = 1, so along (x: 1, z: 0.5) it is 12.5
TANGENT_ARGS = ["eval", "y = 3*x**2 + z", "--set", "x=2", "--set", "z=1", "--tangent", "x=1", "--tangent", "z=0.5"]


def test_a_tangent_in_plain_format_is_plain_at_a_terminal(runner, monkeypatch) -> None:
    """--format plain is plain text even where the default is the table (a terminal)."""
    from autodiff_cli.cli import console

    monkeypatch.setattr(console, "stdout_is_terminal", lambda: True)
    result = runner.invoke(main, [*TANGENT_ARGS, "--format", "plain"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ("y = 13.0\ntangent: x = 1.0; z = 0.5    (every other input: 0)\n"
                             "dy along the tangent = 12.5\n"
                             "work: one forward pass over 6 nodes (a Jacobian-vector product)\n")


def test_a_tangent_in_table_format_is_a_table(runner) -> None:
    result = runner.invoke(main, [*TANGENT_ARGS, "--format", "table", "--no-color"])
    assert result.exit_code == 0, result.stderr
    rows = {cells[0]: cells[1] for line in result.stdout.splitlines()
            if len(cells := [cell.strip() for cell in line.strip("│").split("│")]) == 2}
    assert rows == {"tangent of x": "1.0", "tangent of z": "0.5", "every other input": "0",
                    "dy along the tangent": "12.5"}
    assert result.stdout.splitlines()[0] == "y = 13.0"


def test_a_tangent_of_a_vector_output_is_a_vector(runner) -> None:
    result = runner.invoke(main, ["eval", "y = [1, 2]*x**2", "--set", "x=3", "--tangent", "x=1", "--format", "csv"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "output,index,value,derivative\ny,0,9.0,6.0\ny,1,18.0,12.0\n"  # d/dx = [2x, 4x]


@pytest.mark.parametrize(("args", "code", "said"), [
    (["--tangent", "W=[1, 0]"], 1, "the tangent of 'W' is [2], but 'W' is [2, 1]"),
    (["--tangent", "P=1"], 1, "'P', which is computed by the program"),
    (["--tangent", "Q=1"], 1, "'Q', which is not a variable of the program"),
    (["--tangent", "W=[[1], [0]]", "--wrt", "W"], 2, "--wrt chooses gradients"),
    (["--tangent", "W=[[1], [0]]", "--mode", "reverse"], 2, "leave out --mode reverse"),
    (["--tangent", "W"], 2, "expected NAME=VALUE"),
])
def test_a_bad_tangent_is_a_message(runner, args: list[str], code: int, said: str) -> None:
    program = str(Path(__file__).resolve().parents[2] / "samples" / "regression_matrix.ad")
    result = runner.invoke(main, ["eval", program, *args])
    assert result.exit_code == code and said in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("program", ["y = sqrt(x)", "y = sum(sqrt([1, 1]*x))"])
def test_a_tangent_derivative_that_is_not_finite_is_warned(runner, program: str) -> None:
    result = runner.invoke(main, ["eval", program, "--set", "x=0", "--tangent", "x=1", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["derivative"] == "Infinity"  # d sqrt(x)/dx = 1/(2 sqrt(x)) at 0
    assert "warning: the derivative of y along the tangent is not finite" in result.stderr


def test_a_tangent_of_the_wrong_shape_is_said_at_its_input(runner) -> None:
    program = Path(__file__).resolve().parents[2] / "samples" / "regression_matrix.ad"
    line = next(n for n, text in enumerate(program.read_text().splitlines(), 1) if text.startswith("W ="))
    result = runner.invoke(main, ["eval", str(program), "--tangent", "W=[1, 0]"])
    assert result.exit_code == 1
    assert f"regression_matrix.ad:{line}:1: error: the tangent of 'W' is [2], but 'W' is [2, 1]" in result.stderr
