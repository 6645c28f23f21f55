"""The suite's own hygiene: a test that changes the working directory with a bare ``os.chdir``
leaves it changed for every test after it (a later ``samples/mlp.ad`` is then not found, in
some orders only).  ``monkeypatch.chdir`` puts it back."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def bare_chdirs(source: str) -> list[int]:
    """The lines of ``source`` that call ``os.chdir`` (or a ``chdir`` imported from ``os``)."""
    tree = ast.parse(source)
    imported = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and node.module == "os" for alias in node.names if alias.name == "chdir"}
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        called = node.func
        if (isinstance(called, ast.Attribute) and called.attr == "chdir" and isinstance(called.value, ast.Name)
                and called.value.id == "os") or (isinstance(called, ast.Name) and called.id in imported):
            lines.append(node.lineno)
    return lines


def test_the_checker_finds_a_bare_chdir_and_passes_monkeypatch() -> None:
    assert bare_chdirs("import os\ndef test(tmp_path):\n    os.chdir(tmp_path)\n") == [3]
    assert bare_chdirs("from os import chdir as cd\ncd('/')\n") == [2]
    assert bare_chdirs("def test(monkeypatch, tmp_path):\n    monkeypatch.chdir(tmp_path)\n") == []


def test_no_test_changes_directory_for_good() -> None:
    found = [f"{path.relative_to(TESTS)}:{line}" for path in sorted(TESTS.rglob("*.py"))
             for line in bare_chdirs(path.read_text(encoding="utf-8"))]
    assert found == [], f"use monkeypatch.chdir (it restores the directory), not os.chdir: {found}"
