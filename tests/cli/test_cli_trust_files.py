"""Output files under faults (issue 27, lost data): an in-place overwrite interrupted or failing
half-way, temporary files' modes and leftovers, long file names, read-only mounts, and fit's
parameters when the disk is full at the end."""

from __future__ import annotations

import errno
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from autodiff_cli.cli import fit as fit_cli
from autodiff_cli.cli import main
from autodiff_cli.errors import OutputError
from autodiff_cli.files import atomic

REPO = Path(__file__).resolve().parents[2]
posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX files, signals and modes")
linux_only = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs Linux /proc")
ROWS = "x\n" + "".join(f"{i}\n" for i in range(20_000))


def _refuse_temporaries_in(monkeypatch, directory: Path) -> None:
    """The directory takes no temporary file (a mode 555 directory: root ignores that, so the
    refusal is simulated where it happens); elsewhere, temporary files are made as usual."""
    real = atomic._create_temporary

    def refuse(where: str, base: str):
        if os.path.samefile(where or ".", directory):
            raise PermissionError(errno.EACCES, "Permission denied")
        return real(where, base)

    monkeypatch.setattr(atomic, "_create_temporary", refuse)


# --- in place: a directory that takes no temporary file ------------------------------------------

# Runs a command the way the `autodiff` program does (SIGTERM unwinds), in a directory that takes
# no temporary file; the first write into the target sends the process a signal, and each write
# takes at most 4 KiB, so that the loop would go on past the signal if nothing held it back.
INTERRUPTING = textwrap.dedent("""
    import errno, os, signal, sys
    from autodiff_cli.files import atomic
    directory, target, signum = sys.argv[1], os.path.realpath(sys.argv[2]), int(sys.argv[3])
    real_create, real_pwrite = atomic._create_temporary, os.pwrite
    def refuse(where, base):
        if os.path.samefile(where or ".", directory):
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_create(where, base)
    sent = []
    def pwrite(fd, data, offset):
        if os.path.realpath(f"/proc/self/fd/{fd}") == target and not sent:
            sent.append(1)
            os.kill(os.getpid(), signum)
        return real_pwrite(fd, bytes(data[:4096]), offset)
    atomic._create_temporary = refuse
    os.pwrite = pwrite
    sys.argv = ["autodiff", *sys.argv[4:]]
    from autodiff_cli.cli.main import run
    run()
""")


