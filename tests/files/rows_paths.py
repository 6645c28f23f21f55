"""The two ways CSV and TSV rows are read and written: through pyarrow when it is installed, and
the pure-Python path (the csv module, NumPy and ``%r``).  A test module that imports
``rows_path`` runs each of its tests on both."""

from __future__ import annotations

import pytest

from autodiff_cli.files.rows.arrow_csv import SWITCH


@pytest.fixture(autouse=True, params=["arrow", "python"])
def rows_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Set the switch (an environment variable, so that a subprocess the test starts follows it too)."""
    if request.param == "arrow":
        pytest.importorskip("pyarrow.csv")
    monkeypatch.setenv(SWITCH, "1" if request.param == "arrow" else "0")
    return request.param
