"""Ctrl-C exits with status 130 (128 + SIGINT) wherever it lands, SIGTERM with 143, and neither
leaves a traceback, a temporary file or a child process behind."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autodiff_cli import execute
from autodiff_cli.execute import scalar
from autodiff_cli.cli import console, main
from autodiff_cli.files import stdout
from autodiff_cli.render import backends

REPO = Path(__file__).resolve().parents[2]


def interrupt(*args, **kwargs):
    raise KeyboardInterrupt


@pytest.mark.parametrize(
    ("command", "where"),
    [
        (["eval", "y = 2*x", "--set", "x=1"], (scalar, "evaluate")),
        (["eval", "y = 2*x", "--set", "x=1", "--format", "table"], (console, "print_rich")),
        (["explain", "y = 2*x", "--set", "x=1"], (stdout, "emit")),
        (["check", "y = 2*x", "--set", "x=1"], (execute, "evaluate")),
        (["graph", "y = 2*x", "--set", "x=1", "--renderer", "bundled"], (backends, "render")),
    ],
    ids=["evaluating", "printing_a_table", "writing_text", "checking", "rendering"],
)
def test_ctrl_c_anywhere_exits_130(runner, monkeypatch, command, where) -> None:
    module, name = where
    monkeypatch.setattr(module, name, interrupt)
    if module in (console, stdout):  # the commands import these by name
        from autodiff_cli.cli import eval as eval_module
        from autodiff_cli.cli import explain as explain_module

        for importer in (eval_module, explain_module):
            if hasattr(importer, name):
                monkeypatch.setattr(importer, name, interrupt)
    result = runner.invoke(main, command)
    assert result.exit_code == 130, (result.stdout, result.stderr, result.exception)
    assert result.stderr.strip() == "interrupted"
    assert "Aborted" not in result.stderr


def test_help_documents_130(runner) -> None:
    for command in ([], ["eval"], ["graph"], ["explain"], ["check"]):
        result = runner.invoke(main, [*command, "--help"])
        assert "130" in result.stdout and "Ctrl-C" in result.stdout, command


def _wait_for_children(pid: int, timeout: float = 30.0) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        children = [int(c) for c in path.read_text().split()] if path.exists() else []
        if children:
            return children
        time.sleep(0.02)
    return []


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc to find the child")
def test_ctrl_c_during_a_layout_kills_it_and_leaves_no_file(tmp_path) -> None:
    lines = ["y0 = 0.5"] + [f"y{i} = tanh(y{i - 1}*0.9 + 0.1)" for i in range(1, 1000)]
    program = tmp_path / "big.ad"
    program.write_text("\n".join(lines) + "\n")
    out = tmp_path / "big.svg"
    # A terminal sends SIGINT to the whole foreground process group: the layout child too.
    with subprocess.Popen([sys.executable, "-m", "autodiff_cli", "graph", str(program), "-o", str(out),
                           "--max-nodes", "0"], stderr=subprocess.PIPE, text=True,
                          start_new_session=True) as process:
        layout = _wait_for_children(process.pid)
        assert layout, "the renderer never started"
        os.killpg(process.pid, signal.SIGINT)
        assert process.wait(timeout=30) == 130
        stderr = process.stderr.read()
    assert "Traceback" not in stderr and "interrupted" in stderr
    assert list(tmp_path.iterdir()) == [program]


def test_ctrl_c_during_a_long_evaluation(tmp_path) -> None:
    # A long chain keeps the interpreter busy in Python code for seconds.
    program = tmp_path / "long.ad"
    program.write_text("x = 0.5\n" + "".join(f"y{i} = sin(x + {i})*cos(x)\n" for i in range(300_000)))
    with subprocess.Popen([sys.executable, "-m", "autodiff_cli", "eval", str(program), "--format", "json"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          start_new_session=True) as process:
        time.sleep(1.5)
        assert process.poll() is None, "finished before it could be interrupted"
        os.killpg(process.pid, signal.SIGINT)
        assert process.wait(timeout=30) == 130
        stderr = process.stderr.read()
    assert "Traceback" not in stderr and stderr.strip().endswith("interrupted")


def test_sigterm_is_143(tmp_path) -> None:
    program = tmp_path / "long.ad"
    program.write_text("x = 0.5\n" + "".join(f"y{i} = sin(x + {i})*cos(x)\n" for i in range(300_000)))
    with subprocess.Popen([sys.executable, "-m", "autodiff_cli", "eval", str(program)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as process:
        time.sleep(1.5)
        assert process.poll() is None, "finished before it could be stopped"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 143
        assert "Traceback" not in process.stderr.read()


# `| head`: Click ends a closed pipe with status 1 and no message; every command ends it with 0.
@pytest.mark.parametrize("command", [
    "eval {program} --format json", "eval {program} --format csv", "eval {program} --format plain",
    "eval {program} --mode forward --format plain", "explain {program} --format plain",
    "graph {program} --format dot",
], ids=["eval-json", "eval-csv", "eval-plain", "eval-forward", "explain", "graph-dot"])
def test_a_reader_that_stops_early_ends_the_run_with_status_0(tmp_path, command) -> None:
    program = tmp_path / "chain.ad"
    program.write_text("x0 = 1.0\n" + "".join(f"x{i} = x{i - 1}*1.0001\n" for i in range(1, 20_000)))
    line = (f"{sys.executable} -m autodiff_cli {command.format(program=program)} | head -n 1 >/dev/null; "
            "echo \"status ${PIPESTATUS[0]}\"")
    result = subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=120, check=False)
    assert result.stdout == "status 0\n"
    assert "error" not in result.stderr.lower() and "Traceback" not in result.stderr  # forward mode's note may stay
