"""The training step's shortcuts give the numbers the plain code gives, to the bit: cross_entropy's
VJP from what its forward kept, Adam's in-place update of its state, the reverse sweep's plan
kept from one run to the next, and the last-axis picks that replaced take/put_along_axis."""

from __future__ import annotations

import numpy as np
import pytest
from _mlp import mlp_program

from autodiff_cli.engine import tensor_ops
from autodiff_cli.engine.optim import AdamRule
from autodiff_cli.errors import EvaluationError
from autodiff_cli.execute.interpreter import run_forward
from autodiff_cli.execute.objective import ParameterLayout, TensorObjective
from autodiff_cli.language import parse

PROGRAM = mlp_program(5, 7, 4)


def data(rows: int = 9, seed: int = 0) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    columns = {"x": rng.standard_normal((rows, 5)), "label": rng.integers(0, 4, rows).astype(float)}
    weights = {"W1": rng.standard_normal((7, 5)), "b1": rng.standard_normal(7),
               "W2": rng.standard_normal((4, 7)), "b2": rng.standard_normal(4)}
    return columns, weights


def hand_gradient(columns: dict[str, np.ndarray], w: dict[str, np.ndarray]) -> tuple[float, dict[str, np.ndarray]]:
    """The mean loss and its gradient written out with NumPy (independent of the kernels)."""
    x, labels = columns["x"], columns["label"].astype(int)
    n = len(x)
    a = x @ w["W1"].T + w["b1"]
    h = np.maximum(a, 0.0)
    z = h @ w["W2"].T + w["b2"]
    e = np.exp(z - z.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    loss = float(np.mean(-np.log(p[np.arange(n), labels])))
    dz = p.copy()
    dz[np.arange(n), labels] -= 1.0
    dz /= n
    da = (dz @ w["W2"]) * (a > 0)
    return loss, {"W1": da.T @ x, "b1": da.sum(0), "W2": dz.T @ h, "b2": dz.sum(0)}


def objective(columns: dict[str, np.ndarray]) -> tuple[TensorObjective, ParameterLayout]:
    program = parse(PROGRAM, "mlp.ad")
    names = ["W1", "b1", "W2", "b2"]
    layout = ParameterLayout(names, [(7, 5), (7,), (4, 7), (4,)])
    return TensorObjective(program, "L", layout, {}, columns), layout


def test_the_step_against_numpy_by_hand_and_again_with_the_kept_plan() -> None:
    columns, weights = data()
    goal, layout = objective(columns)
    params = layout.pack(weights)
    want_loss, want = hand_gradient(columns, weights)
    for _ in range(3):  # the second and third runs use the shapes, rows and sweep plan kept by the first
        loss, grad = goal.loss_and_grad(params, None)
        assert abs(loss - want_loss) <= 1e-12 * abs(want_loss)
        assert np.allclose(grad, layout.pack(want), rtol=1e-12, atol=1e-14)
    rows = np.array([1, 4, 6])  # a minibatch: a new batch size, its own shapes
    sub = {name: column[rows] for name, column in columns.items()}
    loss, grad = goal.loss_and_grad(params, rows)
    want_loss, want = hand_gradient(sub, weights)
    assert abs(loss - want_loss) <= 1e-12 * abs(want_loss)
    assert np.allclose(grad, layout.pack(want), rtol=1e-12, atol=1e-14)


def test_cross_entropy_vjp_from_the_forward_is_the_same_bits() -> None:
    rng = np.random.default_rng(4)
    for logits, leads in ((rng.standard_normal((6, 5)) * 30, (1, 1)), (rng.standard_normal(5), (0, 1)),
                          (np.array([[1e16, 1e16, 0.0], [-np.inf, 0.0, 1.0]]), (1, 1))):
        rows = 6 if not leads[0] else len(logits)  # unbatched logits: the labels' rows
        labels = rng.integers(0, logits.shape[-1], rows).astype(float)
        args = (logits, labels)
        out, saved = tensor_ops._cross_entropy_saving(np, args, leads, None)
        assert np.array_equal(out, tensor_ops._cross_entropy_forward(np, args, leads, None), equal_nan=True)
        g = np.linspace(0.5, 1.5, np.size(out)).reshape(np.shape(out))
        kept = tensor_ops._cross_entropy_vjp_saved(np, g, saved, args, leads, None)
        fresh = tensor_ops._cross_entropy_vjp(np, g, out, args, leads, None)
        for a, b in zip(kept, fresh):
            assert np.array_equal(a, b, equal_nan=True)


def test_a_bad_label_in_a_later_step_is_still_named() -> None:
    columns, weights = data()
    goal, layout = objective(columns)
    params = layout.pack(weights)
    goal.loss_and_grad(params, None)
    goal.data["label"][5] = 4.0  # no class of 4, after a step that ran: checked on every run still
    with pytest.raises(EvaluationError, match="label 4 is not a class") as caught:
        goal.loss_and_grad(params, None)
    assert "in row 5 of the data" in " ".join(caught.value.notes)


def adam_by_the_equations(param, grad, state, step, lr, rule):  # type: ignore[no-untyped-def]
    """AdamRule's general equations on fresh arrays (its scalar path, element by element)."""
    m, v = state
    m = m + (1 - rule.beta1) * (grad - m)
    v = v * rule.beta2 + (1 - rule.beta2) * grad * grad
    denominator = v**0.5 / (1 - rule.beta2**step) ** 0.5 + rule.eps
    return param - lr / (1 - rule.beta1**step) * (m / denominator), (m, v)


def test_adam_in_place_is_the_equations_to_the_bit() -> None:
    rng = np.random.default_rng(7)
    rule = AdamRule(weight_decay=0.01)
    param, state = rng.standard_normal(50), None
    want_param, want_state = param.copy(), None
    for step in range(1, 6):
        grad = rng.standard_normal(50)
        param, state = rule.update(param, grad, state, step, 0.01)
        g = grad + rule.weight_decay * want_param
        if want_state is None:
            want_state = ((1 - rule.beta1) * g, (1 - rule.beta2) * g * g)
            m, v = want_state
            want_param = want_param - 0.01 / (1 - rule.beta1) * (m / (v**0.5 / (1 - rule.beta2) ** 0.5 + rule.eps))
        else:
            want_param, want_state = adam_by_the_equations(want_param, g, want_state, step, 0.01, rule)
        assert np.array_equal(param, want_param)
        assert all(np.array_equal(a, b) for a, b in zip(state, want_state))


@pytest.mark.parametrize("dtype, shape", [(np.float64, (40_000,)), (np.float32, (300, 250)), (np.float64, (16_384,))])
def test_adam_a_chunk_at_a_time_is_the_equations_to_the_bit(dtype, shape) -> None:
    # long vectors are updated a chunk at a time (16,384 float64 entries, 32,768 float32 ones): the
    # same bits as the equations on the whole arrays, with and without an array to write into
    rng = np.random.default_rng(8)
    rule = AdamRule(weight_decay=0.01)
    param = rng.standard_normal(shape).astype(dtype)
    want_param, want_state, state, spare = param.copy(), None, None, None
    for step in range(1, 5):
        grad = rng.standard_normal(shape).astype(dtype)
        made, state = rule.update(param, grad, state, step, 0.01, out=spare)
        g = grad + rule.weight_decay * want_param
        if want_state is None:
            want_state = ((1 - rule.beta1) * g, (1 - rule.beta2) * g * g)
            m, v = want_state
            want_param = want_param - 0.01 / (1 - rule.beta1) * (m / (v**0.5 / (1 - rule.beta2) ** 0.5 + rule.eps))
        else:
            want_param, want_state = adam_by_the_equations(want_param, g, want_state, step, 0.01, rule)
        assert made.dtype == dtype and made.shape == shape
        assert made.tobytes() == want_param.tobytes()
        assert all(a.tobytes() == b.tobytes() for a, b in zip(state, want_state))
        spare, param = (param if step % 2 else None), made  # into an old array, then into a fresh one


def test_last_axis_picks_are_take_and_put_along_axis() -> None:
    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 4, 5))
    index = rng.integers(0, 5, (3, 4, 1))
    assert np.array_equal(tensor_ops._take_last(np, a, index), np.take_along_axis(a, index, axis=-1))
    for values in (0.0, rng.standard_normal((3, 4, 1))):
        mine, theirs = a.copy(), a.copy()
        tensor_ops._put_last(np, mine, index, values)
        np.put_along_axis(theirs, index, values, axis=-1)
        assert np.array_equal(mine, theirs)
    strided = a.copy()[:, :, ::2]  # not contiguous: put_along_axis itself
    theirs = strided.copy()
    tensor_ops._put_last(np, strided, index % 3, 1.0)
    np.put_along_axis(theirs, index % 3, 1.0, axis=-1)
    assert np.array_equal(strided, theirs)


