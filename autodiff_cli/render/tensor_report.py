"""``eval``'s report of a tensor program: a table, plain text, JSON and a long-form CSV.

Each variable has a shape (``[]`` for a number).  A small tensor is shown whole; a larger
one as its mean, standard deviation, minimum and maximum (JSON and CSV always hold every
entry).  The derivative column is the gradient of a number output, each the shape of its
variable; for a vector output it is the Jacobian: one row per entry of the output.

Formats, as documented in docs/tensors.md:

* JSON: ``output``, ``value``, ``shape``; ``values``, ``shapes``, ``kinds`` by name; then
  ``grads`` by name (a number output), or ``jacobian`` (a vector output): ``outputs`` (the
  output's entries), ``inputs`` (every entry of every input, ``W[0, 1]``) and ``rows``, one
  row per output entry and one column per input entry.
* CSV: one line per entry, ``name,kind,op,index,value,grad``, where ``index`` is the entry's
  place (``0 1`` for row 0, column 1; empty for a number).  With a Jacobian the ``grad``
  column becomes one column per output entry, ``d y[0]``, ``d y[1]``...
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from .numbers import format_number, json_number

if TYPE_CHECKING:
    from rich.console import RenderableType

    from ..execute.interpreter import TensorEvaluation

__all__ = [
    "SHOWN_WHOLE",
    "tensor_csv",
    "tensor_json",
    "tensor_plain",
    "tensor_summary",
    "tensor_table",
    "tensor_text",
    "tensor_work",
    "tensor_work_summary",
]

SHOWN_WHOLE = 12  # a tensor of at most this many entries is shown whole in the table


def _shown(array: Any) -> Any:
    """An array as float64 numbers that print in the array's own precision: a float32 entry as its
    shortest float32 text (1.1, not 1.100000023841858), so float32 shows no digits it does not hold."""
    import numpy as np

    array = np.asarray(array)
    if array.dtype != np.float32:
        return array
    return np.array([float(str(v)) for v in array.ravel()], dtype=np.float64).reshape(array.shape)


def _value(evaluation: TensorEvaluation, name: str) -> Any:
    return _shown(evaluation.run.value(name))


def _derivatives(evaluation: TensorEvaluation) -> dict[str, Any]:
    return {name: _shown(d) for name, d in evaluation.derivatives.items()}


def _in_float32(evaluation: TensorEvaluation) -> bool:
    return str(getattr(evaluation.run.value(evaluation.output), "dtype", "")) == "float32"


def _shape(shape: Sequence[int]) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


def tensor_text(array: Any, precision: int | None) -> str:
    """A tensor in a table cell: whole when small, else a summary."""
    if array.ndim == 0:
        return format_number(float(array), precision)
    if array.size <= SHOWN_WHOLE:
        return _nested_text(array.tolist(), precision)
    return tensor_summary(array, precision)


def tensor_summary(array: Any, precision: int | None) -> str:
    """``mean 0.499, std 0.9853, min -1.887, max 1.606``: four significant digits unless asked."""
    digits = 4 if precision is None else precision
    return (f"mean {format_number(float(array.mean()), digits)}, std {format_number(float(array.std()), digits)}, "
            f"min {format_number(float(array.min()), digits)}, max {format_number(float(array.max()), digits)}")


def _shorter(array: Any, precision: int | None) -> str | None:
    """The summary that may stand for a tensor shown whole, where a table is too narrow for it."""
    return tensor_summary(array, precision) if 0 < array.ndim and 0 < array.size <= SHOWN_WHOLE else None


def _nested_text(value: Any, precision: int | None) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_nested_text(item, precision) for item in value) + "]"
    return format_number(value, precision)


def _op(evaluation: TensorEvaluation, name: str) -> str:
    variable = evaluation.program.variables[name]
    if variable.kind == "input":
        return ""
    op = evaluation.program.instructions[variable.register].op
    return "" if op == "const" else op


def _derivative_header(evaluation: TensorEvaluation) -> str:
    return (f"d{evaluation.output}/d name" + (" (Jacobian: one row per entry of the output)" if evaluation.jacobian
                                              else "") + (", in float32" if _in_float32(evaluation) else ""))


def _cells(evaluation: TensorEvaluation, names: Sequence[str], precision: int | None) -> list[list[str]]:
    derivatives = _derivatives(evaluation)
    return [[name, evaluation.kind(name), _op(evaluation, name), _shape(evaluation.shape(name)),
             tensor_text(_value(evaluation, name), precision),
             tensor_text(derivatives[name], precision) if name in derivatives else ""]
            for name in names]


def _names(evaluation: TensorEvaluation, wrt: Sequence[str] | None) -> list[str]:
    """The variables reported: every one up to the output (those ``--wrt`` names, and the output)."""
    last = evaluation.run.register(evaluation.output)
    if wrt is None:
        return [name for name, variable in evaluation.program.variables.items() if variable.register <= last]
    return [name for name in evaluation.program.variables if name in wrt or name == evaluation.output]


def tensor_table(evaluation: TensorEvaluation, wrt: Sequence[str] | None = None,
                 precision: int | None = None) -> RenderableType:
    """A Rich table that fits the console: at a narrow width a small tensor shown whole gives way
    to its summary, the gradient goes under the value, or each variable takes a block of lines
    (``render.fitted_table``); a number is never cut."""
    from .report import fitted_cells_table

    value = tensor_text(_value(evaluation, evaluation.output), precision)
    title = f"{evaluation.output} = {value}    (grad = {_derivative_header(evaluation)})"
    names = _names(evaluation, wrt)
    derivatives = _derivatives(evaluation)
    summaries = [(_shorter(_value(evaluation, name), precision),
                  _shorter(derivatives[name], precision) if name in derivatives else None)
                 for name in names]
    return fitted_cells_table(title, ("name", "kind", "op", "shape"), _cells(evaluation, names, precision),
                              summaries, {"input": "cyan", "output": "bold green"})


def tensor_plain(evaluation: TensorEvaluation, wrt: Sequence[str] | None = None,
                 precision: int | None = None) -> str:
    """The table's columns as aligned text, with no box: for pipes and logs."""
    header = ["name", "kind", "op", "shape", "value", "grad"]
    lines = [header, *_cells(evaluation, _names(evaluation, wrt), precision)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = []
    for line in lines:
        text.append("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip())
    note = f"# grad = {_derivative_header(evaluation)}"
    return "\n".join([note, *text]) + "\n"


def _json(value: Any) -> Any:
    if isinstance(value, list):
        return [_json(item) for item in value]
    return json_number(value)


def _entries(name: str, shape: Sequence[int]) -> list[str]:
    """``W[0, 0]``, ``W[0, 1]``... in row-major order; a number is its name."""
    import itertools

    if not shape:
        return [name]
    return [f"{name}[{', '.join(map(str, index))}]" for index in itertools.product(*map(range, shape))]


def tensor_json(evaluation: TensorEvaluation, wrt: Sequence[str] | None = None, mode: str = "reverse") -> str:
    run, output = evaluation.run, evaluation.output
    names = _names(evaluation, wrt)
    document: dict[str, Any] = {
        "output": output,
        "value": _json(_value(evaluation, output).tolist()),
        "shape": list(evaluation.shape(output)),
        "values": {name: _json(_value(evaluation, name).tolist()) for name in names},
        "shapes": {name: list(evaluation.shape(name)) for name in names},
        "kinds": {name: evaluation.kind(name) for name in names},
    }
    if evaluation.jacobian:
        inputs = [name for name in names if evaluation.kind(name) == "input"]
        out_shape = evaluation.shape(output)
        document["jacobian"] = {
            "outputs": _entries(output, out_shape),
            "inputs": [entry for name in inputs for entry in _entries(name, evaluation.shape(name))],
            "rows": [_json(_shown(row).tolist()) for row in _jacobian_rows(evaluation, inputs)],
        }
    else:
        derivatives = _derivatives(evaluation)
        document["grads"] = {name: _json(derivatives[name].tolist()) for name in names if name in derivatives}
    document["mode"] = mode
    if _in_float32(evaluation):
        document["dtype"] = "float32"
    if mode == "forward":
        document["work"] = tensor_work(evaluation)
    return json.dumps(document, indent=2) + "\n"


def tensor_work(evaluation: TensorEvaluation) -> dict[str, object]:
    """What each mode costs for this program, as data: forward mode runs one JVP sweep per entry
    of the inputs, reverse mode one backward sweep per entry of the output."""
    inputs = evaluation.forward_inputs
    if inputs is None:  # reverse mode: what forward mode would take for every input
        inputs = tuple(name for name, v in evaluation.program.variables.items() if v.kind == "input"
                       and v.register <= evaluation.run.register(evaluation.output))
    forward = sum(int(evaluation.run.value(name).size) for name in inputs)
    reverse = max(1, int(evaluation.run.value(evaluation.output).size))
    ops = sum(1 for op, first, *_ in evaluation.run.rows if first >= 0)
    return {"forward": {"passes": forward}, "reverse": {"passes": reverse}, "ops": ops}


def tensor_work_summary(evaluation: TensorEvaluation) -> str:
    """One line comparing the two modes' work, e.g. ``forward mode: 6 passes (one per input entry)
    over 4 ops; reverse mode: 1 backward pass over 4 ops``."""
    work = tensor_work(evaluation)
    forward, reverse, ops = work["forward"]["passes"], work["reverse"]["passes"], work["ops"]  # type: ignore[index]
    return (f"forward mode: {forward} pass{'es' * (forward != 1)} (one per input entry) over {ops} ops; "
            f"reverse mode: {reverse} backward pass{'es' * (reverse != 1)} over {ops} ops")


def _jacobian_rows(evaluation: TensorEvaluation, inputs: list[str]) -> Iterator[Any]:
    import numpy as np

    blocks = []
    for name in inputs:
        derivative = evaluation.derivatives[name]
        blocks.append(derivative.reshape(derivative.shape[0], int(np.prod(derivative.shape[1:]))))
    yield from np.concatenate(blocks, axis=1) if blocks else []


def tensor_csv(evaluation: TensorEvaluation, wrt: Sequence[str] | None = None) -> str:
    import numpy as np

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    out_entries = _entries(evaluation.output, evaluation.shape(evaluation.output))
    grad_columns = [f"d {entry}" for entry in out_entries] if evaluation.jacobian else ["grad"]
    writer.writerow(["name", "kind", "op", "index", "value", *grad_columns])
    derivatives = _derivatives(evaluation)
    for name in _names(evaluation, wrt):
        value = _value(evaluation, name)
        derivative = derivatives.get(name)
        kind, op = evaluation.kind(name), _op(evaluation, name)
        for index in np.ndindex(value.shape):
            if derivative is None:  # forward mode differentiates the inputs only
                grads = [""] * len(grad_columns)
            elif evaluation.jacobian:
                grads = [repr(float(derivative[(row, *index)])) for row in range(derivative.shape[0])]
            else:
                grads = [repr(float(derivative[index]))]
            writer.writerow([name, kind, op, " ".join(map(str, index)), repr(float(value[index])), *grads])
    return buffer.getvalue()
