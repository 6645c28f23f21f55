"""float32 through the tensor executor: ``evaluate_tensors``, ``TensorObjective`` (fit's step),
``BatchEvaluator`` (batch) and ``objective_for`` take a ``dtype``, and every value and
derivative comes back in it.  Each float32 result is held against PyTorch's float32 autograd
(where PyTorch is installed) and against the same maths written with NumPy in float32, to
float32's precision; float64 stays the default, unchanged to the bit."""

from __future__ import annotations

import numpy as np
import pytest
from _mlp import mlp_program

from autodiff_cli.engine.optim import AdamRule
from autodiff_cli.execute.batch_evaluator import BatchEvaluator
from autodiff_cli.execute.fit import FitSettings, plan_fit, train
from autodiff_cli.execute.interpreter import evaluate_tensors, float_type
from autodiff_cli.execute.objective import TensorObjective, objective_for, starting_parameters
from autodiff_cli.language import parse

F32_RTOL = 3e-5  # a few float32 roundings over a small network, relative to the largest entry

MLP = """\
x = [0.5, -1, 2, 0.25]
label = 2
W1 = normal([8, 4], 0.5)
b1 = normal([8], 0.1)
W2 = normal([3, 8], 0.5)
b2 = normal([3], 0.1)
h = relu(W1 @ x + b1)
t = tanh(h) * 2 + sigmoid(h) / 3 - exp(-h) ** 2 + [1, 2, 3, 4, 5, 6, 7, 8]
z = W2 @ t + b2
L = cross_entropy(z, label) + 0.5 * mean(h * h)
"""


def close(got: np.ndarray, want: np.ndarray, rtol: float = F32_RTOL) -> None:
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape
    scale = max(1.0, float(np.max(np.abs(want))))
    assert np.max(np.abs(got - want)) <= rtol * scale, (got, want)


def _torch_mlp(params: dict[str, np.ndarray]) -> tuple[float, dict[str, np.ndarray]]:
    """L and its gradient, by PyTorch's float32 autograd, from the same float32 values."""
    torch = pytest.importorskip("torch")
    p = {name: torch.tensor(value, dtype=torch.float32, requires_grad=True) for name, value in params.items()}
    h = torch.relu(p["W1"] @ p["x"] + p["b1"])
    t = torch.tanh(h) * 2 + torch.sigmoid(h) / 3 - torch.exp(-h) ** 2 + torch.arange(1, 9, dtype=torch.float32)
    z = p["W2"] @ t + p["b2"]
    loss = torch.nn.functional.cross_entropy(z[None], p["label"].long()[None]) + 0.5 * torch.mean(h * h)
    loss.backward()
    return loss.item(), {name: value.grad.numpy() for name, value in p.items() if name != "label"}


def test_eval_in_float32_gives_float32_values_and_derivatives_that_pytorch_gives() -> None:
    program = parse(MLP, "mlp.ad")
    evaluation = evaluate_tensors(program, {}, dtype="float32")
    run = evaluation.run
    assert {np.result_type(value).name for value in run.values} == {"float32"}  # constants too
    assert {value.dtype.name for value in evaluation.derivatives.values()} == {"float32"}
    inputs = {name: np.asarray(run.value(name)) for name in ("x", "label", "W1", "b1", "W2", "b2")}
    loss, grads = _torch_mlp(inputs)
    close(run.value("L"), loss)
    for name, want in grads.items():
        close(evaluation.derivatives[name], want)


def test_float32_starts_from_the_float64_draws_rounded() -> None:
    program = parse(MLP, "mlp.ad")
    single = evaluate_tensors(program, {}, dtype="float32").run
    double = evaluate_tensors(program, {}).run
    for name in ("W1", "b1", "W2", "b2"):
        assert np.array_equal(single.value(name), double.value(name).astype(np.float32))


def test_float64_is_the_default_to_the_bit() -> None:
    program = parse(MLP, "mlp.ad")
    default, double = evaluate_tensors(program, {}), evaluate_tensors(program, {}, dtype="float64")
    for name, value in default.derivatives.items():
        assert value.dtype == np.float64
        assert value.tobytes() == double.derivatives[name].tobytes()


def test_forward_mode_and_jacobians_stay_in_float32() -> None:
    program = parse(MLP, "mlp.ad")
    reverse = evaluate_tensors(program, {}, dtype="float32")
    forward = evaluate_tensors(program, {}, forward=True, dtype="float32")
    assert {value.dtype.name for value in forward.derivatives.values()} == {"float32"}
    for name in ("x", "W1", "b2"):
        close(forward.derivatives[name], reverse.derivatives[name])
    jacobian = evaluate_tensors(program, {}, output="z", dtype="float32")
    assert {value.dtype.name for value in jacobian.derivatives.values()} == {"float32"}
    # dz/db2 is the identity, in any precision
    assert np.array_equal(jacobian.derivatives["b2"], np.eye(3, dtype=np.float32))


