"""ARCHITECTURE.md names the package as it is: every module once in its layer's row, none that is gone.

The layer table has a row per layer (``| `engine` | ... |``); each module of a layer is named in
that row by its path inside the layer (``ops.py``, ``rows/reader.py``).  A module beside the
layers is named by its path in the package (``autodiff_cli/nn.py``).  The other way round, every
``something.py`` the file names and every dotted name that starts with a layer
(``analysis.steps.explain_program``) must point at something in the tree, so a module that was
merged away cannot stay in the text.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "autodiff_cli"
DOC = REPO / "ARCHITECTURE.md"
LAYERS = ("errors", "engine", "language", "execute", "analysis", "render", "files", "cli")
# Where a file named outside the package may be: the repository, its tests and its benchmarks.
OTHER_ROOTS = (REPO, REPO / "tests", REPO / "benchmarks")

CODE = re.compile(r"`([^`\n]+)`")
PY_FILE = re.compile(r"[\w/.]*\w\.py$")
DOTTED = re.compile(r"^[a-z_]+(\.\w+)+$")


def layer_rows(text: str) -> dict[str, str]:
    """Each layer's row of the table, by layer."""
    rows = {}
    for line in text.splitlines():
        match = re.match(r"\| `(\w+)` \|", line)
        if match and match.group(1) in LAYERS:
            rows[match.group(1)] = line
    return rows


def code_spans(text: str) -> list[str]:
    return CODE.findall(text)


def package_modules() -> list[Path]:
    """Every source module of the package, packages' ``__init__.py`` aside (a layer's package is its
    row), and files generated at build time (``engine/_native.py``, never committed) aside."""
    modules = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "__init__.py" and path.parent != PACKAGE:
            continue
        if path.name.startswith("_") and path.name not in ("__init__.py", "__main__.py"):
            continue
        modules.append(path)
    return modules


def missing_from(text: str, modules: list[Path]) -> list[str]:
    """The modules ``text`` does not name where it should: in their layer's row by their path
    inside the layer, or (beside the layers) anywhere by their path in the package."""
    rows = layer_rows(text)
    everywhere = set(code_spans(text))
    missing = []
    for path in modules:
        parts = path.relative_to(PACKAGE).parts
        if len(parts) == 1:
            named = parts[0][:-3] in rows if parts[0] == "errors.py" else f"autodiff_cli/{parts[0]}" in everywhere
        else:
            inside = "/".join(parts[1:])
            named = inside in code_spans(rows.get(parts[0], ""))
        if not named:
            missing.append(str(path.relative_to(REPO)))
    return missing


def _file_exists(name: str, layer: str | None) -> bool:
    if layer is not None and (PACKAGE / layer / name).is_file():
        return True
    candidates = [root / name for root in OTHER_ROOTS] + [PACKAGE / name]
    if layer is None:  # outside the table: a path inside any layer will do
        candidates += [PACKAGE / other / name for other in LAYERS]
    return any(path.is_file() for path in candidates)


def _dotted_exists(name: str) -> bool:
    """Whether ``layer.module...`` names a module or package of the tree, or a name written in the
    last module it reaches (defined or imported there)."""
    parts = name.split(".")
    here = PACKAGE
    for index, part in enumerate(parts):
        if (here / part).is_dir():
            here = here / part
            continue
        if (here / f"{part}.py").is_file():
            here = here / f"{part}.py"
            rest = parts[index + 1:]
            break
        rest = parts[index:]
        break
    else:
        return True
    if len(rest) > 1 or here.is_dir() and not (here / "__init__.py").is_file():
        return False  # one attribute at most: a class's method is not named this way
    if not rest:
        return True
    source = (here / "__init__.py" if here.is_dir() else here).read_text(encoding="utf-8")
    return re.search(rf"\b{re.escape(rest[0])}\b", source) is not None


def dangling(text: str) -> list[str]:
    """The ``something.py`` and ``layer.name`` spans of ``text`` that point at nothing."""
    rows = layer_rows(text)
    row_of_line = {line: layer for layer, line in rows.items()}
    gone = []
    for line in text.splitlines():
        layer = row_of_line.get(line)
        for span in code_spans(line):
            span = span.split("(")[0].strip()
            if "*" in span or "<" in span:
                continue  # a pattern (engine/tensor*.py, cli/<name>.py), not a file
            if PY_FILE.match(span):
                exists = _file_exists(span, layer)
            elif DOTTED.match(span) and span.split(".")[0] in LAYERS[1:]:
                exists = _dotted_exists(span)
            else:
                continue
            if not exists:
                gone.append(span)
    return gone


def test_every_module_is_named_in_its_layer() -> None:
    missing = missing_from(DOC.read_text(encoding="utf-8"), package_modules())
    assert not missing, f"ARCHITECTURE.md does not name these modules in their layer's row: {missing}"


def test_every_module_named_exists() -> None:
    gone = dangling(DOC.read_text(encoding="utf-8"))
    assert not gone, f"ARCHITECTURE.md names what is not in the tree: {gone}"


# --- the checks themselves, on made-up text ------------------------------------------------------

SAMPLE = """\
| layer | what | up |
| `engine` | `ops.py` the op table; `value.py` the Value | Values |
| `files` | `rows/reader.py` opening the rows | rows |
`autodiff_cli/nn.py` is a facade."""


def test_checker_finds_a_module_left_out_or_in_the_wrong_row() -> None:
    modules = [PACKAGE / "engine" / "ops.py", PACKAGE / "engine" / "graph.py", PACKAGE / "files" / "rows" / "reader.py",
               PACKAGE / "nn.py", PACKAGE / "optim.py"]
    assert missing_from(SAMPLE, modules) == ["autodiff_cli/engine/graph.py", "autodiff_cli/optim.py"]
    # ops.py written in another layer's row is not named in its own
    moved = SAMPLE.replace("`ops.py` the op table; ", "").replace("opening the rows", "opening; `ops.py`")
    assert "autodiff_cli/engine/ops.py" in missing_from(moved, modules)


@pytest.mark.parametrize("span, gone", [
    ("`tensor_steps.py`", True),  # merged into analysis/steps.py
    ("`analysis.tensor_steps`", True),
    ("`render.tensor_report`", True),
    ("`analysis.steps.no_such_function`", True),
    ("`steps.py`", False),
    ("`analysis.steps.explain_program`", False),
    ("`files.rows.writer_for`", False),
    ("`tests/test_architecture.py`", False),
    ("`bench_engine.py`", False),
    ("`engine/tensor*.py`", False),
])
def test_checker_finds_what_is_gone(span: str, gone: bool) -> None:
    assert dangling(f"Some text naming {span} in a sentence.") == ([span.strip("`")] if gone else [])


def test_a_row_resolves_its_files_in_its_own_layer() -> None:
    # render has a check.py and so does analysis; engine has none: ops.py is not a render module.
    assert dangling("| `render` | `check.py` and `ops.py` |") == ["ops.py"]


def test_no_command_asks_the_shape_of_its_program() -> None:
    # ARCHITECTURE.md: the library picks the backend; cli/ calls one entry and never branches on shapes.
    asking = [path.name for path in sorted((PACKAGE / "cli").glob("*.py"))
              if "runs_as_tensors" in path.read_text(encoding="utf-8")]
    assert not asking, f"these commands branch on runs_as_tensors; move the choice into the library: {asking}"
