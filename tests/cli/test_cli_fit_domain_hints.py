"""A domain error's hint adds to its message instead of saying it again: `log` of a negative
number in eval and in fit (where the newcomer saw "log needs a positive argument" twice), and
every op of the registry that has a hint, at a point outside its domain."""

from __future__ import annotations

import re

import pytest

from autodiff_cli.cli import main
from autodiff_cli.engine.ops import OPS, DomainError


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9_.+-]+", text.lower())


def _shared_runs(message: str, hint: str, length: int = 3) -> set[tuple[str, ...]]:
    """The runs of ``length`` words that the hint repeats from the message."""
    def runs(words: list[str]) -> set[tuple[str, ...]]:
        return {tuple(words[i:i + length]) for i in range(len(words) - length + 1)}

    return runs(_words(message)) & runs(_words(hint))


def _message_and_hint(stderr: str) -> tuple[str, str]:
    message = stderr.splitlines()[0].split("error: ", 1)[1]
    hint = stderr.split("hint: ", 1)[1].strip()
    return message, hint


@pytest.mark.parametrize("args, data", [
    (["eval", "-e", "y = log(x)", "--set", "x=-1"], None),
    (["eval", "-e", "y = sum(log(x))", "--set", "x=[1, -2]"], None),
    (["eval", "-e", "y = sqrt(x)", "--set", "x=-1"], None),
    (["eval", "-e", "y = x**0.5", "--set", "x=-1"], None),
    (["fit", "-e", "w = 1\nloss = (w*log(x) - t)**2", "--steps", "2"], "x,t\n1,2\n-1,3\n"),
], ids=["eval-log", "eval-tensor-log", "eval-sqrt", "eval-power", "fit-log"])
def test_the_hint_does_not_repeat_the_message(runner, tmp_path, args, data) -> None:
    if data is not None:
        (tmp_path / "rows.csv").write_text(data)
        args = [*args, "--data", str(tmp_path / "rows.csv")]
    result = runner.invoke(main, args)
    assert result.exit_code == 1, result.stderr
    message, hint = _message_and_hint(result.stderr)
    assert not _shared_runs(message, hint), (message, hint)
    assert "Traceback" not in result.stderr


# A point outside each op's domain (its scalar kernel's arguments), for the ops whose entry has a hint.
BAD_POINTS = {"/": (1.0, 0.0), "**": (-2.0, 0.5), "**c": (-2.0, 0.5), "log": (-1.0,), "sqrt": (-1.0,)}


@pytest.mark.parametrize("name", sorted(name for name, op in OPS.items() if op.hint))
def test_every_hint_of_the_registry_adds_to_its_domain_message(name) -> None:
    op = OPS[name]
    assert name in BAD_POINTS, f"give {name} a point outside its domain here"
    with pytest.raises(DomainError) as caught:
        op.scalar(*BAD_POINTS[name])
    assert not _shared_runs(str(caught.value.message), op.hint), (caught.value.message, op.hint)
