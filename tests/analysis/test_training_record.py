"""The training recorder (analysis/training_record.py): what it records and what it diagnoses.

Expected values are computed here with NumPy from the parameters handed to the recorder: the
line w*x + b along its padded input range, a linear score over a grid of two inputs, a tanh
layer's products, the argmax of three logits, gradient norms as square roots of sums of squares.
The diagnostics are tested on runs made bad on purpose: a learning rate that diverges or makes
the loss rise, a tanh layer whose weights saturate it, relu units with a bias that kills them.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from autodiff_cli.analysis.prediction_grid import CURVE_POINTS, GRID
from autodiff_cli.analysis.training_diagnoses import diagnose
from autodiff_cli.analysis.training_model import LayerActivity, name_prefix
from autodiff_cli.analysis.training_record import Recording, TrainingRecorder, default_every
from autodiff_cli.execute.batch_evaluator import input_rows
from autodiff_cli.execute.columns import plan_columns
from autodiff_cli.execute.fit import FitResult, FitSettings, plan_fit, train
from autodiff_cli.execute.objective import ProgramObjective
from autodiff_cli.execute.tensor_fit import TensorObjective, starting_parameters
from autodiff_cli.language import parse

LINE = "w = 0\nb = 0\ny = 0\nprediction = w*x + b\nloss = (prediction - y)**2\n"
LINEAR_CLASSIFIER = "w1 = 0.5\nw2 = -1\nb = 0.25\nscore = w1*x1 + w2*x2 + b\nloss = relu(1 - y*score)\n"
TANH_LAYER = """x = [0, 0]
y = 0
W = [[1, 2], [-1, 0.5], [0.3, -2]]
v = [1, -1, 0.5]
h = tanh(W @ x)
score = sum(v * h)
loss = (score - y)**2
"""
THREE_CLASSES = """x = [0, 0]
label = 0
W = [[1, 0], [0, 1], [-1, -1]]
z = W @ x
L = cross_entropy(z, label)
"""


def recorder_for(text: str, columns: dict[str, np.ndarray], every: int = 1, steps: int = 10,
                 meta: dict | None = None, values: dict | None = None) -> TrainingRecorder:
    program = parse(text)
    plan = plan_fit(program, plan_columns(program, list(columns), values or {}, data_name="rows"), values or {})
    return TrainingRecorder(program, plan, values or {}, columns, None, every=every,
                            meta=meta or {"steps": steps}, seed=0, steps=steps)


def finished(recorder: TrainingRecorder):
    """The recording after training ends (here: after the steps observed, with no full history)."""
    recorder.finish(FitResult(recorder.params[-1], recorder.train_loss[-1], "steps", recorder.steps[-1]))
    return recorder.recording()


def padded(column: np.ndarray) -> tuple[float, float]:
    low, high = column.min(), column.max()
    return low - 0.1 * (high - low), high + 0.1 * (high - low)


def fit_recorded(text: str, columns: dict[str, np.ndarray], settings: FitSettings, values=None):
    """Train ``text`` on ``columns`` with the recorder told about every step, as fit's hook tells it."""
    program = parse(text)
    column_plan = plan_columns(program, list(columns), values or {}, data_name="rows")
    plan = plan_fit(program, column_plan, values or {})
    recorder = TrainingRecorder(program, plan, values or {}, columns, None, every=1,
                                meta={"lr": settings.lr, "steps": settings.steps, "batch_size": None},
                                seed=settings.seed, steps=settings.steps)
    if program.has_tensors:
        layout, start = starting_parameters(program, plan.parameters, plan.start, "normal", settings.seed)
        objective = TensorObjective(program, plan.output, layout, plan.fixed,
                                    input_rows(program, {n: columns[n] for n in column_plan.numeric}))
    else:
        start = np.array([plan.start[name] for name in plan.parameters])
        objective = ProgramObjective(program, plan, columns)

    class Told:
        rows = objective.rows
        step = 0

        def loss_and_grad(self, params, rows):
            loss, grad = objective.loss_and_grad(params, rows)
            self.step += 1
            if recorder.wants(self.step):
                recorder.observe(self.step, params, grad, loss, None, {})
            return loss, grad

        def loss(self, params):
            return objective.loss(params)

    result = train(Told(), start, settings)
    recorder.finish(result)
    return recorder.recording(), result


