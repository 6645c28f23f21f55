"""`autodiff fit`: the samples end to end, outputs, stops (steps, tol, Ctrl-C, NaN), determinism, errors.

Expected parameters come from independent solutions: NumPy's least squares, Newton's
method for the logistic likelihood, Gauss-Newton for the decay curve, the generating
line for noiseless data.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from autodiff_cli.cli import main

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"


@pytest.fixture
def fit(runner):
    def invoke(*args, input=None):
        return runner.invoke(main, ["fit", *map(str, args)], input=input, catch_exceptions=False)

    return invoke


def load_csv(name: str) -> np.ndarray:
    return np.loadtxt(SAMPLES / name, delimiter=",", skiprows=1)


def fitted(result) -> dict[str, float]:
    assert result.exit_code == 0, result.output + result.stderr
    return json.loads(result.stdout)


# --- the samples -------------------------------------------------------------------------------


def test_line_recovers_slope_and_intercept_from_noiseless_data(fit, tmp_path) -> None:
    x = np.linspace(-2.0, 2.0, 41).tolist()
    data = tmp_path / "exact.csv"
    data.write_text("x,y\n" + "".join(f"{a!r},{3.0 * a - 2.0!r}\n" for a in x))
    params = fitted(fit(SAMPLES / "line.ad", "--data", data, "--lr", "0.2", "--steps", "300", "-q"))
    assert params["w"] == pytest.approx(3.0, abs=1e-6) and params["b"] == pytest.approx(-2.0, abs=1e-6)


def test_line_equals_numpys_least_squares_on_the_noisy_sample(fit) -> None:
    params = fitted(fit(SAMPLES / "line.ad", "--data", SAMPLES / "line.csv", "--lr", "0.2", "--steps", "300", "-q"))
    data = load_csv("line.csv")
    (w, b), *_ = np.linalg.lstsq(np.column_stack([data[:, 0], np.ones(len(data))]), data[:, 1], rcond=None)
    assert params["w"] == pytest.approx(w, rel=1e-9) and params["b"] == pytest.approx(b, rel=1e-9)


def logistic_maximum_likelihood(data: np.ndarray) -> np.ndarray:
    """Newton's method on the mean cross-entropy: H = X^T diag(p(1-p)) X / n, g = X^T (p - y) / n."""
    features = np.column_stack([data[:, 0], data[:, 1], np.ones(len(data))])
    labels = data[:, 2]
    theta = np.zeros(3)
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-features @ theta))
        gradient = features.T @ (p - labels) / len(labels)
        hessian = features.T @ (features * (p * (1 - p))[:, None]) / len(labels)
        theta -= np.linalg.solve(hessian, gradient)
    return theta


def test_logistic_reaches_the_maximum_likelihood_weights(fit) -> None:
    params = fitted(fit(SAMPLES / "logistic.ad", "--data", SAMPLES / "logistic.csv", "--optimizer", "momentum",
                        "--lr", "0.5", "--steps", "500", "-q"))
    want = logistic_maximum_likelihood(load_csv("logistic.csv"))
    np.testing.assert_allclose([params["w1"], params["w2"], params["b"]], want, rtol=1e-6)


def decay_least_squares(data: np.ndarray) -> np.ndarray:
    """Gauss-Newton on sum((a exp(-k t) + c - y)^2), started near the answer."""
    t, y = data[:, 0], data[:, 1]
    theta = np.array([2.5, 1.0, 0.4])
    for _ in range(100):
        a, k, c = theta
        e = np.exp(-k * t)
        jacobian = np.column_stack([e, -a * t * e, np.ones_like(t)])
        step, *_ = np.linalg.lstsq(jacobian, a * e + c - y, rcond=None)
        theta = theta - step
    return theta


def test_decay_curve_fit_finds_the_least_squares_curve(fit) -> None:
    params = fitted(fit(SAMPLES / "decay.ad", "--data", SAMPLES / "decay.csv", "--optimizer", "adam",
                        "--lr", "0.05", "--steps", "3000", "-q"))
    want = decay_least_squares(load_csv("decay.csv"))
    np.testing.assert_allclose([params["a"], params["k"], params["c"]], want, rtol=1e-4)
    # and the generating curve, y = 3 exp(-0.8 t) + 0.5, to within the noise
    assert params["a"] == pytest.approx(3.0, abs=0.05) and params["k"] == pytest.approx(0.8, abs=0.05)


# --- outputs ----------------------------------------------------------------------------------


