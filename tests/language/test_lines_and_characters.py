"""Where statements end, which characters a program may use, and CRLF files (issue 13, items 1, 4, 10)."""

from __future__ import annotations

import math
import re

import pytest

from autodiff_cli.errors import ParseError
from autodiff_cli.execute import evaluate
from autodiff_cli.language import parse
from autodiff_cli.language.compiler import grammar_text

# --- a formula continued on a line that starts with + or - ---------------------------------
# A line break ends a statement, so `+ c` on the next line was a statement of its own: the
# program's output, with `loss` silently dropped from it.  It is an error now, with the fixes.


@pytest.mark.parametrize(
    "text, line, column",
    [
        ("loss = a*b\n   + c", 2, 4),
        ("loss = a*b\n-c", 2, 1),
        ("loss = a*b\n\n   + c\n", 3, 4),  # blank lines between
        ("loss = a*b  # the product\n# and then\n  - c", 3, 3),  # comments between
        ("loss = a*b\r\n   + c\r\n", 2, 4),
        ("a = 1; b = a*2\n+ a", 2, 1),
        ("x = 2\n-x", 2, 1),  # the output was meant to be -x: say so with a name
    ],
    ids=["plus", "minus", "blank-lines", "comments", "crlf", "after-semicolons", "negated-output"],
)
def test_a_line_that_starts_with_a_sign_after_a_statement_is_refused(text: str, line: int, column: int) -> None:
    with pytest.raises(ParseError) as raised:
        parse(text, "model.ad")
    error = raised.value
    assert (error.position.line, error.position.column) == (line, column)
    sign = text.splitlines()[line - 1].strip()[0]
    assert error.message.startswith(f"this line starts with '{sign}'")
    assert "not the rest of the expression above it" in error.message
    assert "parentheses" in error.hint and "'\\'" in error.hint and "'y = " in error.hint
    assert str(error).startswith(f"model.ad:{line}:{column}: error:")


# With x = 4, a = 2, b = 3, c = 5 (a default of 1 where the program gives one): by hand.
@pytest.mark.parametrize(
    "text, value",
    [
        ("-x", -4.0),  # the first statement: nothing above to continue
        ("# a comment\n\n-x", -4.0),
        ("a = 1; -a", -1.0),  # after ';' on the same line
        ("loss = (a*b\n   + c)", 11.0),  # inside parentheses the line break does not end the statement
        ("loss = a*b \\\n   + c", 11.0),  # nor after a backslash
        ("loss = a*b +\\\n   c", 11.0),
    ],
    ids=["first-statement", "after-comments", "after-semicolon", "parentheses", "backslash", "backslash-after-op"],
)
def test_signs_that_do_not_follow_a_finished_line_are_fine(text: str, value: float) -> None:
    from autodiff_cli.execute import evaluate

    program = parse(text)
    given = {"x": 4.0, "a": 2.0, "b": 3.0, "c": 5.0}
    inputs = {variable.name for variable in program.inputs}
    evaluation = evaluate(program, {name: given[name] for name in inputs if program.variables[name].default is None})
    assert evaluation.root.data == value


# --- an indented operand on the last line --------------------------------------------------
# `loss = a*b` then a line `   c` made `c` the output (exit 0, loss with gradient 0): the
# indentation says it continues the formula, the language says it is a statement of its own.


@pytest.mark.parametrize(
    "text, line, column",
    [
        ("a = 2; b = 3; c = 4\nloss = a*b\n   c\n", 2 + 1, 4),
        ("loss = a*b\n\n   # the bias\n   c", 4, 4),
        ("x = 1\n\tx*2", 2, 2),
        ("y = x\n  x*2 \\\n  + 1", 2, 3),  # a continued bare statement: where it starts
        ("loss = a*b\r\n  c\r\n", 2, 3),
    ],
    ids=["name", "after-comment", "tab", "continued", "crlf"],
)
def test_an_indented_last_expression_is_refused(text: str, line: int, column: int) -> None:
    with pytest.raises(ParseError) as raised:
        parse(text, "model.ad")
    error = raised.value
    assert (error.position.line, error.position.column) == (line, column)
    assert "reads as the rest of the formula above it" in error.message
    assert "'\\'" in error.hint and "unindent it" in error.hint


@pytest.mark.parametrize(
    "text, output",
    [
        ("  a = 2\n  a*3", "output"),  # indented like the code above it
        ("a = 1; b = 2\n(a\n  + b)", "output"),  # the indented line is inside the statement
        ("x = 1\ny = 2*x; x*3", "output"),  # after ';'
        ("x = 1\ny = x \\\n   + 1", "y"),  # a named statement continued
        ("x = 1\n  y = x\nx*2", "output"),  # less indented than the line above
        ("   x*2", "output"),  # nothing above it
    ],
    ids=["same-indent", "inside-parentheses", "after-semicolon", "named", "dedented", "first-line"],
)
def test_other_last_expressions_are_fine(text: str, output: str) -> None:
    assert parse(text).result == output


@pytest.mark.parametrize("text", ["loss = (a*b\n   + c)", "loss = a*b \\\n   + c", "loss = a*b +\\\n c"],
                         ids=["parentheses", "backslash", "backslash-after-op"])