@linux_only
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
@pytest.mark.parametrize("command", ["batch", "graph"])
def test_a_signal_during_an_in_place_overwrite_leaves_a_whole_file(tmp_path, signum, command) -> None:
    (tmp_path / "rows.csv").write_text(ROWS)
    program = "y0 = x\n" + "".join(f"y{i} = tanh(y{i - 1})\n" for i in range(1, 400))
    (tmp_path / "chain.ad").write_text(program)
    args = {"batch": ["batch", "y = 2*x", "rows.csv"],
            "graph": ["graph", "chain.ad", "--set", "x=1", "--format", "dot", "--max-nodes", "0"]}[command]
    expected = subprocess.run([sys.executable, "-m", "autodiff_cli", *args], cwd=tmp_path, capture_output=True,
                              check=True, timeout=120).stdout
    outputs = tmp_path / "out"
    outputs.mkdir()
    target = outputs / "out.txt"
    old = b"".join(b"old row %d, longer than the new ones so that a cut shows\n" % i for i in range(1000))
    target.write_bytes(old)
    result = subprocess.run([sys.executable, "-c", INTERRUPTING, str(outputs), str(target), str(int(signum)),
                             *args, "-o", str(target)], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 128 + signum, result.stderr
    content = target.read_bytes()
    assert b"\0" not in content
    assert content in (expected, old), (len(content), len(expected), len(old))
    assert len(expected) > 4096 and content == expected  # the signal waited until the new content was on disk
    assert os.listdir(outputs) == ["out.txt"]


# As INTERRUPTING, but the third 4 KiB write into the target is never made: the process is killed
# with SIGKILL, which no handler can hold back.
KILLED = INTERRUPTING.replace("""    if os.path.realpath(f"/proc/self/fd/{fd}") == target and not sent:
        sent.append(1)
        os.kill(os.getpid(), signum)""", """    if os.path.realpath(f"/proc/self/fd/{fd}") == target:
        sent.append(1)
        if len(sent) == 3:
            os.kill(os.getpid(), signum)""")


@linux_only
@pytest.mark.parametrize("command", ["batch", "graph"])
def test_sigkill_during_an_in_place_overwrite_keeps_the_old_content_and_says_where(tmp_path, command) -> None:
    assert KILLED != INTERRUPTING
    (tmp_path / "rows.csv").write_text(ROWS)
    program = "y0 = x\n" + "".join(f"y{i} = tanh(y{i - 1})\n" for i in range(1, 400))
    (tmp_path / "chain.ad").write_text(program)
    args = {"batch": ["batch", "y = 2*x", "rows.csv"],
            "graph": ["graph", "chain.ad", "--set", "x=1", "--format", "dot", "--max-nodes", "0"]}[command]
    expected = subprocess.run([sys.executable, "-m", "autodiff_cli", *args], cwd=tmp_path, capture_output=True,
                              check=True, timeout=120).stdout
    outputs, kept = tmp_path / "out", tmp_path / "tmp"
    outputs.mkdir()
    kept.mkdir()
    target = outputs / "out.txt"
    old = b"".join(b"old row %d, the user's only copy\n" % i for i in range(1000))
    target.write_bytes(old)
    result = subprocess.run([sys.executable, "-c", KILLED, str(outputs), str(target), str(int(signal.SIGKILL)),
                             *args, "-o", str(target)], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(kept)}, check=False)
    assert result.returncode == -signal.SIGKILL, result.stderr
    # The target holds the beginning of the new content, shorter than the whole: no zeros, no old bytes.
    content = target.read_bytes()
    assert len(expected) > 3 * 4096 and len(content) == 2 * 4096 and content == expected[:len(content)]
    # The old content is in the copy the notice named, before the write began.
    copies = list(kept.glob("out.old-*.txt"))
    assert len(copies) == 1 and copies[0].read_bytes() == old
    assert f"its old content is kept in {copies[0]}" in " ".join(result.stderr.split())
    assert stat.S_IMODE(copies[0].stat().st_mode) == 0o600
    assert os.listdir(outputs) == ["out.txt"]


def test_a_finished_in_place_overwrite_leaves_no_copy(tmp_path, monkeypatch) -> None:
    target, kept = tmp_path / "rows.csv", tmp_path / "kept"
    kept.mkdir()
    target.write_bytes(b"x\n1\n")
    _refuse_temporaries_in(monkeypatch, tmp_path)
    monkeypatch.setattr(atomic, "_temporary_directory", lambda: str(kept))
    told: list[str] = []
    monkeypatch.setattr(atomic, "_NOTICES", [told.append])
    atomic.write_atomic(str(target), b"x,y\n1,2\n")
    with atomic.StreamedFile(str(target)) as streamed:
        streamed.write(b"x,y\n3,4\n")
        streamed.commit()
    assert target.read_bytes() == b"x,y\n3,4\n" and list(kept.iterdir()) == []
    assert len(told) == 2 and all("overwritten in place; its old content is kept in" in notice for notice in told)


def _failing_fsync(monkeypatch, target: Path) -> None:
    """An I/O error when the target's new content is synced to disk (after it was all written)."""
    real = os.fsync

    def fsync(fd: int) -> None:
        if os.path.exists(target) and os.path.samestat(os.fstat(fd), os.stat(target)):
            raise OSError(errno.EIO, "Input/output error")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


def test_an_in_place_overwrite_that_fails_puts_the_old_content_back(tmp_path, monkeypatch) -> None:
    target = tmp_path / "graph.dot"
    target.write_bytes(b"the old picture\n" * 100)
    _refuse_temporaries_in(monkeypatch, tmp_path)
    _failing_fsync(monkeypatch, target)
    with pytest.raises(OutputError, match="Input/output error"):
        atomic.write_atomic(str(target), b"a new picture, longer than the old one\n" * 200)
    assert target.read_bytes() == b"the old picture\n" * 100


