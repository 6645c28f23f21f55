"""The ops of issue 33 as a user meets them in the commands: a claim that uses maximum is
judged away from its ties and its derivative written whole; the words and arguments of the
new calls read back from what diff writes."""

from __future__ import annotations

import json

import numpy as np

from autodiff_cli.cli import main


def run(runner, *args):  # type: ignore[no-untyped-def]
    return runner.invoke(main, list(args), catch_exceptions=False)


def test_a_claim_with_maximum_is_judged_off_its_ties_and_its_derivative_written_whole(runner) -> None:  # type: ignore[no-untyped-def]
    program = "a = 1; b = 3; L = maximum(a, b) * b"
    # right where b > a, wrong where a > b: maximum(a, b) + b would need dmax/db = 1 everywhere
    wrong = run(runner, "check", "-e", program, "--claim", "dL/db = maximum(a, b) + b")
    assert wrong.exit_code == 1 and "WRONG" in wrong.stdout
    assert "maximum(a, b)" in wrong.stdout and "maximum(a)" not in wrong.stdout
    right = run(runner, "check", "-e", program, "--claim", "dL/db = (1 - sign(a - b))/2*b + maximum(a, b)")
    assert right.exit_code == 0, right.stdout  # the points where a = b (a kink) are not judged


def test_diffs_program_text_of_the_new_calls_reads_back_and_gives_evals_gradient(runner) -> None:  # type: ignore[no-untyped-def]
    program = ("x = [[1, 2, 6], [4, 4, 4]]\nv = var(x, 1, keepdim)\ns = std(x, 0, 0)\n"
               "p = softmax(reshape(x, [3, -1]), 0)\nL = sum(x * v) + sum(s) + sum(p[0]) + sum(minimum(x, 3))\n")
    derived = run(runner, "diff", "-e", program, "--wrt", "x", "--format", "program")
    assert derived.exit_code == 0, derived.stderr
    assert "var(x, 1, keepdim)" in derived.stdout and "softmax(" in derived.stdout
    got = json.loads(run(runner, "eval", "-e", derived.stdout, "--format", "json").stdout)["values"]["dL_dx"]
    want = json.loads(run(runner, "eval", "-e", program, "--format", "json").stdout)["grads"]["x"]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
