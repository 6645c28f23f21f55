"""Indexing by integer tensors (``C[Xb]``, ``x[I, J]``), slice steps and indexing of any rank,
through the language: values, gradients and JVPs against HIPS autograd, the derivative program
``diff`` writes run again, and the refusals (an index that is no whole number or out of range,
at the subscript's line and column, the entry named).

Expected numbers come from NumPy and autograd on the same arrays, never from our own output.
"""

from __future__ import annotations

import autograd.numpy as anp
import numpy as np
import pytest
from autograd import grad

from autodiff_cli.errors import EvaluationError, ProgramError
from autodiff_cli.execute.interpreter import input_arrays
from autodiff_cli.execute.interpreter import run_forward as run_arrays
from autodiff_cli.execute.tensor_symbolic import differentiate_tensors
from autodiff_cli.language import parse
from autodiff_cli.render.formulas import derivatives_program


def run_forward(program, given):
    """The program run on ``given`` values, the other inputs at their defaults."""
    given = {k: np.asarray(v, dtype=np.float64) for k, v in given.items()}
    return run_arrays(program, input_arrays(program, given, 0))


def gradients(text: str, inputs: dict, output: str, wrt: list[str]) -> tuple[float, dict]:
    run = run_forward(parse(text), inputs)
    return float(run.value(output)), run.gradients(output, wrt)


def diff_gradient(text: str, inputs: dict, wrt: str) -> np.ndarray:
    """The gradient as ``diff`` writes it, parsed and run again."""
    program = parse(text)
    shapes = {k: np.shape(v) for k, v in inputs.items()}
    derivatives = differentiate_tensors(program, [wrt], shapes_given=shapes)
    written = parse(derivatives_program(derivatives))
    run = run_forward(written, inputs)
    return run.value(derivatives.derivatives[wrt])


EMBEDDING = """\
C = normal([27, 10], 1)
W = normal([10], 1)
emb = C[Xb]
L = sum(tanh(emb) * W)
"""


def embedding_inputs(rng):
    C = rng.normal(size=(27, 10))
    Xb = rng.integers(-27, 27, size=(32, 3)).astype(np.float64)
    Xb[0] = [5, 5, -22]  # one row named three times (5 and -22 are the same row)
    return {"C": C, "W": rng.normal(size=10), "Xb": Xb}


def test_an_embedding_table_gathered_by_an_index_tensor_matches_autograd():
    rng = np.random.default_rng(1)
    inputs = embedding_inputs(rng)
    run = run_forward(parse(EMBEDDING), inputs)
    index = inputs["Xb"].astype(int)
    np.testing.assert_array_equal(run.value("emb"), inputs["C"][index])
    assert run.value("emb").shape == (32, 3, 10)

    def loss(C, W):
        return anp.sum(anp.tanh(C[index]) * W)

    value, got = gradients(EMBEDDING, inputs, "L", ["C", "W"])
    assert value == pytest.approx(loss(inputs["C"], inputs["W"]), rel=1e-12)
    np.testing.assert_allclose(got["C"], grad(loss, 0)(inputs["C"], inputs["W"]), rtol=1e-12, atol=1e-12)
    assert np.count_nonzero(got["C"][5]) == 10  # the repeated row: its three shares add up
    np.testing.assert_allclose(diff_gradient(EMBEDDING, inputs, "C"), grad(loss, 0)(inputs["C"], inputs["W"]),
                               rtol=1e-12, atol=1e-12)


def test_the_jvp_of_a_gather_matches_autograd_along_a_direction():
    rng = np.random.default_rng(2)
    inputs = embedding_inputs(rng)
    run = run_forward(parse(EMBEDDING), inputs)
    direction = rng.normal(size=(27, 10))
    index = inputs["Xb"].astype(int)

    def along(t):
        return anp.sum(anp.tanh((inputs["C"] + t * direction)[index]) * inputs["W"])

    assert float(run.jvp("L", {"C": direction})) == pytest.approx(grad(along)(0.0), rel=1e-12)


