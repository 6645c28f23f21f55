"""`autodiff fit` with held-out rows: --validation FRACTION and --validation-data FILE, the
validation loss in the progress line, the history and the final line, --keep best-validation,
--tol watching the validation loss, and --report written whatever way training ends.

Expected numbers come from plain SGD written here in NumPy on samples/line.csv (the loss of
samples/line.ad is (w*x + b - y)**2, from w = b = 0), on the rows NumPy's RandomState holds out.
"""

from __future__ import annotations

import csv
import html
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

from autodiff_cli.cli import main

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
LINE_AD = str(SAMPLES / "line.ad")
ROWS = np.loadtxt(SAMPLES / "line.csv", delimiter=",", skiprows=1)
LR = 0.01  # fit's default learning rate


@pytest.fixture
def fit(runner):
    def invoke(*args):
        return runner.invoke(main, ["fit", *map(str, args)], catch_exceptions=False)

    return invoke


def sgd_path(rows: np.ndarray, steps: int) -> list[tuple[float, float]]:
    """(w, b) where each step starts, then after the last: full-batch SGD on ``rows`` (x, y)."""
    x, y = rows.T
    w = b = 0.0
    path = []
    for _ in range(steps):
        path.append((w, b))
        residual = w * x + b - y
        w, b = w - LR * np.mean(2 * residual * x), b - LR * np.mean(2 * residual)
    return path + [(w, b)]


def line_loss(rows: np.ndarray, w: float, b: float) -> float:
    x, y = rows.T
    return float(np.mean((w * x + b - y) ** 2))


def split(seed: int, held: int) -> tuple[np.ndarray, np.ndarray]:
    """The training and validation rows of --validation with --seed ``seed``, in file order."""
    chosen = np.zeros(len(ROWS), dtype=bool)
    chosen[np.random.RandomState(seed).permutation(len(ROWS))[:held]] = True
    return ROWS[~chosen], ROWS[chosen]


def history_rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text())))


def final_number(stderr: str, what: str) -> float:
    return float(re.search(rf"(?:^|[:,] ){what} ([-0-9.e+]+)", stderr.splitlines()[-1]).group(1))


def write_rows(path: Path, rows: np.ndarray, header: str = "x,y") -> Path:
    columns = header.split(",")
    order = [("x", "y").index(name) for name in columns]
    path.write_text(header + "\n" + "".join(",".join(repr(float(row[i])) for i in order) + "\n" for row in rows))
    return path


def test_validation_holds_out_a_seeded_fraction_of_the_rows(fit, tmp_path) -> None:
    result = fit(LINE_AD, "--data", SAMPLES / "line.csv", "--validation", 0.25, "--seed", 7, "--steps", 5,
                 "--history", tmp_path / "h.csv", "--progress-every", 2)
    assert result.exit_code == 0, result.stderr
    training, held = split(7, 50)
    path = sgd_path(training, 5)
    learned = json.loads(result.stdout)
    assert (learned["w"], learned["b"]) == pytest.approx(path[-1], rel=1e-12)
    history = history_rows(tmp_path / "h.csv")
    assert list(history[0]) == ["step", "loss", "grad_norm", "lr", "validation_loss"]
    for row, (w, b) in zip(history, path):
        assert float(row["loss"]) == pytest.approx(line_loss(training, w, b), rel=1e-12)
        assert float(row["validation_loss"]) == pytest.approx(line_loss(held, w, b), rel=1e-12)
    lines = result.stderr.splitlines()
    assert lines[0].startswith("step 1/5  loss ")
    assert f"validation loss {line_loss(held, 0, 0):.6g}" in lines[0]
    assert lines[-1].startswith("finished 5 steps: loss ")
    assert final_number(result.stderr, "validation loss") == pytest.approx(line_loss(held, *path[-1]), rel=1e-5)
    assert re.search(r"; [0-9.]+ (ms|s) a step$", lines[-1])


def test_another_seed_holds_out_other_rows(fit, tmp_path) -> None:
    result = fit(LINE_AD, "--data", SAMPLES / "line.csv", "--validation", 0.1, "--seed", 3, "--steps", 2,
                 "--history", tmp_path / "h.csv", "-q")
    training, held = split(3, 20)
    first = history_rows(tmp_path / "h.csv")[0]
    assert float(first["loss"]) == pytest.approx(line_loss(training, 0, 0), rel=1e-12)
    assert float(first["validation_loss"]) == pytest.approx(line_loss(held, 0, 0), rel=1e-12)
    assert result.stderr == ""