def test_params_file_is_what_eval_values_reads(fit, tmp_path) -> None:
    out = tmp_path / "params.json"
    result = fit(SAMPLES / "line.ad", "--data", SAMPLES / "line.csv", "--steps", "50", "-o", out)
    assert result.exit_code == 0 and result.stdout == ""
    params = json.loads(out.read_text())
    assert list(params) == ["w", "b"] and all(isinstance(v, float) for v in params.values())
    from click.testing import CliRunner

    evaluated = CliRunner().invoke(main, ["eval", str(SAMPLES / "line.ad"), "--values", str(out),
                                          "--set", "x=3", "--format", "json"])
    assert evaluated.exit_code == 0, evaluated.output
    values = json.loads(evaluated.stdout)["values"]
    assert values["prediction"] == params["w"] * 3 + params["b"]


def test_history_has_one_row_per_step(fit, tmp_path) -> None:
    history = tmp_path / "history.csv"
    result = fit(SAMPLES / "line.ad", "--data", SAMPLES / "line.csv", "--steps", "7", "--lr", "0.1",
                 "--lr-schedule", "linear", "--history", history, "-q")
    assert result.exit_code == 0
    lines = history.read_text().splitlines()
    assert lines[0] == "step,loss,grad_norm,lr" and len(lines) == 8
    rows = [[float(x) for x in line.split(",")] for line in lines[1:]]
    assert [r[0] for r in rows] == [1, 2, 3, 4, 5, 6, 7]
    # the linear schedule from 0.1 to 0.01 over 7 steps; the loss of step 1 is at the start (w = b = 0)
    assert [r[3] for r in rows] == pytest.approx([0.1 - 0.09 * k / 7 for k in range(7)], rel=1e-15)
    assert rows[0][1] == pytest.approx(float(np.mean(load_csv("line.csv")[:, 1] ** 2)), rel=1e-13)


def test_a_float32_history_holds_float32s_shortest_digits(fit, tmp_path) -> None:
    """As the values file does: 0.9970973, not the float64 digits 0.9970973134040833 of a float32
    loss, in every column measured (validation loss and metrics too)."""
    history = tmp_path / "history.csv"
    result = fit(SAMPLES / "line.ad", "--data", SAMPLES / "line.csv", "--steps", "4", "--lr", "0.1",
                 "--lr-schedule", "cosine", "--validation-data", SAMPLES / "line.csv", "--metric", "mae:prediction:y",
                 "--dtype", "float32", "--history", history, "-q")
    assert result.exit_code == 0, result.stderr
    lines = history.read_text().splitlines()
    assert lines[0] == "step,loss,grad_norm,lr,validation_loss,mae,validation_mae" and len(lines) == 5
    cells = [cell for line in lines[1:] for cell in line.split(",")[1:] if cell]
    assert len(cells) > 4 * 3
    for cell in cells:
        assert cell == str(np.float32(cell)), cell  # float32's shortest text, which reads back to the same bits
    y = load_csv("line.csv")[:, 1].astype(np.float32)
    first = lines[1].split(",")
    start = float(np.mean(y * y, dtype=np.float32))  # the loss at w = b = 0
    assert float(first[1]) == pytest.approx(start, rel=1e-6)
    assert float(first[4]) == pytest.approx(start, rel=1e-6)  # the same rows held out
    assert float(first[5]) == pytest.approx(float(np.mean(np.abs(y))), rel=1e-6)


def test_same_inputs_and_seed_give_the_same_bytes(fit, tmp_path) -> None:
    outputs = []
    for run in range(2):
        out, history = tmp_path / f"p{run}.json", tmp_path / f"h{run}.csv"
        result = fit(SAMPLES / "line.ad", "--data", SAMPLES / "line.csv", "--params", "w,b", "--set", "w=0",
                     "--optimizer", "adam", "--lr", "0.05", "--batch-size", "16", "--seed", "9", "--steps", "40",
                     "-o", out, "--history", history, "-q")
        assert result.exit_code == 0
        outputs.append((out.read_bytes(), history.read_bytes()))
    assert outputs[0] == outputs[1]
    other = fit(SAMPLES / "line.ad", "--data", SAMPLES / "line.csv", "--optimizer", "adam", "--lr", "0.05",
                "--batch-size", "16", "--seed", "10", "--steps", "40", "-q")
    assert other.stdout.encode() != outputs[0][0]