@pytest.mark.parametrize("dtype", ["int32", "float16", np.complex64, "double-ish"])
def test_other_precisions_are_refused(dtype: object) -> None:
    with pytest.raises(ValueError, match="float64 or float32"):
        float_type(dtype)
    with pytest.raises(ValueError, match="float64 or float32"):
        evaluate_tensors(parse(MLP, "mlp.ad"), {}, dtype=dtype)


# --- fit's step -----------------------------------------------------------------------------------

NET = mlp_program(5, 12, 4, "tanh")


def _net_data(rows: int = 64) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((rows, 5))
    labels = rng.integers(0, 4, rows).astype(np.float64)
    weights = {"W1": rng.normal(0, 0.5, (12, 5)), "b1": rng.normal(0, 0.1, 12),
               "W2": rng.normal(0, 0.5, (4, 12)), "b2": rng.normal(0, 0.1, 4)}
    return x, labels, weights


def _objective(dtype: str | None) -> tuple[TensorObjective, np.ndarray]:
    x, labels, weights = _net_data()
    program = parse(NET, "net.ad")
    plan = plan_fit(program, [f"x[{i}]" for i in range(5)] + ["label"], {})
    layout, start = starting_parameters(program, plan.parameters, weights, "normal", 0, dtype)
    return TensorObjective(program, plan.output, layout, plan.fixed, {"x": x, "label": labels}), start