def test_validation_data_is_a_file_of_the_same_columns_in_any_order(fit, tmp_path) -> None:
    training, held = ROWS[:150], ROWS[150:]
    write_rows(tmp_path / "train.csv", training)
    write_rows(tmp_path / "held.csv", held, "y,x")
    result = fit(LINE_AD, "--data", tmp_path / "train.csv", "--validation-data", tmp_path / "held.csv",
                 "--steps", 4, "--history", tmp_path / "h.csv")
    assert result.exit_code == 0, result.stderr
    path = sgd_path(training, 4)
    for row, (w, b) in zip(history_rows(tmp_path / "h.csv"), path):
        assert float(row["validation_loss"]) == pytest.approx(line_loss(held, w, b), rel=1e-12)
    assert final_number(result.stderr, "validation loss") == pytest.approx(line_loss(held, *path[-1]), rel=1e-5)


def test_validation_data_without_a_column_of_the_data_is_refused(fit, tmp_path) -> None:
    (tmp_path / "held.csv").write_text("x\n1\n2\n")
    result = fit(LINE_AD, "--data", SAMPLES / "line.csv", "--validation-data", tmp_path / "held.csv")
    assert result.exit_code != 0 and result.stdout == ""
    assert "the validation rows have no column for 'y'" in result.stderr or \
        "the validation rows have no column for y" in result.stderr
    assert "held.csv" in result.stderr


def test_a_bad_cell_of_the_validation_data_is_named_by_its_line(fit, tmp_path) -> None:
    (tmp_path / "held.csv").write_text("x,y\n1,2\n2,oops\n")
    result = fit(LINE_AD, "--data", SAMPLES / "line.csv", "--validation-data", tmp_path / "held.csv")
    assert result.exit_code == 1 and result.stdout == ""
    assert "held.csv:3" in result.stderr and "oops" in result.stderr


def test_a_failing_validation_row_is_named_by_its_line_in_its_file(fit, tmp_path) -> None:
    (tmp_path / "train.csv").write_text("x\n1\n2\n3\n")
    (tmp_path / "held.csv").write_text("x\n2\n-1\n")
    result = fit("-e", "a = 1\nloss = (a - log(x))**2", "--data", tmp_path / "train.csv",
                 "--validation-data", tmp_path / "held.csv", "--steps", 3)
    assert result.exit_code == 1 and result.stdout == ""
    assert "line 3 of" in result.stderr and "held.csv" in result.stderr


def test_keep_best_validation_writes_the_parameters_of_the_lowest_validation_loss(fit, tmp_path) -> None:
    # The validation rows lie on y = 0, which the starting line w = b = 0 fits exactly: the
    # validation loss is lowest at step 1, and grows as the line fits the data.
    held = np.column_stack([ROWS[:30, 0], np.zeros(30)])
    write_rows(tmp_path / "held.csv", held)
    result = fit(LINE_AD, "--data", SAMPLES / "line.csv", "--validation-data", tmp_path / "held.csv",
                 "--steps", 10, "--keep", "best-validation")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"w": 0.0, "b": 0.0}
    last = result.stderr.splitlines()[-1]
    assert last.startswith("finished 10 steps, kept step 1's parameters, the lowest validation loss: loss ")
    assert final_number(result.stderr, "loss") == pytest.approx(line_loss(ROWS, 0, 0), rel=1e-5)
    assert final_number(result.stderr, "validation loss") == 0


