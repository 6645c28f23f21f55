"""What went wrong in a recorded training run, in sentences for the report and ``fit``'s last
line: a learning rate too high (divergence, a rising or oscillating loss), dead relu units,
saturated tanh or sigmoid layers, exploding or vanishing gradients.  When nothing did,
``observations`` says what each check saw, so that the report shows what "fine" rests on.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ..engine.registry import activations
from .training_model import NEAR_LIMIT

if TYPE_CHECKING:
    from .training_record import Recording

__all__ = ["diagnose", "observations"]

OSCILLATING = 0.3  # the share of a full-batch run's steps at which the loss went up that is oscillation
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


def observations(record: Recording) -> list[str]:
    """What the checks of ``diagnose`` saw in ``record``, a sentence each: the loss's course, the
    activation layers, the gradients; for a report to show when none of them found a problem."""
    return _loss_course(record) + _layer_activity(record) + _gradient_course(record)


def _loss_course(record: Recording) -> list[str]:
    losses = [x for x in (record.history_loss or record.train_loss) if math.isfinite(x)]
    if len(losses) < 4:
        return [f"{len(losses)} losses were recorded: too few to judge the learning rate by"]
    first, last = losses[0], losses[-1]
    rises = sum(1 for a, b in zip(losses, losses[1:]) if b > a)
    steps = len(losses) - 1
    if not rises:
        went = f"it fell or held at every one of its {steps:,} steps"
    elif record.meta.get("batch_size") not in (None, 0):
        went = f"it went up at {rises:,} of its {steps:,} steps, as mini-batches make it"
    elif rises / steps <= OSCILLATING:
        went = f"it went up at {rises:,} of its {steps:,} steps, too few to be an oscillation"
    else:
        went = f"it went up at {rises:,} of its {steps:,} steps but ended under half its first value"
    course = f"fell from {_short(first)} to {_short(last)}" if last < first else f"stayed at {_short(first)}"
    return [f"the loss {course}; {went}: nothing says the learning rate is too high"]


def _layer_activity(record: Recording) -> list[str]:
    if not record.activity:
        return ["the program has no relu, tanh or sigmoid layer to look for dead or saturated units in"]
    seen = []
    for layer in record.activity:
        low, high = activations()[layer.op]
        if high is None:
            seen.append(f"none of the {layer.units} {layer.op} units of '{layer.name}' is dead at step "
                        f"{record.activity_step} ({_percent(layer.zero_share)} of its activations are 0)")
        else:
            seen.append(f"the {layer.op} layer '{layer.name}' is not saturated at step {record.activity_step}: "
                        f"{_percent(layer.near_limit)} of its activations are within {NEAR_LIMIT:g} of "
                        f"{low:g} or {high:g}")
    return seen


def _gradient_course(record: Recording) -> list[str]:
    norms = [n for n in record.grad_norm if math.isfinite(n)]
    if len(norms) < 2:
        return []
    seen = [f"the gradient norm went from {_short(norms[0])} to {_short(norms[-1])}, at most "
            f"{_short(max(norms))}: it did not explode"]
    if len(record.groups) >= 2:
        seen.append(f"every parameter's gradient was at least {VANISHING:g} of the largest group's (per entry) "
                    "at some recorded step: none vanished")
    return seen


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
    if full_batch and rises / (len(losses) - 1) > OSCILLATING and last > 0.5 * first:
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