# --- which steps, and what is kept of each ------------------------------------------------------


def test_wants_the_first_every_nth_and_the_last_step() -> None:
    recorder = recorder_for(LINE, {"x": np.array([0.0, 1.0]), "y": np.array([1.0, 2.0])}, every=3, steps=10)
    assert [step for step in range(1, 11) if recorder.wants(step)] == [1, 3, 6, 9, 10]


def test_default_interval_gives_about_thirty_recorded_steps() -> None:
    assert default_every(10) == 1
    assert default_every(100) == 4  # ceil(100 / 30)
    assert default_every(3000) == 100


def test_observed_losses_metrics_and_gradient_norms_are_kept_as_given() -> None:
    recorder = recorder_for(LINE, {"x": np.array([0.0, 1.0, 2.0]), "y": np.array([1.0, 3.0, 5.0])})
    recorder.observe(1, np.array([0.0, 0.0]), np.array([3.0, -4.0]), 11.0, 12.5, {"mae": 3.0})
    recorder.observe(2, np.array([0.5, 0.1]), np.array([1.0, 2.0]), 6.0, None, {})
    record = recorder.recording()
    assert record.steps == [1, 2]
    assert record.train_loss == [11.0, 6.0]
    assert record.validation_loss == [12.5, None]
    assert record.metrics == {"mae": [3.0, None]}
    assert record.grad_norm == [5.0, pytest.approx(math.sqrt(5.0))]
    groups = {group.name: group for group in record.groups}
    assert sorted(groups) == ["b", "w"]
    assert groups["w"].grad_norm == [3.0, 1.0]
    assert groups["b"].grad_norm == [4.0, 2.0]
    assert all(sum(hist) == 1 for hist in groups["w"].value_hist + groups["w"].grad_hist)


# --- the model over its inputs -------------------------------------------------------------------


def test_one_input_is_drawn_as_the_fitted_curve_along_its_padded_range() -> None:
    x = np.array([-1.0, 0.0, 2.0, 3.0])
    recorder = recorder_for(LINE, {"x": x, "y": 2 * x + 1})
    recorder.observe(1, np.array([0.0, 0.0]), np.array([1.0, 1.0]), 1.0, None, {})
    recorder.observe(2, np.array([1.5, -0.5]), np.array([1.0, 1.0]), 1.0, None, {})
    view = recorder.recording().view
    assert (view.kind, view.prediction, view.label, view.features) == ("curve", "prediction", "y", ["x"])
    low, high = padded(x)
    assert view.x_range == pytest.approx([low, high])
    along = np.linspace(low, high, CURVE_POINTS)
    np.testing.assert_allclose(view.frames[0], np.zeros(CURVE_POINTS))
    np.testing.assert_allclose(view.frames[1], 1.5 * along - 0.5, rtol=1e-6)
    assert view.points == [[-1.0, -1.0], [0.0, 1.0], [2.0, 5.0], [3.0, 7.0]]


def test_two_inputs_and_a_label_of_plus_minus_one_give_the_decision_boundary_over_a_grid() -> None:
    rng = np.random.RandomState(3)
    x1, x2 = rng.uniform(-2, 2, 40), rng.uniform(-1, 3, 40)
    y = np.where(x1 > x2, 1.0, -1.0)
    recorder = recorder_for(LINEAR_CLASSIFIER, {"x1": x1, "x2": x2, "y": y})
    params = np.array([0.5, -1.0, 0.25])  # w1, w2, b in program order
    recorder.observe(1, params, np.zeros(3), 1.0, None, {})
    view = recorder.recording().view
    assert (view.kind, view.prediction, view.label, view.level) == ("boundary", "score", "y", 0.0)
    xs, ys = np.linspace(*padded(x1), GRID), np.linspace(*padded(x2), GRID)
    grid_x, grid_y = np.meshgrid(xs, ys)  # rows of the frame go up the second input
    np.testing.assert_allclose(view.frames[0], (0.5 * grid_x - grid_y + 0.25).ravel(), rtol=1e-9, atol=1e-12)


