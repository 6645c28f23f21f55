"""Rendering with the bundled graphviz-pure and the system Graphviz, choosing between them, and
writing files atomically."""

import os
import shutil
import stat
import struct
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from autodiff_cli.files.atomic import check_writable, write_atomic
from autodiff_cli.engine import Value
from autodiff_cli.errors import OutputError
from autodiff_cli.execute import evaluate
from autodiff_cli.language import parse
from autodiff_cli.render import backends as render
from autodiff_cli.render.backends import Renderer, RenderError, choose_renderer
from autodiff_cli.render.dot import to_digraph, to_dot

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
SVG = "{http://www.w3.org/2000/svg}"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# name -> (data, grad), worked by hand (see the sample files' comments).
KARPATHY = {"a": ("2.0000", "6.0000"), "b": ("-3.0000", "-4.0000"), "c": ("10.0000", "-2.0000"),
            "e": ("-6.0000", "-2.0000"), "d": ("4.0000", "-2.0000"), "f": ("-2.0000", "4.0000"),
            "L": ("-8.0000", "1.0000")}
NEURON = {"x1": ("2.0000", "-1.5000"), "w1": ("-3.0000", "1.0000"), "x2": ("0.0000", "0.5000"),
          "w2": ("1.0000", "0.0000"), "b": ("6.8814", "0.5000"), "n": ("0.8814", "0.5000"),
          "o": ("0.7071", "1.0000")}

no_system_dot = pytest.mark.skipif(shutil.which("dot") is None,
                                   reason="the system Graphviz 'dot' is not installed")
posix_only = pytest.mark.skipif(os.name == "nt", reason="uses a shell script as a fake renderer")


def dot_of(name: str) -> str:
    path = SAMPLES / f"{name}.ad"
    return to_dot(evaluate(parse(path.read_text(), str(path))))


def svg_records(svg: bytes) -> dict[str, list[str]]:
    """For each node drawn as a record, its first text (the name) -> the texts after it."""
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    found = {}
    for group in root.iter(f"{SVG}g"):
        if group.get("class") != "node":
            continue
        texts = [(t.text or "").strip() for t in group.iter(f"{SVG}text")]
        if len(texts) > 1:
            found[texts[0]] = texts[1:]
    return found


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_SIGNATURE
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    return struct.unpack(">II", data[16:24])


def backends() -> list:
    return [
        pytest.param("bundled", id="bundled"),
        pytest.param("system", id="system", marks=no_system_dot),
    ]


# --- both backends -----------------------------------------------------------------------------


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize(("sample", "expected"), [("karpathy", KARPATHY), ("neuron", NEURON)])
def test_svg_shows_every_named_variable(backend, sample, expected) -> None:
    found = svg_records(render.render(dot_of(sample), "svg", backend))
    for name, (data, grad) in expected.items():
        assert found.get(name) == [f"data {data}", f"grad {grad}"], name


@pytest.mark.parametrize("backend", backends())
def test_png_has_a_signature_and_a_size(backend) -> None:
    width, height = png_size(render.render(dot_of("karpathy"), "png", backend))
    # Seven records side by side in four ranks: wider than tall, and more than a thumbnail.
    assert width > height > 0
    assert width > 300


@pytest.mark.parametrize("backend", backends())
def test_labels_show_literally(backend) -> None:
    a = Value(1.0, label='a{b}|<c> "d" \\e & f')
    b = Value(2.0, label="<x>")
    y = a * b
    y.label = "ü"
    y.backward()
    found = svg_records(render.render(to_digraph(y).source, "svg", backend))
    assert found == {
        'a{b}|<c> "d" \\e & f': ["data 1.0000", "grad 2.0000"],
        "<x>": ["data 2.0000", "grad 1.0000"],
        "ü": ["data 2.0000", "grad 1.0000"],
    }


