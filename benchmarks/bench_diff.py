"""`autodiff diff` against SymPy: the size of the derivatives, and the time to get them.

Size.  For each program, the number of operations written out (every + - * / **, unary
minus and function call; numbers and names are free):

* ours: the `text` output (= the `program` output's statements, intermediates included);
* SymPy diff: ``sympy.count_ops`` of ``sympy.diff(expression, x)`` for each variable x,
  summed (the derivatives as expression trees, which is how SymPy prints them);
* SymPy diff + cse: the same after ``sympy.cse`` of all the derivatives together
  (its replacements counted once), SymPy's own way of sharing subexpressions.

on the samples, on random programs of growing size from the property tests' generator
(``tests/properties/_generator.py``: every op but sign and step, shared
subexpressions; "random" picks operands anywhere before, "deep" among the last three
nodes, so that depth grows with size), and on a chain
where each step uses the one before twice (``v = v*sin(v)``), the case where a tree
grows exponentially.  The ratios ours/SymPy are printed; below 1 means ours is smaller.

Time.  Programs of 1e2, 1e3 and 1e4 statements (a deep chain of tanh units, and a
"ladder" where each unit uses the two before), differentiated by ``autodiff diff``
(parse + differentiate + text output, in process) and by SymPy (``diff`` for every
variable, on the expression built from the same program; building it is not timed).  Runs are interleaved, and medians reported.
SymPy runs in a forked child with a deep stack (``in_child``) and gets
``--sympy-timeout`` seconds per run; past that, or on an error, it is reported as failed.

    python benchmarks/bench_diff.py                 # all of it, a few minutes
    python benchmarks/bench_diff.py --quick         # smaller sizes, one run each
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import operator
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "properties"))  # the shared random program generator

try:
    import sympy
except ImportError:
    print("bench_diff.py needs SymPy, its baseline: pip install '.[bench]'", file=sys.stderr)
    sys.exit(2)

from _generator import OPS, random_case

from autodiff_cli.execute.symbolic import differentiate
from autodiff_cli.language import parse
from autodiff_cli.language.program import Program
from autodiff_cli.render.formulas import derivatives_text, operation_count

_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "**": operator.pow,
}
_FUNCTIONS: dict[str, Callable[[Any], Any]] = {
    "tanh": sympy.tanh,
    "exp": sympy.exp,
    "log": sympy.log,
    "sqrt": sympy.sqrt,
    "sin": sympy.sin,
    "cos": sympy.cos,
    "abs": sympy.Abs,
    "sign": sympy.sign,
    "step": sympy.Heaviside,
    "relu": lambda u: sympy.Max(0, u),
    "sigmoid": lambda u: 1 / (1 + sympy.exp(-u)),
}


def to_sympy(program: Program) -> tuple[dict[str, Any], Any]:
    """The program's output as a SymPy expression over one real symbol per input."""
    symbols: dict[str, Any] = {}
    values: list[Any] = []
    for op, args, param, _ in program.instructions:
        a = [values[i] for i in args]
        if op == "input":
            symbols[param] = sympy.Symbol(param, real=True)
            values.append(symbols[param])
        elif op == "const":
            values.append(sympy.Integer(int(param)) if float(param).is_integer() else sympy.Float(param))
        elif op == "**c":
            c = sympy.Integer(int(param)) if float(param).is_integer() else sympy.Rational(param)
            values.append(a[0] ** c)
        elif op in _BINARY:
            values.append(_BINARY[op](a[0], a[1]))
        elif op == "neg":
            values.append(-a[0])
        elif op == "=":
            values.append(a[0])
        else:
            values.append(_FUNCTIONS[op](a[0]))
    return symbols, values[program.variables[program.result].register]


def in_child(seconds: float, work: Callable[[], Any]) -> tuple[str, Any]:
    """("ok", work()) run in a forked child, or (why not, None) after ``seconds``.

    SymPy recurses once per level of an expression: the child runs it on a thread with a
    512 MiB stack and a recursion limit of a million, so a deep program is not failed by
    Python's defaults, and is killed at the time limit, which SymPy cannot be told.
    """
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)

    def child() -> None:
        sys.setrecursionlimit(1_000_000)
        threading.stack_size(512 * 1024 * 1024)
        outcome: list[tuple[str, Any]] = []

        def run() -> None:
            try:
                outcome.append(("ok", work()))
            except RecursionError:
                outcome.append(("RecursionError", None))
            except MemoryError:
                outcome.append(("MemoryError", None))

        thread = threading.Thread(target=run)
        thread.start()
        thread.join()
        sender.send(outcome[0] if outcome else ("crashed", None))

    process = context.Process(target=child)
    process.start()
    try:
        if receiver.poll(seconds):
            try:
                return receiver.recv()
            except EOFError:
                return "crashed", None
        return f">{seconds:g}s", None
    finally:
        process.kill()
        process.join()


def sympy_sizes(program: Program, wrt: list[str], timeout: float) -> tuple[str, str]:
    """(count_ops of SymPy's derivatives, the same after cse), or why they are missing."""

    def work() -> tuple[int, int]:
        symbols, expression = to_sympy(program)
        derivatives = [sympy.diff(expression, symbols[name]) for name in wrt]
        plain = sum(sympy.count_ops(d) for d in derivatives)
        replacements, reduced = sympy.cse(derivatives)
        shared = sum(sympy.count_ops(value) for _, value in replacements) + sum(
            sympy.count_ops(d) for d in reduced
        )
        return plain, shared

    status, sizes = in_child(timeout, work)
    if status != "ok":
        return status, status
    return str(sizes[0]), str(sizes[1])


