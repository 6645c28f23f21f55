"""The parser against its oracle: the same Program, positions and error messages as Lark's own parser.

``_reference_parser.reference_parse`` parses with Lark's LALR parser and lexer and
builds everything the obvious way; ``parse`` is the tuned driver.  Thousands of texts
go through both: the samples, random valid programs (comments, CRLF, continuations,
line breaks in parentheses, several statements per line), random token soups (mostly
errors, some non-ASCII), and the samples mutated character by character.  Every
instruction (with its position located), every variable, the result, or the error's
type and full text must be identical, whether the driver parses everything or the
templates (generated code for windows of tokens that repeat) take every window they
can.  The same texts are parsed again in tiny chunks, which must change nothing.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from _reference_parser import reference_parse

from autodiff_cli.errors import AutodiffError
from autodiff_cli.language import compiler, parse

# The scalar samples: the reference parser knows the scalar language (the tensor syntax has tests of its
# own, tests/language/test_tensor_syntax.py).
SAMPLES = [text for text in (path.read_text("utf-8") for path in
                             sorted((Path(__file__).resolve().parents[2] / "samples").glob("*.ad")))
           if not parse(text).has_tensors]


def outcome(parser: Any, text: str, **options: Any) -> tuple[str, Any]:
    """What parsing ``text`` gives, as comparable data: the program with every position
    worked out, or the error's class and message."""
    try:
        program = parser(text, "model.ad", **options)
    except AutodiffError as error:
        return type(error).__name__, str(error)
    instructions = [(i.op, i.args, repr(i.param), program.position(i.position)) for i in program.instructions]
    variables = [(v.name, v.kind, v.position, v.register, repr(v.default)) for v in program.variables.values()]
    return "ok", (instructions, variables, program.result)


# --- the corpus --------------------------------------------------------------------------------

ATOMS = ["x", "y", "e", "w1", "_b", "2", "0.5", "1e-3", ".25", "3.", "1E+2"]
FUNCTIONS = ["tanh", "exp", "log", "relu", "sigmoid", "abs", "sqrt"]


def random_expression(rng: random.Random, depth: int) -> str:
    if depth == 0 or rng.random() < 0.3:
        return rng.choice(ATOMS)
    inner = random_expression(rng, depth - 1)
    choice = rng.randrange(8)
    if choice == 0:
        return f"{inner} {rng.choice('+-*/')} {random_expression(rng, depth - 1)}"
    if choice == 1:
        return f"{inner}{rng.choice(['**', '^', ' ** '])}{random_expression(rng, depth - 1)}"
    if choice == 2:
        return f"{rng.choice('-+')}{inner}"
    if choice == 3:
        return f"({inner})"
    if choice == 4:
        return f"{rng.choice(FUNCTIONS)}({inner})"
    if choice == 5:  # line breaks inside parentheses, before an operator too
        return f"(\n  {inner}\n  {rng.choice('+-*/')} {random_expression(rng, depth - 1)}\n)"
    if choice == 6:
        return f"{inner} {rng.choice('+-*')} \\\n    {random_expression(rng, depth - 1)}"  # a continuation
    return f"{inner}{rng.choice(['*', ' - '])}{rng.choice(['-', '+'])}{random_expression(rng, depth - 1)}"


def random_program(rng: random.Random) -> str:
    lines = []
    for i in range(rng.randrange(1, 6)):
        lines.append(f"a{i} = {random_expression(rng, 4)}" if rng.random() < 0.8 else random_expression(rng, 3))
        if rng.random() < 0.2:
            lines.append(rng.choice(["", "# a comment", "   # indented comment", "\t"]))
    separator = rng.choice(["\n", "\r\n", ";", " ; ", "\n\n"])
    text = separator.join(lines)
    if rng.random() < 0.3:
        text += rng.choice(["\n", "\r\n", "  ", "\n# end\n", "\r"])
    return text


# Characters of the scalar language and stray ones ('!', '$'): the reference parser knows the scalar
# language only, so the soup leaves out the tensor syntax ('[', ']', '@', ':').
SOUP = ["x", "y", "a", "b1", "_t", "e", "2", "0", "-1", ".5", "1e3", "1e400", "3.", "1e-3", "+", "-", "*", "/",
        "**", "^", "(", ")", "=", ",", ";", "\n", "\r\n", "\r", " ", "\t", "\\\n", "\\ \r\n", "# note\n", "tanh",
        "exp", "log", "tanh(", "x = 2\n", "y = x*x\n", "\n+ x", "\n- 1", "é", "２", "٣", "𝟐", "−", "×", "!", "$",
        "\x00", "\ufeff", "🙂", ".", "\\"]


def token_soup(rng: random.Random) -> str:
    return "".join(rng.choice(SOUP) for _ in range(rng.randrange(1, 14)))


