"""eval's reports: the same bytes as before they were made fast, and as json.dumps and csv.writer.

Golden files (``golden/eval``) were written by the previous renderer (``json.dumps(document,
indent=2)``, ``csv.writer``, a loop per row) and looked at by eye; the fast renderer must
reproduce them byte for byte.  Random evaluations (NaN, infinities, -0.0, --wrt subsets and
repeats) are compared with those standard-library writers directly, in slices too.
"""

from __future__ import annotations

import csv
import io
import json
import math
import random
from pathlib import Path

import pytest

from autodiff_cli.execute import apply_grads, evaluate, forward_gradients
from autodiff_cli.language import parse
from autodiff_cli.render import report
from autodiff_cli.render.numbers import format_number, json_number

GOLDEN = Path(__file__).parent / "golden" / "eval"
SAMPLES = Path(__file__).resolve().parents[2] / "samples"
SPECIAL = ("# every kind of number a report writes\nz = 0\nneg = -z\nr = sqrt(z)\nbase = -2\np = base ** 2\n"
           "small = 1e-300 * 1e-20\nbig = 1.7e308\nthird = 1/3\nex = 2\npw = base ** ex\n"
           "out = r + p + neg + small + third + pw\n")
# The programs the golden files were written for: the samples of the time, and SPECIAL.
GOLDEN_SAMPLES = ("karpathy", "mlp", "neuron", "neuron_exp", "quadratic", "softmax_xent")
PROGRAMS = {name: (SAMPLES / f"{name}.ad").read_text() for name in GOLDEN_SAMPLES} | {"special": SPECIAL}


def renderings(name: str) -> dict[str, str]:
    """Every report the golden files hold for program ``name``, rendered now."""
    program = parse(PROGRAMS[name], f"{name}.ad")
    evaluation = evaluate(program)
    first_inputs = [v.name for v in program.inputs][:2]
    forward = evaluate(program, backward=False)
    result = forward_gradients(forward)
    apply_grads(forward, result)
    return {
        "json": report.to_json(evaluation),
        "csv": report.to_csv(evaluation),
        "txt": report.to_plain(evaluation),
        "p4.txt": report.to_plain(evaluation, precision=4),
        "wrt.csv": report.to_csv(evaluation, first_inputs),
        "wrt.json": report.to_json(evaluation, first_inputs),
        "forward.json": report.to_json(forward, list(result.grads), mode="forward", work=report.work_dict(result)),
        "none.json": report.to_json(evaluation, []),
        "none.txt": report.to_plain(evaluation, []),
    }


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_reports_are_byte_for_byte_the_golden_files(name: str) -> None:
    for suffix, text in renderings(name).items():
        assert text == (GOLDEN / f"{name}.{suffix}").read_text(), suffix


# --- the standard library's writers, as the previous renderer used them -----------------------


def json_reference(evaluation, wrt=None, mode="reverse", work=None) -> str:
    names = list(evaluation.nodes) if wrt is None else list(wrt)
    document = {
        "output": evaluation.output,
        "value": json_number(evaluation.root.data),
        "values": {name: json_number(node.data) for name, node in evaluation.nodes.items()},
        "grads": {name: json_number(evaluation.nodes[name].grad) for name in names},
        "kinds": {name: evaluation.kind(name) for name in evaluation.nodes},
        "mode": mode,
    }
    if work is not None:
        document["work"] = dict(work)
    return json.dumps(document, indent=2, allow_nan=False) + "\n"


def reference_rows(evaluation, wrt=None):
    names = list(evaluation.nodes) if wrt is None else list(wrt)
    for name in names:
        node = evaluation.nodes[name]
        op = "" if evaluation.program.variables[name].kind == "input" else node._op
        yield name, evaluation.kind(name), op, node.data, node.grad


def csv_reference(evaluation, wrt=None) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(report.COLUMNS)
    for name, kind, op, value, grad in reference_rows(evaluation, wrt):
        writer.writerow([name, kind, op, format_number(value), format_number(grad)])
    return buffer.getvalue()


