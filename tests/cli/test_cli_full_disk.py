"""A disk that fills up in the middle of the output: an error and exit 1, never a cut-off result.

A file-size limit (RLIMIT_FSIZE) stands in for a full disk: the first large write is taken only
in part (a short count, no error), and only the next write fails.  Every command's output is made
bigger than the limit, so a command that wrote once and did not check would exit 0 with a part.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autodiff_cli.cli import process
from autodiff_cli.files import stdout
from autodiff_cli.errors import OutputError

REPO = Path(__file__).resolve().parents[2]
LIMIT = 64 * 1024
SUM = "y = " + " + ".join(f"x{i}*x{i}" for i in range(5000))  # its reports are > 64 KiB
ROWS = "x,y\n" + "".join(f"{i / 7},{i / 11}\n" for i in range(5000))


def _limited() -> None:
    import resource
    import signal

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # as Python does: the write fails instead
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def _autodiff(args: list[str], cwd: Path, stdout: Path) -> subprocess.CompletedProcess[str]:
    with open(stdout, "wb") as sink:
        return subprocess.run([sys.executable, "-m", "autodiff_cli", *args], stdout=sink, stderr=subprocess.PIPE,
                              text=True, cwd=cwd, preexec_fn=_limited, check=False,
                              env={**os.environ, "PYTHONPATH": str(REPO)})


COMMANDS = {
    "eval plain": ["eval", "sum.ad", "--set-all", "--format", "plain"],
    "eval csv": ["eval", "sum.ad", "--set-all", "--format", "csv"],
    "eval table": ["eval", "sum.ad", "--set-all", "--format", "table"],
    "explain": ["explain", "sum.ad", "--set-all"],
    "graph dot": ["graph", "sum.ad", "--set-all", "--format", "dot", "--level", "scalar"],  # every value: > 64 KiB
    "diff python": ["diff", "sum.ad", "--format", "python"],
    "batch rows": ["batch", "L = x*x + y", "rows.csv"],
    "plot svg": ["plot", "y = x*x", "--range", "x=0:1", "--points", "2000", "--format", "svg"],
}


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    (tmp_path / "sum.ad").write_text(SUM + "\n")
    (tmp_path / "values.json").write_text("{" + ", ".join(f'"x{i}": 0.5' for i in range(5000)) + "}")
    (tmp_path / "rows.csv").write_text(ROWS)
    return tmp_path


def _arguments(args: list[str]) -> list[str]:
    return [item for arg in args for item in (["--values", "values.json"] if arg == "--set-all" else [arg])]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs resource limits of a POSIX child process")
@pytest.mark.parametrize("args", list(COMMANDS.values()), ids=list(COMMANDS))
def test_stdout_filling_up_is_an_error_not_a_cut_off_result(inputs: Path, args: list[str]) -> None:
    result = _autodiff(_arguments(args), inputs, inputs / "out")
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1, result.stderr
    assert "cannot write to standard output: File too large" in result.stderr
    assert (inputs / "out").stat().st_size == LIMIT  # the limit was reached: the test tested something


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs resource limits of a POSIX child process")
@pytest.mark.parametrize("args", [COMMANDS["batch rows"], COMMANDS["graph dot"], COMMANDS["plot svg"]],
                         ids=["batch", "graph", "plot"])
def test_an_output_file_filling_up_leaves_the_old_file(inputs: Path, args: list[str]) -> None:
    target = inputs / {"batch": "old.csv", "graph": "old.dot", "plot": "old.svg"}[args[0]]
    target.write_text("what the user had\n")
    result = _autodiff([*_arguments(args), "-o", str(target)], inputs, inputs / "out")
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1, result.stderr
    assert "File too large" in result.stderr
    assert target.read_text() == "what the user had\n"
    assert sorted(path.name for path in inputs.iterdir()) == sorted(
        ["sum.ad", "values.json", "rows.csv", "out", target.name])  # no temporary file left


class _TakesPart:
    """A binary file that takes at most ``most`` bytes a call and fails once ``room`` is used."""

    def __init__(self, most: int, room: int) -> None:
        self.most, self.room, self.data = most, room, bytearray()

    def write(self, data: bytes) -> int:
        if len(self.data) >= self.room:
            raise OSError(errno.ENOSPC, "No space left on device")
        taken = bytes(data[:min(self.most, self.room - len(self.data))])
        self.data += taken
        return len(taken)


@pytest.mark.parametrize(("most", "room", "whole"), [(3, 100, True), (1, 100, True), (4, 10, False)],
                         ids=["short-writes", "a-byte-at-a-time", "fills-up"])
def test_write_whole_writes_every_byte_or_raises(most: int, room: int, whole: bool) -> None:
    data = bytes(range(40))
    handle = _TakesPart(most, room)
    if whole:
        stdout.write_whole(handle, data)
        assert bytes(handle.data) == data
    else:
        with pytest.raises(OSError):
            stdout.write_whole(handle, data)
        assert len(handle.data) == room


def test_a_failed_last_flush_of_stdout_turns_success_into_status_1(monkeypatch, capfd) -> None:
    class FullStdout:
        def flush(self) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

    ended: list[int] = []

    def fake_exit(status: int) -> None:
        ended.append(status)

    monkeypatch.setattr(sys, "stdout", FullStdout())
    monkeypatch.setattr(os, "_exit", fake_exit)
    process.exit_now(0)
    assert ended == [1]
    assert "cannot write to standard output: No space left on device" in capfd.readouterr().err


def test_standard_output_as_bytes_names_the_failure(monkeypatch) -> None:
    class Full:
        buffer = _TakesPart(8, 8)

    monkeypatch.setattr(sys, "stdout", Full())
    with pytest.raises(OutputError, match="cannot write to standard output: No space left"):
        stdout.StdoutBytes().write(b"x" * 20)


@pytest.mark.parametrize(("args", "example"), [
    (["batch", "L = x*y", "rows.csv", "-o", "{d}"], "rows.csv"),
    (["graph", "y = x", "--set", "x=1", "--format", "svg", "-o", "{d}"], "graph.svg"),
    (["plot", "y = x", "--range", "x=0:1", "--format", "svg", "-o", "{d}"], "plot.svg"),
], ids=["batch", "graph", "plot"])
def test_a_directory_as_output_gets_a_hint_in_the_command_s_terms(runner, monkeypatch, inputs: Path,
                                                                   args: list[str], example: str) -> None:
    from autodiff_cli.cli import main

    directory = inputs / "out.d"
    directory.mkdir()
    monkeypatch.chdir(inputs)
    result = runner.invoke(main, [arg.replace("{d}", str(directory)) for arg in args])
    assert result.exit_code == 1, result.output
    assert f"hint: name a file in it, e.g. {directory / example}" in result.stderr