def sympy_time(program: Program, wrt: list[str], timeout: float) -> tuple[str, float]:
    """Seconds SymPy's diff takes for each of ``wrt`` (building the expression is not timed)."""

    def work() -> float:
        symbols, expression = to_sympy(program)
        start = time.perf_counter()
        for name in wrt:
            sympy.diff(expression, symbols[name])
        return time.perf_counter() - start

    return in_child(timeout, work)


def ratio(ours: int, theirs: str) -> str:
    return f"{ours / int(theirs):.2f}" if theirs.isdigit() and int(theirs) else "-"


def size_row(label: str, source: str, timeout: float) -> None:
    program = parse(source)
    result = differentiate(program)
    ours = operation_count(result.program)
    plain, shared = sympy_sizes(program, result.wrt, timeout)
    print(
        f"{label:<28} {len(program.instructions):>6} {ours:>8} {plain:>14} {shared:>14}"
        f" {ratio(ours, plain):>8} {ratio(ours, shared):>8}",
        flush=True,
    )


def sizes(quick: bool, timeout: float) -> None:
    print("Operations in the derivatives (instr = the program's instructions)")
    print(
        f"{'program':<28} {'instr':>6} {'ours':>8} {'sympy diff':>14} {'diff+cse':>14} "
        f"{'ours/diff':>8} {'ours/cse':>8}"
    )
    for path in sorted((REPO / "samples").glob("*.ad")):
        size_row(path.name, path.read_text(), timeout)
    for n_ops in (10, 20, 40) if quick else (10, 20, 40, 80, 160, 320):
        for seed in range(3):
            case = random_case(seed, n_ops, ops=RANDOM_OPS)
            size_row(f"random {n_ops} ops, seed {seed}", case.text, timeout)
    for n_ops in (10, 20, 40) if quick else (10, 20, 40, 80, 160):
        for seed in range(2):
            case = random_case(seed, n_ops, ops=RANDOM_OPS, recent=RECENT)
            size_row(f"deep {n_ops} ops, seed {seed}", case.text, timeout)
    for steps in (4, 8, 12) if quick else (4, 8, 12, 16, 20, 24):
        lines = ["v0 = x"] + [f"v{k} = v{k - 1}*sin(v{k - 1})" for k in range(1, steps + 1)]
        size_row(f"v = v*sin(v), {steps} steps", "\n".join(lines), timeout)


# Deep random programs: each op takes its operands from the last RECENT nodes.
RECENT = 3
# The generator's ops but sign and step, whose derivative 0 would cut most random programs short.
RANDOM_OPS = tuple(op for op in OPS if op not in ("sign", "step"))


def chain(n: int) -> str:
    """n tanh units in a row, each with its own weight and bias: ~5n instructions."""
    lines = ["h0 = x + y"] + [f"h{k} = tanh(w{k}*h{k - 1} + b{k})" for k in range(1, n + 1)]
    return "\n".join(lines)


def ladder(n: int) -> str:
    """n tanh units, each fed by the two before it: a graph whose tree is exponential."""
    lines = ["h0 = x", "h1 = y"] + [f"h{k} = tanh(w{k}*h{k - 1} + 0.5*h{k - 2})" for k in range(2, n + 2)]
    return "\n".join(lines)


def timings(quick: bool, repeat: int, timeout: float) -> None:
    print("\nTime to differentiate (median of runs; wrt x and y)")
    print(
        f"{'program':<8} {'statements':>10} {'instr':>7} {'ours s':>9} {'sympy s':>16} {'sympy/ours':>10} "
        f"{'ours ops':>9}"
    )
    shapes = [
        (shape, n) for shape in (chain, ladder) for n in ((100, 1000) if quick else (100, 1000, 10_000))
    ]
    for shape, n in shapes:
        source = shape(n)
        program = parse(source)
        ours: list[float] = []
        theirs: list[float] = []
        failed = ""
        for _ in range(repeat):  # interleaved: ours, then SymPy, each turn
            start = time.perf_counter()
            result = differentiate(parse(source), ["x", "y"])
            derivatives_text(result)
            ours.append(time.perf_counter() - start)
            if not failed:
                status, seconds = sympy_time(program, ["x", "y"], timeout)
                if status == "ok":
                    theirs.append(seconds)
                else:
                    failed = status
        mine = statistics.median(ours)
        shown = failed or f"{statistics.median(theirs):.3f}"
        speed = "-" if failed else f"{statistics.median(theirs) / mine:.2f}"
        print(
            f"{shape.__name__:<8} {n:>10} {len(program.instructions):>7} {mine:>9.3f} {shown:>16} "
            f"{speed:>10} {operation_count(result.program):>9}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes and one run each")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per size (default 5)")
    parser.add_argument(
        "--sympy-timeout", type=float, default=60.0, help="seconds per SymPy run (default 60)"
    )
    arguments = parser.parse_args()
    if not math.isfinite(arguments.sympy_timeout) or arguments.sympy_timeout <= 0 or arguments.repeat < 1:
        parser.error("--sympy-timeout must be a positive number and --repeat at least 1")
    print(f"Python {sys.version.split()[0]}, SymPy {sympy.__version__}")
    sizes(arguments.quick, arguments.sympy_timeout)
    timings(arguments.quick, 1 if arguments.quick else arguments.repeat, arguments.sympy_timeout)


if __name__ == "__main__":
    main()