def test_tol_watches_the_validation_loss_when_there_are_validation_rows(fit, tmp_path) -> None:
    held = np.column_stack([ROWS[:30, 0], np.zeros(30)])
    write_rows(tmp_path / "held.csv", held)
    result = fit(LINE_AD, "--data", SAMPLES / "line.csv", "--validation-data", tmp_path / "held.csv",
                 "--steps", 100, "--tol", 1e-6, "-q")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {"w": 0.0, "b": 0.0}  # the best by validation loss: the start
    # never better than at step 1: it stops after 5 more measurements, at step 6
    assert result.stderr == ""
    result = fit(LINE_AD, "--data", SAMPLES / "line.csv", "--validation-data", tmp_path / "held.csv",
                 "--steps", 100, "--tol", 1e-6)
    assert result.stderr.splitlines()[-1].startswith(
        "stopped at step 6 of 100: the validation loss has not improved by more than --tol 1e-06 of itself for "
        "5 measurements; kept the best, of step 1: loss ")
    result = fit(LINE_AD, "--data", SAMPLES / "line.csv", "--validation-data", tmp_path / "held.csv",
                 "--steps", 20, "--tol", 1e-6, "--watch", "training")
    assert result.stderr.splitlines()[-1].startswith("finished 20 steps: loss ")


@pytest.mark.parametrize("options, message", [
    (["--validation", "0.2", "--validation-data", "x.csv"], "--validation and --validation-data both choose"),
    (["--keep", "best-validation"], "--keep best-validation needs validation rows"),
    (["--watch", "validation"], "--watch validation needs validation rows"),
    (["--report-every", "5"], "--report-every applies to --report only"),
    (["--eval-every", "5"], "--eval-every needs something to measure"),
    (["--validation", "1.5"], "Invalid value for '--validation'"),
    (["--validation", "0"], "Invalid value for '--validation'"),
], ids=["both", "keep", "watch", "report-every", "eval-every", "above-one", "zero"])
def test_options_that_do_not_go_together_are_usage_errors(fit, options, message) -> None:
    result = fit(LINE_AD, "--data", SAMPLES / "line.csv", *options)
    assert result.exit_code == 2, result.stderr
    assert message in result.stderr


def test_a_fraction_that_leaves_no_validation_row_says_so(fit, tmp_path) -> None:
    (tmp_path / "rows.csv").write_text("x,y\n1,2\n2,3\n3,4\n")
    result = fit(LINE_AD, "--data", tmp_path / "rows.csv", "--validation", 0.1)
    assert result.exit_code == 1
    assert "--validation 0.1 of 3 rows leaves no row for validation" in result.stderr


def test_outputs_may_not_name_the_validation_data(fit, tmp_path) -> None:
    write_rows(tmp_path / "held.csv", ROWS[:5])
    result = fit(LINE_AD, "--data", SAMPLES / "line.csv", "--validation-data", tmp_path / "held.csv",
                 "--history", tmp_path / "held.csv")
    assert result.exit_code == 2
    assert "is the --validation-data file this run reads" in result.stderr


# --- the report, with a recorder that writes down what it is told ----------------------------------


class FakeRecorder:
    made: list[FakeRecorder] = []
    diagnoses = ["the loss rose: a fake diagnosis"]

    def __init__(self, program, plan, given_values, train_columns, validation_columns, *, every, meta, seed,
                 steps=None) -> None:
        self.every, self.meta, self.seed, self.steps = every, meta, seed, steps
        self.train_rows = len(next(iter(train_columns.values())))
        self.validation_rows = None if validation_columns is None else len(next(iter(validation_columns.values())))
        self.observed: list[tuple] = []
        self.result = None
        FakeRecorder.made.append(self)

    def wants(self, step):
        return step == 1 or step % self.every == 0

    def observe(self, step, params, grad, train_loss, validation_loss, metrics) -> None:
        self.observed.append((step, np.array(params), np.array(grad), train_loss, validation_loss, dict(metrics)))
        if self.meta.get("interrupt_at") == step:
            raise KeyboardInterrupt

    def finish(self, result) -> None:
        self.result = result

    def recording(self):
        return self


def fake_html(recorder, graph_svg=None) -> bytes:
    steps = ",".join(str(step) for step, *_ in recorder.observed)
    return f"<html>steps {steps}; finished {recorder.result is not None}</html>".encode()


@pytest.fixture
def fake_report(monkeypatch):
    import autodiff_cli.analysis.training_record as record
    import autodiff_cli.render.training_report as report

    FakeRecorder.made = []
    monkeypatch.setattr(record, "TrainingRecorder", FakeRecorder)
    monkeypatch.setattr(report, "training_report_html", fake_html)
    monkeypatch.setattr(report, "row_graph_svg", lambda recording: None)
    return FakeRecorder.made


