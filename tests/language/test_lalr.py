"""The tables taken from Lark: cached, rebuilt when the cache is bad, and checked when built.

That the driver over them parses exactly like Lark's own parser is
``test_parser_differential.py``'s job.
"""

import json

import pytest

from autodiff_cli.language import lalr, parse
from autodiff_cli.language.compiler import grammar_text


def test_tables_are_cached_and_a_corrupt_cache_is_rebuilt(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("AUTODIFF_CACHE_DIR", str(tmp_path))
    grammar = grammar_text()
    first = lalr.load_tables(grammar)
    (cached,) = tmp_path.glob("parser-*.json")

    def tables_in_file() -> dict:
        data = json.loads(cached.read_text())
        assert set(data) - set(first.data) == {"checksum"}
        return {name: value for name, value in data.items() if name != "checksum"}

    assert tables_in_file() == first.data
    assert lalr.load_tables(grammar).data == first.data  # read back from the cache
    for corrupt in ["{ not json", "[]", '{"format": 3}', json.dumps({**first.data, "action": None})]:
        cached.write_text(corrupt)
        rebuilt = lalr.load_tables(grammar)
        assert tables_in_file() == rebuilt.data
        assert rebuilt.scanner.scan("y = 2*x")[1] == first.scanner.scan("y = 2*x")[1]


def test_unwritable_cache_directory_still_parses(tmp_path, monkeypatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("AUTODIFF_CACHE_DIR", str(blocker / "cache"))  # a path under a file
    tables = lalr.load_tables(grammar_text())
    assert tables.scanner.scan("y = 1")[0] == ["y", "=", "1"]


@pytest.mark.parametrize(
    "change, complaint",
    [
        (("NUMBER: /(?:", "NUMBER: /("), "capturing group"),
        (("%ignore WS", ""), "white space terminal"),
        (('EQUAL: "="', 'EQUAL: "x"'), "starts like NAME"),
    ],
    ids=["capturing-group", "no-white-space", "ambiguous-first-character"],
)
def test_a_grammar_the_scanner_cannot_serve_is_refused(change, complaint) -> None:
    old, new = change
    grammar = grammar_text()
    assert old in grammar
    with pytest.raises(ValueError, match=complaint):
        lalr.build_tables(grammar.replace(old, new, 1))


@pytest.mark.parametrize(
    "text, kinds",
    [
        ("y = 2*x", ["NAME", "EQUAL", "NUMBER", "STAR", "NAME", "$END"]),
        ("a**b^c", ["NAME", "POW", "NAME", "POW", "NAME", "$END"]),
        ("a;b\r\nc\n", ["NAME", "SEMI", "NAME", "NL", "NAME", "NL", "$END"]),
        ("x # note\r\n", ["NAME", "COMMENT", "NL", "$END"]),
        ("x \\\r\n+ 1", ["NAME", "CONTINUATION", "PLUS", "NUMBER", "$END"]),
        ("a\rb", ["NAME", "NAME", "$END"]),  # a lone CR is white space
        (".5e3 .", ["NUMBER", "ERROR", "$END"]),  # a lone '.' starts no number
        ("２ é", ["ERROR", "ERROR", "$END"]),
    ],
    ids=["assignment", "powers", "separators", "comment-before-crlf", "continuation", "lone-cr", "dots",
         "non-ascii"],
)
def test_scanner_kinds(text, kinds) -> None:
    tables = lalr.load_tables(grammar_text())
    _, found = tables.scanner.scan(text)
    assert [tables.kind_names[kind] for kind in [*found, tables.kind[lalr.END]]] == kinds


def test_token_starts_are_where_the_tokens_are() -> None:
    tables = lalr.load_tables(grammar_text())
    text = "  y =\t2 * (x\r\n # c\r\n) @ \\\n z  "
    tokens, _ = tables.scanner.scan(text)
    starts = tables.scanner.token_starts(text, tokens)
    for token, start in zip(tokens, starts):
        assert text[start:start + max(1, len(token))] == (token or text[start])


def test_trailing_white_space_is_not_rescanned_at_every_position() -> None:
    # The token pattern fails only at the end of the text; the scanner strips trailing white
    # space so that it fails once there, not once for every blank.  Quadratic, this would not end.
    program = parse("y = 1" + " \t" * 200_000 + "\r")
    assert program.result == "y"
