"""Writing programs and derivative programs: program text that reads back the same,
parentheses exactly where the grammar needs them, LaTeX, Python that runs, JSON."""

from __future__ import annotations

import builtins
import inspect
import json
import keyword
import math
import random
import sys
from pathlib import Path

import pytest

from autodiff_cli.engine.ops import FUNCTIONS, OPS, DomainError, Op
from autodiff_cli.errors import ProgramError
from autodiff_cli.execute import evaluate
from autodiff_cli.execute.symbolic import differentiate
from autodiff_cli.language import parse
from autodiff_cli.render.formulas import (
    derivatives_json,
    derivatives_latex,
    derivatives_python,
    derivatives_text,
    OPERATORS,
    latex_name,
    operation_count,
    program_text,
)

# The samples in the scalar language (the tensor samples have tests of their own).
SAMPLES = [path for path in sorted((Path(__file__).resolve().parents[2] / "samples").glob("*.ad"))
           if not parse(path.read_text("utf-8")).has_tensors]


# --- program text ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source, expected",
    [
        ("y = a - (b - c)", "y = a - (b - c)"),
        ("y = (a - b) - c", "y = a - b - c"),
        ("y = a + (b + c)", "y = a + (b + c)"),  # kept: the grouping is the program's
        ("y = a/(b*c)", "y = a/(b*c)"),
        ("y = a*b/c", "y = a*b/c"),
        ("y = a*(b/c)", "y = a*(b/c)"),
        ("y = (a*b)**2", "y = (a*b)**2"),
        ("y = -a**2", "y = -a**2"),
        ("y = (-a)**2", "y = (-a)**2"),
        ("y = (-2)**a", "y = (-2)**a"),
        ("y = 2**3**a", "y = 2**3**a"),
        ("y = (2**3)**a", "y = (2**3)**a"),
        ("y = a**-1", "y = a**(-1)"),
        ("y = a**(-b)", "y = a**(-b)"),
        ("y = -(a + b)", "y = -(a + b)"),
        ("y = -(-a)", "y = -(-a)"),
        ("y = a*-b", "y = a*(-b)"),
        ("y = a - -b", "y = a - (-b)"),
        ("y = a + -2", "y = a + (-2)"),
        ("y = -a*b", "y = -a*b"),
        ("y = -(a*b)", "y = -(a*b)"),
        ("y = tanh(a + b)**2", "y = tanh(a + b)**2"),
        ("y = 1e-5*a + 1e300", "y = 1e-05*a + 1e+300"),
        ("y = 0.1 + 2.50", "y = 0.1 + 2.5"),
        ("y = (((a)))", "y = a"),
        ("y = a^2", "y = a**2"),
    ],
    ids=lambda value: value,
)
def test_parentheses_where_the_grammar_needs_them(source: str, expected: str) -> None:
    program = parse(source)
    text = program_text(program)
    assert text == expected + "\n"
    reparsed = parse(text)
    assert program_text(reparsed) == text
    at = {"a": 2.0, "b": -0.5, "c": 3.0}
    assert evaluate(reparsed, at).root.data == evaluate(program, at).root.data


def test_statements_defaults_copies_and_a_bare_last_expression() -> None:
    program = parse("# a comment\na = 2.0\nb = a\nc = b*x; 17*c")
    assert program_text(program) == "a = 2\nb = a\nc = b*x\noutput = 17*c\n"


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_samples_round_trip_with_the_same_values(path: Path) -> None:
    program = parse(path.read_text())
    text = program_text(program)
    assert program_text(parse(text)) == text
    at = data_point(program)  # the training samples read some inputs from data
    assert evaluate(parse(text), at).grads() == evaluate(program, at).grads()


def data_point(program) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """A value for every input that has no default (0.75: inside every sample's domain)."""
    return {v.name: 0.75 for v in program.inputs if v.default is None}


def test_huge_expressions_are_written_without_recursion() -> None:
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:
        deep = "y = " + "(" * 100_000 + "x" + " + 1)" * 100_000
        wide = "y = " + " + ".join(f"x{i}" for i in range(100_000))
        powers = "y = " + "2**" * 10_000 + "x"
        for source in (deep, wide, powers):
            text = program_text(parse(source))
            assert program_text(parse(text)) == text
    finally:
        sys.setrecursionlimit(limit)


def test_operation_count() -> None:
    assert operation_count(parse("a = 2\nb = a\ny = 3*x**2 + tanh(b)")) == 4


# --- derivative formats ---------------------------------------------------------------------


def quadratic():  # type: ignore[no-untyped-def]
    return differentiate(parse("x = 2\ny = 3\nf = 3*x**2 + x*y + 5*y**2"))