def test_the_report_is_told_its_steps_and_the_measured_ones_with_their_measurements(fit, tmp_path,
                                                                                   fake_report) -> None:
    # recorded: 1, 4, 8; measured: 1, 3, 6, 9.  A recorded step is not measured for the report
    # (measuring costs several steps), and every measurement is recorded.
    result = fit(LINE_AD, "--data", SAMPLES / "line.csv", "--validation", 0.25, "--seed", 7, "--steps", 9,
                 "--metric", "mae:prediction:y", "--report", tmp_path / "run.html", "--report-every", 4, "-q",
                 "--eval-every", 3)
    assert result.exit_code == 0, result.stderr
    recorder = fake_report[0]
    assert (recorder.every, recorder.seed, recorder.steps) == (4, 7, 9)
    assert (recorder.train_rows, recorder.validation_rows) == (150, 50)
    assert recorder.meta["seed"] == 7 and recorder.meta["command"].startswith("autodiff")  # then pytest's own arguments
    assert set(recorder.meta["versions"]) >= {"autodiff-cli", "python", "numpy"}
    training, held = split(7, 50)
    path = sgd_path(training, 9)
    assert [observed[0] for observed in recorder.observed] == [1, 3, 4, 6, 8, 9]
    for step, params, grad, train_loss, validation_loss, metrics in recorder.observed:
        w, b = path[step - 1]
        x, y = training.T
        residual = w * x + b - y
        np.testing.assert_allclose(params, [w, b], rtol=1e-12)
        np.testing.assert_allclose(grad, [np.mean(2 * residual * x), np.mean(2 * residual)], rtol=1e-12)
        assert train_loss == pytest.approx(line_loss(training, w, b), rel=1e-12)
        if step in (4, 8):
            assert (validation_loss, metrics) == (None, {})
            continue
        assert validation_loss == pytest.approx(line_loss(held, w, b), rel=1e-12)
        held_residual = w * held[:, 0] + b - held[:, 1]
        assert metrics == pytest.approx({"mae": np.mean(np.abs(residual)),
                                         "validation_mae": np.mean(np.abs(held_residual))}, rel=1e-12)
    assert recorder.result is not None and recorder.result.steps_done == 9
    assert (tmp_path / "run.html").read_bytes() == b"<html>steps 1,3,4,6,8,9; finished True</html>"
    assert recorder.meta["lr"] == 0.01 and recorder.meta["batch_size"] is None


def test_the_final_line_says_what_the_recording_found_wrong(fit, tmp_path, fake_report) -> None:
    result = fit(LINE_AD, "--data", SAMPLES / "line.csv", "--steps", 3, "--report", tmp_path / "run.html",
                 "-o", tmp_path / "p.json")
    assert result.exit_code == 0
    assert re.search(r"^finished 3 steps: .* a step; the loss rose: a fake diagnosis$", result.stderr.splitlines()[-1])


def test_the_report_is_written_when_training_is_interrupted(fit, tmp_path, fake_report, monkeypatch) -> None:
    original = FakeRecorder.__init__

    def interrupting(self, *args, meta, **kwargs):
        original(self, *args, meta={**meta, "interrupt_at": 3}, **kwargs)

    monkeypatch.setattr(FakeRecorder, "__init__", interrupting)
    result = fit(LINE_AD, "--data", SAMPLES / "line.csv", "--steps", 10, "--report", tmp_path / "run.html",
                 "--report-every", 1, "-o", tmp_path / "p.json")
    assert result.exit_code == 130
    assert result.stderr.splitlines()[-1].startswith("interrupted during step 3 of 10: wrote the best parameters")
    assert (tmp_path / "run.html").read_bytes() == b"<html>steps 1,2,3; finished True</html>"
    assert fake_report[0].result.reason == "interrupted"


def test_the_report_is_written_when_training_diverges(fit, tmp_path, fake_report) -> None:
    result = fit(LINE_AD, "--data", SAMPLES / "line.csv", "--lr", 100, "--steps", 500, "--report",
                 tmp_path / "run.html", "--report-every", 100, "-o", tmp_path / "p.json")
    assert result.exit_code == 1
    assert "so training stopped" in result.stderr
    # recorded at step 1, and at the step whose parameters were written (it diverged before step 100)
    kept = int(re.search(r"wrote the parameters of step (\d+)", result.stderr).group(1))
    assert 1 < kept < 100
    assert (tmp_path / "run.html").read_text() == f"<html>steps 1,{kept}; finished True</html>"
    assert fake_report[0].result.reason == "diverged"