def test_run_forward_without_a_cache_still_sweeps() -> None:
    columns, weights = data(rows=3)
    program = parse(PROGRAM, "mlp.ad")
    run = run_forward(program, {**columns, **weights}, frozenset(columns))
    grads = run.gradients("L", ["W2"], np.full(3, 1 / 3))
    assert np.allclose(grads["W2"], hand_gradient(columns, weights)[1]["W2"], rtol=1e-12)


@pytest.mark.parametrize("statement", [
    "y = sum(exp(x) * 2 + 1)",  # exp's inf reaches y through * and +: y's check covers exp's
    "y = sum(1 / exp(x))",  # 1/inf is 0: nothing covers exp, which is checked itself
    "y = sum(tanh(exp(x)))",  # tanh(inf) is 1
])
def test_an_overflow_is_named_where_it_happens_with_or_without_the_cache(statement: str) -> None:
    program = parse(f"x = [1, 2, 800]\n{statement}\n", "f.ad")
    inputs = {"x": np.array([[1.0, 2.0, 3.0], [1.0, 900.0, 3.0]])}
    errors = []
    for cache in (None, {}, {}):
        with pytest.raises(EvaluationError) as caught:
            if cache is not None:  # a first run that passes, then the failing one with the cache kept
                run_forward(program, {"x": inputs["x"][:1]}, frozenset(["x"]), shapes_cache=cache)
            run_forward(program, inputs, frozenset(["x"]), shapes_cache=cache)
        errors.append((str(caught.value), getattr(caught.value, "row", None)))
    assert errors[0] == errors[1] == errors[2]
    assert "exp overflows at entry [1]" in errors[0][0] and errors[0][1] == 1


