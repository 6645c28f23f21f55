"""Big programs: progress at a terminal while parsing and evaluating, none in
pipes, and about a kilobyte of memory per statement from reading the text to the report."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from autodiff_cli.cli import console, main, process
from autodiff_cli.execute import evaluate
from autodiff_cli.language import parse
from autodiff_cli.render import report

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))
from programs import network  # the generated program the benchmarks run


def test_no_progress_in_pipes(runner, monkeypatch) -> None:
    monkeypatch.setattr(console, "PROGRESS_AFTER", 0.0)  # would show at once at a terminal
    result = runner.invoke(main, ["eval", network(3000), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""


@pytest.mark.skipif(shutil.which("script") is None, reason="needs util-linux script for a terminal")
@pytest.mark.parametrize("command", ["eval", "graph", "explain"])
def test_progress_at_a_terminal_while_parsing_and_evaluating(tmp_path: Path, command: str) -> None:
    program = tmp_path / "net.ad"
    program.write_text(network(3000))
    extra = {"eval": "'--format', 'json'", "graph": "'--format', 'dot'", "explain": "'--max-steps', '5'"}[command]
    code = ("from autodiff_cli.cli import console, main; console.PROGRESS_AFTER = 0.0; "
            f"main.main([{command!r}, {str(program)!r}, {extra}], prog_name='autodiff')")
    shell = f"{sys.executable} -c \"{code}\" > {tmp_path / 'out'}"
    result = subprocess.run(["script", "-qec", shell, "/dev/null"], capture_output=True, text=True, check=False,
                            env={**os.environ, "PYTHONPATH": str(REPO), "TERM": "xterm"}, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    shown = result.stdout  # what the terminal showed: stderr only, stdout went to the file
    assert "parsing" in shown and "evaluating" in shown
    assert (tmp_path / "out").stat().st_size > 0


def test_about_a_kilobyte_per_statement() -> None:
    # Parse, build, differentiate and write the JSON report of 50,000 statements of three
    # nodes each, measuring every allocation Python makes on the way (the text aside).
    statements = 50_000
    text = network(statements)
    parse("x = 1")  # the tables, loaded once per process
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        evaluation = evaluate(parse(text))
        written = sum(len(chunk) for chunk in report.json_chunks(evaluation))
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert len(evaluation.nodes) >= statements and written > 0
    assert peak / statements < 1100, f"{peak / statements:.0f} bytes per statement"


@pytest.mark.parametrize("command", ["eval", "check", "explain"])
@pytest.mark.parametrize("exit_fast", [True, False], ids=["under run()", "under main()"])
def test_one_shot_commands_leave_the_collector_off_only_when_the_process_ends_with_them(
        runner, monkeypatch, command: str, exit_fast: bool) -> None:
    # Under run() the process ends with os._exit right after the command, so the collector
    # would only rescan the graph; a program calling main() must keep its collector.
    import gc

    monkeypatch.setattr(process, "EXIT_FAST", exit_fast)
    monkeypatch.setattr(process, "_KEPT", [])
    assert gc.isenabled()
    try:
        result = runner.invoke(main, [command, "y = x*x", "--set", "x=3"])
        collector_on = gc.isenabled()
    finally:
        gc.enable()
    assert result.exit_code == 0, result.output
    assert collector_on is not exit_fast
