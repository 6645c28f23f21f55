"""The backward pass as chain-rule steps: the walk, the names, the rules, the three renderings.

Every number below is worked out by hand in a comment; the golden texts were
written from those numbers and the documented layout, then reviewed.
"""

import io
import math

import pytest
from rich.console import Console

from autodiff_cli.analysis.steps import (
    Seed,
    Step,
    Total,
    backward_steps,
    definitions,
    explain,
    node_names,
)
from autodiff_cli.engine import DERIVATIVE_RULES, Value, topological_order
from autodiff_cli.execute import Evaluation, evaluate
from autodiff_cli.language import parse
from autodiff_cli.render.explain import to_markdown, to_plain, to_rich

KARPATHY = "a = 2\nb = -3\nc = 10\ne = a*b\nd = e + c\nf = -2\nL = d*f"


def explained(text: str, values=None, **options):
    return explain(evaluate(parse(text), values, backward=False), **options)


def test_karpathy_plain_golden() -> None:
    # e = a*b = -6, d = e + c = 4, L = d*f = -8.  Backward: dL/dd = f = -2, dL/df = d = 4,
    # dL/de = dL/dc = 1 * dL/dd = -2, dL/da = b * dL/de = 6, dL/db = a * dL/de = -4.
    assert to_plain(explained(KARPATHY)) == (
        "L = -8\n"
        "\n"
        "forward pass (topological order)\n"
        "  a         = 2    input\n"
        "  b         = -3   input\n"
        "  e = a * b = -6\n"
        "  c         = 10   input\n"
        "  d = e + c = 4\n"
        "  f         = -2   input\n"
        "  L = d * f = -8\n"
        "\n"
        "backward pass (reverse topological order; ∂ is the local derivative of one operation; += adds a further use)\n"
        "  dL/dL = 1                             seed\n"
        "  dL/dd = ∂L/∂d * dL/dL = -2 * 1 = -2   [∂L/∂d = f]\n"
        "  dL/df = ∂L/∂f * dL/dL = 4 * 1 = 4     [∂L/∂f = d]\n"
        "  dL/de = ∂d/∂e * dL/dd = 1 * -2 = -2   [∂d/∂e = 1]\n"
        "  dL/dc = ∂d/∂c * dL/dd = 1 * -2 = -2   [∂d/∂c = 1]\n"
        "  dL/da = ∂e/∂a * dL/de = -3 * -2 = 6   [∂e/∂a = b]\n"
        "  dL/db = ∂e/∂b * dL/de = 2 * -2 = -4   [∂e/∂b = a]\n"
        "\n"
        "gradients: dL/da = 6, dL/db = -4, dL/dc = -2, dL/df = 4\n"
    )


def test_karpathy_steps_as_data() -> None:
    steps = explained(KARPATHY).steps
    assert steps[0] == Seed("L")
    # (child, parent, rule, local, upstream, product, accumulate, total)
    assert [tuple(s)[1:] for s in steps[1:]] == [
        ("d", "L", "f", -2.0, 1.0, -2.0, False, -2.0),
        ("f", "L", "d", 4.0, 1.0, 4.0, False, 4.0),
        ("e", "d", "1", 1.0, -2.0, -2.0, False, -2.0),
        ("c", "d", "1", 1.0, -2.0, -2.0, False, -2.0),
        ("a", "e", "b", -3.0, -2.0, 6.0, False, 6.0),
        ("b", "e", "a", 2.0, -2.0, -4.0, False, -4.0),
    ]


SQUARE = "y = x*x"


def test_a_node_used_twice_accumulates() -> None:
    # y = x*x at x = 3: each operand slot of * is an edge to x with local derivative 3
    # (the other operand), so dy/dx = 3 + 3 = 6.  The second contribution is a +=.
    steps = list(backward_steps(evaluate(parse(SQUARE), {"x": 3.0}).root))
    assert steps == [
        Seed("y"),
        Step("y", "x", "y", "x", 3.0, 1.0, 3.0, False, 3.0),
        Step("y", "x", "y", "x", 3.0, 1.0, 3.0, True, 6.0),
        Total("y", "x", (3.0, 3.0), 2, 6.0),
    ]


