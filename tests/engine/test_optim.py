"""autodiff_cli.optim: updates derived by hand, the same rules on arrays, and torch.optim where installed.

Hand derivations are in the comments.  The torch comparisons skip (with a reason) when
PyTorch is not installed; it is not a CI dependency.
"""

from __future__ import annotations

import inspect
import math
import random
from types import SimpleNamespace

import numpy as np
import pytest

from autodiff_cli.engine import Value
from autodiff_cli.optim import SGD, Adam, AdamRule, SGDRule, scheduled_lr

try:
    import torch
except ImportError:  # the comparisons below skip
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed: the torch.optim comparison is skipped")


def one_step(optimizer_class, p0: float, grads: list[float], **kwargs) -> list[float]:
    """The parameter after each step of ``optimizer_class`` when its gradients are ``grads``."""
    p = Value(p0)
    optimizer = optimizer_class([p], **kwargs)
    seen = []
    for g in grads:
        optimizer.zero_grad()
        p.grad = g
        optimizer.step()
        seen.append(p.data)
    return seen


# --- SGD by hand ---------------------------------------------------------------------------------


def test_sgd_plain() -> None:
    # p = 1 - 0.5 * 0.25 = 0.875, then 0.875 - 0.5 * (-1) = 1.375 (exact in binary)
    assert one_step(SGD, 1.0, [0.25, -1.0], lr=0.5) == [0.875, 1.375]


def test_sgd_weight_decay_adds_decay_times_param_to_the_gradient() -> None:
    # g' = 0.25 + 0.5 * 2 = 1.25; p = 2 - 0.5 * 1.25 = 1.375
    assert one_step(SGD, 2.0, [0.25], lr=0.5, weight_decay=0.5) == [1.375]


def test_sgd_momentum_buffer_starts_at_the_gradient() -> None:
    # step 1: b = g = 1, p = 0 - 0.5 * 1 = -0.5
    # step 2: b = 0.5 * 1 + 1 * 1 = 1.5, p = -0.5 - 0.5 * 1.5 = -1.25
    # step 3: b = 0.5 * 1.5 + 1 * 1 = 1.75, p = -1.25 - 0.875 = -2.125
    assert one_step(SGD, 0.0, [1.0, 1.0, 1.0], lr=0.5, momentum=0.5) == [-0.5, -1.25, -2.125]


def test_sgd_dampening_scales_the_new_gradient_after_the_first_step() -> None:
    # step 1: b = 1 (no dampening on the first step), p = -1
    # step 2: b = 0.5 * 1 + (1 - 0.5) * 1 = 1, p = -2
    assert one_step(SGD, 0.0, [1.0, 1.0], lr=1.0, momentum=0.5, dampening=0.5) == [-1.0, -2.0]


def test_sgd_nesterov_looks_ahead() -> None:
    # step 1: b = 1, g = 1 + 0.5 * 1 = 1.5, p = -0.75 with lr 0.5
    # step 2: b = 0.5 + 1 = 1.5, g = 1 + 0.75 = 1.75, p = -0.75 - 0.875 = -1.625
    assert one_step(SGD, 0.0, [1.0, 1.0], lr=0.5, momentum=0.5, nesterov=True) == [-0.75, -1.625]


# --- Adam by hand --------------------------------------------------------------------------------


def test_adam_with_a_constant_gradient_moves_lr_times_g_over_abs_g_plus_eps_each_step() -> None:
    # With g constant, m_t = (1 - b1^t) g and v_t = (1 - b2^t) g^2, so the bias-corrected
    # m_t / (1 - b1^t) = g and sqrt(v_t / (1 - b2^t)) = |g|: every step is lr * g / (|g| + eps).
    lr, g, eps = 0.01, 3.0, 1e-8
    got = one_step(Adam, 1.0, [g] * 5, lr=lr)
    want = [1.0 - k * lr * g / (abs(g) + eps) for k in range(1, 6)]
    for a, b in zip(got, want):
        assert math.isclose(a, b, rel_tol=1e-14)


