"""The tensor syntax (issue 22): what each new form compiles to, and every error it can give.

* every new form (list literals, ``@``, ``x[i, j]``, slices, reductions with an axis,
  ``transpose``, the softmax family, ``mse``, ``cross_entropy``, initializers) parses to the
  instructions and params written out here by hand;
* list literals over several lines, with comments between their rows; a statement whose
  right side is a list literal or an initializer declares an INPUT with that default;
* the errors: ragged literals, names inside literals, empty literals, indices that are not
  numbers, out-of-range indices, too many indices, bad axes, bad initializers, and the shape
  errors of ``@``, broadcasting, ``mse``, ``transpose`` -- each with its exact text and its
  line:column;
* the same statement shapes repeated 50 times, so that the parser's templates (generated
  code for windows of tokens seen before) run next to the tensor syntax, give the same
  instructions for every repetition;
* scalar programs parse exactly as the reference parser (Lark's own) parses them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _reference_parser import reference_parse

from autodiff_cli.errors import AutodiffError, ParseError, Position, ProgramError, ShapeError
from autodiff_cli.language import compiler, parse
from autodiff_cli.language.program import ArrayLiteral, Initializer
from autodiff_cli.language.shapes import infer

# The samples written in the scalar language (the reference parser knows no other).
SAMPLES = [path for path in sorted((Path(__file__).resolve().parents[2] / "samples").glob("*.ad"))
           if not parse(path.read_text("utf-8")).has_tensors]


def code(text: str) -> list[tuple]:
    """The instructions as (op, args, param)."""
    return [(i.op, i.args, i.param) for i in parse(text).instructions]


def error_of(text: str, shapes: dict | None = None) -> AutodiffError:
    """The error that parsing ``text`` and inferring its shapes gives."""
    with pytest.raises(AutodiffError) as caught:
        infer(parse(text, "m.ad"), shapes or {})
    return caught.value


def where(error: AutodiffError) -> tuple[int, int]:
    assert isinstance(error.position, Position)
    return error.position.line, error.position.column


# --- every new form ---------------------------------------------------------------------------


def test_a_vector_literal_declares_an_input_with_its_default() -> None:
    program = parse("x = [1, -2.5, 3e-2, .5]")
    assert code("x = [1, -2.5, 3e-2, .5]") == [("input", (), "x")]
    x = program.variables["x"]
    assert x.kind == "input"
    assert x.default == ArrayLiteral((4,), (1.0, -2.5, 0.03, 0.5))
    assert program.has_tensors


def test_a_matrix_literal_declares_an_input_with_its_default() -> None:
    program = parse("X = [[1, 2], [3, 4], [5, 6]]")
    assert program.variables["X"].kind == "input"
    assert program.variables["X"].default == ArrayLiteral((3, 2), (1.0, 2.0, 3.0, 4.0, 5.0, 6.0))
    assert program.variables["X"].default.nested() == [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    one_row = parse("X = [[1, 2]]").variables["X"]
    assert (one_row.kind, one_row.default) == ("input", ArrayLiteral((1, 2), (1.0, 2.0)))
    column = parse("X = [[1], [2]]").variables["X"]
    assert column.default == ArrayLiteral((2, 1), (1.0, 2.0))
    cube = parse("T = [[[1, 2]], [[3, 4]]]").variables["T"]
    assert cube.default == ArrayLiteral((2, 1, 2), (1.0, 2.0, 3.0, 4.0))


def test_an_initializer_declares_an_input_with_a_random_default() -> None:
    program = parse("W = normal([2, 3], 0.1)\nb = zeros([3])\nU = uniform([3], -1, 1)\nV = normal([4])\n"
                    "L = sum(W @ U) + sum(b) + sum(V)")
    assert [v.kind for v in program.variables.values()] == ["input"] * 4 + ["intermediate"]
    assert program.variables["W"].default == Initializer("normal", (2, 3), (0.1,))
    assert program.variables["b"].default == Initializer("zeros", (3,), ())
    assert program.variables["U"].default == Initializer("uniform", (3,), (-1.0, 1.0))
    assert program.variables["V"].default == Initializer("normal", (4,), (1.0,))  # std 1 by default
    assert program.variables["W"].default.written() == "normal([2, 3], 0.1)"


def test_a_literal_inside_an_expression_is_a_constant() -> None:
    assert code("y = x + [1, 2]") == [
        ("input", (), "x"), ("const", (), ArrayLiteral((2,), (1.0, 2.0))), ("+", (0, 1), None)]
    assert code("z = sum([1, 2])") == [("const", (), ArrayLiteral((2,), (1.0, 2.0))), ("sum", (0,), None)]
    assert code("z = [[1, 2], [3, 4]][1][0]") == [
        ("const", (), ArrayLiteral((2, 2), (1.0, 2.0, 3.0, 4.0))), ("index", (0,), (1,)), ("index", (1,), (0,))]


def test_a_negated_literal_is_the_literal_of_the_negated_numbers() -> None:
    # as -2 is the number -2, not an operation on 2
    assert code("y = w * -[1, 2]") == [
        ("input", (), "w"), ("const", (), ArrayLiteral((2,), (-1.0, -2.0))), ("*", (0, 1), None)]
    # negative entries are numbers of the literal, not negations
    assert code("x = [-1, +2]") == [("input", (), "x")]
    assert parse("x = [-1, +2]").variables["x"].default == ArrayLiteral((2,), (-1.0, 2.0))


def test_a_negated_literal_statement_declares_an_input_as_a_negative_number_does() -> None:
    assert parse("a = -2").variables["a"].kind == "input"  # the scalar rule
    x = parse("x = -[1, 2]").variables["x"]
    assert (x.kind, x.default) == ("input", ArrayLiteral((2,), (-1.0, -2.0)))


def test_matmul() -> None:
    assert code("P = X @ W") == [("input", (), "X"), ("input", (), "W"), ("@", (0, 1), None)]
    # @ has the precedence of * and associates to the left; unary minus binds tighter
    assert code("P = a @ b * c") == [
        ("input", (), "a"), ("input", (), "b"), ("@", (0, 1), None), ("input", (), "c"), ("*", (2, 3), None)]
    assert code("P = a + b @ c") == [
        ("input", (), "a"), ("input", (), "b"), ("input", (), "c"), ("@", (1, 2), None), ("+", (0, 3), None)]
    assert code("P = -a @ b") == [("input", (), "a"), ("neg", (0,), None), ("input", (), "b"), ("@", (1, 2), None)]


def test_indexing_and_slices() -> None:
    text = "x = [[1, 2, 3], [4, 5, 6]]\na = x[1, 2]\nb = x[-1]\nc = x[0, 1:3]\nd = x[:, 0]\ne = x[1:]\n" \
           "f = x[:1, :-1]\ng = x[:]\nh = x[0][-1]"
    assert code(text) == [
        ("input", (), "x"),
        ("index", (0,), (1, 2)),
        ("index", (0,), (-1,)),
        ("index", (0,), (0, slice(1, 3))),
        ("index", (0,), (slice(None), 0)),
        ("index", (0,), (slice(1, None),)),
        ("index", (0,), (slice(None, 1), slice(None, -1))),
        ("index", (0,), (slice(None),)),
        ("index", (0,), (0,)), ("index", (8,), (-1,)),
    ]
    shapes = infer(parse(text), {})
    assert shapes == [(2, 3), (), (3,), (2,), (2,), (1, 3), (1, 2), (2, 3), (3,), ()]


def test_indexing_binds_tighter_than_minus_and_power() -> None:
    assert code("x = [1, 2]\ny = -x[0] + 1") == [
        ("input", (), "x"), ("index", (0,), (0,)), ("neg", (1,), None), ("const", (), 1.0), ("+", (2, 3), None)]
    assert code("f = [1, 2]\nz = f[0] ** 2") == [("input", (), "f"), ("index", (0,), (0,)), ("**c", (1,), 2.0)]
    assert code("z = (a + b)[0]") == [
        ("input", (), "a"), ("input", (), "b"), ("+", (0, 1), None), ("index", (2,), (0,))]
    assert code("z = softmax(a)[1]") == [("input", (), "a"), ("softmax", (0,), None), ("index", (1,), (1,))]


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min"])
def test_reductions_with_and_without_an_axis(name: str) -> None:
    assert code(f"y = {name}(x)") == [("input", (), "x"), (name, (0,), None)]
    assert code(f"y = {name}(x, 0)") == [("input", (), "x"), (name, (0,), 0)]
    assert code(f"y = {name}(x, -1)") == [("input", (), "x"), (name, (0,), -1)]
    assert code(f"y = {name}(x, 1.0)") == [("input", (), "x"), (name, (0,), 1)]
    assert infer(parse(f"x = [[1, 2, 3]]\ny = {name}(x, -1)"), {}) == [(1, 3), (1,)]
    assert infer(parse(f"x = [[1, 2, 3]]\ny = {name}(x, 0)"), {}) == [(1, 3), (3,)]


@pytest.mark.parametrize(("name", "shape"), [("transpose", (3, 2)), ("softmax", (2, 3)), ("log_softmax", (2, 3)),
                                             ("logsumexp", (2,))])
def test_one_operand_calls(name: str, shape: tuple) -> None:
    assert code(f"y = {name}(x)") == [("input", (), "x"), (name, (0,), None)]
    assert infer(parse(f"x = [[1, 2, 3], [4, 5, 6]]\ny = {name}(x)"), {})[-1] == shape


def test_losses() -> None:
    assert code("L = mse(p, y)") == [("input", (), "p"), ("input", (), "y"), ("mse", (0, 1), None)]
    assert code("L = cross_entropy(z, [0, 2])") == [
        ("input", (), "z"), ("const", (), ArrayLiteral((2,), (0.0, 2.0))), ("cross_entropy", (0, 1), None)]
    assert infer(parse("z = [[1, 2, 3], [4, 5, 6]]\nL = cross_entropy(z, [0, 2])"), {}) == [(2, 3), (2,), ()]


def test_every_scalar_function_applies_to_a_tensor() -> None:
    from autodiff_cli.engine.ops import FUNCTIONS

    for name in FUNCTIONS:
        program = parse(f"x = [[1, 2, 3]]\ny = {name}(x)")
        assert [(i.op, i.args) for i in program.instructions] == [("input", ()), (name, (0,))]
        assert infer(program, {}) == [(1, 3), (1, 3)]


def test_broadcasting_shapes() -> None:
    program = parse("a = [[1], [2], [3]]\nb = [1, 2]\nc = a + b\nd = a * 2\ne = b / a - 1\nf = b ** a")
    assert infer(program, {})[-1] == (3, 2)
    assert [infer(program, {})[program.variables[n].register] for n in "cdef"] == [(3, 2), (3, 1), (3, 2), (3, 2)]


# --- line breaks and comments inside brackets --------------------------------------------------


def test_a_literal_over_several_lines_with_comments() -> None:
    text = ("W = [[1, 2],   # the first row\n"
            "     # a comment line between rows\n"
            "     [3, 4]]   # the second\n"
            "b = [\n"
            "  5,\n"
            "  6\n"
            "]\n"
            "L = sum(W @ b)\n")
    program = parse(text)
    assert program.variables["W"].default == ArrayLiteral((2, 2), (1.0, 2.0, 3.0, 4.0))
    assert program.variables["b"].default == ArrayLiteral((2,), (5.0, 6.0))
    assert [v.kind for v in program.variables.values()] == ["input", "input", "intermediate"]
    assert program.variables["L"].position == Position(8, 1)
    assert code(text)[2:] == [("@", (0, 1), None), ("sum", (2,), None)]


def test_a_subscript_over_two_lines_and_crlf() -> None:
    assert code("x = [1, 2]\r\ny = x[\r\n0]\r\n") == [("input", (), "x"), ("index", (0,), (0,))]
    assert parse("x = [[1, 2],\r\n     [3, 4]]\r\ny = x\r\n").variables["x"].default.shape == (2, 2)


def test_a_line_break_after_a_closed_bracket_ends_the_statement() -> None:
    program = parse("x = [1, 2]\ny = x[0]\nz = y * 2")
    assert program.variables["z"].position == Position(3, 1)
    error = error_of("x = [1, 2]\ny = x[0]\n- 1")
    assert isinstance(error, ParseError)
    assert where(error) == (3, 1)


# --- list literal errors -----------------------------------------------------------------------


@pytest.mark.parametrize(("text", "message", "at"), [
    ("x = [[1, 2], [3]]", "entry 2 of this list has shape [1], but entry 1 has [2]", (1, 14)),
    ("x = [1, [2, 3]]", "entry 2 of this list has shape [2], but entry 1 has []", (1, 9)),
    ("x = [[1, 2], [3, 4], [5]]", "entry 3 of this list has shape [1], but entry 1 has [2]", (1, 22)),
    ("x = [[[1]], [[1, 2]]]", "entry 2 of this list has shape [1, 2], but entry 1 has [1, 1]", (1, 13)),
    ("x = [1, normal([2])]", "a list holds numbers and values, not random draws", (1, 9)),
    ("x = [1:2]", "a slice ':' belongs inside brackets after a value", (1, 7)),
    ("x = [1e400, 2]", "the number 1e400 is too large for a float", (1, 6)),
])
def test_list_literal_errors(text: str, message: str, at: tuple[int, int]) -> None:
    error = error_of(text)
    assert type(error) is ProgramError
    assert (error.message, where(error)) == (message, at)


def test_a_list_with_a_computed_entry_is_a_stack_of_its_entries() -> None:
    program = parse("y = 2\nx = [1, y, 2 + 3]", "m.ad")
    ops = [instruction.op for instruction in program.instructions]
    assert ops[-1] == "stack" and len(program.instructions[len(ops) - 1].args) == 3


def test_a_ragged_literal_names_the_fix() -> None:
    error = error_of("x = [[1, 2], [3]]")
    assert error.hint == "every row of a matrix needs the same number of entries"
    assert str(error) == ("m.ad:1:14: error: entry 2 of this list has shape [1], but entry 1 has [2]\n"
                          " 1 | x = [[1, 2], [3]]\n"
                          "   |              ^\n"
                          "  hint: every row of a matrix needs the same number of entries")


@pytest.mark.parametrize(("text", "at"), [("x = []", (1, 6)), ("x = [[]]", (1, 7)), ("x = [1, 2,]", (1, 11)),
                                          ("x = [,]", (1, 6)), ("y = x[]", (1, 7))])
def test_empty_literals_and_subscripts_are_syntax_errors(text: str, at: tuple[int, int]) -> None:
    error = error_of(text)
    assert isinstance(error, ParseError)
    assert where(error) == at
    assert error.message.startswith("unexpected ")


@pytest.mark.parametrize(("text", "at"), [
    ("x = [[1, 2]]\na = 0\ny = sum(x, a)", (3, 12)),
    ("x = [1, 2]\nk = 1\ny = x[k:]", (3, 7)),
    ("s = 0.5\nW = normal([2], s)", (2, 17)),
])
def test_a_name_where_a_number_is_needed_is_reported_where_it_is_used(text: str, at: tuple[int, int]) -> None:
    assert where(error_of(text)) == at


@pytest.mark.parametrize("text", ["x = [1, 2", "x = [1 2]", "y = 2 @", "x = [1, 2]]", "y = x[0"])
def test_syntax_errors_spell_brackets_colons_and_at_as_characters(text: str) -> None:
    message = error_of(text).message
    for word in ("lsqb", "rsqb", "colon", " at", "at,"):
        assert word not in message, message


# --- index errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "message", "at"), [
    ("x = [1, 2]\ny = x[1.5]", "an index must be a whole number", (2, 7)),
    ("x = [1, 2]\ny = x[1:a]", "a slice's bounds must be written as numbers", (2, 9)),
    ("y = sum(1:2)", "a slice ':' belongs inside brackets", (1, 10)),
])
def test_index_errors_found_when_parsing(text: str, message: str, at: tuple[int, int]) -> None:
    error = error_of(text)
    assert type(error) is ProgramError
    assert (error.message, where(error)) == (message, at)


@pytest.mark.parametrize("text", ["x = [1, 2]\ny = x[i]", "x = [1, 2]\ni = 1\ny = x[i]", "x = [1, 2]\ny = x[0 + 1]"])
def test_a_computed_index_is_a_gather_not_an_error(text: str) -> None:
    """A subscript that is a variable or an expression is an index tensor (here of no axes):
    its value is checked to be a whole number of the axis when the program runs."""
    program = parse(text)
    assert infer(program, {"i": ()})[-1] == ()


@pytest.mark.parametrize(("text", "message", "at"), [
    ("x = [1, 2]\ny = x[2]", "x[2]: [2]: index 2 is out of range for an axis of size 2", (2, 6)),
    ("x = [1, 2]\ny = x[-3]", "x[-3]: [2]: index -3 is out of range for an axis of size 2", (2, 6)),
    ("x = [[1, 2]]\ny = x[0, 2]", "x[0, 2]: [1, 2]: index 2 is out of range for an axis of size 2", (2, 6)),
    ("x = [[1, 2]]\ny = x[1]", "x[1]: [1, 2]: index 1 is out of range for an axis of size 1", (2, 6)),
    ("x = [1, 2]\ny = x[0, 1]", "x[0, 1]: [2]: 2 indices for 1 axis", (2, 6)),
    ("x = [1, 2]\ny = x[:, 0]", "x[:, 0]: [2]: 2 indices for 1 axis", (2, 6)),
    ("x = [[1, 2]]\ny = x[0, 0, 0]", "x[0, 0, 0]: [1, 2]: 3 indices for 2 axes", (2, 6)),
    ("s = 3\ny = s[0]", "s[0]: []: a scalar has no axes to index", (2, 6)),
    ("x = [1, 2]\ny = x[0][0]", "(...)[0]: []: a scalar has no axes to index", (2, 9)),
])
def test_index_shape_errors(text: str, message: str, at: tuple[int, int]) -> None:
    error = error_of(text)
    assert type(error) is ShapeError
    assert (error.message, where(error)) == (message, at)


def test_an_index_out_of_range_for_a_given_shape() -> None:
    program = parse("y = x[3]")
    assert infer(program, {"x": (4,)}) == [(4,), ()]
    with pytest.raises(ShapeError) as caught:
        infer(program, {"x": (3,)})
    assert caught.value.message == "x[3]: [3]: index 3 is out of range for an axis of size 3"
    assert caught.value.hint == ("indices of an axis of size 3 run from 0 to 2, or from -3 to -1 counting from "
                                 "the end")


# --- axis errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "kind", "message", "at"), [
    ("x = [[1, 2]]\ny = sum(x, 2)", ShapeError, "sum(x, 2): [1, 2]: axis 2 is out of range for 2 axes", (2, 5)),
    ("x = [[1, 2]]\ny = mean(x, -3)", ShapeError, "mean(x, -3): [1, 2]: axis -3 is out of range for 2 axes",
     (2, 5)),
    ("x = [1, 2]\ny = max(x, 1)", ShapeError, "max(x, 1): [2]: axis 1 is out of range for 1 axis", (2, 5)),
    ("s = 2\ny = min(s, 0)", ShapeError, "min(s, 0): []: axis 0 is out of range: a scalar has no axes", (2, 5)),
    ("x = [[1, 2]]\ny = sum(x, 0.5)", ProgramError, "the axis of sum() must be a whole number", (2, 12)),
    ("x = [[1, 2]]\ny = sum(x, a)", ProgramError, "the axis of sum() must be written as numbers", (2, 12)),
    ("x = [[1, 2]]\ny = sum(x, 0, 1)", ProgramError,
     "sum() takes 1 number (axis) and the word keepdim after its operand, and this argument is one too many", (2, 15)),
    ("x = [[1, 2]]\ny = sum(x, 0, keepdim, 1)", ProgramError, "sum() takes 1 to 3 arguments (4 given)", (2, 5)),
    ("x = [[1, 2]]\ny = sum(x, 0, keepdims)", ProgramError, "'keepdims' is not a word sum() takes: it takes keepdim",
     (2, 15)),
    ("keepdim = 2\nx = [[1, 2]]\ny = sum(x, 0, keepdim)", ProgramError,
     "'keepdim' is a variable of this program, so it cannot be the word keepdim of sum()", (3, 15)),
    ("x = [[1, 2]]\ny = mean(x, keepdim, keepdim)", ProgramError, "keepdim is written twice in mean()", (2, 13)),
    ("x = [[1, 2]]\ny = max(x, 2, keepdim)", ShapeError, "max(x, 2, keepdim): [1, 2]: axis 2 is out of range for 2 axes",
     (2, 5)),
    ("x = [[1, 2]]\ny = transpose(x, 0)", ProgramError, "transpose() takes 1 argument (2 given)", (2, 5)),
    ("x = [[1, 2]]\ny = softmax(x, 0, 1)", ProgramError, "softmax() takes 1 or 2 arguments (3 given)", (2, 5)),
    ("x = [[1, 2]]\ny = softmax(x, 2)", ShapeError, "softmax(x, 2): [1, 2]: axis 2 is out of range for 2 axes", (2, 5)),
    ("x = [[1, 2]]\ny = logsumexp(x, keepdim)", ProgramError, "the axis of logsumexp() must be written as numbers",
     (2, 18)),
    ("y = mse(x)", ProgramError, "mse() takes 2 arguments (1 given)", (1, 5)),
    ("x = [[1, 2]]\ny = reshape(x, [3])", ShapeError, "reshape(x, [3]): [1, 2] to [3]: 2 entries cannot fill 3",
     (2, 5)),
    ("x = [[1, 2]]\ny = reshape(x, [-1, -1])", ShapeError,
     "reshape(x, [-1, -1]): [1, 2] to [-1, -1]: only one size may be -1 (the one worked out)", (2, 5)),
    ("x = [[1, 2, 3]]\ny = reshape(x, [2, -1])", ShapeError,
     "reshape(x, [2, -1]): [1, 3] to [2, -1]: 3 entries are not a whole multiple of 2", (2, 5)),
    ("x = [[1, 2]]\ny = reshape(x, [-2, -1])", ShapeError, "reshape(x, [-2, -1]): [1, 2] to [-2, -1]: a size cannot be -2",
     (2, 5)),
    ("x = [[1, 2]]\ny = reshape(x)", ProgramError, "reshape() needs its shape", (2, 5)),
    ("x = [[1, 2]]\ny = reshape(x, [1.5, 2])", ProgramError, "the shape of reshape() must be a list of whole numbers",
     (2, 16)),
    ("x = [[1, 2]]\ns = [2]\ny = reshape(x, s)", ProgramError, "the shape of reshape() must be written as numbers",
     (3, 16)),
    ("x = [[1, 2]]\ny = reshape(x, [2], [1])", ProgramError, "reshape() takes 2 arguments (3 given)", (2, 5)),
])
def test_axis_and_arity_errors(text: str, kind: type, message: str, at: tuple[int, int]) -> None:
    error = error_of(text)
    assert type(error) is kind
    assert (error.message, where(error)) == (message, at)


# --- initializer errors -----------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "message", "at"), [
    ("W = normal([2, 3], 0.1, 4)", "normal() takes the shape and std (3 given)", (1, 5)),
    ("W = normal()", "normal() takes the shape and std (0 given)", (1, 5)),
    ("W = zeros([4], 1)", "zeros() takes the shape (2 given)", (1, 5)),
    ("W = uniform([2], 0, 1, 2)", "uniform() takes the shape and low, high (4 given)", (1, 5)),
    ("W = normal([2.5, 3])", "the shape of normal() must be a list of whole numbers", (1, 12)),
    ("W = normal([-2])", "the shape of normal() must be a list of whole numbers", (1, 12)),
    ("W = normal([[2, 3]])", "the shape of normal() must be a list of whole numbers", (1, 12)),
    ("W = normal([2, 3], a)", "the std of normal() must be written as numbers", (1, 20)),
    ("W = normal([2, 3], [1])", "the std of normal() must be a number", (1, 20)),
    ("W = uniform([2], -1, b)", "the high of uniform() must be written as numbers", (1, 22)),
    ("W = normal(n)", "the shape of normal() must be written as numbers", (1, 12)),
])
def test_initializer_errors(text: str, message: str, at: tuple[int, int]) -> None:
    error = error_of(text)
    assert type(error) is ProgramError
    assert (error.message, where(error)) == (message, at)


@pytest.mark.parametrize("text", ["W = normal([2], -0.5)\nL = sum(W)", "W = uniform([3], 1, -1)\nL = sum(W)"])
def test_an_initializer_that_cannot_be_drawn_is_an_error_at_its_line(text: str) -> None:
    from autodiff_cli.execute.interpreter import evaluate_tensors

    try:
        program = parse(text, "m.ad")
        evaluate_tensors(program, {})
    except AutodiffError as error:
        assert where(error)[0] == 1
    else:
        pytest.fail("no error")


# --- shape errors ---------------------------------------------------------------------------------


def test_the_matmul_error_of_the_issue() -> None:
    text = "X = [[1, 2, 3], [4, 5, 6], [7, 8, 9], [1, 2, 3]]\nW = [[1], [2]]\nP = X @ W\n"
    error = error_of(text)
    assert type(error) is ShapeError
    assert error.message == "X @ W: [4, 3] @ [2, 1]: the inner sizes 3 and 2 differ"
    assert where(error) == (3, 7)
    assert str(error) == (
        "m.ad:3:7: error: X @ W: [4, 3] @ [2, 1]: the inner sizes 3 and 2 differ\n"
        " 3 | P = X @ W\n"
        "   |       ^\n"
        "  hint: the columns of the left operand must match the rows of the right one; transpose(...) one of them?")


def test_the_matmul_error_with_shapes_given_for_inputs() -> None:
    error = error_of("P = X @ W", {"X": (4, 3), "W": (2, 1)})
    assert (error.message, where(error)) == ("X @ W: [4, 3] @ [2, 1]: the inner sizes 3 and 2 differ", (1, 7))


@pytest.mark.parametrize(("text", "message", "at"), [
    ("a = [1, 2]\nb = [[1, 2], [3, 4], [5, 6]]\nc = a @ b", "a @ b: [2] @ [3, 2]: the inner sizes 2 and 3 differ",
     (3, 7)),
    ("a = [1, 2]\nb = [1, 2, 3]\nc = a @ b", "a @ b: [2] @ [3]: the inner sizes 2 and 3 differ", (3, 7)),
    ("x = [[1, 2]]\ny = x @ x", "x @ x: [1, 2] @ [1, 2]: the inner sizes 2 and 1 differ", (2, 7)),
    ("x = [1, 2] @ 3", "[1, 2] @ 3: [2] @ []: @ takes vectors and matrices, and the right operand is a scalar",
     (1, 12)),
    ("s = 2\nx = [1]\ny = s @ x", "s @ x: [] @ [1]: @ takes vectors and matrices, and the left operand is a scalar",
     (3, 7)),
    ("T = [[[1]]]\nv = [1]\ny = T @ v", "T @ v: [1, 1, 1] @ [1]: @ takes vectors and matrices, and the left "
     "operand has 3 axes", (3, 7)),
])
def test_matmul_shape_errors(text: str, message: str, at: tuple[int, int]) -> None:
    error = error_of(text)
    assert type(error) is ShapeError
    assert (error.message, where(error)) == (message, at)


@pytest.mark.parametrize(("text", "message", "at"), [
    ("a = [1, 2, 3]\nb = [1, 2]\nc = a + b", "a + b: [3] and [2]: sizes 3 and 2 cannot broadcast", (3, 7)),
    ("a = [[1, 2, 3]]\nb = [1, 2]\nc = a * b", "a * b: [1, 3] and [2]: sizes 3 and 2 cannot broadcast", (3, 7)),
    ("a = [[1, 2], [3, 4]]\nb = [[1, 2], [3, 4], [5, 6]]\nc = a - b",
     "a - b: [2, 2] and [3, 2]: sizes 2 and 3 cannot broadcast", (3, 7)),
    ("a = [1, 2]\nc = a / [1, 2, 3]", "a / [1, 2, 3]: [2] and [3]: sizes 2 and 3 cannot broadcast", (2, 7)),
    ("a = [1, 2]\nb = [1, 2, 3]\nc = a ** b", "a ** b: [2] and [3]: sizes 2 and 3 cannot broadcast", (3, 7)),
    ("a = [1, 2]\nb = [1, 2, 3]\nc = 1 + (a + b)", "a + b: [2] and [3]: sizes 2 and 3 cannot broadcast", (3, 12)),
])
def test_broadcasting_mismatches(text: str, message: str, at: tuple[int, int]) -> None:
    error = error_of(text)
    assert type(error) is ShapeError
    assert (error.message, where(error)) == (message, at)
    assert error.hint.startswith("broadcasting lines the axes up from the right")


@pytest.mark.parametrize(("text", "message", "hint", "at"), [
    ("p = [1, 2]\ny = [1, 2, 3]\nL = mse(p, y)", "mse(p, y): [2] and [3]: mse needs two tensors of the same shape",
     "mse compares element by element and never broadcasts; give both operands the same shape", (3, 5)),
    ("p = [[1], [2]]\ny = [1, 2]\nL = mse(p, y)",
     "mse(p, y): [2, 1] and [2]: mse needs two tensors of the same shape",
     "mse does not broadcast: here it would compare every pair; take the left operand's column as a vector "
     "with [:, 0]", (3, 5)),
    ("p = 1\ny = [1, 2]\nL = mse(p, y)", "mse(p, y): [] and [2]: mse needs two tensors of the same shape",
     "mse compares element by element and never broadcasts; give both operands the same shape", (3, 5)),
])
def test_mse_with_unequal_shapes(text: str, message: str, hint: str, at: tuple[int, int]) -> None:
    error = error_of(text)
    assert type(error) is ShapeError
    assert (error.message, error.hint, where(error)) == (message, hint, at)


@pytest.mark.parametrize(("text", "message", "at"), [
    ("v = [1, 2]\nt = transpose(v)", "transpose(v): [2]: transpose takes a matrix (2 axes), not a vector", (2, 5)),
    ("s = 1\nt = transpose(s)", "transpose(s): []: transpose takes a matrix (2 axes), not a scalar", (2, 5)),
    ("s = 1\nt = softmax(s)", "softmax(s): []: softmax works along the last axis, and a scalar has none", (2, 5)),
    ("s = 1\nt = logsumexp(s)", "logsumexp(s): []: logsumexp works along the last axis, and a scalar has none",
     (2, 5)),
    ("z = [[1, 2, 3]]\ny = [[0, 1, 2]]\nL = cross_entropy(z, y)",
     "cross_entropy(z, y): [1, 3] and [1, 3]: logits [1, 3] need labels of shape [1]", (3, 5)),
    ("W = zeros([0])\nm = max(W)", "max(W): [0]: max of no elements has no value", (2, 5)),
])
def test_other_shape_errors(text: str, message: str, at: tuple[int, int]) -> None:
    error = error_of(text)
    assert type(error) is ShapeError
    assert (error.message, where(error)) == (message, at)
    assert error.hint
    assert "Traceback" not in str(error)


def test_a_transposed_vector_hint() -> None:
    error = error_of("v = [1, 2]\nt = transpose(v)")
    assert error.hint == "a vector has no orientation: use it as it is on either side of @ (v @ W or W @ v)"


# --- the same statement shapes many times: the templates' code path ---------------------------------


def relative(program, start: int) -> list[list[tuple]]:
    """The instructions of each statement after the first ``start`` instructions, with registers
    counted from the statement's first one (a register of an earlier statement stays as it is,
    marked)."""
    names = [v for v in program.variables.values() if v.kind == "intermediate" and v.register >= start]
    out = []
    instructions = list(program.instructions)
    for v in names:
        chunk = instructions[start:v.register + 1]
        out.append([(i.op, tuple(a - start if a >= start else ("earlier", a) for a in i.args), i.param)
                    for i in chunk])
        start = v.register + 1
    return out


@pytest.mark.parametrize("mode", [1, compiler.TEMPLATE_AFTER, 10**9])
@pytest.mark.parametrize("line", [
    "y{i} = -x[0] + 1",
    "y{i} = x[1] * a + b",
    "y{i} = a * b + x[0] ** 2",
    "y{i} = (x[0] + a) @ W",
    "y{i} = sum(x, -1) * a - mean(W)",
    "y{i} = tanh(a * 2 + x[0, 1]) - b",
    "y{i} = a * b - c; z{i} = x[:, 1:] + a",
    "y{i} = a + b * c\nz{i} = [1, 2] * a",
    "y{i} = softmax(x[0]) * 2 + a",
    "y{i} = -a ** 2 + mse(p, q)",
])
def test_fifty_repeated_statements_compile_alike(line: str, mode: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiler, "TEMPLATE_AFTER", mode)
    prelude = "x = [[1, 2], [3, 4]]\nW = [[1], [2]]\na = 2\nb = 3\nc = 4\np = [1]\nq = [2]\n"
    text = prelude + "\n".join(line.format(i=i) for i in range(50)) + "\n"
    program = parse(text)
    statements = relative(program, 7)
    assert len(statements) == 50 * (1 + line.count(";") + line.count("\n"))
    per_line = len(statements) // 50
    first = statements[:per_line]
    for k in range(50):
        assert statements[k * per_line:(k + 1) * per_line] == first, k
    # and each one is what the statement alone compiles to
    alone = parse(prelude + line.format(i=0))
    assert relative(alone, 7) == first
    infer(program, {})  # every statement's shapes fit


def test_repeated_literals_and_initializers_keep_their_own_values() -> None:
    text = "".join(f"w{i} = [{i}, {i + 1}]\nv{i} = normal([{i % 3 + 1}], 0.{i % 9 + 1})\n" for i in range(50))
    text += "L = " + " + ".join(f"sum(w{i})" for i in range(50))
    program = parse(text)
    for i in range(50):
        assert program.variables[f"w{i}"].default == ArrayLiteral((2,), (float(i), float(i + 1)))
        assert program.variables[f"v{i}"].default == Initializer("normal", (i % 3 + 1,), (float(f"0.{i % 9 + 1}"),))
        assert program.variables[f"w{i}"].kind == program.variables[f"v{i}"].kind == "input"


def test_scalar_statements_between_tensor_ones_use_templates_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiler, "TEMPLATE_AFTER", 1)
    scalar = "".join(f"s{i} = a * b + c - {i}\n" for i in range(50))
    mixed = "".join(f"s{i} = a * b + c - {i}\nt{i} = x[{i % 2}] * s{i}\n" for i in range(50))
    program = parse("x = [1, 2]\na = 1\nb = 2\nc = 3\n" + mixed)
    plain = parse("x = [1, 2]\na = 1\nb = 2\nc = 3\n" + scalar)
    steps = relative(program, 4)
    assert [steps[2 * i] for i in range(50)] == relative(plain, 4)
    for i in range(50):
        assert steps[2 * i + 1] == [("index", (("earlier", 0),), (i % 2,)), ("*", (0, ("earlier", 6 * i + 7)), None)]


# --- scalar programs parse exactly as before --------------------------------------------------------


SCALAR_TEXTS = [
    "a = 2\nb = -3\nc = a*b + 1\nL = tanh(c) ** 2",
    "x = 1; y = 2; x*y",
    "a = -(2)\nb = 2**-2\nc = (2)**x",
    "y = (a +\n  b) * c  # comment\nz = y \\\n  - 1",
    "L = relu(x) + sigmoid(y) - abs(z) / sqrt(w) + exp(log(v))",
    "x = 1\r\ny = x ^ 2\r\n",
    "y = x" + " + x" * 200,
    "a = 1\nb = a\nc = b\n",
    "output = 1\nx + 1",
] + [
    "".join(f"v{i} = a * b + c - {i}\nw{i} = tanh(v{i}) * (a - {i})\n" for i in range(50)),
    "".join(f"v{i} = -a ** 2 + b / c\n" for i in range(50)),
]


def outcome(parser, text: str) -> object:
    try:
        program = parser(text, "model.ad")
    except AutodiffError as error:
        return type(error).__name__, str(error)
    instructions = [(i.op, i.args, repr(i.param), program.position(i.position)) for i in program.instructions]
    variables = [(v.name, v.kind, v.position, v.register, repr(v.default)) for v in program.variables.values()]
    return "ok", (instructions, variables, program.result, program.has_tensors)


@pytest.mark.parametrize("mode", [1, compiler.TEMPLATE_AFTER, 10**9])
@pytest.mark.parametrize("text", SCALAR_TEXTS + [path.read_text("utf-8") for path in SAMPLES],
                         ids=[f"text{i}" for i in range(len(SCALAR_TEXTS))] + [p.name for p in SAMPLES])
def test_scalar_programs_parse_as_the_reference_parser(text: str, mode: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiler, "TEMPLATE_AFTER", mode)
    mine = outcome(parse, text)
    assert mine == outcome(reference_parse, text)
    if mine[0] == "ok":
        assert mine[1][3] is False  # no tensors in a scalar program


@pytest.mark.parametrize("text", ["y = a @ b", "y = x[0]", "y = [1]", "y = sum(x)", "y = normal([1])"])
def test_the_tensor_forms_make_a_tensor_program(text: str) -> None:
    assert parse(text).has_tensors


@pytest.mark.parametrize(("text", "message"), [  # the messages of the parser before tensors (commit e4505de)
    ("y = 2 3", "unexpected number 3; expected an operator (+ - * / **) or the end of the statement"),
    ("y = (2", "unexpected end of input; expected an operator (+ - * / **) or ')'"),
    ("y = 2 +\n", "unexpected end of line; expected an operand (a number, a name or '(')"),
    ("2x", "unexpected name 'x'; expected an operator (+ - * / **) or the end of the statement"),
    ("a = = 2", "unexpected '='; expected an operand (a number, a name or '(')"),
    ("y = exp(1,", "unexpected end of input; expected an operand (a number, a name or '(')"),
    ("y = )", "unexpected ')'; expected an operand (a number, a name or '(')"),
])
def test_scalar_syntax_errors_read_as_before_tensors(text: str, message: str) -> None:
    error = error_of(text)
    assert isinstance(error, ParseError)
    assert error.message == message


@pytest.mark.parametrize(("text", "column"), [("W = 0.1*normal([2, 2]); y = sum(W)", 9),
                                              ("y = sum(normal([2]))", 9),
                                              ("y = 1\nz = uniform([3], -1, 1) + y", 5)])
def test_an_initializer_inside_an_expression_is_refused_where_it_is_written(text: str, column: int) -> None:
    with pytest.raises(ProgramError) as raised:
        parse(text)
    assert "draws a starting value, so it is the whole right side of a statement" in raised.value.message
    assert raised.value.position.column == column
    assert raised.value.hint.startswith("name it first, then use the name: W = ")


@pytest.mark.parametrize(("text", "words"), [
    ("W = uniform([2], -1e308, 1e308)", "a range too wide for a float"),
    ("W = zeros([100000000000000000000])", "is too large: a tensor has at most 32 axes and 1,000,000,000 entries"),
    ("W = zeros([" + ", ".join(["1"] * 33) + "])", "is too large: a tensor has at most 32 axes"),
    ("y = " + "[" * 33 + "1" + "]" * 33, "a list literal nested 33 deep has more axes than a tensor may (32)"),
])
def test_tensors_too_large_to_make_are_refused_when_parsing(text: str, words: str) -> None:
    with pytest.raises(ProgramError) as raised:
        parse(text)
    assert words in raised.value.message


@pytest.mark.parametrize("text, written", [
    ("y = W @ [1, 2, 3]", "W @ [1, 2, 3]: "),
    ("y = W @ [[1, 2, 3], [4, 5, 6], [7, 8, 9]]", "W @ [...]: "),  # 9 numbers: too many to write out
    ("y = W @ [0.5, -2, 1e-3]", "W @ [0.5, -2, 0.001]: "),
    ("y = W @ (x + 1)", "W @ (...): "),  # computed: the caret shows it
])
def test_a_shape_error_writes_a_literal_operand(text: str, written: str) -> None:
    program = parse(text)
    with pytest.raises(ShapeError) as caught:
        infer(program, {"W": (2, 2), "x": (3,)})
    assert caught.value.message.startswith(written), caught.value.message


def test_reshape_takes_its_shape_as_written_and_works_out_the_minus_one() -> None:
    program = parse("x = [[1, 2, 3], [4, 5, 6]]\ny = reshape(x, [3, -1])\nz = reshape(x, 6)")
    params = {program.instructions[program.variables[n].register].param for n in ("y", "z")}
    assert params == {(3, -1), (6,)}  # a single number is a shape of one axis


@pytest.mark.parametrize(("call", "param", "shape"), [
    ("sum(x, 1, keepdim)", (1, True), (2, 1)),
    ("mean(x, keepdim, -2)", (-2, True), (1, 3)),
    ("max(x, keepdim)", (None, True), (1, 1)),
    ("min(x, 0)", 0, (3,)),
])
def test_keepdim_is_a_bare_word_anywhere_after_the_operand(call: str, param, shape) -> None:
    program = parse(f"x = [[1, 2, 3], [4, 5, 6]]\ny = {call}\nz = y * 2")
    register = program.variables["y"].register
    assert program.instructions[register].param == param
    assert "keepdim" not in program.variables  # a word, not an input
    assert infer(program, {})[register] == shape
