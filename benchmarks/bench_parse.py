"""Parse throughput on big programs, next to two baselines measured in the same run.

* the scanner's regex alone (``re.findall`` with the parser's token pattern): a floor
  no regex-based parser of this grammar can go below;
* CPython's own C parser, ``ast.parse``, on the same text (the programs are valid
  Python too): what "fast" means for a parser that builds objects.

Also the parser with its templates switched off (``compiler.TEMPLATE_AFTER``), to show
what the generated code for repeated windows buys.  Rounds are interleaved, CPU time
(``time.process_time``) is measured, and medians are reported: wall time on a shared
machine varies far more.

    python benchmarks/bench_parse.py [--size 1000000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import ast
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from programs import long_sum, network, statements


def import_parser() -> tuple[Callable[[str], object], object, str]:
    try:
        from autodiff_cli.language import compiler
    except ImportError:  # run from a checkout without the package installed
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        from autodiff_cli.language import compiler
    return compiler.parse, compiler, compiler._tables().scanner.tokens.pattern


def cpu_seconds(run: Callable[[], object]) -> float | None:
    start = time.process_time()
    try:
        run()
    except RecursionError:
        return None  # ast.parse on a sum of many terms
    return time.process_time() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000, help="characters per program (default 1e6)")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default 7)")
    args = parser.parse_args()
    parse, compiler, pattern = import_parser()
    scanner = re.compile(pattern)
    programs = {
        "statements": statements(args.size),
        "long_sum": long_sum(args.size),
        "network": network(args.size // 30),
    }
    templates_on = compiler.TEMPLATE_AFTER

    def without_templates(text: str) -> object:
        compiler.TEMPLATE_AFTER = 10**9
        try:
            return parse(text)
        finally:
            compiler.TEMPLATE_AFTER = templates_on

    print(f"parse throughput, MB/s of program text (CPU time, median of {args.rounds} interleaved rounds; "
          f"Python {sys.version.split()[0]})")
    print(f"{'program':11} {'MB':>5} {'parse':>7} {'x scan':>7} {'no templates':>13} {'scan only':>10} "
          f"{'ast.parse':>10} {'parse / ast':>12}")
    for name, text in programs.items():
        parse(text)  # warm up: the table cache, the allocator, the templates' code
        runs: dict[str, list[float | None]] = {"parse": [], "scan": [], "driver": [], "ast": []}
        for _ in range(args.rounds):
            runs["scan"].append(cpu_seconds(lambda text=text: scanner.findall(text)))
            runs["parse"].append(cpu_seconds(lambda text=text: parse(text)))
            runs["driver"].append(cpu_seconds(lambda text=text: without_templates(text)))
            runs["ast"].append(cpu_seconds(lambda text=text: ast.parse(text)))
        megabytes = len(text) / 1e6
        median = {key: statistics.median(v) if None not in v else None for key, v in runs.items()}

        def rate(key: str, megabytes: float = megabytes, median: dict = median) -> str:
            return f"{megabytes / median[key]:.2f}" if median[key] else "fails"

        ratio = f"{median['ast'] / median['parse']:.2f}x" if median["ast"] else "-"
        print(f"{name:11} {megabytes:5.2f} {rate('parse'):>7} {median['parse'] / median['scan']:6.2f}x "
              f"{rate('driver'):>13} {rate('scan'):>10} {rate('ast'):>10} {ratio:>12}", flush=True)
    print("\nx scan: parse time over the scanner regex's time; parse / ast: ast.parse time over parse time "
          "(above 1: ours is faster); target: parse >= 5 MB/s on every program")
    return 0


if __name__ == "__main__":
    sys.exit(main())