def test_accumulation_plain_golden() -> None:
    assert to_plain(explained(SQUARE, {"x": 3.0})) == (
        "y = 9\n"
        "\n"
        "forward pass (topological order)\n"
        "  x         = 3   input\n"
        "  y = x * x = 9\n"
        "\n"
        "backward pass (reverse topological order; ∂ is the local derivative of one operation; += adds a further use)\n"
        "  dy/dy =  1                           seed\n"
        "  dy/dx =  ∂y/∂x * dy/dy = 3 * 1 = 3   [∂y/∂x = x]\n"
        "  dy/dx += ∂y/∂x * dy/dy = 3 * 1 = 3   [∂y/∂x = x]   total 6\n"
        "  dy/dx =  3 + 3 = 6                   sum of 2 contributions\n"
        "\n"
        "gradients: dy/dx = 6\n"
    )


def test_accumulation_markdown_golden() -> None:
    assert to_markdown(explained(SQUARE, {"x": 3.0})) == (
        "**`y = 9`**\n"
        "\n"
        "Forward pass:\n"
        "\n"
        "| variable | definition | value |\n"
        "|---|---|---:|\n"
        "| `x` | input | 3 |\n"
        "| `y` | `x * x` | 9 |\n"
        "\n"
        "Backward pass (reverse topological order; ∂ is the local derivative of one operation; `+=` adds a "
        "further use):\n"
        "\n"
        "| gradient | chain rule | local rule | local | upstream | product | total |\n"
        "|---|---|---|---:|---:|---:|---:|\n"
        "| `dy/dy =` | seed | | | | | 1 |\n"
        "| `dy/dx =` | `∂y/∂x * dy/dy` | `∂y/∂x = x` | 3 | 1 | 3 | 3 |\n"
        "| `dy/dx +=` | `∂y/∂x * dy/dy` | `∂y/∂x = x` | 3 | 1 | 3 | 6 |\n"
        "| **`dy/dx =`** | `3 + 3` | | | | | **6** |\n"
        "\n"
        "`gradients: dy/dx = 6`\n"
    )


def _rich_rows(renderable, width: int = 120) -> list[list[str]]:
    console = Console(file=io.StringIO(), width=width, no_color=True, color_system=None)
    console.print(renderable)
    text = console.file.getvalue()
    assert "\x1b[" not in text
    return [[cell.strip() for cell in line.split("│")[1:-1]] for line in text.splitlines() if "│" in line]


def test_rich_rows_of_the_karpathy_example() -> None:
    rows = _rich_rows(to_rich(explained(KARPATHY)))
    assert ["c", "input", "10"] in rows
    assert ["e", "a * b", "-6"] in rows
    # The example line, as table cells: dL/dc = ∂d/∂c * dL/dd = 1 * -2 = -2.
    assert ["dL/dc =", "∂d/∂c * dL/dd", "∂d/∂c = 1", "1", "-2", "-2", "-2"] in rows
    assert ["dL/dL =", "seed", "", "", "", "", "1"] in rows


def test_rich_shows_the_sum_of_contributions() -> None:
    rows = _rich_rows(to_rich(explained(SQUARE, {"x": 3.0})))
    assert ["dy/dx +=", "∂y/∂x * dy/dy", "∂y/∂x = x", "3", "1", "3", "6"] in rows
    assert ["dy/dx =", "3 + 3", "", "", "", "", "6"] in rows


def test_karpathy_example_line_in_plain_text() -> None:
    assert "  dL/dc = ∂d/∂c * dL/dd = 1 * -2 = -2   [∂d/∂c = 1]\n" in to_plain(explained(KARPATHY))


