"""Claims against the symbolic derivative: verdicts, counterexamples and slips.

Expected values are worked out by hand (in the comments) or by SymPy, never copied from
the tool's output.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import sympy as sp

from autodiff_cli.analysis.claims import AGREES, INCONCLUSIVE, PROVED, WRONG, check_claims, read_claims
from autodiff_cli.errors import InputError, ParseError, Source
from autodiff_cli.language.compiler import parse

REPO = Path(__file__).resolve().parents[2]
CLASSIC = "a = 2\nb = 3\nd = a*b\ne = a + b\nf = d*e\n"


def verdicts(program_text: str, claims: str, values: dict | None = None, latex: bool = False):
    program = parse(program_text, "<program>")
    items = read_claims(Source("<claim>", claims), set(program.variables), latex=latex)
    return check_claims(program, values or {}, items).results


def test_the_classic_missing_second_use() -> None:
    # df/da = d/da (a*b*(a + b)) = b*(a + b) + a*b = b*e + d.  At a = b = 1: claim b*e = 2,
    # derivative 2 + 1 = 3, difference -1; no simpler point has b*e != b*e + a*b (a*b != 0).
    (result,) = verdicts(CLASSIC, "df/da = b*e")
    assert result.verdict == WRONG
    example = result.counterexample
    assert example.point == {"a": 1.0, "b": 1.0}
    assert (example.claimed, example.correct, example.difference) == (2.0, 3.0, -1.0)
    assert result.slip.kind == "missing use"
    assert "first use of a only" in result.slip.message
    assert "d = a*b" in result.slip.message and "e = a + b" in result.slip.message
    assert result.slip.message.endswith("adds + d")


def test_the_correct_derivative_is_proved() -> None:
    (result,) = verdicts(CLASSIC, "df/da = b*e + d")
    assert result.verdict == PROVED
    # written differently, expanded: b*(a + b) + a*b = 2ab + b^2
    (result,) = verdicts(CLASSIC, "df/da = 2*a*b + b**2")
    assert result.verdict == PROVED


@pytest.mark.parametrize(("claim", "kind", "words"), [
    ("dL/dw = 2*(w*x + b + y)*x", "sign", "- y"),
    ("dL/dw = 4*(w*x + b - y)*x", "factor", "factor of 2"),
    ("dL/dw = -2*(w*x + b - y)*x", "sign", "whole derivative"),
    ("dL/dw = 2*(w*x - y)*x", "dropped term", "+ b"),
    ("dL/dw = (w*x + b - y)*x", "local derivative", "instead of 2*u"),
])
def test_slips_on_the_squared_error(claim: str, kind: str, words: str) -> None:
    text = (REPO / "samples/regression.ad").read_text()
    (result,) = verdicts(text, claim)
    assert result.verdict == WRONG
    assert result.slip.kind == kind
    assert words in result.slip.message


def test_tanh_derivative_written_with_the_input() -> None:
    text = (REPO / "samples/neuron.ad").read_text()
    (result,) = verdicts(text, "do/dn = 1 - n**2")
    assert result.verdict == WRONG
    assert result.slip.kind == "local derivative"
    assert "1 - n**2 instead of 1 - tanh(n)**2" in result.slip.message


def test_counterexample_values_match_sympy() -> None:
    text = (REPO / "samples/regression.ad").read_text()
    (result,) = verdicts(text, "dL/dw = 2*(w*x + b + y)*x")
    w, b, x, y = sp.symbols("w b x y")
    at = {sp.Symbol(k): v for k, v in result.counterexample.point.items()}
    correct = sp.diff((w*x + b - y)**2, w).subs(at)
    claimed = (2*(w*x + b + y)*x).subs(at)
    assert float(correct) == result.counterexample.correct
    assert float(claimed) == result.counterexample.claimed
    # the simplest point: both values small integers
    assert all(float(v).is_integer() and abs(v) <= 1 for v in result.counterexample.point.values())


def test_second_derivatives() -> None:
    text = (REPO / "samples/quadratic.ad").read_text()
    results = verdicts(text, "d2f/dx2 = 6\nd2f/dxdy = 1\nd2f/dydx = 1\nd^2f/dy^2 = 10\nd2f/dy2 = 5")
    assert [r.verdict for r in results] == [PROVED, PROVED, PROVED, PROVED, WRONG]
    assert results[-1].slip.kind == "factor" and "1/2" in results[-1].slip.message


def test_intermediate_claims_and_definitions() -> None:
    text = (REPO / "samples/karpathy.ad").read_text()
    results = verdicts(text, "dL/dd = f\ndL/de = f\nup = f\ndL/da = b*up")
    assert [r.verdict for r in results] == [PROVED, PROVED, PROVED]


def test_agrees_when_not_provable_symbolically() -> None:
    # tanh(x)**2 + 1/cosh(x)**2 = 1, so 1 - tanh(x)**2 = 1/cosh(x)**2 = 4/(exp(x) + exp(-x))**2:
    # equal, but not the same polynomial in tanh and exp.
    (result,) = verdicts("x = 0.5\ny = tanh(x)", "dy/dx = 4/(exp(x) + exp(-x))**2")
    assert result.verdict == AGREES
    assert result.points > 50


def test_domain_is_respected() -> None:
    # d/dx log(x) = 1/x; abs(x)/x**2 equals it only for x > 0, the program's domain.
    (result,) = verdicts("x = 2\ny = log(x)", "dy/dx = abs(x)/x**2")
    assert result.verdict == AGREES
    (result,) = verdicts("x = 2\ny = log(x)", "dy/dx = 1/abs(x) + 1")
    assert result.verdict == WRONG and result.counterexample.point["x"] > 0


def test_inconclusive_when_everything_overflows() -> None:
    (result,) = verdicts("x = 1\ny = exp(exp(exp(x + 800)))", "dy/dx = y")
    assert result.verdict == INCONCLUSIVE


def test_given_values_are_among_the_points() -> None:
    # The claim is right only at x = 7.25 (the given value, where (x - 7.25)**2 is 0), so the
    # given point agrees and the others refute it.
    (result,) = verdicts("x = 1\ny = x**2", "dy/dx = 2*x + (x - 7.25)**2", {"x": 7.25})
    assert result.verdict == WRONG


def test_latex_claims() -> None:
    text = (REPO / "samples/neuron.ad").read_text()
    latex = r"\frac{\partial o}{\partial x_{1}} &= w_{1} \left(1 - \tanh\left(n\right)^{2}\right)"
    (result,) = verdicts(text, latex, latex=True)
    assert result.verdict == PROVED


@pytest.mark.parametrize(("claim", "kind", "column"), [
    ("dL/dq = 2", InputError, 5),
    ("dQ/dw = 2", InputError, 2),
    ("dL/dw = 2*z", InputError, 11),
    ("dL/dw = 2*(w", ParseError, 13),
    ("dL/dw 2", ParseError, 1),
    ("d2L/dw = 2", ParseError, 5),
])
def test_errors_point_into_the_claim(claim: str, kind: type, column: int) -> None:
    program = parse((REPO / "samples/regression.ad").read_text())
    with pytest.raises(kind) as caught:
        read_claims(Source("<claim>", claim), set(program.variables))
    assert caught.value.position.column == column


def test_errors_point_into_the_file() -> None:
    program = parse((REPO / "samples/regression.ad").read_text())
    with pytest.raises(InputError) as caught:
        read_claims(Source("derivation.txt", "# mine\ndL/dw = 2*x\n  dL/db = 2*bb\n"), set(program.variables))
    assert (caught.value.position.line, caught.value.position.column) == (3, 13)
    assert "derivation.txt:3:13" in str(caught.value)


@pytest.mark.parametrize("name", ["karpathy", "neuron", "quadratic", "mse"])
def test_correct_derivations_are_proved(name: str) -> None:
    program_path = REPO / ("samples/derivations/mse.ad" if name == "mse" else f"samples/{name}.ad")
    results = verdicts(program_path.read_text(), (REPO / f"samples/derivations/{name}.txt").read_text())
    assert results and all(r.verdict == PROVED for r in results)


# Each wrong claim of the samples, and the slip it is written to show.
WRONG_SAMPLES = {
    "karpathy": ["sign", "dropped term", "no upstream"],
    "neuron": ["local derivative", "local derivative", "factor"],
    "quadratic": ["missing use", "local derivative", "factor"],
    "mse": ["factor", "sign", "missing use"],
}


@pytest.mark.parametrize("name", sorted(WRONG_SAMPLES))
def test_wrong_derivations_name_their_slips(name: str) -> None:
    program_path = REPO / ("samples/derivations/mse.ad" if name == "mse" else f"samples/{name}.ad")
    results = verdicts(program_path.read_text(), (REPO / f"samples/derivations/{name}_wrong.txt").read_text())
    assert [r.verdict for r in results] == [WRONG] * len(WRONG_SAMPLES[name])
    assert [r.slip.kind for r in results] == WRONG_SAMPLES[name]
    for r in results:
        ex = r.counterexample
        assert math.isclose(ex.claimed - ex.correct, ex.difference)


def test_mse_sample_matches_the_post() -> None:
    # dL/dw = (2/N) sum (p_i - y_i) x_i at the sample's values, by hand: residuals
    # 0.5 - 1 = -0.5, 1 - 3.5 = -2.5, 1.5 - 5 = -3.5; (2/3)(-0.5*1 - 2.5*2 - 3.5*3) = -32/3.
    w, b = sp.symbols("w b")
    xs, ys = [1, 2, 3], [1, 3.5, 5]
    loss = sum((w*x + b - y)**2 for x, y in zip(xs, ys)) / 3
    assert float(sp.diff(loss, w).subs({w: 0.5, b: 0})) == pytest.approx(-32 / 3)
    results = verdicts((REPO / "samples/derivations/mse.ad").read_text(), "dL/dw = -32/3 + 0*w")
    assert results[0].verdict == WRONG  # a number is not the derivative everywhere


VALID_LATEX = [
    r"\frac{\partial f}{\partial x} &= 6 x + y \\ \frac{\partial f}{\partial y} &= x + 10 y",
    r"\begin{aligned}\frac{\partial^{2} f}{\partial x \, \partial y} &= 1\end{aligned}",
    r"$\frac{\partial f}{\partial x} = \sqrt[3]{x^{2}} \cdot \left(\frac{1}{2}\right) + \sigma\left(x_{1}\right)$",
    r"t_{1} = \mathrm{tanh}\left(x\right) \\ \frac{\partial f}{\partial x} = \left|x\right| + \tanh{x} + \ln y^{2}",
    r"\dfrac{d f}{d x} = \tfrac{6}{1} x + \left\{ y \right\} - \mathrm{relu}(x) \alpha",
]


def _mangled(text: str, rng) -> str:
    pieces = list("\\{}[]()^_&=$ xy1+-/|") + [r"\frac", r"\sqrt", r"\left", r"\right", "\\\\", r"\partial"]
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(text) + 1)
        if rng.random() < 0.5:
            text = text[:at] + text[at + 1:]
        else:
            text = text[:at] + rng.choice(pieces) + text[at:]
    return text


def test_no_latex_claim_gives_anything_but_a_located_error() -> None:
    # Every truncation of valid claims (from either end) and seeded random edits: each is read,
    # or refused with a ParseError or InputError inside the line; never another exception.
    import random

    from autodiff_cli.errors import AutodiffError

    rng = random.Random(0)
    texts = []
    for valid in VALID_LATEX:
        texts += [valid[:k] for k in range(len(valid))] + [valid[k:] for k in range(1, len(valid))]
        texts += [_mangled(valid, rng) for _ in range(60)]
    variables = {"x", "y", "f", "x1", "alpha"}
    for text in texts:
        try:
            read_claims(Source("<claim>", text), variables, latex=True)
        except AutodiffError as error:
            assert error.position is not None and 1 <= error.position.column <= len(text) + 1, text


def test_a_claim_of_zero_is_said_to_be_zero() -> None:
    # f = 3x^2 + xy + 5y^2: df/dx = 6x + y, which is 1 at x = 0, y = 1, where the claim 0 is 0.
    (result,) = verdicts("x = 2\ny = 3\nf = 3*x**2 + x*y + 5*y**2", "df/dx = 0*x")
    assert result.verdict == WRONG
    assert result.slip.kind == "factor"  # a factor of 0, said as what it is
    assert result.slip.message == "your formula is 0 at every point tried, but df/dx is not 0 everywhere"


def test_a_tiny_factor_is_not_called_0_and_a_tiny_constant_is_no_factor() -> None:
    program = "x = 2\ny = 3\nf = 3*x**2 + x*y + 5*y**2"
    # (6x + y) * 1e-300 is 1e-300 times df/dx = 6x + y at every point.
    (result,) = verdicts(program, "df/dx = (6*x + y)*1e-300")
    assert result.slip.kind == "factor"
    assert result.slip.message == "off by a factor of 1e-300: your formula is 1e-300 times df/dx"
    # 1e-300 alone is no constant multiple of 6x + y: the ratio changes from point to point.
    (result,) = verdicts(program, "df/dx = 1e-300")
    assert result.slip.kind != "factor"