def _torch_steps(steps: int, lr: float) -> tuple[list[float], dict[str, np.ndarray]]:
    """PyTorch float32: nn.Linear, tanh, cross_entropy, torch.optim.Adam, from the same weights."""
    torch = pytest.importorskip("torch")
    x, labels, weights = _net_data()
    first, second = torch.nn.Linear(5, 12), torch.nn.Linear(12, 4)
    with torch.no_grad():
        for layer, (w, b) in ((first, ("W1", "b1")), (second, ("W2", "b2"))):
            layer.weight.copy_(torch.tensor(weights[w], dtype=torch.float32))
            layer.bias.copy_(torch.tensor(weights[b], dtype=torch.float32))
    optimizer = torch.optim.Adam([*first.parameters(), *second.parameters()], lr=lr)
    data, target = torch.tensor(x, dtype=torch.float32), torch.tensor(labels).long()
    losses = []
    for _ in range(steps):
        loss = torch.nn.functional.cross_entropy(second(torch.tanh(first(data))), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    learned = {"W1": first.weight, "b1": first.bias, "W2": second.weight, "b2": second.bias}
    return losses, {name: value.detach().numpy() for name, value in learned.items()}


def test_a_float32_training_step_keeps_float32_and_follows_pytorch() -> None:
    objective, params = _objective("float32")
    assert params.dtype == np.float32
    losses, rule, state = [], AdamRule(), None
    for step in range(1, 6):
        loss, grad = objective.loss_and_grad(params, None)
        assert grad.dtype == np.float32
        params, state = rule.update(params, grad, state, step, 0.01)
        assert params.dtype == np.float32
        losses.append(loss)
    want_losses, want_params = _torch_steps(5, 0.01)
    close(losses, want_losses)
    for name, value in objective.layout.unpack(params).items():
        close(value, want_params[name], rtol=1e-4)  # five Adam steps, each dividing by sqrt(v)


def test_the_float32_gradient_is_the_float64_one_to_float32_precision() -> None:
    single, start32 = _objective("float32")
    double, start64 = _objective(None)
    assert start64.dtype == np.float64
    loss32, grad32 = single.loss_and_grad(start32, None)
    loss64, grad64 = double.loss_and_grad(start64, None)
    close(loss32, loss64)
    close(grad32, grad64)


def test_a_scalar_program_trains_in_float32_with_the_tensor_executor() -> None:
    program = parse("x = 0\ny = 0\na = 1.5\nb = -0.5\nL = (a * x + b - y)**2\n", "line.ad")
    xs = np.linspace(-1, 1, 41)
    columns = {"x": xs, "y": 2 * xs + 1}

    class Plan:
        numeric = ("x", "y")

    plan = plan_fit(program, ["x", "y"], {})
    objective = objective_for(program, plan, columns, Plan, {}, None, 0, dtype="float32")
    result = train(objective, objective.start, FitSettings(optimizer="adam", lr=0.1, steps=300))
    assert result.params.dtype == np.float32
    close(result.params, [2.0, 1.0], rtol=1e-3)  # the line the data were drawn from


# --- batch ------------------------------------------------------------------------------------------

ROWS_NET = """\
x = [0, 0]
y = 0
W1 = normal([6, 2], 0.7)
b1 = normal([6], 0.1)
w2 = normal([6], 0.25)
c = 0.1
h = tanh(W1 @ x + b1)
p = w2 @ h + c
L = (p - y)**2
"""


def test_batch_in_float32_gives_each_row_what_numpy_float32_gives() -> None:
    program = parse(ROWS_NET, "rows.ad")
    rng = np.random.default_rng(3)
    columns = {"x[0]": rng.standard_normal(50), "x[1]": rng.standard_normal(50), "y": rng.standard_normal(50)}
    result = BatchEvaluator(program, dtype="float32").evaluate(columns).columns()
    assert {value.dtype.name for value in result.values()} == {"float32"}
    # the same rows by hand in float32, from the float64 draws rounded (as the executor starts)
    drawn = evaluate_tensors(program, {}).run
    weights = {name: np.asarray(drawn.value(name), np.float32) for name in ("W1", "b1", "w2", "c")}
    x = np.stack([columns["x[0]"], columns["x[1]"]], axis=1).astype(np.float32)
    y = columns["y"].astype(np.float32)
    h = np.tanh(x @ weights["W1"].T + weights["b1"])
    d = h @ weights["w2"] + weights["c"] - y
    gz = (2 * d)[:, None] * weights["w2"] * (1 - h * h)
    close(result["L"], d * d)
    close(result["dL/dy"], -2 * d)
    close(result["dL/dc"], 2 * d)
    for i in range(2):
        close(result[f"dL/dx[{i}]"], gz @ weights["W1"][:, i])
    mean = BatchEvaluator(program, dtype="float32").evaluate(columns, reduce="mean")
    close(mean.grads["b1"], gz.mean(axis=0))
    assert np.result_type(mean.grads["b1"]) == np.float32


def test_autodiff_cli_fit_in_float32_trains_in_float32_throughout() -> None:
    from autodiff_cli import fit

    xs = np.linspace(-1, 1, 60)
    columns = {"x": xs, "y": 2.5 * xs - 1.25}
    single = fit("x = 0\ny = 0\nw = 0\nb = 0\nL = (w * x + b - y)**2\n", columns, lr=0.1, steps=300, dtype="float32")
    double = fit("x = 0\ny = 0\nw = 0\nb = 0\nL = (w * x + b - y)**2\n", columns, lr=0.1, steps=300)
    assert single.result.params.dtype == np.float32  # SGD's steps too, not float64 after the first
    assert double.result.params.dtype == np.float64
    close([single.values["w"], single.values["b"]], [double.values["w"], double.values["b"]])
    close([single.values["w"], single.values["b"]], [2.5, -1.25], rtol=1e-3)  # the line drawn


def test_training_over_partitions_refuses_float32_rather_than_running_float64() -> None:
    from autodiff_cli.errors import InputError
    from autodiff_cli.execute.columns import plan_columns
    from autodiff_cli.execute.training import DataSet, plan_training

    program = parse("x = 0\ny = 0\nw = 0\nL = (w * x - y)**2\n", "line.ad")
    columns = {"x": np.linspace(0, 1, 5), "y": np.linspace(0, 2, 5)}
    data = DataSet("the data", columns, None, "row", plan_columns(program, list(columns), {}, data_name="the data"))
    with pytest.raises(InputError, match="float64 only"):
        plan_training(program, data, {}, partitions=object(), dtype="float32")  # type: ignore[arg-type]


def test_batch_options_in_float32_give_a_float32_evaluator_even_for_numbers() -> None:
    from autodiff_cli.execute.batch_rows import BatchOptions, _evaluator
    from autodiff_cli.execute.columns import plan_columns

    program = parse("x = 0\nw = 1.5\ny = tanh(w * x)\n", "numbers.ad")  # a program of numbers
    plan = plan_columns(program, ["x"], {}, data_name="rows.csv")
    evaluator, _, _, _ = _evaluator(program, plan, {}, BatchOptions(dtype="float32"))
    assert evaluator.dtype == np.float32 and evaluator._sweep is None  # the interpreter's rows
    result = evaluator.evaluate({"x": np.array([0.5, -1.0, 2.0])}).columns()
    x = np.array([0.5, -1.0, 2.0], np.float32)
    close(result["y"], np.tanh(np.float32(1.5) * x))
    close(result["dy/dw"], x * (1 - np.tanh(np.float32(1.5) * x) ** 2))
    assert {value.dtype.name for value in result.values()} == {"float32"}
    default, _, _, _ = _evaluator(program, plan, {}, BatchOptions())
    assert default._sweep is not None  # float64 keeps the column sweep
