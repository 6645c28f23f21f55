"""The licence the package declares is the one it ships."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PYPROJECT = (REPO / "pyproject.toml").read_text()


def test_license_file_is_the_mit_licence_pyproject_declares() -> None:
    # A regex, not tomllib: the package supports Python 3.10, which has no tomllib.
    assert re.search(r'^license = "MIT"$', PYPROJECT, re.MULTILINE)
    text = (REPO / "LICENSE").read_text()
    assert text.startswith("MIT License\n\nCopyright (c) ")
    assert "Permission is hereby granted, free of charge" in text
    assert 'THE SOFTWARE IS PROVIDED "AS IS"' in text


def test_the_licence_goes_into_the_distribution() -> None:
    # setuptools >= 77 ships LICEN[CS]E* by default, unless license-files names others.
    assert "license-files" not in PYPROJECT
    assert list(REPO.glob("LICEN[CS]E*")) == [REPO / "LICENSE"]
