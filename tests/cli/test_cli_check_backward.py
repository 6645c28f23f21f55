"""check --claims FILE of gradient lines on a tensor program: the backward pass line by line.

What each line's verdict is, and why, is tested in tests/analysis/test_backward_claims.py against
HIPS autograd; here: the command's exit statuses, formats, located errors and the 80-column table.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from autodiff_cli.cli import main

DERIVATIONS = Path(__file__).resolve().parents[2] / "samples" / "derivations"
NINJA = str(DERIVATIONS / "ninja.ad")
RIGHT = str(DERIVATIONS / "ninja.txt")
SEEDED = str(DERIVATIONS / "ninja_wrong.txt")


def check(runner, *arguments: str):
    return runner.invoke(main, ["check", *arguments], catch_exceptions=False)


def test_the_right_backward_pass_exits_0_and_says_every_line_agrees(runner) -> None:
    # Before the backward pass, a tensor program refused 'dlogprobs = ...' as a definition (status 2).
    result = check(runner, NINJA, "--claims", RIGHT)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 25
    assert all(line.split(": ")[-1].startswith("agrees") for line in lines[:-1])
    assert lines[-1] == ("24 lines, each judged with the true gradients it uses (sampled at 8 points, not proved): "
                         "24 agree; in your own chain: 24 agree")


def test_the_seeded_slips_exit_1_each_named_on_its_line(runner) -> None:
    result = check(runner, NINJA, "--claims", SEEDED, "--format", "json")
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert document["verdict"] == "wrong" and document["points"] == 8
    wrong = {line["line"]: line["true_inputs"]["slip"]["kind"] for line in document["lines"]
             if line["true_inputs"]["verdict"] == "wrong"}
    assert wrong == {7: "missing contribution", 10: "transposed product", 12: "missing sum",
                     13: "local derivative", 20: "factor", 23: "sign"}
    dlogits = next(line for line in document["lines"] if line["gradient"] == "dlogits")
    assert dlogits["true_inputs"]["verdict"] == "agrees"
    assert dlogits["your_chain"] == {**dlogits["your_chain"], "verdict": "wrong", "from_lines": [7]}


def test_csv_has_one_row_a_line(runner) -> None:
    result = check(runner, NINJA, "--claims", SEEDED, "--format", "csv")
    assert result.exit_code == 1
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == 23
    sign = next(row for row in rows if row["gradient"] == "dbnmeani")
    assert (sign["verdict"], sign["slip"], sign["where"]) == ("wrong", "sign", f"{SEEDED}:23")
    assert sign["chain_verdict"] == "wrong" and sign["chain_from"] == "21"


def test_the_table_fits_80_columns(runner) -> None:
    result = check(runner, NINJA, "--claims", SEEDED, "--format", "table", "--precision", "4")
    assert result.exit_code == 1
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    assert "WRONG: transposed" in result.stdout and "likely slip: a transposed product" in result.stdout


def test_plain_text_shows_the_entries_the_slip_and_the_chain(runner) -> None:
    result = check(runner, NINJA, "--claims", SEEDED, "--precision", "4")
    text = result.stdout
    assert f"{SEEDED}:10: dh = dlogits @ W2: WRONG\n  at the given values, the first entry that differs is dh[" in text
    assert "  likely slip: a transposed product: dlogits @ W2 (column 14) should be dlogits @ transpose(W2)\n" \
           "  in your chain: WRONG, its own slip, and from line 9\n" in text
    assert f"{SEEDED}:9: dlogits = counts * dcounts: agrees\n  in your chain: WRONG, from line 7\n" in text


def test_no_finite_gradient_is_inconclusive_status_3(runner, tmp_path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_text("dx = x * 0\n")
    result = check(runner, "-e", "x = [1, 2]\nL = sum(sqrt(x * 0))", "--claims", str(lines))
    assert result.exit_code == 3
    assert "cannot be judged" in result.stdout


@pytest.mark.parametrize(("text", "expected"), [
    ("dlogprobs = -Y / 6\ndprobs = dlogprobs / prob\n",
     ":2:22: error: 'prob' is not a variable of the program (nor defined above)\n"),
    ("dlogprobs = -Y / 6\ndprobs = (dlogprobs / probs\n", ":2:"),
    ("dcounts += counts\n", ":1:9: error: 'dcounts +=' adds to a gradient that no line above gives\n"),
    ("dlogprobs = -Y / 6\ndW2 = dlogprobs @ W1\n", ":2:17: error: dW2: dlogprobs @ W1: [6, 4] @ [3, 4]"),
])
def test_a_line_that_cannot_be_read_or_computed_is_an_error_at_its_place_status_2(runner, tmp_path, text,
                                                                                   expected) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_text(text)
    result = check(runner, NINJA, "--claims", str(lines))
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.startswith(f"{lines}{expected}")
    assert "hint:" in result.stderr


def test_a_backward_pass_and_a_claim_in_one_run_is_a_usage_error(runner) -> None:
    result = check(runner, NINJA, "--claims", RIGHT, "--claim", "dloss/dW2 = W2")
    assert result.exit_code == 2 and "is checked on its own" in result.stderr


def test_a_scalar_program_takes_a_backward_pass_too(runner, tmp_path) -> None:
    # Karpathy's expression: L = d*f, d = e + c, e = a*b: dL/dd = f = -2, dL/dc = dL/dd, dL/da = b*dL/de.
    lines = tmp_path / "lines.txt"
    lines.write_text("dd = f\ndf = d\nde = dd\ndc = dd\nda = b * de\ndb = a * de\n")
    result = check(runner, str(DERIVATIONS.parent / "karpathy.ad"), "--claims", str(lines))
    assert result.exit_code == 0, result.output
    lines.write_text("dd = f\ndc = d\n")
    result = check(runner, str(DERIVATIONS.parent / "karpathy.ad"), "--claims", str(lines))
    assert result.exit_code == 1
    assert f"{lines}:2: dc = d: WRONG\n  at the given values: the line gives 4, the gradient -2 (difference 6)\n" \
        in result.stdout


def test_a_latex_claims_file_with_a_definition_is_still_read_as_latex(runner, tmp_path) -> None:
    # '\\frac{...}' heads are claims, and 't = ...' a definition, as before the backward pass.
    claims = tmp_path / "claims.tex"
    claims.write_text("t = 2 \\cdot x\n\\frac{\\partial f}{\\partial x} = 3 t + y\n")
    result = check(runner, str(DERIVATIONS.parent / "quadratic.ad"), "--claims", str(claims))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("df/dx = 3*t+y: proved\n")


def test_a_line_of_another_shape_that_no_slip_explains_is_wrong_and_the_run_goes_on(runner, tmp_path) -> None:
    # W2[0] is a row, [4]; dW2 has W2's shape, [4, 4], and no sum or transposition turns one into the other.
    # It stopped the run with exit 2; it is a WRONG line like any other, and the lines after it are judged.
    lines = tmp_path / "lines.txt"
    lines.write_text("dlogprobs = -Y / 6\ndW2 = W2[0]\ndprobs = (1 / probs) * dlogprobs\n")
    result = check(runner, NINJA, "--claims", str(lines))
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines()[1:3] == [
        f"{lines}:2: dW2 = W2[0]: WRONG", "  likely slip: the line has shape [4], and dW2 has W2's shape [4, 4]"]
    assert f"{lines}:3: dprobs = (1 / probs) * dlogprobs: agrees" in result.stdout


def test_a_sum_over_the_wrong_axis_is_wrong_named_and_the_run_goes_on(runner, tmp_path) -> None:
    # makemore's db1 is the sum of dhprebn over the batch, axis 0 ([32, 64] -> [64]); over axis 1 it
    # has shape [32]. Every other line of the sample is right (they agree with autograd: test_samples).
    text = (Path(__file__).resolve().parents[2] / "samples" / "makemore" / "ninja.txt").read_text()
    lines = tmp_path / "lines.txt"
    lines.write_text(text.replace("db1 = sum(dhprebn, 0)", "db1 = sum(dhprebn, 1)"))
    makemore = str(Path(__file__).resolve().parents[2] / "samples" / "makemore" / "ninja.ad")
    result = check(runner, makemore, "--claims", str(lines))
    assert result.exit_code == 1, result.output
    wrong = [line for line in result.stdout.splitlines() if line.startswith(str(lines)) and ": WRONG" in line]
    assert wrong == [f"{lines}:31: db1 = sum(dhprebn, 1): WRONG"]
    assert ("likely slip: summed over the wrong axis: the line has shape [32], and db1 has b1's shape [64]; "
            "sum(..., 1) (column 7) should be over axis 0, sum(..., 0)") in result.stdout
    assert result.stdout.splitlines()[-1].startswith("30 lines") and "29 agree, 1 wrong" in result.stdout


def test_a_backward_pass_of_a_tensor_output_is_a_usage_error(runner, tmp_path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_text("dx = x * 0 + 2\n")
    result = check(runner, "-e", "x = [1, 2]\ny = x * 2", "--claims", str(lines))
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith("<expr>:2:1: error: 'y' has shape [2]: a backward pass starts from a number")
    assert "hint: name the loss with --output, or end the program with sum(y) or mean(y)" in result.stderr
