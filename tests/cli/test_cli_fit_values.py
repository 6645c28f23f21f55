"""`autodiff fit` and the values it is given: names the program does not use are warned about as
every other command warns about them, and what -o writes reads back (--values) as the trained
model, so that -o over the --values file resumes training without losing anything in the file.

Expected parameters come from plain SGD written here in NumPy on samples/line.csv (the loss
of samples/line.ad is (w*x + b - y)**2); expected files are written out by hand.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from autodiff_cli.cli import main

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
LINE = [str(SAMPLES / "line.ad"), "--data", str(SAMPLES / "line.csv")]
LR = 0.01  # fit's default learning rate


def sgd(w: float, b: float, steps: int, learn: str = "wb") -> tuple[float, float]:
    """``steps`` full-batch SGD steps on the mean squared error of w*x + b over line.csv,
    moving only the parameters named in ``learn``."""
    x, y = np.loadtxt(SAMPLES / "line.csv", delimiter=",", skiprows=1).T
    for _ in range(steps):
        residual = w * x + b - y
        grad_w, grad_b = np.mean(2 * residual * x), np.mean(2 * residual)
        w, b = (w - LR * grad_w if "w" in learn else w), (b - LR * grad_b if "b" in learn else b)
    return float(w), float(b)


def pairs(text: str) -> list[tuple[str, float]]:
    """The keys of a JSON object in the order they are written, with their values."""
    return json.loads(text, object_pairs_hook=list)


def assert_values(text: str, expected: list[tuple[str, float]]) -> None:
    written = pairs(text)
    assert [name for name, _ in written] == [name for name, _ in expected]
    for (name, value), (_, wanted) in zip(written, expected):
        assert value == pytest.approx(wanted, rel=1e-12, abs=1e-15), name


# --- Bug A: a value for a name the program does not use ------------------------------------------


@pytest.mark.parametrize("values, sets, message", [
    (None, ["W=5"], "'W' is not used by the program; its value is ignored"),
    ('{"w": 1, "b": 0, "zz": 3}', [], "'zz' is not used by the program; its value is ignored"),
    ('{"w": 1, "zz": 3}', ["q=1"],
     "2 values are given for names the program does not use, so they are ignored: 'zz', 'q'"),
], ids=["set-typo", "values-stray-key", "both-counted-in-one-warning"])
def test_an_unused_name_is_warned_about(runner, tmp_path, values, sets, message) -> None:
    options = [arg for item in sets for arg in ("--set", item)]
    if values is not None:
        (tmp_path / "v.json").write_text(values)
        options += ["--values", str(tmp_path / "v.json")]
    result = runner.invoke(main, ["fit", *LINE, "--steps", "1", "-q", *options])
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines() == [f"warning: {message}"]


@pytest.mark.parametrize("command", [["eval", "--set", "x=1"], ["check", "--set", "x=1"]], ids=["eval", "check"])
def test_fit_warns_in_the_words_of_the_other_commands(runner, command) -> None:
    other = runner.invoke(main, [command[0], str(SAMPLES / "line.ad"), *command[1:], "--set", "W=5"])
    fitted = runner.invoke(main, ["fit", *LINE, "--steps", "1", "-q", "--set", "W=5"])
    warning = [line for line in other.stderr.splitlines() if line.startswith("warning:")]
    assert warning == ["warning: 'W' is not used by the program; its value is ignored"]
    assert fitted.stderr.splitlines() == warning


# --- Bug B: -o over the --values file (a resume) keeps everything in it ------------------------


W5_B_FIXED = sgd(1.0, 0.5, 5, learn="w")  # w after 5 steps from w=1 with b fixed at 0.5
WB5 = sgd(1.0, 0.0, 5)  # w, b after 5 steps from w=1, b=0
FROM_DEFAULT_W = sgd(0.0, 0.25, 5)  # from the program's w = 0 and b = 0.25


@pytest.mark.parametrize("before, options, after, verbatim", [
    ('{"w": 1, "b": 0.5}', ["--params", "w"],
     [("w", W5_B_FIXED[0]), ("b", 0.5)], ['  "b": 0.5']),
    ('{"w": 1, "zz": 3, "b": 0}', [],
     [("w", WB5[0]), ("zz", 3.0), ("b", WB5[1])], ['  "zz": 3,']),
    ('{"b": 0.5, "w": 1}', ["--params", "w"],
     [("b", 0.5), ("w", W5_B_FIXED[0])], ['  "b": 0.5,']),
    ('{"note": 7, "b": 0.25}', [],
     [("note", 7.0), ("b", FROM_DEFAULT_W[1]), ("w", FROM_DEFAULT_W[0])], ['  "note": 7,']),
    ('{"w": 1, "b": 0.5, "tiny": 1e-400, "big": 12345678901234567891}', ["--params", "w"],
     [("w", W5_B_FIXED[0]), ("b", 0.5), ("tiny", 0.0), ("big", 12345678901234567891.0)],
     ['  "tiny": 1e-400,', '  "big": 12345678901234567891']),
    ('{"note": 1.50, "w": 1, "b": 0}', ["--set", "note=2"],
     [("note", 1.5), ("w", WB5[0]), ("b", WB5[1])], ['  "note": 1.50,']),
], ids=["fixed-input-kept", "unused-key-kept-in-place", "key-order-kept", "new-parameter-appended",
        "numbers-keep-their-text", "unused-set-does-not-change-the-file"])
def test_out_over_the_values_file_keeps_what_is_not_learned(runner, tmp_path, before, options, after,
                                                             verbatim) -> None:
    values = tmp_path / "p.json"
    values.write_text(before)
    result = runner.invoke(main, ["fit", *LINE, "--values", str(values), "-o", str(values), "--steps", "5", "-q",
                                  *options])
    assert result.exit_code == 0, result.stderr
    text = values.read_text()
    assert_values(text, after)
    lines = text.splitlines()
    assert lines[0] == "{" and lines[-1] == "}" and text.endswith("}\n")
    for line in verbatim:  # untouched values keep their text: 3 stays 3, not 3.0
        assert line in lines


@pytest.mark.parametrize("learn", ["w"], ids=["params-w"])
def test_resuming_twice_is_training_once_for_longer(runner, tmp_path, learn) -> None:
    values = tmp_path / "p.json"
    values.write_text('{"w": 1, "b": 0.5}')
    for _ in range(2):
        result = runner.invoke(main, ["fit", *LINE, "--values", str(values), "-o", str(values), "--steps", "5", "-q",
                                      "--params", learn])
        assert result.exit_code == 0, result.stderr
    assert_values(values.read_text(), [("w", sgd(1.0, 0.5, 10, learn="w")[0]), ("b", 0.5)])


# --- what -o writes reads back as the trained model -------------------------------------------


@pytest.mark.parametrize("values, sets, expected", [
    ('{"b": 0.5}', [], [("b", 0.5), ("w", sgd(0.0, 0.5, 5, learn="w")[0])]),
    (None, ["b=0.5"], [("b", 0.5), ("w", sgd(0.0, 0.5, 5, learn="w")[0])]),
    ('{"w": 1, "b": 0.5}', ["b=2"], [("w", sgd(1.0, 2.0, 5, learn="w")[0]), ("b", 2.0)]),
    (None, ["w=1", "W=5"], [("w", sgd(1.0, 0.0, 5, learn="w")[0])]),
], ids=["fixed-from-values", "fixed-from-set", "set-overrides-the-file", "unused-set-not-written"])
@pytest.mark.parametrize("out", ["other-file", "stdout"])
def test_what_is_written_reproduces_the_trained_model(runner, tmp_path, values, sets, expected, out) -> None:
    options = [arg for item in sets for arg in ("--set", item)]
    if values is not None:
        (tmp_path / "v.json").write_text(values)
        options += ["--values", str(tmp_path / "v.json")]
    target = tmp_path / "out.json"
    if out == "other-file":
        options += ["-o", str(target)]
    result = runner.invoke(main, ["fit", *LINE, "--params", "w", "--steps", "5", "-q", *options])
    assert result.exit_code == 0, result.stderr
    text = target.read_text() if out == "other-file" else result.stdout
    assert_values(text, expected)
    if values is not None:
        assert (tmp_path / "v.json").read_text() == values  # the values file is only read
    # eval with the written values alone gives the trained line at x = 3.
    target.write_text(text)
    evaluated = runner.invoke(main, ["eval", str(SAMPLES / "line.ad"), "--values", str(target), "--set", "x=3",
                                     "--format", "json"])
    assert evaluated.exit_code == 0, evaluated.stderr
    trained = dict(expected)
    b = trained.get("b", 0.0)
    assert json.loads(evaluated.stdout)["values"]["prediction"] == pytest.approx(trained["w"] * 3 + b, rel=1e-12)


@pytest.mark.parametrize("before", ['{"w": 1e300, "b": 0.5, "zz": 3}'], ids=["diverges-at-the-start"])
def test_nothing_written_leaves_the_values_file_as_it_was(runner, tmp_path, before) -> None:
    values = tmp_path / "p.json"
    values.write_text(before)
    result = runner.invoke(main, ["fit", *LINE, "--values", str(values), "-o", str(values), "--steps", "5", "-q"])
    assert result.exit_code == 1
    assert "at the starting values of the parameters, before any step" in result.stderr
    assert values.read_text() == before


@pytest.mark.parametrize("failing", ["history", "plot"], ids=["history", "plot"])
def test_a_file_that_cannot_be_written_does_not_lose_the_learned_values(runner, tmp_path, monkeypatch,
                                                                        failing: str) -> None:
    # A full disk while writing --history or --plot: the parameters are written all the same
    # (they were written last, so a training run was lost), and the command still fails.
    from autodiff_cli.cli import fit as fit_cli
    from autodiff_cli.errors import OutputError

    real_write = fit_cli.write_atomic
    bad = tmp_path / ("h.csv" if failing == "history" else "loss.svg")

    def write_atomic(path, data):  # type: ignore[no-untyped-def]
        if str(path) == str(bad):
            raise OutputError(f"cannot write {path}: No space left on device")
        real_write(path, data)

    monkeypatch.setattr(fit_cli, "write_atomic", write_atomic)
    params = tmp_path / "p.json"
    result = runner.invoke(main, ["fit", str(SAMPLES / "line.ad"), "--data", str(SAMPLES / "line.csv"), "--steps", "3",
                                  "-q", "-o", str(params), "--history", str(tmp_path / "h.csv"),
                                  "--plot", str(tmp_path / "loss.svg")])
    assert result.exit_code == 1, result.output
    assert "No space left on device" in result.stderr
    assert set(json.loads(params.read_text())) == {"w", "b"}
    other = tmp_path / ("loss.svg" if failing == "history" else "h.csv")
    assert other.exists()  # the file after the failing one is written too


# --- inputs drawn from the seed are written too (F6) --------------------------------------------


def moons_mlp_loss(values: dict, rows: np.ndarray) -> float:
    """samples/moons_mlp.ad's mean loss over moons_xy.csv's rows (x[0], x[1], y), in NumPy."""
    w1, b1, w2, b2, w3, b3 = (np.array(values[name], dtype=float) for name in ("W1", "b1", "W2", "b2", "W3", "b3"))
    h1 = np.maximum(rows[:, :2] @ w1.T + b1, 0)
    h2 = np.maximum(h1 @ w2.T + b2, 0)
    score = (h2 @ w3.T + b3)[:, 0]
    hinge = np.maximum(1 - rows[:, 2] * score, 0)
    penalty = sum(np.sum(v ** 2) for v in (w1, b1, w2, b2, w3, b3))
    return float(np.mean(hinge + 0.0001 * penalty))


def test_fixed_inputs_drawn_from_the_seed_are_written_and_read_back_as_the_trained_model(runner, tmp_path) -> None:
    """--params W3,b3 --seed 7 trains W3, b3 beside W1, W2 drawn from seed 7: eval and batch (which
    draw an initializer from seed 0) get them from the values file, or every prediction is another
    model's.  The drawn weights are NumPy's default_rng(7) in the order the program writes them;
    the zeros (b1, b2) depend on no seed and stay the program's, as a written-out default does."""
    out = tmp_path / "pp7.json"
    result = runner.invoke(main, ["fit", str(SAMPLES / "moons_mlp.ad"), "--data", str(SAMPLES / "moons_xy.csv"),
                                  "--steps", "50", "--lr", "0.3", "--params", "W3,b3", "--seed", "7", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    written = json.loads(out.read_text())
    assert list(written) == ["W1", "W2", "W3", "b3"]  # the inputs not given, in program order
    draws = np.random.default_rng(7)
    np.testing.assert_array_equal(written["W1"], draws.uniform(-1, 1, (16, 2)))
    np.testing.assert_array_equal(written["W2"], draws.uniform(-1, 1, (16, 16)))
    rows = np.loadtxt(SAMPLES / "moons_xy.csv", delimiter=",", skiprows=1)
    loss = moons_mlp_loss({"b1": np.zeros(16), "b2": np.zeros(16), **written}, rows)
    final = float(re.search(r"finished 50 steps: loss (\S+) ", result.stderr).group(1))
    assert final == pytest.approx(loss, rel=1e-5)  # the final line shows 6 digits
    batch = runner.invoke(main, ["batch", str(SAMPLES / "moons_mlp.ad"), str(SAMPLES / "moons_xy.csv"),
                                 "--values", str(out), "--reduce", "mean", "--wrt", "", "--format", "json"])
    assert batch.exit_code == 0, batch.stderr
    assert json.loads(batch.stdout)["values"]["loss"] == pytest.approx(loss, rel=1e-12)
    first = runner.invoke(main, ["eval", str(SAMPLES / "moons_mlp.ad"), "--values", str(out), "--format", "json"])
    assert first.exit_code == 0, first.stderr
    assert json.loads(first.stdout)["values"]["loss"] == pytest.approx(
        moons_mlp_loss({"b1": np.zeros(16), "b2": np.zeros(16), **written}, rows[:1]), rel=1e-12)


def test_a_float32_run_writes_the_drawn_inputs_as_float32_holds_them(runner, tmp_path) -> None:
    out = tmp_path / "p.json"
    result = runner.invoke(main, ["fit", str(SAMPLES / "moons_mlp.ad"), "--data", str(SAMPLES / "moons_xy.csv"),
                                  "--steps", "3", "--params", "W3,b3", "--seed", "7", "--dtype", "float32", "-q",
                                  "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    text = out.read_text()
    w1 = np.random.default_rng(7).uniform(-1, 1, (16, 2)).astype(np.float32)
    assert f"[{w1[0, 0]!s}, {w1[0, 1]!s}]" in text  # float32's shortest digits
    np.testing.assert_array_equal(np.array(json.loads(text)["W1"], dtype=np.float32), w1)


def test_with_every_initialized_input_learned_only_the_parameters_are_written(runner, tmp_path) -> None:
    result = runner.invoke(main, ["fit", str(SAMPLES / "moons_mlp.ad"), "--data", str(SAMPLES / "moons_xy.csv"),
                                  "--steps", "1", "--seed", "7", "-q"])
    assert result.exit_code == 0, result.stderr
    assert list(json.loads(result.stdout)) == ["W1", "b1", "W2", "b2", "W3", "b3"]
