"""The training report page (render/training_report.py): deterministic, self-contained, complete.

A recording is made from a short run of samples/line.ad (scalar, one input: the fitted curve) and
of a two-input tensor classifier (the decision boundary, a weight matrix's heat map); the page
made from it is compared with itself (byte for byte, from a second, identical run), read back
(its JSON), and searched for anything that would reach the network.
"""

from __future__ import annotations

import html
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from autodiff_cli.analysis.training_record import TrainingRecorder
from autodiff_cli.execute.columns import input_rows, plan_columns
from autodiff_cli.execute.fit import FitSettings, plan_fit, train
from autodiff_cli.execute.objective import ProgramObjective, TensorObjective, starting_parameters
from autodiff_cli.language import parse
from autodiff_cli.render.training_report import (
    HEAT_QUANT,
    QUANT,
    Report,
    heat,
    quantized,
    report_data,
    training_report_html,
)

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
CLASSIFIER = """x = [0, 0]
y = 1
W1 = uniform([8, 2], -1, 1)
b1 = zeros([8])
w2 = uniform([8], -1, 1)
h = tanh(W1 @ x + b1)
score = sum(w2 * h)
loss = relu(1 - y*score)
"""
XML_NAMESPACES = {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}


def read_csv(path: Path) -> dict[str, np.ndarray]:
    lines = path.read_text().splitlines()
    header = lines[0].split(",")
    table = np.array([[float(v) for v in line.split(",")] for line in lines[1:] if line])
    return {name: table[:, i] for i, name in enumerate(header)}


def recorded_run(text: str, columns: dict[str, np.ndarray], settings: FitSettings, every: int = 5):
    program = parse(text, "run.ad")
    column_plan = plan_columns(program, list(columns), {}, data_name="rows")
    plan = plan_fit(program, column_plan, {})
    meta = {"program": "run.ad", "command": "autodiff fit run.ad --data rows.csv --report run.html",
            "seed": settings.seed, "lr": settings.lr, "steps": settings.steps, "batch_size": None,
            "versions": {"autodiff-cli": "test", "numpy": "test"}}
    recorder = TrainingRecorder(program, plan, {}, columns, None, every=every, meta=meta, seed=settings.seed,
                                steps=settings.steps)
    if program.has_tensors:
        layout, start = starting_parameters(program, plan.parameters, plan.start, "normal", settings.seed)
        objective = TensorObjective(program, plan.output, layout, plan.fixed,
                                    input_rows(program, {n: columns[n] for n in column_plan.numeric}))
    else:
        start = np.array([plan.start[name] for name in plan.parameters])
        objective = ProgramObjective(program, plan, columns)
    steps = iter(range(1, settings.steps + 1))

    class Told:
        rows = objective.rows

        def loss_and_grad(self, params, rows):
            loss, grad = objective.loss_and_grad(params, rows)
            step = next(steps)
            if recorder.wants(step):
                recorder.observe(step, params, grad, loss, loss * 1.1, {"mae": math.sqrt(loss)})
            return loss, grad

        def loss(self, params):
            return objective.loss(params)

    recorder.finish(train(Told(), start, settings))
    return recorder.recording()


@pytest.fixture(scope="module")
def line_recording():
    return recorded_run((SAMPLES / "line.ad").read_text(), read_csv(SAMPLES / "line.csv"),
                        FitSettings(lr=0.01, steps=40))


@pytest.fixture(scope="module")
def classifier_recording():
    moons = read_csv(SAMPLES / "moons_xy.csv")
    return recorded_run(CLASSIFIER, moons, FitSettings(lr=0.5, steps=30, seed=2))


def page_json(page: bytes) -> dict:
    text = page.decode("utf-8")
    found = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', text, re.S)
    return json.loads(found.group(1))


