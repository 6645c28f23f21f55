"""Where the program and its values come from: SOURCE as text or path, stdin used twice, and
values that name computed variables, each said against the place the user wrote it."""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autodiff_cli.cli import main

REPO = Path(__file__).resolve().parents[2]


def run(runner, *args, input=None):
    return runner.invoke(main, list(args), input=input)


# --- text that looks like a path ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "sets", "value"),
    [("x/2", ["--set", "x=4"], 2.0), ("a/b/c", ["--set", "a=8", "--set", "b=2", "--set", "c=2"], 2.0),
     ("1.e2", [], 100.0), ("x\\2", ["--set", "x=1"], None)],
    ids=["division", "two_divisions", "number_with_dot_e", "backslash"],
)
def test_path_like_text_that_is_a_program_is_run_with_a_warning(runner, text, sets, value) -> None:
    result = run(runner, "eval", text, *sets, "--format", "json")
    if value is None:  # not a program: the missing file is the error
        assert result.exit_code == 1
        assert result.stderr.startswith(f"error: no such file: {text}")
        return
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["value"] == value
    assert result.stderr == (f"warning: there is no file named '{text}'; reading it as program text "
                             "(-e/--expr says so and silences this)\n")


def test_the_same_text_with_expr_is_silent(runner) -> None:
    result = run(runner, "eval", "-e", "x/2", "--set", "x=4", "--format", "json")
    assert result.exit_code == 0 and result.stderr == ""


@pytest.mark.parametrize("path", ["model.ad", "no/such/file.ad", "./model", "dir/model.json"],
                         ids=["extension", "nested", "dot_slash", "json"])
def test_a_missing_file_that_is_not_a_program_is_a_missing_file(runner, path) -> None:
    result = run(runner, "eval", path)
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines[0] == f"error: no such file: {path}"
    assert any(line.startswith("  note: read as program text instead, it is not valid either: ")
               for line in lines)
    assert lines[-1] == "  hint: check the path; to evaluate the text itself, pass it with -e/--expr"


def test_a_missing_path_with_a_valid_reading_still_reports_evaluation_errors(runner) -> None:
    # data/model is a division of two inputs the user never meant: the warning comes first,
    # so the error about the inputs is understood.
    result = run(runner, "eval", "data/model")
    assert result.exit_code == 1
    warning, error = result.stderr.splitlines()[:2]
    assert warning.startswith("warning: there is no file named 'data/model'")
    assert error.startswith("<expr>:1:1: error: no value for inputs data, model")


# --- standard input used twice -------------------------------------------------------------------


