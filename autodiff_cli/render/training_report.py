"""The training report: one self-contained HTML file of a recorded training run (``fit --report``).

``report_data`` turns an ``analysis.training_record.Recording`` into JSON-ready data, every number
rounded as the page shows it; ``training_report_html`` puts it in the page with its script and
style (``training_report.js`` and ``training_report.css`` next to this module), which draw the
curves, the model over its inputs with a step slider, the parameter histograms and heat maps.
No network and no external file: a Content-Security-Policy lets the page run its own script
only.  The same recording gives the same bytes: nothing is read from the clock, keys are
sorted, numbers are written by ``repr`` of rounded floats.

``row_graph_svg`` draws the recorded row's graph as ``autodiff graph`` draws it; it runs the
Graphviz layout, so callers draw it once (at the end of training) and pass it in.  ``Report``
wraps a recording for Jupyter: its ``_repr_html_`` is the page, in a sandboxed frame.
"""

from __future__ import annotations

import base64
import hashlib
import html
import math
from typing import TYPE_CHECKING, Any

from .page import asset, json_for_script
from .palette import report_palette

if TYPE_CHECKING:
    from ..analysis.training_record import Recording

__all__ = ["Report", "report_data", "row_graph_svg", "training_report_html"]


QUANT = 1000  # a grid or curve value is sent as an integer step of 1/QUANT of its frame's range
HEAT_QUANT = 99  # a heat map entry as an integer step of 1/HEAT_QUANT of its map's largest magnitude


def report_data(recording: Recording) -> dict[str, Any]:
    """The recording as the page's data: plain lists and dicts, NaN and infinities as None.

    The bulky parts are sent as integers (``quantized``, ``heat``): the page draws them at a few
    hundred pixels, and integers keep the file small and quick to write while training runs."""
    groups = [{
        "name": g.name, "shape": g.shape, "members": _members(g.members),
        "value_range": g.value_range, "grad_range": g.grad_range,
        "grad_norm": g.grad_norm, "value_rms": g.value_rms,
        "heat_steps": g.heat_steps, "image_side": g.image_side,
    } for g in recording.groups]
    view = recording.view
    data = _plain({
        "meta": recording.meta,
        "steps": recording.steps,
        "kept_steps": recording.kept_steps,
        "train_loss": recording.train_loss,
        "validation_loss": recording.validation_loss,
        "metrics": recording.metrics,
        "grad_norm": recording.grad_norm,
        "history_steps": recording.history_steps,
        "history_loss": recording.history_loss,
        "groups": groups,
        "view": None if view is None else {
            "kind": view.kind, "features": view.features, "prediction": view.prediction, "label": view.label,
            "level": view.level, "x_range": view.x_range, "y_range": view.y_range, "size": view.size,
            "steps": view.steps, "classes": view.classes,
        },
        "view_note": recording.view_note,
        "layers": recording.layers,
        "activity_step": recording.activity_step,
        "activity": [{"name": a.name, "op": a.op, "units": a.units, "dead": a.dead,
                      "near_limit": _round(a.near_limit), "zero_share": _round(a.zero_share)}
                     for a in recording.activity],
        "graph_note": recording.graph_note,
        "diagnoses": recording.diagnoses,
        "finished": recording.finished,
        "reason": recording.reason,
        "steps_done": recording.steps_done,
        "final_loss": recording.final_loss,
        "quant": QUANT,
        "heat_quant": HEAT_QUANT,
        "palette": report_palette(),
    })
    # The bulky parts, added after the walk over the rest: counts, and numbers already finite.
    for group, source in zip(data["groups"], recording.groups):
        group["value_hist"], group["grad_hist"] = source.value_hist, source.grad_hist
        group["heat_values"] = [heat(entries) for entries in source.heat_values]
        group["heat_grads"] = [heat(entries) for entries in source.heat_grads]
    if view is not None:
        data["view"]["points"] = view.points
        data["view"]["validation_points"] = view.validation_points
        data["view"]["frames"] = [classes(frame) if view.kind == "classes" else quantized(frame)
                                  for frame in view.frames]
    return data