def test_a_tensor_input_of_two_entries_is_two_axes_and_each_step_gets_its_own_frame() -> None:
    rng = np.random.RandomState(4)
    x0, x1 = rng.uniform(-1, 1, 30), rng.uniform(-1, 1, 30)
    y = np.sin(x0) + x1
    recorder = recorder_for(TANH_LAYER, {"x[0]": x0, "x[1]": x1, "y": y})
    W = np.array([[1, 2], [-1, 0.5], [0.3, -2]])
    v = np.array([1, -1, 0.5])
    recorder.observe(1, np.concatenate([W.ravel(), v]), np.ones(9), 1.0, None, {})
    recorder.observe(2, np.concatenate([2 * W.ravel(), v]), np.ones(9), 1.0, None, {})
    record = recorder.recording()
    view = record.view
    assert (view.kind, view.features, view.label) == ("surface", ["x[0]", "x[1]"], "y")
    grid_x, grid_y = np.meshgrid(np.linspace(*padded(x0), GRID), np.linspace(*padded(x1), GRID))
    points = np.stack([grid_x.ravel(), grid_y.ravel()], axis=1)
    for frame, scale in zip(view.frames, (1, 2)):
        np.testing.assert_allclose(frame, np.tanh(points @ (scale * W).T) @ v, rtol=1e-9)
    groups = {group.name: group for group in record.groups}
    assert groups["W"].shape == [3, 2] and groups["v"].shape == [3]
    np.testing.assert_array_equal(groups["W"].heat_values[1], 2 * W.ravel())
    assert record.layers[0] == ["h", "tanh", "[3]"]


def test_a_vector_output_with_class_numbers_is_drawn_as_the_argmax() -> None:
    rng = np.random.RandomState(5)
    x0, x1 = rng.uniform(-2, 2, 60), rng.uniform(-2, 2, 60)
    W = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]])
    label = np.argmax(np.stack([x0, x1], axis=1) @ W.T, axis=1).astype(float)
    recorder = recorder_for(THREE_CLASSES, {"x[0]": x0, "x[1]": x1, "label": label})
    recorder.observe(1, W.ravel(), np.zeros(6), 1.0, None, {})
    view = recorder.recording().view
    assert (view.kind, view.classes, view.prediction) == ("classes", 3, "z")
    grid_x, grid_y = np.meshgrid(np.linspace(*padded(x0), GRID), np.linspace(*padded(x1), GRID))
    expected = np.argmax(np.stack([grid_x.ravel(), grid_y.ravel()], axis=1) @ W.T, axis=1)
    np.testing.assert_array_equal(view.frames[0], expected)


def test_more_than_two_inputs_per_row_get_no_picture_and_say_why() -> None:
    text = "a = 1\nb = 1\nc = 1\np = a*x1 + b*x2 + c*x3\nloss = (p - y)**2\n"
    columns = {name: np.arange(4.0) for name in ("x1", "x2", "x3", "y")}
    recorder = recorder_for(text, columns)
    recorder.observe(1, np.ones(3), np.ones(3), 1.0, None, {})
    record = recorder.recording()
    assert record.view is None
    assert "depends on 3 numbers of each row" in record.view_note


# --- groups and layers ---------------------------------------------------------------------------


@pytest.mark.parametrize("name, prefix", [("w1_3_2", "w1"), ("h2_16", "h2"), ("b", "b"), ("W1", "W1"),
                                          ("b3_1", "b3"), ("_1", "_1")])
def test_scalar_parameters_are_grouped_by_their_name_without_trailing_numbers(name, prefix) -> None:
    assert name_prefix(name) == prefix


