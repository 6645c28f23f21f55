"""The language: precedence, statements, inputs, and errors that say where."""

import math

import pytest

from autodiff_cli.errors import ParseError, ProgramError
from autodiff_cli.execute import evaluate
from autodiff_cli.language import INPUT, INTERMEDIATE, parse


def value_of(text: str, **inputs: float) -> float:
    return evaluate(parse(text), inputs).root.data


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2**3**2", 512.0),  # right-associative
        ("2^3^2", 512.0),
        ("-2**2", -4.0),  # unary minus binds looser than **
        ("(-2)**2", 4.0),
        ("2**-1", 0.5),
        ("1 - 2 - 3", -4.0),  # left-associative
        ("8 / 4 / 2", 1.0),
        ("1 + 2*3", 7.0),
        ("(1 + 2)*3", 9.0),
        ("-3 * -2", 6.0),
        ("+4", 4.0),
        ("--4", 4.0),
        ("2*3**2", 18.0),
        (".5 + 2. + 1e-3 + 1E2", 102.501),
    ],
    ids=lambda x: x if isinstance(x, str) else None,
)
def test_precedence_matches_python(text: str, expected: float) -> None:
    assert value_of(text) == pytest.approx(expected, rel=1e-15)
    assert value_of(text) == pytest.approx(eval(text.replace("^", "**")), rel=1e-15)


def test_unary_minus_of_a_power_is_the_negated_power() -> None:
    assert value_of("y = -a**2", a=3) == -9.0


@pytest.mark.parametrize(
    "text",
    [
        "a = 2; b = 3; c = a*b",
        "a = 2\nb = 3\nc = a*b\n",
        "# comment\n\na = 2   # two\n\n\nb = 3;\nc = a*b\n# end",
        "a = 2;; b = 3 ; c = (a\n  * b)",
        "a = 2\r\nb = 3\r\nc = a*b\r\n",
        "a = 2; b = 3; c = a*\\\n b",
    ],
    ids=["semicolons", "newlines", "comments-and-blank-lines", "empty-statements-and-parenthesised-newline",
         "crlf", "line-continuation"],
)
def test_statement_separators(text: str) -> None:
    program = parse(text)
    assert program.result == "c"
    assert evaluate(program).root.data == 6.0


def test_declared_inputs_and_free_inputs() -> None:
    program = parse("a = -2.5\ny = a*x + tanh(z)")
    kinds = {name: v.kind for name, v in program.variables.items()}
    assert kinds == {"a": INPUT, "x": INPUT, "z": INPUT, "y": INTERMEDIATE}
    assert program.variables["a"].default == -2.5
    assert program.variables["x"].default is None
    assert list(program.variables) == ["a", "x", "z", "y"]  # program order of first appearance


def test_e_is_an_ordinary_name() -> None:
    assert value_of("e = 3; y = e*2") == 6.0


def test_bare_expression_output_is_named_output() -> None:
    program = parse("a = 2; a*a")
    assert program.result == "output"
    assert evaluate(program).root.data == 4.0


def test_bare_name_as_last_statement_selects_that_variable() -> None:
    program = parse("a = 2; b = a*3; c = b+1; b")
    assert program.result == "b"


def test_copy_gives_the_new_name_its_own_node() -> None:
    evaluation = evaluate(parse("a = 2; b = a; c = b*b"))
    assert evaluation.grads()["a"] == 4.0
    assert evaluation.grads()["b"] == 4.0


def test_literal_exponent_is_a_constant_exponent() -> None:
    evaluation = evaluate(parse("y = x**2"), {"x": -3.0})
    assert evaluation.root._op == "**2"
    assert evaluation.grads()["x"] == -6.0


def test_a_200k_term_sum_parses_and_evaluates() -> None:
    text = "y = " + " + ".join(["x"] * 200_000)
    evaluation = evaluate(parse(text), {"x": 1.0})
    assert evaluation.root.data == 200_000.0
    assert evaluation.grads()["x"] == 200_000.0


def test_deeply_nested_parentheses() -> None:
    depth = 50_000
    text = "y = " + "(" * depth + "x" + "+1)" * depth
    evaluation = evaluate(parse(text), {"x": 0.0})
    assert evaluation.root.data == depth