def test_temporaries_are_numbered_in_topological_order() -> None:
    # f = 3*x**2 + x*y + 5*y**2: the unnamed results in the order they are computed.
    explanation = explained("x = 2\ny = 3\nf = 3*x**2 + x*y + 5*y**2")
    assert [(d.name, d.expression, d.value) for d in explanation.definitions] == [
        ("x", "", 2.0), ("t1", "x**2", 4.0), ("t2", "3 * t1", 12.0), ("y", "", 3.0),
        ("t3", "x * y", 6.0), ("t4", "t2 + t3", 18.0), ("t5", "y**2", 9.0),
        ("t6", "5 * t5", 45.0), ("f", "t4 + t6", 63.0),
    ]
    # df/dx = 6x + y = 15 arrives in two parts: y = 3 through x*y, then 2x * 3 = 12.
    totals = [s for s in explanation.steps if isinstance(s, Total)]
    assert totals == [Total("f", "y", (30.0, 2.0), 2, 32.0), Total("f", "x", (3.0, 12.0), 2, 15.0)]
    assert explanation.gradients == [("x", 15.0), ("y", 32.0)]


def test_temporary_names_never_clash_with_variables() -> None:
    explanation = explained("t1 = 2\nt7 = 1\ny = t1*x + x*t7", {"x": 1.0})
    assert [d.name for d in explanation.definitions if d.expression] == ["t_1", "t_2", "y"]


def test_constants_are_operands_not_steps() -> None:
    # y = 2*x + 1: the constants appear in the formulas; nothing is said about d y/d 2.
    explanation = explained("y = 2*x + 1", {"x": 5.0})
    assert [d.name for d in explanation.definitions] == ["x", "t1", "y"]
    assert [s.child for s in explanation.steps if isinstance(s, Step)] == ["t1", "x"]
    assert explanation.steps[-1].rule == "2"


def test_negative_constants_are_parenthesized_in_rules() -> None:
    # y = x / -4: dy/dx = 1/y with y the divisor -4, written 1/(-4); its value is -0.25.
    step = explained("y = x / -4", {"x": 2.0}).steps[-1]
    assert (step.rule, step.local) == ("1/(-4)", -0.25)


P, Q = 0.5, 2.0

RULES = {
    # op: (program, {operand: (rule text, local derivative worked out with math)})
    "+": ("y = p + q", {"p": ("1", 1.0), "q": ("1", 1.0)}),
    "-": ("y = p - q", {"p": ("1", 1.0), "q": ("-1", -1.0)}),
    "*": ("y = p * q", {"p": ("q", Q), "q": ("p", P)}),
    "/": ("y = p / q", {"p": ("1/q", 1 / Q), "q": ("-p/q**2", -P / Q**2)}),
    "neg": ("y = -p", {"p": ("-1", -1.0)}),
    "**": ("y = p ** q", {"p": ("q * p**(q-1)", Q * P ** (Q - 1)), "q": ("p**q * ln(p)", P**Q * math.log(P))}),
    "**c": ("y = p ** 3", {"p": ("3 * p**(3-1)", 3 * P**2)}),
    "tanh": ("y = tanh(p)", {"p": ("1 - tanh(p)**2", 1 / math.cosh(P) ** 2)}),
    "exp": ("y = exp(p)", {"p": ("exp(p)", math.exp(P))}),
    "log": ("y = log(p)", {"p": ("1/p", 1 / P)}),
    "sqrt": ("y = sqrt(p)", {"p": ("1 / (2*sqrt(p))", 0.5 / math.sqrt(P))}),
    "relu": ("y = relu(p)", {"p": ("1 if p > 0 else 0", 1.0)}),
    "sigmoid": ("y = sigmoid(p)", {"p": ("sigmoid(p) * (1 - sigmoid(p))", math.exp(-P) / (1 + math.exp(-P)) ** 2)}),
    "softplus": ("y = softplus(p)", {"p": ("sigmoid(p)", 1 / (1 + math.exp(-P)))}),
    "sin": ("y = sin(p)", {"p": ("cos(p)", math.cos(P))}),
    "cos": ("y = cos(p)", {"p": ("-sin(p)", -math.sin(P))}),
    "abs": ("y = abs(p)", {"p": ("sign(p)", 1.0)}),
    "sign": ("y = sign(p)", {"p": ("0", 0.0)}),
    "step": ("y = step(p)", {"p": ("0", 0.0)}),
    "=": ("q = p\ny = q", {"p": ("1", 1.0)}),
    "maximum": ("y = maximum(p, q)", {"p": ("1 if p > q, 1/2 if p = q, else 0", 0.0),
                                      "q": ("1 if q > p, 1/2 if p = q, else 0", 1.0)}),
    "minimum": ("y = minimum(p, q)", {"p": ("1 if p < q, 1/2 if p = q, else 0", 1.0),
                                      "q": ("1 if q < p, 1/2 if p = q, else 0", 0.0)}),
}