@pytest.mark.parametrize("backend", backends())
def test_same_svg_bytes_in_two_processes(backend) -> None:
    code = ("import sys; from autodiff_cli.render import backends as render; "
            "sys.stdout.buffer.write(render.render(sys.stdin.read(), 'svg', sys.argv[1]))")
    source = dot_of("neuron_exp")
    env = {**os.environ, "PYTHONPATH": str(SAMPLES.parent)}
    runs = [subprocess.run([sys.executable, "-c", code, backend], input=source.encode(), capture_output=True,
                           check=True, env=env).stdout for _ in range(2)]
    assert runs[0] == runs[1]
    assert runs[0] == render.render(source, "svg", backend)
    assert runs[0].startswith(b"<?xml")


@no_system_dot
def test_system_pdf() -> None:
    data = render.render(dot_of("karpathy"), "pdf", "system")
    assert data.startswith(b"%PDF-") and b"%%EOF" in data[-1024:]


@no_system_dot
def test_system_pdf_has_a_fixed_creation_date(monkeypatch) -> None:
    # cairo stamps the time of the run; it is replaced digit for digit.
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    data = render.render(dot_of("karpathy"), "pdf", "system")
    assert b"/CreationDate (D:19700101000000" in data
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")  # 2023-11-14 22:13:20 UTC
    later = render.render(dot_of("karpathy"), "pdf", "system")
    assert b"/CreationDate (D:20231114221320" in later
    assert len(later) == len(data)


@no_system_dot
@pytest.mark.parametrize("zone", ["Asia/Tokyo", "America/New_York", "UTC"], ids=["tokyo", "new-york", "utc"])
def test_system_pdf_is_the_same_in_every_time_zone(monkeypatch, zone) -> None:
    # cairo wrote the local offset after the date: +09'00 in Tokyo, Z in UTC.
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    monkeypatch.delenv("TZ", raising=False)
    here = render.render(dot_of("karpathy"), "pdf", "system")
    monkeypatch.setenv("TZ", zone)
    assert render.render(dot_of("karpathy"), "pdf", "system") == here
    assert b"/CreationDate (D:19700101000000Z)" in here


@pytest.mark.parametrize(
    ("epoch", "stamp"),
    [("99999999999999999999", b"99991231235959"), ("1e400", b"19700101000000"), ("-5", b"19700101000000"),
     ("253402300800", b"99991231235959"), ("not a number", b"19700101000000"), ("", b"19700101000000")],
    ids=["huge", "float_text", "negative", "year_10000", "text", "empty"],
)
def test_any_source_date_epoch_gives_a_fourteen_digit_date(monkeypatch, epoch, stamp) -> None:
    # The date is replaced digit for digit (the PDF's byte offsets must stay right), so it
    # must stay 14 digits whatever the variable says; and no value may raise.
    monkeypatch.setenv("SOURCE_DATE_EPOCH", epoch)
    pdf = b"%PDF-1.5 /CreationDate (D:20240102030405+00'00) trailer"
    fixed = render._reproducible(pdf)
    assert fixed == pdf.replace(b"20240102030405", stamp)


def test_bundled_is_found_next_to_this_python() -> None:
    program = render.bundled_program()
    assert program is not None
    assert Path(program).parent == Path(sys.executable).parent
    assert choose_renderer("svg", "bundled") == Renderer("bundled", program)


# --- choosing a backend ------------------------------------------------------------------------


@pytest.fixture
def without_system_dot(monkeypatch):
    monkeypatch.setattr(render, "system_program", lambda: None)


def test_auto_prefers_the_system_dot(monkeypatch) -> None:
    monkeypatch.setattr(render, "system_program", lambda: "/opt/graphviz/bin/dot")
    assert choose_renderer("svg") == Renderer("system", "/opt/graphviz/bin/dot")
    assert choose_renderer("pdf") == Renderer("system", "/opt/graphviz/bin/dot")


def test_auto_falls_back_to_the_bundled_renderer(without_system_dot) -> None:
    assert choose_renderer("svg").name == "bundled"
    assert choose_renderer("png", "auto").name == "bundled"


