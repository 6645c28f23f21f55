"""The vectorized executor (batch's) against the scalar engine on every sample program.

For each samples/*.ad (globbed, so a new sample is covered at once): random in-domain rows
around the program's defaults (uniform on [d - (|d| + 1)/2, d + (|d| + 1)/2], or on [-2, 2]
without a default), then wide rows (1,000 times as far; in decay, logistic, neuron_exp and
softmax_xent some overflow or leave a domain), evaluated row by row by ``execute.evaluate`` and
at once by ``evaluate_batch(on_error="nan")``.  The rows that fail must be the same; on the others
every variable's value and the output's gradient with respect to every input agree to
rel 1e-9 (abs 1e-12): NumPy's tanh, exp and log may differ from the C library's in the last bits.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from autodiff_cli.errors import EvaluationError
from autodiff_cli.execute import evaluate
from autodiff_cli.execute.batch_evaluator import evaluate_batch
from autodiff_cli.language import parse

# The samples in the scalar language (the tensor samples have tests of their own).
SAMPLES = [path for path in sorted((Path(__file__).resolve().parents[2] / "samples").glob("*.ad"))
           if not parse(path.read_text("utf-8")).has_tensors]
RTOL, ATOL = 1e-9, 1e-12


def test_there_are_samples() -> None:
    assert len(SAMPLES) >= 10


FAILING = {"decay", "logistic", "neuron_exp", "softmax_xent"}  # samples whose wide rows reach failures


@pytest.mark.parametrize("path", SAMPLES, ids=[path.stem for path in SAMPLES])
def test_batch_agrees_with_the_scalar_engine(path) -> None:
    program = parse(path.read_text(), str(path))
    rng = np.random.default_rng(sum(map(ord, path.stem)))
    near = 12 if len(program.inputs) > 50 else 40
    rows = near + 20
    columns = {}
    for variable in program.inputs:
        d = 0.0 if variable.default is None else variable.default
        spread = (abs(d) + 1) / 2 if variable.default is not None else 2.0
        columns[variable.name] = np.concatenate([rng.uniform(d - spread, d + spread, near),
                                                 rng.uniform(d - 1000 * spread, d + 1000 * spread, rows - near)])
    names = list(program.variables)
    batch = evaluate_batch(program, columns, values_of=names, on_error="nan")

    failed = []
    for row in range(rows):
        inputs = {name: float(column[row]) for name, column in columns.items()}
        try:
            scalar = evaluate(program, inputs)
        except EvaluationError:
            failed.append(row)
            continue
        values, grads = scalar.values(), scalar.grads()
        for name in names:
            assert batch.values[name][row] == pytest.approx(values[name], rel=RTOL, abs=ATOL), (row, name)
        for name in columns:
            assert batch.grads[name][row] == pytest.approx(grads[name], rel=RTOL, abs=ATOL), (row, name)
    assert np.flatnonzero(batch.failed).tolist() == failed
    assert all(row >= near for row in failed)  # the rows near the defaults are in the domain
    assert bool(failed) == (path.stem in FAILING)  # failing rows are compared where some occur
