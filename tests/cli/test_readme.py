"""README.md's examples are run and their output compared, so the README cannot drift."""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from autodiff_cli.cli import main

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
CONSOLE_BLOCKS = re.findall(r"```console\n(.*?)```", README, flags=re.S)


def examples() -> list[tuple[str, str]]:
    found = []
    for block in CONSOLE_BLOCKS:
        command, _, expected = block.partition("\n")
        assert command.startswith("$ autodiff "), command
        found.append((command[2:], expected))
    return found


@pytest.mark.parametrize("command, expected", examples(), ids=[c for c, _ in examples()])
def test_console_example_output_is_what_the_command_prints(command: str, expected: str) -> None:
    argv = shlex.split(command)
    result = subprocess.run(
        [sys.executable, "-m", "autodiff_cli", *argv[1:]],
        cwd=REPO, capture_output=True, text=True, check=False, env={"NO_COLOR": "1", "PATH": ""},
    )
    assert result.stdout + result.stderr == expected


def test_readme_has_examples() -> None:
    assert len(examples()) >= 2


def test_every_command_is_documented_in_readme_and_has_help() -> None:
    for name, command in main.commands.items():
        assert f"autodiff {name}" in README, name
        assert command.help and len(command.help) > 40, name
