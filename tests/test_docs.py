"""The examples of README.md and docs/ are run and their output compared, so the docs cannot drift.

What is run (docs/development.md says the same, for writers):

- a ```console block: each line starting with ``$ `` is a command; the lines after it, up to the
  next command, are what it prints (its stdout, then its stderr).  The commands of one block run
  in order in one shell, in a fresh directory where ``samples/`` and ``benchmarks/`` are the
  repository's (``autodiff`` and ``python`` are this Python's), with the environment pytest was
  started in, as a user's shell has it (PATH, BLAS and colour settings), so a later
  command can read a file an earlier one wrote, and ``$ echo $?`` shows the previous status;
- a ```sh block: each line (a trailing ``  # comment`` removed) is run and must exit with
  status 0, in a fresh directory that holds ``samples/`` and stand-ins for the names the
  examples use (``model.ad``, ``rows.csv``, ``rows.jsonl``, ``params.json``);
- a ```python block: executed, in such a directory, and must not raise;
- ```text and other blocks are not examples (program text, an illustration) and are not run.

Two comments, on the line before a block, change that:

- ``<!-- docs-test: skip REASON -->``: the block is not run (it installs something, needs a
  service, writes outside the directory); the test reports it as skipped with REASON;
- ``<!-- docs-test: numbers vary REASON -->`` (console blocks): the output is compared with
  every number and every run of spaces masked, for output that depends on the machine;
- ``<!-- docs-test: digits N REASON -->`` (console blocks): every number is compared to N
  significant digits (and runs of spaces as one), for full-precision output whose last digits the
  BLAS library decides (a matrix product's rounding differs between its kernels); the page says
  so beside the block.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from autodiff_cli.cli import main

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"
README = (REPO / "README.md").read_text()
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
SH = shutil.which("sh")

_BLOCK = re.compile(r"(?:<!-- docs-test: (?P<marker>[^>]*?) -->\n)?^```(?P<lang>[a-z]*)\n(?P<body>.*?)^```$",
                    re.S | re.M)
_MARKER = re.compile(r"(skip|numbers vary|digits \d+) (\S.*)")
_NUMBER = re.compile(r"[-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:e[-+]?\d+)?", re.I)


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    lang: str
    body: str
    marker: str  # "", "skip", "numbers vary" or "digits N"
    reason: str

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}:{self.lang}"


def _blocks(path: Path) -> list[Block]:
    text = path.read_text()
    found = []
    for match in _BLOCK.finditer(text):
        marker = reason = ""
        if match["marker"] is not None:
            parsed = _MARKER.fullmatch(match["marker"])
            assert parsed, f"{path.name}: a docs-test comment needs 'skip REASON', 'numbers vary REASON' or 'digits N REASON'"
            marker, reason = parsed.groups()
        line = text.count("\n", 0, match.start("lang")) + 1
        found.append(Block(str(path.relative_to(REPO)), line, match["lang"], match["body"], marker, reason))
    return found


BLOCKS = [block for page in PAGES for block in _blocks(page)]
CONSOLE = [block for block in BLOCKS if block.lang == "console"]
SH_BLOCKS = [block for block in BLOCKS if block.lang == "sh"]
PYTHON = [block for block in BLOCKS if block.lang == "python"]


def console_examples(block: Block) -> list[tuple[str, str]]:
    """(command, expected output) pairs of a console block."""
    examples: list[tuple[str, list[str]]] = []
    for line in block.body.splitlines():
        if line.startswith("$ "):
            examples.append((line[2:], []))
        else:
            assert examples, f"{block.id}: a console block starts with a '$ ' command"
            examples[-1][1].append(line)
    return [(command, "".join(out + "\n" for out in lines)) for command, lines in examples]


def _workdir(tmp_path: Path) -> Path:
    """A fresh directory with the samples, and stand-ins for the file names the examples use."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "samples").symlink_to(SAMPLES)
    (work / "benchmarks").symlink_to(REPO / "benchmarks")
    shutil.copy(SAMPLES / "regression.ad", work / "model.ad")
    shutil.copy(SAMPLES / "regression.csv", work / "rows.csv")
    lines = (SAMPLES / "regression.csv").read_text().split()
    header = lines[0].split(",")
    (work / "rows.jsonl").write_text("".join(
        json.dumps(dict(zip(header, map(float, row.split(","))))) + "\n" for row in lines[1:]))
    (work / "params.json").write_text('{"w": 2.0, "b": -1.0}\n')
    return work