def plain_reference(evaluation, wrt=None, precision=None) -> str:
    table = [list(report.COLUMNS)] + [
        [name, kind, op, format_number(value, precision), format_number(grad, precision)]
        for name, kind, op, value, grad in reference_rows(evaluation, wrt)]
    widths = [max(len(line[i]) for line in table) for i in range(5)]
    return "\n".join("  ".join(cell.ljust(w) if i < 3 else cell.rjust(w)
                               for i, (cell, w) in enumerate(zip(line, widths))).rstrip() for line in table) + "\n"


def test_every_golden_file_is_checked() -> None:
    assert {path.name.split(".")[0] for path in GOLDEN.iterdir()} == set(PROGRAMS)


@pytest.mark.parametrize("name", sorted(path.stem for path in SAMPLES.glob("*.ad")  # the scalar samples
                                         if not parse(path.read_text("utf-8")).has_tensors))
def test_every_sample_report_is_what_the_standard_library_writes(name: str) -> None:
    evaluation = evaluate(parse((SAMPLES / f"{name}.ad").read_text()), allow_missing=True)
    assert report.to_json(evaluation) == json_reference(evaluation)
    assert report.to_csv(evaluation) == csv_reference(evaluation)
    assert report.to_plain(evaluation) == plain_reference(evaluation)


def random_evaluation(seed: int):
    rng = random.Random(seed)
    lines, names = [], []
    for i in range(rng.randrange(1, 60)):
        if not names or rng.random() < 0.3:
            lines.append(f"x{i} = {rng.choice([0, -0.0, 1e-310, 2.5, -3, 0.5, 7])}")
        else:
            a, b = rng.choice(names), rng.choice(names)
            shape = rng.choice(["tanh({a}) * {b}", "{a} + {b}", "tanh({a})", "tanh({a})**2", "-{a}", "{a} - {b}"])
            lines.append(f"v{i} = " + shape.format(a=a, b=b))
        names.append(lines[-1].split(" =")[0])
    output = rng.choice(names) if rng.random() < 0.5 else None  # first, last or in between
    evaluation = evaluate(parse("\n".join(lines)), output=output)
    numbers = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1e-320, 1.7e308, 2.5, -1 / 3, 123456789.0]
    for node in evaluation.nodes.values():  # the reports only read data and grad
        node.data = rng.choice([node.data, *numbers])
        node.grad = rng.choice([node.grad, rng.random(), *numbers])
    wrt = None
    if rng.random() < 0.4:
        wrt = [rng.choice(names) for _ in range(rng.randrange(0, 4))]  # repeats and the output too
    return evaluation, wrt


@pytest.mark.parametrize("seed", range(60))
def test_reports_are_what_the_standard_library_writes(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    evaluation, wrt = random_evaluation(seed)
    monkeypatch.setattr(report, "CHUNK", 1 + seed % 7)  # several slices, of every size
    monkeypatch.setattr(report, "KEPT_CELLS", 10 if seed % 2 else 10**6)  # plain's numbers packed or kept
    assert report.to_json(evaluation, wrt) == json_reference(evaluation, wrt)
    assert report.to_csv(evaluation, wrt) == csv_reference(evaluation, wrt)
    for precision in (None, 1, 4, 17):
        assert report.to_plain(evaluation, wrt, precision) == plain_reference(evaluation, wrt, precision)


@pytest.mark.parametrize("name", ['say "hi", twice', "back\\slash", "tab\there", "caf\u00e9", "\x1b[31m"],
                         ids=["quotes-and-comma", "backslash", "tab", "non-ascii", "escape"])
def test_names_that_need_escaping_or_quoting_are_written_as_the_standard_library_does(name: str) -> None:
    evaluation = evaluate(parse("a = 1\nb = a * 2\nc = b + 1"))
    evaluation.nodes[name] = evaluation.nodes.pop("b")  # a name the language cannot make
    evaluation.program.variables[name] = evaluation.program.variables["b"]
    assert report.to_csv(evaluation) == csv_reference(evaluation)
    assert report.to_json(evaluation) == json_reference(evaluation)


def test_rows_are_the_columns_as_tuples() -> None:
    evaluation = evaluate(parse((SAMPLES / "karpathy.ad").read_text()))
    assert report.rows(evaluation, ["L", "a"]) == [
        report.Row("L", "output", "*", -8.0, 1.0), report.Row("a", "input", "", 2.0, 6.0)]