def mutation(rng: random.Random) -> str:
    text = list(rng.choice(SAMPLES))
    for _ in range(rng.randrange(1, 4)):
        where = rng.randrange(len(text))
        what = rng.random()
        if what < 0.4:
            del text[where]
        elif what < 0.8:
            text.insert(where, rng.choice(["(", ")", "+", "-", "*", "\n", "=", "x", "2", ",", "#", "\r\n", "é"]))
        else:
            text[where] = rng.choice(["(", ")", "+", "\n", " ", ";"])
    return "".join(text)


EDGE_CASES = [
    "", " ", "\n", "# only\n", "x", "-x", "+x", "--x", "x\n-y", "x;-y", "x = 1\n\n# c\n-x", "x = 1;\n-x",
    "x = (1\n-2)", "x = 1 \\\n- 2", "y = 2*\r\n", "y = 2 # c\r\n+", "y = (a\n*b)", "a\n* b", "a\n/ b", "a\n** b",
    "x = 3 +\n4", "x = ", "f(,)", "a ,b", "1 2", "a = 1;;= 2", "(a\n", "y = (a +\n  b", "a+b)", "2x", "a = = 2",
    "tanh = 1", "y = tanh", "y = exp(1, 2)", "y = exp()", "y = foo(1)", "x = 1\nx = 2", "y = x\nx = 2",
    "y = 1e999", "y = -1e999", "y = ２", "y = 1٣", "y = 𝟐*x", "y = x − 1", "α = 1", "y = x\u00a0+ 1", "\ufeffy = 1",
    "y = 1\r", "y = 1\r\r\n", "a = 2\nb = a\nc = b\n", "a = -(2)\nb = 2**-2\nc = (2)**x", "x**2**-3",
    "y = (((((x)))))", "x = 1; y = 2; x*y", "output = 1\nx + 1", "output = 1\noutput_ = 2\n3",
    "y = exp(x, y) + 1\nz = 2", "y = tanh(x,\n y, 2) - 1\nq = 2", "y = exp(1, 2, 3, 4)\n", "y = f()\nz = 1",
    "y = x" + " + x" * 200, "y = " + "(" * 300 + "x" + ")" * 300, "y = " + "(" * 300 + "x",
]

CASES = (
    [("edge", i, text) for i, text in enumerate(EDGE_CASES)]
    + [("sample", i, text) for i, text in enumerate(SAMPLES)]
    + [("program", seed, random_program(random.Random(seed))) for seed in range(600)]
    + [("soup", seed, token_soup(random.Random(seed))) for seed in range(1500)]
    + [("mutation", seed, mutation(random.Random(seed))) for seed in range(600)]
)


# How soon a window of tokens gets generated code (compiler.TEMPLATE_AFTER): at once, so that
# templates parse everything they can; as in use; or never, so that the driver parses everything.
TEMPLATE_MODES = {"templates-at-once": 1, "templates-as-used": compiler.TEMPLATE_AFTER, "driver-only": 10**9}


@pytest.fixture(params=list(TEMPLATE_MODES), ids=list(TEMPLATE_MODES))
def template_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiler, "TEMPLATE_AFTER", TEMPLATE_MODES[request.param])


@pytest.mark.parametrize("family", ["edge", "sample", "program", "soup", "mutation"])
def test_same_outcome_as_the_reference_parser(family: str, template_mode: None) -> None:
    texts = [(seed, text) for name, seed, text in CASES if name == family]
    mismatches = [(seed, text) for seed, text in texts if outcome(parse, text) != outcome(reference_parse, text)]
    assert not mismatches, "\n".join(
        f"{family} {seed}: {text!r}\n  ours:      {outcome(parse, text)}\n  reference: {outcome(reference_parse, text)}"
        for seed, text in mismatches[:3])


@pytest.mark.parametrize("chunk", [1, 2, 7, 64], ids=lambda size: f"chunk={size}")
def test_parsing_in_chunks_changes_nothing(chunk: int, template_mode: None) -> None:
    for _, _, text in CASES[::3]:
        assert outcome(parse, text, chunk=chunk) == outcome(parse, text), repr(text)


def test_a_long_program_in_many_chunks_is_the_reference_program(template_mode: None) -> None:
    rng = random.Random(5)
    shapes = [random_expression(rng, 3) for _ in range(40)]  # repeated, as in generated programs
    text = "\n".join(f"v{i} = {rng.choice(shapes)} + v{rng.randrange(i)}" if i else "v0 = 1" for i in range(3000))
    assert outcome(parse, text, chunk=500) == outcome(reference_parse, text)
    broken = text[:len(text) * 2 // 3] + "\n)(\n" + text[len(text) * 2 // 3:]  # an error in a late chunk
    assert outcome(parse, broken, chunk=500) == outcome(reference_parse, broken)
