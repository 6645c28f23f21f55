"""autodiff-cli: differentiate expressions and see how backpropagation flows through them.

The engine is importable on its own and runs micrograd code unchanged::

    from autodiff_cli import Value, draw_dot
    a, b = Value(2.0, label="a"), Value(-3.0, label="b")
    L = a * b
    L.backward()   # a.grad == -3.0, b.grad == 2.0
    draw_dot(L)    # a graphviz.Digraph; a notebook shows it inline

Programs run over whole columns of rows at once (NumPy, forward and reverse)::

    from autodiff_cli import evaluate_batch
    result = evaluate_batch("L = (w*x + b - y)**2", {"x": xs, "y": ys, "w": 0.5, "b": 0.0})
    result.value          # L for every row
    result.grads["w"]     # dL/dw for every row

Tensors, as in PyTorch (float64 NumPy arrays; ``autodiff_cli.nn`` and ``autodiff_cli.optim``
take them too)::

    from autodiff_cli import tensor
    X = tensor([[1.0, 0.5], [1.0, 2.0]])
    W = tensor([[0.1], [0.2]], requires_grad=True)
    L = ((X @ W - tensor([[1.0], [2.0]])) ** 2).mean()
    L.backward()   # W.grad == (2/N) X^T (X W - Y)
"""

from typing import Any

from .engine import DomainError, Value

__all__ = [
    "BatchEvaluator", "BatchResult", "DomainError", "InputError", "RowError", "Tensor", "Value", "draw_dot",
    "evaluate_batch", "fit", "manual_seed", "no_grad", "normal", "ones", "randn", "tensor", "zeros",
]

# Loaded on first use: the command line imports this package on every start, and the
# batch executor and Tensors import NumPy.
_LAZY = {
    "Tensor": "engine.tensor",
    "tensor": "engine.tensor",
    "manual_seed": "engine.tensor",
    "zeros": "engine.tensor",
    "ones": "engine.tensor",
    "randn": "engine.tensor",
    "normal": "engine.tensor",
    "no_grad": "engine.grad_mode",  # covers Values and Tensors
    "draw_dot": "render.dot",
    "evaluate_batch": "execute.batch_evaluator",
    "BatchEvaluator": "execute.batch_evaluator",
    "BatchResult": "execute.batch_evaluator",
    "RowError": "execute.batch_evaluator",
    "InputError": "errors",  # what evaluate_batch raises for inputs it cannot use
    "fit": "training",  # training from Python; a notebook shows the run as fit --report's page
}


def __getattr__(name: str) -> Any:
    import importlib

    module = _LAZY.get(name)
    if module is None:
        # the language's ops as functions of Tensors (where, stack, concat...), as torch.where is
        from .engine.registry import ENTRIES  # the standard library only: NumPy loads for an op alone

        if name in ENTRIES:
            functions = importlib.import_module(".engine.tensor", __name__).OP_FUNCTIONS
            if name in functions:
                return functions[name]
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