def test_dead_relu_units_are_counted_over_the_training_rows() -> None:
    # h_2's bias keeps it below 0 on every row (x in [0, 1]); h_1 is positive on some rows.
    text = "a1 = 1\nc1 = 0\na2 = 1\nc2 = -5\nv1 = 1\nv2 = 1\n" \
           "h_1 = relu(a1*x + c1)\nh_2 = relu(a2*x + c2)\np = v1*h_1 + v2*h_2\nloss = (p - y)**2\n"
    x = np.linspace(0, 1, 11)
    recorder = recorder_for(text, {"x": x, "y": x})
    recorder.observe(1, np.array([1, 0, 1, -5, 1, 1.0]), np.ones(6), 1.0, None, {})
    assert recorder.recording().activity == []  # while training runs: measured once, at the end
    record = finished(recorder)
    [layer] = record.activity
    assert (layer.name, layer.op, layer.units, layer.dead) == ("h", "relu", 2, 1)
    # h_1 is 0 only at x = 0 (1 of 11 rows); h_2 on all 11
    assert layer.zero_share == pytest.approx(12 / 22)
    assert any("1 of the 2 relu units of 'h' is dead: 0 on every training row" in text and "so it no longer learns"
               in text for text in record.diagnoses)


@pytest.mark.parametrize(("dead", "words"), [(1, "1 of the 16 relu units of 'h' is dead: 0 on every training row "
                                                  "at step 7, so it no longer learns"),
                                             (2, "2 of the 16 relu units of 'h' are dead: 0 on every training row "
                                                 "at step 7, so they no longer learn")])
def test_dead_units_are_counted_in_words_that_agree(dead, words) -> None:
    record = Recording(meta={}, activity_step=7, activity=[LayerActivity("h", "relu", 16, dead, 0.0, 0.5)])
    assert diagnose(record) == [words]


def test_a_hinge_on_the_label_is_not_a_layer() -> None:
    recorder = recorder_for(LINEAR_CLASSIFIER, {"x1": np.array([0.0, 1]), "x2": np.array([1.0, 0]),
                                                "y": np.array([-1.0, 1])})
    recorder.observe(1, np.array([0.5, -1, 0.25]), np.zeros(3), 1.0, None, {})
    assert finished(recorder).activity == []


# --- diagnostics on bad runs ---------------------------------------------------------------------


def test_a_learning_rate_that_diverges_is_named() -> None:
    x = np.linspace(-3, 3, 20)
    record, result = fit_recorded(LINE, {"x": x, "y": 2 * x + 1}, FitSettings(lr=5.0, steps=200))
    assert result.reason == "diverged"
    assert record.diagnoses[0].startswith(f"training diverged at step {result.bad_step}")
    assert "learning rate is probably too high (try --lr 0.5)" in record.diagnoses[0]


def test_a_loss_that_rises_without_diverging_is_named() -> None:
    # lr 0.2 on x in [-3, 3]: the curvature 2 * mean(x^2) ~ 6.6 makes each step overshoot
    x = np.linspace(-3, 3, 20)
    record, result = fit_recorded(LINE, {"x": x, "y": 2 * x + 1}, FitSettings(lr=0.4, steps=12))
    assert result.reason == "steps"
    losses = [step.loss for step in result.history]
    assert losses[-1] > losses[0]
    assert any(text.startswith("the loss rose from") and "learning rate is probably too high" in text
               for text in record.diagnoses)


def test_a_saturated_tanh_layer_is_named() -> None:
    rng = np.random.RandomState(0)
    x0, x1 = rng.uniform(-1, 1, 50), rng.uniform(-1, 1, 50)
    big = "x = [0, 0]\ny = 0\nW = [[40, 35], [-30, 45], [50, -38]]\nv = [1, -1, 0.5]\n" \
          "h = tanh(W @ x)\nscore = sum(v * h)\nloss = (score - y)**2\n"
    record, _result = fit_recorded(big, {"x[0]": x0, "x[1]": x1, "y": x0 - x1}, FitSettings(lr=0.001, steps=5))
    [layer] = record.activity
    # independently: the share of |tanh| within 0.01 of 1 at the last recorded parameters
    h = np.tanh(np.stack([x0, x1], axis=1) @ np.array([[40, 35], [-30, 45], [50, -38]]).T)
    assert layer.near_limit == pytest.approx(np.mean(np.abs(h) >= 0.99), abs=0.05)
    assert layer.near_limit >= 0.9
    assert any(text.startswith("the tanh layer 'h' is saturated") for text in record.diagnoses)


