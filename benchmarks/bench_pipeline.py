"""A million-statement program through ``autodiff eval --format json``, end to end and phase by phase.

The program is ``programs.network(--statements)``: 30 MB and 3 nodes per statement at a
million statements.  Measured:

* the whole command as a process: wall time, CPU time and peak RSS (``os.wait4``);
* floors, as processes too: ``python -c "import click"`` (what any Click program pays to
  start), and a Python program that only reads the file, builds a dict of as many names as
  the report has, and writes ``json.dumps`` of it three times over (values, grads, kinds),
  with the C encoder: the least a Python program writing this report costs;
* the phases, in this process: reading, parsing (next to its floor, the scanner's regex
  alone), building the graph, the backward pass (told apart by evaluate's progress
  calls), and writing the report (next to ``json.dumps`` of the same data, no indent).

    python benchmarks/bench_pipeline.py [--statements 1000000] [--rounds 1]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from programs import network

FLOOR = """\
import json, sys
text = open(sys.argv[1], encoding="utf-8").read()
names = [line.split(" ", 1)[0] for line in text.splitlines()]
numbers = {name: index * 0.1 for index, name in enumerate(names)}
kinds = {name: "intermediate" for name in names}
sys.stdout.write(json.dumps({"values": numbers, "grads": numbers, "kinds": kinds}))
"""


def run_process(command: list[str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MB) of a whole command, its output thrown away."""
    start = time.perf_counter()
    with subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as child:
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        error = child.stderr.read().decode() if child.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {error}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def phases(path: Path) -> dict[str, float]:
    """CPU seconds of each phase of eval --format json, run here, with their floors."""
    from autodiff_cli.execute import evaluate
    from autodiff_cli.language import compiler, parse
    from autodiff_cli.render import report

    seconds: dict[str, float] = {}
    clock = time.process_time
    start = clock()
    text = path.read_bytes().decode("utf-8-sig")
    seconds["read"] = clock() - start
    scanner = re.compile(compiler._tables().scanner.tokens.pattern)
    start = clock()
    scanner.findall(text)
    seconds["  floor: scanner regex"] = clock() - start
    start = clock()
    program = parse(text, str(path))
    seconds["parse"] = clock() - start
    built = [0.0]

    def progress(done: int, total: int) -> None:
        if done * 2 <= total:
            built[0] = clock()  # the last call of the first half: the graph is built

    start = clock()
    evaluation = evaluate(program, progress=progress)
    seconds["build + forward"] = built[0] - start
    seconds["backward"] = clock() - built[0]
    start = clock()
    with open(os.devnull, "wb") as sink:
        sink.writelines(chunk.encode() for chunk in report.json_chunks(evaluation))
    seconds["report (JSON)"] = clock() - start
    data = {"values": evaluation.values(), "grads": evaluation.grads(),
            "kinds": {name: evaluation.kind(name) for name in evaluation.nodes}}
    start = clock()
    with open(os.devnull, "wb") as sink:
        sink.write(json.dumps(data).encode())
    seconds["  floor: json.dumps, C encoder"] = clock() - start
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--statements", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=1, help="runs of each process (medians)")
    args = parser.parse_args()
    autodiff = shutil.which("autodiff")
    if autodiff is None:
        print("error: the autodiff command is not on PATH; run `pip install .` first", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "network.ad"
        path.write_text(network(args.statements))
        floor_script = Path(directory) / "floor.py"
        floor_script.write_text(FLOOR)
        size = path.stat().st_size
        commands = {
            "autodiff eval --format json": [autodiff, "eval", str(path), "--format", "json"],
            "floor: read + json.dumps": [sys.executable, str(floor_script), str(path)],
            "floor: python -c 'import click'": [sys.executable, "-c", "import click"],
        }
        results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in commands}
        for _ in range(args.rounds):
            for name, command in commands.items():
                results[name].append(run_process(command))
        print(f"{args.statements:,} statements, {size / 1e6:.1f} MB (Python {sys.version.split()[0]}, "
              f"medians of {args.rounds})")
        print(f"{'process':34} {'wall s':>8} {'CPU s':>8} {'peak MB':>8} {'CPU x floor':>12}")
        floor_cpu = statistics.median(r[1] for r in results["floor: read + json.dumps"])
        for name, runs in results.items():
            wall, cpu, peak = (statistics.median(r[i] for r in runs) for i in range(3))
            print(f"{name:34} {wall:8.2f} {cpu:8.2f} {peak:8.0f} {cpu / floor_cpu:11.1f}x")
        print("\nphases, in this process (CPU s; MB/s of program text for parse):")
        for name, seconds in phases(path).items():
            rate = f"  {size / 1e6 / seconds:6.2f} MB/s" if name in ("parse", "  floor: scanner regex") else ""
            print(f"  {name:34} {seconds:7.2f}{rate}")
    print("\ntargets: the command in <= 10 s with a peak RSS <= 1 GB at 1,000,000 statements")
    return 0


if __name__ == "__main__":
    sys.exit(main())