def _environment() -> dict[str, str]:
    # The user's own environment, as their shell would have it: PATH (a system `dot` or not),
    # BLAS settings such as OPENBLAS_CORETYPE, colour settings.  An example whose output depends
    # on any of them says so with a marker ("numbers vary") instead of the test hiding it.
    return dict(os.environ)


def _script(commands: list[str], captures: Path) -> str:
    lines = [f'autodiff() {{ "{sys.executable}" -m autodiff_cli "$@"; }}', f'python() {{ "{sys.executable}" "$@"; }}']
    for number, command in enumerate(commands):
        lines.append(f"{{ {command}\n}} > {captures}/{number}.out 2> {captures}/{number}.err")
    return "\n".join(lines) + "\n"


def _masked(text: str) -> str:
    return re.sub(r"[ \t]+", " ", _NUMBER.sub("#", text))


def _to_digits(text: str, digits: int) -> str:
    """Every number rounded to ``digits`` significant digits, runs of spaces as one."""

    def rounded(match: re.Match[str]) -> str:
        written = match.group(0).replace(",", "")
        try:
            return f"{float(written):.{digits}g}"
        except ValueError:
            return written

    return re.sub(r"[ \t]+", " ", _NUMBER.sub(rounded, text))


def _skip_if_marked(block: Block) -> None:
    if block.marker == "skip":
        pytest.skip(f"marked in {block.page}: {block.reason}")


@pytest.mark.skipif(SH is None, reason="needs a POSIX shell")
@pytest.mark.parametrize("block", CONSOLE, ids=[block.id for block in CONSOLE])
def test_console_example_output_is_what_the_command_prints(tmp_path: Path, block: Block) -> None:
    _skip_if_marked(block)
    examples = console_examples(block)
    captures = tmp_path / "captures"
    captures.mkdir()
    work = _workdir(tmp_path)
    subprocess.run([SH, "-c", _script([command for command, _ in examples], captures)], cwd=work,
                   env=_environment(), check=False, timeout=600)
    for number, (command, expected) in enumerate(examples):
        printed = (captures / f"{number}.out").read_text() + (captures / f"{number}.err").read_text()
        if block.marker == "numbers vary":
            assert _masked(printed) == _masked(expected), command
        elif block.marker.startswith("digits "):
            digits = int(block.marker.split()[1])
            assert _to_digits(printed, digits) == _to_digits(expected, digits), command
        else:
            assert printed == expected, command


def _sh_lines(block: Block) -> list[str]:
    lines = [re.sub(r"\s+#\s.*$", "", line).strip() for line in block.body.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


SH_LINES = [(block, line) for block in SH_BLOCKS for line in _sh_lines(block)]


@pytest.mark.skipif(SH is None, reason="needs a POSIX shell")
@pytest.mark.parametrize("block, line", SH_LINES, ids=[f"{block.id}:{line}" for block, line in SH_LINES])
def test_sh_example_runs(tmp_path: Path, block: Block, line: str) -> None:
    _skip_if_marked(block)
    # Anything else (pip install, a server) must be marked, so that the test never runs it.
    assert line.startswith(("autodiff ", "cat ")), f"{block.id}: mark this block '<!-- docs-test: skip REASON -->'"
    captures = tmp_path / "captures"
    captures.mkdir()
    work = _workdir(tmp_path)
    run = subprocess.run([SH, "-c", _script([line], captures) + "exit $?\n"], cwd=work, env=_environment(),
                         check=False, timeout=600)
    assert run.returncode == 0, (captures / "0.err").read_text()


@pytest.mark.parametrize("block", PYTHON, ids=[block.id for block in PYTHON])
def test_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: Block) -> None:
    _skip_if_marked(block)
    monkeypatch.chdir(_workdir(tmp_path))
    exec(compile(block.body, block.id, "exec"), {"__name__": "__docs_example__"})


