"""A training step reuses memory the process already has (issue 34): the registers and the flat
gradient it makes and frees every step come back from glibc's heap, not from fresh mappings that
fault every page in again.  Counted, not timed: minor page faults per step after the first steps
(a 64-128-10 step over 256 rows made 240 a step when the heap was trimmed between steps)."""

from __future__ import annotations

import platform
import resource

import numpy as np
import pytest
from _mlp import mlp_program

from autodiff_cli.engine.optim import AdamRule
from autodiff_cli.execute.fit import plan_fit
from autodiff_cli.execute.objective import TensorObjective, starting_parameters
from autodiff_cli.language import parse

pytestmark = pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                                reason="glibc's malloc is the allocator whose heap this is about")

PROGRAM = mlp_program(64, 128, 10)


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def test_a_training_step_faults_in_no_fresh_pages() -> None:
    rng = np.random.default_rng(0)
    x, labels = rng.normal(size=(256, 64)), rng.integers(0, 10, size=256).astype(float)
    program = parse(PROGRAM, "mlp.ad")
    plan = plan_fit(program, [f"x[{i}]" for i in range(64)] + ["label"], {})
    weights = {"W1": rng.normal(0, 0.1, (128, 64)), "b1": np.zeros(128), "W2": rng.normal(0, 0.1, (10, 128)),
               "b2": np.zeros(10)}
    layout, params = starting_parameters(program, plan.parameters, weights, "normal", 0)
    objective = TensorObjective(program, plan.output, layout, plan.fixed, {"x": x, "label": labels})
    rule, state = AdamRule(), None
    for count in range(1, 201):
        if count == 101:
            before = _faults()
        _, grad = objective.loss_and_grad(params, None)
        params, state = rule.update(params, grad, state, count, 1e-3)
    per_step = (_faults() - before) / 100
    # the step's arrays are 2 to 256 KB: a step that mapped them afresh would fault over 100 pages
    assert per_step < 10, per_step
