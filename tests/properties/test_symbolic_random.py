"""The symbolic differentiator on random programs, against three independent references.

The programs come from the shared generator (``_generator.py``): every op of the
language, shared subexpressions, named intermediates, `b = a` copies, defaults and
--set values, inputs inside each op's domain by construction.  For each program the
derivative program is written as text (``--format program``), parsed back and
evaluated by the scalar engine, as a user piping it into ``autodiff eval`` would, and

* first order: every derivative equals reverse mode's gradient of the original program,
  to 1e-10 of the "absolute gradient" (the sum over paths of |product of local
  derivatives|, the size of what may cancel; see test_differential.py).  The two
  compute the same sums with different groupings (constants collected, like terms
  combined, x*x as x**2, common factors cancelled), so they agree to rounding, a few
  hundred ulps at worst in these ranges, and 1e-10 is far below any wrong rule;
* second order: every Hessian entry equals the five-point finite difference of reverse
  mode's gradients, to 1e-6 relative (the stencil's error is ~h**4 with h = 1e-3, plus
  the gradients' rounding over h);
* SymPy: on 1,000 programs the derivative equals ``sympy.diff`` of the same expression,
  evaluated in float64 by ``lambdify``, to 1e-9 of the absolute gradient;
* the program text round-trips: parsing it and writing it again gives the same text.
"""

from __future__ import annotations

import math
import warnings

import pytest
import sympy
from _generator import OPS, SETTINGS, Case, Gen, absolute_gradients, cases, close
from hypothesis import given, settings

from autodiff_cli.execute import evaluate
from autodiff_cli.execute.symbolic import differentiate
from autodiff_cli.language import parse
from autodiff_cli.render.formulas import program_text

FIRST_REL = 1e-10
SECOND_REL = 1e-6
SYMPY_REL = 1e-9


def derivative_values(  # type: ignore[no-untyped-def]
    case: Case, order: int = 1, values: dict[str, float] | None = None
):
    """The derivative program of ``case`` as text, parsed back and evaluated: {derivative: value}."""
    program = parse(case.text, "<generated>")
    result = differentiate(program, order=order)
    text = program_text(result.program)
    evaluation = evaluate(parse(text, "<derivatives>"), values if values is not None else case.values)
    return result, {d.wrt: evaluation.nodes[d.name].data for d in result.derivatives}


def reverse_mode(case: Case, values: dict[str, float]):  # type: ignore[no-untyped-def]
    evaluation = evaluate(parse(case.text, "<generated>"), values)
    return evaluation, {name: node.grad for name, node in evaluation.nodes.items()}


def inputs_used(gen: Gen) -> set[str]:
    """The inputs the generator's last node depends on, from its own list of nodes."""
    needed = {len(gen.ops) - 1}
    for node in range(len(gen.ops) - 1, -1, -1):
        if node in needed:
            needed.update(gen.ops[node][1])
    return {f"x{gen.ops[n][2]}" for n in needed if gen.ops[n][0] == "input"}


def all_values(case: Case) -> dict[str, float]:
    """Every input's value, as --set would give them (the defaults too)."""
    program = parse(case.text)
    return {v.name: case.inputs[int(v.name[1:])] for v in program.inputs}


# --- first order ---------------------------------------------------------------------------


def check_first_order(case: Case) -> None:
    evaluation, _ = reverse_mode(case, case.values)
    absolute = absolute_gradients(evaluation.root)
    result, found = derivative_values(case)
    # By default: every input the output depends on, in program order.
    used = inputs_used(case.gen)
    assert [d.wrt for d in result.derivatives] == [
        (v.name,) for v in evaluation.program.inputs if v.name in used
    ]
    for (name,), value in found.items():
        node = evaluation.nodes[name]
        assert close(value, node.grad, absolute.get(node, 0.0), FIRST_REL), (
            case.text,
            name,
            value,
            node.grad,
        )


@settings(max_examples=2000, **SETTINGS)
@given(cases())
def test_first_derivatives_equal_reverse_mode(case: Case) -> None:
    check_first_order(case)


@pytest.mark.parametrize("op", OPS, ids=lambda op: f"root={op}")
def test_every_op_at_the_output(op: str) -> None:
    @settings(max_examples=60, **SETTINGS)
    @given(cases(root_op=op))
    def run(case: Case) -> None:
        check_first_order(case)

    run()


def check_every_variable(case: Case) -> None:
    program = parse(case.text, "<generated>")
    evaluation = evaluate(program, case.values)
    absolute = absolute_gradients(evaluation.root)
    names = list(program.variables)  # intermediates, `b = a` copies and the output too
    result = differentiate(program, names)
    derivatives = evaluate(parse(program_text(result.program)), case.values)
    for derivative in result.derivatives:
        (name,) = derivative.wrt
        node = evaluation.nodes[name]
        value = derivatives.nodes[derivative.name].data
        assert close(value, node.grad, absolute.get(node, 0.0), FIRST_REL), (
            case.text,
            name,
            value,
            node.grad,
        )


@settings(max_examples=1000, **SETTINGS)
@given(cases())
def test_derivatives_with_respect_to_computed_variables_equal_evals_gradient_column(case: Case) -> None:
    # --wrt e for a computed e: the output's sensitivity to e alone, as reverse mode's e.grad
    check_every_variable(case)


# --- second order --------------------------------------------------------------------------

STENCIL = ((-2.0, 1.0), (-1.0, -8.0), (1.0, 8.0), (2.0, -1.0))  # (offset in h, weight / 12)


