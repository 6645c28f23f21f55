"""Resources under adversarial input (issue 27): lines with no end, inputs with no end, memory
running out, a write that blocks for ever, a renderer that outlives us, a broken parser cache,
and a rows file cut short while it is read.  Every test that could hang on a bug runs the
command in a subprocess with a timeout."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from autodiff_cli import execute
from autodiff_cli.cli import main
from autodiff_cli.errors import InputError
from autodiff_cli.files.rows import lines as lines_module
from autodiff_cli.files.rows.reader import RowReader
from autodiff_cli.render import backends

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
ENV = {**os.environ, "PYTHONPATH": str(REPO), "OPENBLAS_NUM_THREADS": "1"}
linux_only = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX processes and limits")


def _memory_limited() -> None:
    """A 3 GiB address space: a run that reads without bound fails quickly instead of filling the machine."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def _autodiff(*args: str, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "autodiff_cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=ENV, preexec_fn=_memory_limited, check=False, **kwargs)


# --- long lines ---------------------------------------------------------------------------------


class _Trickle:
    """A stream that gives 64 KiB a read, as a pipe does."""

    def __init__(self, data: bytes) -> None:
        self.data = memoryview(data)

    def read1(self, size: int) -> bytes:
        block = bytes(self.data[:65536])
        self.data = self.data[len(block):]
        return block


def test_a_long_line_costs_linear_time() -> None:
    line = b"7" * (40 << 20)  # 40 MiB in 640 reads: re-copied at each, it took tens of seconds
    reader = lines_module.Lines(_Trickle(b"x\n" + line + b"\n1\n"), "<stdin>")  # type: ignore[arg-type]
    started = time.process_time()
    taken = reader.take(3, wait=True)
    spent = time.process_time() - started
    assert [len(text) for text in taken] == [1, len(line), 1]
    assert spent < 5, spent


def test_a_line_longer_than_the_limit_is_a_located_error(runner, monkeypatch) -> None:
    monkeypatch.setattr(lines_module, "MAX_LINE", 1000)
    result = runner.invoke(main, ["batch", "L = x", "-"], input="x\n1\n" + "2" * 5000 + "\n3\n")
    assert result.exit_code == 1, result.output
    assert "<stdin>:3:1: error: line 3 is longer than 1,000 characters" in result.stderr
    assert "Traceback" not in result.stderr


@posix_only
def test_batch_of_dev_zero_is_refused_not_unbounded() -> None:
    result = _autodiff("batch", str(SAMPLES / "regression.ad"), "/dev/zero")
    assert result.returncode == 1, result.stderr[-2000:]
    assert "/dev/zero:1:1: error: line 1 is longer than 67,108,864 characters" in result.stderr
    assert "Traceback" not in result.stderr


# --- inputs with no end, memory -----------------------------------------------------------------


@posix_only
@pytest.mark.parametrize("args", [["eval", str(SAMPLES / "karpathy.ad"), "--values", "/dev/zero"],
                                  ["eval", "/dev/zero"]], ids=["values", "program"])
def test_a_program_or_values_file_with_no_end_is_refused(args) -> None:
    result = _autodiff(*args)
    assert result.returncode == 1, result.stderr[-2000:]
    assert "error: cannot read /dev/zero: it holds more than 268,435,456 bytes" in result.stderr
    assert "Traceback" not in result.stderr


def test_running_out_of_memory_is_a_message(runner, monkeypatch) -> None:
    def exhausted(*args, **kwargs):
        raise MemoryError

    from autodiff_cli.execute import scalar

    monkeypatch.setattr(scalar, "evaluate", exhausted)  # the engine's run, where eval spends its time
    result = runner.invoke(main, ["eval", "y = 2*x", "--set", "x=1"])
    assert result.exit_code == 1
    assert not isinstance(result.exception, MemoryError)
    assert result.stderr.startswith("error: out of memory")
    assert "hint:" in result.stderr


# --- fit blocked writing its results ------------------------------------------------------------


def _lines_of(stream, into: list[str]) -> threading.Thread:
    def read() -> None:
        for line in stream:
            into.append(line)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def _wait_until_blocked(pid: int) -> None:
    """Until ``pid`` waits in the kernel for the other end of a named pipe (where Linux says so),
    or a second at least."""
    time.sleep(1.0)
    deadline = time.monotonic() + 30
    wchan = Path(f"/proc/{pid}/wchan")
    while wchan.exists() and time.monotonic() < deadline:
        try:
            if wchan.read_text() in ("wait_for_partner", "pipe_wait", "pipe_write", "0", ""):
                return
        except OSError:
            return
        time.sleep(0.05)