def test_pdf_without_system_graphviz_says_how_to_install_it(without_system_dot) -> None:
    with pytest.raises(RenderError) as caught:
        choose_renderer("pdf")
    assert "PDF output needs the system Graphviz" in caught.value.message
    assert "apt-get install graphviz" in caught.value.hint
    assert "brew install graphviz" in caught.value.hint
    assert "--format svg|png" in caught.value.hint


def test_bundled_cannot_write_pdf() -> None:
    with pytest.raises(RenderError, match="cannot write PDF") as caught:
        choose_renderer("pdf", "bundled")
    assert "apt-get install graphviz" in caught.value.hint


def test_system_asked_for_but_missing(without_system_dot) -> None:
    with pytest.raises(RenderError, match="'dot' program is not on PATH") as caught:
        choose_renderer("svg", "system")
    assert "--renderer bundled" in caught.value.hint


def test_bundled_missing(monkeypatch, without_system_dot) -> None:
    monkeypatch.setattr(render, "bundled_program", lambda: None)
    with pytest.raises(RenderError, match="not installed") as caught:
        choose_renderer("svg")
    assert "pip install graphviz-pure" in caught.value.hint


def test_unknown_format_or_renderer() -> None:
    with pytest.raises(RenderError, match="cannot render the format 'gif'"):
        choose_renderer("gif")
    with pytest.raises(RenderError, match="unknown renderer 'cairo'"):
        choose_renderer("svg", "cairo")


@posix_only
def test_bundled_search_order(tmp_path, monkeypatch) -> None:
    def executable(path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
        return path

    monkeypatch.setattr(sys, "executable", str(tmp_path / "venv" / "bin" / "python"))
    monkeypatch.setattr(render.sysconfig, "get_path", lambda name: str(tmp_path / "scripts"))
    monkeypatch.setenv("PATH", str(tmp_path / "path"))
    assert render.bundled_program() is None
    on_path = executable(tmp_path / "path" / "graphviz-pure")
    assert render.bundled_program() == str(on_path)
    in_scripts = executable(tmp_path / "scripts" / "graphviz-pure")
    assert render.bundled_program() == str(in_scripts)
    beside_python = executable(tmp_path / "venv" / "bin" / "graphviz-pure")
    assert render.bundled_program() == str(beside_python)


# --- failures become RenderError ---------------------------------------------------------------


# Shell built-ins only, so the fakes work whatever PATH holds; a loop rather than `sleep`,
# which would be a child process still holding the pipes after the shell is killed.
BUSY = "while :; do :; done"


def fake_renderer(tmp_path: Path, script: str) -> Renderer:
    program = tmp_path / "fake-dot"
    program.write_text("#!/bin/sh\n" + script + "\n")
    program.chmod(0o755)
    return Renderer("bundled", str(program))


def test_invalid_dot_is_a_render_error() -> None:
    with pytest.raises(RenderError) as caught:
        render.render("digraph { a -> }", "svg", "bundled")
    assert caught.value.message.startswith("the bundled renderer (")
    assert "failed to render SVG" in caught.value.message
    assert caught.value.hint


@posix_only
def test_a_failing_renderer_reports_its_message(tmp_path) -> None:
    renderer = fake_renderer(tmp_path, "echo 'Error: out of memory' >&2; echo detail >&2; exit 3")
    with pytest.raises(RenderError) as caught:
        render.render("digraph {}", "svg", renderer)
    assert caught.value.message.endswith("failed to render SVG: Error: out of memory")
    assert caught.value.notes == ["detail"]


@posix_only
def test_no_output_is_a_failure(tmp_path) -> None:
    with pytest.raises(RenderError, match="failed to render PNG: no output"):
        render.render("digraph {}", "png", fake_renderer(tmp_path, "exit 0"))


@posix_only
def test_a_renderer_that_hangs_is_stopped(tmp_path) -> None:
    with pytest.raises(RenderError, match="did not finish within 0.3 seconds") as caught:
        render.render("digraph {}", "svg", fake_renderer(tmp_path, BUSY), timeout=0.3)
    assert "--format dot" in caught.value.hint


def test_a_renderer_that_cannot_run(tmp_path) -> None:
    with pytest.raises(RenderError, match="cannot run the bundled renderer"):
        render.render("digraph {}", "svg", Renderer("bundled", str(tmp_path / "missing")))


def test_a_backend_asked_for_a_format_it_lacks() -> None:
    with pytest.raises(RenderError, match="cannot write PDF"):
        render.render("digraph {}", "pdf", Renderer("bundled", "graphviz-pure"))


# --- atomic writes -----------------------------------------------------------------------------


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_write_creates_the_file_with_the_usual_permissions(tmp_path) -> None:
    target = tmp_path / "graph.svg"
    write_atomic(target, b"<svg/>")
    assert target.read_bytes() == b"<svg/>"
    umask = os.umask(0)
    os.umask(umask)
    if os.name != "nt":
        assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
    assert leftovers(tmp_path) == []


@posix_only
def test_write_replaces_and_keeps_the_mode(tmp_path) -> None:
    target = tmp_path / "graph.svg"
    target.write_bytes(b"old")
    target.chmod(0o640)
    write_atomic(str(target), b"new")
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


@pytest.mark.parametrize("failing", ["replace", "fsync"])
def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch, failing) -> None:
    target = tmp_path / "graph.png"
    target.write_bytes(b"old picture")

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, failing, fail)
    with pytest.raises(OutputError) as caught:
        write_atomic(target, b"new picture")
    assert caught.value.message == f"cannot write {target}: No space left on device"
    assert target.read_bytes() == b"old picture"
    assert leftovers(tmp_path) == []