def quantized(values: Any) -> dict[str, Any]:
    """``values`` as ``{"lo", "hi", "q"}``: ``lo + q * (hi - lo) / QUANT``, q = -1 where not finite."""
    import numpy as np

    values = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(values)
    if not finite.any():
        return {"lo": 0.0, "hi": 0.0, "q": [-1] * values.size}
    lo, hi = float(values[finite].min()), float(values[finite].max())
    span = hi - lo if hi > lo else 1.0
    steps = np.rint((np.where(finite, values, lo) - lo) / span * QUANT).astype(np.int64)
    return {"lo": _round(lo, 9), "hi": _round(lo + span, 9), "q": np.where(finite, steps, -1).tolist()}


def heat(values: Any) -> dict[str, Any]:
    """A heat map's entries as ``{"scale", "q"}``: ``q * scale / HEAT_QUANT``; 0 where not finite."""
    import numpy as np

    values = np.asarray(values, dtype=np.float64)
    finite = np.where(np.isfinite(values), values, 0.0)
    scale = float(np.max(np.abs(finite))) if finite.size else 0.0
    if scale == 0.0:
        return {"scale": 0.0, "q": [0] * values.size}
    return {"scale": _round(scale, 9), "q": np.rint(finite / scale * HEAT_QUANT).astype(np.int64).tolist()}


def classes(values: Any) -> list[int]:
    import numpy as np

    values = np.asarray(values, dtype=np.float64)
    return np.where(np.isfinite(values), values, -1).astype(np.int64).tolist()


def training_report_html(recording: Recording, *, graph_svg: bytes | None = None) -> bytes:
    """The whole page, UTF-8.  ``graph_svg``: the row's graph (``row_graph_svg``), or None to show
    ``recording.graph_note`` (and a tensor program's layers) in its place."""
    data = report_data(recording)
    script = asset("training_report.js")
    if "</script" in script.lower():  # the script is ours; this only guards against a careless edit
        raise ValueError("training_report.js contains '</script', which would end the script element early")
    digest = base64.b64encode(hashlib.sha256(("\n" + script).encode("utf-8")).digest()).decode("ascii")
    program = str(recording.meta.get("program", "")) or "training run"
    title = f"Training report: {program}"
    page = _TEMPLATE.format(
        script_hash=f"sha256-{digest}",
        title=html.escape(title),
        style=asset("training_report.css"),
        summary=_summary(recording),
        diagnoses=_diagnoses(recording),
        graph=_graph(recording, graph_svg),
        run=_run_table(_rows_said(recording)),
        data=json_for_script(data),
        script=script,
    )
    return page.encode("utf-8")


def row_graph_svg(recording: Recording) -> bytes | None:
    """The recorded row's graph drawn as ``autodiff graph`` draws it (data and grad), as SVG; None
    when the recording has no graph (a tensor program, a large one)."""
    if recording.graph is None:
        return None
    from .backends import render
    from .dot import graph_dot

    return render(graph_dot(recording.graph), "svg")


class Report:
    """A recorded training run for Jupyter: displayed, it is the training report."""

    def __init__(self, recording: Recording, graph_svg: bytes | None = None) -> None:
        self.recording = recording
        self.graph_svg = graph_svg

    def html(self) -> bytes:
        return training_report_html(self.recording, graph_svg=self.graph_svg)

    def _repr_html_(self) -> str:
        # A frame of its own: the page's script and style stay out of the notebook's, and a
        # notebook that runs no untrusted script still shows it (srcdoc is its own document).
        page = self.html().decode("utf-8")
        return (f'<iframe title="training report" sandbox="allow-scripts" style="width:100%;height:900px;'
                f'border:1px solid #ccc" srcdoc="{html.escape(page, quote=True)}"></iframe>')


# --- the parts written in HTML ----------------------------------------------------------------


