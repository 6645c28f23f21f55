"""`autodiff check --claim/--claims/--claim-latex`: verdicts, formats, exit codes, errors in place."""

from __future__ import annotations

import csv
import io
import json

import click
import pytest

from autodiff_cli.cli import main

CLASSIC = "a = 2\nb = 3\nd = a*b\ne = a + b\nf = d*e\n"


@pytest.fixture
def cli() -> click.Group:
    return main


def run(runner, cli, *args, input=None):
    return runner.invoke(cli, ["check", *args], input=input, catch_exceptions=False)


def test_the_done_when_example(runner, cli) -> None:
    # df/da = b*e + d; the claim b*e counts the first use of a only.  At a = b = 1 the claim
    # is 1*2 = 2 and the derivative 2 + 1 = 3.
    result = run(runner, cli, "-e", CLASSIC, "--claim", "df/da = b*e")
    assert result.exit_code == 1
    assert result.stdout == (
        "df/da = b*e: WRONG\n"
        "  at a = 1, b = 1: the claim gives 2, the derivative 3 (difference -1)\n"
        "  likely slip: your formula is the contribution of the first use of a only (line 3: d = a*b); "
        "the second use (line 4: e = a + b) adds + d\n"
        "  correct: df/da = b*e + d\n"
        "1 claim: 1 wrong\n"
    )


def test_proved_claims_exit_0(runner, cli, samples) -> None:
    result = run(runner, cli, str(samples / "karpathy.ad"), "--claim", "dL/da = b*f", "--claim", "dL/db = a*f")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == "2 claims: 2 proved"


def test_agrees_exits_0_and_says_how_many(runner, cli) -> None:
    result = run(runner, cli, "x = 0.5\ny = tanh(x)", "--claim", "dy/dx = 4/(exp(x) + exp(-x))**2")
    assert result.exit_code == 0, result.output
    assert "dy/dx = 4/(exp(x) + exp(-x))**2: agrees" in result.stdout
    assert "not proved symbolically" in result.stdout


def test_inconclusive_exits_3(runner, cli) -> None:
    result = run(runner, cli, "x = 1\ny = exp(exp(exp(x + 800)))", "--claim", "dy/dx = y")
    assert result.exit_code == 3
    assert "inconclusive" in result.stdout


def test_claims_file(runner, cli, samples, tmp_path) -> None:
    result = run(runner, cli, str(samples / "quadratic.ad"), "--claims",
                 str(samples / "derivations" / "quadratic_wrong.txt"))
    assert result.exit_code == 1
    assert "the second use (x*y on line 5) adds + y" in result.stdout
    assert result.stdout.splitlines()[-1] == "3 claims: 3 wrong"


def test_claims_file_error_is_file_line_column(runner, cli, samples, tmp_path) -> None:
    path = tmp_path / "mine.txt"
    path.write_text("# my derivation\ndf/dx = 6*x + y\ndf/dy = x + 10*z\n")
    result = run(runner, cli, str(samples / "quadratic.ad"), "--claims", str(path))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"{path}:3:16: error: 'z' is not a variable of the program")
    assert " 3 | df/dy = x + 10*z\n" in result.stderr


def test_claim_error_is_a_column_in_the_claim(runner, cli, samples) -> None:
    result = run(runner, cli, str(samples / "quadratic.ad"), "--claim", "df/dq = 1")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[:3] == [
        "<claim>:1:5: error: 'q' is not a variable of the program",
        " 1 | df/dq = 1",
        "   |     ^",
    ]
    result = run(runner, cli, str(samples / "quadratic.ad"), "--claim", "df/dx = 1", "--claim", "df/dy = (x")
    assert result.exit_code == 2
    assert result.stderr.startswith("<claim 2>:1:11: error:")