def test_the_same_run_gives_the_same_report_byte_for_byte(fit, tmp_path) -> None:
    options = [SAMPLES / "logistic.ad", "--data", SAMPLES / "logistic.csv", "--lr", 0.5, "--steps", 20,
               "--validation", 0.2, "--metric", "accuracy:z:y", "--report-every", 5, "-q", "-o", tmp_path / "p.json"]
    assert fit(*options, "--report", tmp_path / "a.html").exit_code == 0
    assert fit(*options, "--report", tmp_path / "b.html").exit_code == 0
    first = (tmp_path / "a.html").read_bytes()
    assert first == (tmp_path / "b.html").read_bytes()
    assert b"<html" in first[:200].lower()


def test_the_report_goes_to_a_file_not_a_stream(fit, tmp_path) -> None:
    result = fit(LINE_AD, "--data", SAMPLES / "line.csv", "--report", "/dev/stdout", "-o", tmp_path / "p.json")
    assert result.exit_code == 2
    assert "the report is rewritten as training runs, so it goes to a file" in result.stderr


def test_a_report_that_cannot_be_rewritten_does_not_stop_training(fit, tmp_path, fake_report, monkeypatch) -> None:
    import autodiff_cli.cli.fit as fit_module
    from autodiff_cli.errors import OutputError

    written = fit_module.write_atomic
    calls = []

    def full_disk_once(path, data):
        calls.append(path)
        if len(calls) == 1:
            raise OutputError(f"cannot write {path}: no space left on device")
        written(path, data)

    monkeypatch.setattr(fit_module, "write_atomic", full_disk_once)
    result = fit(LINE_AD, "--data", SAMPLES / "line.csv", "--steps", 6, "--report", tmp_path / "run.html",
                 "--report-every", 2, "-o", tmp_path / "p.json")
    assert result.exit_code == 0, result.stderr
    assert "no space left on device; training goes on, and the report is written again when it ends" in result.stderr
    assert result.stderr.splitlines()[-1].startswith("finished 6 steps")
    assert (tmp_path / "run.html").read_text() == "<html>steps 1,2,4,6; finished True</html>"


def test_validation_rows_of_a_tensor_program(fit, tmp_path) -> None:
    result = fit(SAMPLES / "moons_mlp.ad", "--data", SAMPLES / "moons_xy.csv", "--validation", 0.3, "--seed", 5,
                 "--lr", 0.5, "--steps", 4, "-o", tmp_path / "p.json")
    assert result.exit_code == 0, result.stderr
    rows = np.loadtxt(SAMPLES / "moons_xy.csv", delimiter=",", skiprows=1)
    chosen = np.zeros(len(rows), dtype=bool)
    chosen[np.random.RandomState(5).permutation(len(rows))[:30]] = True
    held = rows[chosen]
    params = json.loads((tmp_path / "p.json").read_text())
    h1 = np.maximum(held[:, :2] @ np.array(params["W1"]).T + params["b1"], 0)
    h2 = np.maximum(h1 @ np.array(params["W2"]).T + params["b2"], 0)
    score = (h2 @ np.array(params["W3"]).T + params["b3"])[:, 0]
    l2 = sum(np.sum(np.array(params[name]) ** 2) for name in ("W1", "b1", "W2", "b2", "W3", "b3"))
    expected = np.mean(np.maximum(1 - held[:, 2] * score, 0)) + 0.0001 * l2
    assert final_number(result.stderr, "validation loss") == pytest.approx(expected, rel=1e-5)


def test_validation_rows_may_come_from_stdin(runner, tmp_path) -> None:
    held = ROWS[150:]
    text = "x,y\n" + "".join(f"{float(x)!r},{float(y)!r}\n" for x, y in held)
    result = runner.invoke(main, ["fit", LINE_AD, "--data", str(SAMPLES / "line.csv"), "--validation-data", "-",
                                  "--steps", 3, "--history", str(tmp_path / "h.csv"), "-q"], input=text)
    assert result.exit_code == 0, result.stderr
    first = history_rows(tmp_path / "h.csv")[0]
    assert float(first["validation_loss"]) == pytest.approx(line_loss(held, 0, 0), rel=1e-12)
    result = runner.invoke(main, ["fit", "-", "--data", str(SAMPLES / "line.csv"), "--validation-data", "-"],
                           input=text)
    assert result.exit_code == 2
    assert "standard input can carry the rows or the program" in result.stderr