def autodiff(args, input_text):
    return subprocess.run([sys.executable, "-m", "autodiff_cli", *args], input=input_text, capture_output=True,
                          text=True, check=False, env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.mark.parametrize(
    ("program", "values"),
    [(["/dev/stdin"], "/dev/stdin"), (["-"], "/dev/stdin"), (["/dev/stdin"], "-"), (["-f", "/dev/fd/0"], "-"),
     ([], "/dev/stdin"), (["-f", "/proc/self/fd/0"], "/dev/stdin")],
    ids=["both_dev_stdin", "dash_and_dev_stdin", "dev_stdin_and_dash", "fd0_and_dash", "piped_and_dev_stdin",
         "proc_fd0"],
)
def test_stdin_for_both_is_the_stdin_rule_however_it_is_spelled(program, values) -> None:
    result = autodiff(["eval", *program, "--values", values], "y = 2*x\n")
    assert result.returncode == 2, result.stderr
    assert "standard input can carry the program or the --values, not both" in result.stderr


def test_a_values_file_from_stdin_with_the_program_in_a_file(tmp_path) -> None:
    program = tmp_path / "p.ad"
    program.write_text("y = 2*x\n")
    result = autodiff(["eval", str(program), "--values", "/dev/stdin", "--format", "json"], '{"x": 3}')
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["value"] == 6.0


# --- stdin that is /dev/null (cron, CI) -----------------------------------------------------------
# A subprocess each: CliRunner's stdin is a fake stream, neither a terminal nor /dev/null.

NO_PROGRAM = "Error: no program given: pass an expression, a file, or '-' for stdin"


def autodiff_reading(args, stdin, cwd):
    """The command with ``stdin`` as its standard input: DEVNULL, an open file, or text to pipe in."""
    given = {"input": stdin} if isinstance(stdin, str) else {"stdin": stdin}
    return subprocess.run([sys.executable, "-m", "autodiff_cli", *args], cwd=cwd, capture_output=True, text=True,
                          check=False, env={**os.environ, "PYTHONPATH": str(REPO)}, **given)


@pytest.mark.parametrize("args", [["eval"], ["eval", "--values", "v.json"], ["eval", "--values", "-"], ["diff"],
                                  ["check"], ["explain"], ["graph"], ["fit", "--data", "rows.csv"]],
                         ids=["eval", "eval-values-file", "eval-values-stdin", "diff", "check", "explain", "graph",
                              "fit"])
def test_no_program_with_stdin_at_dev_null_is_a_usage_error(tmp_path, args) -> None:
    (tmp_path / "v.json").write_text('{"x": 1}')
    (tmp_path / "rows.csv").write_text("x\n1\n")
    result = autodiff_reading(args, subprocess.DEVNULL, tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines()[-1] == NO_PROGRAM


def test_dash_reads_dev_null_as_the_empty_program_it_is(tmp_path) -> None:
    result = autodiff_reading(["eval", "-"], subprocess.DEVNULL, tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines()[0] == "<stdin>:1:1: error: the program is empty"


@pytest.mark.parametrize("how", ["file", "pipe"])
def test_a_program_redirected_or_piped_without_source_is_read(tmp_path, how) -> None:
    program = tmp_path / "p.ad"
    program.write_text("y = 2*x\n")
    with open(program) as handle:
        stdin = handle if how == "file" else program.read_text()
        result = autodiff_reading(["eval", "--set", "x=3", "--format", "json"], stdin, tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["value"] == 6.0


# --- values that name computed variables ---------------------------------------------------------


def test_a_values_key_for_a_computed_name_points_into_the_values_file(runner, tmp_path) -> None:
    path = tmp_path / "v.json"
    path.write_text('{"a": 1,\n "e": 3}')
    result = run(runner, "eval", "e = a*2\nL = e + 1", "--values", str(path))
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines[0] == f"{path}:2:2: error: 'e' is computed by the program, so the values file cannot set it"
    assert lines[1] == ' 2 |  "e": 3}'
    assert "  note: 'e' is assigned at <expr>:1:1" in lines
    assert lines[-1] == "  hint: remove 'e' from the values file, or give a value to one of its inputs (a)"


def test_a_set_for_a_computed_name_says_it_is_the_set(runner) -> None:
    result = run(runner, "eval", "e = a*2\nL = e + 1", "--set", "a=1", "--set", "e=3")
    assert result.exit_code == 1
    first = result.stderr.splitlines()[0]
    assert first == "<expr>:1:1: error: 'e' is computed by the program, so --set cannot give it a value"


# --- stdin at a terminal -----------------------------------------------------------------------


class FakeTerminal(io.BytesIO):
    def isatty(self) -> bool:
        return True

    @property
    def buffer(self):
        return self


@pytest.mark.parametrize(("args", "what"), [(["eval", "-"], "the program"),
                                            (["eval", "y = 2*x", "--values", "-"], "the values (JSON)")],
                         ids=["program", "values"])
def test_reading_stdin_at_a_terminal_says_so(monkeypatch, capsys, args, what) -> None:
    terminal = FakeTerminal(b'{"x": 1}' if "--values" in args else b"y = 2\n")
    monkeypatch.setattr(sys, "stdin", terminal)
    with pytest.raises(SystemExit) as exited:
        main.main(args, prog_name="autodiff")
    assert exited.value.code == 0
    err = capsys.readouterr().err
    assert err.startswith(f"reading {what} from the terminal; end it with Ctrl-D")


def test_reading_a_pipe_says_nothing(runner) -> None:
    result = run(runner, "eval", "-", input="y = 2\n")
    assert result.exit_code == 0 and result.stderr == ""


def test_expr_and_values_from_a_piped_stdin(runner) -> None:
    # The program is on the command line, so stdin is free for the values.
    result = run(runner, "eval", "-e", "y = 2*x", "--values", "-", "--format", "json", input='{"x": 5}')
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["value"] == 10.0