def test_the_same_run_gives_the_same_bytes(line_recording, classifier_recording) -> None:
    again = recorded_run((SAMPLES / "line.ad").read_text(), read_csv(SAMPLES / "line.csv"),
                         FitSettings(lr=0.01, steps=40))
    assert training_report_html(line_recording) == training_report_html(again)
    moons = read_csv(SAMPLES / "moons_xy.csv")
    again = recorded_run(CLASSIFIER, moons, FitSettings(lr=0.5, steps=30, seed=2))
    assert training_report_html(classifier_recording) == training_report_html(again)


def test_the_page_loads_nothing_from_anywhere(line_recording, classifier_recording) -> None:
    for recording in (line_recording, classifier_recording):
        text = training_report_html(recording, graph_svg=None).decode("utf-8")
        assert set(re.findall(r"https?://[^\s\"'<>)]+", text)) <= XML_NAMESPACES  # namespaces name, never fetch
        assert not re.search(r"<(link|img|iframe|object|embed)\b", text)
        assert not re.search(r"\b(src|href)\s*=", text)
        assert "@import" not in text and "url(" not in text
        csp = re.search(r'http-equiv="Content-Security-Policy"\s+content="([^"]*)"', text).group(1)
        assert "default-src 'none'" in csp


def test_the_page_holds_the_recorded_numbers(line_recording) -> None:
    data = page_json(training_report_html(line_recording))
    assert data["steps"] == [1, 5, 10, 15, 20, 25, 30, 35, 40]
    assert data["steps"] == line_recording.steps
    assert data["train_loss"] == line_recording.train_loss
    assert data["validation_loss"] == pytest.approx([loss * 1.1 for loss in line_recording.train_loss])
    assert list(data["metrics"]) == ["mae"]
    assert data["history_steps"] == list(range(1, 41))
    assert data["meta"]["command"] == "autodiff fit run.ad --data rows.csv --report run.html"
    view = data["view"]
    assert (view["kind"], view["prediction"], view["features"]) == ("curve", "prediction", ["x"])
    for sent, frame in zip(view["frames"], line_recording.view.frames):
        decoded = sent["lo"] + np.array(sent["q"]) * (sent["hi"] - sent["lo"]) / QUANT
        span = frame.max() - frame.min()
        np.testing.assert_allclose(decoded, frame, atol=max(span, 1e-300) / QUANT / 2 * 1.0001 + 1e-12)


def test_the_page_has_every_section_and_the_diagnoses(classifier_recording) -> None:
    text = training_report_html(classifier_recording).decode("utf-8")
    for element in ('id="loss-chart"', 'id="log-scale"', 'id="step-slider"', 'id="model-view"', 'id="groups"',
                    'id="grad-chart"', 'id="diagnoses"', 'id="run"', 'id="layers"'):
        assert element in text
    data = page_json(text.encode())
    assert data["view"]["kind"] == "boundary"
    assert [g["name"] for g in data["groups"]] == ["W1", "b1", "w2"]
    assert len(data["groups"][0]["heat_values"]) == len(classifier_recording.steps)
    assert "seed" in text and "autodiff fit run.ad" in text


def test_diagnoses_are_listed_in_the_page(line_recording) -> None:
    line_recording.diagnoses = ["the loss rose from 1 to 2: the learning rate is probably too high (try --lr 0.001)"]
    try:
        text = training_report_html(line_recording).decode("utf-8")
    finally:
        line_recording.diagnoses = []
    assert '<section id="diagnoses" class="warn">' in text
    assert "<li>the loss rose from 1 to 2: the learning rate is probably too high (try --lr 0.001)</li>" in text


def test_a_run_with_nothing_wrong_says_what_the_checks_saw(line_recording) -> None:
    assert line_recording.diagnoses == []
    text = training_report_html(line_recording).decode("utf-8")
    section = re.search(r'<section id="diagnoses" class="ok">.*?</section>', text, re.S).group()
    assert "Nothing looks wrong" not in section
    losses = line_recording.history_loss or line_recording.train_loss
    assert f"the loss fell from {losses[0]:.4g} to {losses[-1]:.4g}" in section
    assert "no relu, tanh or sigmoid layer" in section and "the gradient norm went from" in section


