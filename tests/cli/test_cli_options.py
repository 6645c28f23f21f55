"""Every numeric option of every command, found by walking the commands (so a new option is
covered without being listed): nan, infinities, huge and negative values are usage errors
(exit 2) or an accepted value, never a traceback or a silent wrong result."""

from pathlib import Path

import click
import pytest

from autodiff_cli.cli import main

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

BASE = {
    "eval": ["y = 2*x", "--set", "x=1"],
    "explain": ["y = 2*x", "--set", "x=1"],
    "check": ["y = 2*x", "--set", "x=1"],
    "graph": ["y = 2*x", "--set", "x=1", "--renderer", "bundled"],
    # --tol ends a run whose --steps is huge; --quiet keeps the output to the parameters.
    "fit": [str(SAMPLES / "line.ad"), "--data", str(SAMPLES / "line.csv"), "--steps", "3", "--tol", "1e-6", "-q"],
    "plot": ["y = 2*x", "--range", "x=0:1", "--format", "text"],
    "batch": [str(SAMPLES / "regression.ad"), str(SAMPLES / "regression.csv")],
    "diff": ["y = 2*x**2", "--format", "text"],
}


def numeric_options() -> list[tuple[str, str, bool]]:
    """(command, option, is_float) for every option whose type is a number."""
    found = []
    for name, command in sorted(main.commands.items()):
        for param in command.params:
            if not isinstance(param, click.Option) or param.is_flag:
                continue
            if isinstance(param.type, (click.types.FloatParamType, click.types.IntParamType)):
                found.append((name, max(param.opts, key=len), isinstance(param.type, click.types.FloatParamType)))
    return found


OPTIONS = numeric_options()


def test_the_walk_finds_the_known_options() -> None:
    assert {(c, o) for c, o, _ in OPTIONS} >= {
        ("graph", "--timeout"), ("graph", "--max-nodes"), ("graph", "--precision"), ("check", "--rtol"),
        ("check", "--atol"), ("explain", "--max-steps"), ("eval", "--precision"), ("fit", "--lr"),
        ("fit", "--steps"), ("fit", "--tol"), ("fit", "--weight-decay"), ("fit", "--batch-size"), ("batch", "--precision"),
        ("diff", "--order")}
    assert set(BASE) == set(main.commands)


@pytest.mark.parametrize("text", ["nan", "NaN", "inf", "-inf", "infinity"])
@pytest.mark.parametrize(("command", "option", "is_float"), OPTIONS, ids=[f"{c} {o}" for c, o, _ in OPTIONS])
def test_non_finite_values_are_usage_errors(runner, command, option, is_float, text) -> None:
    result = runner.invoke(main, [command, *BASE[command], option, text])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert "Usage:" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("text", ["1e300", "1e308", "99999999999999999999999999999999", "-1", "-0", "0", "1"])
@pytest.mark.parametrize(("command", "option", "is_float"), OPTIONS, ids=[f"{c} {o}" for c, o, _ in OPTIONS])
def test_extreme_values_are_accepted_or_refused_cleanly(runner, command, option, is_float, text) -> None:
    result = runner.invoke(main, [command, *BASE[command], option, text])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in (0, 1, 2), (result.stdout, result.stderr)
    if result.exit_code == 2:
        assert "Usage:" in result.stderr
    if result.exit_code == 1 and command == "fit":  # e.g. --lr 1e300: training diverges, said so
        assert "error:" in result.stderr and "so training stopped" in result.stderr
    elif result.exit_code == 1:  # e.g. --max-nodes 1: the graph is too large, said as an error
        assert result.stderr.startswith("error: the graph of y has 3 values")


@pytest.mark.parametrize("text", ["nan", "inf", "1e300", "1e7"])
def test_timeout_beyond_the_limit_says_the_range(runner, text) -> None:
    result = runner.invoke(main, ["graph", *BASE["graph"], "--timeout", text])
    assert result.exit_code == 2
    assert "--timeout" in result.stderr and "1000000" in result.stderr and "0 for no limit" in result.stderr


def test_a_huge_max_steps_means_all(runner) -> None:
    result = runner.invoke(main, ["explain", "y = a*a", "--set", "a=3", "--max-steps", "9" * 30])
    assert result.exit_code == 0
    assert result.stdout == runner.invoke(main, ["explain", "y = a*a", "--set", "a=3", "--max-steps", "0"]).stdout


def test_infinite_tolerance_would_pass_anything_so_it_is_refused(runner) -> None:
    # A wrong gradient (relu at 0) must not pass because the tolerance swallowed it.
    result = runner.invoke(main, ["check", "y = relu(x)", "--set", "x=0", "--rtol", "inf"])
    assert result.exit_code == 2 and "finite" in result.stderr


@pytest.mark.parametrize("engine, shown", [("", None), ("python", "pure Python")], ids=["default", "python"])
def test_version_names_the_engine(engine: str, shown: str | None) -> None:
    # From a checkout, `python -c` imports the source tree's pure engine while `autodiff` runs the
    # installed compiled one: --version is the place that says which one a command uses.
    import os
    import subprocess
    import sys
    from importlib.metadata import version

    from autodiff_cli.engine.value import COMPILED

    result = subprocess.run([sys.executable, "-m", "autodiff_cli", "--version"], capture_output=True, text=True,
                            env={**os.environ, "AUTODIFF_ENGINE": engine}, check=False,
                            cwd=Path(__file__).parent)
    expected = shown or ("compiled with mypyc" if COMPILED else "pure Python")
    assert (result.returncode, result.stdout) == (0, f"autodiff, version {version('autodiff-cli')} (engine: {expected})\n")