def test_every_derivative_rule_is_exercised() -> None:
    assert set(RULES) == set(DERIVATIVE_RULES)


@pytest.mark.parametrize("op", list(RULES), ids=lambda op: f"op={op}")
def test_rule_text_and_value_per_op(op: str) -> None:
    program, expected = RULES[op]
    binary = op in ("+", "-", "*", "/", "**", "maximum", "minimum")
    steps = explained(program, {"p": P, "q": Q} if binary else {"p": P}).steps
    node = "q" if op == "=" else "y"  # the node whose op it is
    found = {s.child: s for s in steps if isinstance(s, Step) and s.parent == node}
    assert set(found) == set(expected)
    for operand, (rule, local) in expected.items():
        assert found[operand].rule == rule
        assert math.isclose(found[operand].local, local, rel_tol=1e-14)


@pytest.mark.parametrize(
    "sample", ["karpathy.ad", "neuron.ad", "neuron_exp.ad", "mlp.ad", "quadratic.ad", "softmax_xent.ad"],
    ids=lambda name: name.removesuffix(".ad"),
)
def test_totals_equal_the_engine_backward_pass(samples, sample: str) -> None:
    # The walk sums the same products in the same order as Value.backward: exactly equal.
    evaluation = evaluate(parse((samples / sample).read_text()))
    explanation = explain(evaluation, max_steps=0)
    finals: dict[str, float] = {}
    for item in explanation.steps:
        if isinstance(item, (Step, Total)):
            name = item.child if isinstance(item, Step) else item.name
            finals[name] = item.total
    for name, node in evaluation.nodes.items():
        if name in finals:
            assert finals[name] == node.grad, name
    assert explanation.gradients == [(v.name, evaluation.nodes[v.name].grad) for v in evaluation.program.inputs]


def test_max_steps_caps_each_pass_and_counts_the_rest() -> None:
    # y = x*x + 3*x**2 at x = 3: 5 definitions (x, x*x, x**2, 3*x**2, y) and 8 backward
    # items: the seed, 6 edges (y->x*x, y->3*x**2, 3*x**2->x**2, x**2->x, x*x->x twice), one total.
    explanation = explained("y = x*x + 3*x**2", {"x": 3.0}, max_steps=3)
    assert (len(explanation.definitions), explanation.definitions_omitted) == (3, 2)
    assert (len(explanation.steps), explanation.steps_omitted) == (3, 5)
    # The gradient is still complete: 2x + 6x = 24.
    assert explanation.gradients == [("x", 24.0)]
    text = to_plain(explanation)
    assert "... 2 more lines not shown (--max-steps 3; use --max-steps 0 to show all)" in text
    assert "... 5 more steps not shown (--max-steps 3; use --max-steps 0 to show all)" in text
    assert explained("y = x*x + 3*x**2", {"x": 3.0}, max_steps=0).steps_omitted == 0


def test_inputs_the_output_ignores_get_zero() -> None:
    explanation = explained("b = 1\nz = b*b\ny = 2*a", {"a": 1.0})
    assert explanation.gradients == [("b", 0.0), ("a", 2.0)]


def test_precision_rounds_the_numbers() -> None:
    text = to_plain(explained("y = x/3", {"x": 1.0}), precision=3)
    assert "y = 0.333\n" in text
    assert "0.3333" not in text