def test_init_draws_the_parameters_without_a_value(fit, tmp_path) -> None:
    program = tmp_path / "m.ad"
    program.write_text("loss = (w*x + b - y)**2\n")
    missing = fit(program, "--data", SAMPLES / "line.csv", "--steps", "1")
    assert missing.exit_code == 1
    assert "no starting value for parameters w, b" in missing.stderr and "--init" in missing.stderr
    history = tmp_path / "h.csv"
    result = fit(program, "--data", SAMPLES / "line.csv", "--steps", "1", "--init", "uniform", "--seed", "3",
                 "--history", history, "-q")
    assert result.exit_code == 0
    w, b = np.random.RandomState(3).uniform(-1.0, 1.0, 2)
    data = load_csv("line.csv")
    start_loss = float(np.mean((w * data[:, 0] + b - data[:, 1]) ** 2))
    assert float(history.read_text().splitlines()[1].split(",")[1]) == pytest.approx(start_loss, rel=1e-12)


def test_progress_lines_when_piped_and_the_final_line(fit) -> None:
    result = fit(SAMPLES / "line.ad", "--data", SAMPLES / "line.csv", "--steps", "20", "--progress-every", "5")
    lines = result.stderr.splitlines()
    assert [line.split()[1] for line in lines[:-1]] == ["1/20", "5/20", "10/20", "15/20", "20/20"]
    assert lines[-1].startswith("finished 20 steps: loss ")


def test_quiet_prints_nothing_on_stderr(fit) -> None:
    result = fit(SAMPLES / "line.ad", "--data", SAMPLES / "line.csv", "--steps", "20", "-q")
    assert result.exit_code == 0 and result.stderr == ""


def test_tol_stops_early_and_says_so(fit) -> None:
    result = fit(SAMPLES / "line.ad", "--data", SAMPLES / "line.csv", "--lr", "0.2", "--steps", "100000",
                 "--tol", "1e-12")
    assert result.exit_code == 0
    assert "the loss has not improved by more than --tol 1e-12 of itself for 5 steps" in result.stderr.splitlines()[-1]


def test_plot_is_a_deterministic_svg_or_a_png_or_a_pdf(fit, tmp_path) -> None:
    drawings = []
    for name in ("a.svg", "b.svg", "c.png", "d.pdf"):
        result = fit(SAMPLES / "line.ad", "--data", SAMPLES / "line.csv", "--steps", "30", "--plot",
                     tmp_path / name, "-q")
        assert result.exit_code == 0, result.stderr
        drawings.append((tmp_path / name).read_bytes())
    assert drawings[0] == drawings[1] and drawings[0].startswith(b"<?xml") and b'id="loss"' in drawings[0]
    assert drawings[2].startswith(b"\x89PNG") and drawings[3].startswith(b"%PDF")


# --- stopping without losing anything --------------------------------------------------------------


def test_nan_loss_stops_names_the_step_and_writes_the_last_finite_parameters(fit, tmp_path) -> None:
    out = tmp_path / "params.json"
    result = fit(SAMPLES / "line.ad", "--data", SAMPLES / "line.csv", "--lr", "100", "--steps", "1000", "-o", out)
    assert result.exit_code == 1
    message = result.stderr.splitlines()
    error = next(line for line in message if "error:" in line)
    assert "at step" in error and ("inf" in error or "nan" in error)
    assert any("try --lr 10" in line for line in message)
    params = json.loads(out.read_text())
    assert all(math.isfinite(v) for v in params.values())


def test_a_start_with_a_nan_loss_writes_nothing(fit, tmp_path) -> None:
    out = tmp_path / "params.json"
    out.write_text("keep me")
    result = fit(SAMPLES / "line.ad", "--data", SAMPLES / "line.csv", "--set", "w=1e300", "-o", out)
    assert result.exit_code == 1 and "starting" in result.stderr
    assert out.read_text() == "keep me"


def test_an_output_that_cannot_be_written_fails_before_training(fit, tmp_path) -> None:
    result = fit(SAMPLES / "line.ad", "--data", SAMPLES / "line.csv", "--steps", "100000000",
                 "-o", tmp_path / "missing" / "params.json")
    assert result.exit_code == 1 and "does not exist" in result.stderr


