"""``eval --tangent``'s report: the output, the direction and the one directional derivative.

Formats (docs/eval.md): a Rich table, plain text, JSON (``output``, ``value``,
``tangent`` by input name, ``derivative``, ``mode``, ``work``) and CSV (one line per entry of the
output: ``output,index,value,derivative``).  Values of tensors are nested lists in JSON and whole
or summarised in text, as in eval's own report.
"""

from __future__ import annotations

import csv
import io
import json
from typing import TYPE_CHECKING, Any

from .report import json_value, value_text

if TYPE_CHECKING:
    from ..execute.directional import Directional

__all__ = ["directional_csv", "directional_json", "directional_table", "directional_text"]


def _work(result: Directional) -> str:
    return f"one forward pass over {result.steps:,} {result.unit} (a Jacobian-vector product)"


def directional_text(result: Directional, precision: int | None = None) -> str:
    output = result.output
    given = "; ".join(f"{name} = {value_text(t, precision)}" for name, t in result.tangents.items()) or "none"
    return (f"{output} = {value_text(result.value, precision)}\n"
            f"tangent: {given}    (every other input: 0)\n"
            f"d{output} along the tangent = {value_text(result.derivative, precision)}\n"
            f"work: {_work(result)}\n")


def directional_table(result: Directional, precision: int | None = None) -> Any:
    """The same report as a Rich table (the tangent of each input given, then the derivative along
    it), with the work below; numbers are never cut (``print_rich`` widens to fit them)."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    output = result.output
    table = Table(title=f"{output} = {value_text(result.value, precision)}", title_justify="left")
    table.add_column("along the tangent", no_wrap=True)
    table.add_column("value", justify="right", no_wrap=True)
    for name, tangent in result.tangents.items():
        table.add_row(f"tangent of {name}", value_text(tangent, precision), style="cyan")
    table.add_row("every other input", "0", style="cyan")
    table.add_row(f"d{output} along the tangent", value_text(result.derivative, precision), style="bold magenta")
    return Group(table, Text(f"work: {_work(result)}"))


def directional_json(result: Directional) -> str:
    document = {
        "output": result.output,
        "value": json_value(result.value),
        "tangent": {name: json_value(t) for name, t in result.tangents.items()},
        "derivative": json_value(result.derivative),
        "mode": "forward",
        "work": {"forward": {"passes": 1}, result.unit: result.steps},
    }
    return json.dumps(document, indent=2) + "\n"


def directional_csv(result: Directional) -> str:
    import itertools

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["output", "index", "value", "derivative"])
    shape = getattr(result.value, "shape", ())
    for index in itertools.product(*map(range, shape)):
        value = result.value[index] if shape else result.value
        derivative = result.derivative[index] if shape else result.derivative
        writer.writerow([result.output, " ".join(map(str, index)), repr(float(value)), repr(float(derivative))])
    return buffer.getvalue()
