"""The symbolic differentiator: hand-derived results, each op's rule, the engine's conventions
at kinks and domain edges, the simplifier, naming, errors and size."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from autodiff_cli.engine import OPS
from autodiff_cli.errors import EvaluationError, InputError, ProgramError
from autodiff_cli.execute import evaluate
from autodiff_cli.execute.expressions import COPY, Expressions, rule_program
from autodiff_cli.execute.symbolic import Derivative, derivative_count, differentiate, sweep_count
from autodiff_cli.language import parse
from autodiff_cli.render.formulas import derivatives_text, operation_count, program_text


def text(source: str, **options: object) -> str:
    return derivatives_text(differentiate(parse(source), **options))


def values(source: str, at: dict[str, float] | None = None, **options: object) -> dict[str, float]:
    """The derivatives evaluated the way a user would: the program text, parsed and run."""
    result = differentiate(parse(source), **options)
    evaluation = evaluate(parse(program_text(result.program)), at or {})
    return {d.label: evaluation.nodes[d.name].data for d in result.derivatives}


def engine_grads(source: str, at: dict[str, float] | None = None) -> dict[str, float]:
    return evaluate(parse(source), at or {}).grads()


# --- the posts' hand-worked examples ---------------------------------------------------------


def test_quadratic_of_the_minigrad_post() -> None:
    # f = 3x^2 + xy + 5y^2: df/dx = 6x + y, df/dy = x + 10y (by hand)
    assert text("f = 3*x**2 + x*y + 5*y**2") == "df/dx = 6*x + y\ndf/dy = x + 10*y\n"


def test_karpathys_graph() -> None:
    # L = (a*b + c)*f: dL/da = b*f, dL/db = a*f, dL/dc = f, dL/df = a*b + c, dL/de = dL/dd = f
    source = "a = 2.0\nb = -3.0\nc = 10.0\ne = a*b\nd = e + c\nf = -2.0\nL = d*f\n"
    assert text(source) == "dL/da = b*f\ndL/db = a*f\ndL/dc = f\ndL/df = a*b + c\n"
    assert text(source, wrt=["d", "e"]) == "dL/dd = f\ndL/de = f\n"
    # The post's numbers: dL/da = 6, dL/db = -4, dL/dc = -2, dL/df = 4, dL/de = dL/dd = -2.
    assert values(source, wrt=list("abcfde")) == {
        "dL/da": 6.0,
        "dL/db": -4.0,
        "dL/dc": -2.0,
        "dL/df": 4.0,
        "dL/dd": -2.0,
        "dL/de": -2.0,
    }


def test_neuron_keeps_the_shared_factor_as_one_named_statement() -> None:
    # o = tanh(n): do/dn = 1 - o**2 once, and do/dx1 = w1 * do/dn ... (by hand)
    source = open_sample("neuron.ad")
    assert text(source) == (
        "do_dn = 1 - tanh(x1*w1 + x2*w2 + b)**2\n\n"
        "do/dx1 = w1*do_dn\ndo/dx2 = w2*do_dn\ndo/dw1 = x1*do_dn\ndo/dw2 = x2*do_dn\ndo/db = do_dn\n"
    )
    # The sample's expected gradients: x1 -1.5, w1 1.0, x2 0.5, w2 0.0.
    found = values(source)
    assert found["do/dx1"] == pytest.approx(-1.5, rel=1e-12)
    assert found["do/dw1"] == pytest.approx(1.0, rel=1e-12)
    assert found["do/dx2"] == pytest.approx(0.5, rel=1e-12)
    assert found["do/dw2"] == 0.0


def open_sample(name: str) -> str:
    from pathlib import Path

    return (Path(__file__).resolve().parents[2] / "samples" / name).read_text()


# Every sample, so that a new one is included; the training samples read some inputs from
# data, given 0.75 here (inside every sample's domain).
# The samples in the scalar language (the tensor samples have tests of their own).
SAMPLE_NAMES = sorted(path.name for path in (Path(__file__).resolve().parents[2] / "samples").glob("*.ad")
                      if not parse(path.read_text("utf-8")).has_tensors)


def sample_point(source: str) -> dict[str, float]:
    return {v.name: 0.75 for v in parse(source).inputs if v.default is None}


def test_the_samples_are_found() -> None:
    assert len(SAMPLE_NAMES) >= 11 and {"moons.ad", "karpathy.ad", "decay.ad"} <= set(SAMPLE_NAMES)


@pytest.mark.parametrize("name", SAMPLE_NAMES, ids=SAMPLE_NAMES)
def test_every_sample_equals_reverse_mode(name: str) -> None:
    source = open_sample(name)
    at = sample_point(source)
    grads = engine_grads(source, at)
    result = differentiate(parse(source))
    evaluation = evaluate(parse(program_text(result.program)), at)
    for derivative in result.derivatives:
        want = grads[derivative.wrt[0]]
        assert evaluation.nodes[derivative.name].data == pytest.approx(want, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("name", SAMPLE_NAMES, ids=SAMPLE_NAMES)
def test_every_sample_second_order_equals_differences_of_reverse_mode(name: str) -> None:
    # The Hessian block over (at most) three inputs, first, middle and last, against the central
    # difference of reverse mode's gradient: H[a][b] ~ (g_a(x + h e_b) - g_a(x - h e_b)) / 2h.
    # With h = 1e-4*max(1, |x_b|), the difference's error is about h**2/6 * |d4f| (truncation,
    # ~2e-9 for fourth derivatives of order 1) plus eps*|g|/h (rounding, ~2e-12 for gradients
    # of order 1).  Measured, the worst entry is a tenth of the 1e-6 tolerance (neuron.ad,
    # tanh's higher derivatives at 0.88 with h = 1e-4*x), most are below 1e-3 of it; a wrong
    # term would miss by about an entry's size (0.03-6 for the nonzero entries here).
    source = open_sample(name)
    program = parse(source)
    at = sample_point(source)
    values_at = {v.name: (at[v.name] if v.default is None else v.default) for v in program.inputs}
    inputs = differentiate(program).wrt
    chosen = list(dict.fromkeys([inputs[0], inputs[len(inputs) // 2], inputs[-1]]))
    result = differentiate(program, chosen, order=2)
    evaluation = evaluate(parse(program_text(result.program)), at)
    for derivative in result.derivatives:
        a, b = derivative.wrt
        h = 1e-4 * max(1.0, abs(values_at[b]))
        above = engine_grads(source, {**at, b: values_at[b] + h})[a]
        below = engine_grads(source, {**at, b: values_at[b] - h})[a]
        want = (above - below) / (2 * h)
        found = evaluation.nodes[derivative.name].data
        assert found == pytest.approx(want, rel=1e-6, abs=1e-6), (derivative.label, found, want)


def test_softmax_cross_entropy_simplifies_to_probabilities() -> None:
    # dloss/dz_i = softmax_i - [i = 2], and softmax_1 = exp(z1)/total (by hand)
    found = text(open_sample("softmax_xent.ad"))
    assert "dloss/dz1 = e1/total\n" in found and "dloss/dz3 = e3/total\n" in found


# --- every op's rule ------------------------------------------------------------------------

# (program, points): each point inside the op's domain, the kinks included.
OP_CASES = {
    "+": ("y = a + b", [{"a": 1.5, "b": -0.7}]),
    "-": ("y = a - b", [{"a": 1.5, "b": -0.7}]),
    "*": ("y = a*b", [{"a": 1.5, "b": -0.7}]),
    "/": ("y = a/b", [{"a": 1.5, "b": -0.7}, {"a": -3.0, "b": 7.0}]),
    "neg": ("y = -a", [{"a": 1.5}]),
    "**": ("y = a**b", [{"a": 1.7, "b": 2.3}, {"a": 0.5, "b": -1.5}]),
    "**c": ("y = a**2.5 + a**-3 + a**0.5 + a**3", [{"a": 1.7}, {"a": 0.2}]),
    "tanh": ("y = tanh(a)", [{"a": 0.3}, {"a": -2.0}, {"a": 0.0}]),
    "exp": ("y = exp(a)", [{"a": 0.3}, {"a": -2.0}]),
    "log": ("y = log(a)", [{"a": 0.3}, {"a": 20.0}]),
    "sqrt": ("y = sqrt(a)", [{"a": 0.3}, {"a": 20.0}]),
    "relu": ("y = relu(a)", [{"a": 0.3}, {"a": -2.0}, {"a": 0.0}]),
    "sigmoid": ("y = sigmoid(a)", [{"a": 0.3}, {"a": -40.0}, {"a": 0.0}]),
    "softplus": ("y = softplus(a)", [{"a": 0.3}, {"a": -40.0}, {"a": 0.0}, {"a": 40.0}]),
    "sin": ("y = sin(a)", [{"a": 0.3}, {"a": -2.0}]),
    "cos": ("y = cos(a)", [{"a": 0.3}, {"a": -2.0}]),
    "abs": ("y = abs(a)", [{"a": 0.3}, {"a": -2.0}, {"a": 0.0}]),
    "sign": ("y = sign(a) + a", [{"a": 0.3}, {"a": -2.0}, {"a": 0.0}]),
    "step": ("y = step(a) + a", [{"a": 0.3}, {"a": -2.0}, {"a": 0.0}]),
    "=": ("b = a\ny = b*b", [{"a": 0.3}]),
    "maximum": ("y = maximum(a, b) * a", [{"a": 0.3, "b": -2.0}, {"a": -2.0, "b": 0.3}, {"a": 0.5, "b": 0.5}]),
    "minimum": ("y = minimum(a, b) * b", [{"a": 0.3, "b": -2.0}, {"a": -2.0, "b": 0.3}, {"a": 0.5, "b": 0.5}]),
}


def test_every_op_has_a_case() -> None:
    assert set(OP_CASES) == set(OPS)


@pytest.mark.parametrize("op", list(OP_CASES), ids=list(OP_CASES))
def test_rule_gives_the_kernels_derivative(op: str) -> None:
    source, points = OP_CASES[op]
    for point in points:
        grads = engine_grads(source, point)
        found = values(source, point)
        for label, value in found.items():
            name = label.split("/d")[1]
            assert value == pytest.approx(grads[name], rel=4 * sys.float_info.epsilon, abs=0.0), (
                point,
                label,
            )


@pytest.mark.parametrize("op", list(OPS), ids=list(OPS))
def test_rule_is_an_expression_of_the_operands(op: str) -> None:
    allowed = {"x", "y", "out"} if OPS[op].arity == 2 else {"x", "out"} | ({"c"} if op == "**c" else set())
    for operand in range(OPS[op].arity):
        rule = rule_program(op, operand)
        assert {v.name for v in rule.inputs} <= allowed, OPS[op].symbolic


def test_kinks_are_step_and_sign() -> None:
    assert text("y = relu(x)") == "dy/dx = step(x)\n"
    assert text("y = abs(x)") == "dy/dx = sign(x)\n"
    assert text("y = sign(x)*x + step(x)*x") == "dy/dx = sign(x) + step(x)\n"
    # at the kink, both are 0 as in the engine (PyTorch's convention)
    assert values("y = relu(x) + abs(x)", {"x": 0.0}) == {"dy/dx": 0.0}
    assert engine_grads("y = relu(x) + abs(x)", {"x": 0.0})["x"] == 0.0


# --- where the emitted program differs from the engine ---------------------------------------
# The engine follows PyTorch where a derivative is infinite or has no real value; the
# language cannot write inf or NaN, so the emitted program stops with a domain error there.


def emitted_error(source: str, at: dict[str, float], label: str) -> EvaluationError:
    result = differentiate(parse(source))
    program = parse(program_text(result.program))
    name = next(d.name for d in result.derivatives if d.label == label)
    with pytest.raises(EvaluationError) as raised:
        evaluate(program, at, output=name)
    return raised.value


@pytest.mark.parametrize("source", ["y = sqrt(x)", "y = x**0.5", "y = x**0.25"])
def test_infinite_slope_at_zero_is_a_domain_error(source: str) -> None:
    assert engine_grads(source, {"x": 0.0})["x"] == math.inf
    error = emitted_error(source, {"x": 0.0}, "dy/dx")
    assert "division by zero" in error.message or "negative power" in error.message


def test_computed_power_with_a_zero_base() -> None:
    source = "f = x**y"
    # engine: d/dx x**y at (0, 2) is 2*0**1 = 0, and d/dy is 0 by PyTorch's convention
    assert engine_grads(source, {"x": 0.0, "y": 2.0}) == {"x": 0.0, "y": 0.0, "f": 1.0}
    assert values(source, {"x": 0.0, "y": 3.0}, wrt=["x"]) == {"df/dx": 0.0}
    assert "log of 0" in emitted_error(source, {"x": 0.0, "y": 2.0}, "df/dy").message
    # at (0, 0): x**y = 1, the engine's slopes are 0 and 0; y*x**(y - 1) divides by zero
    assert engine_grads(source, {"x": 0.0, "y": 0.0}) == {"x": 0.0, "y": 0.0, "f": 1.0}
    assert "negative power" in emitted_error(source, {"x": 0.0, "y": 0.0}, "df/dx").message
    # at (0, 0.5): the engine's slope is inf, and the program's 0.5*0**(-0.5) a domain error too
    assert engine_grads(source, {"x": 0.0, "y": 0.5})["x"] == math.inf
    assert "negative power" in emitted_error(source, {"x": 0.0, "y": 0.5}, "df/dx").message
    # at (0, 1) both give 1
    assert (
        values(source, {"x": 0.0, "y": 1.0}, wrt=["x"])
        == {"df/dx": 1.0}
        == {"df/dx": engine_grads(source, {"x": 0.0, "y": 1.0})["x"]}
    )


def test_computed_power_with_a_negative_base() -> None:
    source = "f = x**y"
    grads = engine_grads(source, {"x": -2.0, "y": 3.0})
    assert grads["x"] == 12.0 and math.isnan(grads["y"])  # ln of a negative base: no real derivative
    assert values(source, {"x": -2.0, "y": 3.0}, wrt=["x"]) == {"df/dx": 12.0}
    assert "log of -2" in emitted_error(source, {"x": -2.0, "y": 3.0}, "df/dy").message


def test_constant_negative_base_powers_agree() -> None:
    assert (
        values("y = x**3", {"x": -2.0})
        == {"dy/dx": 12.0}
        == {"dy/dx": engine_grads("y = x**3", {"x": -2.0})["x"]}
    )


# --- higher orders --------------------------------------------------------------------------


def test_second_order_of_tanh_by_hand() -> None:
    # d/dx (1 - tanh^2) = -2 tanh (1 - tanh^2)
    assert text("y = tanh(x)", order=2) == "y = tanh(x)\n\nd^2y/dx^2 = -2*(1 - y**2)*y\n"


def test_hessian_has_each_symmetric_pair_once() -> None:
    # f = 3x^2 + xy + 5y^2: the Hessian is [[6, 1], [1, 10]]
    assert text("f = 3*x**2 + x*y + 5*y**2", order=2) == "d^2f/dx^2 = 6\nd^2f/dx dy = 1\nd^2f/dy^2 = 10\n"
    result = differentiate(parse("f = x*y*z"), order=2)
    assert [d.wrt for d in result.derivatives] == [
        ("x", "x"),
        ("x", "y"),
        ("x", "z"),
        ("y", "y"),
        ("y", "z"),
        ("z", "z"),
    ]
    assert [d.name for d in result.derivatives][:2] == ["d2f_dx_dx", "d2f_dx_dy"]


def test_third_order_labels_and_values() -> None:
    # f = x**2*y**3: d3f/dx dy^2 = 2*6*x*y = 12*x*y, d3f/dy^3 = 6*x**2
    found = values("f = x**2*y**3", {"x": 1.5, "y": -2.0}, order=3)
    assert found == {"d^3f/dx^3": 0.0, "d^3f/dx^2 dy": 24.0, "d^3f/dx dy^2": -36.0, "d^3f/dy^3": 13.5}


def test_mixed_partial_with_respect_to_a_computed_variable() -> None:
    # L = e*f with e = a*b: d2L/da de = 0 (dL/de = f), d2L/de df = 1, d2L/da df = b
    source = "e = a*b\nL = e*f"
    result = differentiate(parse(source), ["a", "e", "f"], order=2)
    evaluation = evaluate(parse(program_text(result.program)), {"a": 2.0, "b": 3.0, "f": 5.0})
    found = {d.wrt: evaluation.nodes[d.name].data for d in result.derivatives}
    assert found[("a", "e")] == 0.0 and found[("e", "f")] == 1.0 and found[("a", "f")] == 3.0
    assert found[("a", "a")] == 0.0 and found[("e", "e")] == 0.0


def test_progress_is_reported_after_each_sweep() -> None:
    calls: list[tuple[int, int]] = []
    differentiate(parse("f = x*y*z"), order=2, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(1, 4), (2, 4), (3, 4), (4, 4)]  # one sweep, then one per first derivative


def test_counts() -> None:
    assert derivative_count(2, 2) == 3 and derivative_count(16, 2) == 136 and derivative_count(3, 3) == 10
    assert sweep_count(2, 1) == 1 and sweep_count(2, 2) == 3 and sweep_count(2, 3) == 6


def test_labels() -> None:
    assert Derivative("df_dx", "f", ("x",)).label == "df/dx"
    assert Derivative("d", "L", ("w1", "w1")).label == "d^2L/dw1^2"
    assert Derivative("d", "L", ("a", "b", "b")).label == "d^3L/da db^2"


# --- the simplifier -------------------------------------------------------------------------


def show(graph: Expressions, node: int) -> str:
    """A fully parenthesized reading of a node, for these small tests only."""
    op, args, param = graph.ops[node], graph.args[node], graph.params[node]
    if op in ("input", "const"):
        return str(param)
    if op == "**c":
        return f"({show(graph, args[0])})**{param}"
    if len(args) == 2:
        return f"({show(graph, args[0])} {op} {show(graph, args[1])})"
    return f"{op}({show(graph, args[0])})"


def build(source: str) -> tuple[Expressions, int]:
    """The expression's node, read the way the differentiator reads a program."""
    program = parse(source)
    graph = Expressions()
    registers: list[int] = []
    for op, args, param, _ in program.instructions:
        if op == "input":
            registers.append(graph.input(param))
        elif op == "const":
            registers.append(graph.const(param))
        else:
            registers.append(graph.apply(op, [registers[a] for a in args], param))
    return graph, registers[program.variables[program.result].register]


