"""Shared fixtures."""

from pathlib import Path

import pytest
from click.testing import CliRunner

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "samples"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def samples() -> Path:
    return SAMPLES
