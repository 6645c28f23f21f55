"""Where results are written: open descriptors (/dev/stdout, /dev/fd/N, >(cmd)), files in
directories that cannot take a temporary file, and files that belong to someone else.

A descriptor is written into, at its offset and with its flags (append included), never
replaced: the file behind it keeps what it had.  Regular files are replaced whole.
"""

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from autodiff_cli.files import atomic, streams
from autodiff_cli.errors import OutputError

REPO = Path(__file__).resolve().parents[2]
PROGRAM = "a = 2\nb = 3\ny = a*b\n"
AUTODIFF = f"{sys.executable} -m autodiff_cli"


def shell(command: str, cwd: Path, shell_program: str = "sh") -> subprocess.CompletedProcess:
    return subprocess.run([shell_program, "-c", command], cwd=cwd, capture_output=True, text=True,
                          check=False, env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.fixture
def program(tmp_path) -> Path:
    path = tmp_path / "k.ad"
    path.write_text(PROGRAM)
    return path


# --- descriptors, in process -----------------------------------------------------------------


@pytest.mark.parametrize("spelling", ["/dev/fd/{fd}", "/proc/self/fd/{fd}"], ids=["dev_fd", "proc_self_fd"])
def test_a_descriptor_opened_for_append_keeps_what_the_file_had(tmp_path, spelling) -> None:
    log = tmp_path / "keep.log"
    log.write_bytes(b"header\n")
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    try:
        atomic.write_atomic(spelling.format(fd=fd), b"graph\n")
    finally:
        os.close(fd)
    assert log.read_bytes() == b"header\ngraph\n"


def test_a_descriptor_is_written_at_its_offset_not_truncated(tmp_path) -> None:
    # `{ echo header; autodiff ... -o /dev/stdout; echo footer; } > log`: the shell's descriptor
    # is shared, so each writer continues where the last one stopped.
    log = tmp_path / "log.txt"
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, b"header\n")
        atomic.write_atomic(f"/dev/fd/{fd}", b"graph\n")
        os.write(fd, b"footer\n")
    finally:
        os.close(fd)
    assert log.read_bytes() == b"header\ngraph\nfooter\n"


def test_a_pipe_descriptor_is_written(tmp_path) -> None:
    read_end, write_end = os.pipe()
    try:
        atomic.write_atomic(f"/dev/fd/{write_end}", b"through the pipe")
        os.close(write_end)
        write_end = -1
        assert os.read(read_end, 100) == b"through the pipe"
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)


def test_a_closed_descriptor_is_an_error_not_a_new_file(tmp_path) -> None:
    fd = os.open(tmp_path / "x", os.O_WRONLY | os.O_CREAT)
    os.close(fd)
    with pytest.raises(OutputError, match=f"/dev/fd/{fd}.*not open"):
        atomic.write_atomic(f"/dev/fd/{fd}", b"data")


def test_check_writable_accepts_an_open_descriptor(tmp_path) -> None:
    read_end, write_end = os.pipe()
    try:
        atomic.check_writable(f"/dev/fd/{write_end}")  # no exception: it can be written
    finally:
        os.close(read_end)
        os.close(write_end)


# --- descriptors, through a real shell ---------------------------------------------------------


def test_append_to_a_log_through_dev_stdout(tmp_path, program) -> None:
    (tmp_path / "keep.log").write_text("earlier content\n")
    result = shell(f"{AUTODIFF} graph k.ad --format dot -o /dev/stdout >> keep.log", tmp_path)
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "keep.log").read_text()
    assert text.startswith("earlier content\ndigraph y {")


def test_a_group_redirection_keeps_every_part(tmp_path, program) -> None:
    command = f"{{ echo header; {AUTODIFF} graph k.ad --format dot -o /dev/stdout; echo footer; }} > log.txt"
    result = shell(command, tmp_path)
    assert result.returncode == 0, result.stderr
    lines = (tmp_path / "log.txt").read_text().splitlines()
    assert lines[0] == "header" and lines[1] == "digraph y {" and lines[-1] == "footer"


