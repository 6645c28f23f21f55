"""Rows as batch and fit read them: JSON Lines told apart from CSV on stdin, classic-Mac line
ends, numbers too small for a float, a quote left open on the last line, and what is said when
the rows are read from a terminal.  The README's and `batch --help`'s sh examples are run."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autodiff_cli.cli import main
from files import rows_paths

rows_path = rows_paths.rows_path  # autouse: every test here runs on both rows paths (Arrow, pure Python)

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
REGRESSION = str(SAMPLES / "regression.ad")


def _batch(runner, *args, input=None):
    return runner.invoke(main, ["batch", *map(str, args)], input=input)


# --- 1. JSON Lines on stdin (and in files whose extension says nothing) --------------------------

# L = (w*x + b - y)**2 with w = 0.5, b = 0 (regression.ad's defaults): at x=1, y=2: r = -1.5,
# L = 2.25, dL/dw = 2*r*x = -3, dL/db = 2*r = -3.
JSONL_ROW = '{"x": 1, "y": 2}\n'
JSONL_EXPECTED = {"x": 1.0, "y": 2.0, "L": 2.25, "dL/dw": -3.0, "dL/db": -3.0}


@pytest.mark.parametrize("text", [JSONL_ROW, "\n  \n" + JSONL_ROW, '  {"x":1,"y":2}\n'],
                         ids=["plain", "blank-lines-first", "indented"])
def test_jsonl_on_stdin_is_recognised(runner, text) -> None:
    result = _batch(runner, REGRESSION, "-", "--to", "jsonl", "--wrt", "w,b", input=text)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == JSONL_EXPECTED


@pytest.mark.parametrize("name", ["rows.txt", "rows"], ids=["txt", "no-extension"])
def test_jsonl_in_a_file_without_a_known_extension(runner, tmp_path, name) -> None:
    path = tmp_path / name
    path.write_text(JSONL_ROW)
    result = _batch(runner, REGRESSION, path, "--to", "jsonl", "--wrt", "w,b")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == JSONL_EXPECTED


@pytest.mark.parametrize("text", ["\nx,y\n1,2\n", "\n \r\n\nx,y\n1,2\n\n"], ids=["one", "several"])
def test_csv_blank_lines_before_the_header_are_skipped(runner, text) -> None:
    result = _batch(runner, "L = x*y", "-", input=text)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "x,y,L,dL/dx,dL/dy\n1.0,2.0,2.0,2.0,1.0\n"


@pytest.mark.parametrize("program, text, error", [
    ("L = 2*x", "\n\nx,z\n1,2\n", "<stdin>:3:3: error: the column 'z' is not an input of the program"),
    ("L = 2*x", '\n{"x": 1, "z": 2}\n', "<stdin>:2:10: error: the column 'z' is not an input of the program"),
    ("L = x*y", "\n\n", "<stdin>:2:1: error: there are no rows: every line is blank"),
    ("L = x*y", "\n \n\t\n", "<stdin>:3:1: error: there are no rows: every line is blank"),
], ids=["csv-column-at-the-header", "jsonl-column-at-the-header", "two-blank", "three-blank"])
def test_errors_after_blank_lines_point_past_them(runner, program, text, error) -> None:
    result = _batch(runner, program, "-", input=text)
    assert result.exit_code == 1
    assert result.stderr.startswith(error)


@pytest.mark.parametrize("text", ['{"x": 1, "y": 2}\n{"x": 2, "y": 4}\n'], ids=["jsonl-stdin"])
def test_fit_reads_jsonl_from_stdin(runner, text) -> None:
    # loss = (w*x - y)**2 on y = 2x: the gradient is 0 at w = 2, the start, so w stays 2.
    result = runner.invoke(main, ["fit", "w = 2; loss = (w*x - y)**2", "--data", "-", "--steps", "2", "-q"],
                           input=text)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"w": 2.0}


def _sh_examples(text: str) -> list[str]:
    lines = [line.split("#")[0].strip() for line in text.splitlines()]
    return [line for line in lines if "autodiff batch" in line]


def _readme_batch_examples() -> list[str]:
    readme = (REPO / "README.md").read_text()
    section = readme.split("## `autodiff batch`", 1)[1].split("\n## ", 1)[0]
    return [example for block in re.findall(r"```sh\n(.*?)```", section, flags=re.S)
            for example in _sh_examples(block)]


def _help_batch_examples() -> list[str]:
    from autodiff_cli.cli.batch import batch_command

    return _sh_examples(batch_command.help.split("Examples:", 1)[1])


SH_EXAMPLES = [("readme", e) for e in _readme_batch_examples()] + [("help", e) for e in _help_batch_examples()]


def test_the_examples_are_found() -> None:
    """batch's help has sh examples (README's batch section, a short tour now, may have none: its
    console example is run by tests/test_docs.py)."""
    assert any(where == "help" for where, _e in SH_EXAMPLES)


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
@pytest.mark.parametrize("where, example", SH_EXAMPLES, ids=[f"{w}:{e}" for w, e in SH_EXAMPLES])
def test_sh_examples_of_batch_run(tmp_path, where, example) -> None:
    # model.ad and rows.csv stand for the regression sample; rows.jsonl holds the same rows.
    shutil.copy(SAMPLES / "regression.ad", tmp_path / "model.ad")
    shutil.copy(SAMPLES / "regression.csv", tmp_path / "rows.csv")
    with open(SAMPLES / "regression.csv") as rows:
        records = [{key: float(value) for key, value in row.items()} for row in csv.DictReader(rows)]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
    (tmp_path / "samples").symlink_to(SAMPLES)
    script = f'autodiff() {{ "{sys.executable}" -m autodiff_cli "$@"; }}\n{example}\n'
    result = subprocess.run(["sh", "-c", script], cwd=tmp_path, capture_output=True, text=True, check=False,
                            env={**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"})
    assert result.returncode == 0, result.stderr
    written = result.stdout if "> out.csv" not in example else (tmp_path / "out.csv").read_text()
    assert written.startswith(("x,y,L,", "x\tL\t", "{\"x\": ", "L ", "{\n")), written[:200]
    if "--to jsonl" in example:
        lines = [json.loads(line) for line in result.stdout.splitlines()]
        assert len(lines) == len(records)
        # L = (0.5*x - y)**2 row by row (w = 0.5, b = 0).
        assert [line["L"] for line in lines] == pytest.approx([(0.5 * r["x"] - r["y"]) ** 2 for r in records])


# --- 2. classic-Mac line ends ---------------------------------------------------------------


@pytest.mark.parametrize("text", ["x,y\r1,2\r3,4\r", "x,y\r1,2\r3,4", "x,y\r\n1,2\r3,4\n", "x,y\n1,2\r\r3,4\r\n"],
                         ids=["cr", "cr-no-last", "mixed-crlf-cr", "blank-cr-line"])
def test_cr_line_ends_are_read(runner, tmp_path, text) -> None:
    path = tmp_path / "cr.csv"
    path.write_bytes(text.encode())
    result = _batch(runner, "L = x*y", path)
    assert result.exit_code == 0, result.stderr
    # L = x*y: 2 and 12; dL/dx = y, dL/dy = x.
    assert result.stdout == "x,y,L,dL/dx,dL/dy\n1.0,2.0,2.0,2.0,1.0\n3.0,4.0,12.0,4.0,3.0\n"


@pytest.mark.parametrize("text", ["x,y\r1,2\r3,6\r"], ids=["cr"])
def test_fit_reads_cr_line_ends(runner, tmp_path, text) -> None:
    path = tmp_path / "cr.csv"
    path.write_bytes(text.encode())
    # w = 2 fits y = 2x exactly: no gradient, so it stays.
    result = runner.invoke(main, ["fit", "w = 2; loss = (w*x - y)**2", "--data", str(path), "--steps", "2", "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"w": 2.0}


class _Trickle(io.RawIOBase):
    """A stream handing out ``size`` bytes per read, so a CRLF can be cut between two reads."""

    def __init__(self, data: bytes, size: int) -> None:
        self.data, self.size = data, size

    def readable(self) -> bool:
        return True

    def read1(self, limit: int = -1) -> bytes:
        part, self.data = self.data[: self.size], self.data[self.size:]
        return part


@pytest.mark.parametrize("size", [1, 2, 3, 5], ids=["1", "2", "3", "5"])
def test_crlf_and_cr_cut_between_reads(size) -> None:
    from autodiff_cli.files.rows import RowReader

    reader = RowReader(_Trickle(b"x,y\r\n1,2\r\n3,4\r5,6\r", size), "t.csv", "csv")
    chunks = list(reader.chunks(["x", "y"], [], wait=True))
    assert [list(c.numbers["x"]) for c in chunks] == [[1.0, 3.0, 5.0]]
    assert [list(c.lines) for c in chunks] == [[2, 3, 4]]


# The lone CR ends line 2 inside the quoted cell, which goes on to line 3 (its text: "1\n2").
@pytest.mark.parametrize("text, where", [('x,y\n"1\r2",3\n', ("<stdin>:2:1: error: the column 'x' holds '1\\n2', "
                                                              "not a number")),
                                         ("x,y\n1,2\r3\n", "<stdin>:3:2: error: this line has 1 cell")],
                         ids=["cr-in-quotes", "lone-cr-mid-line"])
def test_a_lone_cr_ends_a_line_without_universal_newline_advice(runner, text, where) -> None:
    result = _batch(runner, "L = x*y", "-", input=text)
    assert result.exit_code == 1
    assert "universal-newline" not in result.stderr and "Traceback" not in result.stderr
    assert result.stderr.startswith(where)


# --- 3. numbers too small for a float -------------------------------------------------------


@pytest.mark.parametrize("args, text, place, count", [
    (["L = x*y", "-"], "x,y\n1e-400,2\n", "<stdin>:2:1: 1e-400", 1),
    (["L = x*y", "-"], "x,y\n3,4\n5,-1E-999\n1e-400,0\n", "<stdin>:3:3: -1E-999", 2),
    (["L = x*y", "-", "--keep", "x,y,id"], "x,y,id\n2,1e-400,a\n", "<stdin>:2:3: 1e-400", 1),
    (["L = x*y", "-"], 'x,y\n"1e-400",2\n', "<stdin>:2:1: 1e-400", 1),
    (["L = x*y", "-"], '{"x": 2, "y": 1e-400}\n', "<stdin>:1:15: 1e-400", 1),
    (["L = x*y", "-"], "x,y\n0." + "0" * 400 + "1,2\n", "<stdin>:2:1: 0.000", 1),
    (["L = x*y", "-", "--reduce", "sum"], "x,y\n1e-400,2\n", "<stdin>:2:1: 1e-400", 1),
], ids=["csv", "two-cells", "with-passthrough", "quoted", "jsonl", "many-zeros", "reduce"])
def test_underflow_is_warned_once_with_its_place(runner, args, text, place, count) -> None:
    result = _batch(runner, *args, input=text)
    assert result.exit_code == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "smallest float" in line]
    assert len(warnings) == 1, result.stderr
    assert warnings[0].startswith(f"warning: {place}")
    assert "so taken as 0" in warnings[0]
    assert (f"({count} such cells in all)" in warnings[0]) == (count > 1)


@pytest.mark.parametrize("text", ["x,y\n0,0\n0e-5,0.0\n1e-300,2\n"], ids=["zeros-and-tiny-but-representable"])
def test_no_underflow_warning_for_real_zeros(runner, text) -> None:
    result = _batch(runner, "L = x*y", "-", input=text)
    assert result.exit_code == 0, result.stderr
    assert "smallest float" not in result.stderr


def test_fit_warns_about_underflow(runner) -> None:
    result = runner.invoke(main, ["fit", "w = 2; loss = (w*x - y)**2", "--data", "-", "--steps", "1", "-q"],
                           input="x,y\n1,2\n1e-400,0\n")
    assert result.exit_code == 0, result.stderr
    assert "warning: <stdin>:3:1: 1e-400 is smaller than the smallest float" in result.stderr


# --- 3b. numbers too large for a float ------------------------------------------------------
# Read as inf, as float() reads them, so their rows fail; but the user wrote a number, not inf,
# so one warning (as for 1e-400) names the first such cell where it is written.

TOO_LARGE = "is too large for a float, so read as inf, and its row fails"
LONG_401 = "1" + "0" * 23 + "...(401 characters)..." + "0" * 12  # how a message shows 1 and 400 zeros


@pytest.mark.parametrize("args, text, place, count", [
    (["-"], "x,y\n1e400,2\n3,4\n", "<stdin>:2:1: 1e400", 1),
    (["-"], "x,y\n3,4\n5,-1E+999\n1e400,1\n", "<stdin>:3:3: -1E+999", 2),
    (["-", "--keep", "x,y,id"], "x,y,id\n2,1e400,a\n", "<stdin>:2:3: 1e400", 1),
    (["-"], "x,y\n3,4\n\n2,1e400\n", "<stdin>:4:3: 1e400", 1),
    (["-"], 'x,y\n"1e400",2\n', "<stdin>:2:1: 1e400", 1),
    (["-", "--from", "tsv"], "x\ty\n3\t1e400\n", "<stdin>:2:3: 1e400", 1),
    (["-"], "x,y\n1" + "0" * 400 + ",2\n", f"<stdin>:2:1: {LONG_401}", 1),
    (["-"], '{"x": 2, "y": 1e400}\n', "<stdin>:1:15: 1e400", 1),
    (["-"], '{"x": 2, "y": 1' + "0" * 400 + "}\n", f"<stdin>:1:15: {LONG_401}", 1),
    (["-"], '{"x": 2, "y": -1' + "0" * 5000 + "}\n",
     "<stdin>:1:15: -1" + "0" * 22 + "...(5,002 characters)..." + "0" * 12, 1),
    (["-", "--reduce", "sum"], "x,y\n1e400,2\n3,4\n", "<stdin>:2:1: 1e400", 1),
], ids=["csv", "two-cells", "with-passthrough", "blank-line", "quoted", "tsv", "400-digits", "jsonl", "jsonl-400-digit-integer",
        "jsonl-5000-digit-integer", "reduce"])
def test_overflow_is_warned_once_with_its_place(runner, args, text, place, count) -> None:
    result = _batch(runner, "L = x*y", *args, "--on-error", "skip", input=text)
    assert result.exit_code == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "too large" in line]
    more = f" ({count} such cells in all)" if count > 1 else ""
    assert warnings == [f"warning: {place} {TOO_LARGE}{more}"], result.stderr


@pytest.mark.parametrize("text, rows", [("x,y\ninf,2\n-Infinity,3\n+INF,4\n", 3),
                                        ('{"x": "Infinity", "y": 2}\n{"x": -Infinity, "y": 2}\n', 2)],
                         ids=["csv", "jsonl"])
def test_inf_written_as_inf_is_not_warned_about(runner, text, rows) -> None:
    result = _batch(runner, "L = x*y", "-", "--on-error", "skip", input=text)
    assert result.exit_code == 0, result.stderr
    assert result.stderr.startswith(f"warning: skipped {rows} of {rows} rows where the program failed; ")
    assert "too large" not in result.stderr


@pytest.mark.parametrize("text, place", [("x,y\n3,4\n1e400,2\n", "<stdin>:3:1: 1e400"),
                                         ('{"x": 3, "y": 4}\n{"x": 2, "y": 1e999}\n', "<stdin>:2:15: 1e999")],
                         ids=["csv", "jsonl"])
def test_a_run_stopped_by_an_overflow_says_what_was_written(runner, text, place) -> None:
    result = _batch(runner, "L = x*y", "-", input=text)
    assert result.exit_code == 1
    notes = [line for line in result.stderr.splitlines() if line.startswith("  note: ")]
    assert notes[1:] == [f"  note: {place} is too large for a float, so read as inf",
                         ("  note: --on-error skip leaves out the rows where the program fails; --on-error nan "
                          "writes NaN")], result.stderr


def test_fit_warns_about_overflow(runner) -> None:
    result = runner.invoke(main, ["fit", "w = 2; loss = (w*x - y)**2", "--data", "-", "--steps", "1", "-q"],
                           input="x,y\n1,2\n1e400,0\n")
    assert result.exit_code == 1
    assert result.stderr.startswith(f"warning: <stdin>:3:1: 1e400 {TOO_LARGE}\n")


# --- 4. a quote left open ---------------------------------------------------------------------


@pytest.mark.parametrize("text, line, column", [
    ('x,y\n1,"2\n', 2, 3), ('x,y\n1,"2', 2, 3), ('x,y\n1,"2\n3,4\n', 2, 3), ('x,y\n"1,2\n', 2, 1),
], ids=["last-line", "last-line-no-newline", "middle-line", "first-cell"])
def test_unclosed_quote_is_an_error_at_the_quote(runner, text, line, column) -> None:
    result = _batch(runner, "L = x*y", "-", input=text)
    assert result.exit_code == 1, result.stdout
    assert result.stderr.startswith(f"<stdin>:{line}:{column}: error: this line is not valid CSV: the quote here "
                                    "is never closed")


# --- 5. bytes that are not UTF-8 -------------------------------------------------------------

# The bytes, then the line and column of the bad byte, counted by hand in characters, and the
# line as the excerpt shows it: the bad byte as U+FFFD, as the program reader shows it.
NOT_UTF8 = [
    ("csv", "rows.csv", b"x,y\n1,2\n3,4\xff5\n6,7\n", 3, 4, "3,4\ufffd5"),  # "3,4", then the byte
    ("jsonl", "rows.jsonl", b'{"x": 1, "y": 2}\n{"x": 3, "y": 4\xff}\n', 2, 16,
     '{"x": 3, "y": 4\ufffd}'),  # '{"x": 3, "y": 4' is 15 characters
    ("after-a-two-byte-character", "rows.csv", b"x,y\n1,2\n\xc3\xa9,\xff\n", 3, 3, "\u00e9,\ufffd"),
    ("cr-line-ends", "rows.csv", b"x,y\r1,2\r3,\xff4\r", 3, 3, "3,\ufffd4"),
    ("crlf-line-ends", "rows.csv", b"x,y\r\n1,2\r\n3,\xff4\r\n", 3, 3, "3,\ufffd4"),
    ("byte-order-mark", "rows.csv", b"\xef\xbb\xbfx,y\n1,\xff\n", 2, 3, "1,\ufffd"),
    ("byte-order-mark-same-line", "rows.csv", b"\xef\xbb\xbfx,\xff\n1,2\n", 1, 3, "x,\ufffd"),  # the mark is no character
    ("cut-off-by-the-end", "rows.csv", b"x,y\n1,2\n3,\xc3", 3, 3, "3,\ufffd"),  # half of a two-byte character
]
HOW = [("file", lambda path: ["batch", "L = x*y", str(path)], None),
       ("stdin", lambda path: ["batch", "L = x*y", "-"], "stdin"),
       ("fit", lambda path: ["fit", "w = 1; L = (w*x - y)**2", "--data", str(path), "--steps", "1", "-q"], None)]


@pytest.mark.parametrize("how, command, feed", HOW, ids=[how for how, _c, _f in HOW])
@pytest.mark.parametrize("case, name, data, line, column, shown", NOT_UTF8, ids=[case[0] for case in NOT_UTF8])
def test_a_byte_that_is_not_utf8_is_placed_and_shown(runner, tmp_path, how, command, feed, case, name, data, line,
                                                     column, shown) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    result = runner.invoke(main, command(path), input=data if feed else None)
    assert result.exit_code == 1, result.stdout
    where = "<stdin>" if feed else str(path)
    byte = data[data.index(b"\xc3" if case == "cut-off-by-the-end" else b"\xff")]
    lines = result.stderr.splitlines()
    assert lines[0] == f"{where}:{line}:{column}: error: not valid UTF-8: byte 0x{byte:02x} cannot start or continue " \
                       "a character"
    assert lines[1:3] == [f" {line} | {shown}", f" {' ' * len(str(line))} | {' ' * (column - 1)}^"]
    assert lines[3] == "  hint: save the rows as UTF-8 text"


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64], ids=["1", "2", "3", "7", "64"])
@pytest.mark.parametrize("data, line, column, shown, byte", [
    (b"x,y\n1,2\n3,4\xc3\xa9\xff\n", 3, 5, "3,4\u00e9\ufffd", 0xFF),  # "3,4é" is 4 characters
    (b"x\n1\n\xc3\xff\n", 3, 1, "\ufffd\ufffd", 0xC3),  # a character begun, then a byte that cannot continue it
], ids=["after-a-character", "character-not-continued"])
def test_a_byte_that_is_not_utf8_is_placed_however_the_reads_cut_the_line(size, data, line, column, shown,
                                                                           byte) -> None:
    from autodiff_cli.files.rows import RowReader
    from autodiff_cli.errors import InputError

    with pytest.raises(InputError) as raised:
        reader = RowReader(_Trickle(data, size), "t.csv", "csv")
        list(reader.chunks(reader.columns, [], wait=True))
    error = raised.value
    assert (error.position.line, error.position.column) == (line, column)
    assert error.source.line(line) == shown
    assert error.message == f"not valid UTF-8: byte 0x{byte:02x} cannot start or continue a character"


# The program reader, whose way of placing the byte the rows reader shares: 'y = 2*' is 6
# characters, whatever comes before the first line.
@pytest.mark.parametrize("data", [b"y = 2*\xff\n", b"\xef\xbb\xbfy = 2*\xff\n", b"a = 1\r\ny = 2*\xff\r\n"],
                         ids=["plain", "byte-order-mark", "crlf"])
def test_a_program_file_byte_that_is_not_utf8_is_placed(runner, tmp_path, data) -> None:
    path = tmp_path / "bad.ad"
    path.write_bytes(data)
    result = runner.invoke(main, ["eval", str(path)])
    line = data.count(b"\n")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[:3] == [
        f"{path}:{line}:7: error: not valid UTF-8: byte 0xff cannot start or continue a character",
        f" {line} | y = 2*\ufffd", "   |       ^"]


# --- 6. quoted cells over several lines (RFC 4180) -------------------------------------------

# Text cells as JSON Lines give them; batch writes them to CSV or TSV and must read them back.
ROUND_TRIP_IDS = [("newline", "a\nb"), ("crlf", "a\r\nb"), ("blank-line", "a\n\nb"),
                  ("only-a-newline", "\n"), ("quote-and-newline", 'say "hi"\nthere'),
                  ("separators-and-newline", "x,y\tz\nw"), ("trailing-newline", "ab\n")]


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
@pytest.mark.parametrize("ident", [i for _n, i in ROUND_TRIP_IDS], ids=[n for n, _i in ROUND_TRIP_IDS])
def test_batch_reads_back_the_text_cells_it_writes(runner, tmp_path, fmt, ident) -> None:
    source = tmp_path / "ids.jsonl"
    source.write_text(json.dumps({"id": ident, "x": 1}) + "\n" + json.dumps({"id": 5, "x": 2}) + "\n")
    written = tmp_path / f"rows.{fmt}"
    first = _batch(runner, "L = x*2", source, "--keep", "id,x", "-o", written)
    assert first.exit_code == 0, first.stderr
    second = _batch(runner, "M = x*3", written, "--keep", "id,x,L,dL/dx", "--to", "jsonl")
    assert second.exit_code == 0, second.stderr
    rows = [json.loads(line) for line in second.stdout.splitlines()]
    # Text read from CSV passes through as text: the id 5 as "5", L = 2x, M = 3x.
    assert [(row["id"], row["x"], row["M"]) for row in rows] == [(ident, 1.0, 3.0), ("5", 2.0, 6.0)]


@pytest.mark.parametrize("lineterminator", ["\r\n", "\n"], ids=["python-default-crlf", "lf"])
def test_csv_written_by_pythons_csv_module_is_read(runner, tmp_path, lineterminator) -> None:
    path = tmp_path / "rows.csv"
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle, lineterminator=lineterminator)
        writer.writerows([["id", "x"], ["line one\nline two", 1], ["plain", 2], ['"quoted"\n', 3]])
    result = _batch(runner, "L = x*2", path, "--keep", "id,x", "--to", "jsonl")
    assert result.exit_code == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(row["id"], row["L"]) for row in rows] == [("line one\nline two", 2.0), ("plain", 4.0),
                                                       ('"quoted"\n', 6.0)]


# Places counted by hand.  Rows: id,x then '"a' / 'b",1' (lines 2-3), so the next row is line 4.
@pytest.mark.parametrize("text, expected", [
    ('id,x\n"a\nb",1\n"c",zz\n', "<stdin>:4:5: error: the column 'x' holds 'zz', not a number"),
    ('id,x\n"a\nb",zz\n', "<stdin>:3:4: error: the column 'x' holds 'zz', not a number"),  # 'b",' is 3 characters
    ('id,x\n"a\nb",1,2\n', ("<stdin>:3:7: error: this row (lines 2-3) has 3 cells, but the first line names 2 "
                            "columns")),  # 'b",1,2' is 6 characters
    ('id,x\r\n"a\r\nb",1\r\n"c",zz\r\n', "<stdin>:4:5: error: the column 'x' holds 'zz', not a number"),
    ('id,x\r"a\rb",1\r"c",zz\r', "<stdin>:4:5: error: the column 'x' holds 'zz', not a number"),
    ('id,x\n"a\n\n\nb",1\n\n"c",zz\n', "<stdin>:7:5: error: the column 'x' holds 'zz', not a number"),
], ids=["next-row", "same-row-later-line", "cell-count", "crlf", "cr", "blank-lines-inside-and-after"])
def test_lines_are_counted_through_quoted_line_breaks(runner, text, expected) -> None:
    result = _batch(runner, "L = x*2", "-", "--keep", "id,x", input=text)
    assert result.exit_code == 1, result.stdout
    assert result.stderr.startswith(expected + "\n"), result.stderr


def test_a_failing_row_after_a_quoted_line_break_names_its_line(runner) -> None:
    result = _batch(runner, "y = log(x)", "-", "--keep", "id,x", input='id,x\n"a\nb",1\n"c",-1\n')
    assert result.exit_code == 1
    assert "in <stdin> line 4: x=-1.0" in result.stderr  # the row 'c' starts on line 4


# The rows after the header, line by line: 2 '"a', 3 'b",1', 4 '"c",2', 5 '"d', 6 '', 7 'e",3', 8 'f,4'.
QUOTED_ROWS = b'id,x\n"a\nb",1\n"c",2\n"d\n\ne",3\nf,4\n'


@pytest.mark.parametrize("wait", [True, False], ids=["wait", "as-they-come"])
@pytest.mark.parametrize("read", [1, 4, 1000], ids=["1-byte-reads", "4-byte-reads", "one-read"])
@pytest.mark.parametrize("size", [1, 2, 3, 100], ids=["1-line", "2-lines", "3-lines", "100-lines"])
def test_a_quoted_cell_over_a_chunk_boundary(size, read, wait) -> None:
    from autodiff_cli.files.rows import RowReader

    reader = RowReader(_Trickle(QUOTED_ROWS, read), "t.csv", "csv")
    chunks = list(reader.chunks(["x"], ["id"], wait=wait, size=size))
    assert [i for chunk in chunks for i in chunk.passed["id"]] == ["a\nb", "c", "d\n\ne", "f"]
    assert [x for chunk in chunks for x in chunk.numbers["x"].tolist()] == [1.0, 2.0, 3.0, 4.0]
    assert [line for chunk in chunks for line in chunk.lines.tolist()] == [2, 4, 5, 8]
    if wait:  # fixed chunks, however the bytes arrive.  Two lines a chunk: [2, 3] holds row 2;
        # [4, 5] row 4, and gives line 5 back; [5, 6] ends no row, so [7, 8] are added: rows 5 and 8.
        expected = {1: [[2], [4], [5], [8]], 2: [[2], [4], [5, 8]], 3: [[2, 4], [5], [8]],
                    100: [[2, 4, 5, 8]]}[size]
        assert [chunk.lines.tolist() for chunk in chunks] == expected


@pytest.mark.parametrize("text, value", [('id,x\r\n"a\r\nb",1\r\n', "a\r\nb"), ('id,x\r"a\rb",1\r', "a\nb"),
                                         ('id,x\n"a\r\nb",1\n', "a\r\nb")],
                         ids=["crlf-kept", "lone-cr-is-a-line-end", "crlf-in-an-lf-file"])
def test_line_ends_inside_quotes(runner, text, value) -> None:
    result = _batch(runner, "L = x*2", "-", "--keep", "id,x", "--to", "jsonl", input=text)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["id"] == value


def test_a_column_name_over_two_lines(runner) -> None:
    result = _batch(runner, "L = x*2", "-", "--keep", "i\nd,x", "--to", "jsonl", input='"i\nd",x\n"a",1\n')
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"i\nd": "a", "x": 1.0, "L": 2.0, "dL/dx": 2.0}


@pytest.mark.parametrize("text, expected, note", [
    ('"id,x\n1,2\n', "<stdin>:1:1: error: the first line is not valid CSV: the quote here is never closed", None),
    ('id,x\n"a,1\nb,2\n"c",3\n', "<stdin>:4:2: error: this line is not valid CSV: ',' expected after '\"'",
     "the quoted cell this quote closes opened on line 2, column 1"),
    ("x,y\n1,\"2\n" + "3,4\n" * 40_000, ("<stdin>:2:3: error: this line is not valid CSV: the quote here is "
                                          "not closed within 131,072 characters"), None),
], ids=["header", "closed-by-a-later-quote", "longer-than-a-cell-may-be"])
def test_a_quote_that_runs_on_is_placed_where_it_opened(runner, text, expected, note) -> None:
    result = _batch(runner, "L = x*2", "-", "--keep", "id,x" if text.startswith(("id", '"id')) else "x,y",
                    input=text)
    assert result.exit_code == 1
    assert result.stderr.startswith(expected + "\n"), result.stderr
    if note:
        assert f"  note: {note}" in result.stderr.splitlines()


# A carriage return without a line feed reads back as a line end (classic Mac files), so a cell
# holding one is refused at write time, named by output row and column; JSON Lines keep it.
@pytest.mark.parametrize("fmt", ["csv", "tsv"])
@pytest.mark.parametrize("rows, where", [
    ([{"id": "a\rb", "x": 1}], "the 'id' cell of output row 1, 'a\\rb',"),
    ([{"id": "ok", "x": 1}, {"id": "ok\r\nfine", "x": 2}, {"id": "\r", "x": 3}],
     "the 'id' cell of output row 3, '\\r',"),
], ids=["first-row", "third-row"])
def test_a_lone_carriage_return_is_refused_when_writing(runner, tmp_path, fmt, rows, where) -> None:
    source = tmp_path / "ids.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    out = tmp_path / f"out.{fmt}"
    result = _batch(runner, "L = x*2", source, "--keep", "id,x", "-o", out)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: cannot write {where} as {fmt.upper()}: it holds a carriage return "
                                    "without a line feed, which would read back as a line end\n")
    assert not out.exists()
    kept = _batch(runner, "L = x*2", source, "--keep", "id,x", "--to", "jsonl")
    assert [json.loads(line)["id"] for line in kept.stdout.splitlines()] == [row["id"] for row in rows]


# --- 10. rows read from a terminal ----------------------------------------------------------


@pytest.mark.parametrize("args", [["batch", "y = 2*x", "-"], ["fit", "w = 1; L = (w*x)**2", "--data", "-",
                                                              "--steps", "1", "-q"]], ids=["batch", "fit"])
def test_reading_rows_at_a_terminal_says_so(runner, monkeypatch, args) -> None:
    from autodiff_cli.files import streams

    monkeypatch.setattr(streams, "stdin_is_terminal", lambda: True)
    result = runner.invoke(main, args, input="x\n1\n")
    assert result.exit_code == 0, result.stderr
    assert "reading the rows from the terminal; end them with Ctrl-D (Ctrl-C cancels)" in result.stderr


# /dev/null on stdin (cron, CI) brings no rows: a forgotten ROWS is the usage error a terminal
# gives, while '-' still reads it.  A subprocess each: CliRunner's stdin is a fake stream.
@pytest.mark.parametrize("args, stdin, status, message", [
    (["prog.ad"], "devnull", 2, "Error: no rows given: name a CSV, TSV or JSON Lines file, or pipe the rows in"),
    (["-e", "y = 2*x"], "devnull", 2,
     "Error: no rows given: name a CSV, TSV or JSON Lines file, or pipe the rows in"),
    (["prog.ad", "-"], "devnull", 1, "<stdin>:1:1: error: there are no rows: the input is empty"),
    (["prog.ad"], "file", 0, None),
    (["prog.ad"], "pipe", 0, None),
], ids=["no-rows", "expr-no-rows", "dash", "redirected-file", "pipe"])
def test_rows_from_dev_null_a_file_or_a_pipe(tmp_path, args, stdin, status, message) -> None:
    (tmp_path / "prog.ad").write_text("y = 2*x\n")
    rows = tmp_path / "rows.csv"
    rows.write_text("x\n1\n2\n")
    with open(rows) as handle:
        given = {"devnull": {"stdin": subprocess.DEVNULL}, "file": {"stdin": handle},
                 "pipe": {"input": rows.read_text()}}[stdin]
        result = subprocess.run([sys.executable, "-m", "autodiff_cli", "batch", *args], cwd=tmp_path, text=True,
                                capture_output=True, check=False, env={**os.environ, "PYTHONPATH": str(REPO)},
                                **given)
    assert result.returncode == status, result.stderr
    if message is None:
        assert result.stdout == "x,y,dy/dx\n1.0,2.0,2.0\n2.0,4.0,2.0\n"
    else:
        lines = result.stderr.splitlines()
        assert (lines[-1] if status == 2 else lines[0]) == message  # a usage error ends with it


@pytest.mark.parametrize("cut", [8, 9, 10, 11, 12], ids=["8", "9", "10", "11", "12"])
def test_underflow_cut_between_reads_is_still_found(cut) -> None:
    from autodiff_cli.files.rows import RowReader

    data = b"x,y\n3,1e-400\n"  # the cell starts at byte 6
    reader = RowReader(_Trickle(data, cut), "t.csv", "csv")
    list(reader.chunks(["x", "y"], [], wait=True))
    assert reader.underflows.warning() == ("t.csv:2:3: 1e-400 is smaller than the smallest float (about 5e-324), "
                                           "so taken as 0")


# loadtxt, the fast path for all-number chunks, took '"1"2' as 12 and a no-break space after a
# number as nothing, where the csv module refuses both: the file's layout (a blank line, a column
# kept as text) decided which read it got.
@pytest.mark.parametrize("body, message", [
    ('"1"2,3\n', "2:4: error: this line is not valid CSV: ',' expected after '\"'"),
    ("1\u00a0,3\n", "2:1: error: the column 'x' holds '1\\xa0', not a number"),
    ("1,\u20033\n", "2:3: error: the column 'y' holds '\\u20033', not a number"),
    ("1\x1c,3\n", "2:1: error: the column 'x' holds '1\\x1c', not a number"),
], ids=["glued-quote", "no-break-space", "em-space", "file-separator"])
@pytest.mark.parametrize("layout", ["plain", "trailing-blank-line", "kept-text-column"])
def test_a_malformed_cell_is_refused_whatever_the_layout(runner, tmp_path, body, message, layout) -> None:
    rows = tmp_path / "rows.csv"
    header, keep = "x,y", []
    if layout == "trailing-blank-line":
        body += "\n"
    elif layout == "kept-text-column":
        header, body, keep = "x,y,id", body.replace("\n", ",a\n"), ["--keep", "x,y,id"]
    rows.write_text(f"{header}\n{body}", encoding="utf-8")
    result = _batch(runner, "L = x*y", rows, *keep)
    assert result.exit_code == 1
    assert f"{rows}:{message}" in result.stderr


@pytest.mark.parametrize("text", ['x,y\n"1","2"\n3,"4"\n', 'x\ty\n"1"\t"2"\n3\t"4"\n'], ids=["csv", "tsv"])
def test_whole_quoted_numbers_are_read(runner, tmp_path, text) -> None:
    rows = tmp_path / ("rows.tsv" if "\t" in text else "rows.csv")
    rows.write_text(text)
    result = _batch(runner, "L = x*y", rows, "--to", "csv")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "x,y,L,dL/dx,dL/dy\n1.0,2.0,2.0,2.0,1.0\n3.0,4.0,12.0,4.0,3.0\n"


@pytest.mark.parametrize("command", ["batch", "fit"])
@pytest.mark.parametrize("where", ["stdin", "file-without-extension"])
def test_parquet_bytes_where_text_rows_are_expected_are_named(runner, tmp_path, command, where) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = tmp_path / "rows.bin"
    pq.write_table(pa.table({"x": [1.0, 2.0], "y": [3.0, 4.0]}), rows)
    source = ["L = x*y"] if command == "batch" else ["w = 0\nL = (w*x - y)**2", "--data"]
    given = ["-"] if where == "stdin" else [str(rows)]
    result = runner.invoke(main, [command, *source, *given], input=rows.read_bytes() if where == "stdin" else None)
    assert result.exit_code == 1
    if where == "stdin":
        assert result.stderr.startswith("error: the rows on standard input are Parquet, which cannot be read from there")
    else:
        assert result.stderr.startswith(f"{rows}: error: {rows} holds Parquet, not text rows")
        assert "give --from parquet" in result.stderr


# --- 7. a tensor input's data that is no tensor (issue 35) ----------------------------------------
# Said at the data's line and key (or column), not as a shape error in the program (`x @ W: [] @ ...`).

TENSOR_PROGRAM = "W = [[1], [2]]\nx = [0, 0]\ny = sum(x @ W)\n"


@pytest.mark.parametrize("first, said", [
    ("[]", "the key 'x' holds [], an empty array, not a number or an array of numbers"),
    ("null", "the key 'x' holds null, not a number"),
    ('"1, 2"', "the key 'x' holds \"1, 2\", not a number"),
    ("[true, false]", ("the key 'x' holds [true, false], an array holding more than numbers, not a number or an "
                       "array of numbers")),
    ('{"a": 1, "b": 2}', "the key 'x' holds {\"a\": 1, \"b\": 2}, an object, not a number or an array of numbers"),
    ("[[1], [2, 3]]", "the key 'x' holds [[1], [2, 3]], an array whose rows differ in length"),
], ids=["empty", "null", "string", "booleans", "object", "ragged"])
def test_a_first_line_whose_array_is_no_tensor_is_an_error_in_the_data(runner, first, said) -> None:
    result = _batch(runner, TENSOR_PROGRAM, "-", "--from", "jsonl", input=f'{{"x": {first}}}\n{{"x": [1, 2]}}\n')
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"<stdin>:1:2: error: {said}"), result.stderr
    assert "@" not in result.stderr and result.stdout == ""


@pytest.mark.parametrize("kind", ["list", "fixed-size list", "struct"])
def test_a_parquet_column_of_lists_or_structs_is_an_error_in_the_data(runner, tmp_path, kind) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    arrays = {"list": pa.array([[1.0, 2.0], [3.0, 4.0]]),
              "fixed-size list": pa.array([[1.0, 2.0], [3.0, 4.0]], type=pa.list_(pa.float64(), 2)),
              "struct": pa.array([{"a": 1.0, "b": 2.0}, {"a": 3.0, "b": 4.0}])}
    pq.write_table(pa.table({"x": arrays[kind]}), tmp_path / "rows.parquet")
    result = _batch(runner, TENSOR_PROGRAM, tmp_path / "rows.parquet")
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"{tmp_path / 'rows.parquet'}: error: the column 'x' of ") and \
        "values, not numbers" in result.stderr, result.stderr
    assert "hint: give a tensor input one numeric column per entry (x[0], x[1], ..." in result.stderr
    assert "@" not in result.stderr.splitlines()[0]


def test_a_number_too_large_inside_a_jsonl_array_is_noted_where_it_is_written(runner) -> None:
    result = _batch(runner, "y = sum(x)", "-", "--from", "jsonl", "--on-error", "skip",
                    input='{"x": [2, 3]}\n{"x": [1, -1e400]}\n')
    assert result.exit_code == 0, result.stderr
    assert f"warning: <stdin>:2:11: -1e400 {TOO_LARGE}" in result.stderr
    stopped = _batch(runner, "y = sum(x)", "-", "--from", "jsonl", input='{"x": [1e400, 1]}\n')
    assert stopped.exit_code == 1
    assert "  note: <stdin>:1:8: 1e400 is too large for a float, so read as inf" in stopped.stderr