def test_quantized_values_come_back_within_half_a_step_and_nan_is_marked() -> None:
    values = np.array([-2.0, 0.1234567, math.nan, 3.0, math.inf])
    sent = quantized(values)
    assert sent["lo"] == -2.0 and sent["hi"] == 3.0
    assert sent["q"][2] == -1 and sent["q"][4] == -1
    assert sent["q"][0] == 0 and sent["q"][3] == QUANT
    assert abs(-2.0 + sent["q"][1] * 5.0 / QUANT - 0.1234567) <= 5.0 / QUANT / 2


def test_heat_maps_are_sent_relative_to_their_largest_magnitude() -> None:
    sent = heat(np.array([0.5, -2.0, 1.0, math.nan]))
    assert sent == {"scale": 2.0, "q": [round(0.25 * HEAT_QUANT), -HEAT_QUANT, round(0.5 * HEAT_QUANT), 0]}


def test_report_data_is_plain_json(classifier_recording) -> None:
    data = report_data(classifier_recording)
    assert json.loads(json.dumps(data, allow_nan=False)) == data


def test_jupyter_shows_the_page_in_a_sandboxed_frame(line_recording) -> None:
    shown = Report(line_recording)._repr_html_()
    assert shown.startswith('<iframe title="training report" sandbox="allow-scripts"')
    srcdoc = re.search(r'srcdoc="([^"]*)"', shown).group(1)
    assert html.unescape(srcdoc).encode("utf-8") == training_report_html(line_recording)


def test_the_row_graph_is_drawn_as_graph_draws_it(line_recording, classifier_recording) -> None:
    from autodiff_cli.analysis.graph_model import GraphModel, LayerGraph
    from autodiff_cli.render.training_report import row_graph_svg

    assert isinstance(line_recording.graph, GraphModel)  # a scalar program: its Value graph of row 0
    assert isinstance(classifier_recording.graph, LayerGraph)  # a tensor program: its layers
    # the line at step 40 on the row of line.csv whose loss (w*x + b - y)**2 is largest at the
    # parameters step 40 started from: the row whose graph shows most of the gradient
    rows = read_csv(SAMPLES / "line.csv")
    data = {line_recording.graph.names[i]: node.data for i, node in enumerate(line_recording.graph.tape.order)}
    losses = (data["w"] * np.asarray(rows["x"]) + data["b"] - np.asarray(rows["y"])) ** 2
    row = int(np.argmax(losses))
    which = "the first row" if row == 0 else f"row {row + 1}"
    assert line_recording.graph_note == f"{which} of the data (the largest loss at step 40)"
    assert data["prediction"] == pytest.approx(data["w"] * rows["x"][row] + data["b"])
    for recording in (line_recording, classifier_recording):
        svg = row_graph_svg(recording)
        text = training_report_html(recording, graph_svg=svg).decode("utf-8")
        assert '<div id="row-graph"><svg' in text
        assert "<?xml" not in text


def test_a_page_written_while_training_runs_says_which_step_its_numbers_are_of() -> None:
    from autodiff_cli.analysis.training_record import Recording

    recording = Recording(meta={"program": "run.ad", "batch_size": None, "validation": None},
                          steps=[1, 10, 20], train_loss=[3.0, 2.0, 1.0], validation_loss=[3.5, 2.5, None],
                          metrics={"mae": [1.0, 0.75, None], "validation_mae": [1.25, 0.875, None]},
                          grad_norm=[1.0, 1.0, 1.0])
    page = training_report_html(recording).decode()
    summary = re.search(r'<p id="summary">(.*?)</p>', page).group(1)
    assert summary == ("Training is running: step 20 is the latest recorded. Reload to see more. At step 10, "
                       "before its update: validation loss 2.5, mae 0.75, validation mae 0.875.")
    rows = dict(re.findall(r"<tr><th>(\w+)</th><td><code>(.*?)</code>", page))
    assert (rows["batch_size"], rows["validation"]) == ("every row at every step", "none")
