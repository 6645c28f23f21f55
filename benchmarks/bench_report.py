"""What ``fit --report`` costs training: the same run with and without the training recorder.

In one process, for each case, ``execute.fit.train`` runs the sample's training twice per round,
alternating: once plain, once with the recorder told about every step it wants (at the default
interval, ``training_record.default_every``: the first step, every N-th, the last), then its
``recording()`` and the page (``training_report_html``, without the row's graph, which is laid
out once by Graphviz and is not training's cost).  The recorder is called from the objective, as
the loop's step hook calls it: with the parameters, the gradient and the loss of the step.
Medians over the rounds; the ratio is recorded / plain (the goal: at most 1.10).

``--measure`` times the validation loss and a metric instead (``fit --validation 0.2 --metric
accuracy:...``, at the default measurement schedule): 20% of the rows held out as fit holds
them out (a permutation from the seed), ``execute.metrics.Measurer`` as the ``Monitor``'s
``measure``; with ``--report`` as well, the recorder then observes what is measured, as fit's
does.  The ratio is measured / plain (the goal: at most 1.10).

Cases: micrograd's moons as a scalar program (samples/moons.ad, 337 parameters written out) and
as tensors (samples/moons_mlp.ad), and the digits classifier (samples/digits.ad, mini-batches of
64 with Adam), each with its documented command's settings.

    python benchmarks/bench_report.py [--rounds 5] [--case moons moons_mlp digits] [--measure [--report]]
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from autodiff_cli.analysis.training_record import TrainingRecorder, default_every
from autodiff_cli.execute.batch_evaluator import input_rows
from autodiff_cli.execute.columns import feeds_tensors, plan_columns
from autodiff_cli.execute.fit import FitSettings, Monitor, plan_fit, train
from autodiff_cli.execute.metrics import Measurer, parse_metric
from autodiff_cli.execute.objective import ProgramObjective, objective_for
from autodiff_cli.execute.tensor_fit import TensorObjective, starting_parameters
from autodiff_cli.language import parse
from autodiff_cli.language.program import runs_as_tensors
from autodiff_cli.render.training_report import training_report_html

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
CASES = {
    "moons": ("moons.ad", "moons.csv", FitSettings(lr=1.0, lr_schedule="linear", steps=100)),
    "moons_mlp": ("moons_mlp.ad", "moons_xy.csv", FitSettings(lr=1.0, lr_schedule="linear", steps=100)),
    "digits": ("digits.ad", "digits_train.csv",
               FitSettings(optimizer="adam", lr=0.01, steps=1000, batch_size=64, seed=0)),
}
METRICS = {"moons": "accuracy:score:y", "moons_mlp": "accuracy:score:y", "digits": "accuracy:z:label"}
HELD_OUT = 0.2


def read_columns(path: Path) -> dict[str, np.ndarray]:
    with path.open(newline="") as stream:
        rows = csv.reader(stream)
        header = next(rows)
        table = np.array([[float(value) for value in row] for row in rows])
    return {name: table[:, i] for i, name in enumerate(header)}


class Case:
    """A sample's program, data, plan, objective and starting parameters."""

    def __init__(self, name: str) -> None:
        program_file, data_file, self.settings = CASES[name]
        self.name = name
        self.program = parse((SAMPLES / program_file).read_text(), f"samples/{program_file}")
        self.columns = read_columns(SAMPLES / data_file)
        columns = plan_columns(self.program, list(self.columns), {}, data_name=data_file)
        self.plan = plan_fit(self.program, columns, {})
        if runs_as_tensors(self.program, {}) or feeds_tensors(self.program, columns):
            layout, self.start = starting_parameters(self.program, self.plan.parameters, self.plan.start, "normal",
                                                     self.settings.seed)
            data = input_rows(self.program, {name: self.columns[name] for name in columns.numeric})
            self.objective: Any = TensorObjective(self.program, self.plan.output, layout, self.plan.fixed, data)
        else:
            self.start = np.array([self.plan.start[name] for name in self.plan.parameters])
            self.objective = ProgramObjective(self.program, self.plan, self.columns)

    def plain(self) -> float:
        began = time.perf_counter()
        train(self.objective, self.start, self.settings)
        return time.perf_counter() - began

    def held_out(self) -> None:
        """The training and validation objectives of a split as fit's --validation 0.2 makes it."""
        count = len(next(iter(self.columns.values())))
        chosen = np.zeros(count, dtype=bool)
        chosen[np.random.RandomState(self.settings.seed).permutation(count)[:round(HELD_OUT * count)]] = True
        parts = [{name: column[~chosen] for name, column in self.columns.items()},
                 {name: column[chosen] for name, column in self.columns.items()}]
        columns = plan_columns(self.program, list(self.columns), {}, data_name=self.name)
        self.training, self.validation = (objective_for(self.program, self.plan, part, columns, {}, None,
                                                        self.settings.seed) for part in parts)
        self.training_columns = parts[0]

    def measured(self, report: bool) -> tuple[float, int]:
        """Training with the validation loss and a metric measured (and the recorder observing)."""
        began = time.perf_counter()
        measurer = Measurer(self.program, [parse_metric(METRICS[self.name])], self.training, self.validation)
        recorder = self.recorder(self.training_columns) if report else None

        def observe(record: Any, measurement: Any, params: np.ndarray, grad: np.ndarray) -> None:
            if recorder is not None and (recorder.wants(record.step) or measurement is not None):
                recorder.observe(record.step, params, grad, record.loss,
                                 None if measurement is None else measurement.validation_loss,
                                 {} if measurement is None else measurement.metrics())

        monitor = Monitor(measure=measurer, also_at=recorder.wants if recorder is not None else None,
                          observe=observe)
        result = train(self.training, self.start, self.settings, monitor=monitor)
        size = 0
        if recorder is not None:
            recorder.finish(result)
            size = len(training_report_html(recorder.recording()))
        return time.perf_counter() - began, size

    def plain_held_out(self) -> float:
        began = time.perf_counter()
        train(self.training, self.start, self.settings)
        return time.perf_counter() - began

    def recorder(self, columns: dict[str, np.ndarray]) -> TrainingRecorder:
        return TrainingRecorder(self.program, self.plan, {}, columns, None, every=default_every(self.settings.steps),
                                meta={"program": self.name, "lr": self.settings.lr, "steps": self.settings.steps,
                                      "batch_size": self.settings.batch_size},
                                seed=self.settings.seed, steps=self.settings.steps)

    def recorded(self) -> tuple[float, int]:
        began = time.perf_counter()
        recorder = self.recorder(self.columns)
        result = train(_Recorded(self.objective, recorder), self.start, self.settings)
        recorder.finish(result)
        page = training_report_html(recorder.recording())
        return time.perf_counter() - began, len(page)