PAIRED = """\
logits = normal([6, 5], 1)
logprobs = log_softmax(logits)
picked = logprobs[rows, Yb]
loss = -mean(picked)
"""


def test_one_entry_per_row_by_paired_indices_matches_autograd():
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(6, 5))
    labels = np.array([4, 0, -1, 2, 2, 1])  # -1 is the last class
    inputs = {"logits": logits, "rows": np.arange(6.0), "Yb": labels.astype(np.float64)}

    def loss(x):
        logprobs = x - anp.log(anp.sum(anp.exp(x), axis=1, keepdims=True))
        return -anp.mean(logprobs[np.arange(6), labels])

    value, got = gradients(PAIRED, inputs, "loss", ["logits"])
    assert value == pytest.approx(loss(logits), rel=1e-12)
    np.testing.assert_allclose(got["logits"], grad(loss)(logits), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(diff_gradient(PAIRED, inputs, "logits"), grad(loss)(logits), rtol=1e-12, atol=1e-14)


def test_paired_indices_may_repeat_a_pair_and_the_gradients_add():
    text = "x = [[1, 2], [3, 4]]\ny = x[I, J]\nL = sum(y * y)\n"
    inputs = {"I": [1, 1, 0], "J": [0, 0, -1]}  # x[1, 0] twice, x[0, 1] once
    value, got = gradients(text, inputs, "L", ["x"])
    assert value == 3.0**2 * 2 + 2.0**2
    np.testing.assert_array_equal(got["x"], [[0.0, 4.0], [12.0, 0.0]])  # 2 * x, once per pick


def test_an_empty_selection_gives_an_empty_tensor_and_a_zero_gradient():
    text = "C = [[1, 2], [3, 4]]\nL = sum(C[i])\n"
    value, got = gradients(text, {"i": np.zeros(0)}, "L", ["C"])
    assert value == 0.0
    np.testing.assert_array_equal(got["C"], np.zeros((2, 2)))


@pytest.mark.parametrize("index, wrong", [
    ("[0, 3]", "the index's entry [1] is 3, out of range for an axis of 3"),
    ("[0, -4]", "the index's entry [1] is -4, out of range for an axis of 3"),
    ("[[0, 1], [2.5, 0]]", "the index's entry [1, 0] is 2.5, not a whole number"),
])
def test_an_index_that_is_no_whole_number_of_the_axis_is_refused_where_it_is_used(index, wrong):
    text = f"C = [[1, 2], [3, 4], [5, 6]]\nX = {index}\nL = sum(C[X])\n"
    with pytest.raises(EvaluationError) as caught:
        run_forward(parse(text), {})
    assert wrong in caught.value.message
    assert "from -3 to 2" in caught.value.message
    assert (caught.value.position.line, caught.value.position.column) == (3, 10)  # the subscript's '['


def test_a_nan_index_is_refused():
    """A NaN given for an index is named as the input it is, at the subscript that reads it."""
    with pytest.raises(EvaluationError, match="the input 'i' is nan, not a finite number") as caught:
        run_forward(parse("C = [1, 2, 3]\nL = C[i]\n"), {"i": np.float64("nan")})
    assert (caught.value.position.line, caught.value.position.column) == (2, 7)


def test_tensor_indices_mixed_with_slices_are_refused_at_the_slice():
    with pytest.raises(ProgramError) as caught:
        parse("C = [[1, 2], [3, 4]]\nL = sum(C[X, 0:1])\n")
    assert "a tensor index takes rows (x[i]) or entries by index tensors of one shape" in caught.value.message
    assert (caught.value.position.line, caught.value.position.column) == (2, 15)


FOUR_AXES = "x = normal([3, 4, 5, 6], 1)\ny = x[1:, ::2, 4:0:-2, -1]\nL = sum(tanh(y) * y)\n"


def test_slices_with_steps_on_a_tensor_of_four_axes_match_autograd():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(3, 4, 5, 6))
    inputs = {"x": x}

    def loss(x):
        y = x[1:, ::2, 4:0:-2, -1]
        return anp.sum(anp.tanh(y) * y)

    value, got = gradients(FOUR_AXES, inputs, "L", ["x"])
    assert value == pytest.approx(loss(x), rel=1e-12)
    np.testing.assert_allclose(got["x"], grad(loss)(x), rtol=1e-12, atol=1e-14)
    run = run_forward(parse(FOUR_AXES), inputs)
    assert run.value("y").shape == (2, 2, 2)


