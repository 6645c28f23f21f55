"""fit's progress within the width: the plain lines wrap between numbers, and the bar shows the
numbers that fit, each whole (issue 36: at 80 columns they were 130-168 columns, or cut)."""

import io
import re
from pathlib import Path

import pytest

from autodiff_cli.cli import console, fit_progress, main
from autodiff_cli.cli.fit_progress import Reporter, fitted, wrapped
from autodiff_cli.execute.fit import Measurement, Step

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")


def test_a_plain_line_wraps_between_its_parts() -> None:
    parts = ["step 100/300", "loss 0.102433", "grad norm 0.325", "lr 0.01", "validation loss 0.168866",
             "accuracy 0.967293", "validation accuracy 0.961111"]
    text = wrapped(parts, 80)
    assert text == ("step 100/300  loss 0.102433  grad norm 0.325  lr 0.01  validation loss 0.168866\n"
                    "  accuracy 0.967293  validation accuracy 0.961111")
    assert wrapped(parts[:4], 80) == "step 100/300  loss 0.102433  grad norm 0.325  lr 0.01"  # fits: one line


def test_the_bar_leaves_out_whole_numbers_by_priority() -> None:
    parts = ["loss 0.000447232", "grad norm 0.00373", "val loss 0.1099", "accuracy 0.9957/0.9721"]
    assert fitted(parts, 35, [0, 2, 3, 1]) == "loss 0.000447232  val loss 0.1099"
    assert fitted(parts, 200, [0, 2, 3, 1]) == "  ".join(parts)
    assert fitted(parts, 5) == "loss 0.000447232"  # the loss, whatever the width


def test_the_width_is_the_terminals_else_columns_else_80(monkeypatch) -> None:
    def no_terminal(fd: int = 1):
        raise OSError("not a terminal")

    monkeypatch.setattr(fit_progress.os, "get_terminal_size", no_terminal)
    monkeypatch.setenv("COLUMNS", "100")
    assert fit_progress.stderr_columns() == 100
    monkeypatch.delenv("COLUMNS")
    assert fit_progress.stderr_columns() == 80


def test_plain_progress_lines_fit_80_columns_and_keep_every_number(runner, monkeypatch) -> None:
    """stderr not a terminal, 80 columns: a report every 10 steps, each number whole."""
    monkeypatch.setattr(fit_progress, "stderr_columns", lambda: 80)
    result = runner.invoke(main, ["fit", str(SAMPLES / "logistic.ad"), "--data", str(SAMPLES / "logistic.csv"),
                                  "--lr", "0.5", "--steps", "30", "--validation", "0.2",
                                  "--metric", "accuracy:z:y", "--progress-every", "10", "--eval-every", "10"])
    assert result.exit_code == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if not line.startswith("finished")]
    assert lines and all(len(line) <= 80 for line in lines), lines
    reports = "\n".join(lines).replace("\n  ", "  ").splitlines()  # each report back on one line
    assert [line.split()[1] for line in reports] == ["1/30", "10/30", "20/30", "30/30"]
    for line in reports:
        names = [part.rsplit(" ", 1)[0] for part in line.split("  ")]
        assert names == ["step", "loss", "grad norm", "lr", "validation loss", "accuracy", "validation accuracy"]


@pytest.mark.parametrize("width", [80, 100, 200])
def test_the_bar_fits_a_fixed_width_console_without_cutting_a_number(monkeypatch, width: int) -> None:
    from rich.console import Console

    monkeypatch.setattr(fit_progress, "stderr_columns", lambda: width)
    monkeypatch.setattr(console, "PROGRESS_AFTER", 0.0)
    with Reporter(3000, quiet=False, every=100, held_out=True, metrics=["accuracy"]) as reporter:
        reporter.bar.enabled = True  # as at a terminal
        reporter.measured(Measurement(2800, 0.109931, {"accuracy": 0.995652}, {"accuracy": 0.972125}))
        reporter.step(Step(2872, 0.000447232, 0.00373, 0.01))
        rich_bar = reporter.bar._bar
        fixed = Console(file=io.StringIO(), width=width, color_system=None)
        fixed.print(rich_bar.make_tasks_table(rich_bar.tasks))
    (line,) = fixed.file.getvalue().splitlines()
    assert len(line) <= width and "…" not in line, line
    assert "step 2,872/3,000" in line and "loss 0.000447232" in line and "val loss 0.1099" in line
    if width >= 200:
        assert "grad norm 0.00373" in line and "accuracy 0.9957/0.9721" in line
    shown = set(NUMBER.findall(line))
    assert shown >= {"0.000447232", "0.1099"}  # whole, as formatted