class _Recorded:
    """The objective, telling the recorder about each step it wants, as fit's step hook does."""

    def __init__(self, objective: Any, recorder: TrainingRecorder) -> None:
        self.objective, self.recorder, self.rows, self.step = objective, recorder, objective.rows, 0

    def loss_and_grad(self, params: np.ndarray, rows: Any) -> tuple[float, np.ndarray]:
        loss, grad = self.objective.loss_and_grad(params, rows)
        self.step += 1
        if self.recorder.wants(self.step):
            self.recorder.observe(self.step, params, grad, loss, None, {})
        return loss, grad

    def loss(self, params: np.ndarray) -> float:
        return self.objective.loss(params)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--case", nargs="+", choices=list(CASES), default=list(CASES))
    parser.add_argument("--measure", action="store_true", help="time the validation loss and a metric")
    parser.add_argument("--report", action="store_true", help="with --measure: and the recorder")
    args = parser.parse_args()
    if args.measure:
        measure(args)
        return
    print(f"{'case':<10} {'steps':>6} {'every':>6} {'plain s':>9} {'recorded s':>11} {'ratio':>7} {'page KB':>8}")
    for name in args.case:
        case = Case(name)
        case.plain()  # warm up: imports, shape caches
        plain, recorded, sizes = [], [], []
        for _ in range(args.rounds):
            plain.append(case.plain())
            seconds, size = case.recorded()
            recorded.append(seconds)
            sizes.append(size)
        base, with_report = statistics.median(plain), statistics.median(recorded)
        print(f"{name:<10} {case.settings.steps:>6} {default_every(case.settings.steps):>6} {base:>9.3f} "
              f"{with_report:>11.3f} {with_report / base:>7.3f} {sizes[-1] / 1024:>8.0f}")
        sys.stdout.flush()


def measure(args: argparse.Namespace) -> None:
    what = "measured+report s" if args.report else "measured s"
    print(f"{'case':<10} {'steps':>6} {'plain s':>9} {what:>18} {'ratio':>7}")
    for name in args.case:
        case = Case(name)
        case.held_out()
        case.plain_held_out()  # warm up
        plain, measured = [], []
        for _ in range(args.rounds):
            plain.append(case.plain_held_out())
            measured.append(case.measured(args.report)[0])
        base, with_measuring = statistics.median(plain), statistics.median(measured)
        print(f"{name:<10} {case.settings.steps:>6} {base:>9.3f} {with_measuring:>18.3f} {with_measuring / base:>7.3f}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
