"""Big reports at a terminal: above console.RICH_ROWS rows the default layout is plain, with a note.

Rich lays out a table as a whole (minutes for 100,000 rows), so eval's and explain's default Rich
layout at a terminal gives way to the plain one for big results; asking for it still gets it.
"""

from __future__ import annotations

import pytest

from autodiff_cli.cli import console, main


def big_program(statements: int) -> str:
    total = " + ".join(f"v{i}" for i in range(statements))
    return "x = 1\n" + "\n".join(f"v{i} = x*{i}" for i in range(statements)) + f"\nL = {total}\n"


@pytest.fixture
def terminal(monkeypatch):
    monkeypatch.setattr(console, "stdout_is_terminal", lambda: True)


@pytest.mark.parametrize("command", ["eval", "explain"])
def test_a_big_report_at_a_terminal_is_plain_with_a_note(runner, terminal, command) -> None:
    args = [command, big_program(console.RICH_ROWS + 10)] + (["--max-steps", "0"] if command == "explain" else [])
    result = runner.invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0
    assert "rows are written in the plain layout" in result.stderr
    assert "┃" not in result.stdout and "│" not in result.stdout  # no table borders


def test_a_small_report_at_a_terminal_is_a_table(runner, terminal) -> None:
    result = runner.invoke(main, ["eval", big_program(10)], catch_exceptions=False)
    assert result.exit_code == 0 and "┃" in result.stdout and "plain layout" not in result.stderr


def test_asking_for_the_table_gets_it_however_big(runner, terminal) -> None:
    result = runner.invoke(main, ["eval", big_program(console.RICH_ROWS + 10), "--format", "table"],
                           catch_exceptions=False)
    assert result.exit_code == 0 and "┃" in result.stdout and "plain layout" not in result.stderr
