"""Claims about a tensor program's gradient, in matrix form: ``dL/dW = transpose(X) @ (P - Y) * 2 / 8``.

The scalar claims (``claims.py``) are proved symbolically; a tensor program has no symbolic
derivative here, so a matrix-form claim is judged by its values: the claim's expression (in the
language, over the program's variables) against the tool's reverse-mode gradient, entry by entry,
at the given values and at random points around them (seeded).  The verdicts are ``wrong`` (with
the entry that differs most, both values, and the slip if it is a known one: a transposed
result, a flipped sign, a constant factor such as a missing ``2/N``, a formula that is 0, or one
undefined where the gradient is defined), ``agrees`` at every point tried (never ``proved``), or
``inconclusive`` where nothing could be compared.  The program must run at the given values:
its error there is its own, and is raised as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import AutodiffError, ShapeError
from ..execute.interpreter import TensorRun, input_arrays, run_forward
from ..language.program import Program
from ..language.shapes import shape_text
from .claim_text import ClaimLine
from .claims import (
    ABSOLUTE,
    AGREES,
    INCONCLUSIVE,
    RELATIVE,
    WRONG,
    ClaimResult,
    ClaimsReport,
    Counterexample,
    Slip,
    UnjudgedClaim,
    _ratio_text,
)
from .tensor_check import _labels

__all__ = ["POINTS", "check_tensor_claims"]

POINTS = 8  # the given values and this many less one random points around them
DOMAIN = "the given values and random points around them (each entry moved by up to its size, at least 1)"


def check_tensor_claims(program: Program, values: Mapping[str, Any], items: Sequence[ClaimLine], *,
                        seed: int = 0) -> ClaimsReport:
    """The verdict of every claim in ``items`` on a tensor program (definitions are refused).
    An error of the program at the given values (a shape error, a value outside its domain) is
    raised as it is: it is the program's, and ``eval`` reports the same."""
    base = input_arrays(program, values, seed)
    runs = [run_forward(program, base)]
    labels = _labels(runs[0])  # class numbers: moved, they would be no classes at all
    for k in range(1, POINTS):
        try:
            runs.append(run_forward(program, _around(base, np.random.default_rng([seed, k]), labels)))
        except AutodiffError:
            continue  # outside the program's domain: not a point to judge at
    results = []
    for item in items:
        if item.name is not None:
            raise UnjudgedClaim(f"a definition ('{item.name} = ...') is for scalar claims; a tensor claim writes "
                                "its expression whole", item.head_at, item.source)
        results.append(_check(program, item, runs))
    return ClaimsReport(results, against="the gradient by reverse mode")


def _around(point: Mapping[str, Any], generator: Any, fixed: set[str]) -> dict[str, Any]:
    return {name: value if name in fixed else
            value + generator.uniform(-1.0, 1.0, np.shape(value)) * np.maximum(1.0, np.abs(value))
            for name, value in point.items()}


