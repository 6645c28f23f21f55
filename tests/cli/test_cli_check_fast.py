"""`autodiff check` at scale: the fast mode (random directions), the float interpreter that the
full check runs on, and progress at a terminal."""

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from autodiff_cli.analysis import check as ck
from autodiff_cli.cli import console, main
from autodiff_cli.engine.forward import tangent_at_root
from autodiff_cli.engine.graph import Tape
from autodiff_cli.execute import evaluate
from autodiff_cli.language import parse

REPO = Path(__file__).resolve().parents[2]
# The random-program generator of the differential test (tests/ is not a package).
sys.path.insert(0, str(REPO / "tests" / "properties"))
from test_differential import cases


def wide(n: int) -> str:
    lines = [f"x{i} = {(i % 7 - 3) / 5!r}" for i in range(n)]
    lines += [f"t{i} = tanh(x{i}*x{(i * 7) % n} + 0.3)" for i in range(n)]
    lines.append("y = " + " + ".join(f"t{i}" for i in range(n)))
    return "\n".join(lines) + "\n"


def test_fast_mode_checks_directions(runner) -> None:
    result = runner.invoke(main, ["check", wide(300), "--fast", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert (document["mode"], document["seed"], document["input_count"]) == ("directions", 0, 300)
    assert [d["verdict"] for d in document["directions"]] == ["ok", "ok"]
    assert "inputs" not in document


def test_fast_mode_directional_derivative_is_the_gradient_dotted_with_the_direction() -> None:
    # y = 3a + 5b: every directional derivative is 3 v_a + 5 v_b, and the difference is exact.
    evaluation = evaluate(parse("y = 3*a + 5*b"), {"a": 0.5, "b": -2.0})
    result = ck.check_directions(evaluation, count=3, seed=7)
    assert [c.verdict for c in result.inputs] == ["ok"] * 3
    for c in result.inputs:
        assert c.reverse == pytest.approx(c.forward, rel=1e-15)
        assert abs(c.finite_difference - c.reverse) <= c.fd_error + 1e-15


def test_the_same_seed_gives_the_same_directions_and_another_seed_others(runner) -> None:
    args = ["check", "samples/mlp.ad", "--fast", "--format", "json"]
    first, second = (runner.invoke(main, args).stdout for _ in range(2))
    other = runner.invoke(main, [*args, "--seed", "1"]).stdout
    assert first == second
    assert json.loads(first)["directions"][0]["reverse"] != json.loads(other)["directions"][0]["reverse"]


def test_fast_mode_falls_back_to_name_the_culprit(runner) -> None:
    result = runner.invoke(main, ["check", "y = relu(a) + b", "--set", "a=0", "--set", "b=1", "--fast"])
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines[0] == ("note: the fast check found 2 of 2 random directions not ok; the full check, one input "
                        "at a time, follows")
    assert lines[1].startswith("check failed: a: ")
    assert result.stdout.splitlines()[-1].startswith("dy/d input, 2 inputs: 1 of 2 disagree")


def test_a_wrong_gradient_is_caught_by_the_fast_mode() -> None:
    evaluation = evaluate(parse(wide(50)), {})
    evaluation.nodes["x17"].grad += 0.5  # a backprop bug in one input of fifty
    result = ck.check_directions(evaluation, count=2)
    assert all(c.verdict == "fail" for c in result.inputs)
    full = ck.check_evaluation(evaluation, fast=True)
    assert [c.name for c in full.failures] == ["x17"]


def test_the_full_check_agrees_with_the_old_per_input_evaluation() -> None:
    # The float interpreter is only a faster way to get the same outputs: the verdicts and
    # the differences equal those of a check whose outputs come from evaluate() itself.
    program = parse(wide(40))
    evaluation = evaluate(program, {})
    fast_path = ck.check_gradients(evaluation)
    original = ck.FloatPoint

    class EvaluatePoint(original):  # every moved output recomputed by the scalar interpreter
        def output_with(self, name, value):
            point = {v.name: evaluation.nodes[v.name].data for v in program.inputs}
            return evaluate(program, {**point, name: value}, backward=False).root.data

    ck.FloatPoint = EvaluatePoint
    try:
        slow_path = ck.check_gradients(evaluation)
    finally:
        ck.FloatPoint = original
    assert fast_path == slow_path


def test_progress_waits_a_second_then_shows_and_goes(monkeypatch) -> None:
    now = [100.0]
    progress = console.Progress("checking gradients", enabled=True)
    progress._clock = lambda: now[0]
    progress._started = 100.0
    progress(1, 10)
    assert progress._bar is None  # under a second: nothing shown
    now[0] = 101.5
    progress(2, 10)
    assert progress._bar is not None
    assert progress._bar.tasks[0].completed == 2 and progress._bar.tasks[0].total == 10
    progress.__exit__(None, None, None)
    assert not progress._bar.live.is_started


def test_no_progress_when_stderr_is_not_a_terminal(runner, monkeypatch) -> None:
    monkeypatch.setattr(console, "PROGRESS_AFTER", 0.0)
    result = runner.invoke(main, ["check", wide(50), "--format", "json"])
    assert result.exit_code == 0 and result.stderr == ""


@pytest.mark.skipif(shutil.which("script") is None, reason="needs util-linux script for a terminal")
def test_progress_at_a_terminal(tmp_path) -> None:
    program = tmp_path / "wide.ad"
    program.write_text(wide(200))
    code = ("import sys; from autodiff_cli.cli import console, main; console.PROGRESS_AFTER = 0.0; "
            f"main.main(['check', {str(program)!r}, '--format', 'json'], prog_name='autodiff')")
    command = f"{sys.executable} -c \"{code}\" > {tmp_path / 'out.json'}"
    result = subprocess.run(["script", "-qec", command, "/dev/null"], capture_output=True, text=True, check=False,
                            env={**os.environ, "PYTHONPATH": str(REPO), "TERM": "xterm"}, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "checking gradients" in result.stdout  # what the terminal showed
    assert json.loads((tmp_path / "out.json").read_text())["ok"] is True


# --- every input's points at once, by the vectorized executor -----------------------------------


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.data_too_large])
@given(cases())
def test_batched_points_give_the_same_verdicts_as_one_by_one(case) -> None:
    evaluation = evaluate(parse(case.text, "<generated>"), case.values)
    one = ck.check_gradients(evaluation, batch=False)
    many = ck.check_gradients(evaluation, batch=True)
    for a, b in zip(one.inputs, many.inputs):
        assert (a.name, a.verdict) == (b.name, b.verdict), (case.text, a.reason, b.reason)
        assert a.forward == b.forward or (math.isnan(a.forward) and math.isnan(b.forward))
        if a.finite_difference is not None and b.finite_difference is not None:
            assert abs(a.finite_difference - b.finite_difference) <= a.fd_error + b.fd_error


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.data_too_large])
@given(cases())
def test_vectorized_forward_mode_is_the_scalar_one_bit_for_bit(case) -> None:
    evaluation = evaluate(parse(case.text, "<generated>"), case.values)
    tape = Tape.of(evaluation.root)
    seeds = [tape.index.get(evaluation.nodes[v.name]) for v in evaluation.program.inputs]
    want = [0.0 if seed is None else tangent_at_root(tape, seed) for seed in seeds]
    got = ck.forward_tangents(tape, seeds)
    for g, w in zip(got, want):
        assert g == w or (math.isnan(g) and math.isnan(w)), (case.text, got, want)