def test_a_healthy_run_has_no_diagnoses() -> None:
    x = np.linspace(-1, 1, 20)
    record, result = fit_recorded(LINE, {"x": x, "y": 2 * x + 1}, FitSettings(lr=0.1, steps=100))
    assert result.reason == "steps"
    assert record.diagnoses == []
    assert record.history_steps == list(range(1, 101))
    assert record.history_loss == [step.loss for step in result.history]


def test_gradients_that_explode_are_named() -> None:
    recorder = recorder_for(LINE, {"x": np.array([0.0, 1.0]), "y": np.array([1.0, 2.0])})
    for step, norm in zip((1, 2, 3), (1.0, 30.0, 5000.0)):
        recorder.observe(step, np.zeros(2), np.array([norm * 0.6, norm * 0.8]), 1.0, None, {})
    assert "the gradient norm exploded from 1 to 5000" in recorder.recording().diagnoses


def test_a_group_whose_gradient_is_starved_at_every_step_is_named_and_one_that_converged_is_not() -> None:
    recorder = recorder_for(LINE, {"x": np.array([0.0, 1.0]), "y": np.array([1.0, 2.0])})
    for step in (1, 2, 3):
        recorder.observe(step, np.zeros(2), np.array([1e-9, 0.5]), 1.0, None, {})
    assert recorder.recording().diagnoses == [
        "the gradients of 'w' vanish: under 1e-06 of the largest group's (per entry) at every recorded step"]
    recorder.observe(4, np.zeros(2), np.array([1.0, 1e-12]), 1.0, None, {})  # w gets a gradient after all
    assert recorder.recording().diagnoses == []


def test_histograms_are_numpys_over_one_range_for_values_and_each_steps_own_for_gradients() -> None:
    program = "w_1 = 0\nw_2 = 0\nw_3 = 0\nb = 0\np = w_1*x + w_2*x*x + w_3*x*x*x + b\nloss = (p - y)**2\n"
    recorder = recorder_for(program, {"x": np.array([0.0, 1.0]), "y": np.array([1.0, 2.0])})
    rng = np.random.RandomState(1)
    params, grads = rng.standard_normal((5, 4)), rng.standard_normal((5, 4)) * [[1], [10], [0.1], [3], [1]]
    for step in range(5):
        recorder.observe(step + 1, params[step], grads[step], 1.0, None, {})
    groups = {g.name: g for g in recorder.recording().groups}
    assert list(groups) == ["w", "b"] and groups["w"].members == ["w_1", "w_2", "w_3"]
    w = groups["w"]
    assert w.value_range == [params[:, :3].min(), params[:, :3].max()]
    for step in range(5):
        counts, _ = np.histogram(params[step, :3], bins=24, range=tuple(w.value_range))
        assert w.value_hist[step] == counts.tolist()
        own = (grads[step, :3].min(), grads[step, :3].max())
        assert w.grad_range[step] == list(own)
        counts, _ = np.histogram(grads[step, :3], bins=24, range=own)
        assert w.grad_hist[step] == counts.tolist()
        assert w.grad_norm[step] == pytest.approx(math.sqrt(sum(g * g for g in grads[step, :3])))


def test_held_out_rows_are_shown_beside_the_training_rows() -> None:
    program = parse(LINE)
    train_rows = {"x": np.array([0.0, 1.0, 2.0]), "y": np.array([1.0, 3.0, 5.0])}
    held_out = {"x": np.array([0.5, 1.5]), "y": np.array([2.0, 4.5])}
    plan = plan_fit(program, plan_columns(program, list(train_rows), {}, data_name="rows"), {})
    recorder = TrainingRecorder(program, plan, {}, train_rows, held_out, every=1, meta={}, seed=0)
    recorder.observe(1, np.zeros(2), np.ones(2), 1.0, 1.5, {})
    view = recorder.recording().view
    assert view.points == [[0.0, 1.0], [1.0, 3.0], [2.0, 5.0]]
    assert view.validation_points == [[0.5, 2.0], [1.5, 4.5]]


def test_an_unnamed_activation_is_measured_and_named_by_its_line() -> None:
    text = "a = 1\nc = -5\nv = 1\nw = 1\np = v*relu(a*x + c) + w*x\nloss = (p - y)**2\n"
    x = np.linspace(0, 1, 11)
    recorder = recorder_for(text, {"x": x, "y": x})
    recorder.observe(1, np.array([1.0, -5.0, 1.0, 1.0]), np.ones(4), 1.0, None, {})
    [layer] = finished(recorder).activity
    assert (layer.name, layer.op, layer.units, layer.dead, layer.zero_share) == ("line 5", "relu", 1, 1, 1.0)