def test_a_failed_first_write_leaves_nothing(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError(5, "I/O error")))
    with pytest.raises(OutputError):
        write_atomic(tmp_path / "new.svg", b"data")
    assert list(tmp_path.iterdir()) == []


def test_writing_over_a_directory_fails_cleanly(tmp_path) -> None:
    (tmp_path / "out").mkdir()
    with pytest.raises(OutputError, match="cannot write"):
        write_atomic(tmp_path / "out", b"data")
    assert leftovers(tmp_path) == []
    assert (tmp_path / "out").is_dir()


@posix_only
def test_a_symbolic_link_is_followed(tmp_path) -> None:
    real = tmp_path / "real.svg"
    real.write_bytes(b"old")
    link = tmp_path / "link.svg"
    link.symlink_to(real)
    write_atomic(link, b"new")
    assert link.is_symlink() and real.read_bytes() == b"new"


def test_check_writable(tmp_path) -> None:
    check_writable(str(tmp_path / "fine.svg"))
    with pytest.raises(OutputError, match="it is a directory"):
        check_writable(str(tmp_path))
    with pytest.raises(OutputError, match="does not exist") as caught:
        check_writable(str(tmp_path / "missing" / "graph.svg"))
    assert caught.value.hint


@posix_only
def test_a_pipe_is_written_to_not_replaced(tmp_path) -> None:
    fifo = tmp_path / "graph.svg"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    write_atomic(fifo, b"<svg/>")
    reader.join(timeout=10)
    assert received == [b"<svg/>"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert leftovers(tmp_path) == []


def test_a_read_only_file_is_refused_and_kept(tmp_path, monkeypatch) -> None:
    target = tmp_path / "graph.svg"
    target.write_bytes(b"old")
    # What the OS answers for a file without write permission (root is allowed anyway, as by `>`).
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with pytest.raises(OutputError, match="the file is read-only") as caught:
        write_atomic(target, b"new")
    assert "chmod" in caught.value.hint
    with pytest.raises(OutputError, match="the file is read-only"):
        check_writable(str(target))
    assert target.read_bytes() == b"old"
    assert leftovers(tmp_path) == []