@pytest.mark.parametrize(
    "source, expected",
    [
        ("x + 0", "x"),
        ("0 + x", "x"),
        ("x - 0", "x"),
        ("0 - x", "neg(x)"),
        ("x*1", "x"),
        ("1*x", "x"),
        ("x*0", "0.0"),
        ("0*log(x)", "0.0"),
        ("x/1", "x"),
        ("0/x", "0.0"),
        ("x**1", "x"),
        ("x**0", "1.0"),
        ("--x", "x"),
        ("-(-(x*y))", "(x * y)"),
        ("x - x", "0.0"),
        ("x/x", "1.0"),
        ("1**y", "1.0"),
        ("2*3 + 4", "10.0"),
        ("sign(0) + step(0)", "0.0"),
        ("sqrt(x)**2", "x"),
        ("(x**2)**3", "(x)**6.0"),
        ("3*(2*x)", "(6.0 * x)"),
        ("x*3", "(3.0 * x)"),
        ("x*(2*y)", "(2.0 * (x * y))"),
        ("3*(1/x)", "(3.0 / x)"),
        ("2*(3*x/y)", "((6.0 * x) / y)"),
        ("6*x/(16*y)", "((3.0 * x) / (8.0 * y))"),
        ("x - 1 - 1", "(x - 2.0)"),
        ("x + 1 - 3", "(x - 2.0)"),
        ("x + -2", "(x - 2.0)"),
        ("2 + x", "(x + 2.0)"),
        ("2*x + 3*x", "(5.0 * x)"),
        ("x + x", "(2.0 * x)"),
        ("x - 3*x", "(-2.0 * x)"),
        ("x + y + 2*x", "((3.0 * x) + y)"),  # a like term a few terms back
        ("x*z - 18*y - 24*y", "((x * z) - (42.0 * y))"),
        ("2*y + x - 2*y", "x"),
        ("y - 3*x + z + x", "((y - (2.0 * x)) + z)"),
        ("y + x + z - x", "(y + z)"),
        ("x*x", "(x)**2.0"),
        ("x*y*x", "((x)**2.0 * y)"),
        ("x**2*x", "(x)**3.0"),
        ("x/x**3", "(1.0 / (x)**2.0)"),
        ("(x/y**2)*(y/x)", "(1.0 / y)"),
        ("(x/y)*y", "x"),
        ("x*y/x", "y"),
        ("x/(y/z)", "((x * z) / y)"),
        ("y + -2*x", "(y - (2.0 * x))"),
        ("x*(-y)", "(neg(x) * y)"),
        ("-(x*y)", "(neg(x) * y)"),
        ("x/(-y)", "(neg(x) / y)"),
        ("-(x - y)", "(y - x)"),
        ("x - -y", "(x + y)"),
        ("log(0)", "log(0.0)"),
        ("sqrt(-1)", "sqrt(-1.0)"),  # kept: they fail where the program fails
        ("log(2)", "log(2.0)"),
        ("exp(0) + sqrt(4) + 1/4", "3.25"),
        ("1/3", "(1.0 / 3.0)"),
        ("sigmoid(0)", "0.5"),
        ("2**0.5", "(2.0)**0.5"),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_simplification(source: str, expected: str) -> None:
    graph, node = build(f"r = {source}")
    assert show(graph, node) == expected


# Points where a value that is positive in exact arithmetic is 0 in floats (underflow), or
# where tanh and sigmoid saturate to exactly 1: sign and range rules must not fire there.
# (program, point); the derivative program must give the engine's gradient at the point.
EXTREME_POINTS = {
    "step(exp) underflows": ("y = step(exp(x))*z", {"x": -1000.0, "z": 1.0}),
    "sign(exp) underflows": ("y = sign(exp(x))*z", {"x": -1000.0, "z": 1.0}),
    "step(sigmoid) underflows": ("y = step(sigmoid(x))*z", {"x": -1000.0, "z": 1.0}),
    "sign(sigmoid) underflows": ("y = sign(sigmoid(x))*z", {"x": -800.0, "z": 1.0}),
    "step(exp + exp) underflows": ("y = step(exp(x) + exp(w))*z", {"x": -1000.0, "w": -800.0, "z": 1.0}),
    # (d/dx is NaN in the engine there, sqrt's infinite slope times 0: only d/dz is compared)
    "step(sqrt(exp)) underflows": ("y = step(sqrt(exp(x)))*z", {"x": -1000.0, "z": 1.0}, ["z"]),
    "positive*positive underflows": (
        "y = step((x*x + 1e-300)*(w*w + 1e-300))*z",
        {"x": 0.0, "w": 0.0, "z": 1.0},
    ),
    "positive/positive underflows": (
        "y = step((x*x + 1e-300)/(w*w + 1e300))*z",
        {"x": 0.0, "w": 0.0, "z": 1.0},
    ),
    "half a positive underflows": ("y = sign(0.5*(x*x + 5e-324))*z", {"x": 0.0, "z": 1.0}),
    "positive**2 underflows": ("y = step((x*x + 1e-200)**2)*z", {"x": 0.0, "z": 1.0}),
    "positive**-2 underflows": ("y = step((x*x + 1e200)**-2)*z", {"x": 0.0, "z": 1.0}),
    "2**w underflows": ("y = step(2**w)*z", {"w": -2000.0, "z": 1.0}),
    "positive**w underflows": ("y = sign((x*x + 1e-200)**w)*z", {"x": 0.0, "w": 2.0, "z": 1.0}),
    "x*x underflows": ("y = step(x*x)*z + sign(x*x)*z", {"x": 1e-200, "z": 1.0}),
    "tanh saturates": ("y = step(1 - tanh(x)**2)*z", {"x": 30.0, "z": 1.0}),
    "sigmoid saturates": (
        "y = step(1 - sigmoid(x))*z + sign(sigmoid(x)*(1 - sigmoid(x)))*z",
        {"x": 40.0, "z": 1.0},
    ),
    # rules that still fire, and stay exact there
    "abs/relu of exp": ("y = abs(exp(x))*z + relu(sigmoid(x))*z", {"x": -1000.0, "z": 1.0}),
    "step(exp + 1)": (
        "y = step(exp(x) + 1)*z + sign(2*(x*x + 1))*z + step(1/(x*x + 1))*z",
        {"x": -1e150, "z": 1.0},
    ),
    "relu(exp)'": ("y = relu(exp(x)) + abs(sigmoid(x)*sigmoid(x))", {"x": -1000.0}),
}


@pytest.mark.parametrize("case", list(EXTREME_POINTS), ids=list(EXTREME_POINTS))
def test_sign_rules_are_exact_in_floats_at_extreme_points(case: str) -> None:
    source, point, *wrt = EXTREME_POINTS[case]
    grads = engine_grads(source, point)
    found = values(source, point, wrt=wrt[0] if wrt else None)
    for label, value in found.items():
        name = label.split("/d")[1]
        assert value == pytest.approx(grads[name], rel=1e-12, abs=0.0), (label, value, grads[name])


@pytest.mark.parametrize(
    "source, sign",
    [
        ("exp(x)", "nonnegative"),
        ("sigmoid(x)", "nonnegative"),
        ("exp(x)*exp(y)", "nonnegative"),
        ("(x*x + 1)**3", "nonnegative"),
        ("x*x + 1", "positive"),
        ("2*(x*x + 1)", "positive"),
        ("(x*x + 1)/0.5", "positive"),
        ("1/(x*x + 1)", "positive"),
        ("0.5*(x*x + 1)", "nonnegative"),
        ("sqrt(x*x + 1) + abs(y)", "positive"),
        ("tanh(x)**2", "nonnegative"),
        ("1 - tanh(x)**2", "unknown"),
        ("x*y", "unknown"),
    ],
    ids=lambda value: value,
)
def test_known_signs_hold_in_floats(source: str, sign: str) -> None:
    graph, node = build(f"r = {source}")
    assert ["unknown", "nonnegative", "positive"][graph.known_sign(node)] == sign


def test_hash_consing_makes_commuted_operations_one_node() -> None:
    graph, _ = build("r = 1")
    x, y = graph.input("x"), graph.input("y")
    assert graph.mul(x, y) == graph.mul(y, x) and graph.add(x, y) == graph.add(y, x)
    assert graph.sub(x, y) != graph.sub(y, x)


def test_a_copy_is_opaque() -> None:
    graph = Expressions()
    x = graph.input("x")
    e = graph.copy(graph.mul(x, graph.const(1.0)), "e")
    assert graph.ops[e] == COPY and graph.sub(e, x) != graph.const(0.0)


def test_long_products_are_not_walked() -> None:
    # A minus sign moves down at most a few factors: a product of 10,000 stays linear to build.
    graph = Expressions()
    node = graph.neg(graph.input("x0"))
    for i in range(1, 10_000):
        node = graph.mul(node, graph.call("sin", graph.input(f"x{i}")))
    assert len(graph) < 40_000
    assert graph.ops[graph.neg(node)] == "neg"


def test_long_sums_are_searched_only_a_few_terms_back() -> None:
    # A like term is looked for at most a few terms back: a sum of 10,000 stays linear to build,
    # and a like term further back than that is left where it is.
    graph = Expressions()
    x = graph.input("x")
    node = x
    for i in range(10_000):
        node = graph.add(node, graph.call("sin", graph.input(f"y{i}")))
    assert len(graph) < 40_000
    assert graph.ops[graph.add(node, x)] == "+"


# --- names ----------------------------------------------------------------------------------


def test_names_avoid_the_programs_own() -> None:
    source = "df_dx = 3\nt1 = x*x\nt2 = sin(t1)\nf = t2*t2*x + df_dx*x"
    result = differentiate(parse(source), ["x"])
    assert [d.name for d in result.derivatives] == ["df_dx_"]
    assert set(result.intermediates) <= {"t1", "t2", "t3", "df_dt2"}
    assert len(set(result.program.variables)) == len(result.program.variables)
    reparsed = parse(program_text(result.program))
    grads = engine_grads(source, {"x": 0.7})
    assert evaluate(reparsed, {"x": 0.7}).nodes["df_dx_"].data == pytest.approx(grads["x"], rel=1e-12)


def test_program_names_are_kept_for_shared_values() -> None:
    result = differentiate(parse(open_sample("mlp.ad")))
    assert {"h1", "h2", "h3"} <= set(result.intermediates)


def test_output_option_and_bare_expression() -> None:
    assert text("e = a*b\nL = e*f", output="e") == "de/da = b\nde/db = a\n"
    assert text("3*x**2") == "doutput/dx = 6*x\n"


def test_constant_derivatives_are_computed_not_inputs_with_a_default() -> None:
    # `df_dx = 2` would be read back as an input with a default; `2 + 0` is computed.
    result = differentiate(parse("f = 2*x + y"))
    assert program_text(result.program) == "df_dx = 2 + 0\ndf_dy = 1 + 0\n"
    assert derivatives_text(result) == "df/dx = 2\ndf/dy = 1\n"  # for people, the number alone
    reparsed = parse(program_text(result.program))
    assert evaluate(reparsed).values() == {"df_dx": 2.0, "df_dy": 1.0}
    assert [v.name for v in reparsed.inputs] == []


# (program, options): derivatives that are constants, some negative, zero or huge, beside
# derivatives that are not, and constant intermediates named by --wrt.
CONSTANT_DERIVATIVES = {
    "linear": ("y = 2*x", {}),
    "mixed": ("f = x**2 + 3*y", {}),
    "negative": ("f = -2.5*x + y*y", {}),
    "zero": ("a = 1\nf = 2*x", {"wrt": ["x", "a"]}),
    "huge": ("f = 1e300*x - 1e-300*z", {}),
    "hessian": ("f = 3*x**2 + x*y + 5*y**2", {"order": 2}),
    "defaults": ("a = 2\nb = -3\nf = a*b*x + 7*z", {}),
    "computed wrt": ("e = 2*3\nf = e*x + e", {"wrt": ["e", "x"]}),
}


@pytest.mark.parametrize("case", list(CONSTANT_DERIVATIVES), ids=list(CONSTANT_DERIVATIVES))
def test_read_back_every_derivative_is_computed_and_only_inputs_are_inputs(case: str) -> None:
    source, options = CONSTANT_DERIVATIVES[case]
    original = parse(source)
    result = differentiate(original, **options)  # type: ignore[arg-type]
    written = program_text(result.program)
    reparsed = parse(written)
    assert program_text(reparsed) == written
    computed = {v.name for v in reparsed.variables.values() if v.kind != "input"}
    assert {d.name for d in result.derivatives} <= computed
    assert {v.name for v in reparsed.inputs} <= {v.name for v in original.inputs}
    for variable in reparsed.inputs:  # the original inputs keep their defaults
        assert variable.default == original.variables[variable.name].default
    # Each derivative evaluates to reverse mode's gradient (first order) at some point.
    at = {v.name: 0.75 for v in original.inputs if v.default is None}
    evaluation = evaluate(reparsed, {name: at[name] for name in at if name in reparsed.variables})
    if result.order == 1:
        grads = evaluate(original, at).grads()
        for derivative in result.derivatives:
            assert evaluation.nodes[derivative.name].data == grads[derivative.wrt[0]], derivative.name


def test_defaults_carry_over_and_unused_inputs_are_left_out() -> None:
    result = differentiate(parse("a = 2\nb = 5\nc = 7\nf = a*a + b"))
    assert program_text(result.program) == "a = 2\ndf_da = 2*a\ndf_db = 1 + 0\n"


def test_same_input_gives_the_same_text() -> None:
    source = open_sample("mlp.ad")
    assert program_text(differentiate(parse(source), order=2).program) == program_text(
        differentiate(parse(source), order=2).program
    )


# --- errors ---------------------------------------------------------------------------------


def test_unknown_wrt_name_suggests_the_closest() -> None:
    with pytest.raises(InputError) as raised:
        differentiate(parse("f = x*y"), ["x", "yy"])
    assert raised.value.message == "--wrt names yy, which the program does not define"
    assert raised.value.hint.startswith("did you mean y?")


def test_output_that_depends_on_no_input() -> None:
    with pytest.raises(InputError) as raised:
        differentiate(parse("a = 1\nf = 2*3", "p.ad"))
    assert raised.value.message == "'f' depends on no input, so there is nothing to differentiate"
    assert (raised.value.position.line, raised.value.position.column) == (2, 1)
    assert "--wrt" in raised.value.hint


def test_wrt_a_variable_the_output_does_not_use_gives_zero() -> None:
    assert text("a = 1\nf = 2*x", wrt=["x", "a"]) == "df/dx = 2\ndf/da = 0\n"


def test_unknown_output() -> None:
    with pytest.raises(InputError, match="--output 'g' is not a variable"):
        differentiate(parse("f = x"), output="g")


def test_too_large_is_an_error_with_a_hint() -> None:
    with pytest.raises(ProgramError) as raised:
        differentiate(parse("y = tanh(x)", "t.ad"), order=6, max_nodes=50)
    assert raised.value.message.startswith("the derivatives would take more than 50 operations")
    assert "--order" in raised.value.hint and raised.value.position.line == 1


def test_sizes_are_projected_from_the_orders_done() -> None:
    from autodiff_cli.execute.symbolic import projected_sizes

    # samples/neuron_exp.ad's graph after orders 1-7: 32, 165, 1121, 6462, 34597, 159794, 695360
    assert projected_sizes([32], 5) == {}
    assert round(projected_sizes([32, 165], 4)[4]) == round(165 * (165 / 32) ** 2)
    falling = projected_sizes([32, 165, 1121, 6462, 34597], 7)  # the factor fell from 5.76 to 5.35
    assert 150_000 < falling[6] < 200_000 and 500_000 < falling[7] < 1_000_000
    assert projected_sizes([10, 5, 2], 6) == {4: 2.0, 5: 2.0, 6: 2.0}  # never below 1


def test_order_below_one_is_refused() -> None:
    with pytest.raises(ValueError):
        differentiate(parse("y = x"), order=0)


# --- size: linear in the program, no recursion -----------------------------------------------


def chain(n: int) -> str:
    lines = ["x = 0.5", "w = 0.3"] + [
        f"h{i} = tanh(w*{'x' if i == 0 else f'h{i - 1}'} + {i % 7})" for i in range(n)
    ]
    return "\n".join(lines)


def test_size_grows_linearly_with_the_program() -> None:
    small = operation_count(differentiate(parse(chain(500))).program)
    large = operation_count(differentiate(parse(chain(1000))).program)
    assert 1.9 < large / small < 2.1


def test_ten_thousand_statements_and_deep_nesting_without_recursion() -> None:
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # anything recursive would fail at once
    try:
        nested = "y = " + "sin(" * 5000 + "x" + ")" * 5000
        for source in (chain(10_000), nested, "f = " + " + ".join(f"x{i}*x{i + 1}" for i in range(10_000))):
            result = differentiate(parse(source))
            assert program_text(parse(program_text(result.program))) == program_text(result.program)
            derivatives_text(result)
    finally:
        sys.setrecursionlimit(limit)


# --- degenerate constants: kept as written, never an exception of Python's --------------------

DEGENERATE = ["x", "0", "1", "-1", "0.5", "(0*x)", "(x - x)", "(x/x)", "(-x)", "1e308", "1e-308", "(1e308*x)"]


@pytest.mark.parametrize("operator", ["+", "-", "*", "/", "**"])
def test_operations_on_degenerate_constants(operator: str) -> None:
    for left in DEGENERATE:
        for right in DEGENERATE:
            source = f"f = {left} {operator} {right} + x*y"
            try:
                result = differentiate(parse(source), order=2)
            except EvaluationError as refused:  # constants that overflow: refused as eval refuses them
                with pytest.raises(EvaluationError) as evaluated:
                    evaluate(parse(source), {"x": 1.0, "y": 1.0})
                assert str(refused) == str(evaluated.value), source
                continue
            written = program_text(result.program)
            assert program_text(parse(written)) == written, source


@pytest.mark.parametrize("source", ["f = (1e308 + 1e308)*x", "f = x*inf + x*(1e308*10)", "f = x*exp(1000)",
                                    "f = x + 2**2000"])
def test_constants_that_overflow_are_refused_as_eval_refuses_them(source: str) -> None:
    with pytest.raises(EvaluationError) as refused:
        differentiate(parse(source))
    with pytest.raises(EvaluationError) as evaluated:
        evaluate(parse(source), {"x": 1.0, "inf": 2.0})
    assert str(refused.value) == str(evaluated.value)


@pytest.mark.parametrize("source", ["f = 1e308*(10*x)", "f = 1e308*x + 1e308*x", "f = x/1e-308/1e-10",
                                    "f = (1e308*x)*(10*y)", "f = (x**1e200)**1e200*x", "f = 1e308*x - -1e308*x"])
def test_simplifying_never_writes_an_infinity(source: str) -> None:
    written = program_text(differentiate(parse(source), order=2).program)
    assert "inf" not in written, written
    assert program_text(parse(written)) == written


@pytest.mark.parametrize(
    "source, expected",
    [
        ("f = x/0", "df/dx = 1/0\n"),  # fails when evaluated, as the program does
        ("f = x*log(0)", "df/dx = log(0)\n"),
    ],
)
def test_constants_that_do_not_fold_are_kept(source: str, expected: str) -> None:
    assert text(source) == expected
    with pytest.raises(EvaluationError):
        evaluate(parse(program_text(differentiate(parse(source)).program)), {"x": 1.0})


# --- one entry for every shape (plan_diff) ------------------------------------------------------


def test_plan_diff_picks_the_differentiator_by_the_inputs_shapes() -> None:
    from autodiff_cli.execute.symbolic import DerivativeProgram, plan_diff
    from autodiff_cli.execute.tensor_symbolic import TensorDerivatives
    from autodiff_cli.render.formulas import write_derivatives

    numbers = plan_diff(parse("x = 3\ny = x**2"))
    assert not numbers.tensors and isinstance(numbers.run(), DerivativeProgram)
    assert write_derivatives(numbers.run(), "text") == "dy/dx = 2*x\n"  # d x^2 / dx, by hand
    vector = plan_diff(parse("x = [1, 2]\ny = sum(x**2)"))
    assert vector.tensors and isinstance(vector.run(), TensorDerivatives)
    shaped = plan_diff(parse("y = sum(x**2)"), shapes={"x": (3,)})
    assert shaped.tensors and shaped.run().shapes["dy_dx"] == (3,)


def test_plan_diff_refuses_what_cannot_be_written_as_asked() -> None:
    from autodiff_cli.execute.symbolic import MAX_DERIVATIVES, RequestTooLarge, plan_diff

    with pytest.raises(RequestTooLarge, match="--order 3 on a tensor program"):
        plan_diff(parse("x = [1, 2]\ny = sum(x**2)"), order=3)
    many = "\n".join(f"x{k} = 1" for k in range(200)) + "\ny = " + " + ".join(f"x{k}" for k in range(200))
    with pytest.raises(RequestTooLarge, match=f"at most {MAX_DERIVATIVES:,}"):
        plan_diff(parse(many), order=2)  # 200 * 201 / 2 = 20,100 second derivatives
    with pytest.raises(RequestTooLarge, match="full Hessian of 65 entries"):
        plan_diff(parse("y = sum(x**2)"), shapes={"x": (65,)}, hessian=True).run()
