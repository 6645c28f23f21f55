"""The training loop (execute.fit.train) on objectives written by hand in NumPy, and plan_fit.

The objectives here compute their gradients in closed form, independently of the
program executors, so these tests pin the loop itself: what it steps, records, stops
on and keeps.
"""

from __future__ import annotations

import math
from itertools import chain, pairwise

import numpy as np
import pytest

from autodiff_cli.errors import InputError
from autodiff_cli.execute.fit import (
    PATIENCE,
    FitSettings,
    Monitor,
    Step,
    StopReason,
    initial_values,
    plan_fit,
    train,
    values_to_write,
)
from autodiff_cli.language import parse
from autodiff_cli.optim import AdamRule, SGDRule


class LeastSquares:
    """mean((w*x + b - y)**2) over rows; gradient 2*mean(r*x), 2*mean(r) with r the residual."""

    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        self.x, self.y, self.rows = x, y, len(x)
        self.calls: list[np.ndarray | None] = []

    def loss_and_grad(self, params, rows):
        self.calls.append(rows)
        x, y = (self.x, self.y) if rows is None else (self.x[rows], self.y[rows])
        with np.errstate(all="ignore"):  # a diverging run overflows on purpose
            r = params[0] * x + params[1] - y
            return float(np.mean(r * r)), np.array([2 * np.mean(r * x), 2 * np.mean(r)])

    def loss(self, params):
        with np.errstate(all="ignore"):
            r = params[0] * self.x + params[1] - self.y
            return float(np.mean(r * r))


def noisy_line(n: int = 50, seed: int = 0) -> LeastSquares:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, n)
    return LeastSquares(x, 1.5 * x - 0.5 + rng.normal(0, 0.2, n))


def test_full_batch_sgd_reaches_the_least_squares_solution() -> None:
    objective = noisy_line()
    result = train(objective, np.zeros(2), FitSettings(lr=0.1, steps=500))
    want, *_ = np.linalg.lstsq(np.column_stack([objective.x, np.ones(objective.rows)]), objective.y, rcond=None)
    assert result.reason == StopReason.STEPS and result.steps_done == 500
    np.testing.assert_allclose(result.params, want, rtol=1e-10)
    assert result.loss == pytest.approx(objective.loss(want), rel=1e-12)
    assert result.params_step == 501  # the parameters after the last update


def test_history_records_the_loss_before_each_update_and_the_scheduled_rate() -> None:
    objective = noisy_line()
    settings = FitSettings(lr=0.2, lr_schedule="linear", steps=4)
    result = train(objective, np.array([1.0, 0.0]), settings)
    # step 1 is measured at the start; lr falls from 0.2 towards 0.02 over 4 steps: 0.2, 0.155, 0.11, 0.065
    assert result.history[0].loss == objective.loss(np.array([1.0, 0.0]))
    assert [s.step for s in result.history] == [1, 2, 3, 4]
    assert [s.lr for s in result.history] == pytest.approx([0.2, 0.155, 0.11, 0.065], rel=1e-15)
    first_grad = objective.loss_and_grad(np.array([1.0, 0.0]), None)[1]
    assert result.history[0].grad_norm == pytest.approx(math.hypot(*first_grad), rel=1e-15)


@pytest.mark.parametrize("optimizer, rule", [("sgd", SGDRule()), ("momentum", SGDRule(0.9)),
                                             ("adam", AdamRule())], ids=["sgd", "momentum", "adam"])
def test_each_step_is_the_optimizers_rule(optimizer: str, rule) -> None:
    objective = noisy_line()
    got = train(objective, np.array([0.3, -0.2]), FitSettings(optimizer=optimizer, lr=0.05, steps=3))
    params, state = np.array([0.3, -0.2]), None
    for step in range(1, 4):
        _, grad = objective.loss_and_grad(params, None)
        params, state = rule.update(params, grad, state, step, 0.05)
    assert got.params.tolist() == params.tolist()


