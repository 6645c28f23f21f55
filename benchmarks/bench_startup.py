"""Start-up cost of ``autodiff eval`` as a whole process, against ``python -c "import click"``.

The CLI is called in shell loops, so what matters is the wall time of a whole
process.  The baseline is the least any Click program can cost: the
interpreter starting and importing Click.  Runs are interleaved (baseline,
eval, baseline, eval, ...) so that machine noise hits both alike, and the
median of each is reported with their ratio.

    python benchmarks/bench_startup.py [--runs 40]

Requires the package installed (``pip install .``) so that ``autodiff`` is on PATH.
The parser tables are cached on the first run; one warm-up run fills the cache.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time

KARPATHY = ["L = (a*b + c)*f", "--set", "a=2", "--set", "b=-3", "--set", "c=10", "--set", "f=-2"]


def wall_time(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40, help="runs of each command (default 40)")
    args = parser.parse_args()
    autodiff = shutil.which("autodiff")
    if autodiff is None:
        print("error: the autodiff command is not on PATH; run `pip install .` first", file=sys.stderr)
        return 2
    commands = {
        "python -c 'import click'": [sys.executable, "-c", "import click"],
        "autodiff eval ... --format json": [autodiff, "eval", *KARPATHY, "--format", "json"],
        "autodiff eval ... --format plain": [autodiff, "eval", *KARPATHY, "--format", "plain"],
        "autodiff eval ... --format table": [autodiff, "eval", *KARPATHY, "--format", "table"],
    }
    for command in commands.values():  # warm-up: file cache, parser-table cache
        wall_time(command)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(args.runs):
        for name, command in commands.items():
            times[name].append(wall_time(command))
    baseline = statistics.median(times["python -c 'import click'"])
    print(f"{'command':36} {'median ms':>10} {'min ms':>8} {'ratio':>6}")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"{name:36} {median * 1e3:10.1f} {min(samples) * 1e3:8.1f} {median / baseline:6.2f}")
    ratio = statistics.median(times["autodiff eval ... --format json"]) / baseline
    print(f"\neval --format json start-up: {ratio:.2f}x the bare `import click` process (target: <= 1.5x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
