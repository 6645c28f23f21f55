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