def test_mini_batches_visit_every_row_once_per_epoch_in_a_seeded_order() -> None:
    objective = noisy_line(n=10)
    train(objective, np.zeros(2), FitSettings(steps=8, batch_size=4, seed=3))
    batches = [rows.tolist() for rows in objective.calls if rows is not None]
    # 10 rows in batches of 4: 4, 4, 2 per epoch, a new order each epoch
    assert [len(b) for b in batches] == [4, 4, 2, 4, 4, 2, 4, 4]
    assert sorted(chain(*batches[:3])) == list(range(10)) == sorted(chain(*batches[3:6]))
    assert batches[:3] != batches[3:6]
    again = noisy_line(n=10)
    train(again, np.zeros(2), FitSettings(steps=8, batch_size=4, seed=3))
    assert [r.tolist() for r in again.calls if r is not None] == batches
    other = noisy_line(n=10)
    train(other, np.zeros(2), FitSettings(steps=8, batch_size=4, seed=4))
    assert [r.tolist() for r in other.calls if r is not None] != batches


def test_a_batch_size_of_all_rows_or_more_is_full_batch() -> None:
    objective = noisy_line(n=10)
    train(objective, np.zeros(2), FitSettings(steps=2, batch_size=10))
    assert objective.calls[:2] == [None, None]


def test_tol_stops_when_the_loss_stops_falling_and_keeps_the_best() -> None:
    objective = noisy_line()
    result = train(objective, np.zeros(2), FitSettings(lr=0.1, steps=10_000, tol=1e-12))
    assert result.reason == StopReason.TOL and 10 < result.steps_done < 10_000
    losses = [s.loss for s in result.history]
    # each of the last PATIENCE steps beat the best loss before it by no more than tol (absolute: loss < 1)
    for i in range(len(losses) - PATIENCE, len(losses)):
        assert losses[i] >= min(losses[:i]) - 1e-12
    # and the step before them did beat it by more, or it would have stopped a step earlier
    i = len(losses) - PATIENCE - 1
    assert losses[i] < min(losses[:i]) - 1e-12
    assert result.loss == min(losses) and result.params_step == losses.index(min(losses)) + 1


def test_tol_with_mini_batches_waits_out_noisy_epochs() -> None:
    # Epoch means of SGD on mini-batches go up as well as down; one bad epoch must not stop it.
    objective = noisy_line(n=12)
    settings = FitSettings(lr=0.05, steps=5000, batch_size=3, tol=1e-9, seed=1)
    result = train(objective, np.zeros(2), settings)
    epochs = [np.mean([s.loss for s in result.history[i:i + 4]]) for i in range(0, result.steps_done, 4)]
    assert result.reason == StopReason.TOL
    assert any(later > earlier for earlier, later in pairwise(epochs[:-PATIENCE]))
    want, *_ = np.linalg.lstsq(np.column_stack([objective.x, np.ones(12)]), objective.y, rcond=None)
    assert result.loss == objective.loss(result.params) < 1.05 * objective.loss(want)


def test_stop_requested_keeps_the_best_parameters_seen() -> None:
    # lr 1 is too large for this problem (above 2 over the largest curvature, about 2.7):
    # the loss grows from the first update on,
    # so the best parameters are the starting ones.
    objective = noisy_line()
    start = np.array([1.5, -0.5])
    result = train(objective, start, FitSettings(lr=1.0, steps=100), stop_requested=lambda: True)
    assert result.reason == StopReason.INTERRUPTED and result.steps_done == 1
    assert result.params.tolist() == start.tolist() and result.params_step == 1


def test_stop_requested_keeps_the_last_update_when_it_is_best() -> None:
    objective = noisy_line()
    calls = []
    result = train(objective, np.zeros(2), FitSettings(lr=0.1, steps=100),
                   stop_requested=lambda: calls.append(1) or len(calls) == 5)
    assert result.reason == StopReason.INTERRUPTED and result.steps_done == 5 and result.params_step == 6
    assert result.loss == objective.loss(result.params) < result.history[-1].loss