def test_version_from_a_checkout_that_was_never_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    # importlib.metadata knows no such distribution there: a version, not a traceback.
    from importlib import metadata

    from click.testing import CliRunner

    def not_installed(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", not_installed)
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0 and result.output.startswith("autodiff, version unknown (not installed) (engine: ")


# --- --set: a tensor written as a list, and .npy files (issues 35, 36) ----------------------------

@pytest.mark.parametrize(("given", "advice"), [("0.5,-0.3", "x='[0.5, -0.3]'"), ("1, 2, 3", "x='[1, 2, 3]'"),
                                               ("(1,2)", "x='[1, 2]'")])
def test_a_comma_separated_value_is_shown_as_json(runner, given, advice) -> None:
    result = runner.invoke(main, ["eval", "y = sum(x)", "--set", f"x={given}"])
    assert result.exit_code == 2 and f"is not a number (write it as 2, -0.5 or 1e-3); for a tensor, write it as " \
                                      f"JSON: {advice}" in result.stderr


def test_a_word_gets_no_tensor_advice(runner) -> None:
    result = runner.invoke(main, ["eval", "y = 2*x", "--set", "x=a,b"])
    assert result.exit_code == 2 and "'a,b' is not a number" in result.stderr and "JSON" not in result.stderr


def _npy_error(runner, path) -> str:
    result = runner.invoke(main, ["eval", "y = sum(x)", "--set", f"x={path}"])
    assert result.exit_code == 2 and "Traceback" not in result.stderr, repr(result.exception)
    assert isinstance(result.exception, SystemExit)
    return " ".join(result.stderr.split())  # Click wraps long messages


def test_an_empty_npy_file_is_said_to_be_empty(runner, tmp_path) -> None:
    (tmp_path / "x.npy").write_bytes(b"")
    assert "x.npy' is empty, not a .npy file; save the array with NumPy" in _npy_error(runner, tmp_path / "x.npy")


@pytest.mark.parametrize("content", [b"1 2 3\n", b"\0" * 64, b"PK\x03\x04 a zip"], ids=["text", "zeros", "zip"])
def test_a_file_that_is_not_npy_is_not_said_to_hold_objects(runner, tmp_path, content) -> None:
    (tmp_path / "x.npy").write_bytes(content)
    said = _npy_error(runner, tmp_path / "x.npy")
    assert "is not a .npy file: it does not begin with NumPy's header" in said and "Python objects" not in said


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_dev_zero_named_npy_is_not_a_npy_file(runner, tmp_path) -> None:
    (tmp_path / "zero.npy").symlink_to("/dev/zero")
    assert "is not a .npy file" in _npy_error(runner, tmp_path / "zero.npy")


def test_a_damaged_npy_header_is_said_to_be_damaged(runner, tmp_path) -> None:
    import numpy as np

    np.save(tmp_path / "x.npy", np.array([1.5, 2.0]))
    whole = (tmp_path / "x.npy").read_bytes()
    (tmp_path / "cut.npy").write_bytes(whole[:30])
    (tmp_path / "garbled.npy").write_bytes(whole[:10] + b"garbage" + whole[17:])
    for name in ("cut.npy", "garbled.npy"):
        said = _npy_error(runner, tmp_path / name)
        assert f"{name}' is a damaged .npy file" in said and "Python objects" not in said


def test_a_npy_file_of_objects_still_says_so(runner, tmp_path) -> None:
    import numpy as np

    np.save(tmp_path / "x.npy", np.array([1, "a", None], dtype=object), allow_pickle=True)
    assert "holds Python objects, which are never loaded" in _npy_error(runner, tmp_path / "x.npy")


def test_a_npy_file_of_more_axes_than_a_tensor_may_have_is_refused(runner, tmp_path) -> None:
    import numpy as np

    np.save(tmp_path / "x.npy", np.ones([1] * 41))
    assert "holds an array of 41 axes, more than a tensor may have (32)" in _npy_error(runner, tmp_path / "x.npy")
    np.save(tmp_path / "ok.npy", np.ones([1] * 32))  # the limit itself is a tensor
    assert runner.invoke(main, ["eval", "y = sum(x)", "--set", f"x={tmp_path / 'ok.npy'}"]).exit_code == 0


@pytest.mark.parametrize("name", ["w.npy", "w.json"])
def test_a_npy_file_given_as_the_values_file_says_to_use_set(runner, tmp_path, name) -> None:
    import numpy as np

    np.save(tmp_path / "w.npy", np.array([[1.0], [2.0]]))
    if name != "w.npy":
        (tmp_path / "w.npy").rename(tmp_path / name)
    result = runner.invoke(main, ["eval", "y = sum(W)", "--values", str(tmp_path / name)])
    assert result.exit_code == 1 and "UTF-8" not in result.stderr
    assert result.stderr.startswith(f"error: {tmp_path / name} is a NumPy .npy file: it holds one array, where a "
                                    "values file is a JSON object naming each input")
    assert "hint: give the array to its input with --set NAME=" in result.stderr


def test_a_npy_value_that_is_not_finite_is_named_by_its_entry(runner, tmp_path) -> None:
    """A NaN in a .npy file is said at its entry (the message named only the array's dtype and shape)."""
    import numpy as np

    path = tmp_path / "w.npy"
    np.save(path, np.array([[1.0], [np.nan]]))
    result = runner.invoke(main, ["eval", "y = sum(W)", "--set", f"W={path}"])
    assert result.exit_code == 2
    assert "holds nan at entry [1, 0], not a finite number" in result.output
