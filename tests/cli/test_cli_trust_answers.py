"""Issue 27: answers that were silently wrong.  diff refuses a constant that overflows (it wrote
``inf``, which reads back as a variable); plot breaks its curves at poles between samples; eval,
batch and fit say where a gradient is not finite; a single-valued option given twice is refused."""

from __future__ import annotations

from autodiff_cli.cli import main


def test_diff_refuses_an_overflowed_constant_as_eval_does(runner) -> None:
    source = "f = x*inf + x*(1e308*10)"
    diffed = runner.invoke(main, ["diff", source])
    evaluated = runner.invoke(main, ["eval", source, "--set", "inf=2", "--set", "x=1"])
    assert diffed.exit_code == evaluated.exit_code == 1
    assert diffed.stdout == ""
    assert diffed.stderr.startswith("<expr>:1:21: error: the result of '*' overflows a float (inf)\n")
    assert diffed.stderr == evaluated.stderr


def test_diff_refuses_a_high_order_before_doing_the_work(runner, samples) -> None:
    import time

    started = time.monotonic()
    result = runner.invoke(main, ["diff", str(samples / "neuron_exp.ad"), "--order", "10"])
    assert time.monotonic() - started < 5  # it took 28-43 s to reach the limit
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines[0].endswith(":10:1: error: the derivatives would take more than 1,000,000 operations (about "
                             "82 million at --order 10, projected from the orders below it)")
    assert lines[-1] == "  hint: --order 7 is estimated to fit; or differentiate with respect to fewer variables (--wrt)"


def test_diff_of_an_order_that_fits_is_not_refused(runner, samples) -> None:
    result = runner.invoke(main, ["diff", str(samples / "neuron_exp.ad"), "--order", "4", "--format", "program"])
    assert result.exit_code == 0, result.stderr