def test_the_examples_are_found() -> None:
    assert len(console_examples(CONSOLE[0])) >= 1
    assert {Path(block.page).name for block in CONSOLE} >= {"README.md", "eval.md", "check.md", "fit.md"}
    # Each marker names why; a skipped console block is the exception, not the rule.
    assert sum(block.marker == "skip" for block in CONSOLE) <= 2


def test_every_command_is_documented_in_readme_and_has_help() -> None:
    for name, command in main.commands.items():
        assert f"autodiff {name}" in README, name
        assert command.help and len(command.help) > 40, name


def test_every_command_has_a_page_in_the_site() -> None:
    nav = (REPO / "mkdocs.yml").read_text()
    for name in main.commands:
        assert (REPO / "docs" / f"{name}.md").is_file(), name
        assert f"{name}.md" in nav, name
        assert f"(docs/{name}.md)" in README, name


def test_every_exit_status_is_on_the_exit_codes_page() -> None:
    page = (REPO / "docs" / "exit-codes.md").read_text()
    for status in ("0", "1", "2", "3", "130", "143"):
        assert re.search(rf"^\| {status} \|", page, re.M), status


_LINK = re.compile(r"\]\((?!https?:|mailto:|#)([^)\s]+?)(?:#[^)]*)?\)")


@pytest.mark.parametrize("page", PAGES, ids=[str(page.relative_to(REPO)) for page in PAGES])
def test_relative_links_lead_to_files(page: Path) -> None:
    # mkdocs --strict checks docs/ too; this covers README.md, which is not part of the site.
    for target in _LINK.findall(page.read_text()):
        assert (page.parent / target).exists(), f"{page.name}: {target}"


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None,
                    reason="mkdocs and mkdocs-material are not installed (pip install '.[docs]'; the test extra "
                           "has them)")
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                            str(REPO / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
                           cwd=REPO, capture_output=True, text=True, check=False, timeout=600)
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "site" / "check" / "index.html").is_file()


def test_the_readme_tour_is_short_and_keeps_its_set_up() -> None:
    """Issue 36: the README is a tour of at most 250 lines (the rest lives in docs/), with its two
    set-up commands and the test command exactly as CI runs them."""
    assert len(README.splitlines()) <= 250
    assert "```sh\npip install . && autodiff eval samples/karpathy.ad\n```" in README
    assert "```sh\npip install \".[test]\" && pytest\n```" in README


def _silent_quiet_commands(block: Block) -> list[str]:
    """The commands run with --quiet that print nothing and whose output file no later command of
    the block shows (``fit --quiet -o m.json`` then ``batch ... --values m.json`` shows what fit made)."""
    examples = console_examples(block)
    silent = []
    for number, (command, expected) in enumerate(examples):
        if "--quiet" not in command or expected.strip():
            continue
        written = re.search(r"(?:-o|--output-file)\s+(\S+)", command)
        shown_later = written and any(written.group(1) in later for later, _ in examples[number + 1:])
        if not shown_later:
            silent.append(command)
    return silent


@pytest.mark.parametrize("block", [block for block in CONSOLE if block.marker != "skip"], ids=lambda block: block.id)
def test_a_quiet_example_shows_output(block: Block) -> None:
    """A command run with --quiet that shows nothing looks, when copied, as if it did nothing:
    show what it prints (drop --quiet) or what it wrote."""
    assert not _silent_quiet_commands(block), block.id