def test_keyboard_interrupt_inside_a_step_keeps_the_best_completed() -> None:
    objective = noisy_line()
    inner = objective.loss_and_grad

    def interrupted_at_step_4(params, rows):
        if len(objective.calls) == 3:
            raise KeyboardInterrupt
        return inner(params, rows)

    objective.loss_and_grad = interrupted_at_step_4
    result = train(objective, np.zeros(2), FitSettings(lr=0.1, steps=100))
    assert result.reason == StopReason.INTERRUPTED and result.steps_done == 3
    assert result.params_step == 3 and result.loss == result.history[2].loss


def trajectory(objective, start, rule, lr, steps):  # type: ignore[no-untyped-def]
    """Each step's starting parameters by the rule on fresh arrays, and their losses."""
    params, state, made, losses = np.array(start), None, [], []
    for step in range(1, steps + 1):
        loss, grad = objective.loss_and_grad(params, None)
        made.append(params)
        losses.append(loss)
        params, state = rule.update(params, grad, state, step, lr)
    return made, losses


def test_updates_written_into_old_arrays_never_touch_the_parameters_kept() -> None:
    # momentum makes the loss fall, rise and fall again: the best parameters (kept on a stop)
    # are those of an early step, and many updates follow, each written into an array that
    # nothing keeps; the observer keeps every array it is given
    objective = noisy_line()
    start, settings = np.array([3.0, 2.0]), FitSettings(optimizer="momentum", lr=0.3, steps=100)
    want, losses = trajectory(objective, start, SGDRule(0.9), 0.3, 30)
    best = int(np.argmin(losses)) + 1
    assert 1 < best < 25  # (the case this test is about: the best parameters are not the last ones)
    seen = {}
    monitor = Monitor(also_at=lambda step: step % 7 == 0,
                      observe=lambda record, measurement, params, grad: seen.setdefault(record.step, params))
    calls = []
    result = train(objective, start, settings, stop_requested=lambda: calls.append(1) or len(calls) == 30,
                   monitor=monitor)
    assert result.reason == StopReason.INTERRUPTED and result.params_step == best
    assert result.params.tolist() == want[best - 1].tolist()
    assert [s.loss for s in result.history] == losses
    assert {1, 7, 14, 21, 28} <= set(seen)
    for step, params in seen.items():
        assert params.tolist() == want[step - 1].tolist()


def test_divergence_stops_and_keeps_the_last_finite_parameters() -> None:
    objective = noisy_line()
    result = train(objective, np.zeros(2), FitSettings(lr=50.0, steps=10_000))
    assert result.reason == StopReason.DIVERGED
    assert math.isfinite(objective.loss(result.params)) and result.loss == objective.loss(result.params)
    assert result.bad_step == result.steps_done + 1 and result.params_step == result.steps_done
    assert "inf" in result.bad_value or "nan" in result.bad_value


def test_a_non_finite_start_keeps_nothing() -> None:
    objective = noisy_line()
    result = train(objective, np.array([math.nan, 0.0]), FitSettings(steps=5))
    assert result.reason == StopReason.DIVERGED and result.params is None and result.bad_step == 1


@pytest.mark.parametrize("init", ["normal", "uniform"])
def test_initial_values_come_from_numpys_frozen_random_state(init: str) -> None:
    rng = np.random.RandomState(7)
    want = rng.standard_normal(5) if init == "normal" else rng.uniform(-1.0, 1.0, 5)
    assert initial_values(5, init, 7).tolist() == want.tolist()


# --- plan_fit --------------------------------------------------------------------------------------


PROGRAM = "w = 0.5\nb = 0\nloss = (w*x + b + c - y)**2"


