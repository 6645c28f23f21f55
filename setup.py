"""The build: the package (configured in pyproject.toml) and, where it can be, the compiled engine.

The compiled engine is ``autodiff_cli.engine._native``: the source that
``autodiff_cli/engine/native_source.py`` writes from the op table, compiled with mypyc.
It is optional.  Where it cannot be built (no C compiler or Python headers, another
Python implementation, or ``AUTODIFF_PURE_PYTHON=1``), the build says why on stderr and
the package uses the pure-Python engine, which gives the same results.
"""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
GENERATED = ROOT / "autodiff_cli" / "engine" / "_native.py"


def _warn(message: str) -> None:
    print(f"autodiff-cli: {message}; using the pure-Python engine (same results, slower)", file=sys.stderr)


class OptionalBuildExt(build_ext):
    """``build_ext`` that gives up on the compiled engine, rather than on the install, when it fails."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as error:  # noqa: BLE001 - any failure here leaves the pure-Python engine
            self._give_up(error)

    def build_extension(self, extension: object) -> None:
        try:
            super().build_extension(extension)
        except Exception as error:  # noqa: BLE001
            self._give_up(error)

    def _give_up(self, error: Exception) -> None:
        _warn(f"the compiled engine could not be built ({type(error).__name__}: {error})")
        self.extensions = []


class BuildPyWithoutGeneratedSource(build_py):
    """Leaves the generated ``_native.py`` out of the package: the compiled module does not need
    it, and on its own it would be a slower third engine (``value.py`` would not use it anyway)."""

    def find_package_modules(self, package: str, package_dir: str) -> list:
        modules = super().find_package_modules(package, package_dir)
        return [module for module in modules if Path(module[2]).resolve() != GENERATED]


def compiled_engine() -> list:
    """The extension modules of the compiled engine, or none where it is not wanted or possible."""
    if os.environ.get("AUTODIFF_PURE_PYTHON", "") not in ("", "0"):
        return []
    if platform.python_implementation() != "CPython":
        _warn(f"mypyc compiles for CPython only, not {platform.python_implementation()}")
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        _warn("mypyc (from mypy) is not installed")
        return []
    sys.path.insert(0, str(ROOT))
    os.environ["AUTODIFF_ENGINE"] = "python"  # not the compiled module a previous build may have left
    from autodiff_cli.engine.native_source import native_module_source

    source = native_module_source()
    if not GENERATED.exists() or GENERATED.read_text(encoding="utf-8") != source:
        GENERATED.write_text(source, encoding="utf-8")  # rewritten only when it changed: no needless rebuild
    try:
        extensions = mypycify(
            ["--follow-imports=skip", "--ignore-missing-imports", str(GENERATED.relative_to(ROOT))],
            opt_level="3",
            group_name="autodiff_cli.engine._native_runtime",  # mypyc's support code, inside the package
        )
    except (Exception, SystemExit) as error:  # noqa: BLE001 - mypyc exits on a type error it finds
        _warn(f"mypyc could not compile the engine ({type(error).__name__}: {error})")
        return []
    from setuptools import Extension

    # Takes the nodes the engine makes out of the cycle collector (engine/_collector.c says why).
    extensions.append(Extension("autodiff_cli.engine._collector", ["autodiff_cli/engine/_collector.c"]))
    if os.name != "nt":
        for extension in extensions:
            # No fused multiply-add: a*b + c rounds as in Python on every CPU (some compilers
            # contract it where the CPU has the instruction), so both engines agree to the bit.
            if "-ffp-contract=off" not in extension.extra_compile_args:  # the list may be shared
                extension.extra_compile_args.append("-ffp-contract=off")
    return extensions


def build_requirements() -> list[str]:
    """mypy for the compiled engine, unless it is not wanted: setuptools' build backend reports
    these to pip, which installs them before building, so ``AUTODIFF_PURE_PYTHON=1 pip install .``
    needs nothing but setuptools (an install with no package index, for one)."""
    if os.environ.get("AUTODIFF_PURE_PYTHON", "") not in ("", "0"):
        return []
    if platform.python_implementation() != "CPython":
        return []
    return ["mypy>=1.11,<3"]


setup(
    ext_modules=compiled_engine(),
    cmdclass={"build_ext": OptionalBuildExt, "build_py": BuildPyWithoutGeneratedSource},
    setup_requires=build_requirements(),
)
