"""Error text as the user sees it: control characters made visible, long words shortened, and
the caret still under the character it points at."""

import pytest

from autodiff_cli.errors import (
    AutodiffError,
    Position,
    Source,
    format_error,
    printable,
    shorten,
)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain text", "plain text"),
        ("tab\tkept", "tab\tkept"),
        ("esc\x1b[31mred", "esc\\x1b[31mred"),
        ("nul\x00", "nul\\x00"),
        ("cr\rlf\n", "cr\\rlf\\n"),
        ("del\x7f", "del\\x7f"),
        ("c1\x9b", "c1\\x9b"),
        ("bidi\u202eevil", "bidi\\u202eevil"),
        ("zero\u200bwidth", "zero\\u200bwidth"),
        ("bom\ufeff", "bom\\ufeff"),
        ("line\u2028sep", "line\\u2028sep"),
        ("surrogate\udcff", "surrogate\\udcff"),
        ("é ∂ 日本", "é ∂ 日本"),
    ],
    ids=["plain", "tab", "esc", "nul", "cr_lf", "del", "c1_csi", "bidi_override", "zero_width", "bom",
         "line_separator", "lone_surrogate", "letters"],
)
def test_printable(text: str, shown: str) -> None:
    assert printable(text) == shown


def test_shorten_keeps_short_words_and_cuts_long_ones() -> None:
    assert shorten("the number 12345 is fine") == "the number 12345 is fine"
    digits = "9" * 400
    short = shorten(f"the number {digits} is too large for a float")
    assert short.startswith("the number 9999") and short.endswith("9999 is too large for a float")
    assert "(400 characters)" in short and len(short) < 120
    path = "/tmp/" + "d" * 100 + "/model.ad"
    assert shorten(f"cannot read {path}: no such file") == f"cannot read {path}: no such file"


def error_text(line: str, column: int, width: int = 1, message: str = "bad") -> str:
    return format_error(AutodiffError(message, Position(1, column, width), Source("<expr>", line)))


def caret_column(text: str) -> int:
    excerpt, caret = text.splitlines()[1:3]
    return caret.index("^") - caret.index("|") - 2, excerpt[excerpt.index("|") + 2:]


@pytest.mark.parametrize(
    ("line", "column", "under"),
    [
        ("y = a\x1b[31m + b", 6, "\\x1b"),
        ("y = a\x1b[31m + b", 14, "b"),
        ("y\x00 = a +", 4, "="),
        ("y = 1\r + $", 10, "$"),
        ("\u202ey = a + $", 10, "$"),
    ],
    ids=["at_the_escape", "after_the_escape", "after_nul", "after_cr", "after_bidi"],
)
def test_excerpt_shows_control_characters_and_the_caret_stays_right(line, column, under) -> None:
    text = error_text(line, column)
    assert not any(ord(c) < 32 and c not in "\n\t" for c in text)
    assert "\u202e" not in text
    at, excerpt = caret_column(text)
    assert excerpt[at:].startswith(under)


def test_everything_the_user_wrote_is_made_printable() -> None:
    error = AutodiffError("unknown name '\x1b[2J'", Position(1, 1), Source("evil\x1b[31m.ad", "x"),
                          hint="did you mean \x07?", notes=["note \x00"])
    text = format_error(error)
    assert "\x1b" not in text and "\x07" not in text and "\x00" not in text
    assert text.startswith("evil\\x1b[31m.ad:1:1: error: unknown name '\\x1b[2J'")
    assert "hint: did you mean \\x07?" in text and "note: note \\x00" in text


def test_a_cr_only_file_shows_its_line_breaks_escaped() -> None:
    # The lexer splits lines on \n only, so a file saved with bare CRs is one line.
    source = Source("mac.ad", "a = 1\rb = 2\ry = a +\r")
    text = format_error(AutodiffError("unexpected end of input", Position(1, 21), source))
    assert "\r" not in text
    assert " 1 | a = 1\\rb = 2\\ry = a +\n" in text


def test_a_long_message_word_is_shortened() -> None:
    text = format_error(AutodiffError(f"the number {'9' * 400} is too large", hint=f"x{'y' * 300}"))
    assert len(text) < 200 and "(400 characters)" in text and "(301 characters)" in text