@pytest.mark.parametrize("rows", [
    [[0.5, -1.0, 2.0], [3.0, 3.0, -7.0]],  # a tie for the largest: the first one is the top
    [[1e16, 1e16, 0.0], [-1e308, 1e308, 0.0]],  # 1e16 + 1 keeps no digit; -1e308 - 1e308 overflows
    [[-np.inf, 0.0, 1.0], [-745.0, 0.0, -1e-300]],  # exp underflows to 0
])
def test_the_softmax_of_finite_rows_is_the_general_path_to_the_bit(rows: list[list[float]]) -> None:
    """Rows whose largest logit is finite take a shortcut (the top's e is exp(0) = 1 exactly); the
    same logits laid out in Fortran order take the general path, which reads e_top back."""
    x = np.array(rows)
    fast = tensor_ops._stable(np, x)
    general = tensor_ops._stable(np, np.asfortranarray(x))
    assert not general.e.flags.c_contiguous  # (so the general path was taken)
    for name, a, b in zip(fast._fields, fast, general):
        assert np.shape(a) == np.shape(b) and np.array_equal(a, b, equal_nan=True), name


@pytest.mark.parametrize(("first", "second", "leads"), [
    ((9, 7), (7,), (1, 0)),  # a bias added to every row
    ((9, 7), (9, 7), (1, 1)),
    ((9, 3), (4, 3), (1, 0)),  # a batched operand with fewer axes: lined up, then summed back
    ((9, 1, 3), (9, 4, 1), (1, 1)),  # size-1 axes stretched on both sides
    ((4, 3), (9, 4, 3), (0, 1)),
    ((), (9, 5), (0, 1)),
    ((2, 1), (5,), (0, 0)),
])
@pytest.mark.parametrize("op", ["+", "*", "-"])
def test_the_sweep_plan_sums_an_elementwise_share_as_unbroadcast_does(first: tuple[int, ...], second: tuple[int, ...],
                                                                      leads: tuple[int, int], op: str) -> None:
    """The plan works out from the shapes which axes each operand's share is summed over; the
    shares are the bits ``elementwise_vjp`` (through ``unbroadcast``) gives."""
    rng = np.random.default_rng(len(first) + 3 * len(second))
    a, b = rng.standard_normal(first), rng.standard_normal(second)
    decl = {name: f"zeros([{', '.join(map(str, shape[lead:]))}])" if shape[lead:] else "0"
            for name, shape, lead in (("a", first, leads[0]), ("b", second, leads[1]))}
    program = parse(f"a = {decl['a']}\nb = {decl['b']}\nc = a {op} b\ny = sum(c * c)\n", "f.ad")
    batched = frozenset(name for name, lead in zip("ab", leads) if lead)
    run = run_forward(program, {"a": a, "b": b}, batched, shapes_cache={})
    run.gradients("y", ["a", "b"], np.ones(9) if batched else None, seed_nonzero=True)  # (makes the plan)
    plan = next(value for key, value in run.plans.items() if isinstance(key, tuple) and key[0] == "sweep")
    step = next(step for step in plan if step[0] == run.register("c"))
    g = rng.standard_normal(np.shape(run.value("c")))
    planned = run._vjp(step, g)
    by_unbroadcast = tensor_ops.elementwise_vjp(np, op, g, run._slopes(step[0]), (a, b), leads)
    for mine, theirs, operand in zip(planned, by_unbroadcast, (a, b)):
        assert mine.shape == operand.shape and np.array_equal(mine, theirs)


