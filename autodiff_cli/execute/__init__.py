"""Interpreters of the ``Program``: the scalar one builds ``Value`` graphs (``scalar.py``)."""

from .scalar import Evaluation, apply_grads, evaluate, forward_gradients

__all__ = ["Evaluation", "apply_grads", "evaluate", "forward_gradients"]