def test_a_streamed_in_place_overwrite_that_fails_puts_the_old_content_back(tmp_path, monkeypatch) -> None:
    target = tmp_path / "rows.csv"
    target.write_bytes(b"x\n1\n2\n")
    _refuse_temporaries_in(monkeypatch, tmp_path)
    _failing_fsync(monkeypatch, target)
    with atomic.StreamedFile(str(target)) as streamed:
        streamed.write(b"x,y\n" + b"3,4\n" * 10_000)
        with pytest.raises(OutputError, match="Input/output error"):
            streamed.commit()
    assert target.read_bytes() == b"x\n1\n2\n"


# --- temporary files: modes, leftovers, names ---------------------------------------------------


@posix_only
def test_temporary_files_are_private_until_they_take_the_target_s_mode(tmp_path, monkeypatch) -> None:
    target = tmp_path / "private.csv"
    target.write_text("secret\n")
    target.chmod(0o600)
    seen: list[int] = []
    real = atomic.write_whole

    def watching(handle, data):  # the temporary file's mode while the data goes in
        seen.append(stat.S_IMODE(os.fstat(handle.fileno()).st_mode))
        real(handle, data)

    monkeypatch.setattr(atomic, "write_whole", watching)
    atomic.write_atomic(str(target), b"new secret\n")
    with atomic.StreamedFile(str(target)) as streamed:
        seen.append(stat.S_IMODE(os.fstat(streamed.handle.fileno()).st_mode))
        streamed.commit()
    assert seen == [0o600, 0o600]
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    # The in-place fallback's copy in the temporary directory too.
    _refuse_temporaries_in(monkeypatch, tmp_path)
    elsewhere = tmp_path / "tmp"
    elsewhere.mkdir()
    monkeypatch.setattr(atomic, "_temporary_directory", lambda: str(elsewhere))
    with atomic.StreamedFile(str(target)) as streamed:
        assert stat.S_IMODE(os.fstat(streamed.handle.fileno()).st_mode) == 0o600
        streamed.write(b"in place\n")
        streamed.commit()
    assert target.read_bytes() == b"in place\n" and stat.S_IMODE(target.stat().st_mode) == 0o600


@posix_only
def test_a_new_file_still_gets_the_umask_s_mode(tmp_path) -> None:
    umask = os.umask(0o027)
    try:
        atomic._NEW_FILE_MODE.clear()
        atomic.write_atomic(str(tmp_path / "new.svg"), b"<svg/>")
        with atomic.StreamedFile(str(tmp_path / "new.csv")) as streamed:
            streamed.commit()
    finally:
        os.umask(umask)
        atomic._NEW_FILE_MODE.clear()
    assert stat.S_IMODE((tmp_path / "new.svg").stat().st_mode) == 0o640
    assert stat.S_IMODE((tmp_path / "new.csv").stat().st_mode) == 0o640


def _files_open_in(pid: int, directory: Path) -> bool:
    try:
        links = [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]
    except OSError:
        return False
    return any(link.startswith(f"{directory}{os.sep}") for link in links) or len(list(directory.iterdir())) > 1


@linux_only
def test_sigkill_while_streaming_leaves_no_temporary_file(tmp_path) -> None:
    (tmp_path / "rows.csv").write_text("")  # only so that the directory is not empty
    with subprocess.Popen([sys.executable, "-m", "autodiff_cli", "batch", "y = 2*x", "-", "-o",
                           str(tmp_path / "out.csv")], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(REPO)}) as process:
        try:
            process.stdin.write(b"x\n" + b"1\n" * 50_000)  # then the pipe stays open: batch waits for more
            process.stdin.flush()
            deadline = time.monotonic() + 60
            while not _files_open_in(process.pid, tmp_path) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert _files_open_in(process.pid, tmp_path), "the output was never opened"
            process.kill()
            process.wait(30)
        finally:
            process.kill()
    assert sorted(os.listdir(tmp_path)) == ["rows.csv"]