@pytest.mark.parametrize("subscript, want", [("::2", [1, 3, 5]), ("::-1", [6, 5, 4, 3, 2, 1]),
                                             ("4:0:-2", [5, 3]), ("1:5:2", [2, 4]), ("-2::-3", [5, 2]),
                                             ("1::", [2, 3, 4, 5, 6])])
def test_slice_steps_take_what_python_takes(subscript, want):
    run = run_forward(parse(f"x = [1, 2, 3, 4, 5, 6]\ny = x[{subscript}]\n"), {})
    np.testing.assert_array_equal(run.value("y"), want)


def test_a_slice_step_of_zero_is_refused_at_the_step():
    with pytest.raises(ProgramError) as caught:
        parse("x = [1, 2, 3]\ny = x[1::0]\n")
    assert caught.value.message == "a slice's step cannot be 0"
    assert (caught.value.position.line, caught.value.position.column) == (2, 10)


INNER = """\
x = normal([2, 3, 4, 5], 1)
w = normal([3, 1, 5], 1)
y = x[1, ::2, 3:0:-1]
s = sum(tanh(x) * w, 2)
m = max(x, 1)
L = sum(y * y) + sum(s * s) + mean(m * m) + sum(x[0, 1, 2, 4:1:-2] * x[-1, :, 0, 4:1:-2])
"""


def test_diff_writes_indexing_and_inner_reductions_of_a_four_axis_tensor():
    """Formerly refused: the adjoints of x[1, ::2, 3:0:-1], of sum along an inner axis, of
    max along axis 1 and of broadcasting w [3, 1, 5] against [2, 3, 4, 5] are written in the
    language (scatter), and the program diff writes gives autograd's gradients."""
    rng = np.random.default_rng(5)
    inputs = {"x": rng.normal(size=(2, 3, 4, 5)), "w": rng.normal(size=(3, 1, 5))}

    def loss(x, w):
        y = x[1, ::2, 3:0:-1]
        s = anp.sum(anp.tanh(x) * w, axis=2)
        m = anp.max(x, axis=1)
        return anp.sum(y * y) + anp.sum(s * s) + anp.mean(m * m) + anp.sum(x[0, 1, 2, 4:1:-2] * x[-1, :, 0, 4:1:-2])

    for k, name in enumerate(["x", "w"]):
        want = grad(loss, k)(inputs["x"], inputs["w"])
        np.testing.assert_allclose(diff_gradient(INNER, inputs, name), want, rtol=1e-12, atol=1e-12)


