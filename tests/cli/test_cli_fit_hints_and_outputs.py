"""`autodiff fit`: hints that name what is out of range, --plot to a stream, resuming into the
--values file, the message after Ctrl-C with mini-batches, and singular 'step'."""

from __future__ import annotations

import json
import math

import click
import numpy as np
import pytest

from autodiff_cli.cli import main
from autodiff_cli.cli.fit import _conclude, _Interrupts
from autodiff_cli.execute.fit import FitResult, FitSettings, Step, StopReason

from pathlib import Path

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

LINE = [str(SAMPLES / "line.ad"), "--data", str(SAMPLES / "line.csv")]


@pytest.mark.parametrize("options, named, not_named", [
    (["--weight-decay", "1e308"], "--weight-decay 1e+308", "try --lr"),
    (["--final-lr", "1e308", "--lr-schedule", "linear"], "--final-lr 1e+308", "try --lr"),
    (["--lr", "1e150"], "the learning rate 1e+150 is probably too large: try --lr 1e+149", "--weight-decay"),
], ids=["weight-decay", "final-lr", "lr"])
def test_divergence_hint_names_the_setting_out_of_range(runner, options, named, not_named) -> None:
    result = runner.invoke(main, ["fit", *LINE, "--steps", "3", "-q", *options])
    assert result.exit_code == 1, result.output
    hint = result.stderr.split("hint:")[-1]
    assert named in hint and not_named not in hint


@pytest.mark.parametrize("target", ["/dev/stdout"], ids=["dev-stdout"])
def test_plot_to_a_stream_is_svg(runner, tmp_path, target) -> None:
    pytest.importorskip("matplotlib")
    result = runner.invoke(main, ["fit", *LINE, "--steps", "2", "-q", "-o", str(tmp_path / "p.json"),
                                  "--plot", target])
    assert result.exit_code == 0, result.stderr
    assert "<svg" in result.stdout


@pytest.mark.parametrize("where", ["out"], ids=["o-names-values"])
def test_out_may_name_the_values_file_to_resume(runner, tmp_path, where) -> None:
    values = tmp_path / "p.json"
    values.write_text('{"w": 0, "b": 0}')
    first = runner.invoke(main, ["fit", *LINE, "-q", "--steps", "5", "--values", str(values), "-o", str(values)])
    assert first.exit_code == 0, first.stderr
    after_five = json.loads(values.read_text())
    assert after_five != {"w": 0.0, "b": 0.0}
    again = runner.invoke(main, ["fit", *LINE, "-q", "--steps", "5", "--values", str(values), "-o", str(values)])
    assert again.exit_code == 0, again.stderr
    # Five steps from where the first run stopped are the last five of ten from the start.
    ten = runner.invoke(main, ["fit", *LINE, "-q", "--steps", "10", "--set", "w=0", "--set", "b=0"])
    assert json.loads(values.read_text()) == pytest.approx(json.loads(ten.stdout), rel=1e-12)


@pytest.mark.parametrize("option, target", [
    ("--history", "values"), ("--plot", "values"), ("-o", "data"), ("-o", "program"), ("--history", "data"),
], ids=["history-values", "plot-values", "o-data", "o-program", "history-data"])
def test_outputs_over_other_inputs_are_still_refused(runner, tmp_path, option, target) -> None:
    program = tmp_path / "line.ad"
    program.write_text((SAMPLES / "line.ad").read_text())
    data = tmp_path / "line.csv"
    data.write_text((SAMPLES / "line.csv").read_text())
    values = tmp_path / "v.svg" if option == "--plot" else tmp_path / "v.json"
    values.write_text('{"w": 0, "b": 0}')
    paths = {"values": values, "data": data, "program": program}
    before = paths[target].read_bytes()
    result = runner.invoke(main, ["fit", str(program), "--data", str(data), "--values", str(values), "-q",
                                  "--steps", "2", option, str(paths[target])])
    assert result.exit_code == 2, result.output
    assert "writing it would destroy it" in result.stderr
    assert paths[target].read_bytes() == before


def _interrupted(batch_size):
    history = [Step(1, 4.0, 1.0, 0.1), Step(2, 5.0, 1.0, 0.1)]
    return FitResult(np.array([1.0]), 3.0, StopReason.INTERRUPTED, 2, history, params_step=3), \
        FitSettings(steps=10, batch_size=batch_size)


@pytest.mark.parametrize("batch_size, said", [(None, "wrote the best parameters so far"),
                                              (5, "wrote the latest parameters")],
                         ids=["full-batch-best", "mini-batch-latest"])
def test_ctrl_c_message_says_which_parameters_were_written(capsys, batch_size, said) -> None:
    result, settings = _interrupted(batch_size)
    with pytest.raises(click.exceptions.Exit):
        _conclude(result, settings, None, False, _Interrupts(), rows=20)
    err = capsys.readouterr().err
    assert said in err
    assert "best" not in err or batch_size is None


@pytest.mark.parametrize("steps, text", [(1, "finished 1 step:"), (2, "finished 2 steps:")], ids=["one", "two"])
def test_finished_step_count_is_singular_for_one(runner, steps, text) -> None:
    result = runner.invoke(main, ["fit", *LINE, "--steps", str(steps)])
    assert result.exit_code == 0, result.stderr
    assert text in result.stderr
    assert not math.isnan(json.loads(result.stdout)["w"])
