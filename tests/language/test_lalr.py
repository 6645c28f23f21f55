"""Our LALR runtime must build exactly what Lark's own parser builds from the same grammar."""

import json
import random
from pathlib import Path

import pytest
from lark import Lark
from lark.exceptions import UnexpectedInput as LarkUnexpectedInput

from autodiff_cli.errors import ParseError, Source
from autodiff_cli.language import lalr, parse
from autodiff_cli.language.compiler import _Compiler
from autodiff_cli.language.compiler import grammar_text as _grammar_text

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


class JoinLinesInParentheses:
    """The reference for the runtime's rule: a line break inside parentheses is not a separator."""

    always_accept = ("_SEP",)

    def process(self, stream):
        depth = 0
        for token in stream:
            if token.type == "LPAR":
                depth += 1
            elif token.type == "RPAR":
                depth = max(0, depth - 1)
            elif token.type == "_SEP" and depth and token != ";":
                continue
            yield token


def parse_with_lark(text: str):
    compiler = _Compiler()
    compiler.reset(Source("<expr>", text))
    Lark(_grammar_text(), parser="lalr", lexer="contextual", transformer=compiler,
         postlex=JoinLinesInParentheses(), maybe_placeholders=False).parse(text)
    return compiler.finish()


def random_program(rng: random.Random) -> str:
    atoms = ["x", "y", "e", "2", "0.5", "1e-3", ".25"]
    def expr(depth: int) -> str:
        if depth == 0 or rng.random() < 0.3:
            return rng.choice(atoms)
        choice = rng.randrange(6)
        if choice == 0:
            return f"{expr(depth - 1)} {rng.choice('+-*/')} {expr(depth - 1)}"
        if choice == 1:
            return f"{expr(depth - 1)} {rng.choice(['**', '^'])} {expr(depth - 1)}"
        if choice == 2:
            return f"{rng.choice('-+')}{expr(depth - 1)}"
        if choice == 3:
            return f"({expr(depth - 1)})"
        if choice == 4:
            return f"{rng.choice(['tanh', 'exp', 'log', 'relu'])}({expr(depth - 1)})"
        return f"(\n{expr(depth - 1)}\n)"
    lines = [f"a{i} = {expr(4)}" for i in range(rng.randrange(1, 4))]
    return rng.choice(["\n", ";", " ; ", "\n# note\n\n"]).join(lines)


CORPUS = [path.read_text() for path in sorted(SAMPLES.glob("*.ad"))] + [
    random_program(random.Random(seed)) for seed in range(300)
]


@pytest.mark.parametrize("text", CORPUS, ids=[f"program{i}" for i in range(len(CORPUS))])
def test_same_program_as_lark(text: str) -> None:
    ours, theirs = parse(text), parse_with_lark(text)
    assert ours.instructions == theirs.instructions
    assert ours.variables == theirs.variables
    assert ours.result == theirs.result


@pytest.mark.parametrize(
    "text",
    ["a*", "2x", "(a+b", "a+b)", "a = = 2", "f(,)", "a ,b", "1 2", "a = 1;;= 2", "(a\n", "x = 3 +\n4"],
)
def test_rejects_what_lark_rejects_at_the_same_place(text: str) -> None:
    with pytest.raises(LarkUnexpectedInput) as theirs:
        parse_with_lark(text)
    with pytest.raises(ParseError) as ours:
        parse(text)
    if theirs.value.token.type != "$END":
        assert (ours.value.position.line, ours.value.position.column) == (theirs.value.line, theirs.value.column)


def test_tables_are_cached_and_a_corrupt_cache_is_rebuilt(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("AUTODIFF_CACHE_DIR", str(tmp_path))
    grammar = _grammar_text()
    first = lalr.load_tables(grammar)
    (cached,) = tmp_path.glob("parser-*.json")
    assert json.loads(cached.read_text()) == first.data
    assert lalr.load_tables(grammar).data == first.data  # read back from the cache
    cached.write_text("{ not json")
    rebuilt = lalr.load_tables(grammar)  # Lark numbers states differently on each build
    assert json.loads(cached.read_text()) == rebuilt.data
    text = (SAMPLES / "mlp.ad").read_text()
    callbacks = _ListingCallbacks()
    assert lalr.parse(rebuilt, text, callbacks) == lalr.parse(first, text, callbacks)


def test_unwritable_cache_directory_still_parses(tmp_path, monkeypatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("AUTODIFF_CACHE_DIR", str(blocker / "cache"))  # a path under a file
    tables = lalr.load_tables(_grammar_text())
    assert lalr.parse(tables, "y = 1", _ListingCallbacks()) is not None


class _ListingCallbacks:
    def __getattr__(self, name):
        return lambda children: (name, children)