def test_text_lists_intermediates_first() -> None:
    neuron = next(path for path in SAMPLES if path.name == "neuron.ad")
    text = derivatives_text(differentiate(parse(neuron.read_text())))
    head, _, rest = text.partition("\n\n")
    assert head == "do_dn = 1 - tanh(x1*w1 + x2*w2 + b)**2" and rest.startswith("do/dx1 = w1*do_dn\n")


def test_latex() -> None:
    assert derivatives_latex(quadratic()) == (
        "\\begin{aligned}\n"
        "\\frac{\\partial f}{\\partial x} &= 6 x + y \\\\\n"
        "\\frac{\\partial f}{\\partial y} &= x + 10 y\n"
        "\\end{aligned}\n"
    )
    hessian = derivatives_latex(differentiate(parse("f = x1**3*x2/y"), order=2))
    assert "\\frac{\\partial^{2} f}{\\partial x_{1} \\, \\partial x_{2}} &= \\frac{3 x_{1}^{2}}{y}" in hessian
    assert "\\frac{\\partial^{2} f}{\\partial x_{1}^{2}}" in hessian


@pytest.mark.parametrize(
    "name, written",
    [
        ("x", "x"),
        ("x1", "x_{1}"),
        ("w11", "w_{11}"),
        ("x_2", "x_{2}"),
        ("alpha", "\\alpha"),
        ("beta2", "\\beta_{2}"),
        ("loss", "\\mathrm{loss}"),
        ("dL_dx", "\\mathrm{dL\\_dx}"),
    ],
)
def test_latex_names(name: str, written: str) -> None:
    assert latex_name(name) == written


def test_latex_multiplies_numbers_with_a_dot_and_groups_nothing_it_need_not() -> None:
    # df/dx of x*y*2**z is y*2**z: the factor 2^z after y needs its dot, or it reads y2^z
    assert derivatives_latex(differentiate(parse("f = x*y*2**z"), ["x"])) == (
        "\\begin{aligned}\n\\frac{\\partial f}{\\partial x} &= y \\cdot 2^{z}\n\\end{aligned}\n"
    )
    # products are written left to right in derivatives, and a + (b + c) needs no parentheses on paper
    assert derivatives_text(differentiate(parse("f = a*(b*(c*x))"), ["a"])) == "df/da = b*c*x\n"
    assert "&= b + \\left(c + x\\right)" not in derivatives_latex(
        differentiate(parse("f = a*(b + (c + x))"), ["a"])
    )
    assert "&= b + c + x\n" in derivatives_latex(differentiate(parse("f = a*(b + (c + x))"), ["a"]))


def run_python(source: str, **arguments: float) -> dict[str, float]:
    namespace: dict[str, object] = {}
    exec(compile(source, "<derivatives>", "exec"), namespace)
    return namespace["derivatives"](**arguments)  # type: ignore[operator]


def test_python_is_a_plain_function_with_the_defaults() -> None:
    module = derivatives_python(quadratic())
    assert module == (
        "import math\n\n\n"
        "def derivatives(*, x=2.0, y=3.0):\n"
        '    """The derivatives of f with respect to x, y, order 1 (written by autodiff diff)."""\n'
        "    df_dx = 6*x + y\n"
        "    df_dy = x + 10*y\n"
        '    return {"df_dx": df_dx, "df_dy": df_dy}\n'
    )
    assert run_python(module) == {"df_dx": 15.0, "df_dy": 32.0}  # the sample's comment
    assert run_python(module, x=1.0, y=0.0) == {"df_dx": 6.0, "df_dy": 1.0}


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_python_equals_reverse_mode_on_the_samples(path: Path) -> None:
    source = path.read_text()
    at = data_point(parse(source))
    found = run_python(derivatives_python(differentiate(parse(source))), **at)
    grads = evaluate(parse(source), at).grads()
    for name, value in found.items():
        assert value == pytest.approx(grads[name.split("_d", 1)[1]], rel=1e-12, abs=1e-15)


def test_python_helpers_reproduce_the_engines_kinks() -> None:
    source = "y = sigmoid(x) + relu(x) + abs(x) + sign(x)*x + step(x)*x"
    module = derivatives_python(differentiate(parse(source)))
    assert "def _step(v):" in module and "def _sign(v):" in module and "def _sigmoid(v):" in module
    for x in (-3.0, -0.0, 0.0, 0.5, -800.0, 800.0):
        want = evaluate(parse(source), {"x": x}).grads()["x"]
        assert run_python(module, x=x)["dy_dx"] == pytest.approx(want, rel=1e-15, abs=0.0), x
    assert "_step" not in derivatives_python(differentiate(parse("y = x*x")))