def test_latex_claims(runner, cli, samples) -> None:
    latex = "\\begin{aligned}\n\\frac{\\partial f}{\\partial x} &= 6 x + y \\\\\n" \
            "\\frac{\\partial^{2} f}{\\partial y^{2}} &= 10\n\\end{aligned}"
    result = run(runner, cli, str(samples / "quadratic.ad"), "--claim-latex", latex)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == "2 claims: 2 proved"
    result = run(runner, cli, str(samples / "quadratic.ad"), "--claims", str(samples / "derivations" / "quadratic.tex"))
    assert result.exit_code == 0, result.output


def test_latex_error_points_into_the_latex(runner, cli, samples) -> None:
    result = run(runner, cli, str(samples / "quadratic.ad"), "--claim-latex", r"\frac{\partial f}{\partial q} = 1")
    assert result.exit_code == 2
    assert result.stderr.startswith("<claim-latex>:1:28: error: 'q' is not a variable")


def test_json(runner, cli, samples) -> None:
    result = run(runner, cli, str(samples / "regression.ad"), "--claim", "dL/dw = 2*(w*x + b + y)*x",
                 "--format", "json")
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert document["verdict"] == "wrong"
    (claim,) = document["claims"]
    # at w = b = 0, x = y = 1: claim 2*(0 + 0 + 1)*1 = 2, derivative 2*(0 + 0 - 1)*1 = -2
    assert claim["counterexample"] == {"point": {"w": 0.0, "b": 0.0, "x": 1.0, "y": 1.0}, "claimed": 2.0,
                                       "correct": -2.0, "difference": 4.0}
    assert claim["slip"]["kind"] == "sign"


def test_csv(runner, cli, samples) -> None:
    result = run(runner, cli, str(samples / "regression.ad"), "--claim", "dL/db = 2*(w*x + b - y)",
                 "--claim", "dL/db = (w*x + b - y)", "--format", "csv")
    assert result.exit_code == 1
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [r["verdict"] for r in rows] == ["proved", "wrong"]
    assert rows[1]["slip"] == "local derivative"


def test_table_at_a_terminal(runner, cli, samples) -> None:
    result = run(runner, cli, "-e", CLASSIC, "--claim", "df/da = b*e", "--format", "table", "--no-color")
    assert result.exit_code == 1
    assert "claims checked against the symbolic derivative" in result.stdout
    assert "likely slip: your formula is the contribution of the first use of a only" in result.stdout


def test_a_claim_of_the_wrong_shape_on_a_tensor_program_is_wrong(runner, cli, samples) -> None:
    result = run(runner, cli, str(samples / "regression_rows.ad"), "--claim", "dL/dW = 2")
    assert result.exit_code == 1
    assert "the shapes differ: it has shape [], and dL/dW has the shape of W, [2, 1]" in result.stdout
    assert "Traceback" not in result.stderr


def test_csv_without_claims_is_a_usage_error(runner, cli) -> None:
    result = run(runner, cli, "y = 2*x", "--set", "x=1", "--format", "csv")
    assert result.exit_code == 2


def test_set_values_are_used(runner, cli) -> None:
    # y = log(x): d/dx = 1/x.  The claim is right only at x = 3, the given value: still wrong.
    result = run(runner, cli, "y = log(x)", "--set", "x=3", "--claim", "dy/dx = 1/3")
    assert result.exit_code == 1


HEAD = r"\frac{\partial f}{\partial x} = "


@pytest.mark.parametrize(("body", "message", "column"), [
    (r"\frac{6", "this '{' is never closed: add '}' where its group ends", len(HEAD) + 6),
    (r"\frac", r"'\frac' needs two arguments", len(HEAD) + 1),
    (r"\frac{6}", r"'\frac' needs two arguments", len(HEAD) + 1),
    (r"\frac{6}{", "this '{' is never closed: add '}' where its group ends", len(HEAD) + 9),
    (r"6 x + y^", "'^' needs an exponent", len(HEAD) + 8),
    (r"\sqrt", r"'\sqrt' needs an argument", len(HEAD) + 1),
    (r"\sqrt[3{x}", "this '[' is never closed: add ']' where its group ends", len(HEAD) + 6),
    ("6 x + y\\", "a backslash with no command after it", len(HEAD) + 8),
])
def test_malformed_latex_is_located_on_the_command_line_and_in_a_file(runner, cli, samples, tmp_path, body,
                                                                      message, column) -> None:
    program = str(samples / "quadratic.ad")
    result = run(runner, cli, program, "--claim-latex", HEAD + body)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"<claim-latex>:1:{column}: error: {message}\n")
    assert "Traceback" not in result.stderr
    claims = tmp_path / "claims.tex"
    claims.write_text("\\begin{aligned}\n" + HEAD + "6 x + y \\\\\n" + HEAD + body + "\n\\end{aligned}\n")
    result = run(runner, cli, program, "--claims", str(claims))
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"{claims}:3:{column}: error: {message}\n")