def test_fit_seeds_every_step_with_one_read_only_array() -> None:
    """The seed of the reverse sweep (1 / rows everywhere) is made once per batch size, not per step,
    and nothing can write into it."""
    columns, weights = data()
    goal, layout = objective(columns)
    params = layout.pack(weights)
    first = goal._seed((9,), 9)
    goal.loss_and_grad(params, None)
    assert goal._seed((9,), 9) is first and not first.flags.writeable
    assert np.array_equal(first, np.full(9, 1 / 9))
    assert goal._seed((3,), 3) is not first and np.array_equal(goal._seed((3,), 3), np.full(3, 1 / 3))


@pytest.mark.parametrize("program_text", [
    PROGRAM,
    # W1 twice: its adjoint sums two shares, so neither is written into the flat gradient
    PROGRAM.replace("h = relu(W1 @ x + b1)", "h = relu(W1 @ x + b1) + tanh(W1 @ x)"),
    # b2 stretched over a size-1 axis is summed away and reshaped: copied, not written in place
    PROGRAM.replace("b2 = zeros([4])", "b2 = zeros([1])"),
])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_flat_gradient_written_in_place_is_the_packed_one_to_the_bit(program_text: str, dtype: str) -> None:
    columns, weights = data()
    if "zeros([1])" in program_text:
        weights["b2"] = weights["b2"][:1]
    program = parse(program_text, "mlp.ad")
    names = ["W1", "b1", "W2", "b2"]
    layout = ParameterLayout(names, [np.shape(weights[name]) for name in names], dtype)
    goal = TensorObjective(program, "L", layout, {}, columns)
    params = layout.pack(weights)
    for _ in range(2):  # the first step makes the plans, the second runs on them
        loss, grad = goal.loss_and_grad(params, None)
    inputs = {**{name: np.asarray(column, dtype) for name, column in columns.items()}, **layout.unpack(params)}
    run = run_forward(program, inputs, frozenset(columns), dtype=dtype)
    plain = layout.pack(run.gradients("L", names, np.full(9, 1 / 9, dtype)))
    assert grad.dtype == np.dtype(dtype) and np.array_equal(grad, plain)
    assert loss == float(np.mean(run.value("L")))
    slots = layout.unpack(np.empty(layout.size, dtype))
    written = run.gradients("L", names, np.full(9, 1 / 9, dtype), seed_nonzero=True, into=slots)
    in_place = {name for name in names if written[name] is slots[name]}
    want = {"W1", "b1", "W2", "b2"} - ({"W1"} if "tanh" in program_text else set()) - \
        ({"b2"} if "zeros([1])" in program_text else set())
    assert in_place == want


@pytest.mark.parametrize(("rows", "k"), [(1, 1), (2, 16), (256, 16), (7, 300)])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_vector_times_each_row_is_the_one_row_matrix_product_to_the_bit(rows: int, k: int, dtype: str) -> None:
    """w @ h with h a vector per row (a regression's last layer) takes a shortcut; it gives the bits
    of [w] @ h, the one-row matrix's product, forward and backward, and NumPy's numbers."""
    rng = np.random.default_rng(rows + k)
    w, h, g = (rng.standard_normal(shape).astype(dtype) for shape in ((k,), (rows, k), (rows,)))
    out = tensor_ops._matmul_forward(np, (w, h), (0, 1), None)
    matrix_out = tensor_ops._matmul_forward(np, (w[None, :], h), (0, 1), None)
    assert out.shape == (rows,) and out.dtype == np.dtype(dtype) and np.array_equal(out, matrix_out[:, 0])
    gw, gh = tensor_ops._matmul_vjp(np, g, out, (w, h), (0, 1), None)
    matrix_gw, matrix_gh = tensor_ops._matmul_vjp(np, g[:, None], matrix_out, (w[None, :], h), (0, 1), None)
    assert np.array_equal(gw, matrix_gw[0]) and np.array_equal(gh, matrix_gh)
    tol = 1e-12 if dtype == "float64" else 1e-4
    assert np.allclose(out, h @ w, rtol=tol, atol=tol) and np.allclose(gw, g @ h, rtol=tol, atol=tol)
    assert np.allclose(gh, np.outer(g, w), rtol=tol, atol=tol)