def test_ctrl_c_with_keep_best_validation_writes_those(fit, tmp_path, fake_report, monkeypatch) -> None:
    original = FakeRecorder.__init__

    def interrupting(self, *args, meta, **kwargs):
        original(self, *args, meta={**meta, "interrupt_at": 5}, **kwargs)

    monkeypatch.setattr(FakeRecorder, "__init__", interrupting)
    held = np.column_stack([ROWS[:30, 0], np.zeros(30)])
    write_rows(tmp_path / "held.csv", held)
    result = fit(LINE_AD, "--data", SAMPLES / "line.csv", "--validation-data", tmp_path / "held.csv", "--steps", 10,
                 "--keep", "best-validation", "--report", tmp_path / "run.html", "--report-every", 1,
                 "-o", tmp_path / "p.json")
    assert result.exit_code == 130
    assert json.loads((tmp_path / "p.json").read_text()) == {"w": 0.0, "b": 0.0}
    assert result.stderr.splitlines()[-1].startswith(
        "interrupted during step 5 of 10: wrote the parameters with the lowest validation loss so far (loss ")
    assert "validation loss 0, after 0 updates)" in result.stderr.splitlines()[-1]


def test_a_validation_row_that_fails_later_is_said_to_be_a_measurement(fit, tmp_path) -> None:
    held = tmp_path / "held.csv"
    held.write_text("x,y\n1,2\n1e200,1\n")  # fine at w = 0; (w*1e200)**2 overflows once w moves
    result = fit(LINE_AD, "--data", SAMPLES / "line.csv", "--validation-data", held, "--lr", 0.2, "--steps", 5,
                 "-o", tmp_path / "p.json")
    assert result.exit_code == 1
    assert "when measuring step 2 (the validation loss or a metric)" in result.stderr
    assert f"in line 3 of {held}" in result.stderr
    assert "learning rate" not in result.stderr  # training's rows were fine: no advice about --lr
    assert (tmp_path / "p.json").exists()


def test_the_report_and_the_final_line_give_the_numbers_of_the_same_parameters(fit, tmp_path) -> None:
    """One run, one answer: the report's header gives the losses and metrics of the parameters
    written, after the last update, as the final line does (it gave the validation loss where the
    last step started), and says which rows were held out of the data."""
    result = fit(LINE_AD, "--data", SAMPLES / "line.csv", "--validation", 0.25, "--seed", 7, "--steps", 9,
                 "--metric", "mae:prediction:y", "--report", tmp_path / "run.html", "-o", tmp_path / "p.json")
    assert result.exit_code == 0, result.stderr
    training, held = split(7, 50)
    w, b = sgd_path(training, 9)[-1]
    mae = float(np.mean(np.abs(w * training[:, 0] + b - training[:, 1])))
    held_mae = float(np.mean(np.abs(w * held[:, 0] + b - held[:, 1])))
    said = (f"training loss {line_loss(training, w, b):.6g}, validation loss {line_loss(held, w, b):.6g}, "
            f"mae {mae:.6g}, validation mae {held_mae:.6g}")
    page = (tmp_path / "run.html").read_text()
    summary = re.search(r'<p id="summary">(.*?)</p>', page).group(1)
    assert summary == f"9 steps: every step was taken. The parameters written, after step 9's update: {said}."
    assert final_number(result.stderr, "validation loss") == float(f"{line_loss(held, w, b):.6g}")
    rows = dict(re.findall(r"<tr><th>(\w+)</th><td><code>(.*?)</code>", page))
    assert rows["data"] == f"{html.escape(str(SAMPLES / 'line.csv'))} (trained on 150 rows)"
    assert rows["validation"] == f"25% of {html.escape(str(SAMPLES / 'line.csv'))} held out (50 rows, not trained on)"
    assert rows["batch_size"] == "every row at every step"  # not Python's None