def test_pick_and_scatter_of_empty_selections_and_their_refusals():
    from autodiff_cli.engine.ops import DomainError
    from autodiff_cli.engine.registry import ENTRIES

    pick, scatter = ENTRIES["pick"], ENTRIES["scatter"]
    none = np.zeros(0)
    out = pick.forward(np, [np.zeros((0, 3)), none], [0, 0], None)
    assert out.shape == (0,)
    assert pick.vjp(np, out, out, [np.zeros((0, 3)), none], [0, 0], None)[0].shape == (0, 3)
    put = scatter.forward(np, [np.zeros((0, 2)), none], [0, 0], 3)
    assert put.shape == (0, 3, 2)
    with pytest.raises(DomainError, match=r"the index's entry \[1\] is 3, out of range for an axis of 3"):
        pick.forward(np, [np.ones((2, 3)), np.array([0.0, 3.0])], [0, 0], None)
    with pytest.raises(DomainError, match=r"the index's entry \[0\] is -0.5, not a whole number"):
        scatter.forward(np, [np.ones(2), np.array([-0.5, 1.0])], [0, 0], 4)
    # a batched index is named by its place in the row, without the batch axis
    with pytest.raises(DomainError, match=r"the index's entry \[1\] is 9, out of range"):
        ENTRIES["gather"].forward(np, [np.ones((4, 2)), np.array([[0.0, 1.0], [2.0, 9.0]])], [0, 1], None)


MAKEMORE_LIKE = """\
C = normal([27, 10], 1)
W1 = normal([10, 64], 0.3)
b1 = normal([64], 0.1)
W2 = normal([64, 27], 0.1)
b2 = zeros([27])
emb = C[Xb]
h = tanh(sum(emb, 1) @ W1 + b1)
logprobs = log_softmax(h @ W2 + b2)
loss = -mean(logprobs[rows, Yb])
"""


def test_an_embedding_and_a_picked_loss_match_pytorch():
    """The makemore exercise's gather and its `logprobs[range(n), Yb]`, against loss.backward()."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    inputs = {"C": rng.normal(size=(27, 10)), "W1": rng.normal(size=(10, 64)) * 0.3,
              "b1": rng.normal(size=64) * 0.1, "W2": rng.normal(size=(64, 27)) * 0.1, "b2": rng.normal(size=27) * 0.1,
              "Xb": rng.integers(0, 27, size=(32, 3)).astype(np.float64), "rows": np.arange(32.0),
              "Yb": rng.integers(0, 27, size=32).astype(np.float64)}
    names = ["C", "W1", "b1", "W2", "b2"]
    value, got = gradients(MAKEMORE_LIKE, inputs, "loss", names)
    t = {n: torch.tensor(inputs[n], dtype=torch.float64, requires_grad=True) for n in names}
    emb = t["C"][torch.tensor(inputs["Xb"], dtype=torch.long)]
    h = torch.tanh(emb.sum(1) @ t["W1"] + t["b1"])
    logprobs = torch.log_softmax(h @ t["W2"] + t["b2"], dim=1)
    loss = -logprobs[torch.arange(32), torch.tensor(inputs["Yb"], dtype=torch.long)].mean()
    loss.backward()
    assert value == pytest.approx(loss.item(), rel=1e-12, abs=1e-12)
    for n in names:
        np.testing.assert_allclose(got[n], t[n].grad.numpy(), rtol=1e-10, atol=1e-13)


def test_a_scatter_too_large_is_refused_before_it_runs():
    from autodiff_cli.errors import ShapeError

    with pytest.raises(ShapeError) as caught:
        run_forward(parse("g = [1, 2]\nL = sum(scatter(g, [0, 1], 1e9))\n"), {})
    assert "would make [2, 1000000000], more than 1,000,000,000 entries" in caught.value.message
    assert (caught.value.position.line, caught.value.position.column) == (2, 9)


def test_three_index_tensors_take_one_entry_per_triple():
    x = np.arange(24.0).reshape(2, 3, 4)
    inputs = {"I": [1, 0, -1], "J": [2, 2, 0], "K": [3, 0, 3]}
    text = "x = normal([2, 3, 4], 1)\ny = x[I, J, K]\nL = sum(y * y)\n"
    value, got = gradients(text, {"x": x, **inputs}, "L", ["x"])
    index = tuple(np.array(inputs[k]) for k in "IJK")
    assert value == float(np.sum(x[index] ** 2))
    np.testing.assert_allclose(got["x"], grad(lambda a: anp.sum(a[index] ** 2))(x), rtol=1e-15)