def test_a_root_with_an_index_is_read_as_a_power(runner, cli) -> None:
    # f = x**3, df/dx = 3*x**2 = 3*(x**4)**(1/2) for every x; x**4 >= 0, so the root is defined.
    result = run(runner, cli, "-e", "x = 2\nf = x**3", "--claim-latex", HEAD + r"3 \sqrt[2]{x^{4}}",
                 "--format", "json")
    assert result.exit_code == 0, result.output
    (claim,) = json.loads(result.stdout)["claims"]
    assert claim["verdict"] in ("proved", "agrees")


def test_latex_nested_deep_is_read_without_recursion(runner, cli, samples) -> None:
    # sqrt(sqrt(...sqrt(x))) is 0 at x = 0, where df/dx = 6x + y is y (1 at the simplest point).
    for many in (1000, 20_000):
        result = run(runner, cli, str(samples / "quadratic.ad"), "--claim-latex", HEAD + r"\sqrt" * many + "{x}",
                     "--format", "json")
        assert result.exit_code == 1, result.output[-300:]
        (claim,) = json.loads(result.stdout)["claims"]
        assert claim["verdict"] == "wrong"
    deep = 20_000
    result = run(runner, cli, str(samples / "quadratic.ad"), "--claim-latex",
                 HEAD + "{" * deep + "6 x + y" + "}" * deep)
    assert result.exit_code == 0, result.output[-300:]


@pytest.mark.parametrize("operator", ["+", "*"])
def test_a_claim_of_200000_terms_or_factors_is_refused_in_place(runner, cli, samples, tmp_path, operator) -> None:
    # Exit 2, as for any claim that cannot be judged as written: the claim is to be changed.
    claims = tmp_path / "claims.txt"
    claims.write_text("df/dx = 6*x + y\ndf/dy = " + operator.join(["x"] * 200_000) + "\n")
    result = run(runner, cli, str(samples / "quadratic.ad"), "--claims", str(claims))
    assert result.exit_code == 2, result.output[-500:]
    assert result.stderr.startswith(f"{claims}:2:9: error: this claim is too large to check: with the program and "
                                    "its derivative it takes more than 200,000 operations\n")
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_claims_from_standard_input(runner, cli, samples) -> None:
    # f = 3x^2 + xy + 5y^2: df/dx = 6x + y, proved; '-' is stdin, as everywhere in the CLI.
    result = run(runner, cli, str(samples / "quadratic.ad"), "--claims", "-", input="df/dx = 6*x + y\n")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == "1 claim: 1 proved"
    result = run(runner, cli, str(samples / "quadratic.ad"), "--claims", "-", input="df/dx = 6*x+(y\n")
    assert result.exit_code == 2
    assert result.stderr.startswith("<stdin>:1:15: error:")


@pytest.mark.parametrize("program", [["-"], ["-f", "-"], [], ["QUADRATIC", "--values", "-"]])
def test_claims_and_the_program_or_values_cannot_share_standard_input(runner, cli, samples, program) -> None:
    args = [str(samples / "quadratic.ad") if arg == "QUADRATIC" else arg for arg in program]
    result = run(runner, cli, *args, "--claims", "-", input="df/dx = 6*x + y\n")
    assert result.exit_code == 2
    assert "standard input can carry one of the program, the --values and the --claims" in result.stderr