def test_adam_first_step_by_hand_with_weight_decay() -> None:
    # g' = g + wd * p = -2 + 0.1 * 4 = -1.6; step 1 moves by lr * g' / (|g'| + eps)
    lr, eps = 0.1, 1e-8
    got = one_step(Adam, 4.0, [-2.0], lr=lr, weight_decay=0.1)
    g = -2.0 + 0.1 * 4.0
    assert math.isclose(got[0], 4.0 - lr * g / (abs(g) + eps), rel_tol=1e-15)


def test_adam_two_different_gradients_by_hand() -> None:
    # g1 = 1, g2 = -1, b1 = 0.9, b2 = 0.999, lr = 1, eps = 0:
    # m1 = 0.1, v1 = 0.001, p1 = 0 - (0.1/0.1) / (sqrt(0.001)/sqrt(0.001)) = -1
    # m2 = 0.09 - 0.1 = -0.01, v2 = 0.000999 + 0.001 = 0.001999
    # p2 = -1 - (-0.01 / 0.19) / (sqrt(0.001999) / sqrt(0.001999)) = -1 + 1/19
    got = one_step(Adam, 0.0, [1.0, -1.0], lr=1.0, eps=0.0)
    assert got[0] == pytest.approx(-1.0, rel=1e-15)
    assert got[1] == pytest.approx(-1.0 + 1.0 / 19.0, rel=1e-13)


# --- the rules are one implementation for Values and for arrays --------------------------------------


@pytest.mark.parametrize("rule", [SGDRule(), SGDRule(0.9, 0.1, 0.01), SGDRule(0.9, 0.0, 0.0, True),
                                  AdamRule(), AdamRule(0.8, 0.99, 1e-6, 0.05)],
                         ids=["sgd", "momentum-dampening-decay", "nesterov", "adam", "adam-decay"])
def test_a_rule_on_an_array_equals_the_rule_on_each_float(rule) -> None:
    rng = np.random.default_rng(5)
    params, states = rng.normal(size=7), None
    floats, float_states = [float(x) for x in params], [None] * 7
    for step in range(1, 6):
        grads = rng.normal(size=7)
        params, states = rule.update(params, grads, states, step, 0.05)
        for i in range(7):
            floats[i], float_states[i] = rule.update(floats[i], float(grads[i]), float_states[i], step, 0.05)
    assert params.tolist() == floats  # the same arithmetic, element by element: equal bits