def test_dev_stdout_into_a_pipe(tmp_path, program) -> None:
    result = shell(f"{AUTODIFF} graph k.ad --format dot -o /dev/stdout | head -1", tmp_path)
    assert result.returncode == 0
    assert result.stdout == "digraph y {\n" and result.stderr == ""


@pytest.mark.skipif(shutil.which("bash") is None, reason="process substitution needs bash")
def test_process_substitution(tmp_path, program) -> None:
    result = shell(f"{AUTODIFF} graph k.ad --format dot -o >(grep -c digraph > count.txt); wait", tmp_path,
                   "bash")
    assert result.returncode == 0, result.stderr
    for _ in range(100):  # the reader may finish just after the writer
        if (tmp_path / "count.txt").exists() and (tmp_path / "count.txt").read_text():
            break
        subprocess.run(["sleep", "0.05"], check=True)
    assert (tmp_path / "count.txt").read_text() == "1\n"


# --- files that cannot be replaced -------------------------------------------------------------


def _no_temporary_files(monkeypatch) -> None:
    def refuse(directory, base):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(atomic, "_create_temporary", refuse)


def test_a_writable_file_in_a_read_only_directory_is_overwritten_in_place(tmp_path, monkeypatch) -> None:
    target = tmp_path / "graph.dot"
    target.write_bytes(b"an old, longer picture that must be replaced entirely\n")
    target.chmod(0o640)
    linked = tmp_path / "hard-link.dot"
    os.link(target, linked)
    _no_temporary_files(monkeypatch)
    atomic.write_atomic(str(target), b"new\n")
    assert target.read_bytes() == b"new\n"
    assert linked.read_bytes() == b"new\n"  # the same file, written in place
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_in_place_checks_the_space_first(tmp_path, monkeypatch) -> None:
    # A disk too full for the new picture must leave the old file as it was, and no copy behind.
    target = tmp_path / "graph.dot"
    target.write_bytes(b"old\n")
    _no_temporary_files(monkeypatch)
    kept = tmp_path / "kept"
    kept.mkdir()
    monkeypatch.setattr(atomic, "_temporary_directory", lambda: str(kept))
    real = os.fstatvfs

    def full(fd):
        found = real(fd)
        return os.statvfs_result((found.f_bsize, found.f_frsize, found.f_blocks, 0, 0, *found[5:]))

    monkeypatch.setattr(os, "fstatvfs", full)
    with pytest.raises(OutputError, match="No space left on device"):
        atomic.write_atomic(str(target), b"a much longer new picture\n" * 1000)
    assert target.read_bytes() == b"old\n" and list(kept.iterdir()) == []


def test_a_disk_that_fills_during_an_in_place_write_gets_the_old_content_back(tmp_path, monkeypatch) -> None:
    target = tmp_path / "graph.dot"
    old = b"the old picture\n" * 500
    target.write_bytes(old)
    _no_temporary_files(monkeypatch)
    kept = tmp_path / "kept"
    kept.mkdir()
    monkeypatch.setattr(atomic, "_temporary_directory", lambda: str(kept))
    real, calls = os.pwrite, []

    def filling(fd, data, offset):  # the target takes 4 KiB, then the disk is full (once)
        if os.path.samestat(os.fstat(fd), os.stat(target)):
            calls.append(offset)
            if len(calls) == 2:
                raise OSError(28, "No space left on device")
            return real(fd, bytes(data[:4096]), offset)
        return real(fd, data, offset)

    monkeypatch.setattr(os, "pwrite", filling)
    with pytest.raises(OutputError, match="No space left on device"):
        atomic.write_atomic(str(target), b"a new picture\n" * 2000)
    monkeypatch.setattr(os, "pwrite", real)
    assert target.read_bytes() == old and list(kept.iterdir()) == []


def test_no_room_for_a_copy_of_the_old_content_refuses_the_in_place_write(tmp_path, monkeypatch) -> None:
    target = tmp_path / "graph.dot"
    target.write_bytes(b"old\n")
    _no_temporary_files(monkeypatch)
    monkeypatch.setattr(atomic, "_temporary_directory", lambda: str(tmp_path / "absent"))
    with pytest.raises(OutputError) as raised:
        atomic.write_atomic(str(target), b"new\n")
    assert "no copy of its old content could be kept first in" in raised.value.message
    assert raised.value.hint and "TMPDIR" in raised.value.hint
    assert target.read_bytes() == b"old\n"