def test_the_table_never_cuts_a_number(runner, cli, samples) -> None:
    # The post's 2/N with its 2 forgotten: the claim is half the gradient.  (2/8) Xᵀ(0 − Y)[0, 0]
    # has 16 significant digits; the table shows them whole, with no ellipsis anywhere.
    result = run(runner, cli, str(samples / "regression_matrix.ad"), "--claim",
                 "dL/dW = transpose(X) @ (P - Y) / 8", "--format", "table", "--no-color")
    assert result.exit_code == 1
    assert "…" not in result.stdout
    plain = run(runner, cli, str(samples / "regression_matrix.ad"), "--claim",
                "dL/dW = transpose(X) @ (P - Y) / 8", "--format", "json")
    example = json.loads(plain.stdout)["claims"][0]["counterexample"]
    for number in (example["claimed"], example["correct"], example["difference"]):
        assert repr(number) in result.stdout


@pytest.mark.parametrize("body", [r"\frac12 12x + y", r"3x + \frac{1}{2}y + \frac62 x + \frac12 y", r"\frac{12}2x + \frac22 y"])
def test_an_unbraced_argument_is_one_digit_as_in_tex(runner, cli, samples, body) -> None:
    # TeX reads \frac12 as \frac{1}{2}, so each body is 6x + y (quadratic.ad's df/dx), written
    # the short way; read as \frac{12}{...} it would be judged wrong.
    result = run(runner, cli, str(samples / "quadratic.ad"), "--claim-latex", HEAD + body, "--format", "json")
    assert result.exit_code == 0, result.output
    (claim,) = json.loads(result.stdout)["claims"]
    assert claim["verdict"] == "proved"


@pytest.mark.parametrize(("body", "message", "column"), [
    # TeX reads x^10 as x^{1}0 and \frac123 as \frac{1}{2}3: more digits right after a
    # one-digit argument are refused, not read either way.
    (r"6 x + y^10", "'^10' is ambiguous: LaTeX takes one digit, 1, as the exponent and 0 after it",
     len(HEAD) + 8),
    (r"\frac123 x", r"'\frac123' is ambiguous: LaTeX takes one digit, 2, as the denominator and 3 after it",
     len(HEAD) + 1),
    (r"\sqrt36 x", r"'\sqrt36' is ambiguous: LaTeX takes one digit, 3, as the argument and 6 after it",
     len(HEAD) + 1),
    (r"6 x + y^2.5", "'^2.5' is ambiguous: LaTeX takes one digit, 2, as the exponent and .5 after it",
     len(HEAD) + 8),
    # An empty group is refused where an argument is needed, with no ')' the user never wrote.
    (r"6 x + y^{}", "'^' needs an exponent", len(HEAD) + 8),
    (r"\frac{}{2} x", r"'\frac' needs two arguments", len(HEAD) + 1),
    (r"\frac{6x}{ } + y", r"'\frac' needs two arguments", len(HEAD) + 1),
    (r"\sqrt{} x", r"'\sqrt' needs an argument", len(HEAD) + 1),
])
def test_ambiguous_or_empty_arguments_are_located(runner, cli, samples, body, message, column) -> None:
    result = run(runner, cli, str(samples / "quadratic.ad"), "--claim-latex", HEAD + body)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"<claim-latex>:1:{column}: error: {message}"), result.stderr
    assert "')'" not in result.stderr


def test_an_empty_group_is_nothing(runner, cli, samples) -> None:
    # In TeX {} is an empty group and adds nothing: {}6x + y{} is 6x + y.
    result = run(runner, cli, str(samples / "quadratic.ad"), "--claim-latex", HEAD + "{}6x + y{}",
                 "--format", "json")
    assert result.exit_code == 0, result.output
    (claim,) = json.loads(result.stdout)["claims"]
    assert claim["verdict"] == "proved"


