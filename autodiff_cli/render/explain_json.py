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

__all__ = ["explanation_json"]


def _number(value: Any) -> Any:
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, list):
        return [_number(item) for item in value]
    return json_number(float(value))


def explanation_json(explanation: Explanation) -> str:
    """An explanation as a JSON document, in the form its run's shapes chose (``form``)."""
    return json.dumps(_document(explanation), indent=2) + "\n"


def _document(explanation: Explanation) -> dict[str, Any]:
    """The fields both forms share, in the order the schema lists them, and each form's own."""
    from ..analysis.steps import MATRIX

    matrix = explanation.form == MATRIX
    forward = [_matrix_definition(d) if matrix else {"name": d.name, "expression": d.expression,
                                                       "value": _number(d.value)}
               for d in explanation.definitions]
    document: dict[str, Any] = {
        "form": explanation.form,
        "output": explanation.output,
        "value": _number(explanation.value),
        "forward": forward,
        "forward_omitted": explanation.definitions_omitted,
        "backward": [_backward_item(item, matrix) for item in explanation.steps],
        "backward_omitted": explanation.steps_omitted,
        "gradients": {name: _number(grad) for name, grad in explanation.gradients},
    }
    if explanation.layers is not None:
        document["layers"] = [{"name": layer.name, "row": layer.row, "upstream": _number(layer.upstream),
                               "scalar": _document(layer.scalar)} for layer in explanation.layers]
    return document


def _matrix_definition(d: Any) -> dict[str, Any]:
    return {"name": d.name, "expression": d.expression, "shape": list(d.shape), "shapes": d.shapes,
            "value": _number(d.value)}


def _backward_item(item: Any, matrix: bool) -> dict[str, Any]:
    from ..analysis.steps import MatrixStep, Seed, Step

    if isinstance(item, Seed):
        return {"kind": "seed", "output": item.output}
    if isinstance(item, Step):
        return {"kind": "step", "child": item.child, "parent": item.parent, "rule": item.rule,
                "local": _number(item.local), "upstream": _number(item.upstream),
                "product": _number(item.product), "accumulate": item.accumulate, "total": _number(item.total)}
    if isinstance(item, MatrixStep):
        broadcast = item.broadcast
        return {
            "kind": "step", "child": item.child, "parent": item.parent, "op": item.op,
            "operand": item.operand, "statement": item.statement, "formula": item.formula,
            "computation": item.computation, "notes": list(item.notes),
            "broadcast": None if broadcast is None else {"axes": list(broadcast.axes), "unit": broadcast.unit,
                                                         "summed_from": broadcast.inner or None},
            "product": _number(item.product), "accumulate": item.accumulate, "total": _number(item.total),
        }
    if matrix:  # a matrix total's contributions are tensors: counted, not listed
        return {"kind": "total", "name": item.name, "count": item.count, "total": _number(item.total)}
    return {"kind": "total", "name": item.name, "count": item.count,
            "terms": [_number(term) for term in item.terms], "total": _number(item.total)}