def test_a_full_batch_loss_that_oscillates_is_named_and_a_mini_batch_one_is_not() -> None:
    losses = [1.0, 1.3, 0.8, 1.2, 0.9, 1.25, 0.85, 1.1, 0.95]  # up at 4 of 8 steps, ends at 0.95 of 1.0
    for batch_size, expected in ((None, True), (32, False)):
        recorder = recorder_for(LINE, {"x": np.array([0.0, 1.0]), "y": np.array([1.0, 2.0])},
                                meta={"lr": 0.3, "batch_size": batch_size})
        for step, loss in enumerate(losses, 1):
            recorder.observe(step, np.zeros(2), np.ones(2), loss, None, {})
        named = recorder.recording().diagnoses
        assert (named == ["the loss went up at 4 of 8 steps and ended at 0.95 from 1: it oscillates, the learning "
                          "rate is probably too high (try --lr 0.03)"]) is expected, named
        if not expected:
            assert named == []


def test_a_long_recording_keeps_every_other_steps_parameters_and_every_steps_loss(monkeypatch) -> None:
    import autodiff_cli.analysis.training_record as training_record

    monkeypatch.setattr(training_record, "KEPT_BYTES", 16 * 2 * 16)  # 16 steps of two numbers
    recorder = recorder_for(LINE, {"x": np.array([0.0, 1.0]), "y": np.array([1.0, 2.0])}, steps=40)
    for step in range(1, 41):
        recorder.observe(step, np.array([step, -step], dtype=float), np.array([1.0, 2.0]), float(step), None, {})
    record = recorder.recording()
    assert record.steps == list(range(1, 41)) and record.train_loss == [float(s) for s in range(1, 41)]
    # past 16 kept, every other one is let go (the first and the latest stay)
    assert len(record.kept_steps) <= 16 and record.kept_steps[0] == 1 and record.kept_steps[-1] == 40
    assert all(b > a for a, b in zip(record.kept_steps, record.kept_steps[1:]))
    groups = {g.name: g for g in record.groups}
    assert len(groups["w"].grad_norm) == len(record.kept_steps)
    np.testing.assert_allclose(record.view.frames[-1], 40 * np.linspace(-0.1, 1.1, 200) - 40)


def test_a_healthy_run_says_what_each_check_saw() -> None:
    from autodiff_cli.analysis.training_diagnoses import observations

    x = np.linspace(-1, 1, 20)
    record, result = fit_recorded(LINE, {"x": x, "y": 2 * x + 1}, FitSettings(lr=0.1, steps=100))
    assert record.diagnoses == []
    losses = [step.loss for step in result.history]
    rises = sum(1 for a, b in zip(losses, losses[1:]) if b > a)  # gradient descent on a line: none
    assert rises == 0
    seen = observations(record)
    assert seen[0] == (f"the loss fell from {losses[0]:.4g} to {losses[-1]:.4g}; it fell or held at every one of "
                       "its 99 steps: nothing says the learning rate is too high")
    assert seen[1] == "the program has no relu, tanh or sigmoid layer to look for dead or saturated units in"
    norms = record.grad_norm
    assert seen[2] == (f"the gradient norm went from {norms[0]:.4g} to {norms[-1]:.4g}, at most {max(norms):.4g}: "
                       "it did not explode")


def test_the_observations_of_a_relu_layer_count_its_live_units() -> None:
    from autodiff_cli.analysis.training_diagnoses import observations

    record = Recording(meta={}, activity_step=7,
                       activity=[LayerActivity("h", "relu", 16, 0, 0.0, 0.25), LayerActivity("t", "tanh", 4, 0, 0.5, 0.0)])
    assert observations(record)[1:3] == [
        "none of the 16 relu units of 'h' is dead at step 7 (25% of its activations are 0)",
        "the tanh layer 't' is not saturated at step 7: 50% of its activations are within 0.01 of -1 or 1"]