@pytest.mark.parametrize(
    ("program", "values"),
    [("y = (x-1)**1.5 + (1-x)**1.5", {"x": 1.0}), ("y = log(x)", {"x": 1e-7}), ("y = exp(x)", {"x": 709.78}),
     ("y = relu(a) + sqrt(b)", {"a": 0.0, "b": 0.0}), ("y = sign(x)", {"x": 0.0})],
    ids=["domain_edge", "near_log_edge", "near_overflow", "kink_and_vertical_slope", "jump"],
)
def test_batched_points_say_the_same_at_domain_edges(program, values) -> None:
    evaluation = evaluate(parse(program), values)
    one = ck.check_gradients(evaluation, batch=False)
    many = ck.check_gradients(evaluation, batch=True)
    assert [(c.verdict, c.reason) for c in one.inputs] == [(c.verdict, c.reason) for c in many.inputs]


def test_many_inputs_use_the_batch_and_few_do_not(monkeypatch) -> None:
    used = []
    original = ck._Together

    class Recording(original):
        def __init__(self, *args, **kwargs):
            used.append(True)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(ck, "_Together", Recording)
    ck.check_gradients(evaluate(parse(wide(ck.BATCH_INPUTS - 1)), {}))
    assert used == []
    result = ck.check_gradients(evaluate(parse(wide(ck.BATCH_INPUTS)), {}))
    assert used == [True] and result.ok


def test_the_readme_example_of_what_fast_mode_misses_is_true(runner) -> None:
    # README: the kink's 0.5 in relu(k) at k = 0 hides behind x's gradient of 100,000.
    args = ["check", "y = relu(k) + 100000*x", "--set", "k=0", "--set", "x=1"]
    assert runner.invoke(main, [*args, "--fast"]).exit_code == 0
    full = runner.invoke(main, args)
    assert full.exit_code == 1 and "FAIL" in full.stdout


def test_an_infinite_derivative_along_a_direction_is_said_in_words(runner) -> None:
    # A tensor program's check names its random directions; the reason once read
    # "reverse mode gives inf for d/ddirection 1 at direction 1 = 0".
    result = runner.invoke(main, ["check", "x = [0, 2]\ny = sum(sqrt(x))", "--format", "json"])
    assert result.exit_code == 1, result.stderr
    reasons = {row["name"]: row["reason"] for row in json.loads(result.stdout)["inputs"]}
    assert reasons["direction 1"] == ("reverse mode gives inf along direction 1: the derivative along it is "
                                      "unbounded or undefined here")
    assert reasons["x[0]"] == "reverse mode gives inf for d/dx[0] at x[0] = 0: the derivative is unbounded or " \
                              "undefined here"


def test_a_tensor_checks_summary_counts_directions_and_entries_not_inputs(runner) -> None:
    # x has 3 entries, checked along 2 random directions and at each of its 3 entries: the
    # summary once said "5 inputs" of a program with one input of 3 entries.
    result = runner.invoke(main, ["check", "x = [1, 2, 3]\ny = sum(x**2)"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[-1] == ("dy/d input, 2 random directions and 3 input entries: all agree "
                                              "(rtol 0.001, atol 1e-05)")