def _check(program: Program, item: ClaimLine, runs: Sequence[TensorRun]) -> ClaimResult:
    if len(item.wrt) != 1:
        raise UnjudgedClaim(f"{item.label}: second derivatives of a tensor program are not checked", item.head_at,
                            item.source, hint="claim a first derivative, dL/dW")
    output, wrt = item.output, item.wrt[0]
    result = ClaimResult(item.label, item.written, item.rhs, item.where, AGREES,
                         f"(the gradient by reverse mode: autodiff eval --wrt {wrt})")
    pairs = []
    at_given = []  # whether each pair is at the given values (runs[0]) or around them
    for run in runs:
        if np.ndim(run.value(output)):
            raise UnjudgedClaim(f"{item.label}: '{output}' has shape {shape_text(np.shape(run.value(output)))}; "
                                "a gradient is of a number", item.head_at, item.source,
                                hint=f"claim the derivative of sum({output}) or mean({output}) by naming it")
        truth = run.gradients(output, [wrt])[wrt]
        if not np.all(np.isfinite(truth)):
            continue  # no gradient to compare with here (a scalar claim skips such points too)
        claimed: Any  # the claim's values, or why it is undefined here
        try:
            claimed = np.asarray(run_forward(item.expression, {name: run.value(name) for name in _inputs(item)})
                                 .value(item.expression.result), dtype=float)
        except ShapeError as error:  # the formula cannot be computed at all
            result.verdict = WRONG
            result.slip = Slip("shape", f"your formula cannot be computed: {error.message}")
            return result
        except AutodiffError as error:  # undefined here (a division by zero, a log of a negative)
            claimed = error
        pairs.append((truth, claimed))
        at_given.append(run is runs[0])
    if not pairs:
        result.verdict, result.reason = INCONCLUSIVE, f"{item.label} is not finite at any point tried"
        return result
    defined = [(t, c) for t, c in pairs if not isinstance(c, AutodiffError)]
    if defined and np.shape(defined[0][1]) != np.shape(defined[0][0]):
        truth, claimed = defined[0]
        result.verdict = WRONG
        transposed = np.ndim(claimed) == 2 and np.shape(claimed) == np.shape(truth)[::-1]
        detail = "your formula is transposed" if transposed else "the shapes differ"
        result.slip = Slip("transposed" if transposed else "shape",
                           f"{detail}: it has shape {shape_text(np.shape(claimed))}, and {item.label} has the shape "
                           f"of {wrt}, {shape_text(np.shape(truth))}")
        return result
    differs = [isinstance(c, AutodiffError) or not np.all(_agree(c, t)) for t, c in pairs]
    if not any(differs) and all(at_given):
        result.verdict = INCONCLUSIVE  # one point cannot tell a claim right there only
        result.reason = (f"{item.label} agrees only at the given values: no random point around them could be "
                         "compared (the program or its gradient is undefined there), and one point cannot tell "
                         "a claim right there alone from a right one")
        return result
    if not any(differs):
        result.points, result.domain = len(pairs), DOMAIN
        result.reason = "equal at every point tried (a tensor claim is judged by its values, not proved)"
        return result
    result.verdict = WRONG
    first = differs.index(True)
    truth, claimed = pairs[first]
    where = " at the given values" if at_given[first] else " at a random point near the given values"
    if isinstance(claimed, AutodiffError):  # undefined where the gradient is defined, as a scalar claim
        entry = f"{wrt}[{', '.join('0' * np.ndim(truth))}]" if np.ndim(truth) else wrt
        result.counterexample = Counterexample({}, None, float(np.ravel(truth)[0]), None, entry + where)
        result.slip = Slip("undefined", f"your formula is undefined{where} ({claimed.message}), where "
                                        f"{item.label} is defined")
        return result
    gap = np.abs(claimed - truth)
    worst = np.unravel_index(int(np.argmax(gap)), np.shape(gap)) if np.ndim(gap) else ()
    entry = f"{wrt}[{', '.join(map(str, worst))}]" if worst else wrt
    result.counterexample = Counterexample({}, float(claimed[worst]), float(truth[worst]),
                                           float(claimed[worst] - truth[worst]), entry + where)
    result.slip = _slip(defined, item.label)
    return result


def _inputs(item: ClaimLine) -> list[str]:
    return [variable.name for variable in item.expression.inputs]


def _agree(a: Any, b: Any) -> Any:
    with np.errstate(all="ignore"):
        return np.isfinite(a) & (np.abs(a - b) <= ABSOLUTE + RELATIVE * np.maximum(np.abs(a), np.abs(b)))


def _slip(pairs: Sequence[tuple[Any, Any]], label: str) -> Slip:
    """The slip that explains the claim at every point: a transposed square matrix, a claim
    that is 0 where the gradient is not, a flipped sign or another constant factor."""
    if all(np.ndim(t) == 2 and np.shape(t)[0] == np.shape(t)[1] and np.all(_agree(c, np.transpose(t)))
           for t, c in pairs):
        return Slip("transposed", f"your formula is transposed: it is the transpose of {label} (a square "
                                  "matrix, so the shapes agree)")
    if all(np.all(c == 0.0) for _, c in pairs):
        return Slip("factor", f"your formula is 0 at every point tried, but {label} is not 0 everywhere (a term, "
                            "or the upstream gradient, is missing?)")
    ratios = []
    with np.errstate(all="ignore"):
        for truth, claimed in pairs:
            usable = np.abs(truth) > 1e-9
            ratios.extend((claimed[usable] / truth[usable]).ravel().tolist())
    if len(ratios) >= 2:
        ratio = float(np.median(ratios))
        if np.all(np.abs(np.array(ratios) - ratio) <= 1e-8 * abs(ratio)) and abs(ratio - 1.0) > 1e-9:
            if abs(ratio + 1.0) < 1e-9:
                return Slip("sign", "the sign of the whole derivative is flipped")
            written = _ratio_text(ratio) or f"{ratio:g}"
            return Slip("factor", f"off by a factor of {written}: your formula is {written} times {label} (a "
                                  "mean's 1/N, or the 2 of a square?)")
    return Slip("unknown", f"no known slip explains the difference; eval --wrt shows {label} entry by entry")