def test_a_new_file_in_a_read_only_directory_explains_why(tmp_path, monkeypatch) -> None:
    _no_temporary_files(monkeypatch)
    with pytest.raises(OutputError) as raised:
        atomic.write_atomic(str(tmp_path / "new.svg"), b"x")
    assert "cannot create a file in" in raised.value.message
    assert raised.value.hint and "directory" in raised.value.hint


def _as_nobody() -> list[str]:
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("needs setpriv to drop root's privileges")
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.fixture
def shared_tmp():
    """A directory every user can reach (pytest's own are private to their owner)."""
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="autodiff-trust-"))
    path.chmod(0o755)
    yield path
    for child in path.rglob("*"):
        if child.is_dir():
            child.chmod(0o755)
    shutil.rmtree(path)


def test_for_real_a_read_only_directory_with_a_writable_file(shared_tmp) -> None:
    directory = shared_tmp / "locked"
    directory.mkdir()
    target = directory / "g.dot"
    target.write_text("old\n")
    target.chmod(0o666)
    (directory / "k.ad").write_text(PROGRAM)
    (directory / "k.ad").chmod(0o644)
    directory.chmod(0o555)
    command = [*_as_nobody(), sys.executable, "-m", "autodiff_cli", "graph", "k.ad", "-o", "g.dot"]
    result = subprocess.run(command, cwd=directory, capture_output=True, text=True, check=False,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 0, result.stderr
    assert target.read_text().startswith("digraph y {")
    assert sorted(child.name for child in directory.iterdir()) == ["g.dot", "k.ad"]


def test_an_unreachable_directory_is_an_error_not_a_traceback(shared_tmp) -> None:
    private = shared_tmp / "private"
    private.mkdir()
    private.chmod(0o700)
    (shared_tmp / "k.ad").write_text(PROGRAM)
    (shared_tmp / "k.ad").chmod(0o644)
    command = [*_as_nobody(), sys.executable, "-m", "autodiff_cli", "graph", "k.ad", "-o", "private/g.dot"]
    result = subprocess.run(command, cwd=shared_tmp, capture_output=True, text=True, check=False,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("error: cannot write private/g.dot: Permission denied")


def test_another_users_read_only_file_does_not_suggest_chmod(tmp_path, monkeypatch) -> None:
    target = tmp_path / "theirs.svg"
    target.write_text("theirs")
    target.chmod(0o444)
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    monkeypatch.setattr(os, "geteuid", lambda: target.stat().st_uid + 1)
    for write in (atomic.check_writable, lambda path: atomic.write_atomic(path, b"x")):
        with pytest.raises(OutputError) as raised:
            write(str(target))
        assert "belongs to another user" in raised.value.message
        assert "chmod" not in (raised.value.hint or "")
    assert target.read_text() == "theirs"


def test_ones_own_read_only_file_suggests_chmod(tmp_path, monkeypatch) -> None:
    target = tmp_path / "mine.svg"
    target.write_text("mine")
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with pytest.raises(OutputError) as raised:
        atomic.check_writable(str(target))
    assert "read-only" in raised.value.message and "chmod u+w" in raised.value.hint


# --- streams as -o targets: no extension, maybe a terminal ---------------------------------------


@pytest.mark.parametrize("target", ["/dev/null", "/dev/stdout"], ids=["dev_null", "dev_stdout"])
def test_a_stream_target_defaults_to_svg_like_stdout(runner, target) -> None:
    from autodiff_cli.cli import main

    result = runner.invoke(main, ["graph", "y = 2*x", "--set", "x=1", "-o", target, "--renderer", "bundled"])
    assert result.exit_code == 0, result.stderr
    if target == "/dev/stdout":
        assert result.stdout.startswith("<?xml")


def test_binary_to_a_terminal_through_a_path_is_refused(runner, monkeypatch) -> None:
    from autodiff_cli.cli import graph as cli_graph
    from autodiff_cli.cli import main

    monkeypatch.setattr(cli_graph, "is_terminal", lambda path: path == "/dev/tty")
    result = runner.invoke(main, ["graph", "y = 2*x", "--set", "x=1", "-o", "/dev/tty", "--format", "png"])
    assert result.exit_code == 2
    assert "refusing to write binary PNG to a terminal" in result.stderr


def test_is_terminal_and_is_stream(tmp_path) -> None:
    regular = tmp_path / "g.svg"
    regular.write_text("x")
    assert not streams.is_stream(str(regular)) and not streams.is_terminal(str(regular))
    assert not streams.is_stream(str(tmp_path / "new.svg"))
    assert streams.is_stream("/dev/null") and not streams.is_terminal("/dev/null")
    read_end, write_end = os.pipe()
    try:
        assert streams.is_stream(f"/dev/fd/{write_end}") and not streams.is_terminal(f"/dev/fd/{write_end}")
    finally:
        os.close(read_end)
        os.close(write_end)


# --- -o naming a file the run reads ------------------------------------------------------------


@pytest.mark.parametrize("command, target", [
    (["batch", "{program}", "{rows}"], "program"),
    (["batch", "{program}", "{rows}", "--values", "{values}"], "values"),
    (["graph", "{program}", "--format", "dot"], "program"),
    (["graph", "-f", "{program}", "--values", "{values}", "--format", "dot"], "values"),
    (["plot", "{program}", "--range", "a=0:1", "--format", "text"], "program"),
    (["plot", "{program}", "--range", "a=0:1", "--values", "{values}", "--format", "text"], "values"),
], ids=["batch-program", "batch-values", "graph-program", "graph-values", "plot-program", "plot-values"])
def test_output_over_a_file_the_run_reads_is_refused(runner, program, tmp_path, command, target) -> None:
    from autodiff_cli.cli import main

    rows = tmp_path / "rows.csv"
    rows.write_text("a\n1\n")
    values = tmp_path / "v.json"
    values.write_text('{"b": 3}')
    paths = {"program": program, "rows": rows, "values": values}
    args = [part.format(**paths) for part in command]
    before = paths[target].read_bytes()
    result = runner.invoke(main, [*args, "-o", str(paths[target])])
    assert result.exit_code == 2, result.output
    assert "this run reads: writing it would destroy it" in result.stderr
    assert paths[target].read_bytes() == before


@pytest.mark.parametrize("keep", [[], ["--keep", ""]], ids=["every-column", "no-column"])
def test_batch_refuses_to_write_over_its_own_rows(runner, program, tmp_path, keep) -> None:
    # With --keep '' (or rows skipped by --on-error skip) the output holds less than the input:
    # writing it over the rows file once replaced the user's data with the derivatives alone.
    from autodiff_cli.cli import main

    rows = tmp_path / "rows.csv"
    rows.write_text("a\n1\n")
    result = runner.invoke(main, ["batch", str(program), str(rows), *keep, "-o", str(rows)])
    assert result.exit_code == 2, result.output
    assert "is the ROWS file this run reads: writing it would destroy it" in result.stderr
    assert rows.read_text() == "a\n1\n"


@pytest.mark.parametrize("command", [
    ["graph", "-e", "W = [1, 2]\nL = sum(W**2)", "--format", "dot"],
    ["plot", "-e", "W = [1, 2]\nL = sum(W**2)", "--range", "W[0]=0:1", "--format", "svg"],
], ids=["graph", "plot"])
def test_output_over_a_npy_file_given_by_set_is_refused(runner, tmp_path, command) -> None:
    # --set W=w.npy is a file this run reads too: -o w.npy once replaced the user's weights.
    import numpy as np

    from autodiff_cli.cli import main

    weights = tmp_path / "w.npy"
    np.save(weights, np.array([3.0, 4.0]))
    before = weights.read_bytes()
    result = runner.invoke(main, [*command, "--set", f"W={weights}", "-o", str(weights)])
    assert result.exit_code == 2, result.output
    assert "is the .npy file of --set W this run reads: writing it would destroy it" in result.stderr
    assert weights.read_bytes() == before
