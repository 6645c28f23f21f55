"""How the process ends: quickly, without freeing what the commands built.

``cli.main.run`` sets ``EXIT_FAST`` and ends with ``exit_now`` (``os._exit``); ``main()``,
which tests and other programs call, frees everything as usual.
"""

from __future__ import annotations

import os
import sys

from ..files.stdout import output_failed

__all__ = ["collector_off_until_exit", "exit_now", "keep_until_exit"]

_KEPT: list[object] = []


EXIT_FAST = False  # set by cli.main.run(), which ends the process with os._exit


def keep_until_exit(*objects: object) -> None:
    """Leave ``objects`` to the process's end instead of freeing them as the command returns.

    A million-statement program is ~10 million objects, and freeing them one by one takes
    ~1.5 s after the output is written, for nothing: ``run()`` ends the process without
    tearing its memory down.  Only there; a program calling ``main`` keeps its memory.
    """
    if EXIT_FAST:
        _KEPT.extend(objects)


def collector_off_until_exit() -> None:
    """Turn the cycle collector off for the rest of a process that ends with ``os._exit``.

    For commands that build their data once and write it out (eval, graph, explain,
    check): what they build has no cycles, and lives until the end, yet the collector's
    first pass after each build rescans all of it, ~0.5 s of a million-statement eval.
    Only under ``run()``; a program calling ``main`` keeps its collector.
    """
    if EXIT_FAST:
        import gc

        gc.disable()


def exit_now(code: object) -> None:
    """End the process at once with ``code`` (as ``sys.exit`` reads it), the standard streams
    flushed: the command has written and closed everything else."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message") prints the message and exits with 1
        print(code, file=sys.stderr)
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except BrokenPipeError:  # the reader has gone (| head): nothing more can reach it
            pass
        except OSError as error:  # a full disk: what was written is not all there
            if stream is sys.stdout and status == 0:
                status = 1
                _say_on_stderr(f"error: {output_failed(error).message}")
        except ValueError:  # a closed stream
            pass
    os._exit(status)


def _say_on_stderr(line: str) -> None:
    try:
        os.write(2, f"{line}\n".encode(errors="backslashreplace"))
    except OSError:
        pass
