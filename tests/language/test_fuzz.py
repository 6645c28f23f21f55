"""Parser fuzzing through the real command line: no input may produce a traceback.

Random text, mutated sample programs and random bytes (most of them not UTF-8)
go through `autodiff_cli.cli.main` with CliRunner(catch_exceptions=False), so
any exception the CLI lets escape fails the test with its traceback.  A smaller
sample runs the real `python -m autodiff_cli` in a subprocess, for what only a
process sees: argv bytes that are not UTF-8, a C locale, the interpreter's own
stream encodings.  Every outcome must be one of

* exit 0 with output on stdout;
* exit 1 with a compiler-style message on stderr (`error:`, or `check failed:`);
* exit 2 with Click's usage message.

Derandomized, so CI fuzzes the same inputs every time.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autodiff_cli.cli import main

REPO = Path(__file__).resolve().parent.parent.parent
SAMPLE_TEXTS = [path.read_text("utf-8") for path in sorted((REPO / "samples").glob("*.ad"))]

SETTINGS = {"deadline": None, "derandomize": True, "database": None,
            "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}

# The language's own pieces, so that random text often gets past the first token.
TOKENS = ["x", "y", "a", "b1", "_t", "e", "L", "output", "2", "0", "-1", ".5", "1e3", "1e400", "3.", "1e-3",
          "+", "-", "*", "/", "**", "^", "(", ")", "=", ",", ";", "\n", "\r\n", " ", "\t", "\\\n", "# note\n",
          "tanh", "exp", "log", "sqrt", "relu", "sigmoid", "sin", "cos", "abs", "tanh(", "log(0)",
          "x = 2\n", "y = x*x\n", "é", "∂", "\u00a0", "\x00", "\x0c", "\ufeff", "\udcff", "🙂"]



def assert_clean(result, command: str = "eval") -> None:  # type: ignore[no-untyped-def]
    assert result.exit_code in (0, 1, 2), (result.exit_code, result.output)
    assert "Traceback" not in result.output
    if result.exit_code == 0:
        assert result.stdout.strip()
    elif result.exit_code == 1:
        # The first line after any notes and warnings (a number too small for a float, read as 0, is
        # said when the program is read) is `[FILE:LINE:COL: ]error: message` (or check's verdict).
        first = [line for line in result.stderr.splitlines() if not line.startswith(("note: ", "warning: "))][0]
        assert "error: " in first or (command == "check" and first.startswith("check failed: ")), first
    else:  # a usage error, or a command given a program it does not take (graph of a tensor program)
        first = result.stderr.splitlines()[0]
        assert ("Usage:" in result.stderr and "Error:" in result.stderr) or "error: " in first, result.stderr


def invoke(args: list[str], input: bytes | str | None = None, cli: click.Group = main):
    return CliRunner().invoke(cli, args, input=input, catch_exceptions=False)


@st.composite
def token_soup(draw) -> str:  # type: ignore[no-untyped-def]
    parts = draw(st.lists(st.sampled_from(TOKENS) | st.text(max_size=3), min_size=2, max_size=30))
    return "".join(parts)


@st.composite
def mutated_samples(draw) -> str:  # type: ignore[no-untyped-def]
    text = draw(st.sampled_from(SAMPLE_TEXTS))
    for _ in range(draw(st.integers(1, 4))):
        if not text:
            break
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 12)))
        kind = draw(st.sampled_from(["delete", "insert", "replace", "duplicate", "truncate", "swap_lines"]))
        if kind == "delete":
            text = text[:i] + text[j:]
        elif kind == "insert":
            text = text[:i] + draw(st.sampled_from(TOKENS)) + text[i:]
        elif kind == "replace":
            text = text[:i] + draw(st.sampled_from(TOKENS) | st.text(max_size=2)) + text[j:]
        elif kind == "duplicate":
            text = text[:j] + text[i:j] + text[j:]
        elif kind == "truncate":  # the samples open with comments: keep some code
            text = text[: max(i, len(text) // 2)]
        else:
            lines = text.split("\n")
            a = draw(st.integers(0, len(lines) - 1))
            b = draw(st.integers(0, len(lines) - 1))
            lines[a], lines[b] = lines[b], lines[a]
            text = "\n".join(lines)
    return text


FUNCTION_NAMES = ["tanh", "exp", "log", "sqrt", "relu", "sigmoid", "sin", "cos", "abs", "tan", "max"]
LEAVES = ["x", "y", "x", "y", "2", "0.5", "1e3", "-1", "0", "3", "e", "zz", "h1"]


def _expression(rng: random.Random, budget: int) -> str:
    """A random expression over the language (and a few things outside it: tan(), two arguments)."""
    # Built from the innermost part outwards, so deep nesting needs no recursion.
    text = rng.choice(LEAVES)
    for _ in range(rng.randint(0, budget)):
        kind = rng.randrange(5)
        if kind == 0:
            text = f"{text} {rng.choice(['+', '-', '*', '/', '**', '^'])} {rng.choice(LEAVES)}"
        elif kind == 1:
            text = f"{rng.choice(LEAVES)} {rng.choice(['+', '-', '*', '/', '**', '^'])} ({text})"
        elif kind == 2:
            name = rng.choice(FUNCTION_NAMES)
            text = f"{name}({text})" if rng.random() < 0.85 else f"{name}({text}, {rng.choice(LEAVES)})"
        elif kind == 3:
            text = f"({text})"
        else:
            text = f"-{text}"
    return text


@st.composite
def near_programs(draw) -> str:  # type: ignore[no-untyped-def]
    """Programs from a rough grammar of the language, then sometimes damaged by one edit.

    The structure comes from a seeded random.Random rather than from Hypothesis
    strategies: building expressions draw by draw is ~20x slower, and these tests
    want many programs more than minimal counterexamples (the input is printed).
    """
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    names = ["h1", "h2", "e", "y", "x", "out"]
    lines = [f"{rng.choice(names)} = {_expression(rng, 6)}" for _ in range(rng.randint(0, 3))]
    lines.append(_expression(rng, 6))
    text = rng.choice(["\n", ";", "\r\n"]).join(lines)
    if rng.random() < 0.5:
        i = rng.randint(0, len(text))
        text = text[:i] + rng.choice(TOKENS) + text[i + rng.randint(0, 2):]
    return text


OPTIONS = st.sampled_from([[], ["--set", "x=1.5"], ["--set", "x=0", "--set", "y=-2"], ["--format", "json"],
                           ["--output", "h1"], ["--wrt", "x,y"], ["--format", "csv"],
                           ["--set", "x"], ["--precision", "0"], ["--format", "xml"]])


@settings(max_examples=300, **SETTINGS)
@given(token_soup(), OPTIONS)
def test_random_text_as_an_expression(text: str, options: list[str]) -> None:
    assert_clean(invoke(["eval", "-e", text, *options]))


@settings(max_examples=400, **SETTINGS)
@given(near_programs(), st.sampled_from([["--set", "x=1.5", "--set", "y=-0.5"], ["--set", "x=0", "--set", "y=0"],
                                         ["--set", "x=2", "--set", "y=3", "--format", "json"]]))
def test_nearly_valid_programs(text: str, options: list[str]) -> None:
    assert_clean(invoke(["eval", "-e", text, *options]))


@settings(max_examples=400, **SETTINGS)
@given(mutated_samples(), OPTIONS)
def test_mutated_programs_on_stdin(text: str, options: list[str]) -> None:
    assert_clean(invoke(["eval", "-", *options], input=text.encode("utf-8", "surrogatepass")))


@settings(max_examples=250, **SETTINGS)
@given(st.binary(max_size=200) | mutated_samples().map(lambda t: t.encode("utf-8", "surrogatepass") + b"\xff"))
def test_random_bytes_on_stdin(data: bytes) -> None:
    assert_clean(invoke(["eval", "-"], input=data))


@settings(max_examples=60, **SETTINGS)
@given(st.binary(max_size=200) | mutated_samples().map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_random_bytes_in_a_file(tmp_path_factory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "program.ad"
    path.write_bytes(data)
    assert_clean(invoke(["eval", "-f", str(path), "--set", "x=1"]))


@settings(max_examples=150, **SETTINGS)
@given(mutated_samples() | near_programs(), st.sampled_from(["explain", "check"]),
       st.sampled_from([[], ["--format", "markdown"], ["--format", "json"], ["--set", "x1=0"],
                        ["--set", "x=1.5", "--set", "y=-0.5"]]))
def test_mutated_programs_through_explain_and_check(text: str, command: str, options: list[str]) -> None:
    if command == "explain" and options == ["--format", "json"]:
        options = ["--format", "rich"]
    if command == "check" and options == ["--format", "markdown"]:
        options = ["--format", "table"]
    result = invoke([command, "-e", text, *options], cli=main)
    assert_clean(result, command)


JSON_TOKENS = ['{', '}', '[', ']', '"x"', '"y"', '"zz"', ':', ',', '1', '-2.5', '1e400', '1e-400', 'NaN',
               'Infinity', 'true', 'null', '"2"', ' ', '\n', '\\u0000', '"\\ud800"']


@settings(max_examples=200, **SETTINGS)
@given(st.lists(st.sampled_from(JSON_TOKENS), max_size=12).map("".join).map(str.encode) | st.binary(max_size=60))
def test_random_values_files(data: bytes) -> None:
    assert_clean(invoke(["eval", "y = x + 1", "--values", "-"], input=data))


VALUES_FILES = {
    "not_utf8": b'{"x": \xff}',
    "not_an_object": b"[1, 2]",
    "nan": b'{"x": NaN}',
    "string_value": b'{"x": "2"}',
    # Found by this test (they escaped as tracebacks once):
    "deeply_nested": b"[" * 100_000,  # RecursionError from json.loads
    "int_too_big_for_a_float": b'{"x": 1' + b"0" * 400 + b"}",  # OverflowError from math.isfinite(int)
    "int_with_too_many_digits": b'{"x": 1' + b"0" * 5000 + b"}",  # ValueError: int max str digits
}


@pytest.mark.parametrize("case", list(VALUES_FILES), ids=list(VALUES_FILES))
def test_values_file_edge_cases(case: str) -> None:
    result = invoke(["eval", "y = x + 1", "--values", "-"], input=VALUES_FILES[case])
    assert result.exit_code == 1
    assert_clean(result)


# --- a few through a real process ----------------------------------------------------------

PROCESS_CASES = {
    # name: (argv after the program name, stdin bytes, extra environment)
    "argv_not_utf8": ([b"eval", b"y = \xff x"], None, {}),
    "argv_not_utf8_in_a_comment": ([b"eval", b"y = 2 # \xe9\xff\ny", b"--format", b"json"], None, {}),
    "stdin_not_utf8": ([b"eval", b"-"], b"y = 2*x\xfe\n", {}),
    "stdin_nul_and_bom": ([b"eval", b"-", b"--set", b"x=1"], b"\xef\xbb\xbfy = x\x00\n", {}),
    "c_locale_non_ascii": ([b"eval", "y = é".encode()], None, {"LC_ALL": "C", "LANG": "C"}),
    "deep_parentheses": ([b"eval", b"-"], b"y = " + b"(" * 100_000 + b"x", {}),
    "long_sum": ([b"eval", b"-", b"--set", b"x=1", b"--format", b"json"], b"y = x" + b" + x" * 50_000, {}),
    "values_file_not_json": ([b"eval", b"y = x", b"--values", b"-"], b"{\xff}", {}),
}


@pytest.mark.parametrize("case", list(PROCESS_CASES), ids=list(PROCESS_CASES))
def test_real_process(case: str) -> None:
    args, stdin, extra = PROCESS_CASES[case]
    env = {**os.environ, "PYTHONPATH": str(REPO), **extra}
    env.pop("PYTHONIOENCODING", None)
    completed = subprocess.run(
        [sys.executable.encode(), b"-m", b"autodiff_cli", *args], input=stdin or b"", capture_output=True,
        env=env, timeout=120, check=False,
    )
    stderr = completed.stderr.decode("utf-8", "replace")
    assert completed.returncode in (0, 1, 2), stderr
    assert "Traceback" not in stderr
    if completed.returncode == 0:
        assert completed.stdout.strip()
    else:
        assert "error" in stderr.lower(), stderr
