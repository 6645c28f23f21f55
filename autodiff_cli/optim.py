"""Optimisers over Value and Tensor parameters with PyTorch's equations: ``from autodiff_cli.optim import SGD, Adam``.

A facade over ``autodiff_cli.engine.optim``; see that module for the update equations.
"""

from .engine.optim import SCHEDULES, SGD, Adam, AdamRule, Optimizer, SGDRule, scheduled_lr

__all__ = ["SCHEDULES", "SGD", "Adam", "AdamRule", "Optimizer", "SGDRule", "scheduled_lr"]