def _start_fit(tmp_path: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "autodiff_cli", "fit", str(SAMPLES / "line.ad"), "--data", str(SAMPLES / "line.csv"),
         "--lr", "0.01", "--progress-every", "1", *extra],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def test_ctrl_c_stops_after_the_step_writes_the_best_so_far_and_resumes(tmp_path) -> None:
    process = _start_fit(tmp_path, "--steps", "100000000", "-o", "params.json", "--history", "h.csv")
    assert process.stderr is not None
    for line in process.stderr:  # wait until training runs
        if line.startswith("step 3/"):
            break
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    last = stderr.splitlines()[-1]
    assert last.startswith("interrupted after step ") and "params.json" in last
    steps_done = int(last.split()[3])
    params = json.loads((tmp_path / "params.json").read_text())
    history = (tmp_path / "h.csv").read_text().splitlines()
    assert len(history) == steps_done + 1
    # Plain SGD at a constant rate keeps no state, so going on from the written parameters
    # (those after the last update: the loss falls at every step here) for the remaining
    # steps lands exactly where an uninterrupted run lands.
    total = steps_done + 5
    resumed = subprocess.run(
        [sys.executable, "-m", "autodiff_cli", "fit", str(SAMPLES / "line.ad"), "--data", str(SAMPLES / "line.csv"),
         "--lr", "0.01", "--values", "params.json", "--steps", "5", "-q"],
        cwd=tmp_path, capture_output=True, text=True, check=True)
    straight = subprocess.run(
        [sys.executable, "-m", "autodiff_cli", "fit", str(SAMPLES / "line.ad"), "--data", str(SAMPLES / "line.csv"),
         "--lr", "0.01", "--steps", str(total), "-q"],
        cwd=tmp_path, capture_output=True, text=True, check=True)
    assert params != json.loads(straight.stdout)
    assert json.loads(resumed.stdout) == json.loads(straight.stdout)


