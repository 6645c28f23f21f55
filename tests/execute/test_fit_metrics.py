"""Metrics and validation in training: ``execute.metrics`` (the metrics of ``fit --metric`` and
the ``Measurer``) and ``train``'s ``Monitor`` (when it measures, what it keeps, what --tol watches).

Expected values are computed here with NumPy from the rows and the parameters, independently of
the executors; the training loop is driven by objectives written by hand in closed form.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from autodiff_cli.errors import EvaluationError, InputError
from autodiff_cli.execute.fit import FitSettings, Measurement, Monitor, StopReason, plan_fit, train
from autodiff_cli.execute.metrics import (
    Measurer,
    Metric,
    check_metrics,
    column_names,
    metric_value,
    parse_metric,
)
from autodiff_cli.execute.objective import ProgramObjective, TensorObjective, starting_parameters
from autodiff_cli.language import parse


def label(index: int) -> str:
    return f"line {index + 2} of rows.csv"


# --- the forms of --metric -----------------------------------------------------------------------


@pytest.mark.parametrize("text, kind, variables", [
    ("hinge", "mean", ("hinge",)),
    ("accuracy:z:label", "accuracy", ("z", "label")),
    ("mse:prediction:y", "mse", ("prediction", "y")),
    ("mae: p : y", "mae", ("p", "y")),
], ids=["mean", "accuracy", "mse", "mae-spaces"])
def test_a_metric_is_read_from_its_text(text, kind, variables) -> None:
    metric = parse_metric(text)
    assert (metric.kind, metric.variables, metric.text) == (kind, variables, text)


@pytest.mark.parametrize("text, message, hint", [
    ("accuracy", "--metric accuracy needs the prediction and the target it compares", "accuracy:z:label"),
    ("mse:p", "--metric mse:p needs the prediction and the target it compares", "mse:prediction:y"),
    ("f1:p:y", "--metric f1:p:y is not a metric", "accuracy:PRED:TARGET"),
    ("", "--metric  is not a metric", "NAME"),
], ids=["bare-accuracy", "one-variable", "unknown-kind", "empty"])
def test_a_metric_that_is_not_one_says_the_forms(text, message, hint) -> None:
    with pytest.raises(InputError) as caught:
        parse_metric(text)
    assert caught.value.message == message
    assert hint in caught.value.hint


def test_a_metric_of_a_variable_the_program_lacks_is_refused_with_a_suggestion() -> None:
    program = parse("w = 0\nprediction = w*x\nloss = (prediction - y)**2", "m.ad")
    with pytest.raises(InputError) as caught:
        check_metrics(program, [parse_metric("mse:predicton:y")])
    assert caught.value.message == "--metric mse:predicton:y names 'predicton', which the program does not define"
    assert "prediction" in caught.value.hint
    assert check_metrics(program, [parse_metric("loss"), parse_metric("loss")]) == [Metric("mean", ("loss",), "loss")]


def test_column_names_are_short_unless_two_share_one_or_one_is_a_history_column() -> None:
    metrics = [parse_metric(text) for text in ("accuracy:z:y", "accuracy:p:y", "mse:p:y", "hinge", "loss", "lr")]
    assert column_names(metrics) == ["accuracy:z:y", "accuracy:p:y", "mse", "hinge", "mean:loss", "mean:lr"]


# --- the values of metrics -----------------------------------------------------------------------


def test_binary_accuracy_is_by_the_sign_against_labels_one_and_zero_or_minus_one() -> None:
    score = np.array([2.0, -1.0, 0.0, 0.5, -3.0])
    expected = np.mean([True, True, False, False, True])  # 0 counts as the negative class
    for labels in ([1, 0, 1, 0, 0], [1, -1, 1, -1, -1]):
        values = {"s": score, "y": np.array(labels, dtype=float)}
        assert metric_value(parse_metric("accuracy:s:y"), values, label) == expected


def test_vector_accuracy_is_by_the_argmax_the_first_on_a_tie() -> None:
    z = np.array([[0.1, 0.7, 0.2], [3.0, 1.0, 3.0], [0.0, 0.0, 1.0], [5.0, 4.0, 0.0]])
    classes = np.array([1.0, 2.0, 2.0, 1.0])
    # argmax: 1, 0 (the first of the tie), 2, 0
    assert metric_value(parse_metric("accuracy:z:c"), {"z": z, "c": classes}, label) == 0.5


@pytest.mark.parametrize("bad", [2.5, -1.0, 3.0], ids=["fraction", "negative", "too-large"])
def test_a_target_that_is_not_a_class_is_named_by_its_row(bad) -> None:
    z = np.zeros((3, 3))
    with pytest.raises(InputError) as caught:
        metric_value(parse_metric("accuracy:z:c"), {"z": z, "c": np.array([0.0, bad, 1.0])}, label)
    assert caught.value.message == (f"--metric accuracy:z:c: 'c' is {bad!r} in line 3 of rows.csv, "
                                    "which is not a class of 'z'")
    assert "from 0 to 2" in caught.value.hint


def test_mse_and_mae_average_over_rows_and_entries() -> None:
    p = np.array([[1.0, 2.0], [0.0, -1.0], [4.0, 4.0]])
    y = np.array([[0.5, 2.0], [1.0, 1.0], [1.0, 4.0]])
    values = {"p": p, "y": y}
    assert metric_value(parse_metric("mse:p:y"), values, label) == pytest.approx((0.25 + 1 + 4 + 9) / 6, rel=1e-15)
    assert metric_value(parse_metric("mae:p:y"), values, label) == pytest.approx((0.5 + 1 + 2 + 3) / 6, rel=1e-15)
    with pytest.raises(InputError, match=r"compares 'p' of shape \[2\] per row with 'y' of shape \[\]"):
        metric_value(parse_metric("mse:p:y"), {"p": p, "y": np.zeros(3)}, label)


def test_the_mean_of_a_variable_must_be_a_number_per_row() -> None:
    assert metric_value(parse_metric("h"), {"h": np.array([1.0, 2.0, 6.0])}, label) == 3.0
    with pytest.raises(InputError, match=r"needs a number per row, and 'z' has shape \[3\]"):
        metric_value(parse_metric("z"), {"z": np.zeros((2, 3))}, label)


# --- the Measurer on programs --------------------------------------------------------------------

LINE = "w = 0\nb = 0\nprediction = w*x + b\nloss = (prediction - y)**2\n"


def line_rows(seed: int, count: int) -> dict[str, np.ndarray]:
    rng = np.random.RandomState(seed)
    x = rng.uniform(-2, 2, count)
    return {"x": x, "y": 3 * x - 1 + rng.normal(0, 0.3, count)}


def test_the_measurer_of_a_scalar_program_gives_validation_loss_and_metrics() -> None:
    program = parse(LINE, "line.ad")
    train_rows, held = line_rows(1, 40), line_rows(2, 15)
    plan = plan_fit(program, list(train_rows), {})
    training = ProgramObjective(program, plan, train_rows)
    validation = ProgramObjective(program, plan, held)
    metrics = check_metrics(program, [parse_metric(t) for t in ("mse:prediction:y", "mae:prediction:y", "prediction")])
    measurer = Measurer(program, metrics, training, validation)
    w, b = 1.5, -0.25
    measured = measurer(np.array([w, b]), 7)

    def expected(rows):
        residual = w * rows["x"] + b - rows["y"]
        return np.mean(residual**2), np.mean(np.abs(residual)), np.mean(w * rows["x"] + b)

    mse, mae, mean = expected(train_rows)
    v_mse, v_mae, v_mean = expected(held)
    assert measured.step == 7
    assert measured.validation_loss == pytest.approx(v_mse, rel=1e-13)
    assert measured.training == pytest.approx({"mse": mse, "mae": mae, "prediction": mean}, rel=1e-13)
    assert measured.validation == pytest.approx({"mse": v_mse, "mae": v_mae, "prediction": v_mean}, rel=1e-13)
    assert measured.metrics() == pytest.approx({"mse": mse, "mae": mae, "prediction": mean, "validation_mse": v_mse,
                                                "validation_mae": v_mae, "validation_prediction": v_mean}, rel=1e-13)


def test_a_scalar_program_is_measured_in_one_pass_over_both_sets_of_rows(monkeypatch) -> None:
    """A pass of the vectorized executor costs about the same for 40 rows or 400 (its walk of the
    program): the training and validation rows are measured together, in one."""
    from autodiff_cli.execute.batch_evaluator import BatchEvaluator

    program = parse(LINE, "line.ad")
    train_rows, held = line_rows(1, 40), line_rows(2, 15)
    plan = plan_fit(program, list(train_rows), {})
    measurer = Measurer(program, check_metrics(program, [parse_metric("mae:prediction:y")]),
                        ProgramObjective(program, plan, train_rows), ProgramObjective(program, plan, held))
    passes = []
    real = BatchEvaluator.evaluate
    monkeypatch.setattr(BatchEvaluator, "evaluate", lambda self, inputs, **options: (
        passes.append(len(inputs["x"])), real(self, inputs, **options))[1])
    w, b = -0.5, 2.0
    measured = measurer(np.array([w, b]), 3)
    assert passes == [55]
    residual, held_residual = (w * rows["x"] + b - rows["y"] for rows in (train_rows, held))
    assert measured.validation_loss == pytest.approx(np.mean(held_residual**2), rel=1e-13)
    assert measured.metrics() == pytest.approx({"mae": np.mean(np.abs(residual)),
                                                "validation_mae": np.mean(np.abs(held_residual))}, rel=1e-13)


def test_a_failing_validation_row_is_named_in_the_validation_rows() -> None:
    program = parse("a = 1\nl = log(x)\nloss = (a - x)**2\n", "m.ad")
    plan = plan_fit(program, ["x"], {})
    training = ProgramObjective(program, plan, {"x": np.array([1.0, 2.0])}, row_label=label)
    held = ProgramObjective(program, plan, {"x": np.array([3.0, -1.0])},
                            row_label=lambda index: f"line {index + 2} of held.csv")
    with pytest.raises(EvaluationError) as caught:
        Measurer(program, check_metrics(program, [parse_metric("l")]), training, held)(np.array([1.0]), 1)
    assert any(note.startswith("in line 3 of held.csv") for note in caught.value.notes)


def test_a_failing_row_of_a_metric_is_named_by_its_place_in_the_data() -> None:
    program = parse("a = 1\nl = log(x)\nloss = (a - x)**2\n", "m.ad")
    rows = {"x": np.array([1.0, 2.0, -1.0])}
    plan = plan_fit(program, ["x"], {})
    objective = ProgramObjective(program, plan, rows, row_label=label)
    measurer = Measurer(program, check_metrics(program, [parse_metric("l")]), objective, None)
    with pytest.raises(EvaluationError) as caught:
        measurer(np.array([1.0]), 1)
    assert "in line 4 of rows.csv" in caught.value.notes


TENSOR = """x = [0, 0]
label = 0
W = [[1, 0], [0, 1], [1, 1]]
z = W @ x
loss = cross_entropy(z, label)
"""


def test_the_measurer_of_a_tensor_program_takes_the_argmax_of_each_row() -> None:
    program = parse(TENSOR, "t.ad")
    rng = np.random.RandomState(3)
    x = rng.normal(size=(30, 2))
    classes = rng.randint(0, 3, 30).astype(float)
    held_x, held_classes = rng.normal(size=(10, 2)), rng.randint(0, 3, 10).astype(float)
    plan = plan_fit(program, ["x[0]", "x[1]", "label"], {})
    layout, start = starting_parameters(program, plan.parameters, plan.start, "normal", 0)
    training = TensorObjective(program, "loss", layout, {}, {"x": x, "label": classes})
    validation = TensorObjective(program, "loss", layout, {}, {"x": held_x, "label": held_classes})
    metrics = check_metrics(program, [parse_metric("accuracy:z:label")])
    W = np.array([[0.5, -1.0], [2.0, 0.25], [-0.5, 1.5]])
    measured = Measurer(program, metrics, training, validation)(W.ravel(), 1)

    def cross_entropy(inputs, labels):
        z = inputs @ W.T
        log_softmax = z - z.max(axis=1, keepdims=True)
        log_softmax -= np.log(np.exp(log_softmax).sum(axis=1, keepdims=True))
        return -np.mean(log_softmax[np.arange(len(labels)), labels.astype(int)])

    assert measured.validation_loss == pytest.approx(cross_entropy(held_x, held_classes), rel=1e-12)
    assert measured.training["accuracy"] == np.mean(np.argmax(x @ W.T, axis=1) == classes)
    assert measured.validation["accuracy"] == np.mean(np.argmax(held_x @ W.T, axis=1) == held_classes)


def test_a_tensor_measurement_runs_each_row_once_in_pieces(monkeypatch) -> None:
    """The validation loss and the metrics of the validation rows come from one pass over them,
    run MEASURE_ROWS rows at a time (a product over every row at once set the BLAS's threads
    going, several times slower on a busy machine); the numbers are those of whole rows."""
    import autodiff_cli.execute.metrics as metrics_module
    import autodiff_cli.execute.interpreter as tensor_module
    import autodiff_cli.execute.objective as objective_module

    program = parse(TENSOR, "t.ad")
    rng = np.random.RandomState(5)
    x, classes = rng.normal(size=(40, 2)), rng.randint(0, 3, 40).astype(float)
    held_x, held_classes = rng.normal(size=(300, 2)), rng.randint(0, 3, 300).astype(float)
    plan = plan_fit(program, ["x[0]", "x[1]", "label"], {})
    layout, _start = starting_parameters(program, plan.parameters, plan.start, "normal", 0)
    training = TensorObjective(program, "loss", layout, {}, {"x": x, "label": classes})
    validation = TensorObjective(program, "loss", layout, {}, {"x": held_x, "label": held_classes})
    passes: list[int] = []
    real = tensor_module.run_forward

    def counted(program, inputs, batched, **options):
        passes.append(len(inputs["x"]))
        return real(program, inputs, batched, **options)

    monkeypatch.setattr(tensor_module, "run_forward", counted)
    monkeypatch.setattr(objective_module, "run_forward", counted)
    measurer = Measurer(program, check_metrics(program, [parse_metric("accuracy:z:label")]), training, validation)
    W = np.array([[0.5, -1.0], [2.0, 0.25], [-0.5, 1.5]])
    measured = measurer(W.ravel(), 1)
    assert sum(passes) == 40 + 300  # each training and validation row once
    assert max(passes) <= metrics_module.MEASURE_ROWS
    z = held_x @ W.T
    log_softmax = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    assert measured.validation_loss == pytest.approx(-np.mean(log_softmax[np.arange(300), held_classes.astype(int)]),
                                                     rel=1e-12)
    assert measured.validation["accuracy"] == np.mean(np.argmax(z, axis=1) == held_classes)


def test_a_row_failing_in_a_later_piece_is_named_by_its_place_in_the_data() -> None:
    program = parse("x = 1\nw = 1\nr = log(w * x)\nloss = (w - x)**2\n", "t.ad")
    plan = plan_fit(program, ["x"], {})
    layout, _start = starting_parameters(program, plan.parameters, plan.start, "normal", 0)
    x = np.ones(300)
    x[200] = -1.0
    held = TensorObjective(program, "loss", layout, {}, {"x": x}, row_label=label)
    training = TensorObjective(program, "loss", layout, {}, {"x": np.ones(3)}, row_label=label)
    measurer = Measurer(program, check_metrics(program, [parse_metric("r")]), training, held)
    with pytest.raises(EvaluationError) as caught:
        measurer(np.array([1.0]), 1)
    assert "in line 202 of rows.csv" in caught.value.notes


# --- the Monitor in train ------------------------------------------------------------------------


class LeastSquares:
    """mean((w*x + b - y)**2) over rows; gradient 2*mean(r*x), 2*mean(r)."""

    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        self.x, self.y, self.rows = x, y, len(x)

    def loss_and_grad(self, params, rows):
        x, y = (self.x, self.y) if rows is None else (self.x[rows], self.y[rows])
        residual = params[0] * x + params[1] - y
        return float(np.mean(residual**2)), np.array([2 * np.mean(residual * x), 2 * np.mean(residual)])

    def loss(self, params):
        return self.loss_and_grad(params, None)[0]


def held_out_measure(validation: LeastSquares, log: list | None = None):
    def measure(params, step):
        if log is not None:
            log.append((step, params.copy()))
        return Measurement(step, validation.loss(params), {}, {})

    return measure


TRAIN = LeastSquares(np.array([-1.0, 0.0, 1.0, 2.0]), np.array([-3.0, -1.0, 1.0, 3.0]))  # y = 2x - 1


def sgd_path(steps: int, lr: float) -> list[np.ndarray]:
    """The parameters where each step starts (and after the last), by plain SGD."""
    params, path = np.zeros(2), []
    for _ in range(steps):
        path.append(params)
        params = params - lr * TRAIN.loss_and_grad(params, None)[1]
    return path + [params]


def test_without_mini_batches_every_step_is_measured_and_the_kept_parameters_too() -> None:
    validation = LeastSquares(np.array([0.5, 3.0]), np.array([0.0, 5.0]))
    log: list = []
    result = train(TRAIN, np.zeros(2), FitSettings(lr=0.05, steps=6), monitor=Monitor(held_out_measure(validation, log)))
    path = sgd_path(6, 0.05)
    assert [step for step, _ in log] == [1, 2, 3, 4, 5, 6, 7]  # the last: the parameters kept
    for (_, params), expected in zip(log, path):
        np.testing.assert_allclose(params, expected, rtol=1e-14)
    assert [m.step for m in result.measurements] == [1, 2, 3, 4, 5, 6]
    assert result.measurement is not None and result.measurement.step == 7
    assert result.measurement.validation_loss == pytest.approx(validation.loss(path[-1]), rel=1e-14)


def test_with_mini_batches_once_an_epoch_or_every_n_steps_and_where_asked() -> None:
    settings = FitSettings(lr=0.01, steps=10, batch_size=2)  # 4 rows: an epoch is 2 steps
    measured = train(TRAIN, np.zeros(2), settings, monitor=Monitor(held_out_measure(TRAIN))).measurements
    assert [m.step for m in measured] == [1, 2, 4, 6, 8, 10]
    settings = FitSettings(lr=0.01, steps=10, batch_size=2, measure_every=3)
    seen = []
    monitor = Monitor(held_out_measure(TRAIN), also_at=lambda step: step == 5,
                      observe=lambda record, measured, params, grad: seen.append(
                          (record.step, None if measured is None else measured.step)))
    # step 5 is observed for a recording, and not measured: measuring is the schedule's alone,
    # so a recording adds no measurement's cost, and the history, --tol and --keep
    # best-validation see the same measurements with or without one
    assert [m.step for m in train(TRAIN, np.zeros(2), settings, monitor=monitor).measurements] == [1, 3, 6, 9]
    assert seen == [(1, 1), (3, 3), (5, None), (6, 6), (9, 9)]


@pytest.mark.parametrize(("settings", "steps"), [
    # at most eight measurements after step 1's, at the ends of epochs: 100 full-batch steps, every 13th
    (FitSettings(lr=0.01, steps=100), [1, *range(13, 101, 13)]),
    # an epoch of 2 steps (4 rows, batches of 2): every 7 epochs
    (FitSettings(lr=0.01, steps=100, batch_size=2), [1, *range(14, 101, 14)]),
    (FitSettings(lr=0.01, steps=95, batch_size=2), [1, *range(12, 96, 12)]),
    # once an epoch when measurements decide what training does
    (FitSettings(lr=0.01, steps=30, keep_best_validation=True), list(range(1, 32))),  # 31: the last, to choose
    (FitSettings(lr=0.01, steps=30, tol=1e-12, watch_validation=True), list(range(1, 31))),
    # --eval-every wins
    (FitSettings(lr=0.01, steps=100, measure_every=7), [1, *range(7, 101, 7)]),
])
def test_the_default_schedule_measures_eight_times_in_whole_epochs(settings, steps) -> None:
    measured = train(TRAIN, np.zeros(2), settings, monitor=Monitor(held_out_measure(TRAIN))).measurements
    assert [m.step for m in measured] == steps


def test_the_kept_parameters_of_an_early_stop_are_observed_last() -> None:
    told = []
    monitor = Monitor(None, also_at=lambda step: False,
                      observe_last=lambda record, measured, params, grad: told.append((record.step, params)))
    settings = FitSettings(lr=0.05, steps=1000, tol=1e-3)
    result = train(TRAIN, np.zeros(2), settings, monitor=monitor)
    assert result.reason == "tol" and len(told) == 1
    assert told[0][0] == result.params_step and told[0][1] is result.params
    told.clear()
    train(TRAIN, np.zeros(2), FitSettings(lr=0.05, steps=5), monitor=monitor)
    assert told == []  # every step taken: the last was recorded as it ran


def test_the_observer_sees_each_measured_step_with_its_parameters_and_gradient() -> None:
    seen = []
    monitor = Monitor(None, also_at=lambda step: step % 2 == 0,
                      observe=lambda record, measured, params, grad: seen.append((record, measured, params, grad)))
    train(TRAIN, np.zeros(2), FitSettings(lr=0.05, steps=4, measure_every=100), monitor=monitor)
    path = sgd_path(4, 0.05)
    assert [record.step for record, *_ in seen] == [1, 2, 4]
    for record, measured, params, grad in seen:
        assert measured is None
        np.testing.assert_allclose(params, path[record.step - 1], rtol=1e-14)
        np.testing.assert_allclose(grad, TRAIN.loss_and_grad(path[record.step - 1], None)[1], rtol=1e-14)
        assert record.loss == pytest.approx(TRAIN.loss(path[record.step - 1]), rel=1e-14)


def test_keep_best_validation_writes_the_parameters_of_the_lowest_validation_loss() -> None:
    # The validation rows lie on y = 0: their loss is lowest near the start, and grows as the
    # line fits the training rows (y = 2x - 1).
    validation = LeastSquares(np.array([-1.0, 1.0, 2.0]), np.array([0.0, 0.0, 0.0]))
    path = sgd_path(20, 0.05)
    losses = [validation.loss(params) for params in path]
    best = int(np.argmin(losses))
    settings = FitSettings(lr=0.05, steps=20, keep_best_validation=True)
    result = train(TRAIN, np.zeros(2), settings, monitor=Monitor(held_out_measure(validation)))
    assert result.reason == StopReason.STEPS
    assert result.params_step == best + 1
    np.testing.assert_allclose(result.params, path[best], rtol=1e-14)
    assert result.loss == pytest.approx(TRAIN.loss(path[best]), rel=1e-14)
    assert result.measurement.validation_loss == pytest.approx(losses[best], rel=1e-14)


def test_keep_best_validation_may_keep_the_last_parameters() -> None:
    result = train(TRAIN, np.zeros(2), FitSettings(lr=0.05, steps=5, keep_best_validation=True),
                   monitor=Monitor(held_out_measure(TRAIN)))  # validation rows = training rows: always better
    assert result.params_step == 6
    np.testing.assert_allclose(result.params, sgd_path(5, 0.05)[-1], rtol=1e-14)


def test_tol_can_watch_the_validation_loss_and_then_keeps_its_best() -> None:
    validation = LeastSquares(np.array([-1.0, 1.0, 2.0]), np.array([0.0, 0.0, 0.0]))
    path = sgd_path(200, 0.05)
    losses = [validation.loss(params) for params in path[:-1]]
    # The validation loss rises from some step on: it has not beaten its best for PATIENCE
    # measurements PATIENCE steps after its lowest.
    lowest = int(np.argmin(losses))
    settings = FitSettings(lr=0.05, steps=200, tol=1e-9, watch_validation=True)
    result = train(TRAIN, np.zeros(2), settings, monitor=Monitor(held_out_measure(validation)))
    assert result.reason == StopReason.TOL
    assert result.steps_done == lowest + 1 + 5
    assert result.params_step == lowest + 1
    np.testing.assert_allclose(result.params, path[lowest], rtol=1e-14)
    # Watching the training loss, which keeps falling, it runs on.
    settings = FitSettings(lr=0.05, steps=200, tol=1e-9)
    assert train(TRAIN, np.zeros(2), settings, monitor=Monitor(held_out_measure(validation))).steps_done > 60


def test_a_measurement_that_fails_at_the_start_is_an_error_and_later_stops_training() -> None:
    def failing_from(step_failing):
        def measure(params, step):
            if step >= step_failing:
                raise EvaluationError("log of a negative number", notes=["in line 3 of held.csv"])
            return Measurement(step, 0.0, {}, {})
        return measure

    with pytest.raises(EvaluationError) as caught:
        train(TRAIN, np.zeros(2), FitSettings(steps=5), monitor=Monitor(failing_from(1)))
    assert caught.value.notes[-1] == "at the starting values of the parameters, before any step"
    result = train(TRAIN, np.zeros(2), FitSettings(lr=0.05, steps=5), monitor=Monitor(failing_from(3)))
    assert (result.reason, result.bad_step, result.bad_value) == (StopReason.DIVERGED, 3, "log of a negative number")
    # kept: where step 2 started, the last step measured in full, as after any divergence
    assert result.params_step == 2
    np.testing.assert_allclose(result.params, sgd_path(2, 0.05)[1], rtol=1e-14)


def test_a_measurement_without_validation_rows_leaves_the_plateau_on_the_training_loss() -> None:
    def metrics_only(params, step):
        return Measurement(step, None, {"m": 1.0}, {})

    settings = FitSettings(lr=0.05, steps=500, tol=1e-6, watch_validation=True)
    plain = train(TRAIN, np.zeros(2), FitSettings(lr=0.05, steps=500, tol=1e-6))
    result = train(TRAIN, np.zeros(2), settings, monitor=Monitor(metrics_only))
    assert result.reason == plain.reason == StopReason.TOL
    assert result.steps_done == plain.steps_done
    assert math.isfinite(result.loss)
