"""CSV and TSV through pyarrow (files/rows/arrow_csv.py): the same numbers, the same text, the same
errors as the pure-Python path, checked against ``repr``, ``float`` and that path itself."""

from __future__ import annotations

import io
import struct

import numpy as np
import pytest

from autodiff_cli.cli import main
from autodiff_cli.errors import InputError
from autodiff_cli.files.rows.arrow_csv import SWITCH, ArrowBlocks
from autodiff_cli.files.rows.reader import RowReader
from autodiff_cli.files.rows.writers import RowWriter

pytest.importorskip("pyarrow.csv")


def _on(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    monkeypatch.setenv(SWITCH, "1" if path == "arrow" else "0")


@pytest.fixture
def arrow_blocks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The Arrow path turned on, and the sizes of the blocks Arrow's parser reads, as they happen."""
    _on(monkeypatch, "arrow")
    sizes: list[int] = []
    read = ArrowBlocks._read

    def counted(self, block: bytes):
        table = read(self, block)
        sizes.append(table.num_rows)
        return table

    monkeypatch.setattr(ArrowBlocks, "_read", counted)
    return sizes


def _awkward_floats() -> np.ndarray:
    """Random bit patterns (every exponent, subnormals, NaNs), ±0, ±inf, the extremes, and each
    power of ten with its neighbours (where repr and Arrow change layout)."""
    rng = np.random.default_rng(28)
    bits = rng.integers(0, 2**64 - 1, 200_000, dtype=np.uint64, endpoint=True)
    specials = [0.0, -0.0, float("nan"), float("inf"), float("-inf"), 5e-324, -5e-324, 2.2250738585072014e-308,
                2.225073858507201e-308, 1.7976931348623157e308, 1e308, 1e-308, 1e16, 1e15, 123456789.0,
                struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]]  # a NaN with its sign bit set
    for exponent in range(-324, 309):
        power = float(f"1e{exponent}")
        specials += [power, -power, float(np.nextafter(power, 0)), float(np.nextafter(power, np.inf)), 1.5 * power]
    whole = np.round(rng.standard_normal(10_000) * 10.0 ** rng.integers(0, 17, 10_000))
    return np.concatenate([bits.view(np.float64), np.array(specials), whole, rng.standard_normal(10_000)])