def test_a_second_ctrl_c_interrupts_the_step_and_still_writes(tmp_path) -> None:
    # A program and data big enough for a step to take a good fraction of a second.
    lines = ["w = 0.5", "b = 0", "h0 = w*x + b"] + [f"h{i} = tanh(h{i - 1}*w + b)" for i in range(1, 1500)]
    (tmp_path / "deep.ad").write_text("\n".join(lines + ["loss = (h1499 - y)**2"]) + "\n")
    x = np.linspace(-1, 1, 20_000)
    np.savetxt(tmp_path / "rows.csv", np.column_stack([x, 0.5 * x]), delimiter=",", header="x,y", comments="")
    process = subprocess.Popen(
        [sys.executable, "-m", "autodiff_cli", "fit", "deep.ad", "--data", "rows.csv", "--steps", "1000000",
         "--progress-every", "1", "-o", "params.json"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert process.stderr is not None
    seen = []
    for line in process.stderr:
        seen.append(line)
        if line.startswith("step 1/"):
            process.send_signal(signal.SIGINT)  # the first: stop after this step...
        elif line.startswith("stopping after this step"):
            process.send_signal(signal.SIGINT)  # ...the second, at once: now
            break
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, "".join(seen) + stderr
    assert "Traceback" not in stderr
    assert stderr.splitlines()[-1].startswith("interrupted during step 2 of 1,000,000: wrote the best")
    assert set(json.loads((tmp_path / "params.json").read_text())) == {"w", "b"}


# --- usage errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (["--lr", "nan"], "not a finite number"),
        (["--lr", "0"], "must be above 0"),
        (["--lr", "-1"], "must be above 0"),
        (["--tol", "-1"], "must be at least 0"),
        (["--weight-decay", "inf"], "not a finite number"),
        (["--steps", "0"], "0 is not in the range"),
        (["--batch-size", "0"], "0 is not in the range"),
        (["--momentum", "0.5"], "--momentum applies to --optimizer momentum"),
        (["--final-lr", "0.1"], "--final-lr needs --lr-schedule"),
        (["--plot", "loss.jpg"], "should end in .svg, .png or .pdf"),
        (["-o", "same.txt", "--history", "same.txt"], "name the same file"),
        (["--history", "-"], "cannot both go to stdout"),
        (["--history", "/dev/stdout"], "the parameters and --history cannot both go to stdout"),
        (["-o", "-", "--plot", "/dev/fd/1"], "the parameters and --plot cannot both go to stdout"),
        (["--history", "/dev/stdout", "--plot", "/dev/stdout"],
         "the parameters, --history and --plot cannot all go to stdout"),
        (["--optimizer", "rmsprop"], "'rmsprop' is not one of"),
    ],
    ids=["lr-nan", "lr-zero", "lr-negative", "tol-negative", "decay-inf", "steps-zero", "batch-zero",
         "momentum-with-sgd", "final-lr-constant", "plot-extension", "same-file", "two-to-stdout",
         "history-to-dev-stdout", "plot-to-fd-1", "three-to-stdout",
         "unknown-optimizer"],
)
def test_usage_errors_exit_2(fit, args, message: str, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # a bare os.chdir would leave every later test there
    result = fit(SAMPLES / "line.ad", "--data", SAMPLES / "line.csv", *args)
    assert result.exit_code == 2 and message in result.stderr, result.stderr


@pytest.mark.parametrize("partitions", ["dask", "directory"])
def test_float32_on_partitions_is_a_usage_error_naming_both_options(fit, tmp_path, partitions) -> None:
    """Two options that do not go together are a usage error (2), as eval --tangent with --dtype
    float32 is; it once exited 1, as an error in the program would."""
    (tmp_path / "parts").mkdir()
    for name in ("a.csv", "b.csv"):
        (tmp_path / "parts" / name).write_text((SAMPLES / "line.csv").read_text())
    where = (["--data", SAMPLES / "line.csv", "--dask", "local:1"] if partitions == "dask"
             else ["--data", tmp_path / "parts"])
    result = fit(SAMPLES / "line.ad", *where, "--steps", "3", "--dtype", "float32", "-q")
    assert result.exit_code == 2, result.stderr
    assert ("Error: --dtype float32 does not go with --dask (or --data naming many files): training over "
            "partitions runs in float64 only; leave out --dtype") in result.stderr


@pytest.mark.parametrize("option", ["-o", "--history"])
def test_an_output_over_the_data_or_the_program_is_refused(fit, tmp_path, option: str) -> None:
    data, program = tmp_path / "rows.csv", tmp_path / "m.ad"
    data.write_text((SAMPLES / "line.csv").read_text())
    program.write_text((SAMPLES / "line.ad").read_text())
    for target, what in ((data, "the --data file"), (program, "the program file")):
        before = target.read_bytes()
        result = fit(program, "--data", data, option, target, "--steps", "1")
        assert result.exit_code == 2 and f"is {what} this run reads" in result.stderr
        assert target.read_bytes() == before


def test_data_is_required(fit) -> None:
    result = fit(SAMPLES / "line.ad")
    assert result.exit_code == 2 and "--data" in result.stderr


def test_plot_without_matplotlib_fails_before_training_with_the_install_command(fit, monkeypatch, tmp_path) -> None:
    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real_find_spec(name, *a))
    result = fit(SAMPLES / "line.ad", "--data", SAMPLES / "line.csv", "--plot", tmp_path / "loss.svg")
    assert result.exit_code == 1
    assert "--plot needs matplotlib" in result.stderr and "pip install matplotlib" in result.stderr
    assert not (tmp_path / "loss.svg").exists() and result.stdout == ""


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal (POSIX)")
def test_a_terminal_gets_a_progress_bar_and_stdout_only_the_parameters(tmp_path) -> None:
    controller, terminal = os.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "autodiff_cli", "fit", str(SAMPLES / "line.ad"), "--data", str(SAMPLES / "line.csv"),
         "--steps", "60000"],  # long enough for the bar, which waits a second before it shows
        stdout=subprocess.PIPE, stderr=terminal, cwd=tmp_path, env={**os.environ, "COLUMNS": "120"},
    )
    os.close(terminal)
    shown = b""
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        shown += chunk
    stdout, _ = process.communicate(timeout=60)
    os.close(controller)
    text = shown.decode("utf-8", "replace")
    assert process.returncode == 0
    assert "step 60,000/60,000" in text and "loss" in text and "grad norm" in text
    assert "finished 60,000 steps" in text
    assert set(json.loads(stdout)) == {"w", "b"}


def test_moons_demo_reaches_full_training_accuracy(fit, tmp_path) -> None:
    import random

    import micrograd.nn

    out = tmp_path / "moons.json"
    result = fit(SAMPLES / "moons.ad", "--data", SAMPLES / "moons.csv", "--lr", "1", "--lr-schedule", "linear",
                 "--steps", "100", "-o", out, "-q")
    assert result.exit_code == 0, result.stderr
    params = json.loads(out.read_text())
    assert len(params) == 337
    # Score the points with micrograd's own MLP carrying the learned weights (moons.ad declares
    # them in micrograd's parameter order), so that the accuracy is not our executor's word.
    random.seed(0)
    model = micrograd.nn.MLP(2, [16, 16, 1])
    for p, value in zip(model.parameters(), params.values()):
        p.data = value
    data = load_csv("moons.csv")
    correct = sum((model([x1, x2]).data > 0) == (label > 0) for x1, x2, label in data)
    assert correct == len(data) == 100


