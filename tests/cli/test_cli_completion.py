"""Shell completion (Click's, for bash, zsh and fish): file names complete for every argument or option that
names a file (FILE_PARAMETERS, checked against every command); option names complete as usual."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.shell_completion import ShellComplete

from autodiff_cli.cli import main

REPO = Path(__file__).resolve().parents[2]


def completions(args: list[str], incomplete: str):
    return ShellComplete(main, {}, "autodiff", "_AUTODIFF_COMPLETE").get_completions(args, incomplete)


@pytest.mark.parametrize(
    "args",
    [["eval"], ["graph"], ["explain"], ["check"], ["eval", "-f"], ["explain", "--file"], ["graph", "-o"],
     ["graph", "--out"], ["check", "--values"], ["eval", "--values"], ["plot"], ["plot", "-o"]],
    ids=["eval_source", "graph_source", "explain_source", "check_source", "eval_f", "explain_file", "graph_o",
         "graph_out", "check_values", "eval_values", "plot_source", "plot_o"],
)
def test_file_names_complete(args) -> None:
    (item,) = completions(args, "sam")
    assert item.type == "file" and item.value == "sam"  # the shell lists the matching files


def test_option_names_still_complete() -> None:
    values = [item.value for item in completions(["eval"], "--va")]
    assert values == ["--values"]


def test_names_and_values_are_not_files() -> None:
    assert completions(["eval", "--set"], "a") == []
    assert completions(["eval", "--output"], "L") == []


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_each_shell_gets_a_script(shell) -> None:
    result = subprocess.run([sys.executable, "-m", "autodiff_cli"], capture_output=True, text=True, check=False,
                            env={**os.environ, "PYTHONPATH": str(REPO), "_AUTODIFF_COMPLETE": f"{shell}_source"})
    assert result.returncode == 0, result.stderr
    assert "_AUTODIFF_COMPLETE" in result.stdout and "autodiff" in result.stdout


def test_bash_completion_end_to_end(tmp_path) -> None:
    (tmp_path / "model.ad").write_text("y = 1\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "_AUTODIFF_COMPLETE": "bash_complete",
           "COMP_WORDS": "autodiff eval -f mo", "COMP_CWORD": "3"}
    result = subprocess.run([sys.executable, "-m", "autodiff_cli"], capture_output=True, text=True, check=False,
                            env=env, cwd=tmp_path)
    assert result.stdout.splitlines() == ["file,mo"]  # bash's script then runs compgen -f mo


# Every option or argument that names a file, command by command.  The test below enumerates the
# commands registered in main, so a new command fails until it is listed here.
FILE_PARAMETERS = {
    "eval": ["SOURCE", "-f", "--values"],
    "graph": ["SOURCE", "-f", "--values", "-o"],
    "explain": ["SOURCE", "-f", "--values"],
    "check": ["SOURCE", "-f", "--values"],
    "plot": ["SOURCE", "-f", "--values", "-o"],
    "diff": ["SOURCE", "-f"],
    "batch": ["SOURCE", "-f", "--values", "-o", "ROWS"],
    "fit": ["SOURCE", "-f", "--values", "-o", "--data", "--history", "--plot"],
}


def _cases():
    return [(command, parameter) for command, parameters in FILE_PARAMETERS.items() for parameter in parameters]


def test_every_command_is_covered() -> None:
    assert sorted(main.commands) == sorted(FILE_PARAMETERS)


@pytest.mark.parametrize("command, parameter", _cases(), ids=[f"{c}{p}" for c, p in _cases()])
def test_every_file_parameter_completes_file_names(command, parameter) -> None:
    if parameter == "SOURCE":
        args = [command]
    elif parameter == "ROWS":
        args = [command, "model.ad"]
    else:
        args = [command, parameter]
    (item,) = completions(args, "k")
    assert item.type == "file" and item.value == "k"


@pytest.mark.parametrize("words, cword", [("autodiff diff k", "2"), ("autodiff fit m.ad --data k", "4")],
                         ids=["diff-source", "fit-data"])
def test_bash_completes_files_for_diff_and_fit(tmp_path, words, cword) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "_AUTODIFF_COMPLETE": "bash_complete",
           "COMP_WORDS": words, "COMP_CWORD": cword}
    result = subprocess.run([sys.executable, "-m", "autodiff_cli"], capture_output=True, text=True, check=False,
                            env=env, cwd=tmp_path)
    assert result.stdout.splitlines() == ["file,k"]