@posix_only
@pytest.mark.parametrize("signals", [[signal.SIGTERM], [signal.SIGINT, signal.SIGINT]], ids=["sigterm", "ctrl-c-twice"])
def test_fit_blocked_writing_to_a_pipe_no_one_reads_still_stops(tmp_path, signals) -> None:
    fifo = tmp_path / "params.json"
    os.mkfifo(fifo)
    with subprocess.Popen([sys.executable, "-m", "autodiff_cli", "fit", str(SAMPLES / "line.ad"), "--data",
                           str(SAMPLES / "line.csv"), "--steps", "5", "--progress-every", "1", "-o", str(fifo)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV) as process:
        said: list[str] = []
        reader = _lines_of(process.stderr, said)
        try:
            deadline = time.monotonic() + 60
            while not any("step 5/5" in line for line in said) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert any("step 5/5" in line for line in said), said
            _wait_until_blocked(process.pid)  # training is over: opening the pipe waits for a reader
            for signum in signals:
                process.send_signal(signum)
                time.sleep(0.5)
            status = process.wait(timeout=30)
        finally:
            process.kill()
        reader.join(timeout=10)
    assert status == 128 + signals[-1], said
    text = "".join(said)
    assert "Traceback" not in text
    assert "while writing the results" in text


# --- the renderer's child ----------------------------------------------------------------------


def _fake_renderer(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake-renderer"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return str(script)


@posix_only
def test_the_renderer_runs_under_a_cpu_time_limit(tmp_path) -> None:
    program = _fake_renderer(tmp_path, "cat >/dev/null; ulimit -t")
    limit = backends.render("digraph {}", "svg", backends.Renderer("bundled", program), timeout=10)
    assert limit.strip() == b"15"  # the timeout acts first; this is for when we no longer can


GRAPH_WITH_FAKE_RENDERER = """
import sys
from autodiff_cli.render import backends
program, out = sys.argv[1], sys.argv[2]
backends.bundled_program = lambda: program
backends.system_program = lambda: None
from autodiff_cli.cli.main import run
sys.argv = ["autodiff", "graph", "y = 2*x", "--set", "x=1", "--renderer", "bundled", "--format", "svg", "-o", out]
run()
"""


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


@linux_only
def test_sigkill_of_graph_takes_the_renderer_with_it(tmp_path) -> None:
    program = _fake_renderer(tmp_path, "exec sleep 300")
    with subprocess.Popen([sys.executable, "-c", GRAPH_WITH_FAKE_RENDERER, program, str(tmp_path / "g.svg")],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV) as process:
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
        deadline = time.monotonic() + 60
        found: list[int] = []
        while not found and time.monotonic() < deadline:
            found = [int(pid) for pid in children.read_text().split()] if children.exists() else []
            time.sleep(0.02)
        assert found, "the renderer never started"
        (child,) = found
        try:
            process.kill()
            process.wait(timeout=30)
            deadline = time.monotonic() + 20
            while _state(child) not in (None, "Z", "X") and time.monotonic() < deadline:
                time.sleep(0.05)
            assert _state(child) in (None, "Z", "X"), "the renderer outlived the command"
        finally:
            try:
                os.kill(child, signal.SIGKILL)
            except OSError:
                pass


# --- the parser's cache -------------------------------------------------------------------------


def test_a_corrupted_parser_cache_is_rebuilt(tmp_path) -> None:
    env = {**ENV, "AUTODIFF_CACHE_DIR": str(tmp_path)}
    first = subprocess.run([sys.executable, "-m", "autodiff_cli", "eval", "y = 2*x", "--set", "x=1", "--format",
                            "plain"], capture_output=True, text=True, env=env, timeout=120, check=True)
    (cached,) = tmp_path.glob("parser-*.json")
    data = json.loads(cached.read_text())
    data["action"] = data["action"][: len(data["action"]) // 3]  # valid JSON, its tables cut short
    cached.write_text(json.dumps(data))
    again = subprocess.run([sys.executable, "-m", "autodiff_cli", "eval", "y = 2*x", "--set", "x=1", "--format",
                            "plain"], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert "Traceback" not in again.stderr, again.stderr[-2000:]
    assert again.returncode == 0 and again.stdout == first.stdout
    assert len(json.loads(cached.read_text())["action"]) == 3 * (len(data["action"]))  # written again, whole


def test_the_parser_cache_can_be_turned_off(tmp_path, monkeypatch) -> None:
    from autodiff_cli.language import lalr
    from autodiff_cli.language.compiler import grammar_text

    monkeypatch.setenv("AUTODIFF_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("AUTODIFF_NO_CACHE", "1")
    tables = lalr.load_tables(grammar_text())
    assert tables.scanner.scan("y = 1")[0] == ["y", "=", "1"]
    assert list(tmp_path.iterdir()) == []


# --- a rows file cut short while it is read -----------------------------------------------------


def test_a_rows_file_truncated_while_it_is_read_is_an_error(tmp_path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("x\n" + "4.36561117\n" * 500_000)  # 5 MB: several blocks
    with open(rows, "rb") as stream:
        reader = RowReader(stream, str(rows), "csv")
        chunks = reader.chunks(["x"], [], wait=True)
        first = next(chunks)
        assert first.size == lines_module.CHUNK_LINES
        os.truncate(rows, 2_000_003)  # another program cuts it, in the middle of a number
        with pytest.raises(InputError) as raised:
            for _ in chunks:
                pass
    assert raised.value.message.startswith(f"{rows} shrank while it was read: it held 5,500,002 bytes when "
                                           "reading began, and ended after 2,000,003")


def test_a_rows_file_that_grows_while_it_is_read_is_read_to_its_end(tmp_path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("x\n" + "1\n" * 600_000)
    with open(rows, "rb") as stream:
        reader = RowReader(stream, str(rows), "csv")
        chunks = reader.chunks(["x"], [], wait=True)
        count = next(chunks).size
        with open(rows, "a") as more:
            more.write("2\n" * 10)
        count += sum(chunk.size for chunk in chunks)
    assert count == 600_010
