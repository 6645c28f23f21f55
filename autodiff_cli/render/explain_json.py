"""``explain --format json``: both passes as data, in scalar and in matrix form.

The schema is documented in docs/explain.md.  One document per run:

* ``form``: ``"scalar"`` (a program of numbers: one step per edge of the graph) or ``"matrix"``
  (a tensor program: one step per operand of each tensor operation);
* ``output``, ``value``; ``forward``: the forward pass, one object per definition (``name``,
  ``expression``, ``value``; in matrix form also ``shape`` and ``shapes``, the computation with
  its operands' shapes); ``backward``: the backward pass, objects with a ``kind`` of ``seed``,
  ``step`` or ``total``; ``forward_omitted``/``backward_omitted``: lines left out by
  ``--max-steps``; ``gradients``: d output / d input, by input name;
* matrix form with ``--scalar``: ``layers``, one per statement, its ``row`` (or null for one shown
  whole), the ``upstream`` gradient of that row, and ``scalar``: a scalar-form document of it.

Values of tensors are nested lists; NaN and the infinities are the strings ``"NaN"``,
``"Infinity"`` and ``"-Infinity"``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from .numbers import json_number

if TYPE_CHECKING:
    from ..analysis.steps import Explanation
    from ..analysis.tensor_steps import LayerSteps, TensorExplanation

__all__ = ["explanation_json", "tensor_explanation_json"]


def _number(value: Any) -> Any:
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, list):
        return [_number(item) for item in value]
    return json_number(float(value))


def _scalar_document(explanation: Explanation) -> dict[str, Any]:
    from ..analysis.steps import Seed, Step

    backward: list[dict[str, Any]] = []
    for item in explanation.steps:
        if isinstance(item, Seed):
            backward.append({"kind": "seed", "output": item.output})
        elif isinstance(item, Step):
            backward.append({"kind": "step", "child": item.child, "parent": item.parent, "rule": item.rule,
                             "local": _number(item.local), "upstream": _number(item.upstream),
                             "product": _number(item.product), "accumulate": item.accumulate,
                             "total": _number(item.total)})
        else:
            backward.append({"kind": "total", "name": item.name, "count": item.count,
                             "terms": [_number(term) for term in item.terms], "total": _number(item.total)})
    return {
        "form": "scalar",
        "output": explanation.output,
        "value": _number(explanation.value),
        "forward": [{"name": d.name, "expression": d.expression, "value": _number(d.value)}
                    for d in explanation.definitions],
        "forward_omitted": explanation.definitions_omitted,
        "backward": backward,
        "backward_omitted": explanation.steps_omitted,
        "gradients": {name: _number(grad) for name, grad in explanation.gradients},
    }


def explanation_json(explanation: Explanation) -> str:
    """A scalar program's explanation as a JSON document (``form`` ``"scalar"``)."""
    return json.dumps(_scalar_document(explanation), indent=2) + "\n"


def tensor_explanation_json(explanation: TensorExplanation, layers: list[LayerSteps] | None = None) -> str:
    """A tensor program's explanation in matrix form (``form`` ``"matrix"``), and with ``layers``
    each statement's row in scalar form."""
    from ..analysis.tensor_steps import TensorSeed, TensorStep

    backward: list[dict[str, Any]] = []
    for item in explanation.steps:
        if isinstance(item, TensorSeed):
            backward.append({"kind": "seed", "output": item.output})
        elif isinstance(item, TensorStep):
            broadcast = item.broadcast
            backward.append({
                "kind": "step", "child": item.child, "parent": item.parent, "op": item.op,
                "operand": item.operand, "statement": item.statement, "formula": item.formula,
                "computation": item.computation, "notes": list(item.notes),
                "broadcast": None if broadcast is None else {"axes": list(broadcast.axes), "unit": broadcast.unit,
                                                             "summed_from": broadcast.inner or None},
                "product": _number(item.product), "accumulate": item.accumulate, "total": _number(item.total),
            })
        else:
            backward.append({"kind": "total", "name": item.name, "count": item.count, "total": _number(item.total)})
    document: dict[str, Any] = {
        "form": "matrix",
        "output": explanation.output,
        "value": _number(explanation.value),
        "forward": [{"name": d.name, "expression": d.expression, "shape": list(d.shape), "shapes": d.shapes,
                     "value": _number(d.value)} for d in explanation.definitions],
        "forward_omitted": explanation.definitions_omitted,
        "backward": backward,
        "backward_omitted": explanation.steps_omitted,
        "gradients": {name: _number(grad) for name, grad in explanation.gradients},
    }
    if layers is not None:
        document["layers"] = [{"name": layer.name, "row": layer.row, "upstream": _number(layer.upstream),
                               "scalar": _scalar_document(layer.scalar)} for layer in layers]
    return json.dumps(document, indent=2) + "\n"