@pytest.mark.parametrize("rule", [SGDRule(), SGDRule(0.9, 0.1, 0.01), SGDRule(0.9, 0.0, 0.0, True),
                                  AdamRule(), AdamRule(0.8, 0.99, 1e-6, 0.05)],
                         ids=["sgd", "momentum-dampening-decay", "nesterov", "adam", "adam-decay"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_rule_writing_into_out_gives_the_bits_of_a_fresh_array(rule, dtype) -> None:
    rng = np.random.default_rng(6)
    fresh = rng.normal(size=9).astype(dtype)
    written, spare = fresh.copy(), np.full(9, np.nan, dtype)
    fresh_state = written_state = None
    for step in range(1, 6):
        grad = rng.normal(size=9).astype(dtype)
        before = written.copy()
        fresh, fresh_state = rule.update(fresh, grad, fresh_state, step, 0.05)
        made, written_state = rule.update(written, grad, written_state, step, 0.05, out=spare)
        assert made is spare and made.dtype == dtype
        assert np.array_equal(written, before)  # the argument is left as it was
        assert made.tobytes() == fresh.tobytes()
        spare, written = written, made  # as train() swaps them


def test_sgd_optimizer_with_the_linear_schedule_is_micrograds_hand_written_update() -> None:
    def train(use_optimizer: bool) -> list[float]:
        rng = random.Random(0)
        params = [Value(rng.uniform(-1, 1)) for _ in range(4)]
        optimizer = SGD(params, lr=1.0)
        for k in range(10):
            loss = sum((p * p * (i + 1) for i, p in enumerate(params)), Value(0.0)).tanh()
            optimizer.zero_grad()
            loss.backward()
            if use_optimizer:
                optimizer.lr = scheduled_lr("linear", 1.0, 0.1, k, 100)
                optimizer.step()
            else:
                learning_rate = 1.0 - 0.9 * k / 100
                for p in params:
                    p.data -= learning_rate * p.grad
        return [p.data for p in params]

    assert train(True) == train(False)


# --- the optimizer objects ---------------------------------------------------------------------------


def test_zero_grad_and_step_with_a_closure() -> None:
    p = Value(3.0)
    optimizer = SGD([p], lr=0.25)

    def closure() -> Value:
        optimizer.zero_grad()
        loss = p * p  # d/dp = 2p = 6
        loss.backward()
        return loss

    loss = optimizer.step(closure)
    assert loss.data == 9.0 and p.data == 3.0 - 0.25 * 6.0
    optimizer.zero_grad()
    assert p.grad == 0.0


def test_defaults_are_pytorchs() -> None:
    # torch.optim.SGD(lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False);
    # torch.optim.Adam(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0)
    sgd, adam = SGD([Value(0.0)]), Adam([Value(0.0)])
    assert (sgd.lr, tuple(sgd.rule)) == (1e-3, (0.0, 0.0, 0.0, False))
    assert (adam.lr, tuple(adam.rule)) == (1e-3, (0.9, 0.999, 1e-8, 0.0))


@needs_torch
@pytest.mark.parametrize("ours, theirs", [(SGD, "SGD"), (Adam, "Adam")], ids=["sgd", "adam"])
def test_defaults_equal_the_installed_torch(ours, theirs) -> None:
    torch_defaults = {name: p.default for name, p in inspect.signature(getattr(torch.optim, theirs)).parameters.items()}
    for name, p in inspect.signature(ours).parameters.items():
        if p.default is not inspect.Parameter.empty:
            assert torch_defaults[name] == p.default, name


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: SGD(p, lr=-0.1), "learning rate"),
        (lambda p: SGD(p, lr=math.nan), "learning rate"),
        (lambda p: SGD(p, momentum=-1.0), "momentum"),
        (lambda p: SGD(p, nesterov=True), "Nesterov"),
        (lambda p: SGD(p, momentum=0.9, dampening=0.1, nesterov=True), "Nesterov"),
        (lambda p: SGD(p, weight_decay=-1e-4), "weight_decay"),
        (lambda p: Adam(p, betas=(1.0, 0.999)), "beta parameter at index 0"),
        (lambda p: Adam(p, betas=(0.9, -0.1)), "beta parameter at index 1"),
        (lambda p: Adam(p, eps=-1.0), "eps"),
        (lambda p: SGD([], lr=0.1), "empty parameter list"),
        (lambda p: SGD(p + p, lr=0.1), "more than once"),
    ],
    ids=["negative-lr", "nan-lr", "negative-momentum", "nesterov-without-momentum", "nesterov-dampening",
         "negative-decay", "beta1-1", "beta2-negative", "negative-eps", "no-params", "duplicate"],
)
def test_bad_settings_are_refused(make, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make([Value(1.0)])


def test_parameters_must_be_values() -> None:
    with pytest.raises(TypeError, match="takes Values, got float"):
        SGD([1.0], lr=0.1)


# --- against torch.optim -----------------------------------------------------------------------------


def _rosenbrock_like(xs):
    """A smooth non-quadratic loss of four parameters, written for Values and tensors alike."""
    a, b, c, d = xs
    return (1 - a) ** 2 + 10 * (b - a * a) ** 2 + (c * d - 0.5) ** 2 + (d + 0.25 * a) ** 4


SETTINGS = [
    (SGD, "SGD", {"lr": 0.01}),
    (SGD, "SGD", {"lr": 0.01, "momentum": 0.9}),
    (SGD, "SGD", {"lr": 0.01, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.05}),
    (SGD, "SGD", {"lr": 0.01, "momentum": 0.8, "nesterov": True, "weight_decay": 0.01}),
    (Adam, "Adam", {"lr": 0.05}),
    (Adam, "Adam", {"lr": 0.05, "betas": (0.8, 0.99), "eps": 1e-6, "weight_decay": 0.1}),
]


@needs_torch
@pytest.mark.parametrize("ours, theirs, settings", SETTINGS,
                         ids=["sgd", "momentum", "momentum-dampening-decay", "nesterov-decay", "adam", "adam-all"])
def test_fifty_steps_equal_torch_optim(ours, theirs, settings) -> None:
    start = [-1.2, 1.0, 0.3, -0.7]
    values = [Value(x) for x in start]
    tensors = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in start]
    our_optimizer = ours(values, **settings)
    torch_optimizer = getattr(torch.optim, theirs)(tensors, **settings)
    for _ in range(50):
        our_optimizer.zero_grad()
        _rosenbrock_like(values).backward()
        our_optimizer.step()
        torch_optimizer.zero_grad()
        _rosenbrock_like(tensors).backward()
        torch_optimizer.step()
    for value, tensor in zip(values, tensors):
        assert math.isclose(value.data, tensor.item(), rel_tol=1e-12, abs_tol=1e-15)


