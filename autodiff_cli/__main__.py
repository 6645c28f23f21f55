"""``python -m autodiff_cli``: the same as the ``autodiff`` command."""

from .cli import main

main(prog_name="autodiff")