def test_parameters_are_the_inputs_no_column_supplies() -> None:
    plan = plan_fit(parse(PROGRAM, "m.ad"), ["x", "y"], {"c": 2.0})
    assert plan.parameters == ["w", "b", "c"] and plan.data_inputs == ["x", "y"]
    assert plan.start == {"w": 0.5, "b": 0.0, "c": 2.0} and plan.fixed == {}


def test_named_parameters_leave_the_other_inputs_fixed() -> None:
    plan = plan_fit(parse(PROGRAM, "m.ad"), ["x", "y"], {"c": 2.0, "b": 1.0}, parameters=["w"])
    assert plan.parameters == ["w"] and plan.fixed == {"b": 1.0, "c": 2.0}


@pytest.mark.parametrize(
    "columns, values, parameters, message",
    [
        (["x", "y", "z"], {}, None, "the column 'z' is not an input of the program"),
        (["x", "loss"], {}, None, "the column 'loss' names a variable the program computes"),
        (["x", "y", "w", "b", "c"], {}, None, "nothing to fit"),
        (["x", "y"], {}, ["x"], "--params names 'x', which is a column"),
        (["x", "y"], {}, ["q"], "--params names 'q', which is not an input"),
        (["x", "y"], {}, ["w"], "no value for input c"),
        (["x", "y"], {"x": 1.0}, None, "'x' is both a column of the data and given"),
    ],
    ids=["unknown-column", "computed-column", "nothing-to-fit", "param-is-column", "unknown-param",
         "fixed-input-without-value", "column-and-value"],
)
def test_plan_errors(columns, values, parameters, message: str) -> None:
    with pytest.raises(InputError, match=message):
        plan_fit(parse(PROGRAM, "m.ad"), columns, values, parameters=parameters)


def test_plan_warns_about_a_parameter_the_loss_ignores() -> None:
    plan = plan_fit(parse("q = 1\nw = 0\nloss = (w*x - y)**2", "m.ad"), ["x", "y"], {})
    assert plan.warnings == ["'q' does not affect 'loss', so fitting leaves it where it starts"]


@pytest.mark.parametrize("values, warning", [
    ({"c": 2.0, "W": 5.0}, "'W' is not used by the program; its value is ignored"),
    ({"c": 2.0, "zz": 1.0, "q": 3.0},
     "2 values are given for names the program does not use, so they are ignored: 'zz', 'q'"),
], ids=["one", "counted"])
def test_plan_warns_about_values_the_program_does_not_use(values, warning) -> None:
    plan = plan_fit(parse(PROGRAM, "m.ad"), ["x", "y"], values)
    assert plan.warnings == [warning] and plan.parameters == ["w", "b", "c"]


@pytest.mark.parametrize("given, kept, expected", [
    ({}, None, [("w", 1.5), ("b", 2.5)]),
    ({"zz": 9.0, "b": 0.0, "c": 4.0}, {"zz": 9.0}, [("zz", 9.0), ("b", 2.5), ("c", 4.0), ("w", 1.5)]),
    ({"zz": 9.0, "c": 4.0}, None, [("c", 4.0), ("w", 1.5), ("b", 2.5)]),
    ({"zz": 2.0, "c": 4.0}, {"zz": 1.5}, [("zz", 1.5), ("c", 4.0), ("w", 1.5), ("b", 2.5)]),
], ids=["parameters-only", "given-in-order-learned-in-place", "unused-not-kept-is-dropped",
        "unused-set-over-a-kept-name-is-not-written"])
def test_values_to_write(given, kept, expected) -> None:
    plan = plan_fit(parse(PROGRAM, "m.ad"), ["x", "y"], {**given, "c": 4.0}, parameters=["w", "b"])
    assert list(values_to_write(plan, np.array([1.5, 2.5]), given, kept).items()) == expected


def test_step_is_a_plain_record() -> None:
    assert Step(1, 0.5, 0.25, 0.1)._asdict() == {"step": 1, "loss": 0.5, "grad_norm": 0.25, "lr": 0.1}