def _summary(recording: Recording) -> str:
    if not recording.steps:
        return "<p>Nothing is recorded yet.</p>"
    parts = []
    if recording.finished:
        done = {"steps": "every step was taken", "tol": "the loss stopped improving",
                "interrupted": "training was interrupted", "diverged": "training diverged"}.get(
                    recording.reason, recording.reason)
        parts.append(f"{recording.steps_done} step{'s' * (recording.steps_done != 1)}: {done}.")
        if recording.final_loss is not None:
            parts.append(f"The parameters written, {_which(recording)}: {_final(recording)}.")
        return f'<p id="summary">{" ".join(parts)}</p>'
    parts.append(f"Training is running: step {recording.steps[-1]} is the latest recorded. Reload to see more.")
    measured = [k for k, v in enumerate(recording.validation_loss) if v is not None]
    if measured:
        # measured where the step started, before its update, as the curves are
        last = measured[-1]
        numbers = [f"validation loss {_number(recording.validation_loss[last])}"]  # type: ignore[arg-type]
        numbers += [f"{html.escape(_spoken(name))} {_number(value)}"
                    for name, series in recording.metrics.items() if (value := series[last]) is not None]
        parts.append(f"At step {recording.steps[last]}, before its update: {', '.join(numbers)}.")
    return f'<p id="summary">{" ".join(parts)}</p>'


def _which(recording: Recording) -> str:
    """Which parameters fit wrote: those after the last update, or those a step started from."""
    if recording.final_step == recording.steps_done + 1:
        return f"after step {recording.steps_done}'s update"
    return f"those step {recording.final_step} started from"


def _final(recording: Recording) -> str:
    """'loss 0.09, validation loss 0.12, accuracy 0.97, validation accuracy 0.95': what fit's last
    line says of the same parameters, in its order."""
    parts = [f"training loss {_number(recording.final_loss)}"] if recording.final_loss is not None else []
    if recording.final_validation_loss is not None:
        parts.append(f"validation loss {_number(recording.final_validation_loss)}")
    metrics = recording.final_metrics
    for name in [name for name in metrics if not name.startswith("validation_")]:
        parts.append(f"{html.escape(name)} {_number(metrics[name])}")
        if f"validation_{name}" in metrics:
            parts.append(f"validation {html.escape(name)} {_number(metrics[f'validation_{name}'])}")
    return ", ".join(parts)


def _spoken(name: str) -> str:
    return "validation " + name[len("validation_"):] if name.startswith("validation_") else name


def _diagnoses(recording: Recording) -> str:
    if not recording.diagnoses:  # what each check saw, so that "fine" says what it rests on
        from ..analysis.training_diagnoses import observations

        items = "".join(f"<li>{html.escape(text)}</li>" for text in observations(recording))
        return ('<section id="diagnoses" class="ok"><h2>Diagnostics</h2><p>No check found a problem. What '
                f"they saw:</p><ul>{items}</ul></section>")
    items = "".join(f"<li>{html.escape(text)}</li>" for text in recording.diagnoses)
    return f'<section id="diagnoses" class="warn"><h2>Diagnostics</h2><ul>{items}</ul></section>'


def _graph(recording: Recording, svg: bytes | None) -> str:
    if svg is not None:
        text = svg.decode("utf-8")
        start = text.find("<svg")  # drop the XML declaration and doctype: the page is HTML
        return (f'<p>The graph of {html.escape(recording.graph_note)}, with data and grad, as '
                f'<code>autodiff graph</code> draws it.</p><div id="row-graph">{text[start:]}</div>')
    if recording.layers:
        rows = "".join(f"<tr><td><code>{html.escape(name)}</code></td><td>{html.escape(op)}</td>"
                       f"<td>{html.escape(shape)}</td></tr>" for name, op, shape in recording.layers)
        return ("<p>The program's layers and their shapes, per row (the drawing of the layer graph is added "
                "when training ends and Graphviz is at hand).</p><table id=\"layers\"><thead><tr><th>variable"
                f"</th><th>op</th><th>shape</th></tr></thead><tbody>{rows}</tbody></table>")
    if recording.graph is not None:
        return (f"<p>The graph of {html.escape(recording.graph_note)} was not laid out for this page; "
                "<code>autodiff graph</code> draws it from the program and the values fit wrote.</p>")
    note = recording.graph_note or "no graph was recorded"
    return f"<p>{html.escape(note[0].upper() + note[1:])}.</p>"