@pytest.mark.parametrize("width", [1, 3])
def test_numbers_are_written_as_repr_writes_them(monkeypatch, width) -> None:
    from autodiff_cli.files.rows.arrow_csv import delimited_bytes

    import pyarrow.csv as pa_csv

    values = _awkward_floats()
    values = values[:len(values) // width * width]
    rows = len(values) // width
    columns = {f"c{j}": values[j * rows:(j + 1) * rows] for j in range(width)}
    written = b"".join(delimited_bytes(columns, list(columns), ",", rows, pa_csv)).decode()
    expected = "".join(",".join(repr(float(columns[f"c{j}"][row])) for j in range(width)) + "\n"
                       for row in range(rows))
    assert written == expected


def test_numbers_are_read_as_float_reads_them(arrow_blocks, tmp_path) -> None:
    rng = np.random.default_rng(7)
    values = _awkward_floats()[::20]
    values = values[np.isfinite(values) & ((values == 0) | (np.abs(values) > 1e-300))]
    cells = [repr(v) for v in values.tolist()]
    cells += [f"{v:.25e}" for v in values[:2000].tolist()]  # more digits than a float holds: rounded
    cells += ["".join(map(str, rng.integers(0, 10, 30))) + "e-" + str(rng.integers(0, 300)) for _ in range(2000)]
    cells += ["+1", "1.", ".5", "-.5e+3", "1E5", "00012", " 7", "8 ", "inf", "-Infinity", "nan", "1e0001"]
    text = "x\n" + "\n".join(cells) + "\n"
    reader = RowReader(io.BytesIO(text.encode()), "n.csv", "csv")
    read = np.concatenate([chunk.numbers["x"] for chunk in reader.chunks(["x"], [], wait=True)])
    expected = np.array([float(cell) for cell in cells])
    assert read.view(np.uint64).tolist() == expected.view(np.uint64).tolist()  # to the bit
    assert sum(arrow_blocks) == len(cells)  # all of it read by Arrow


def _read_all(data: bytes, fmt: str = "csv", passed: tuple[str, ...] = (), size: int = 3, wait: bool = True):
    """Every chunk's numbers (as bits), passed cells and lines, and the warnings; or the error's text."""
    try:
        reader = RowReader(io.BytesIO(data), f"rows.{fmt}", fmt)
        numeric = [name for name in reader.columns if name not in passed]
        chunks = [({name: values.view(np.uint64).tolist() for name, values in chunk.numbers.items()},
                   chunk.passed, chunk.lines.tolist())
                  for chunk in reader.chunks(numeric, list(passed), wait=wait, size=size)]
        return chunks, reader.underflows.warning(), reader.overflows.warning()
    except InputError as error:
        return str(error), error.position


CLEAN = b"".join(b"%d,%r\n" % (i, i / 7) for i in range(1, 11))

ODD_INPUTS = {
    "clean": b"a,b\n" + CLEAN,
    "no final line break": b"a,b\n" + CLEAN.rstrip(b"\n"),
    "blank lines": b"a,b\n" + CLEAN[:20] + b"\n\n" + CLEAN[20:] + b"\n",
    "a blank first row": b"a,b\n\n" + CLEAN,
    "white space only line": b"a,b\n" + CLEAN + b"   \n",
    "spaces around numbers": b"a,b\n" + CLEAN + b" 1 ,\t2\n",
    "quoted cell late": b"a,b\n" + CLEAN + b'3,"4"\n' + CLEAN,
    "quoted cell over lines late": b"a,b,c\n" + CLEAN.replace(b"\n", b",x\n") + b'3,4,"x\ny"\n5,6,z\n',
    "quote never closed": b"a,b\n" + CLEAN + b'3,"4\n5,6\n',
    "crlf": b"a,b\r\n" + CLEAN.replace(b"\n", b"\r\n"),
    "crlf late": b"a,b\n" + CLEAN + CLEAN.replace(b"\n", b"\r\n"),
    "lone cr late": b"a,b\n" + CLEAN + b"1,2\r3,4\n",
    "bom": b"\xef\xbb\xbfa,b\n" + CLEAN,
    "bom mid file": b"a,b\n" + CLEAN + b"\xef\xbb\xbf1,2\n",
    "not utf-8 late": b"a,b\n" + CLEAN + b"1,2\xff\n",
    "utf-8 cut between reads": b"a,b\n" + CLEAN + "1,2é\n".encode(),
    "empty cell": b"a,b\n" + CLEAN + b"1,\n",
    "text cell": b"a,b\n" + CLEAN + b"1,two\n",
    "underscore": b"a,b\n" + CLEAN + b"1,1_0\n",
    "non-ASCII digit": b"a,b\n" + CLEAN + "1,\u0663\n".encode(),
    "too few cells": b"a,b\n" + CLEAN + b"1\n",
    "too many cells": b"a,b\n" + CLEAN + b"1,2,3\n",
    "under and overflow": b"a,b\n" + CLEAN + b"1,1e-400\n2,1e400\n3,0\n4,inf\n",
    "many zeros": b"a,b\n" + CLEAN + b"1,0." + b"0" * 330 + b"1\n",
    "nan and inf written": b"a,b\n" + CLEAN + b"nan,-inf\nNaN,Infinity\n",
    "C's nan(...)": b"a,b\n" + CLEAN + b"1,nan(1)\n",
    "header with spaces and quotes": b' "a" , b \n' + CLEAN,
    "separator at the end": b"a,b\n" + CLEAN + b"1,2,\n",
}


@pytest.mark.parametrize("data", ODD_INPUTS.values(), ids=ODD_INPUTS.keys())
@pytest.mark.parametrize("size", [3, 16_384])
def test_both_paths_read_the_same_rows_and_errors(monkeypatch, data, size) -> None:
    _on(monkeypatch, "python")
    expected = _read_all(data, size=size)
    _on(monkeypatch, "arrow")
    assert _read_all(data, size=size) == expected


def test_a_block_arrow_cannot_read_goes_back_from_its_first_line(arrow_blocks, monkeypatch) -> None:
    data = b"a,b\n" + CLEAN + b'1,"2"\n' + CLEAN
    _on(monkeypatch, "python")
    expected = _read_all(data, size=4)
    _on(monkeypatch, "arrow")
    assert _read_all(data, size=4) == expected
    assert arrow_blocks == [4, 4]  # lines 2-5 and 6-9; lines 10 on (with the quote in line 12) the csv module's


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_text_columns_pass_through_on_both_paths(arrow_blocks, monkeypatch, fmt) -> None:
    separator = b"," if fmt == "csv" else b"\t"
    rows = [b"1", b" caf\xc3\xa9 ", b"", b"x y", b"-"]
    data = separator.join([b"a", b"note"]) + b"\n" + b"".join(b"%d%s%s\n" % (i, separator, r) for i, r in enumerate(rows))
    got = _read_all(data, fmt, passed=("note",), size=2)
    assert arrow_blocks == [2, 2, 1]
    assert [cell for chunk in got[0] for cell in chunk[1]["note"]] == [r.decode() for r in rows]
    _on(monkeypatch, "python")
    assert _read_all(data, fmt, passed=("note",), size=2) == got


class _Trickle(io.RawIOBase):
    """A stream that hands out a few bytes per read, as a slow pipe does."""

    def __init__(self, data: bytes, step: int) -> None:
        self.data, self.step = data, step

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        piece, self.data = self.data[:self.step], self.data[self.step:]
        buffer[:len(piece)] = piece
        return len(piece)


@pytest.mark.parametrize("step", [1, 5, 64])
def test_rows_that_trickle_in_read_the_same(monkeypatch, step) -> None:
    def read(data: bytes, path: str):
        _on(monkeypatch, path)
        try:
            reader = RowReader(_Trickle(data, step), "t.csv", "csv")
            chunks = list(reader.chunks(["a", "b"], [], wait=False, size=4))
        except InputError as error:
            return str(error)
        return (np.concatenate([c.lines for c in chunks]).tolist(),
                np.concatenate([c.numbers["b"] for c in chunks]).tolist())

    clean = b"a,b\n" + CLEAN + CLEAN
    assert read(clean, "arrow") == read(clean, "python") == (list(range(2, 22)), [i / 7 for i in range(1, 11)] * 2)
    broken = b"a,b\n" + CLEAN + b"1,2\xc3\n" + CLEAN
    assert read(broken, "arrow") == read(broken, "python")
    assert "t.csv:12:4: error: not valid UTF-8" in read(broken, "arrow")


def _written(columns: dict, names: list[str], fmt: str, size: int, **options) -> bytes:
    stream = io.BytesIO()
    writer = RowWriter(stream, fmt, names, **options)
    writer.header()
    writer.write(columns, size)
    return stream.getvalue()


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_both_paths_write_the_same_bytes(monkeypatch, fmt) -> None:
    values = _awkward_floats()
    size = len(values) // 2
    columns = {"a": values[:size], "b": values[size:2 * size], "same": 0.1, "one": np.float64(-0.0)}
    names = ["a", "same", "b", "one"]
    _on(monkeypatch, "arrow")
    arrow = _written(columns, names, fmt, size)
    _on(monkeypatch, "python")
    assert arrow == _written(columns, names, fmt, size)
    separator = "," if fmt == "csv" else "\t"
    first = arrow.decode().split("\n")[1]
    assert first == separator.join([repr(float(values[0])), "0.1", repr(float(values[size])), "-0.0"])


def test_batch_writes_the_same_bytes_on_both_paths(monkeypatch, runner, tmp_path) -> None:
    rng = np.random.default_rng(3)
    rows = tmp_path / "rows.csv"
    x = rng.standard_normal((5000, 2)) * 10.0 ** rng.integers(-12, 12, (5000, 2))
    rows.write_text("a,b\n" + "".join(f"{a!r},{b!r}\n" for a, b in x.tolist()))
    program = "h = tanh(a*0.3 + b*1e-7); y = h*h*1e11 + exp(-a*a)"
    outputs = {}
    for path in ("arrow", "python"):
        _on(monkeypatch, path)
        written = runner.invoke(main, ["batch", program, str(rows)], catch_exceptions=False)
        reduced = runner.invoke(main, ["batch", program, str(rows), "--reduce", "sum", "--format", "json"],
                                catch_exceptions=False)
        outputs[path] = (written.stdout, reduced.stdout)
    assert outputs["arrow"] == outputs["python"]
    assert outputs["arrow"][0].count("\n") == 5001


@pytest.mark.parametrize("ending", [b"", b"\n1,2\n"], ids=["at-the-end", "then-more-rows"])
def test_a_line_too_long_is_the_same_error_on_both_paths(monkeypatch, ending) -> None:
    from autodiff_cli.files.rows import arrow_csv, lines

    monkeypatch.setattr(lines, "MAX_LINE", 1000)  # 64 Mi characters in real life
    monkeypatch.setattr(arrow_csv, "MAX_LINE", 1000)
    data = b"a,b\n" + CLEAN + b"1," + b"2" * 3000 + ending

    def read(path: str) -> str:
        _on(monkeypatch, path)
        reader = RowReader(_Trickle(data, 256), "long.csv", "csv")
        with pytest.raises(InputError) as error:
            list(reader.chunks(["a", "b"], [], wait=True, size=4))
        return str(error.value)

    said = read("arrow")
    assert said == read("python")
    assert "line 12 is longer than 1,000 characters" in said
