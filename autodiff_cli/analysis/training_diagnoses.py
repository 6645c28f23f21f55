"""What went wrong in a recorded training run, in sentences for the report and ``fit``'s last
line: a learning rate too high (divergence, a rising or oscillating loss), dead relu units,
saturated tanh or sigmoid layers, exploding or vanishing gradients.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ..engine.registry import activations
from .training_model import NEAR_LIMIT

if TYPE_CHECKING:
    from .training_record import Recording

__all__ = ["diagnose"]

SATURATED = 0.9  # the share of a tanh/sigmoid layer's activations near its limits that is saturation

EXPLODING = 1e3  # the gradient norm grew this many times over
VANISHING = 1e-6  # a group's gradient norm, relative to the largest group's, below this


def diagnose(record: Recording) -> list[str]:
    """Sentences naming what went wrong in the run ``record`` holds; empty when nothing did."""
    found = []
    found += _learning_rate(record)
    found += _layers(record)
    found += _gradients(record)
    return found


def _learning_rate(record: Recording) -> list[str]:
    losses = record.history_loss or record.train_loss
    lr = record.meta.get("lr")
    lower = f" (try --lr {_short(lr / 10)})" if isinstance(lr, (int, float)) and lr > 0 else ""
    if record.reason == "diverged":
        where = f" at step {record.bad_step}" if record.bad_step is not None else ""
        return [f"training diverged{where}: the learning rate is probably too high{lower}"]
    if len(losses) < 4:
        return []
    first, last = losses[0], losses[-1]
    if last > first:
        return [f"the loss rose from {_short(first)} to {_short(last)}: the learning rate is probably too high{lower}"]
    rises = sum(1 for a, b in zip(losses, losses[1:]) if b > a)
    full_batch = record.meta.get("batch_size") in (None, 0)
    if full_batch and rises / (len(losses) - 1) > 0.3 and last > 0.5 * first:
        return [f"the loss went up at {rises} of {len(losses) - 1} steps and ended at {_short(last)} from "
                f"{_short(first)}: it oscillates, the learning rate is probably too high{lower}"]
    return []


def _layers(record: Recording) -> list[str]:
    found = []
    for layer in record.activity:
        low, high = activations()[layer.op]
        if high is None and layer.dead:
            are, they = ("is", "it") if layer.dead == 1 else ("are", "they")
            found.append(f"{layer.dead} of the {layer.units} {layer.op} units of '{layer.name}' {are} dead: 0 on every "
                         f"training row at step {record.activity_step}, so {they} no longer learn"
                         f"{'s' if layer.dead == 1 else ''}")
        elif high is not None and layer.near_limit >= SATURATED:
            limits = f"{low:g} or {high:g}"
            found.append(f"the {layer.op} layer '{layer.name}' is saturated: {_percent(layer.near_limit)} of its "
                         f"activations are within {NEAR_LIMIT:g} of {limits} at step {record.activity_step}, "
                         f"where its gradient vanishes (scale the inputs, or start the weights smaller)")
    return found


def _gradients(record: Recording) -> list[str]:
    found = []
    norms = [n for n in record.grad_norm if math.isfinite(n)]
    if len(norms) >= 2 and norms[0] > 0 and max(norms[1:]) > EXPLODING * norms[0]:
        found.append(f"the gradient norm exploded from {_short(norms[0])} to {_short(max(norms[1:]))}")
    if len(record.groups) >= 2 and record.steps:
        # Per entry, so a big matrix is not favoured over a bias; at every recorded step, so a
        # group that has merely converged before the others is not mistaken for one starved.
        sizes = [math.sqrt(max(1, int(np.prod(group.shape)))) for group in record.groups]
        starved = set(range(len(record.groups)))
        for index in range(len(record.kept_steps)):
            norms = [group.grad_norm[index] / size for group, size in zip(record.groups, sizes)]
            largest = max(norms)
            if not largest > 0 or not math.isfinite(largest):
                continue
            starved &= {k for k, norm in enumerate(norms) if norm < VANISHING * largest}
        if starved:
            names = ", ".join(repr(record.groups[k].name) for k in sorted(starved))
            found.append(f"the gradients of {names} vanish: under {VANISHING:g} of the largest group's "
                         f"(per entry) at every recorded step")
    return found


def _short(x: float) -> str:
    return f"{x:.4g}"


def _percent(share: float) -> str:
    return f"{100 * share:.0f}%"