def test_python_raises_where_the_language_has_a_domain_error() -> None:
    module = derivatives_python(differentiate(parse("f = x**y + sqrt(y)"), ["x", "y"]))
    assert "math.pow(" in module
    with pytest.raises(ValueError):
        run_python(module, x=-2.0, y=0.5)  # ** would return a complex number
    with pytest.raises(ZeroDivisionError):
        run_python(module, x=2.0, y=0.0)


def test_python_renames_keywords_and_what_the_body_calls() -> None:
    module = derivatives_python(differentiate(parse("lambda = 2\nf = lambda*math + abs(_sign)")))
    assert "def derivatives(*, lambda_=2.0, math_, _sign_):" in module
    assert run_python(module, math_=3.0, _sign_=-1.0) == {"df_dlambda": 3.0, "df_dmath": 2.0, "df_d_sign": -1.0}


# Names that collide in Python: keywords, what the module defines or calls, and the names
# those become with one or two `_` appended, so that a renamed name meets a program's own
# (`abs` itself is a function of the language, so it cannot be a variable).
_CLASHING = sorted(
    {
        stem + tail
        for stem in [*keyword.kwlist, "math", "max", "_sigmoid", "_step", "_sign", "derivatives",
                     "abs_", "__debug__", "t1", "dy_dx"]
        for tail in ("", "_", "__")
    }
)


@pytest.mark.parametrize(
    "names",
    [
        ["math", "math_", "x"],
        ["lambda", "lambda_", "lambda__"],
        ["math_", "math", "max", "max_"],
        ["_step", "_step_", "abs_", "derivatives", "__debug__", "None"],
        *[random.Random(seed).sample(_CLASHING, 6) for seed in range(12)],
    ],
    ids=lambda names: ",".join(names),
)
def test_python_names_never_collide_and_the_function_equals_eval(names: list[str]) -> None:
    # Half the names are inputs with a default, the others inputs without one and
    # intermediates; every helper and function is used so that their names are needed.
    a, b, c, d, e, f = [*names, "p", "q", "r", "s", "u", "v"][:6]  # short lists padded with plain names
    source = (
        f"{a} = 0.7\n{b} = -0.4\n"
        f"{d} = {a}*{c} + {b}\n"
        f"{e} = tanh({d}*{f}) + sigmoid({c})*{a} + step({d})*{f} + sign({b})*abs({c}) + relu({f})\n"
        f"y = {e}*{d} + exp({b}*{c})/(1 + {f}**2) + sqrt({a}*{a} + 1)\n"
    )
    program = parse(source)
    at = {v.name: 0.3 + 0.1 * i for i, v in enumerate(program.inputs) if v.default is None}
    want = evaluate(program, at).grads()
    result = differentiate(program)
    module = derivatives_python(result)
    namespace: dict[str, object] = {}
    exec(compile(module, "<derivatives>", "exec"), namespace)  # a SyntaxError on a clash
    function = namespace["derivatives"]
    # The parameters are the derivative program's inputs, in its order, whatever their new names.
    parameters = list(inspect.signature(function).parameters)  # type: ignore[arg-type]
    inputs = [v.name for v in result.program.inputs]
    assert len(parameters) == len(set(parameters)) == len(inputs)
    arguments = {new: at[old] for new, old in zip(parameters, inputs) if old in at}
    found = function(**arguments)  # type: ignore[operator]
    assert list(found) == [derivative.name for derivative in result.derivatives]
    for derivative in result.derivatives:
        assert found[derivative.name] == pytest.approx(want[derivative.wrt[0]], rel=1e-12, abs=1e-15)


# --- every op of the table can be written in every format -----------------------------------


@pytest.mark.parametrize("op", list(OPS), ids=list(OPS))
def test_every_op_has_a_python_and_a_latex_form(op: str) -> None:
    # An operator is laid out by precedence in every syntax; anything else is a function
    # whose row must say how Python and LaTeX write it.
    row = OPS[op]
    if op in OPERATORS:
        assert not row.is_function and row.python is None and row.latex is None
    else:
        assert row.is_function or row.written == f"{op}({{x}}, {{y}})"  # a call of one or two operands
        assert row.python is not None and "{x}" in row.python, "give the row a python template"
        assert row.latex is not None and "{x}" in row.latex, "give the row a latex template"
        helpers = "".join(r.python_helper or "" for r in OPS.values())
        called = row.python.split("(")[0]
        assert called.startswith("math.") or hasattr(builtins, called) or f"def {called}(" in helpers


FUNCTION_POINTS = (-800.0, -40.0, -3.0, -1e-300, -0.0, 0.0, 5e-324, 0.5, 3.0, 40.0, 709.0, 800.0,
                   math.inf, -math.inf, math.nan)


