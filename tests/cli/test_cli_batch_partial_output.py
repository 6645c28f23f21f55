"""What a pipe receives from `batch` before a bad cell: every row before it, whatever the chunk the
bad row fell in, so the same input gives the same partial output however it arrived (in one piece,
or in bursts down a pipe), with Arrow and without, for CSV, TSV and JSON Lines (issue 35)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

ROWS_BEFORE = 20_000


def _csv(separator: str) -> bytes:
    lines = [f"x{separator}y"] + [f"{i * 0.001}{separator}{i % 7}" for i in range(ROWS_BEFORE)]
    lines += [f"oops{separator}1"] + [f"1{separator}1"] * 50
    return ("\n".join(lines) + "\n").encode()


def _jsonl() -> bytes:
    lines = [json.dumps({"x": i * 0.001, "y": float(i % 7)}) for i in range(ROWS_BEFORE)]
    lines += ['{"x": "oops", "y": 1}'] + [json.dumps({"x": 1.0, "y": 1.0})] * 50
    return ("\n".join(lines) + "\n").encode()


def _batch(data: bytes, fmt: str, bursts: bool, arrow: bool) -> subprocess.CompletedProcess:
    """batch over ``data`` on stdin, written in one piece or in bursts of odd sizes with pauses
    (so that the reader's chunks end wherever the bursts happen to)."""
    env = {**os.environ, "AUTODIFF_ROWS_ARROW": "1" if arrow else "0"}
    command = [sys.executable, "-m", "autodiff_cli", "batch", "L = x*w + y", "-", "--set", "w=2", "--from", fmt,
               "--to", "csv"]
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=env)

    def feed() -> None:
        assert process.stdin is not None
        try:
            _write(process.stdin, data, bursts)
        except BrokenPipeError:  # the error ended the run before every byte was sent
            pass
        finally:
            try:
                process.stdin.close()
            except BrokenPipeError:
                pass

    def _write(stdin, data: bytes, bursts: bool) -> None:
        if bursts:
            size, at = 997, 0
            while at < len(data):
                stdin.write(data[at:at + size])
                stdin.flush()
                at += size
                size = size * 7 % 40_009 + 1  # odd sizes, cutting lines anywhere
                time.sleep(0.0005)
        else:
            stdin.write(data)

    writer = threading.Thread(target=feed)
    writer.start()
    assert process.stdout is not None and process.stderr is not None
    with process.stdout, process.stderr:
        out, err = process.stdout.read(), process.stderr.read()  # stderr holds one message: it cannot fill
    process.wait(timeout=120)
    writer.join()
    return subprocess.CompletedProcess(command, process.returncode, out.decode(), err.decode())


@pytest.mark.parametrize("arrow", [True, False], ids=["arrow", "csv-module"])
@pytest.mark.parametrize(("fmt", "separator"), [("csv", ","), ("tsv", "\t")])
def test_every_row_before_a_bad_cell_reaches_the_pipe(fmt: str, separator: str, arrow: bool) -> None:
    if arrow:
        pytest.importorskip("pyarrow", reason="pyarrow is not installed: the Arrow path is not taken")
    for bursts in (False, True, True):
        result = _batch(_csv(separator), fmt, bursts, arrow)
        assert result.returncode == 1, result.stderr
        assert f":{ROWS_BEFORE + 2}:1: error: the column 'x' holds 'oops'" in result.stderr
        rows = result.stdout.splitlines()
        assert len(rows) == 1 + ROWS_BEFORE, (bursts, len(rows))  # the header, then every row before it
        assert rows[-1].startswith(f"{(ROWS_BEFORE - 1) * 0.001!r},")


def test_every_json_line_before_a_bad_one_reaches_the_pipe() -> None:
    for bursts in (False, True):
        result = _batch(_jsonl(), "jsonl", bursts, arrow=False)
        assert result.returncode == 1, result.stderr
        assert f":{ROWS_BEFORE + 1}:" in result.stderr and "'x' holds \"oops\"" in result.stderr
        assert len(result.stdout.splitlines()) == 1 + ROWS_BEFORE