def finite_difference_hessian(case: Case, names: list[str]) -> tuple[dict[tuple[str, str], float], float]:
    """d/dy (reverse mode's df/dx) by the five-point stencil; and the largest |gradient| met."""
    base = all_values(case)
    hessian: dict[tuple[str, str], float] = {}
    largest = 0.0
    for j, y in enumerate(names):
        h = 1e-3 * max(1.0, abs(base[y]))
        sums = dict.fromkeys(names[: j + 1], 0.0)
        for offset, weight in STENCIL:
            _, grads = reverse_mode(case, {**base, y: base[y] + offset * h})
            for x in sums:
                sums[x] += weight * grads[x]
                largest = max(largest, abs(grads[x]))
        for x, total in sums.items():
            hessian[(x, y)] = total / (12.0 * h)
    return hessian, largest


def check_second_order(case: Case) -> None:
    result, found = derivative_values(case, order=2)
    names = result.wrt
    expected, largest = finite_difference_hessian(case, names)
    assert len(found) == len(names) * (len(names) + 1) // 2  # each symmetric pair once
    for (x, y), value in found.items():
        want = expected[(x, y)]
        scale = max(1.0, abs(want), largest)
        assert abs(value - want) <= SECOND_REL * scale, (case.text, x, y, value, want)


@settings(max_examples=400, **SETTINGS)
@given(cases())
def test_second_derivatives_equal_finite_differences_of_reverse_mode(case: Case) -> None:
    check_second_order(case)


# --- SymPy ---------------------------------------------------------------------------------


def sympy_expression(gen: Gen) -> tuple[list[sympy.Symbol], sympy.Expr]:
    """The generator's nodes rebuilt as one SymPy expression over real symbols x0, x1, ..."""
    symbols = [sympy.Symbol(f"x{i}", real=True) for i in range(len(gen.input_values))]
    values: list[sympy.Expr] = []
    for op, args, const in gen.ops:
        a = [values[i] for i in args]
        c = sympy.Rational(const) if isinstance(const, float) else None
        if op == "input":
            values.append(symbols[const])
        elif op == "+c":
            values.append(a[0] + c)
        elif op == "*c":
            values.append(a[0] * c)
        elif op == "**c":
            values.append(a[0] ** c)
        elif op == "+":
            values.append(a[0] + a[1])
        elif op == "-":
            values.append(a[0] - a[1])
        elif op == "*":
            values.append(a[0] * a[1])
        elif op == "/":
            values.append(a[0] / a[1])
        elif op == "**":
            values.append(a[0] ** a[1])
        elif op == "neg":
            values.append(-a[0])
        elif op == "=":
            values.append(a[0])
        elif op in ("maximum", "minimum"):
            values.append((sympy.Max if op == "maximum" else sympy.Min)(a[0], a[1]))
        else:
            functions = {
                "tanh": sympy.tanh,
                "exp": sympy.exp,
                "log": sympy.log,
                "sqrt": sympy.sqrt,
                "sin": sympy.sin,
                "cos": sympy.cos,
                "abs": sympy.Abs,
                # SymPy leaves d sign(u)/dx unevaluated for most u; away from 0 it is this:
                "sign": lambda u: 2 * sympy.Heaviside(u) - 1,
                "step": sympy.Heaviside,
                "relu": lambda u: sympy.Max(0, u),
                "sigmoid": lambda u: 1 / (1 + sympy.exp(-u)),
                "softplus": lambda u: sympy.log(1 + sympy.exp(u)),
            }
            values.append(functions[op](a[0]))
    return symbols, values[-1]


# Away from the kinks (the generator keeps them at a distance), the derivatives of the step
# functions are 0 and sign and Heaviside are plain functions.
# Depending on what its cache has seen, SymPy may also write a real value's re, im and arg.
KINKS = {
    "DiracDelta": lambda *u: 0.0,
    "Heaviside": lambda u, *h: 1.0 if u > 0 else 0.0,
    "sign": lambda u: math.copysign(1.0, u),
    "re": lambda u: u,
    "im": lambda u: 0.0,
    "arg": lambda u: 0.0 if u >= 0 else math.pi,
}


@settings(max_examples=1000, **SETTINGS)
@given(cases())
def test_derivatives_equal_sympy_diff(case: Case) -> None:
    evaluation, _ = reverse_mode(case, case.values)
    absolute = absolute_gradients(evaluation.root)
    _, found = derivative_values(case)
    symbols, expression = sympy_expression(case.gen)
    point = case.inputs
    for (name,), value in found.items():
        symbol = symbols[int(name[1:])]
        derivative = sympy.diff(expression, symbol)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            function = sympy.lambdify(symbols, derivative, modules=[KINKS, "math"])
        want = float(function(*point))
        scale = absolute.get(evaluation.nodes[name], 0.0)
        assert close(value, want, scale, SYMPY_REL), (case.text, name, value, want, str(derivative))


# --- round trip ----------------------------------------------------------------------------


@settings(max_examples=1000, **SETTINGS)
@given(cases())
def test_program_text_round_trips(case: Case) -> None:
    for order in (1, 2):
        text = program_text(differentiate(parse(case.text), order=order).program)
        assert program_text(parse(text, "<derivatives>")) == text


@settings(max_examples=500, **SETTINGS)
@given(cases())
def test_original_program_text_round_trips_and_keeps_its_values(case: Case) -> None:
    # The printer writes any program, not only derivatives, and writes it faithfully.
    program = parse(case.text)
    text = program_text(program)
    assert program_text(parse(text)) == text
    before = evaluate(program, case.values)
    after = evaluate(parse(text), case.values)
    assert after.root.data == before.root.data
    assert {n: v.grad for n, v in after.nodes.items() if n in before.nodes} == {
        n: v.grad for n, v in before.nodes.items() if n in after.nodes
    }