def test_an_update_that_overflows_stops_before_the_parameters_are_lost() -> None:
    objective = noisy_line()
    result = train(objective, np.zeros(2), FitSettings(lr=1e308, steps=10))
    assert result.reason == StopReason.DIVERGED and result.bad_step == 1
    assert "the update made a parameter infinite or NaN" == result.bad_value
    assert result.params.tolist() == [0.0, 0.0] and result.params_step == 1


def test_a_gradient_of_another_precision_is_never_written_into_an_old_array() -> None:
    # float32 parameters and a float64 gradient: the rule's result is float64, as on fresh arrays
    # (an old float32 array would round it)
    objective = noisy_line()
    start = np.array([0.3, -0.2], dtype=np.float32)
    result = train(objective, start, FitSettings(optimizer="adam", lr=0.05, steps=4))
    params, state = start.copy(), None
    for step in range(1, 5):
        _, grad = objective.loss_and_grad(params, None)
        params, state = AdamRule().update(params, grad, state, step, 0.05)
    assert result.params.dtype == params.dtype and result.params.tolist() == params.tolist()


class Flat:
    """A loss of 0 everywhere with a gradient of -1: each step moves every parameter by lr."""

    rows = 1

    def loss_and_grad(self, params, rows):
        return 0.0, np.full(params.shape, -1.0)

    def loss(self, params):
        return 0.0


def test_parameters_whose_sum_overflows_are_still_finite() -> None:
    # the new parameters are checked with their sum first: 1.7e308 twice sums to inf, yet each is finite
    result = train(Flat(), np.array([1.7e308, 1.7e308]), FitSettings(lr=1.0, steps=3))
    assert result.reason == StopReason.STEPS and result.steps_done == 3
    assert result.params.tolist() == [1.7e308, 1.7e308]  # (a step of 3 is below their precision)


# --- the one training entry point (execute.training) --------------------------------------------


def test_the_library_trains_on_columns_and_reports_through_callbacks_only(capsys) -> None:
    from autodiff_cli.execute.columns import plan_columns
    from autodiff_cli.execute.training import DataSet, learned_values, plan_training, run_training

    program = parse("w = 0.5\nb = 0\nloss = (w*x + b - y)**2\n")
    x, y = np.array([0.0, 1.0, 2.0, 3.0]), np.array([1.0, 2.0, 2.0, 5.0])
    data = DataSet("rows", {"x": x, "y": y}, None, "row", plan_columns(program, ["x", "y"], {}, data_name="rows"))
    training = plan_training(program, data, {}, metrics=())
    steps: list[int] = []
    result = run_training(training, FitSettings(lr=0.1, steps=3), on_step=lambda record: steps.append(record.step))
    # three full-batch SGD steps on the mean squared residual, by hand
    w, b = 0.5, 0.0
    for _ in range(3):
        residual = w * x + b - y
        w, b = w - 0.1 * np.mean(2 * residual * x), b - 0.1 * np.mean(2 * residual)
    assert steps == [1, 2, 3]
    assert learned_values(training, result.params) == pytest.approx({"w": w, "b": b}, rel=1e-12)
    assert capsys.readouterr() == ("", "")  # nothing printed: progress went to the callback


@pytest.mark.parametrize("dtype, row", [
    ("float64", "1,0.9970973134040833,1e+39,0.1"),
    ("float32", "1,0.9970973,1e+39,0.1"),  # a norm beyond float32's range keeps its digits, not 'inf'
])
def test_a_history_row_holds_the_runs_shortest_digits(dtype, row) -> None:
    from autodiff_cli.execute.fit import Step
    from autodiff_cli.execute.training_text import history_csv

    text = history_csv([Step(1, float(np.float32(0.9970973)), 1e39, 0.1)], dtype=dtype)
    assert text == f"step,loss,grad_norm,lr\n{row}\n"