@pytest.mark.parametrize("op", list(FUNCTIONS), ids=list(FUNCTIONS))
def test_python_form_computes_what_the_kernel_computes(op: str) -> None:
    # The generated module's call (helpers included) against the float kernel, bit for bit,
    # at kinks and extremes; where the kernel has a domain error, Python raises one too.
    namespace: dict[str, object] = {"math": math}
    for row in OPS.values():
        if row.python_helper:
            exec(row.python_helper, namespace)
    for x in FUNCTION_POINTS:
        try:
            want = OPS[op].scalar(x)[0]
        except DomainError:
            with pytest.raises((ValueError, OverflowError, ZeroDivisionError)):
                eval(OPS[op].python.replace("{x}", f"float('{x!r}')"), namespace)
            continue
        found = eval(OPS[op].python.replace("{x}", f"float('{x!r}')"), namespace)
        if math.isnan(want):
            assert math.isnan(found), (x, found, want)
        else:
            assert found == want and math.copysign(1.0, found) == math.copysign(1.0, want), (x, found, want)


def _cube(x: float) -> tuple[float, float]:
    return x * x * x, 3.0 * x * x


def test_a_new_function_in_the_table_only_is_an_error_not_broken_output(
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    # A row with a kernel and a symbolic rule, but no Python or LaTeX form: diff's program
    # text still works, and python and latex say what is missing instead of writing a call
    # to an undefined function (a NameError when run) or plain text.
    row = Op("cube", 1, "cube({x})", _cube, ("3*x**2",), symbolic=("3*x**2",))
    monkeypatch.setitem(OPS, "cube", row)
    monkeypatch.setitem(FUNCTIONS, "cube", row)
    result = differentiate(parse("y = cube(x)*z"))
    assert derivatives_text(result) == "dy/dx = 3*x**2*z\ndy/dz = cube(x)\n"
    with pytest.raises(ProgramError, match="the function 'cube' has no Python form in the op table"):
        derivatives_python(result)
    with pytest.raises(ProgramError, match="the function 'cube' has no LaTeX form in the op table"):
        derivatives_latex(result)
    # Given its forms in the row, the formats write it, and the Python runs (3**3 = 27).
    complete = row._replace(python="({x})**3", latex=r"\operatorname{cube}\left({x}\right)")
    monkeypatch.setitem(OPS, "cube", complete)
    monkeypatch.setitem(FUNCTIONS, "cube", complete)
    assert run_python(derivatives_python(result), x=3.0, z=2.0) == {"dy_dx": 54.0, "dy_dz": 27.0}
    assert r"\operatorname{cube}\left(x\right)" in derivatives_latex(result)


def test_json() -> None:
    document = json.loads(derivatives_json(quadratic()))
    assert document == {
        "of": "f",
        "wrt": ["x", "y"],
        "order": 1,
        "inputs": [{"name": "x", "default": 2.0}, {"name": "y", "default": 3.0}],
        "intermediates": [],
        "derivatives": [
            {"name": "df_dx", "label": "df/dx", "wrt": ["x"], "expression": "6*x + y"},
            {"name": "df_dy", "label": "df/dy", "wrt": ["y"], "expression": "x + 10*y"},
        ],
        "program": "x = 2\ny = 3\ndf_dx = 6*x + y\ndf_dy = x + 10*y\n",
    }
    assert math.isfinite(document["inputs"][0]["default"])


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_a_two_operand_calls_python_form_computes_what_the_kernel_computes(op: str) -> None:
    namespace: dict[str, object] = {"math": math}
    exec(OPS[op].python_helper, namespace)
    for x in FUNCTION_POINTS:
        for y in (-3.0, -0.0, 0.0, 0.5, math.inf, math.nan, x):
            want = OPS[op].scalar(x, y)[0]
            found = eval(OPS[op].python.format(x=f"float('{x!r}')", y=f"float('{y!r}')"), namespace)
            if math.isnan(want):
                assert math.isnan(found), (x, y, found, want)
            else:
                assert found == want and math.copysign(1.0, found) == math.copysign(1.0, want), (x, y, found, want)


def test_maximum_and_minimum_write_and_read_back_in_every_format() -> None:
    source = "y = maximum(a, b) * minimum(a*b, 4) + maximum(a, 2)"
    result = differentiate(parse(source))
    for at in ({"a": 2.0, "b": 3.0}, {"a": 2.0, "b": 2.0}, {"a": -1.0, "b": 5.0}):  # ties included
        grads = evaluate(parse(source), at).grads()
        found = run_python(derivatives_python(result), **at)
        for name, value in found.items():
            assert value == pytest.approx(grads[name.split("_d", 1)[1]], rel=1e-15), (at, name)
    assert r"\max\left(a, b\right)" in derivatives_latex(result)
