"""A manual backward pass judged line by line (analysis.backward_claims).

The network is samples/derivations/ninja.ad: the backprop-ninja exercise's linear layer, batch
normalisation (variance with n - 1), tanh, a second layer and softmax cross-entropy written out as
counts / sum(counts).  Expected gradients come from HIPS autograd, differentiating the same
forward pass written in autograd.numpy (each intermediate's gradient by overriding that
intermediate), never from the tool's output.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import autograd
import autograd.numpy as anp
import numpy as np
import pytest

from autodiff_cli.analysis.backward_claims import UnjudgedLine, check_backward, read_backward
from autodiff_cli.analysis.claim_text import has_claim_heads, is_backward_pass
from autodiff_cli.analysis.claims import AGREES, INCONCLUSIVE, PROVED, WRONG
from autodiff_cli.errors import InputError, ParseError, Source
from autodiff_cli.language.compiler import parse

REPO = Path(__file__).resolve().parents[2]
NINJA = REPO / "samples" / "derivations" / "ninja.ad"
RIGHT = REPO / "samples" / "derivations" / "ninja.txt"
SEEDED = REPO / "samples" / "derivations" / "ninja_wrong.txt"


def inputs() -> dict[str, np.ndarray]:
    """The input values written in ninja.ad, read as JSON."""
    text = "\n".join(line for line in NINJA.read_text().splitlines() if not line.startswith("#"))
    found = {}
    for name, literal in re.findall(r"^(\w+) = (\[.*?\])\n(?=\w+ = |\n)", text, re.DOTALL | re.MULTILINE):
        found[name] = np.array(json.loads(literal), dtype=float)
    return found


def forward(values: dict, override: dict | None = None) -> dict:
    """Every variable of ninja.ad in autograd.numpy; ``override`` replaces an intermediate."""
    v = dict(values)
    override = override or {}

    def let(name, compute):
        v[name] = override[name] if name in override else compute()

    let("hprebn", lambda: v["X"] @ v["W1"] + v["b1"])
    let("bnmeani", lambda: anp.mean(v["hprebn"], 0))
    let("bndiff", lambda: v["hprebn"] - v["bnmeani"])
    let("bndiff2", lambda: v["bndiff"] ** 2)
    let("bnvar", lambda: anp.sum(v["bndiff2"], 0) / 5)
    let("bnvar_inv", lambda: (v["bnvar"] + 0.00001) ** -0.5)
    let("bnraw", lambda: v["bndiff"] * v["bnvar_inv"])
    let("hpreact", lambda: v["bngain"] * v["bnraw"] + v["bnbias"])
    let("h", lambda: anp.tanh(v["hpreact"]))
    let("logits", lambda: v["h"] @ v["W2"] + v["b2"])
    let("counts", lambda: anp.exp(v["logits"]))
    let("counts_sum", lambda: anp.sum(v["counts"], 1))
    let("counts_sum_inv", lambda: v["counts_sum"] ** -1)
    let("probs", lambda: v["counts"] * v["counts_sum_inv"][:, None])
    let("logprobs", lambda: anp.log(v["probs"]))
    let("loss", lambda: -anp.sum(v["Y"] * v["logprobs"]) / 6)
    return v


def gradient(name: str) -> np.ndarray:
    """dloss/dname by autograd: the loss as a function of that variable alone."""
    values = forward(inputs())
    return autograd.grad(lambda t: forward(inputs(), {name: t})["loss"] if name not in inputs()
                         else forward({**inputs(), name: t})["loss"])(values[name])


def judge(program_path: Path, text: str, name: str = "claims.txt", values: dict | None = None):
    program = parse(program_path.read_text() if isinstance(program_path, Path) else program_path, "ninja.ad")
    lines = read_backward(Source(name, text), program, program.result)
    return check_backward(program, values or {}, lines, program.result)


def by_gradient(report) -> dict:
    return {(r.line.gradient, r.line.operator): r for r in report.results}


def test_the_right_backward_pass_agrees_line_by_line_in_both_readings() -> None:
    report = judge(NINJA, RIGHT.read_text())
    assert len(report.results) == 24
    assert {r.given.verdict for r in report.results} == {AGREES}
    assert {r.chain.verdict for r in report.results} == {AGREES}
    assert report.verdict == AGREES


def test_the_right_lines_formulas_give_autograds_gradients() -> None:
    # The right file's formulas, evaluated by NumPy on autograd's upstream gradients, are autograd's
    # own gradients: the sample file is right, independently of the tool.
    v = forward(inputs())
    dlogits = gradient("logits")
    np.testing.assert_allclose(dlogits @ v["W2"].T, gradient("h"), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(v["h"].T @ dlogits, gradient("W2"), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(dlogits.sum(0), gradient("b2"), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose((1 - v["h"] ** 2) * gradient("h"), gradient("hpreact"), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(v["bndiff2"] * 0 + gradient("bnvar") / 5, gradient("bndiff2"), rtol=1e-12)
    np.testing.assert_allclose(-gradient("bndiff").sum(0), gradient("bnmeani"), rtol=1e-9, atol=1e-15)


SLIPS = {  # line of ninja_wrong.txt -> (gradient, slip kind)
    7: ("dcounts", "missing contribution"),
    10: ("dh", "transposed product"),
    12: ("db2", "missing sum"),
    13: ("dhpreact", "local derivative"),
    20: ("dbndiff2", "factor"),
    23: ("dbnmeani", "sign"),
}


def test_the_six_seeded_slips_are_found_each_on_its_own_line_and_named() -> None:
    report = judge(NINJA, SEEDED.read_text())
    wrong = {r.line.line: (r.line.gradient, r.given.slip.kind) for r in report.results if r.given.verdict == WRONG}
    assert wrong == SLIPS
    others = [r for r in report.results if r.line.line not in SLIPS]
    assert len(others) == 17 and {r.given.verdict for r in others} == {AGREES}
    assert report.verdict == WRONG


def test_each_slip_message_says_what_to_change() -> None:
    results = {r.line.line: r.given.slip.message for r in judge(NINJA, SEEDED.read_text()).results
               if r.given.slip is not None}
    assert "counts is also used at line 46 (counts_sum = sum(counts, 1))" in results[7]
    assert "dlogits @ W2 (column 14) should be dlogits @ transpose(W2)" in results[10]
    assert "broadcast axis 0" in results[12] and "[6, 4]" in results[12] and "sum(..., 0)" in results[12]
    assert results[13].startswith("the local derivative of tanh(hpreact), at line 43 (h = tanh(hpreact)), "
                                  "written as 1 - hpreact**2 instead of 1 - tanh(hpreact)**2")
    assert "factor of 5/6" in results[20] and "n = 6 where n - 1 = 5 belongs" in results[20]
    assert "the sign is flipped" in results[23]


def test_a_wrong_lines_entries_are_autograds_first_and_largest_differences() -> None:
    # dh = dlogits @ W2 with the true dlogits: NumPy's product against autograd's dloss/dh.
    v = forward(inputs())
    claimed = gradient("logits") @ v["W2"]
    truth = gradient("h")
    differs = ~np.isclose(claimed, truth, rtol=1e-8, atol=1e-10)
    first = np.unravel_index(np.argmax(differs), truth.shape)
    worst = np.unravel_index(np.argmax(np.abs(claimed - truth)), truth.shape)
    (result,) = [r for r in judge(NINJA, SEEDED.read_text()).results if r.line.gradient == "dh"]
    assert result.given.where == "at the given values"
    assert result.given.first.entry == f"dh[{first[0]}, {first[1]}]"
    assert result.given.largest.entry == f"dh[{worst[0]}, {worst[1]}]"
    assert result.given.largest.claimed == pytest.approx(claimed[worst], rel=1e-12)
    assert result.given.largest.correct == pytest.approx(truth[worst], rel=1e-12)


def test_a_slip_does_not_spill_into_later_lines_but_the_chain_shows_where_it_went() -> None:
    report = by_gradient(judge(NINJA, SEEDED.read_text()))
    dlogits = report[("dlogits", "=")]
    assert dlogits.given.verdict == AGREES  # judged with the true dcounts
    assert dlogits.chain.verdict == WRONG and dlogits.chain.causes == [7]  # the person's dcounts lacks a use
    dw2 = report[("dW2", "=")]
    assert dw2.given.verdict == AGREES and dw2.chain.causes == [9]
    assert report[("dlogprobs", "=")].chain.verdict == AGREES


def test_the_missing_contributions_size_is_autograds_other_use() -> None:
    # dcounts given only through probs: the largest difference is the share through counts_sum,
    # d/dcounts of sum(counts, 1) times dloss/dcounts_sum, repeated along each row.
    share = np.repeat(gradient("counts_sum")[:, None], 4, axis=1)
    (result,) = [r for r in judge(NINJA, SEEDED.read_text()).results if r.line.gradient == "dcounts"]
    worst = np.unravel_index(np.argmax(np.abs(share)), share.shape)
    assert result.given.largest.entry == f"dcounts[{worst[0]}, {worst[1]}]"
    assert result.given.largest.difference == pytest.approx(-share[worst], rel=1e-10)


# --- the same judge on a second network: log_softmax and mean, slips seeded one at a time ---------

MLP = """X = [[0.5, -1.2], [1.5, 0.3], [-0.7, 0.8], [0.1, -0.4], [2.0, 1.1]]
Y = [[1, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0], [0, 1, 0]]
W1 = [[0.3, -0.8, 0.5], [1.1, 0.2, -0.6]]
b1 = [0.1, -0.2, 0.05]
W2 = [[0.7, -0.3, 0.2], [-1.0, 0.4, 0.9], [0.25, 0.6, -0.5]]
b2 = [0.0, 0.1, -0.1]
a = X @ W1 + b1
h = tanh(a)
z = h @ W2 + b2
logp = log_softmax(z)
nll = -sum(Y * logp, 1)
loss = mean(nll)
"""
MLP_LINES = """dnll = nll * 0 + 1 / 5
dlogp = -transpose(transpose(Y) * dnll)
dz = dlogp - softmax(z) * transpose(transpose(z * 0 + 1) * sum(dlogp, 1))
dW2 = transpose(h) @ dz
db2 = sum(dz, 0)
dh = dz @ transpose(W2)
da = (1 - h**2) * dh
dW1 = transpose(X) @ da
db1 = sum(da, 0)
"""


def mlp_gradients() -> dict[str, np.ndarray]:
    """dloss/d every variable of MLP, by autograd."""
    text = MLP.split("a = ")[0]
    values = {name: np.array(json.loads(value), dtype=float) for name, value in re.findall(r"(\w+) = (.*)", text)}

    def run(v, override):
        v = dict(v)
        for name, compute in (("a", lambda: v["X"] @ v["W1"] + v["b1"]), ("h", lambda: anp.tanh(v["a"])),
                              ("z", lambda: v["h"] @ v["W2"] + v["b2"]),
                              ("logp", lambda: v["z"] - anp.log(anp.sum(anp.exp(v["z"]), 1, keepdims=True))),
                              ("nll", lambda: -anp.sum(v["Y"] * v["logp"], 1)), ("loss", lambda: anp.mean(v["nll"]))):
            v[name] = override[name] if name in override else compute()
        return v

    full = run(values, {})
    found = {}
    for name in ("a", "h", "z", "logp", "nll"):
        found[name] = autograd.grad(lambda t, n=name: run(values, {n: t})["loss"])(full[name])
    for name in ("W1", "b1", "W2", "b2"):
        found[name] = autograd.grad(lambda t, n=name: run({**values, n: t}, {})["loss"])(values[name])
    return found


def test_the_mlp_backward_pass_is_autograds() -> None:
    report = judge(MLP, MLP_LINES)
    assert {r.given.verdict for r in report.results} == {AGREES}
    # and log_softmax's line, in NumPy on autograd's dlogp, gives autograd's dz
    g, v = mlp_gradients(), mlp_values()
    softmax = np.exp(v["z"]) / np.exp(v["z"]).sum(1, keepdims=True)
    np.testing.assert_allclose(g["logp"] - softmax * g["logp"].sum(1, keepdims=True), g["z"], rtol=1e-12, atol=1e-15)


def mlp_values() -> dict[str, np.ndarray]:
    text = MLP.split("a = ")[0]
    v = {name: np.array(json.loads(value), dtype=float) for name, value in re.findall(r"(\w+) = (.*)", text)}
    v["a"] = v["X"] @ v["W1"] + v["b1"]
    v["h"] = np.tanh(v["a"])
    v["z"] = v["h"] @ v["W2"] + v["b2"]
    return v


@pytest.mark.parametrize(("line", "wrong", "kind"), [
    ("db2 = sum(dz, 0)", "db2 = dz", "missing sum"),
    ("dh = dz @ transpose(W2)", "dh = dz @ W2", "transposed product"),  # W2 is square: a shape cannot tell
    ("dW2 = transpose(h) @ dz", "dW2 = transpose(dz) @ h", "transposed"),  # square: the transpose of dW2
    ("da = (1 - h**2) * dh", "da = (1 - a**2) * dh", "local derivative"),
    ("da = (1 - h**2) * dh", "da = dh", "local derivative"),
    ("dnll = nll * 0 + 1 / 5", "dnll = nll * 0 + 1 / 4", "factor"),
    ("dW1 = transpose(X) @ da", "dW1 = -transpose(X) @ da", "sign"),
])
def test_one_seeded_slip_is_found_on_its_line_and_the_others_agree(line, wrong, kind) -> None:
    assert line in MLP_LINES
    report = judge(MLP, MLP_LINES.replace(line, wrong))
    slipped = [r for r in report.results if r.given.verdict != AGREES]
    assert [(r.line.written, r.given.verdict, r.given.slip.kind) for r in slipped] == [(wrong, WRONG, kind)]


def test_a_transposed_square_result_is_compared_with_the_transposed_gradient() -> None:
    # dW2 = transpose(dz) @ h is exactly transpose(transpose(h) @ dz): autograd's dW2, transposed.
    g, v = mlp_gradients(), mlp_values()
    np.testing.assert_allclose(np.transpose(g["z"]) @ v["h"], g["W2"].T, rtol=1e-12)
    report = judge(MLP, MLP_LINES.replace("dW2 = transpose(h) @ dz", "dW2 = transpose(dz) @ h"))
    (result,) = [r for r in report.results if r.line.gradient == "dW2"]
    assert "transpose" in result.given.slip.message


def test_a_missing_mean_factor_names_one_over_n() -> None:
    report = judge(MLP, MLP_LINES.replace("dnll = nll * 0 + 1 / 5", "dnll = nll * 0 + 1"))
    (result,) = [r for r in report.results if r.line.gradient == "dnll"]
    assert result.given.slip.kind == "factor" and "a 1/n missing, n = 5" in result.given.slip.message


def test_a_plus_equals_line_may_be_broadcast_as_numpy_adds_it() -> None:
    text = "x = [[1, 2], [3, 4]]\nm = mean(x, 0)\nd = x - m\nL = sum(d * d)"
    lines = "dd = 2 * d\ndm = -sum(dd, 0)\ndx = dd\ndx += dm / 2\n"
    report = judge(text, lines)
    assert [r.given.verdict for r in report.results] == [AGREES] * 4
    assert report.results[2].covers.startswith("the contribution through line 3")


def test_a_gradient_line_undefined_where_the_gradient_is_defined_is_wrong() -> None:
    report = judge("x = [1, 2]\nL = sum(x * x)", "dx = 2 * x + log(x - 5)")
    (result,) = report.results
    assert result.given.verdict == WRONG and result.given.slip.kind == "undefined"


def test_no_finite_gradient_anywhere_cannot_be_judged() -> None:
    # d/dx sqrt(x*0) is infinite at every point: nothing to compare with.
    report = judge("x = [1, 2]\nL = sum(sqrt(x * 0))", "dx = x * 0")
    assert report.results[0].given.verdict == INCONCLUSIVE and report.verdict == INCONCLUSIVE


# --- reading -------------------------------------------------------------------------------------


def read(text: str, program: str = MLP):
    compiled = parse(program, "p.ad")
    return read_backward(Source("f.txt", text), compiled, compiled.result)


@pytest.mark.parametrize(("text", "kind", "line", "column", "message"), [
    ("dz = softmax(z) +\n", ParseError, 1, 18, ""),
    ("dq = 1\n", InputError, 1, 1, "'dq' names the gradient of 'q', which is not a variable of the program"),
    ("dz = 1\ndh = dzz @ W2\n", InputError, 2, 6, "'dzz' is not a variable of the program"),
    ("dh = dz @ W2\n", InputError, 1, 6, "'dz' is not a variable of the program (nor defined above)"),
    ("dz += 1\n", ParseError, 1, 4, "'dz +=' adds to a gradient that no line above gives"),
    ("dz = 1\ndz = 2\n", ParseError, 2, 4, "dz is given a second time with '='"),
    ("z = 1\n", ParseError, 1, 1, "expected a gradient line"),
    ("dq/dz = 1\n", InputError, 1, 2, "a backward pass is of the output, loss"),
])
def test_a_line_that_cannot_be_read_is_an_error_at_its_place(text, kind, line, column, message) -> None:
    with pytest.raises(kind) as caught:
        read(text)
    assert (caught.value.position.line, caught.value.position.column) == (line, column)
    assert message in caught.value.message


def test_a_gradient_used_before_its_line_says_to_give_it_first_not_a_near_name() -> None:
    # 'dz' is z's gradient, not a misspelling of z: the hint says where it must come from.
    with pytest.raises(InputError) as caught:
        read("dh = dz @ transpose(W2)\n")
    assert "'dz' is not a variable of the program (nor defined above)" in caught.value.message
    assert "did you mean" not in caught.value.hint
    assert "dz is the gradient of z" in caught.value.hint and "dz = ..." in caught.value.hint


CLASH = "x = [1.0, 2.0]\ndx = [3.0, 5.0]\nu = x * dx\nL = sum(u * u)\n"


def test_a_name_both_a_variable_and_a_gradient_above_is_refused_where_it_is_used() -> None:
    # After 'dL/dx = ...', 'dx' on a right-hand side could be the variable dx or x's gradient;
    # reading it either way silently would judge a right line wrong (or a wrong one right).
    with pytest.raises(ParseError) as caught:
        read("du = 2 * u\ndL/dx = du * dx\ndL/ddx = du * x * dx / [3, 5]\n", CLASH)
    assert "'dx' is ambiguous" in caught.value.message
    assert (caught.value.position.line, caught.value.position.column) == (3, 19)
    assert (caught.value.position.width) == 2


def test_a_program_variable_named_like_a_gradient_is_read_as_the_variable_until_that_gradient_is_given() -> None:
    # Right: dL/dx = 2u * dx (the variable dx), and dL/ddx = 2u * x.
    report = judge(CLASH, "du = 2 * u\ndL/ddx = du * x\ndL/dx = du * dx\n")
    assert [r.given.verdict for r in report.results] == [AGREES, AGREES, AGREES]


def test_a_product_that_fits_only_transposed_is_a_transposed_product() -> None:
    # X @ da is [5, 2] @ [5, 3]: it cannot be computed, and transpose(X) @ da is dW1.
    report = judge(MLP, MLP_LINES.replace("dW1 = transpose(X) @ da", "dW1 = X @ da"))
    (result,) = [r for r in report.results if r.given.verdict != AGREES]
    assert result.given.slip.kind == "transposed product"
    assert "X @ da (column 9) should be transpose(X) @ da" in result.given.slip.message


def test_a_line_whose_shapes_do_not_fit_is_an_error_at_its_operator() -> None:
    # X @ W2 is [5, 2] @ [3, 3]: no transposition of either makes it fit.
    with pytest.raises(UnjudgedLine) as caught:
        judge(MLP, MLP_LINES.replace("dW1 = transpose(X) @ da", "dW1 = X @ W2"))
    position = caught.value.position
    assert caught.value.source.name == "claims.txt"
    assert (position.line, position.column) == (8, 9)
    assert "the inner sizes" in caught.value.message


def test_the_exercises_spelling_is_a_backward_pass_and_dL_dW_claims_are_not() -> None:
    assert is_backward_pass("# a comment\ndprobs = (1/probs) * dlogprobs\n")
    assert is_backward_pass("dcounts += 1\n")
    assert not is_backward_pass("dL/dW = transpose(X) @ (P - Y)\n")
    assert has_claim_heads("t = 1\ndL/dw = t\n") and not has_claim_heads("dw = 1\n")


# --- shapes and uses ---------------------------------------------------------------------------

ROW_BIAS = """X = [[1, 2], [3, -1], [0.5, 0.5]]
W = [[0.2, -0.4], [0.7, 0.1]]
b = [[0.3, -0.2]]
z = X @ W + b
L = sum(tanh(z))
"""


def test_a_bias_kept_as_a_row_needs_its_sum_kept_as_a_row() -> None:
    # b is [1, 2]: dz is [3, 2], and db is its sum over the rows, kept [1, 2].
    report = judge(ROW_BIAS, "dz = 1 - tanh(z)**2\ndb = dz\n")
    (result,) = [r for r in report.results if r.line.gradient == "db"]
    assert result.given.verdict == WRONG and result.given.slip.kind == "missing sum"
    assert "sum(..., 0, keepdim)" in result.given.slip.message


def test_a_shape_right_only_by_broadcasting_is_named() -> None:
    # dz is 1 everywhere, [3, 2]; the line gives the number 1, which broadcasting would stretch.
    report = judge("X = [[1, 2], [3, -1], [0.5, 0.5]]\nz = X * 2\nL = sum(z)\n", "dz = 1\n")
    (result,) = report.results
    assert result.given.verdict == WRONG and result.given.slip.kind == "missing sum"
    assert "right only by broadcasting" in result.given.slip.message


THREE_USES = """x = [0.5, -1.5, 2.0]
a = x * x
b = exp(x)
c = 3 * x
L = sum(a + b + c)
"""


def test_a_gradient_given_in_parts_is_judged_use_by_use() -> None:
    # dL/dx = 2x + exp(x) + 3, one use a line, in any order.
    report = judge(THREE_USES, "dx = 3 + x * 0\ndx += exp(x)\ndx += 2 * x\n")
    assert [r.given.verdict for r in report.results] == [AGREES] * 3
    assert [r.covers for r in report.results] == [
        "the contribution through line 4 (c = ...)", "the contribution through line 3 (b = ...)",
        "the contribution through line 2 (a = ...)"]


def test_the_last_part_of_a_gradient_given_in_parts_misses_a_use() -> None:
    report = judge(THREE_USES, "dx = 3 + x * 0\ndx += exp(x)\n")
    first, last = report.results
    assert first.given.verdict == AGREES
    assert last.given.verdict == WRONG and last.given.slip.kind == "missing contribution"
    assert "also used at line 2 (a = x * x)" in last.given.slip.message
    # the largest difference is the missing 2x: at x = 2.0, 4
    assert last.given.largest.entry == "dx[2]" and last.given.largest.difference == pytest.approx(-4.0)


def test_a_formula_no_slip_explains_is_wrong_without_a_slip() -> None:
    report = judge(THREE_USES, "dx = 2 * x + exp(x) + 3 + x**3\n")
    (result,) = report.results
    assert result.given.verdict == WRONG and result.given.slip is None


TWO_LAYERS = """X = [[1, 2, 3], [0, -1, 2]]
W = [[0.1, 0.2], [0.3, -0.4], [0.5, 0.6]]
V = [[0.7, -0.2, 0.1], [0.3, 0.9, -0.5]]
a = X @ W
h = tanh(a)
z = h @ V
L = sum(z * z)
"""


def test_a_line_that_cannot_be_computed_in_the_chain_leaves_the_lines_after_it_unjudged_there() -> None:
    # dh = dz @ V is [2, 3] @ [2, 3]: a transposed product on its own (dz @ transpose(V)); in the
    # person's chain it has no value, so da and dW, right on their own, cannot be judged there.
    lines = "dz = 2 * z\ndh = dz @ V\nda = (1 - h**2) * dh\ndW = transpose(X) @ da\n"
    report = judge(TWO_LAYERS, lines)
    assert [r.given.verdict for r in report.results] == [AGREES, WRONG, AGREES, AGREES]
    assert report.results[1].given.slip.kind == "transposed product"
    assert [r.chain.verdict for r in report.results] == [AGREES, WRONG, INCONCLUSIVE, INCONCLUSIVE]
    assert [r.chain.causes for r in report.results[2:]] == [[2], [3]]
    assert report.verdict == WRONG


def test_a_scalar_programs_whole_gradient_line_is_proved_where_the_algebra_shows_it() -> None:
    # y = tanh(x): dy/dx = 1 - tanh(x)**2 = 1 - y**2, which the simplifier shows; the same number
    # written 4/(e^x + e^-x)**2 is equal at every point but not shown equal, so it only agrees.
    program = "x = 0.5\ny = tanh(x)\nL = 3 * y\n"
    report = judge(program, "dy = 3\ndx = (1 - y**2) * dy\n")
    assert [r.given.verdict for r in report.results] == [PROVED, PROVED]
    report = judge(program, "dy = 3\ndx = 4 / (exp(x) + exp(-x))**2 * dy\n")
    assert [r.given.verdict for r in report.results] == [PROVED, AGREES]


def test_a_gradient_given_in_parts_is_sampled_not_proved() -> None:
    report = judge("x = 0.5\na = x * x\nb = exp(x)\nL = a + b\n", "dx = 2 * x\ndx += exp(x)\n")
    assert [r.given.verdict for r in report.results] == [AGREES, AGREES]


def test_a_contribution_added_after_every_use_is_counted_is_an_extra_one() -> None:
    report = judge(THREE_USES, "dx = 2 * x + exp(x) + 3\ndx += exp(x)\n")
    first, extra = report.results
    assert first.given.verdict == AGREES
    assert extra.given.verdict == WRONG and extra.given.slip.kind == "extra contribution"
    assert extra.chain.verdict == WRONG  # the chain's dx is exp(x) too large


def test_a_gradient_used_before_its_second_contribution_is_said_in_the_chain() -> None:
    # dx = 2x + exp(x) comes in two lines; dw uses dx between them.  With the true dx the dw line is
    # right; in the person's chain it sees only 2x, and the chain says why.
    program = "w = [0.5, -1.5]\nx = 2 * w\na = x * x\nb = exp(x)\nL = sum(a + b)\n"
    lines = "da = a * 0 + 1\ndb = b * 0 + 1\ndx = 2 * x * da\ndw = 2 * dx\ndx += exp(x) * db\n"
    report = judge(program, lines)
    assert [r.given.verdict for r in report.results] == [AGREES] * 5
    dw = report.results[3]
    assert dw.chain.verdict == WRONG and dw.chain.causes == []
    assert dw.chain.note == "dx is used here before line 5 adds to it"


def test_a_sum_forgotten_along_an_inner_axis_is_named() -> None:
    # dcounts_sum_inv is [6] (one number a row); counts * dprobs is [6, 4], and its row sums are it.
    text = RIGHT.read_text().replace("dcounts_sum_inv = sum(counts * dprobs, 1)", "dcounts_sum_inv = counts * dprobs")
    report = judge(NINJA, text)
    wrong = [r for r in report.results if r.given.verdict != AGREES]
    assert [(r.line.gradient, r.given.slip.kind) for r in wrong] == [("dcounts_sum_inv", "missing sum")]
    assert "a missing sum over axis 1" in wrong[0].given.slip.message
    v = forward(inputs())  # and the row sums of counts * (autograd's dprobs) are autograd's dcounts_sum_inv
    np.testing.assert_allclose((v["counts"] * gradient("probs")).sum(1), gradient("counts_sum_inv"), rtol=1e-12)


def test_log_softmaxs_local_derivative_left_out_is_named() -> None:
    # dz = dlogp passes the gradient through log_softmax as if its derivative were 1.
    report = judge(MLP, MLP_LINES.replace(
        "dz = dlogp - softmax(z) * transpose(transpose(z * 0 + 1) * sum(dlogp, 1))", "dz = dlogp"))
    wrong = [r for r in report.results if r.given.verdict != AGREES]
    assert [(r.line.gradient, r.given.slip.kind) for r in wrong] == [("dz", "local derivative")]
    assert wrong[0].given.slip.message.startswith("the local derivative of log_softmax(z), at line 10 ")


def test_a_variable_used_twice_in_one_statement_is_given_one_contribution_a_use() -> None:
    # h2 = h * h uses h twice: dL/dh = dh2 * h (first operand) + h * dh2 (second) + dL (L = h2 + h),
    # at x = 2 (h = 6): 6 + 6 + 1 = 13, and dL/dx = 3 * 13 = 39, by hand.
    program = "x = 2\nh = x * 3\nh2 = h * h\nL = h2 + h\n"
    lines = "dL = 1\ndh2 = dL\ndh = h * dh2\ndh += h * dh2\ndh += dL\ndx = 3 * dh\n"
    report = judge(program, lines)
    assert [r.given.verdict for r in report.results][2:5] == [AGREES] * 3
    assert [r.chain.verdict for r in report.results] == [AGREES] * 6
    assert report.verdict == AGREES
    assert report.results[2].covers == "the contribution through one of the 2 uses of h at line 3 (h2 = ...)"
    # the two uses written as one line are the whole statement's share, as before
    report = judge(program, "dL = 1\ndh2 = dL\ndh = 2 * h * dh2\ndh += dL\ndx = 3 * dh\n")
    assert report.verdict in (AGREES, PROVED) and report.results[2].covers == "the contribution through line 3 (h2 = ...)"
    # one use left out is still a missing contribution, named at its statement
    report = judge(program, "dL = 1\ndh2 = dL\ndh = h * dh2\ndh += dL\ndx = 3 * dh\n")
    assert report.results[3].given.verdict == WRONG
    assert report.results[3].given.slip.kind == "missing contribution"
    assert "also used at line 3 (h2 = h * h)" in report.results[3].given.slip.message


def test_a_tensor_used_twice_in_one_statement_is_given_one_contribution_a_use() -> None:
    # autograd's dL/dh for L = sum(h*h + h), h = 3x: 2h + 1, each use h (plus the 1 of the sum).
    program = "x = [2, -1, 0.5]\nh = x * 3\nh2 = h * h\nL = sum(h2 + h)\n"
    lines = "dh2 = h2 * 0 + 1\ndh = h * dh2\ndh += h * dh2\ndh += h * 0 + 1\ndx = 3 * dh\n"
    report = judge(program, lines)
    assert [r.given.verdict for r in report.results] == [AGREES] * 5
    x = np.array([2, -1, 0.5])
    expected = autograd.grad(lambda t: anp.sum((3 * t) * (3 * t) + 3 * t))(x)
    np.testing.assert_allclose(3 * (2 * (3 * x) + 1), expected, rtol=1e-12)


def test_a_factor_of_a_half_without_a_variance_is_the_2_of_a_square_not_n_minus_1() -> None:
    # dL/dp of sum(p**2) is 2p (by hand); the line p is half of it, and no var or std is on p's path.
    program = "W = [[1, 2], [3, 4], [5, 6]]\nx = [1, 2.5]\np = W @ x\nL = sum(p**2)\n"
    (result,) = judge(program, "dp = p\n").results
    assert result.given.verdict == WRONG and result.given.slip.kind == "factor"
    assert "n - 1" not in result.given.slip.message
    assert "the 2 of a square" in result.given.slip.message


def test_n_against_n_minus_1_is_named_where_a_variance_is_on_the_path() -> None:
    # var divides by n - 1 = 2: dL/dp = 2 (p - mean(p)) / 2, by hand; the line divides by n = 3.
    (result,) = judge("p = [1, 2, 4.5]\nL = var(p)\n", "dp = 2 * (p - mean(p)) / 3\n").results
    p = np.array([1, 2, 4.5])
    np.testing.assert_allclose(autograd.grad(lambda t: anp.var(t, ddof=1))(p), (p - p.mean()), rtol=1e-12)
    assert result.given.verdict == WRONG
    assert "n = 3 where n - 1 = 2 belongs" in result.given.slip.message


def test_a_variable_used_more_than_six_times_is_still_matched_statement_by_statement() -> None:
    # x has 7 uses (3 in a = x*x*x, 2 in b, 2 in c); by hand, dL/dx = 3x^2 + 2x + (e^x + x e^x).
    program = "x = 1.5\na = x * x * x\nb = x * x\nc = exp(x) * x\nL = a + b + c\n"
    lines = "da = 1\ndb = 1\ndc = 1\ndx = 2 * x * db + (exp(x) + x*exp(x)) * dc\ndx += 3 * x**2 * da\n"
    report = judge(program, lines)
    assert [r.given.verdict for r in report.results][3:] == [AGREES] * 2
    assert [r.covers for r in report.results][3:] == [
        "the contribution through line 4 (c = ...) and line 3 (b = ...)", "the contribution through line 2 (a = ...)"]
