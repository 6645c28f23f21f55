"""How fast eval's reports are written, in MB of output per second, next to the standard library.

The evaluation of a generated program (``programs.network``) with ``--variables`` named
variables is rendered as JSON, CSV and plain text, and the same data is written by:

* the previous JSON renderer: a dict per section, then ``json.dumps(document, indent=2)``
  (the same bytes; with an indent, ``json`` runs its pure-Python encoder);
* ``json.dumps(document)`` of a document built beforehand: the C encoder, no indent
  (different bytes), encoding alone: a floor for JSON;
* ``csv.writer``: the previous CSV renderer (the same bytes);
* ``float.__repr__`` of every value and gradient alone: what every format spends at least.

Rounds are interleaved; CPU-time medians.  The collector stays on, as in the command.

    python benchmarks/bench_reports.py [--variables 100000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from programs import network


def import_package() -> tuple[object, object, object, object]:
    try:
        from autodiff_cli.execute import evaluate
    except ImportError:  # run from a checkout without the package installed
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        from autodiff_cli.execute import evaluate
    from autodiff_cli.language import parse
    from autodiff_cli.render import report
    from autodiff_cli.render.numbers import format_number, json_number

    return parse, evaluate, report, (format_number, json_number)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variables", type=int, default=100_000, help="named variables (default 1e5)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    args = parser.parse_args()
    parse, evaluate, report, (format_number, json_number) = import_package()
    evaluation = evaluate(parse(network(args.variables)))  # type: ignore[operator]

    def document() -> dict[str, object]:
        return {
            "output": evaluation.output,
            "value": json_number(evaluation.root.data),
            "values": {name: json_number(node.data) for name, node in evaluation.nodes.items()},
            "grads": {name: json_number(node.grad) for name, node in evaluation.nodes.items()},
            "kinds": {name: evaluation.kind(name) for name in evaluation.nodes},
            "mode": "reverse",
        }

    def csv_module() -> str:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(report.COLUMNS)
        for row in report.rows(evaluation):
            writer.writerow([row.name, row.kind, row.op, format_number(row.value), format_number(row.grad)])
        return buffer.getvalue()

    data = document()  # built once, outside the timing, for the floor
    numbers = [node.data for node in evaluation.nodes.values()] + [node.grad for node in evaluation.nodes.values()]
    writers: dict[str, Callable[[], str]] = {
        "json (ours)": lambda: report.to_json(evaluation),
        "previous json": lambda: json.dumps(document(), indent=2, allow_nan=False) + "\n",
        "json.dumps, no indent": lambda: json.dumps(data, allow_nan=False),
        "csv (ours)": lambda: report.to_csv(evaluation),
        "csv.writer": csv_module,
        "plain (ours)": lambda: report.to_plain(evaluation),
        "float repr alone": lambda: "".join(map(float.__repr__, numbers)),
    }
    assert writers["json (ours)"]() == writers["previous json"](), "the JSON bytes differ"
    assert writers["csv (ours)"]() == writers["csv.writer"](), "the CSV bytes differ"
    seconds: dict[str, list[float]] = {name: [] for name in writers}
    sizes = {name: len(write().encode()) for name, write in writers.items()}
    for _ in range(args.rounds):
        for name, write in writers.items():
            start = time.process_time()
            write()
            seconds[name].append(time.process_time() - start)
    median = {name: statistics.median(times) for name, times in seconds.items()}
    print(f"eval reports of {len(evaluation.nodes):,} variables (CPU medians of {args.rounds} interleaved "
          f"rounds, Python {sys.version.split()[0]})")
    print(f"{'writer':24} {'MB out':>7} {'seconds':>8} {'MB/s':>7} {'ns/variable':>12}")
    for name in writers:
        print(f"{name:24} {sizes[name] / 1e6:7.2f} {median[name]:8.3f} {sizes[name] / 1e6 / median[name]:7.1f} "
              f"{median[name] / len(evaluation.nodes) * 1e9:12.0f}")
    print(f"\njson (ours) is {median['previous json'] / median['json (ours)']:.1f}x the previous renderer "
          f"(same bytes) and {median['json.dumps, no indent'] / median['json (ours)']:.2f}x the C "
          f"encoder without indent; csv (ours) is {median['csv.writer'] / median['csv (ours)']:.1f}x csv.writer "
          "(same bytes); target: >= 50 MB/s for each of ours")
    print(f"every report writes each value and gradient with float.__repr__ (shortest round trip): that "
          f"alone is {median['float repr alone'] / len(evaluation.nodes) * 1e9:.0f} ns per variable here, "
          f"{median['float repr alone'] / median['csv (ours)']:.0%} of CSV's time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
