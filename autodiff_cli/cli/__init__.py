"""The command line: Click commands that wire the library to files, stdout and exit codes.

The only layer that prints or exits.  ``main`` is the command group, ``run`` the
``autodiff`` program; each subcommand has a module of its own.
"""

from .main import main, run

__all__ = ["main", "run"]