def test_the_suggested_spellings_continue_the_formula(text: str) -> None:
    evaluation = evaluate(parse(text), {"a": 2.0, "b": 3.0, "c": 5.0})
    assert evaluation.output == "loss"
    assert evaluation.root.data == 11.0
    assert evaluation.grads() | {} == {"a": 3.0, "b": 2.0, "c": 1.0, "loss": 1.0}


@pytest.mark.parametrize(
    "text, hint",
    [
        ("y = 3 +\n4", "a line break ends the statement"),
        ("loss = a\n* b", "a line cannot start with '*'"),
        ("loss = a\n/ b", "a line cannot start with '/'"),
        ("loss = a\n** 2", "a line cannot start with '**'"),
    ],
    ids=["operator-at-end", "star", "slash", "power"],
)
def test_other_ways_of_splitting_a_formula_say_how_to_continue_it(text: str, hint: str) -> None:
    with pytest.raises(ParseError) as raised:
        parse(text)
    assert hint in raised.value.hint
    assert "parentheses" in raised.value.hint


# --- numbers and names are ASCII -------------------------------------------------------------
# `\d` in the grammar took the digits of every script: `y = ２*x` was 2*x, `1٣` was 13.


@pytest.mark.parametrize(
    "text, column, name, ascii",
    [
        ("y = ２*x", 5, "FULLWIDTH DIGIT TWO", "2"),
        ("y = ٣*x", 5, "ARABIC-INDIC DIGIT THREE", "3"),
        ("y = 𝟐*x", 5, "MATHEMATICAL BOLD DIGIT TWO", "2"),
        ("y = 1٣*x", 6, "ARABIC-INDIC DIGIT THREE", "3"),
        ("y = x*1.５", 9, "FULLWIDTH DIGIT FIVE", "5"),
        ("y = x − 1", 7, "MINUS SIGN", "'-'"),
        ("y = 2×x", 6, "MULTIPLICATION SIGN", "'*'"),
        ("y = x ＋ 1", 7, "FULLWIDTH PLUS SIGN", "'+'"),
    ],
    ids=["fullwidth", "arabic-indic", "mathematical", "after-an-ascii-digit", "in-a-fraction", "minus-sign",
         "times", "fullwidth-plus"],
)
def test_digits_and_operators_of_other_scripts_are_refused_with_the_ascii_spelling(text, column, name, ascii) -> None:
    with pytest.raises(ParseError) as raised:
        parse(text)
    error = raised.value
    assert (error.position.line, error.position.column) == (1, column)
    assert error.message == f"unexpected character {text[column - 1]!r} ({name})"
    assert error.hint.startswith("programs are ASCII")
    assert error.hint.endswith(f"write {ascii} for {text[column - 1]!r}")


@pytest.mark.parametrize("text", ["α = 1", "y = café", "x₁ = 2"], ids=["greek", "accent", "subscript"])
def test_names_of_other_scripts_are_refused_saying_names_are_ascii(text: str) -> None:
    with pytest.raises(ParseError) as raised:
        parse(text)
    assert "names with A-Z, a-z, 0-9 and _" in raised.value.hint


def test_the_grammar_writes_numbers_with_ascii_digits() -> None:
    (number,) = re.findall(r"^NUMBER: /(.*)/$", grammar_text(), flags=re.MULTILINE)
    assert re.fullmatch(number, "12.5e-3")
    for digit in "２٣𝟐۳߃०":
        assert re.search(number, digit) is None, digit
    assert not math.isnan(float("٣"))  # what Python's float() would have made of it


# --- CRLF files: the same positions as LF ----------------------------------------------------

ERRORS_AT_LINE_ENDS = [
    "x = 1\ny = 2 +\n",
    "x = 1\ny = 2 + # a comment\n",
    "y = (2\n",
    "x = 1\ny = f(\n",
    "x = 1\ny = 2 *\nz = 3\n",
    "x = 1\n  y = tanh(x\n\n",
    "x =\n",
]


@pytest.mark.parametrize("text", ERRORS_AT_LINE_ENDS, ids=[f"case{i}" for i in range(len(ERRORS_AT_LINE_ENDS))])
def test_crlf_files_report_errors_where_lf_files_do(text: str) -> None:
    errors = []
    for line_break in ("\n", "\r\n"):
        with pytest.raises(ParseError) as raised:
            parse(text.replace("\n", line_break), "model.ad")
        errors.append(raised.value)
    lf, crlf = errors
    assert (crlf.position, crlf.message, crlf.hint) == (lf.position, lf.message, lf.hint)
    assert str(crlf) == str(lf)


def test_crlf_end_of_line_error_is_just_after_the_text() -> None:
    with pytest.raises(ParseError) as raised:
        parse("x = 1\r\ny = 2 +\r\n")
    assert (raised.value.position.line, raised.value.position.column) == (2, 8)  # "y = 2 +" is 7 wide


@pytest.mark.parametrize("text, column", [("loss = a*b \\ # note\n  + c", 12), ("y = 2 \\ 3", 7)],
                         ids=["before-a-comment", "for-division"])
def test_a_backslash_not_at_the_end_of_a_line_says_where_it_belongs(text: str, column: int) -> None:
    with pytest.raises(ParseError) as raised:
        parse(text)
    assert (raised.value.position.line, raised.value.position.column) == (1, column)
    assert "only as its very last character" in raised.value.hint and "division is '/'" in raised.value.hint
