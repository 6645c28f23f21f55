"""The writers of tensor derivative programs: parentheses only where the grammar needs them, in
the language, in NumPy and in LaTeX (matrix notation)."""

from __future__ import annotations

import pytest

from autodiff_cli.execute.tensor_symbolic import TensorDerivatives, Term, apply, literal, name, number
from autodiff_cli.render.formulas import derivatives_latex, derivatives_program, derivatives_python

X, Y, Z = name("X"), name("Y"), name("Z")


def one(term: Term) -> TensorDerivatives:
    return TensorDerivatives("L", ("X",), 1, [("X", None), ("Y", None), ("Z", None)], [("d", term)],
                             {"X": (2, 2), "Y": (2, 2), "Z": (2, 2), "d": (2, 2)}, {"X": "d"})


@pytest.mark.parametrize(("term", "program", "python", "latex"), [
    (apply("@", apply("+", X, Y), Z), "(X + Y) @ Z", "(X + Y) @ Z", r"\left(X + Y\right) Z"),
    (apply("-", X, apply("-", Y, Z)), "X - (Y - Z)", "X - (Y - Z)", r"X - \left(Y - Z\right)"),
    (apply("*", X, apply("neg", Y)), "X * (-Y)", "X * (-Y)", r"X \odot \left(-Y\right)"),
    (apply("neg", apply("**c", X, param=2.0)), "-X**2", "-X**2", "-X^{2}"),
    (apply("**c", apply("neg", X), param=-1.0), "(-X)**(-1)", "(-X)**(-1)", r"\left(-X\right)^{-1}"),
    (apply("index", apply("transpose", X), param=(0,)), "transpose(X)[0]", "np.transpose(X)[0]",
     r"\left(X^\top\right)_{0}"),
    (apply("@", apply("transpose", X), apply("sum", Y, param=1)), "transpose(X) @ sum(Y, 1)",
     "np.transpose(X) @ np.sum(Y, axis=1)", r"X^\top \left(\sum_{\text{axis } 1} Y\right)"),
    (apply("*", number(0.5), apply("relu", X)), "0.5 * relu(X)", "0.5 * _relu(X)",
     r"0.5 \cdot \operatorname{relu}\left(X\right)"),
    (apply("-", X, literal((2,), (0.0, 1.0))), "X - [0, 1]", "X - np.array([0.0, 1.0])",
     r"X - \begin{bmatrix}0 \\ 1\end{bmatrix}"),
])
def test_each_syntax_writes_the_fewest_parentheses(term: Term, program: str, python: str, latex: str) -> None:
    result = one(term)
    assert derivatives_program(result).splitlines()[-1] == f"d = {program}"
    assert f"    d = {python}\n" in derivatives_python(result)
    assert f"&= {latex}\n" in derivatives_latex(result)


def test_every_op_has_a_form_in_every_syntax() -> None:
    """A new op of the registry fails here until each writer has a form for it."""
    from autodiff_cli.engine.registry import ENTRIES

    for op in [*ENTRIES]:
        arity = ENTRIES[op].arity
        if not arity:  # a constant the compiler makes (arange): programs hold its literal
            continue
        arity = 2 if arity < 0 else arity  # an op of any number of operands (stack): two of them
        param = 2.0 if op == "**c" else (0,) if op == "index" else None
        if any(a.default is None and a.kind == "shape" for a in ENTRIES[op].arguments):
            param = (-1,)  # a required shape: every entry in one axis
        result = one(Term(op, (X, Y, Z)[:arity], param))
        for write in (derivatives_program, derivatives_python, derivatives_latex):
            lines = write(result).splitlines()
            assert any(line.lstrip().startswith(("d = ", "d &= ")) and "X" in line for line in lines), (op, write)


def test_a_subscripts_operand_is_parenthesised_where_it_binds_more_loosely() -> None:
    """(t**0.5)[i]: written t**0.5[i] the subscript would take 0.5 (found by the random programs)."""
    from autodiff_cli.engine.tensor_ops import GATHER

    text = derivatives_program(one(Term(GATHER, (Term("**c", (X,), 0.5), Y), None)))
    assert "d = (X**0.5)[Y]" in text
