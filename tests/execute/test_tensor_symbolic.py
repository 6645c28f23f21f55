"""diff of tensor programs: the derivative program, read back by the language's own parser and
run by the tensor executor, gives the executor's gradients; so does its Python (NumPy) form;
its Hessian-vector product agrees with HIPS autograd's and with finite differences of the
executor's gradient.  On the post's regression, on the moons MLP and on the random
shape-typed programs of tests/properties/test_tensor_random.py."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import autograd
import numpy as np
import pytest

from autodiff_cli.engine.registry import ENTRIES
from autodiff_cli.errors import ProgramError
from autodiff_cli.execute.interpreter import input_arrays, run_forward
from autodiff_cli.execute.tensor_symbolic import differentiate_tensors, full_hessian, vjp_rule
from autodiff_cli.language.compiler import parse
from autodiff_cli.render.formulas import derivatives_latex, derivatives_program, derivatives_python, derivatives_text
from properties.test_tensor_random import Gen, Tie

STRUCTURAL = {name: op for name, op in ENTRIES.items() if not op.elementwise}  # the ops that are not elementwise

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
TOLERANCE = 1e-12
PROGRAMS = 300  # random programs, in chunks
CHUNK = 50


def close(got: Any, want: Any, what: str, tolerance: float = TOLERANCE) -> None:
    """Relative, and absolute against the largest entry for entries near 0 (as test_tensor_random)."""
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance * scale, err_msg=what)


def run_text(text: str, given: dict[str, Any]) -> Any:
    program = parse(text)
    return run_forward(program, input_arrays(program, given, seed=3))


def executor_gradients(program: Any, given: dict[str, Any], wrt: list[str]) -> dict[str, Any]:
    run = run_forward(program, input_arrays(program, given, seed=3))
    return run.gradients(program.result, wrt)


def python_form(text: str, given: dict[str, Any], seed: int = 3) -> dict[str, Any]:
    import inspect

    namespace: dict[str, Any] = {}
    exec(compile(text, "<diff --format python>", "exec"), namespace)  # noqa: S102 - our own output, under test
    # the inputs the derivatives read (a label read only by a comparison is not one of them)
    kwargs = {n: v for n, v in given.items() if n in inspect.signature(namespace["derivatives"]).parameters}
    if "seed=0" in text.splitlines()[text.splitlines().index(next(
            line for line in text.splitlines() if line.startswith("def derivatives")))]:
        kwargs["seed"] = seed
    return namespace["derivatives"](**kwargs)


def check_first_order(program: Any, given: dict[str, Any], wrt: list[str]) -> Any:
    result = differentiate_tensors(program, wrt, shapes_given={n: np.shape(v) for n, v in given.items()})
    want = executor_gradients(program, given, wrt)
    run = run_text(derivatives_program(result), given)
    python = python_form(derivatives_python(result), given)
    for name in wrt:
        close(run.value(result.derivatives[name]), want[name], f"d/d{name} (program)")
        close(python[name], want[name], f"d/d{name} (python)")
    latex, text = derivatives_latex(result), derivatives_text(result)  # every op has a form in both
    assert latex.count(" &= ") == len(result.statements)
    assert text.count(" = ") == len(result.statements)
    return result


# --- every op has a VJP rule ------------------------------------------------------------------------


def test_every_op_has_a_symbolic_vjp() -> None:
    """A new op of either table fails here until execute/tensor_symbolic.py gives it a rule."""
    made = {name for name, op in STRUCTURAL.items() if not op.arity}  # constants the compiler makes (arange)
    missing = [op for op in [*ENTRIES] if op not in made and not callable(vjp_rule(op))]
    assert not missing, f"ops without a symbolic VJP: {missing}"


# --- the post's examples -------------------------------------------------------------------------------


def test_regression_gives_the_posts_gradient() -> None:
    program = parse((SAMPLES / "regression_matrix.ad").read_text())
    result = check_first_order(program, {}, ["W"])
    text = derivatives_program(result)
    assert "dL_dW = transpose(X) @ dL_dP\n" in text
    # the post's dL/dW = (2/N) X^T (P - Y), computed by hand in NumPy
    x = np.array(program.variables["X"].default.nested())
    y = np.array(program.variables["Y"].default.nested())
    w = np.array([[2.5], [-1.25]])
    run = run_text(text, {"W": w})
    close(run.value("dL_dW"), 2 / 8 * x.T @ (x @ w - y), "dL/dW by hand")
    assert "X^\\top \\frac{\\partial L}{\\partial P}" in derivatives_latex(result)
    assert "dL_dW = transpose(X) @ dL_dP  # [2, 1]\n" in derivatives_text(result)


def test_moons_mlp_every_parameter() -> None:
    program = parse((SAMPLES / "moons_mlp.ad").read_text())
    wrt = ["W1", "b1", "W2", "b2", "W3", "b3", "x"]
    for x, y in (([0.5, -0.25], 1.0), ([1.5, 0.75], -1.0)):
        result = check_first_order(program, {"x": x, "y": y}, wrt)
    # linear in the program: one statement per forward value read and per adjoint
    assert len(result.statements) < 3 * len(program.instructions)


def test_derivative_of_derivative_program_reads_back() -> None:
    """The program text is a program of the language: diff can differentiate it again."""
    program = parse((SAMPLES / "regression_matrix.ad").read_text())
    text = derivatives_program(differentiate_tensors(program, ["W"]))
    again = parse(text + "S = sum(dL_dW)\n")
    second = differentiate_tensors(again, ["W"], "S")
    x = np.array(program.variables["X"].default.nested())
    close(run_text(derivatives_program(second), {}).value(second.derivatives["W"]),
          2 / 8 * x.T @ x @ np.ones((2, 1)), "d sum(dL/dW) / dW = H 1")


def layers(n: int) -> str:
    lines = ["x = [1, 2]", "W = [[0.5, -0.25], [0.1, 0.3]]", "h0 = x"]
    lines += [f"h{i} = tanh(W @ h{i - 1} + 0.1)" for i in range(1, n + 1)]
    return "\n".join([*lines, f"L = sum(h{n}**2)"]) + "\n"


def test_the_result_grows_linearly_with_the_program() -> None:
    sizes = {}
    for n in (50, 100, 200):
        result = differentiate_tensors(parse(layers(n)), ["W", "x"])
        sizes[n] = (len(result.statements), len(derivatives_program(result)))
    for small, big in ((50, 100), (100, 200)):
        assert sizes[big][0] <= 2 * sizes[small][0] + 10, sizes
        assert sizes[big][1] <= 2.1 * sizes[small][1], sizes
    program = parse(layers(20))
    check_first_order(program, {}, ["W", "x"])


def test_a_deeply_nested_expression_needs_no_recursion() -> None:
    depth = 3000
    program = parse("x = [1, 2]\nL = sum(" + "sin(" * depth + "x" + ")" * depth + ")\n")
    result = differentiate_tensors(program, ["x"])
    for render in (derivatives_program, derivatives_latex, derivatives_python, derivatives_text):
        render(result)
    want = np.array([1.0, 2.0])
    slope = np.ones(2)
    for _ in range(depth):  # the chain rule by hand: d sin^n(x) = prod cos(sin^k(x))
        slope *= np.cos(want)
        want = np.sin(want)
    close(run_text(derivatives_program(result), {}).value(result.derivatives["x"]), slope, "d/dx", 1e-10)


# --- random shape-typed programs -----------------------------------------------------------------------


def draw(seed: int) -> tuple[Any, Any, dict[str, Any]]:
    """A random program of test_tensor_random's generator that its reference accepts (no ties)."""
    while True:
        spec = Gen(seed).program()
        program = parse(spec.text)
        given = {name: spec.values[name] for name, _, kind in spec.inputs
                 if kind == "given" or kind == "label" and program.variables[name].default is None}
        arrays = input_arrays(program, given, seed=3)
        values = {**spec.values, **{name: arrays[name] for name, _, kind in spec.inputs if kind == "init"}}
        try:
            spec.reference(dict(values))
        except Tie:
            seed += 7_919_000
            continue
        return spec, program, given


