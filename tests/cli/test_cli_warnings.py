"""Warnings are capped and summarised, as hints already are: however many unused values or
undrawn variables there are, stderr gets a few lines, and what a user typed is shown escaped."""

import json

import pytest

from autodiff_cli.cli import main
from autodiff_cli.cli.console import WARNINGS_SHOWN, warn


def test_many_unused_values_are_one_warning(runner, tmp_path) -> None:
    values = {f"unused{i}": float(i) for i in range(200_000)}
    values["x"] = 2.0
    path = tmp_path / "v.json"
    path.write_text(json.dumps(values))
    result = runner.invoke(main, ["eval", "y = 3*x", "--values", str(path), "--format", "json"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["grads"]["x"] == 3.0
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines[:5]
    assert lines[0].startswith("warning: 200,000 values are given for names the program does not use, so they")
    assert "'unused0', 'unused1'" in lines[0] and "and 199,980 more" in lines[0]
    assert len(result.stderr) < 600


def test_one_unused_value_keeps_its_sentence(runner) -> None:
    result = runner.invoke(main, ["eval", "y = 3*x", "--set", "x=1", "--set", "zz=2"])
    assert result.stderr == "warning: 'zz' is not used by the program; its value is ignored\n"


def test_a_few_unused_values_are_named(runner) -> None:
    result = runner.invoke(main, ["eval", "y = 3*x", "--set", "x=1", "--set", "p=2", "--set", "q=3"])
    assert result.stderr == ("warning: 2 values are given for names the program does not use, so they are "
                             "ignored: 'p', 'q'\n")


def test_the_undrawn_variables_are_counted_not_all_listed(runner) -> None:
    program = "\n".join([f"unused{i} = {i}" for i in range(5000)] + ["y = 2*x"])
    result = runner.invoke(main, ["graph", program, "--set", "x=1", "--format", "dot"])
    assert result.exit_code == 0
    (line,) = result.stderr.splitlines()
    assert line.startswith("warning: unused0, unused1, unused2")
    assert "and 4,980 more do not affect y, so they are not drawn" in line
    assert len(line) < 400


def test_warn_caps_the_number_of_lines(capsys) -> None:
    warn([f"number {i}" for i in range(1000)])
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == WARNINGS_SHOWN + 1
    assert lines[-1] == f"warning: ... and {1000 - WARNINGS_SHOWN:,} more warnings"


def test_warn_caps_a_long_line(capsys) -> None:
    warn(["names: " + ", ".join(f"n{i}" for i in range(20_000))])
    (line,) = capsys.readouterr().err.splitlines()
    assert len(line) < 600 and line.endswith("characters in all)")


@pytest.mark.parametrize("key", ["\x1b[2J", "bell\x07", "rlo\u202e"], ids=["clear_screen", "bell", "bidi"])
def test_a_values_key_is_shown_escaped(runner, tmp_path, key) -> None:
    path = tmp_path / "v.json"
    path.write_text(json.dumps({"x": 1, key: 2}))
    result = runner.invoke(main, ["eval", "y = x", "--values", str(path)])
    assert result.exit_code == 0
    assert key not in result.stderr and "\\x" in result.stderr or "\\u" in result.stderr


TINY_WARNING = "warning: {where}: 1e-400 is smaller than the smallest float (about 5e-324), so it is taken as 0\n"


@pytest.mark.parametrize("command", [
    ["eval", "--format", "json"], ["explain"], ["check"], ["graph", "--format", "dot"], ["diff"],
    ["plot", "--range", "x=0:1", "--format", "text"],
], ids=["eval", "explain", "check", "graph", "diff", "plot"])
def test_a_number_too_small_for_a_float_in_the_program_is_warned_about_at_its_place(runner, tmp_path,
                                                                                    command) -> None:
    program = tmp_path / "tiny.ad"
    program.write_text("# y = x + 1e-400 would be fine\ny = x*1e-400 + x\n")
    result = runner.invoke(main, [command[0], str(program), *command[1:], "--set", "x=3"]
                           if command[0] not in ("diff", "plot") else [command[0], str(program), *command[1:]])
    assert result.exit_code == 0, result.stderr
    assert result.stderr.startswith(TINY_WARNING.format(where=f"{program}:2:7")), result.stderr
    assert result.stderr.count("smaller than the smallest float") == 1
