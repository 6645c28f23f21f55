"""The package's layers and the direction of its imports, as ARCHITECTURE.md writes them down.

Each subpackage is a layer; a module may import its own layer and the layers below it,
never one above (imports inside functions and under TYPE_CHECKING count too).  The
engine imports only the standard library, except its tensor modules (``engine/tensor*.py``),
which may import NumPy.  The checker itself is tested on made-up
modules, so a broken checker cannot pass everything silently.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "autodiff_cli"

# Lowest first.  The top-level modules below are facades: the package itself, ``python -m``,
# the public ``autodiff_cli.nn`` / ``autodiff_cli.optim`` over the engine's nn and optim, and
# ``autodiff_cli.training`` (``autodiff_cli.fit``), which composes training as ``autodiff fit`` does.
LAYERS = ("errors", "engine", "language", "execute", "analysis", "render", "files", "cli")
# The engine's eager NumPy tensor (engine/tensor.py, tensor_ops.py, tensor_nn.py) may import numpy;
# every other engine module uses the standard library only.
ENGINE_NUMPY = re.compile(r"autodiff_cli\.engine\.tensor\w*")
FACADES = {"__init__", "__main__", "nn", "optim", "training"}


def layer_of(module: str) -> str | None:
    """The layer of a dotted module name inside the package (None for a facade)."""
    parts = module.split(".")
    assert parts[0] == "autodiff_cli", module
    if len(parts) == 1 or parts[1] in FACADES:
        return None
    return parts[1]


def module_name(path: Path) -> str:
    relative = path.relative_to(REPO).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(source: str, module: str, is_package: bool) -> list[tuple[str, int]]:
    """(absolute module name, line) of every import in ``source``, relative ones resolved."""
    found = []
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "autodiff_cli" or (node.level and not node.module):
                # `from . import x`: x is a submodule, or a name the package's __init__ defines
                found.extend((_submodule_or_package(target, alias.name), node.lineno) for alias in node.names)
            else:
                found.append((target, node.lineno))
    return found


def _submodule_or_package(package: str, name: str) -> str:
    directory = REPO.joinpath(*package.split("."))
    is_module = (directory / name).is_dir() or (directory / f"{name}.py").is_file()
    return f"{package}.{name}" if is_module else package


def violations(source: str, module: str, is_package: bool = False) -> list[str]:
    """Every import of ``source`` that breaks the layering, as 'module:line imports target'."""
    own = layer_of(module)
    problems = []
    for target, line in imported_modules(source, module, is_package):
        top = target.split(".")[0]
        if (own == "engine" and top != "autodiff_cli" and top not in sys.stdlib_module_names
                and not (top == "numpy" and ENGINE_NUMPY.fullmatch(module))):
            problems.append(f"{module}:{line} imports {target} (the engine uses the standard library only)")
        if top != "autodiff_cli" or own is None:
            continue
        other = layer_of(target) if target != "autodiff_cli" else None
        if other is None:
            problems.append(f"{module}:{line} imports the package facade {target}")
        elif other not in LAYERS:
            problems.append(f"{module}:{line} imports {target}, which is in no layer")
        elif LAYERS.index(other) > LAYERS.index(own):
            problems.append(f"{module}:{line} imports {target}: {own} is below {other}")
    return problems


# Written by the build from engine/native_source.py (and not committed): its imports are
# checked in the source that writes it, by test_the_compiled_engine_imports_point_down.
GENERATED = PACKAGE / "engine" / "_native.py"


def package_modules() -> list[Path]:
    return sorted(path for path in PACKAGE.rglob("*.py") if path != GENERATED)


def test_the_compiled_engine_imports_point_down() -> None:
    from autodiff_cli.engine.native_source import MODULE, native_module_source

    source = native_module_source()
    # mypy_extensions is read by mypyc at build time; at run time its import may fail, and is replaced.
    assert "try:  # mypyc reads the decorator at build time" in source
    assert "    from mypy_extensions import mypyc_attr\nexcept ImportError:\n" in source
    problems = violations(source, MODULE)
    assert [p for p in problems if "mypy_extensions" not in p] == []
    assert len(problems) == 1  # the checker did see the build-time import


@pytest.mark.parametrize("path", package_modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_down(path: Path) -> None:
    module = module_name(path)
    assert violations(path.read_text(encoding="utf-8"), module, path.name == "__init__.py") == []


def test_every_module_is_in_a_layer() -> None:
    for path in package_modules():
        layer = layer_of(module_name(path))
        assert layer is None or layer in LAYERS, f"{path} is in no layer of {LAYERS}"


@pytest.mark.parametrize(
    "module, source, expected",
    [
        ("autodiff_cli.engine.value", "from ..cli import main", "engine is below cli"),
        ("autodiff_cli.engine.value", "import numpy", "standard library only"),
        ("autodiff_cli.engine.tensor", "import scipy", "standard library only"),
        ("autodiff_cli.files.rows", "from ..cli import console", "files is below cli"),
        ("autodiff_cli.language.compiler", "from autodiff_cli.render import dot", "language is below render"),
        ("autodiff_cli.execute.scalar", "def f():\n    from ..analysis import check", "execute is below analysis"),
        ("autodiff_cli.render.dot", "from .. import Value", "package facade"),
        ("autodiff_cli.errors", "from .engine import ops", "errors is below engine"),
    ],
    ids=["upward-relative", "engine-third-party", "tensor-other-than-numpy", "files-below-cli", "upward-absolute", "inside-function", "facade", "base-layer"],
)
def test_checker_catches(module: str, source: str, expected: str) -> None:
    found = violations(source, module)
    assert len(found) == 1 and expected in found[0], found


def test_checker_allows_numpy_in_the_engine_s_tensor_modules_only() -> None:
    for module in ("autodiff_cli.engine.tensor", "autodiff_cli.engine.tensor_ops", "autodiff_cli.engine.tensor_nn"):
        assert violations("import numpy as np\n", module) == []
    assert violations("import numpy as np\n", "autodiff_cli.engine.graph") != []
    assert violations("import numpy\n", "autodiff_cli.engine.tensorish.helpers") != []


def test_checker_allows_downward_imports() -> None:
    source = "from ..engine.ops import OPS\nfrom ..errors import Position\nfrom . import lalr\nimport re\n"
    assert violations(source, "autodiff_cli.language.compiler") == []


def test_every_top_level_module_is_a_known_facade() -> None:
    # A new module beside the layers must be added to FACADES (and ARCHITECTURE.md) on purpose.
    top_level = {path.stem for path in PACKAGE.glob("*.py")} - {"errors"}
    assert top_level == FACADES


def test_facades_import_only_what_they_expose() -> None:
    # The public nn/optim modules only re-export the engine: importing them pulls in no other layer.
    for name in ("nn", "optim"):
        source = (PACKAGE / f"{name}.py").read_text(encoding="utf-8")
        layers = {layer_of(target) for target, _ in imported_modules(source, f"autodiff_cli.{name}", False)
                  if target.startswith("autodiff_cli")}
        assert layers == {"engine"}, (name, layers)


def test_architecture_doc_lists_the_same_layers() -> None:
    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    line = re.search(r"^Layers, lowest first: (.+)$", text, re.MULTILINE)
    assert line is not None, "ARCHITECTURE.md must state 'Layers, lowest first: ...'"
    assert tuple(re.findall(r"`(\w+)`", line.group(1))) == LAYERS


def test_every_subpackage_ships_in_the_wheel() -> None:
    # tomllib is not in Python 3.10's standard library; the list is simple enough to read.
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    block = re.search(r"^packages = \[(.*?)\]", pyproject, re.MULTILINE | re.DOTALL)
    assert block is not None
    listed = set(re.findall(r'"([\w.]+)"', block.group(1)))
    found = {module_name(path.parent / "__init__.py") for path in PACKAGE.rglob("__init__.py")}
    assert found <= listed, f"add to pyproject.toml [tool.setuptools] packages: {sorted(found - listed)}"


# --- one home per op: op names as strings outside the registry ------------------------------------

# The registry: the two tables and the module that answers by name.
REGISTRY = {"engine/ops.py", "engine/tensor_ops.py", "engine/registry.py", "engine/_native.py"}
# Where an op's name may still be written as a string outside it, and why.  A word that is also
# an op's name but means something else is listed as such; a deliberate table says what it is;
# the rest is what issue 32 has not yet moved into the entries, listed so that it can only shrink.
NOT_AN_OP = "the same word with another meaning"
NOT_YET_MOVED = "a per-op rule not yet in its registry entry (issue 32)"
ALLOWED_OP_NAMES: dict[str, dict[str, str]] = {
    "analysis/claim_algebra.py": {"neg": "the claims' own algebra writes negation as the IR does"},
    "analysis/claim_text.py": {"sqrt": NOT_AN_OP + ": LaTeX's \\sqrt command (read as the entry written so)"},
    "analysis/claims.py": {**dict.fromkeys(("tanh", "sigmoid", "sin", "cos", "exp", "log", "sqrt"),
                                           "deliberate table: check --claim's common-mistake rules"),
                           "sign": NOT_AN_OP},
    "cli/batch.py": dict.fromkeys(("sum", "mean"), NOT_AN_OP + ": --reduce's modes"),
    "engine/tensor.py": dict.fromkeys(("neg", "index", "transpose", "where", "max", "min", "argmax"),
                                      "Tensor's methods, which call their entries"),
    "engine/tensor_nn.py": dict.fromkeys(("cross_entropy", "mean", "sum", "mse"), "nn's losses and their reductions"),
    "engine/value.py": {"neg": NOT_YET_MOVED},
    "execute/expressions.py": {"neg": "the simplifier's own algebra writes negation as the IR does"},
    "execute/metrics.py": {"mse": NOT_AN_OP + ": a metric", "step": NOT_AN_OP + ": a training step",
                           "mean": NOT_AN_OP + ": a metric"},
    "execute/objective.py": {"mean": NOT_AN_OP + ": the mean over rows"},
    "execute/batch_evaluator.py": dict.fromkeys(("sum", "mean"), NOT_AN_OP + ": --reduce's modes"),
    "execute/batch_rows.py": dict.fromkeys(("sum", "mean"), NOT_AN_OP + ": --reduce's modes"),
    "execute/training_text.py": {"step": NOT_AN_OP + ": a training step"},
    "execute/tensor_symbolic.py": {"neg": "the term builder's own algebra writes negation as the IR does",
                                   "stack": "a column is a stacked row transposed, for the outer products",
                                   **dict.fromkeys(("transpose", "sum"),
                                                   "spreading and summing back over axes, for every rule")},
    "execute/vectorized.py": {"mean": NOT_AN_OP + ": --reduce's mode", "neg": NOT_YET_MOVED},
    "language/compiler.py": {"neg": "the compiler writes unary minus", "index": "the compiler writes subscripts",
                             "where": NOT_AN_OP + ": a slot holding a token's place",
                             "stack": "the compiler writes a list of computed values as the stack it is",
                             "var": NOT_AN_OP + ": the grammar's rule for a variable"},
    "language/program.py": {"where": NOT_AN_OP + ": the column of the instructions' places",
                            "std": NOT_AN_OP + ": normal()'s standard deviation"},
    "files/streams.py": {"std": NOT_AN_OP + ": standard input or output"},
    "language/templates.py": {"where": NOT_AN_OP + ": the generated code's name of a token's place"},
    "render/claims.py": {"where": NOT_AN_OP + ": a CSV column, the claim's place"},
    "render/backward_claims.py": {"where": NOT_AN_OP + ": a CSV column, the line's place"},
    "nn.py": {"cross_entropy": "the public nn's loss"},
    "render/check.py": {"step": NOT_AN_OP + ": a finite-difference step"},
    "render/dot.py": {"neg": NOT_YET_MOVED},
    "render/formulas.py": dict.fromkeys(("neg", "index"), "operators are laid out by precedence, not by entry"),
    "render/loss_plot.py": {"step": NOT_AN_OP + ": a training step", "log": NOT_AN_OP + ": a log scale"},
    "render/page.py": {"step": NOT_AN_OP + ": a step of the page", "sum": NOT_AN_OP + ": a sum of contributions"},
    "render/report.py": {"index": NOT_AN_OP + ": an entry's index"},
    "render/directional.py": {"index": NOT_AN_OP + ": a CSV column, an entry's index"},
    "render/explain_json.py": {"step": NOT_AN_OP + ": a step of the backward pass"},
}


def _op_names_written(path: Path, names: set[str]) -> set[str]:
    """The op names that appear as whole string constants in a module (docstrings aside)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return {node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
            and id(node) not in docstrings}


def _named_ops() -> set[str]:
    from autodiff_cli.engine.registry import ENTRIES

    return {name for name in ENTRIES if re.fullmatch(r"[a-z_]+", name)}  # operators are syntax, not names


def test_op_names_are_written_only_in_the_registry() -> None:
    """A new rule keyed by an op's name outside its entry fails here: give the entry the field."""
    names = _named_ops()
    unexpected, stale = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative in REGISTRY:
            continue
        written = _op_names_written(path, names)
        allowed = ALLOWED_OP_NAMES.get(relative, {})
        unexpected.extend(f"{relative}: '{name}'" for name in sorted(written - set(allowed)))
        stale.extend(f"{relative}: '{name}'" for name in sorted(set(allowed) - written))
    assert not unexpected, "op names outside the registry: " + ", ".join(unexpected)
    assert not stale, "allowed but no longer written (remove from ALLOWED_OP_NAMES): " + ", ".join(stale)


def test_the_op_name_checker_catches_a_new_table(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""Doc mentioning tanh."""\nKINKS = ("relu", "abs")\nWORD = "relux"\n', encoding="utf-8")
    assert _op_names_written(module, _named_ops()) == {"relu", "abs"}
