"""``autodiff graph --format dot`` and ``autodiff explain`` on big programs: time per node, at
several sizes, to show it stays linear.

For generated programs (``programs.network``) of ~1e4, ~1e5 and ~3e5 nodes, this times, in
this process with the collector on as in the command:

* the walk the others start from, ``topological_order`` (the baseline: any renderer pays it);
* the graph model (``GraphModel.of``: order, kinds, names) and the DOT text (``to_dot``);
* explain as the command runs it (the first 500 lines of each pass; the rest counted) and in
  full (``--max-steps 0``), walk and plain-text rendering;

and the whole commands as processes (parse and evaluate included).  Linear time shows as
the same ns per node at every size.  CPU time, medians of ``--rounds``.

    python benchmarks/bench_graph.py [--statements 3000 30000 100000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from programs import network


def cpu(run: Callable[[], object]) -> float:
    start = time.process_time()
    run()
    return time.process_time() - start


def process_cpu(command: list[str]) -> float:
    """User + system CPU seconds of a whole command (its output thrown away)."""
    with subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as child:
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed")
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--statements", type=int, nargs="+", default=[3_000, 30_000, 100_000],
                        help="statements of the generated programs (3 nodes each)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    try:
        from autodiff_cli.analysis.graph_model import GraphModel
    except ImportError:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        from autodiff_cli.analysis.graph_model import GraphModel
    from autodiff_cli.analysis.steps import explain
    from autodiff_cli.engine.graph import paused_cycle_collector, topological_order
    from autodiff_cli.execute import evaluate
    from autodiff_cli.language import parse
    from autodiff_cli.render import explain as render_explain
    from autodiff_cli.render.dot import to_dot

    def explained(evaluation: object, max_steps: int) -> str:
        with paused_cycle_collector():  # as the command renders
            return render_explain.to_plain(explain(evaluation, max_steps))  # type: ignore[arg-type]

    print(f"ns per node (CPU, median of {args.rounds}; collector on, as in the commands; "
          f"Python {sys.version.split()[0]})")
    heading = ["walk (baseline)", "model", "DOT text", "explain", "explain all", "graph cmd", "explain cmd"]
    print(f"{'nodes':>8} " + "".join(f"{h:>16}" for h in heading))
    with tempfile.TemporaryDirectory() as directory:
        for statements in args.statements:
            path = Path(directory) / f"net{statements}.ad"
            path.write_text(network(statements))
            evaluation = evaluate(parse(path.read_text()))
            nodes = len(topological_order(evaluation.root))
            runs: dict[str, list[float]] = {name: [] for name in heading}
            for _ in range(args.rounds):
                runs["walk (baseline)"].append(cpu(lambda e=evaluation: topological_order(e.root)))
                runs["model"].append(cpu(lambda e=evaluation: GraphModel.of(e)))
                model = GraphModel.of(evaluation)
                runs["DOT text"].append(cpu(lambda m=model: to_dot(m)))
                runs["explain"].append(cpu(lambda e=evaluation: explained(e, 500)))
                runs["explain all"].append(cpu(lambda e=evaluation: explained(e, 0)))
                runs["graph cmd"].append(process_cpu(["autodiff", "graph", str(path), "--format", "dot"]))
                runs["explain cmd"].append(process_cpu(["autodiff", "explain", str(path)]))
            cells = "".join(f"{statistics.median(times) / nodes * 1e9:16.0f}" for times in runs.values())
            print(f"{nodes:>8,} {cells}", flush=True)
    print("\nlinear: the same ns per node at every size (the commands include parsing and evaluating)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