def test_moons_py_trains_the_same_network_through_the_python_api(fit, capsys) -> None:
    # samples/moons.py builds a graph of Values per step and moves them with optim.SGD; fit runs
    # the vectorized executor and the array update: two implementations of the same 100 steps.
    import importlib.util

    spec = importlib.util.spec_from_file_location("moons_sample", SAMPLES / "moons.py")
    moons = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(moons)
    model, accuracy = moons.train(steps=100, report_every=50)
    printed = capsys.readouterr().out.splitlines()
    assert accuracy == 1.0 and printed[-1].endswith("training accuracy 100%")
    result = fit(SAMPLES / "moons.ad", "--data", SAMPLES / "moons.csv", "--lr", "1", "--lr-schedule", "linear",
                 "--steps", "100", "-q")
    learned = list(fitted(result).values())
    for p, value in zip(model.parameters(), learned, strict=True):
        assert p.data == pytest.approx(value, rel=1e-9, abs=1e-12)


def test_sigterm_stops_the_step_writes_the_best_so_far_and_exits_143(tmp_path) -> None:
    process = _start_fit(tmp_path, "--steps", "100000000", "-o", "params.json")
    assert process.stderr is not None
    for line in process.stderr:
        if line.startswith("step 3/"):
            break
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 143, stderr
    assert stderr.splitlines()[-1].startswith("stopped by SIGTERM ")
    assert set(json.loads((tmp_path / "params.json").read_text())) == {"w", "b"}


# --- the data ----------------------------------------------------------------------------------


@pytest.mark.parametrize("extension, text", [
    ("tsv", "x\ty\n{rows}"),
    ("jsonl", "{rows}"),
], ids=["tsv", "jsonl"])
def test_tsv_and_json_lines_give_what_csv_gives(fit, tmp_path, extension: str, text: str) -> None:
    data = load_csv("line.csv")
    if extension == "tsv":
        rows = "".join(f"{x!r}\t{y!r}\n" for x, y in data.tolist())
    else:
        rows = "".join(json.dumps({"x": x, "y": y}) + "\n" for x, y in data.tolist())
    path = tmp_path / f"rows.{extension}"
    path.write_text(text.format(rows=rows))
    args = ["--lr", "0.2", "--steps", "50", "-q"]
    assert fitted(fit(SAMPLES / "line.ad", "--data", path, *args)) == \
        fitted(fit(SAMPLES / "line.ad", "--data", SAMPLES / "line.csv", *args))


def test_rows_from_stdin(fit) -> None:
    text = (SAMPLES / "line.csv").read_text()
    args = ["--lr", "0.2", "--steps", "50", "-q"]
    assert fitted(fit(SAMPLES / "line.ad", "--data", "-", *args, input=text)) == \
        fitted(fit(SAMPLES / "line.ad", "--data", SAMPLES / "line.csv", *args))


@pytest.mark.parametrize("program, data", [("-", "-"), ("/dev/stdin", "-"), ("-", "/dev/fd/0")],
                         ids=["dash-dash", "dev-stdin", "dev-fd-0"])
def test_stdin_cannot_carry_both_program_and_rows(fit, program, data) -> None:
    result = fit(program, "--data", data, input="loss = (w*x - y)**2\n")
    assert result.exit_code == 2 and "standard input can carry the rows or the program" in result.stderr


@pytest.mark.parametrize("header, extra, message", [
    ("x,y,z", [], "the column 'z' is not an input of the program"),
    ("x,y,loss", [], "the column 'loss' names a variable the program computes"),
    ("x,y", ["--set", "x=2"], "'x' is both a column of"),
], ids=["unknown", "computed", "also-set"])
def test_a_wrong_column_is_shown_in_the_first_line(fit, tmp_path, header: str, extra: list[str],
                                                   message: str) -> None:
    path = tmp_path / "rows.csv"
    path.write_text(header + "\n" + ",".join(["1"] * header.count(",")) + ",1\n")
    result = fit(SAMPLES / "line.ad", "--data", path, *extra)
    assert result.exit_code == 1 and message in result.stderr
    assert "rows.csv:1:" in result.stderr and "^" in result.stderr