@pytest.mark.parametrize("chunk", range(PROGRAMS // CHUNK))
def test_random_programs_gradients(chunk: int) -> None:
    for seed in range(chunk * CHUNK, (chunk + 1) * CHUNK):
        spec, program, given = draw(seed)
        wrt = [name for name, _, _ in spec.inputs]  # labels too: their gradient is 0
        try:
            check_first_order(program, given, wrt)
        except ProgramError:
            raise
        except BaseException as error:
            raise AssertionError(f"seed {seed}, program:\n{spec.text}") from error


def hvp_reference(spec: Any, values: dict[str, Any], v: dict[str, Any]) -> dict[str, Any]:
    """autograd's Hessian-vector product of the generator's own autograd function."""
    names = spec.differentiable()
    constants = {name: values[name] for name, _, kind in spec.inputs if kind == "label"}

    def f(xs: tuple[Any, ...]) -> Any:
        return spec.reference({**constants, **dict(zip(names, xs))}, spec.result)[spec.result]

    def directional(xs: tuple[Any, ...]) -> Any:
        grads = autograd.grad(f)(xs)
        return sum(autograd.numpy.sum(g * v[n]) for g, n in zip(grads, names))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hv = autograd.grad(directional)(tuple(np.asarray(values[n], dtype=float) for n in names))
    return dict(zip(names, hv))


@pytest.mark.parametrize("chunk", range(2))
def test_random_programs_hessian_vector_products(chunk: int) -> None:
    rng = np.random.default_rng(chunk)
    for seed in range(chunk * CHUNK, (chunk + 1) * CHUNK):
        spec, program, given = draw(seed)
        wrt = spec.differentiable()
        result = differentiate_tensors(program, wrt, order=2, shapes_given={n: np.shape(v) for n, v in given.items()})
        arrays = input_arrays(program, given, seed=3)
        v = {name: rng.normal(size=np.shape(arrays[name])) for name in wrt}
        directions = {result.directions[name]: v[name] for name in wrt}
        run = run_text(derivatives_program(result), {**given, **directions})
        want = hvp_reference(spec, {**spec.values, **arrays}, v)
        python = python_form(derivatives_python(result), {**given, **directions})
        for name in wrt:
            close(run.value(result.derivatives[name]), want[name], f"seed {seed}: H v for {name}\n{spec.text}",
                  1e-10)
            close(python[name], want[name], f"seed {seed}: H v for {name} (python)", 1e-10)


def test_hessian_vector_product_of_moons_mlp_against_finite_differences() -> None:
    program = parse((SAMPLES / "moons_mlp.ad").read_text())
    wrt = ["W1", "b1", "W2", "b2", "W3", "b3"]
    given = {"x": [0.5, -0.25], "y": 1.0}
    result = differentiate_tensors(program, wrt, order=2)
    arrays = input_arrays(program, given, seed=3)
    rng = np.random.default_rng(5)
    v = {name: rng.normal(size=arrays[name].shape) for name in wrt}
    run = run_text(derivatives_program(result), {**given, **{result.directions[n]: v[n] for n in wrt}})
    h = 1e-5

    def gradient(sign: float) -> dict[str, Any]:
        moved = {**arrays, **{n: arrays[n] + sign * h * v[n] for n in wrt}}
        return run_forward(program, moved).gradients(program.result, wrt)

    plus, minus = gradient(1.0), gradient(-1.0)
    for name in wrt:
        close(run.value(result.derivatives[name]), (plus[name] - minus[name]) / (2 * h), f"H v for {name}", 1e-6)


# --- what diff cannot write ----------------------------------------------------------------------------


def test_an_inner_axis_of_a_three_axis_tensor_is_put_back_with_size_1() -> None:
    """sum(A, 1)'s adjoint puts the axis back with size 1 (keepdims), then broadcasts."""
    program = parse("A = [[[1, 2], [3, 4]], [[5, 6], [7, 8]]]\nL = sum(sum(A, 1)**2)\n")
    result = check_first_order(program, {}, ["A"])
    a = np.arange(1.0, 9.0).reshape(2, 2, 2)
    run = run_text(derivatives_program(result), {})
    close(run.value(result.derivatives["A"]), np.broadcast_to(2 * np.sum(a, 1, keepdims=True), a.shape), "by hand")


def test_an_inner_axis_and_an_index_of_a_four_axis_tensor_are_written_with_reshape() -> None:
    """Once refused ("the language has no keepdims"): a reduction along an inner axis, a
    broadcast over an inner size-1 axis and an index of a tensor of 3 and 4 axes."""
    a = np.arange(1.0, 25.0).reshape(2, 3, 2, 2) / 10
    c = np.array([[[0.5]], [[-1.0]], [[2.0]]])  # [3, 1, 1]: stretched along A[0]'s inner axes
    text = (f"A = {a.tolist()}\nc = {c.tolist()}\n"
            "L = sum(sum(A, 1)**2) + sum(max(A, -2, keepdim) * A) + sum(A[1, :, 0] * c[0]) + sum(tanh(A[0] * c))\n")
    program = parse(text)
    result = check_first_order(program, {}, ["A", "c"])

    def loss(a, c):
        import autograd.numpy as anp
        return (anp.sum(anp.sum(a, 1) ** 2) + anp.sum(anp.max(a, -2, keepdims=True) * a)
                + anp.sum(a[1, :, 0] * c[0]) + anp.sum(anp.tanh(a[0] * c)))

    run = run_text(derivatives_program(result), {})
    close(run.value(result.derivatives["A"]), autograd.grad(loss, 0)(a, c), "dL/dA by autograd")
    close(run.value(result.derivatives["c"]), autograd.grad(loss, 1)(a, c), "dL/dc by autograd")


def test_a_matrix_output_is_refused_with_the_way_out() -> None:
    program = parse("W = [[1, 2], [3, 4]]\nM = W * 2\n")
    with pytest.raises(ProgramError) as caught:
        differentiate_tensors(program, ["W"])
    assert "sum(M)" in caught.value.hint


def test_three_axes_where_the_language_can_write_them() -> None:
    """Totals over leading axes of a tensor of 3 axes broadcast back without a transpose."""
    program = parse("A = [[[1, 2], [3, 4]], [[5, 6], [7, 8]]]\nb = [[[0.5, -1]]]\n"
                    "L = sum(tanh(A * b)) + sum(sum(A, 0)**2)\n")
    result = check_first_order(program, {}, ["A", "b"])
    a = np.arange(1.0, 9.0).reshape(2, 2, 2)
    b = np.array([[[0.5, -1.0]]])
    want_a = b * (1 - np.tanh(a * b) ** 2) + 2 * np.sum(a, 0)
    want_b = np.sum(a * (1 - np.tanh(a * b) ** 2), axis=(0, 1), keepdims=True)
    run = run_text(derivatives_program(result), {})
    close(run.value(result.derivatives["A"]), want_a, "dL/dA by hand")
    close(run.value(result.derivatives["b"]), want_b, "dL/db by hand")


def test_a_spread_of_a_spread_is_written_once() -> None:
    """mean(sum(., 0), 0) spreads a total back twice; found by a random program (seed 1577)."""
    program = parse("x1 = [[0.5, 0.8], [-0.1, -1.25]]\nx3 = [[-0.5, 0.4]]\n"
                    "v4 = (transpose(x1)**2 + 1) ** tanh(x3)\nv5 = mean(sum(v4**2, 0), 0)\nL = mean(v4) + v5\n")
    check_first_order(program, {}, ["x1", "x3"])


@pytest.mark.parametrize(("text", "want"), [
    ("x = [3, 1, 3]\ny = max(x)\n", [0.5, 0.0, 0.5]),  # a tie shares the gradient evenly
    ("x = [3, 1, 1]\ny = min(x)\n", [0.0, 0.5, 0.5]),
    ("x = [0, -1, 2]\ny = sum(relu(x))\n", [0.0, 0.0, 1.0]),  # relu'(0) = step(0) = 0
    ("x = [0, -1, 2]\ny = sum(abs(x))\n", [0.0, -1.0, 1.0]),  # abs'(0) = sign(0) = 0
])
def test_the_engines_conventions_at_ties_and_kinks(text: str, want: list[float]) -> None:
    program = parse(text)
    result = check_first_order(program, {}, ["x"])
    close(run_text(derivatives_program(result), {}).value(result.derivatives["x"]), want, "by hand")


# --- the whole Hessian, by stacking H v along each entry ----------------------------------------------


def hessian_reference(spec: Any, values: dict[str, Any], w: str, u: str) -> Any:
    """d2 L / dw du by autograd: the Jacobian with respect to u of the gradient with respect to w,
    laid out as full_hessian lays it: a row per entry of w (row-major), each shaped like u."""
    names = spec.differentiable()
    constants = {name: values[name] for name, _, kind in spec.inputs if kind == "label"}

    def f(xs: tuple[Any, ...]) -> Any:
        return spec.reference({**constants, **dict(zip(names, xs))}, spec.result)[spec.result]

    point = tuple(np.asarray(values[n], dtype=float) for n in names)
    i, j = names.index(w), names.index(u)

    def gradient_w(x_u: Any) -> Any:
        return autograd.grad(f)(point[:j] + (x_u,) + point[j + 1:])[i]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jacobian = autograd.jacobian(gradient_w)(point[j])  # [*shape of w, *shape of u]
    shape_w = np.shape(point[i])
    return jacobian.reshape((int(np.prod(shape_w)),) + np.shape(point[j])) if shape_w else jacobian


@pytest.mark.parametrize("chunk", range(3))
def test_random_programs_whole_hessians(chunk: int) -> None:
    checked = 0
    for seed in range(chunk * 40, (chunk + 1) * 40):
        spec, program, given = draw(seed)
        arrays = input_arrays(program, given, seed=3)
        wrt = [n for n in spec.differentiable() if np.size(arrays[n]) <= 6][:2]
        if not wrt:
            continue
        first = differentiate_tensors(program, wrt, shapes_given={n: np.shape(v) for n, v in given.items()})
        result = full_hessian(first)
        run = run_text(derivatives_program(result), given)
        python = python_form(derivatives_python(result), given)
        values = {**spec.values, **arrays}
        for w in wrt:
            for u in wrt:
                want = hessian_reference(spec, values, w, u)
                close(run.value(result.derivatives[f"{w},{u}"]), want, f"seed {seed}: H {w},{u}\n{spec.text}", 1e-10)
                close(python[f"{w},{u}"], want, f"seed {seed}: H {w},{u} (python)", 1e-10)
        checked += 1
    assert checked >= 20


def test_a_whole_hessian_of_too_many_entries_is_refused() -> None:
    program = parse("x = zeros([70]); L = sum(x**3)")
    with pytest.raises(ValueError, match="70 entries"):
        full_hessian(differentiate_tensors(program, ["x"]))


def test_a_whole_hessian_by_hand() -> None:
    """L = sum(x**3) + x0*x1 at x = [1, 2]: H = [[6 x0, 1], [1, 6 x1]] = [[6, 1], [1, 12]]."""
    result = full_hessian(differentiate_tensors(parse("x = [1, 2]; L = sum(x**3) + x[0]*x[1]"), ["x"]))
    assert result.derivatives == {"x,x": "H_x"}
    run = run_text(derivatives_program(result), {})
    assert run.value("H_x").tolist() == [[6.0, 1.0], [1.0, 12.0]]
    assert derivatives_program(result).rstrip().splitlines()[-1].startswith("L = ")  # eval shows every block


def test_the_moons_mlps_backward_part_is_no_larger_than_jaxs() -> None:
    """JAX's make_jaxpr(grad(f)) of the moons MLP has 43 operations beyond the forward pass (issue
    33's count); diff's program writes no '0.0001 + 0', no 'g * [1]' and no 'g + 0 * W' tricks."""
    program = parse((SAMPLES / "moons_mlp.ad").read_text())
    text = derivatives_program(differentiate_tensors(program, ["W1", "b1", "W2", "b2", "W3", "b3", "x", "y"]))

    def operations(p: Any) -> int:
        return sum(1 for i in p.instructions if i.op not in ("input", "const", "="))

    assert operations(parse(text)) - operations(program) <= 43
    assert "* [1]" not in text and "+ 0 * transpose" not in text and "0.0001 + 0" not in text


@pytest.mark.parametrize("hessian", [False, True])
def test_a_refusal_in_the_second_sweep_is_located_at_the_output(monkeypatch, hessian) -> None:
    # The second sweep differentiates statements diff wrote, which have no place in the source:
    # a refusal there was an error without a line and column.
    import autodiff_cli.execute.tensor_symbolic as tensor_symbolic

    rule = tensor_symbolic.vjp_rule

    def refusing(op: str) -> Any:
        def written(b: Any, *args: Any) -> Any:
            if b.sweep.program.source.name == "<derivative program>":
                raise b.refuse("a test's adjoint")
            return rule(op)(b, *args)
        return written

    monkeypatch.setattr(tensor_symbolic, "vjp_rule", refusing)
    program = parse("x = [1, 2]\n\ny = sum(x**3)\n")
    with pytest.raises(ProgramError) as raised:
        if hessian:
            full_hessian(differentiate_tensors(program, ["x"]))
        else:
            differentiate_tensors(program, ["x"], order=2)
    error = raised.value
    assert (error.position.line, error.position.column) == (3, 1)  # y, where the output is written
    assert error.source is program.source
    assert any(note.startswith("in dy_v, a statement diff writes") for note in error.notes), error.notes
