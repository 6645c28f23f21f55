"""Conventions a user notices: whole sentences in --help, examples that run, no trailing spaces,
NO_COLOR meaning no styling at all, and output to a terminal that cannot encode a character."""

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from autodiff_cli.cli import main

REPO = Path(__file__).resolve().parents[2]


def autodiff(args, env_extra=None, **kwargs):
    env = {key: value for key, value in os.environ.items() if key not in ("NO_COLOR", "FORCE_COLOR")}
    env.update(PYTHONPATH=str(REPO), **(env_extra or {}))
    result = subprocess.run([sys.executable, "-m", "autodiff_cli", *args], capture_output=True, check=False,
                            env=env, cwd=REPO, **kwargs)
    # PNG bytes on stdout are fine; the checks read text.
    result.stdout = result.stdout.decode("utf-8", "replace")
    result.stderr = result.stderr.decode("utf-8", "replace")
    return result


@pytest.mark.parametrize("columns", ["80", "100", "200"])
def test_group_help_lists_whole_sentences(columns) -> None:
    result = autodiff(["--help"], {"COLUMNS": columns})
    commands = result.stdout.split("Commands:")[1].split("Exit status")[0]
    lines = [line for line in commands.splitlines() if line.strip()]
    assert [line.split()[0] for line in lines] == sorted(main.commands)
    for line in lines:
        assert not line.rstrip().endswith("..."), line
        assert line.rstrip().endswith("."), line


OUTPUT_OPTIONS = {"-o", "--out", "--history", "--plot"}
OUTPUT_EXTENSIONS = (".svg", ".png", ".pdf", ".dot", ".html", ".htm")


def help_examples() -> list[tuple[str, str]]:
    """Every 'autodiff ...' example line in every command's --help that uses only the samples."""
    found = []
    for name, command in sorted(main.commands.items()):
        for line in (command.help or "").splitlines():
            text = line.strip()
            if not text.startswith("autodiff "):
                continue
            text = text.split("  #")[0].split(" | ")[0].split(" > ")[0].strip()
            words = shlex.split(text)
            files = [w for w in words[2:] if w.endswith((".ad", ".json"))]
            if all(w.startswith("samples/") for w in files):
                found.append((name, text))
    return found


@pytest.mark.parametrize(("command", "example"), help_examples(), ids=[e for _, e in help_examples()])
def test_help_examples_run_without_system_graphviz(tmp_path, command, example) -> None:
    # PATH without the system 'dot': what a plain pip install has.
    words = shlex.split(example)[1:]
    # Whatever an example writes goes to tmp_path, never into the checkout.
    written = [i + 1 for i, w in enumerate(words[:-1]) if w in OUTPUT_OPTIONS]
    words = [str(tmp_path / Path(w).name) if i in written or w.endswith(OUTPUT_EXTENSIONS) else w
             for i, w in enumerate(words)]
    before = sorted(path.name for path in REPO.iterdir())
    result = autodiff(words, {"PATH": os.path.dirname(sys.executable)}, stdin=subprocess.DEVNULL)
    expected = 1 if "# exit 1" in " ".join((main.commands[command].help or "").split(example)[1:2])[:40] else 0
    assert result.returncode in (0, 1), result.stderr
    assert "Traceback" not in result.stderr
    if expected == 0:
        assert result.returncode == 0, (example, result.stderr)
    assert sorted(path.name for path in REPO.iterdir()) == before, "the example wrote into the checkout"


def test_graph_help_says_pdf_needs_graphviz() -> None:
    text = " ".join(main.commands["graph"].help.split())
    assert "PDF needs the system Graphviz" in text and "-o neuron.pdf" not in text


@pytest.mark.parametrize(
    "args",
    [["eval", "y = 2*x", "--set", "x=1", "--format", "table"],
     ["check", "y = 2*x", "--set", "x=1", "--format", "table"],
     ["explain", "samples/karpathy.ad", "--format", "rich"],
     ["eval", "samples/mlp.ad", "--mode", "forward", "--format", "table"]],
    ids=["eval", "check", "explain", "eval_forward_note"],
)
@pytest.mark.parametrize("colour", [False, True], ids=["plain_pipe", "forced_colour"])
def test_rich_output_has_no_trailing_spaces(args, colour) -> None:
    env = {"FORCE_COLOR": "1"} if colour else {"NO_COLOR": "1"}
    result = autodiff(args, env)
    assert result.returncode == 0, result.stderr
    import re

    for line in result.stdout.splitlines():
        bare = re.sub(r"\x1b\[[0-9;]*m", "", line)
        assert bare == bare.rstrip(), repr(line)


@pytest.mark.parametrize("args", [["eval", "y = 2*x", "--set", "x=1", "--format", "table"],
                                  ["explain", "samples/karpathy.ad", "--format", "rich"],
                                  ["check", "y = 2*x", "--set", "x=1", "--format", "table"]],
                         ids=["eval", "explain", "check"])
@pytest.mark.parametrize("how", ["env", "option"])
def test_no_color_means_no_styling_at_all(args, how) -> None:
    # Rich's own NO_COLOR support drops colours but keeps bold and italics.
    env = {"FORCE_COLOR": "1", "NO_COLOR": "1"} if how == "env" else {"FORCE_COLOR": "1"}
    extra = ["--no-color"] if how == "option" else []
    result = autodiff([*args, *extra], env)
    assert result.returncode == 0
    assert "\x1b[" not in result.stdout


def test_forced_colour_does_colour() -> None:
    # The opposite check, so that the test above cannot pass by never colouring.
    result = autodiff(["eval", "y = 2*x", "--set", "x=1", "--format", "table"], {"FORCE_COLOR": "1"})
    assert "\x1b[" in result.stdout


@pytest.mark.parametrize("args", [["explain", "samples/karpathy.ad", "--format", "plain"],
                                  ["explain", "samples/karpathy.ad", "--format", "rich"],
                                  ["explain", "samples/karpathy.ad", "--format", "markdown"],
                                  ["eval", "y = 2*x", "--set", "x=1", "--format", "table"]],
                         ids=["plain", "rich", "markdown", "eval_table"])
def test_an_ascii_only_stdout_gets_escapes_not_a_traceback(args) -> None:
    result = autodiff(args, {"PYTHONIOENCODING": "ascii", "NO_COLOR": "1"})
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    if args[0] == "explain":
        assert "\\u2202L/\\u2202d" in result.stdout  # ∂L/∂d, written as an escape


HELP_LINES = 65  # what a person scans: the rest of a command's story is its page in docs/
# fit, graph and check have the most options (fit's optimiser, schedule, validation, metrics,
# report and stopping; graph's formats, levels and renderers): a line each, a few examples.
HELP_LINES_OF = {"fit": 60, "graph": 60, "check": 60}


def _help_case(name: str) -> object:
    return pytest.param(name, id=name or "group")


@pytest.mark.parametrize("columns", ["80", "200"])
@pytest.mark.parametrize("name", [_help_case(name) for name in ["", *sorted(main.commands)]])
def test_help_fits_80_columns_and_one_screenful(name: str, columns: str) -> None:
    """Every help line within 80 columns, at an 80-column terminal or a wider one, and the whole
    at most HELP_LINES lines."""
    result = autodiff([name, "--help"] if name else ["--help"], {"COLUMNS": columns})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    too_long = [line for line in lines if len(line) > 80]
    assert not too_long, too_long
    assert len(lines) <= HELP_LINES_OF.get(name, HELP_LINES), f"{len(lines)} lines"