def test_a_bad_cell_is_named_by_line_and_column(fit, tmp_path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text("x,y\n1,2\n3,oops\n")
    result = fit(SAMPLES / "line.ad", "--data", path)
    assert result.exit_code == 1 and "rows.csv:3:" in result.stderr and "'y'" in result.stderr


def test_no_rows_is_an_error(fit, tmp_path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text("x,y\n")
    result = fit(SAMPLES / "line.ad", "--data", path)
    assert result.exit_code == 1 and "no rows" in result.stderr


def test_a_failing_row_is_named_by_its_line_in_the_data(fit, tmp_path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text("x,y\n1,2\n2,3\n-1,0\n")
    result = fit("-e", "a = 1; loss = (log(a*x) - y)**2", "--data", path)
    assert result.exit_code == 1
    assert "log of -1 is undefined" in result.stderr
    assert "note: in line 4 of " in result.stderr and "x=-1.0, y=0.0" in result.stderr


# --- validation rows with entry columns ----------------------------------------------------------

LINEAR_2 = "w = [0.1, 0.2]\nb = 0\nloss = (sum(w * x) + b - y)**2\n"


@pytest.mark.parametrize("header, named, what", [
    ("x[0],y", "x[1]", "have no column for x[1], which"),
    ("x[0],x[1],x[2],y", "x[2]", "give x[2], which"),
    ("x[0],x[2],y", "x[2]", "have no column for x[1], which"),
], ids=["missing-entry", "extra-entry", "both"])
def test_validation_rows_must_give_the_training_rows_entry_columns(fit, tmp_path, header, named, what) -> None:
    # x has no declared shape: x[0] alone would make it a 1-vector, broadcast against w, and the
    # validation loss would be of another model, silently.
    (tmp_path / "m.ad").write_text(LINEAR_2)
    (tmp_path / "train.csv").write_text("x[0],x[1],y\n1,2,3\n2,1,0\n")
    cells = ",".join("1" for _ in header.split(","))
    (tmp_path / "val.csv").write_text(f"{header}\n{cells}\n")
    result = fit(tmp_path / "m.ad", "--data", tmp_path / "train.csv", "--validation-data", tmp_path / "val.csv",
                 "--steps", 2, "-q")
    assert result.exit_code == 1, result.stderr
    assert f"the validation rows {what}" in result.stderr and named in result.stderr
    assert "val.csv" in result.stderr
    if header == "x[0],x[2],y":
        assert "train.csv gives, and give x[2], which it does not" in result.stderr


def test_validation_entry_columns_may_be_spelled_with_spaces(fit, tmp_path) -> None:
    (tmp_path / "m.ad").write_text("W = [[0.5, 0], [0, 0.5]]\nloss = sum((W @ x - y)**2)\n")
    (tmp_path / "train.csv").write_text("x[0],x[1],y\n1,2,3\n")
    (tmp_path / "val.csv").write_text("x[1],x[ 0 ],y\n2,1,3\n")
    result = fit(tmp_path / "m.ad", "--data", tmp_path / "train.csv", "--validation-data", tmp_path / "val.csv",
                 "--steps", 1, "--lr", 0.1)
    # the same row, columns in another order and spelling: at step 1 (W = I/2, x = [1, 2], y = 3)
    # both losses are (0.5 - 3)^2 + (1 - 3)^2 = 10.25
    assert result.exit_code == 0, result.stderr
    start = (0.5 - 3) ** 2 + (1 - 3) ** 2
    assert f"step 1/1  loss {start:g}" in result.stderr and f"validation loss {start:g}" in result.stderr


# --- the last line --------------------------------------------------------------------------------


def test_the_last_line_names_the_report_it_wrote(fit, tmp_path) -> None:
    report = tmp_path / "run.html"
    result = fit(SAMPLES / "line.ad", "--data", SAMPLES / "line.csv", "--steps", 3, "--report", report,
                 "-o", tmp_path / "p.json")
    assert result.exit_code == 0, result.stderr
    last = result.stderr.splitlines()[-1]
    assert last.startswith("finished 3 steps: ") and f"to {tmp_path / 'p.json'}; the report is in {report};" in last
    assert report.read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html")


def test_the_last_line_of_an_interrupted_run_names_the_report_too(capsys) -> None:
    import click

    from autodiff_cli.cli.fit import _conclude, _Interrupts
    from autodiff_cli.execute.fit import FitResult, FitSettings, Step, StopReason

    result = FitResult(np.array([1.0]), 3.0, StopReason.INTERRUPTED, 1, [Step(1, 4.0, 1.0, 0.1)], params_step=2)
    with pytest.raises(click.exceptions.Exit):
        _conclude(result, FitSettings(steps=10), "p.json", False, _Interrupts(), rows=4, report="run.html")
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith("interrupted after step 1 of 10: wrote the best parameters so far")
    assert "to p.json; the report is in run.html" in last


def test_a_diverged_run_names_the_report_in_a_note(fit, tmp_path) -> None:
    report = tmp_path / "too_high.html"
    result = fit(SAMPLES / "line.ad", "--data", SAMPLES / "line.csv", "--lr", 5, "-q", "--report", report,
                 "-o", tmp_path / "p.json")
    assert result.exit_code == 1 and "the loss is inf at step" in result.stderr
    assert f"note: the report is in {report}" in result.stderr and report.exists()


# --- help ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("columns", ["60", "80", "200"])
def test_help_keeps_within_80_columns_and_short(columns) -> None:
    env = {key: value for key, value in os.environ.items() if key not in ("NO_COLOR", "FORCE_COLOR")}
    result = subprocess.run([sys.executable, "-m", "autodiff_cli", "fit", "--help"], capture_output=True,
                            text=True, check=True, env={**env, "COLUMNS": columns, "PYTHONPATH": str(REPO)})
    lines = result.stdout.splitlines()
    assert [line for line in lines if len(line) > 80] == []
    assert len(lines) <= 60 if columns != "60" else len(lines) <= 100
    assert "docs/fit.md" in result.stdout and "Examples:" in result.stdout


# --- no Python words in what people read -----------------------------------------------------------


def test_the_reports_run_table_says_unset_settings_in_words(fit, tmp_path) -> None:
    import re

    report = tmp_path / "run.html"
    result = fit(SAMPLES / "line.ad", "--data", SAMPLES / "line.csv", "--steps", 2, "-q", "--report", report,
                 "-o", tmp_path / "p.json")
    assert result.exit_code == 0, result.stderr
    table = re.search(r'<table id="run">(.*?)</table>', report.read_text(encoding="utf-8")).group(1)
    cells = dict(re.findall(r"<tr><th>(\w+)</th><td><code>(.*?)</code></td></tr>", table))
    assert cells["batch_size"] == "every row at every step" and cells["validation"] == "none"
    assert not {"None", "True", "False"} & set(cells.values()), cells


def test_the_report_of_one_step_says_one_step(tmp_path) -> None:
    from autodiff_cli import fit as train

    xs = [0.0, 1.0, 2.0]
    html = train(str(SAMPLES / "line.ad"), {"x": xs, "y": [1.0, 3.0, 5.0]}, steps=1).report().html().decode("utf-8")
    assert "1 step: every step was taken." in html and "1 steps" not in html


def test_a_bad_validation_row_is_advised_about_in_the_validation_file(fit, tmp_path) -> None:
    (tmp_path / "train.csv").write_text("x,y\n1,2\n2,3\n")
    (tmp_path / "val.csv").write_text("x,y\n1,2\nnan,0\n")
    result = fit("-e", "a = 1; loss = (a*x - y)**2", "--data", tmp_path / "train.csv",
                 "--validation-data", tmp_path / "val.csv", "--steps", 3, "-q")
    assert result.exit_code == 1
    assert "note: in line 3 of " in result.stderr
    assert f"drop or fill the missing values in {tmp_path / 'val.csv'} (fit trains" in result.stderr


@pytest.mark.parametrize("option", ["-o", "--history"])
def test_fit_refuses_to_write_over_a_npy_file_set_reads(fit, tmp_path, option) -> None:
    """--set W=w.npy reads w.npy: -o w.npy (or --history w.npy) would destroy the user's weights
    (found by the adversarial pass: it exited 0 with the file overwritten)."""
    import numpy as np

    weights = tmp_path / "w.npy"
    np.save(weights, np.array([[0.5], [0.1]]))
    before = weights.read_bytes()
    args = ["--data", SAMPLES / "line_ones.csv", "--set", f"W={weights}", "--steps", 2, "-q"]
    args += [option, weights] if option == "-o" else [option, weights, "-o", tmp_path / "p.json"]
    result = fit(SAMPLES / "regression_rows.ad", *args)
    assert result.exit_code == 2, result.stderr
    assert "the .npy file of --set W" in result.stderr and "would destroy it" in result.stderr
    assert weights.read_bytes() == before