def test_a_definition_may_not_take_an_inputs_name(runner, cli, samples, tmp_path) -> None:
    # 'f = 2' above 'dL/dd = f' once judged the claim wrong, shown as "dL/dd = f: WRONG ... the
    # derivative is dL/dd = f": the definition hid the input f = -2 without a word.  (An
    # intermediate restated, as diff --format program writes it, stays allowed.)
    claims = tmp_path / "claims.txt"
    claims.write_text("f = 2\ndL/dd = f\n")
    result = run(runner, cli, str(samples / "karpathy.ad"), "--claims", str(claims))
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"{claims}:1:1: error: 'f' is an input of the program")


@pytest.mark.parametrize(("body", "written"), [
    (r"\frac{2}{8} X^\top (P - Y)", r"\top"),
    (r"\frac{2}{8} X^{\intercal} (P - Y)", r"\intercal"),
    (r"\frac{\partial L}{\partial P} \odot 1", r"\odot"),
])
def test_matrix_latex_as_diff_writes_it_is_refused_with_the_way_to_write_it(runner, cli, samples, body,
                                                                            written) -> None:
    # diff --format latex writes a tensor program's derivatives with X^\top, \odot and side-by-side
    # matrix products; --claim-latex read \top as a variable 'top' and said it did not exist.
    head = r"\frac{\partial L}{\partial W} = "
    result = run(runner, cli, str(samples / "regression_matrix.ad"), "--claim-latex", head + body)
    assert result.exit_code == 2, result.output
    column = len(head) + body.index(written) + 1
    assert result.stderr.startswith(f"<claim-latex>:1:{column}: error: '{written}' is matrix LaTeX"), result.stderr
    assert "--claim" in result.stderr and "transpose(X) @" in result.stderr


def test_a_given_point_at_a_kink_is_said_not_compared_with_both_values_there(runner, cli) -> None:
    # x = 0 is relu's kink: the claim (1 + sign(0))/2 * 2 = 1 there, and reverse mode takes relu'(0) = 0,
    # so 0 * y = 0 (by hand). The claim agrees elsewhere; it was never compared at the given point.
    result = run(runner, cli, "-e", "x = 0; y = 2; L = relu(x) * y", "--claim", "dL/dx = (1 + sign(x))/2 * y")
    assert result.exit_code == 0, result.output
    assert "the given values" not in result.stdout.splitlines()[1]
    assert ("not compared at the given values (x = 0, y = 2): they are at a kink of relu, where dL/dx has no "
            "value; there the claim gives 1 and reverse mode (autodiff eval) 0") in result.stdout
    document = run(runner, cli, "-e", "x = 0; y = 2; L = relu(x) * y", "--claim", "dL/dx = (1 + sign(x))/2 * y",
                   "--format", "json")
    (claim,) = json.loads(document.stdout)["claims"]
    assert "the given values" not in claim["domain"] and "kink of relu" in claim["not_compared"]


def test_a_scalar_claim_with_a_comparison_where_or_clip_is_judged_by_its_values(runner, cli) -> None:
    # L = maximum(x, y): dL/dx is 1 where x > y, else 0 (by hand); at x = 1, y = 2 it is 0.
    program = "x = 1; y = 2; L = maximum(x, y)"
    result = run(runner, cli, "-e", program, "--claim", "dL/dx = x > y", "--claim", "dL/dy = where(y > x, 1, 0)")
    assert result.exit_code == 0, result.output
    assert "judged by value: the symbolic algebra does not read >" in result.stdout
    assert "does not read >, where" in result.stdout and "matrix form" not in result.output
    result = run(runner, cli, "-e", program, "--claim", "dL/dx = x < y")
    assert result.exit_code == 1
    assert "at x = 1, y = 2: the claim gives 1, the derivative 0 (difference 1)" in result.stdout
    result = run(runner, cli, "-e", program, "--claim", "dL/dx = clip((x - y) * 1000000, 0, 1)", "--format", "json")
    (claim,) = json.loads(result.stdout)["claims"]
    assert claim["verdict"] == "agrees" and claim["points"] == 8