def test_the_next_run_removes_temporary_files_a_killed_run_left(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(atomic, "_without_name", lambda directory: None)  # a system without O_TMPFILE
    target = tmp_path / "out.csv"
    dead = atomic._temporary_name(str(tmp_path), "out.csv").replace(f".{os.getpid()}-", ".999999999-")
    Path(dead).write_text("left by a run killed with SIGKILL")
    living = tmp_path / f".out.csv.{os.getppid()}-0123abcd{atomic.TEMPORARY_SUFFIX}"
    living.write_text("another run still writing")
    mine = tmp_path / ".out.csv.4f00.tmp"  # not a name of ours: never touched
    mine.write_text("someone's file")
    atomic.write_atomic(str(target), b"new\n")
    assert target.read_bytes() == b"new\n"
    assert sorted(os.listdir(tmp_path)) == sorted(["out.csv", living.name, mine.name])


@pytest.mark.parametrize("length", [241, 250, 255])
def test_a_file_name_of_up_to_255_bytes_can_be_written(tmp_path, runner, monkeypatch, length) -> None:
    name = "r" * (length - 4) + ".csv"
    monkeypatch.chdir(tmp_path)
    atomic.write_atomic(name, b"x\n")
    assert Path(name).read_bytes() == b"x\n"
    monkeypatch.setattr(atomic, "_without_name", lambda directory: None)  # named temporary files too
    result = runner.invoke(main, ["batch", "y = 2*x", "-", "-o", name], input="x\n1\n")
    assert result.exit_code == 0, result.output
    assert Path(name).read_text() == "x,y,dy/dx\n1.0,2.0,2.0\n"
    assert os.listdir(tmp_path) == [name]


def test_a_name_too_long_is_shown_whole(tmp_path, runner, monkeypatch) -> None:
    name = "r" * 300 + ".csv"
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(main, ["batch", "y = 2*x", "-", "-o", name], input="x\n1\n")
    assert result.exit_code == 1
    assert "File name too long" in result.stderr
    assert name in result.stderr, result.stderr


def test_a_read_only_mount_gets_no_chmod_hint(tmp_path, monkeypatch) -> None:
    target = tmp_path / "graph.svg"
    target.write_bytes(b"old")

    class ReadOnly:
        f_flag = getattr(os, "ST_RDONLY", 1)

    monkeypatch.setattr(os, "access", lambda path, mode: False)  # what access() says on a read-only mount
    monkeypatch.setattr(os, "statvfs", lambda path: ReadOnly(), raising=False)
    for write in (lambda: atomic.write_atomic(target, b"new"), lambda: atomic.check_writable(str(target)),
                  lambda: atomic.StreamedFile(str(target))):
        with pytest.raises(OutputError, match="read-only") as caught:
            write()
        assert "chmod" not in (caught.value.hint or ""), caught.value.hint
        assert "file system" in caught.value.message
    assert target.read_bytes() == b"old"


# --- fit: a full disk at the end ---------------------------------------------------------------


def test_a_full_disk_at_the_end_of_fit_keeps_the_parameters_and_says_where(tmp_path, runner, monkeypatch) -> None:
    (tmp_path / "line.csv").write_text("x,y\n0,1\n1,3\n2,5\n3,7\n")
    out = tmp_path / "params.json"
    real = fit_cli.write_atomic

    def full(path, data):
        if os.fspath(path) == str(out):
            raise OutputError(f"cannot write {path}: No space left on device", hint="check that the disk is not full")
        real(path, data)

    monkeypatch.setattr(fit_cli, "write_atomic", full)
    result = runner.invoke(main, ["fit", "pred = w*x + b; loss = (pred - y)**2", "--set", "w=0", "--set", "b=0",
                                  "--data", str(tmp_path / "line.csv"), "--lr", "0.05", "--steps", "500",
                                  "-o", str(out), "-q"])
    assert result.exit_code == 1, result.output
    assert "No space left on device" in result.stderr
    assert not out.exists()
    kept = [path for path in tmp_path.iterdir() if path.name not in ("line.csv",)]
    assert len(kept) == 1, kept
    assert str(kept[0]) in result.stderr.replace("\n", "")  # the error names the place
    learned = json.loads(kept[0].read_text())
    assert learned["w"] == pytest.approx(2, abs=0.05) and learned["b"] == pytest.approx(1, abs=0.1)
    assert stat.S_IMODE(kept[0].stat().st_mode) == 0o600
