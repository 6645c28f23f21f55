"""A tensor program's explanation in matrix form: plain text, Markdown and Rich (render/explain.py).

The program is small enough to work by hand:

    X = [[1, 2], [3, 4]], w = [1, -1], b = 0.5
    t1 = X @ w = [-1, -1];  p = t1 + b = [-0.5, -0.5];  t2 = p**2 = [0.25, 0.25];  L = sum(t2) = 0.5

Backward: dL/dt2 = [1, 1]; dL/dp = 2p = [-1, -1]; dL/dt1 = dL/dp = [-1, -1];
dL/db = -1 + -1 = -2 (b was added to both entries); dL/dX = outer(dL/dt1, w) = [[-1, 1], [-1, 1]];
dL/dw = X^T dL/dt1 = [-1 - 3, -2 - 4] = [-4, -6].  The golden texts were written from these
numbers and the documented layout, then reviewed.
"""

import io

from rich.console import Console

from autodiff_cli.analysis.steps import explain_program
from autodiff_cli.language import parse
from autodiff_cli.render.explain import broadcast_sentence, to_markdown, to_plain, to_rich

SMALL = "X = [[1, 2], [3, 4]]\nw = [1, -1]\nb = 0.5\np = X @ w + b\nL = sum(p**2)\n"
BIG = "X = normal([8, 5], 1)\nW = normal([5, 3], 1)\nL = sum(X @ W)\n"


def explained(text: str = SMALL, **options):
    return explain_program(parse(text), {}, **options)


def test_plain_golden() -> None:
    assert to_plain(explained()) == (
        "L = 0.5\n"
        "\n"
        "forward pass (program order; each operation with its operands' shapes)\n"
        "  X             [2, 2]                = [[1.0, 2.0], [3.0, 4.0]]   input\n"
        "  w             [2]                   = [1.0, -1.0]   input\n"
        "  b             []                    = 0.5   input\n"
        "  t1 = X @ w    [2, 2] @ [2] -> [2]   = [-1.0, -1.0]\n"
        "  p = t1 + b    [2] + [] -> [2]       = [-0.5, -0.5]\n"
        "  t2 = p**2     [2]**2 -> [2]         = [0.25, 0.25]\n"
        "  L = sum(t2)   sum([2]) -> []        = 0.5\n"
        "\n"
        "backward pass (reverse order, in matrix form: each step is the rule of one tensor operation; "
        "* is entry by entry; += adds a further use)\n"
        "  dL/dL  = 1                                      []                             seed\n"
        "  dL/dt2 = dL/dL copied to every element summed   [] -> [2]                   = [1.0, 1.0]\n"
        "  dL/dp  = dL/dt2 * (2 * p**(2-1))                [2] -> [2]                  = [-1.0, -1.0]\n"
        "  dL/dt1 = dL/dp                                  [2] -> [2]                  = [-1.0, -1.0]\n"
        "  dL/db  = sum(dL/dp)                             [2] -> []                   = -2.0\n"
        "           b was added to every entry of p, so dL/db sums dL/dp over the entries\n"
        "  dL/dX  = dL/dt1 @ transpose(w)                  [2, 1] @ [1, 2] -> [2, 2]   = [[-1.0, 1.0], [-1.0, 1.0]]"
        "   w [2] as a column [2, 1]\n"
        "  dL/dw  = transpose(X) @ dL/dt1                  [2, 2] @ [2, 1] -> [2]      = [-4.0, -6.0]"
        "   w [2] as a column [2, 1]\n"
        "\n"
        "gradients:\n"
        "  dL/dX = [[-1.0, 1.0], [-1.0, 1.0]]\n"
        "  dL/dw = [-4.0, -6.0]\n"
        "  dL/db = -2.0\n"
    )