def _rows_said(recording: Recording) -> dict[str, Any]:
    """The run's facts, with the rows counted, and held-out rows said to be held out of the data
    (the data file's name alone, as the validation rows', read as if training's own rows
    validated it)."""
    meta = dict(recording.meta)
    if "batch_size" in meta and meta["batch_size"] is None:  # Python's None, as the page said it
        meta["batch_size"] = "every row at every step"
    data, held, fraction = meta.get("data"), meta.get("validation"), meta.pop("held_out", None)
    if "validation" in meta and held is None:
        meta["validation"] = "none"
    if recording.rows and data:
        meta["data"] = f"{data} (trained on {_count(recording.rows)})"
    if held and recording.validation_rows:
        rows = _count(recording.validation_rows)
        if fraction is not None:
            meta["validation"] = f"{100 * fraction:g}% of {held} held out ({rows}, not trained on)"
        else:
            meta["validation"] = f"{held} ({rows})"
    return meta


def _count(rows: int) -> str:
    return f"{rows:,} row" + ("s" if rows != 1 else "")


# A setting left unset, in words: Python's None and True are no words for a reader.
_UNSET = {"batch_size": "every row", "validation": "none"}


def _run_table(meta: dict[str, Any]) -> str:
    rows = []
    for key in sorted(meta):
        value = meta[key]
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v}" for k, v in sorted(value.items()))
        elif value is None or isinstance(value, bool):
            value = _UNSET.get(key, "not given") if value is None else ("yes" if value else "no")
        rows.append(f"<tr><th>{html.escape(str(key))}</th><td><code>{html.escape(str(value))}</code></td></tr>")
    return f'<table id="run">{"".join(rows)}</table>'


def _members(members: list[str]) -> list[str]:
    return members if len(members) <= 12 else [*members[:6], "...", *members[-3:]]


def _number(x: float) -> str:
    return f"{x:.6g}"


def _round(x: float, digits: int = 4) -> float:
    return float(f"{x:.{digits}g}")


def _plain(value: Any) -> Any:
    """JSON-ready: floats finite (else None), tuples as lists; walked with a stack, not recursion."""
    root: list[Any] = [value]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        container, key = stack.pop()
        item = container[key]
        if isinstance(item, float):
            container[key] = item if math.isfinite(item) else None
        elif isinstance(item, tuple):
            container[key] = list(item)
            stack.append((container, key))
        elif isinstance(item, dict):
            container[key] = copy = dict(item)
            stack.extend((copy, k) for k in copy)
        elif isinstance(item, list):
            container[key] = copy = list(item)
            stack.extend((copy, i) for i in range(len(copy)))
        elif hasattr(item, "item") and not isinstance(item, (str, bytes)):  # a NumPy scalar
            container[key] = item.item()
            stack.append((container, key))
    return root[0]


_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="autodiff-cli">
<meta http-equiv="Content-Security-Policy"
 content="default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src '{script_hash}'">
<title>{title}</title>
<style>
{style}</style>
</head>
<body>
<header>
<h1>{title}</h1>
{summary}
</header>
<main>
{diagnoses}
<section id="curves"><h2>Loss</h2>
<label><input type="checkbox" id="log-scale"> log scale</label>
<div id="loss-chart" class="chart"></div>
<div id="metric-charts"></div>
</section>
<section id="stepping"><h2>Training step by step</h2>
<div class="controls"><label for="step-slider">recorded step</label>
<input type="range" id="step-slider" min="0" max="0" value="0" step="1">
<output id="step-label" for="step-slider"></output>
<button type="button" id="play">play</button></div>
<div id="model"><h3 id="model-title">The model</h3><div id="model-view"></div><p id="model-note"></p></div>
<div id="parameters"><h3>Parameters and their gradients</h3><div id="groups"></div></div>
</section>
<section id="gradients"><h2>Gradient norms</h2><div id="grad-chart" class="chart"></div>
<div id="activity"></div></section>
<section id="graph"><h2>One row's graph</h2>
{graph}
</section>
<section id="about"><h2>The run</h2>
{run}
</section>
</main>
<script type="application/json" id="report-data">{data}</script>
<script>
{script}</script>
</body>
</html>
"""