# --- errors say where ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, error_type, line, column, words",
    [
        ("a*", ParseError, 1, 3, "unexpected end of input; expected an operand"),
        ("2x", ParseError, 1, 2, "unexpected name 'x'; expected an operator"),
        ("(a+b", ParseError, 1, 5, "expected an operator (+ - * / **) or ')'"),
        # At the end of a file the caret goes after the unfinished line, not onto the blank ones.
        ("x = 2\ny = log(x - 3\n\n", ParseError, 2, 14, "unexpected end of input"),
        # CRLF: the line break starts at the CR, so the caret lands just after the text, as with LF.
        ("y = 2*\r\n", ParseError, 1, 7, "unexpected end of line; expected an operand"),
        ("a+b)", ParseError, 1, 4, "unexpected ')'"),
        ("a $ b", ParseError, 1, 3, "unexpected character '$'"),
        ("a = 1\nb = = 2", ParseError, 2, 5, "unexpected '='"),
        ("x = 1\nx = 2", ProgramError, 2, 1, "'x' is assigned twice"),
        ("y = x + 1\nx = 2", ProgramError, 1, 5, "'x' is used before it is assigned"),
        ("x = x + 1", ProgramError, 1, 5, "'x' is used before it is assigned"),
        ("y = foo(x)", ProgramError, 1, 5, "unknown function 'foo'"),
        ("y = tanhh(x)", ProgramError, 1, 5, "unknown function 'tanhh'"),
        ("y = exp(x, 2)", ProgramError, 1, 5, "exp() takes exactly 1 argument (2 given)"),
        ("y = exp()", ProgramError, 1, 5, "exp() takes exactly 1 argument (0 given)"),
        ("tanh = 3", ProgramError, 1, 1, "'tanh' is a function"),
        ("y = exp + 1", ProgramError, 1, 5, "'exp' is a function"),
        ("", ProgramError, 1, 1, "the program is empty"),
        ("# only a comment\n\n", ProgramError, 1, 1, "the program is empty"),
        ("y = 1e999 * x", ProgramError, 1, 5, "too large for a float"),
    ],
    ids=["dangling-operator", "implicit-multiplication", "unclosed-paren", "unclosed-at-end-of-file",
         "dangling-operator-crlf", "extra-paren", "bad-character",
         "double-equals", "assigned-twice", "used-before-assigned", "self-reference", "unknown-function",
         "misspelt-function", "too-many-arguments", "no-arguments", "assign-to-function",
         "function-as-variable", "empty", "comment-only", "literal-overflow"],
)
def test_errors_carry_position_and_words(text, error_type, line, column, words) -> None:
    with pytest.raises(error_type) as raised:
        parse(text, "model.ad")
    error = raised.value
    assert words in error.message
    assert (error.position.line, error.position.column) == (line, column)
    rendered = str(error)
    assert rendered.startswith(f"model.ad:{line}:{column}: error: ")
    assert "^" in rendered


def test_syntax_error_names_no_lark_terminals() -> None:
    for text in ["a*", "2x", "(a", "a)", "a = ", "f(,)", "a ,b", "a=1;;=2"]:
        with pytest.raises(ParseError) as raised:
            parse(text)
        message = str(raised.value)
        for internal in ("RPAR", "LPAR", "$END", "_SEP", "NUMBER", "NAME", "STAR"):
            assert internal not in message, (text, message)


def test_caret_points_at_the_offending_column() -> None:
    with pytest.raises(ParseError) as raised:
        parse("a = 1\ny = a +* 2", "f.ad")
    lines = str(raised.value).splitlines()
    assert lines[0].startswith("f.ad:2:8: error:")
    assert lines[1] == " 2 | y = a +* 2"
    assert lines[2] == "   |        ^"


def test_unclosed_parenthesis_hint_names_where_it_opened() -> None:
    with pytest.raises(ParseError) as raised:
        parse("y = tanh(x\nz = 1")
    assert raised.value.hint == "the '(' at line 1, column 9 is never closed"


@pytest.mark.parametrize("text, hint", [
    ("x = [1, 2\ny = sum(x)", "the '[' at line 1, column 5 is never closed"),
    ("x = [[1, 2], [3, 4]", "the '[' at line 1, column 5 is never closed"),
    ("y = x[0", "the '[' at line 1, column 6 is never closed"),
    ("y = ([1, 2)", "the '[' at line 1, column 6 is never closed"),
    ("y = [(1]", "the '(' at line 1, column 6 is never closed"),
])
def test_unclosed_bracket_hint_names_the_innermost(text: str, hint: str) -> None:
    with pytest.raises(ParseError) as raised:
        parse(text)
    assert raised.value.hint == hint


def test_unknown_function_suggests_the_closest() -> None:
    with pytest.raises(ProgramError) as raised:
        parse("y = sigmod(x)")
    assert "did you mean sigmoid()" in raised.value.hint


def test_nan_never_a_default() -> None:
    program = parse("a = 0.1")
    assert math.isfinite(program.variables["a"].default)


def test_instruction_columns_widen_for_numbers_beyond_32_bits() -> None:
    from autodiff_cli.language.program import Instructions

    instructions = Instructions()
    instructions.extend(["input"], [-1], [-1], ["x"], [7])
    instructions.extend(["neg"], [0], [-1], [None], [2**40])  # a token number of a 1 TB text
    assert instructions.where.typecode == "q"
    assert [i.position for i in instructions] == [7, 2**40]
    assert instructions[1].args == (0,)
    ops = [f"op{n}" for n in range(300)]  # more ops than one byte can number
    instructions.extend(ops, [0] * 300, [-1] * 300, [None] * 300, [9] * 300)
    assert [i.op for i in instructions][2:] == ops and instructions.ops.typecode == "q"


@pytest.mark.parametrize("text, hint", [
    ("y = ()", "an operand is missing before this ')'"),
    ("y = (a + )", "an operand is missing before this ')'"),
    ("y = f(()", "an operand is missing before this ')'"),
    ("y = a)", "this ')' has no matching '('"),
], ids=["empty", "after-operator", "nested", "unmatched"])
def test_an_early_closing_parenthesis_is_told_from_an_unmatched_one(text, hint) -> None:
    with pytest.raises(ParseError) as raised:
        parse(text)
    assert raised.value.hint == hint or raised.value.hint.startswith(hint)
