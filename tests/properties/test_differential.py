"""Differential tests: random programs in our language against HIPS autograd, in float64.

One generator (``_generator.py``, shared with the symbolic differentiator's tests)
draws a random computation over every op (the keys of DERIVATIVE_RULES) and writes it
twice from the same drawn structure: as program TEXT in our language (nested
expressions, named intermediates, `b = a` copies, defaults and --set-style values),
and, here, as an autograd.numpy function.  For each
program we check that

* the value and every input's gradient (reverse mode, through the parser and the
  evaluator) agree with autograd;
* forward mode gives the same gradients as reverse mode;
* `check` (finite differences) passes.

Inputs are in-domain by construction.  The generator computes each node's value
as it goes (with math, independently of the engine) and, where an op needs it,
first moves its operand well inside the domain and away from the places where
an op is ill-conditioned, with an extra node written in the program:

* log, sqrt, a fractional or negative constant exponent, the base of x**y:
  u -> u*u + 0.5 when u < 0.5;
* the divisor of /: u -> u +- 1 when |u| < 0.5;  relu, abs: u -> u + 1 when |u| < 0.25
  (away from the kink by far more than any finite-difference step moves u);
* tanh and sigmoid (|u| <= 3), exp (|u| <= 4), sin and cos (|u| <= 10), the
  exponent of x**y (|y ln x| <= 4) and any value over 100: u -> u * 2**-k,
  which is exact in binary floating point.

Tolerances.  Where the two libraries use the same formula (+ - * /, exp, log,
sin, cos) results are bit-identical or within an ulp; elsewhere they use
different but equal formulas (tanh' = 1 - tanh**2 against 1/cosh**2, our
overflow-safe sigmoid against 1/(1 + exp(-x)), d(x/y)/dy = -(x/y)/y against
-x/y**2), each a few ulps apart inside the guarded ranges above.  Those
differences are then summed along every path to the output, so a gradient's
error is bounded by a few ulps times the sum over paths of |product of local
derivatives| -- the "absolute gradient" A, which equals |gradient| when no paths
cancel and is larger when they do.  We therefore require

    |ours - autograd| <= 1e-12 * max(A, |autograd|) + 1e-300      (gradients)
    |ours - autograd| <= 1e-12 * max(V, |autograd|) + 1e-300      (value)

where V is the same bound for the value (sum over nodes of A(node) * |node|).
1e-12 is ~4500 ulps: room for ~10 ops each a few ulps off, times the
conditioning of their derivative formulas (<= ~100 inside the guarded ranges),
yet far below any real error in a derivative rule, which is O(1).  Forward and
reverse mode sum the very same products in different orders, so they must agree
to 1e-13 * A.

Examples: 2000 mixed programs plus 100 for each op forced at the output (22 ops: 4200
in all); derandomized so CI runs the same programs every time.
"""

from __future__ import annotations

import warnings

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from _generator import OPS, SETTINGS, Case, Gen, absolute_gradients, cases, close
from hypothesis import given, settings

from autodiff_cli.analysis.check import check_gradients
from autodiff_cli.engine import DERIVATIVE_RULES
from autodiff_cli.execute import evaluate, forward_gradients
from autodiff_cli.language import parse

REL = 1e-12
FORWARD_REL = 1e-13


def test_ops_cover_every_derivative_rule() -> None:
    # A new op in the engine must be added to the generator, or this fails.
    assert set(OPS) == set(DERIVATIVE_RULES)


# --- autograd's side, from the generator's list of nodes ------------------------------------


def autograd_function(gen: Gen):  # type: ignore[no-untyped-def]
    ops = list(gen.ops)

    def f(xs):  # type: ignore[no-untyped-def]
        vals = []
        for op, args, const in ops:
            a = [vals[i] for i in args]
            if op == "input":
                vals.append(xs[const])
            elif op == "+c":
                vals.append(a[0] + const)
            elif op == "*c":
                vals.append(a[0] * const)
            elif op == "+":
                vals.append(a[0] + a[1])
            elif op == "-":
                vals.append(a[0] - a[1])
            elif op == "*":
                vals.append(a[0] * a[1])
            elif op == "/":
                vals.append(a[0] / a[1])
            elif op == "**":
                vals.append(a[0] ** a[1])
            elif op == "**c":
                vals.append(a[0] ** const)
            elif op == "neg":
                vals.append(-a[0])
            elif op == "=":
                vals.append(a[0])
            elif op == "relu":
                vals.append(anp.maximum(a[0], 0.0))
            elif op == "sigmoid":
                vals.append(1.0 / (1.0 + anp.exp(-a[0])))
            elif op == "softplus":
                vals.append(anp.logaddexp(0.0, a[0]))
            elif op == "step":
                vals.append(anp.where(a[0] > 0, 1.0, 0.0) + 0.0 * a[0])
            elif op in ("maximum", "minimum"):
                vals.append(getattr(anp, op)(a[0], a[1]))
            else:
                vals.append(getattr(anp, op)(a[0]))
        return vals[-1]

    return f


# --- the oracle and the bounds -------------------------------------------------------------


def autograd_value_and_grad(case: Case) -> tuple[float, list[float]]:
    f = autograd_function(case.gen)
    xs = np.array(case.inputs, dtype=np.float64)
    with warnings.catch_warnings():
        # "Output seems independent of input" when the output does not use the inputs.
        warnings.simplefilter("ignore", UserWarning)
        value = float(f(xs))
        grad = autograd.grad(f)(xs)
    return value, [float(g) for g in grad]


def check_case(case: Case) -> None:
    program = parse(case.text, "<generated>")
    evaluation = evaluate(program, case.values)
    assert evaluation.warnings == []
    value, grads = autograd_value_and_grad(case)
    absolute = absolute_gradients(evaluation.root)
    value_scale = sum(a * abs(node.data) for node, a in absolute.items())
    assert close(evaluation.root.data, value, value_scale, REL), (case.text, evaluation.root.data, value)

    forward = forward_gradients(evaluation)
    for i, want in enumerate(grads):
        name = f"x{i}"
        if name not in evaluation.nodes:
            assert want == 0.0
            continue
        node = evaluation.nodes[name]
        scale = absolute.get(node, 0.0)
        assert close(node.grad, want, scale, REL), (case.text, name, node.grad, want, scale)
        assert close(forward.grads[name], node.grad, scale, FORWARD_REL), (case.text, name)

    result = check_gradients(evaluation)
    assert result.ok, (case.text, [c.reason for c in result.failures])


@settings(max_examples=2000, **SETTINGS)
@given(cases())
def test_random_programs_agree_with_autograd_forward_mode_and_check(case: Case) -> None:
    check_case(case)


@pytest.mark.parametrize("op", OPS, ids=lambda op: f"root={op}")
def test_every_op_at_the_output(op: str) -> None:
    @settings(max_examples=100, **SETTINGS)
    @given(cases(root_op=op))
    def run(case: Case) -> None:
        check_case(case)

    run()
