"""``python -m autodiff_cli``: the same as the ``autodiff`` command."""

from .cli import run

run()