def test_markdown_golden() -> None:
    assert to_markdown(explained()) == (
        "**`L = 0.5`**\n"
        "\n"
        "Forward pass:\n"
        "\n"
        "| variable | definition | shapes | value |\n"
        "|---|---|---|---:|\n"
        "| `X` | input | `[2, 2]` | [[1.0, 2.0], [3.0, 4.0]] |\n"
        "| `w` | input | `[2]` | [1.0, -1.0] |\n"
        "| `b` | input | `[]` | 0.5 |\n"
        "| `t1` | `X @ w` | `[2, 2] @ [2] -> [2]` | [-1.0, -1.0] |\n"
        "| `p` | `t1 + b` | `[2] + [] -> [2]` | [-0.5, -0.5] |\n"
        "| `t2` | `p**2` | `[2]**2 -> [2]` | [0.25, 0.25] |\n"
        "| `L` | `sum(t2)` | `sum([2]) -> []` | 0.5 |\n"
        "\n"
        "Backward pass (reverse order, in matrix form: each step is the rule of one tensor operation; "
        "* is entry by entry; += adds a further use):\n"
        "\n"
        "| gradient | matrix form | shapes | value | note |\n"
        "|---|---|---|---:|---|\n"
        "| `dL/dL =` | `1` | `[]` |  | seed |\n"
        "| `dL/dt2 =` | `dL/dL copied to every element summed` | `[] -> [2]` | [1.0, 1.0] |  |\n"
        "| `dL/dp =` | `dL/dt2 * (2 * p**(2-1))` | `[2] -> [2]` | [-1.0, -1.0] |  |\n"
        "| `dL/dt1 =` | `dL/dp` | `[2] -> [2]` | [-1.0, -1.0] |  |\n"
        "| `dL/db =` | `sum(dL/dp)` | `[2] -> []` | -2.0 | b was added to every entry of p, so dL/db sums dL/dp "
        "over the entries |\n"
        "| `dL/dX =` | `dL/dt1 @ transpose(w)` | `[2, 1] @ [1, 2] -> [2, 2]` | [[-1.0, 1.0], [-1.0, 1.0]] "
        "| w [2] as a column [2, 1] |\n"
        "| `dL/dw =` | `transpose(X) @ dL/dt1` | `[2, 2] @ [2, 1] -> [2]` | [-4.0, -6.0] | w [2] as a column [2, 1] |\n"
        "\n"
        "gradients:\n"
        "- `dL/dX = [[-1.0, 1.0], [-1.0, 1.0]]`\n"
        "- `dL/dw = [-4.0, -6.0]`\n"
        "- `dL/db = -2.0`\n"
    )


def rich_text(renderable, width: int = 200) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None, legacy_windows=False)
    console.print(renderable)
    return console.file.getvalue()


def test_rich_holds_both_passes_and_never_cuts_a_number() -> None:
    wide = rich_text(to_rich(explained()), width=240)
    assert "b was added to every entry of p, so dL/db sums dL/dp over the entries" in wide
    assert "dL/db = -2.0" in wide  # the gradients below the tables
    narrow = rich_text(to_rich(explained()), width=100)  # the value and note columns wrap between words
    lines = narrow.splitlines()
    w_row = next(i for i, line in enumerate(lines) if "dL/dw =" in line)
    assert "transpose(X) @ dL/dt1" in lines[w_row] and "[-4.0," in lines[w_row] and "-6.0]" in lines[w_row + 1]


def test_large_tensors_are_summarised_as_eval_shows_them() -> None:
    text = to_plain(explained(BIG), precision=3)
    assert "X             [8, 5]" in text
    w_line = next(line for line in text.splitlines() if line.startswith("  dL/dW"))
    assert "transpose(X) @ dL/dt1" in w_line and "[5, 8] @ [8, 3] -> [5, 3]" in w_line
    assert "mean " in w_line and ", std " in w_line and ", min " in w_line and ", max " in w_line


def test_precision_rounds_the_entries() -> None:
    text = to_plain(explained("x = [0.123456789, 2]\nL = sum(x * x)"), precision=3)
    assert "[0.123, 2]" in text and "[0.247, 4]" in text  # x and dL/dx = 2x


def test_omitted_lines_are_counted_with_the_way_out() -> None:
    text = to_plain(explained(max_steps=2))
    assert "... 5 more lines not shown (--max-steps 2; use --max-steps 0 to show all)" in text
    assert "... 5 more steps not shown (--max-steps 2; use --max-steps 0 to show all)" in text


def test_broadcast_sentence_names_rows_for_a_bias() -> None:
    explanation = explained("X = [[1, 2], [3, 4], [5, 6]]\nb = [1, 1]\nZ = X + b\nL = sum(Z)")
    step = next(item for item in explanation.steps if getattr(item, "child", "") == "b")
    assert broadcast_sentence(step) == "b was added to every row of Z, so dL/db sums dL/dZ over the rows"
    assert step.formula == "sum(dL/dZ, 0)"
    assert step.product.tolist() == [3.0, 3.0]  # three rows, each contributing 1 per entry


def test_scalar_layers_follow_each_statement() -> None:
    program = parse(SMALL)
    explanation = explain_program(program, {}, scalar=True)
    text = to_plain(explanation)
    assert "statement p (every entry), each entry weighted by its upstream gradient dL/dp = [-1.0, -1.0]" in text
    assert text.index("statement L") < text.index("statement p")  # backward order
    assert "  in matrix form:\n" in text and "  in scalars:\n" in text
    # The scalar lines of the statement p: w[0] receives X[0, 0] * -1 and X[1, 0] * -1, so -4, as in matrix form.
    assert "gradients: " in text and "/dw[0] = -4" in text and "/dw[1] = -6" in text
    markdown = to_markdown(explanation)
    assert "### statement p" in markdown and "In scalars:" in markdown