def test_plain_has_no_escape_codes_or_box_drawing() -> None:
    text = to_plain(explained(KARPATHY)) + to_markdown(explained(KARPATHY))
    assert "\x1b" not in text
    assert not any("\u2500" <= char <= "\u257f" for char in text)
    assert {char for char in text if not char.isascii()} == {"∂"}  # the local derivative's sign


def test_node_names_for_engine_graphs() -> None:
    # micrograd-style code: labelled leaves keep their label, unlabelled leaves are
    # constants shown as numbers, results are t1, t2, ... in topological order.
    a = Value(2.0, label="a")
    out = (a * 3.0 + Value(-1.5)).tanh()
    assert node_names(topological_order(out)) == ["a", "3", "t1", "(-1.5)", "t2", "t3"]


def test_million_node_chain_is_walked_without_recursion() -> None:
    # y = -(-(...(-x))) with 10**6 negations: dy/dx = (-1)**(10**6) = 1.
    n = 10**6
    x = Value(0.5, label="x")
    y = x
    for _ in range(n):
        y = -y
    count = 0
    last = None
    for item in backward_steps(y):
        count += 1
        last = item
    assert count == n + 1  # the seed, then one step per edge
    assert (last.child, last.local, last.total) == ("x", -1.0, 1.0)

    evaluation = Evaluation(parse("y = -x"), "y", {"x": x, "y": y})
    explanation = explain(evaluation, max_steps=50)
    assert explanation.gradients == [("x", 1.0)]
    assert (len(explanation.steps), explanation.steps_omitted) == (50, n + 1 - 50)
    assert (len(explanation.definitions), explanation.definitions_omitted) == (50, n + 1 - 50)
    assert explanation.steps[1].parent == "y"
    assert sum(1 for _ in definitions(x)) == 1


def test_a_program_without_inputs() -> None:
    # y = 2*3: one operation on two constants; no steps into the constants.
    explanation = explained("y = 2*3")
    assert [(d.name, d.expression, d.value) for d in explanation.definitions] == [("y", "2 * 3", 6.0)]
    assert explanation.steps == [Seed("y")]
    assert to_plain(explanation).endswith("\nthe program has no inputs\n")


@pytest.mark.parametrize("program", [KARPATHY, SQUARE, "y = tanh(x)*x + x/3"], ids=["karpathy", "square", "mixed"])
def test_no_step_reads_as_circular(program) -> None:
    # The local derivative is written with ∂ and the total with d, so a step from the output
    # (dL/dd = ∂L/∂d * dL/dL) never repeats its left-hand side on the right.
    from autodiff_cli.render.explain import chain_text, gradient_text

    for step in explained(program, {"x": 0.5}).steps:
        if isinstance(step, Step):
            target = gradient_text(step.output, step.child)
            assert target not in chain_text(step), (target, chain_text(step))
            assert chain_text(step).startswith("∂")


def test_the_shared_wording_functions() -> None:
    from autodiff_cli.render.explain import chain_text, gradient_text, local_text, rule_text

    step = explained(KARPATHY).steps[4]  # dL/dc = ∂d/∂c * dL/dd
    assert (gradient_text("L", "c"), local_text("d", "c")) == ("dL/dc", "∂d/∂c")
    assert chain_text(step) == "∂d/∂c * dL/dd"
    assert rule_text(step) == "∂d/∂c = 1"


BACKWARD = "backward pass (reverse topological order; ∂ is the local derivative of one operation; += adds a further use)"


@pytest.mark.parametrize("width", [120, 200])
def test_rich_headings_are_lines_of_their_own_not_wrapped_to_the_table(width) -> None:
    console = Console(file=io.StringIO(), width=width, no_color=True, color_system=None)
    console.print(to_rich(explained(KARPATHY)))
    lines = console.file.getvalue().splitlines()
    heading = [line for line in lines if line.startswith("backward pass")]
    assert heading == [BACKWARD]  # 108 characters: the table is narrower, the terminal is not