# --- schedules ---------------------------------------------------------------------------------------


def test_linear_schedule_is_micrograds_demo_to_the_bit() -> None:
    assert [scheduled_lr("linear", 1.0, 0.1, k, 100) for k in range(100)] == [1.0 - 0.9 * k / 100 for k in range(100)]


def test_schedules_by_hand() -> None:
    # cosine: final + (lr - final) * (1 + cos(pi * k / n)) / 2: lr at 0, the midpoint at n/2, final at n
    assert scheduled_lr("cosine", 1.0, 0.0, 0, 10) == 1.0
    assert scheduled_lr("cosine", 1.0, 0.2, 5, 10) == pytest.approx(0.6, rel=1e-15)
    assert scheduled_lr("cosine", 1.0, 0.2, 10, 10) == pytest.approx(0.2, rel=1e-15)
    assert scheduled_lr("linear", 0.5, 0.0, 4, 8) == 0.25
    assert scheduled_lr("linear", 0.5, 0.0, 12, 8) == 0.0  # past the end it stays at the final rate
    assert scheduled_lr("constant", 0.5, 0.0, 4, 8) == 0.5
    with pytest.raises(ValueError, match="unknown schedule"):
        scheduled_lr("step", 0.5, 0.0, 4, 8)


@needs_torch
@pytest.mark.parametrize("schedule", ["linear", "cosine"])
def test_schedules_equal_torchs_lr_schedulers(schedule: str) -> None:
    lr, final, steps = 0.8, 0.05, 40
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=lr)
    if schedule == "linear":
        scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, 1.0, final / lr, total_iters=steps)
    else:
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps, eta_min=final)
    for k in range(steps + 1):
        assert math.isclose(scheduled_lr(schedule, lr, final, k, steps), optimizer.param_groups[0]["lr"],
                            rel_tol=1e-12), k
        optimizer.step()
        scheduler.step()


def test_adam_without_eps_gives_nan_for_a_parameter_that_never_had_a_gradient() -> None:
    # 0/0 where the gradient has been 0 and eps is 0: NaN, as torch.optim.Adam gives, and the
    # other parameters' steps are made (it raised ZeroDivisionError halfway through the step).
    p, q = Value(1.0), Value(2.0)
    adam = Adam([p, q], lr=0.1, eps=0.0)
    (p * 3.0).backward()
    adam.step()
    assert p.data == pytest.approx(0.9, rel=1e-15)  # the first Adam step moves by lr
    assert math.isnan(q.data)
    assert adam.steps == 1


def test_a_step_that_fails_changes_nothing() -> None:
    # The update of the second parameter raises: the first, already worked out, is not made either.
    p, q = Value(1.0), Value(2.0)
    p.grad = q.grad = 1.0
    sgd = SGD([p, q], lr=0.5)
    rule = sgd.rule

    def update(param: float, grad: float, state: object, step: int, lr: float) -> tuple[float, object]:
        if param == 2.0:
            raise RuntimeError("no update here")
        return rule.update(param, grad, state, step, lr)

    sgd.rule = SimpleNamespace(update=update, _asdict=rule._asdict)  # type: ignore[assignment]
    with pytest.raises(RuntimeError, match="no update here"):
        sgd.step()
    assert (p.data, q.data, sgd.steps) == (1.0, 2.0, 0)
