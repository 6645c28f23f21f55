"""Checking a person's derivative: ``autodiff check --claim "dL/dw = ..."``.

One entry, ``check_claims``, for every program: a scalar program's claims are proved or refuted
symbolically, as below; a tensor program's matrix-form claims are judged by their values (the
last part of this module).  Both give the same ``ClaimsReport``.  Of a scalar program, each
claim gets one verdict, the strongest that holds:

* **proved**: the claim minus the tool's symbolic derivative (``execute.symbolic``)
  simplifies to 0, in the differentiator's self-simplifying graph or, expanded, as
  polynomials over the same atoms (``claim_algebra.normal_form``);
* **wrong**: a point of the program's domain where the two differ; the smallest, most
  readable one found (small integers where possible), both values and the difference;
* **agrees**: equal at every point tried (how many, and where from), but not proved;
* **inconclusive**: no point tried gave both values (overflow, or no point in the domain).

Points are the inputs' given values (defaults and ``--set``), then small integers, then
random numbers, each kept only where the program and the derivative are defined (log,
sqrt and division respected) and no relu, abs, sign or step sits at its kink.

For a wrong claim, the likeliest slip is named by building the derivatives that the usual
slips give and finding the one equal to the claim: a use of a variable left out (an
overwritten gradient, micrograd's classic bug), a wrong local derivative (``tanh'`` as
``1 - x**2``), a constant factor, the sign of one term or one contribution flipped, a
term dropped.  The per-use terms are the chain-rule steps ``explain`` shows (local
derivative times the upstream gradient, one per edge), built symbolically here.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any

from ..engine.ops import short_number
from ..errors import AutodiffError, InputError, ProgramError, ShapeError, Source
from ..execute.expressions import COPY, Expressions, GraphTooLarge, Sweep, reverse_sweep
from ..execute.symbolic import differentiate, read_into_graph
from ..language.program import CONST, INPUT, INTERMEDIATE, Program, runs_as_tensors
from ..language.shapes import shape_text
from .claim_algebra import Points, Printer, equal_forms, instantiate, signed_term, substitute
from .claim_text import ClaimLine, has_claim_heads, is_backward_pass, read_claims

__all__ = [
    "AGREES",
    "INCONCLUSIVE",
    "PROVED",
    "WRONG",
    "ClaimResult",
    "ClaimTooLarge",
    "ClaimsReport",
    "Counterexample",
    "Slip",
    "UnjudgedClaim",
    "check_claims",
    "is_backward_pass_of",
    "proves_gradient_line",
    "ratio_text",
    "read_claims",
    "read_program_claims",
    "runs_around",
]

PROVED, WRONG, AGREES, INCONCLUSIVE = "proved", "wrong", "agrees", "inconclusive"
SIGN_SLIP = "sign"  # the kind of a slip that flips a sign (a word here, not the op)
# Two values agree when |claim - derivative| <= ABSOLUTE + RELATIVE * max(|claim|, |derivative|).
RELATIVE = 1e-8
ABSOLUTE = 1e-12
# The graph may not grow past this many nodes per claim.
MAX_NODES = 200_000
# The most nodes a claim and its derivative may have, together, to be expanded into sums of
# products (claim_algebra.equal_forms), whose cost grows as their square; larger claims are
# proved only by the graph's own simplification, or judged at points.
MAX_EXPANDED_NODES = 1_500
# How many slip candidates of each kind are tried at most.
MAX_CANDIDATES = 150
# A correct derivative longer than this is cut in messages ("..."): diff writes it whole.
SHOWN_LENGTH = 160

# Local derivatives people often get wrong, by op and operand: (the wrong rule, what it is).
WRONG_RULES: dict[tuple[str, int], tuple[tuple[str, str], ...]] = {
    ("tanh", 0): (("1 - x**2", "1 - x**2"), ("1 - out", "1 - tanh(x)"), ("1 + out**2", "1 + tanh(x)**2")),
    ("sigmoid", 0): (("x*(1 - x)", "x*(1 - x)"), ("out", "sigmoid(x)"), ("out*(1 + out)", "sigmoid(x)*(1 + sigmoid(x))")),
    ("sin", 0): (("-cos(x)", "-cos(x)"),),
    ("cos", 0): (("sin(x)", "sin(x)"),),
    ("exp", 0): (("x*exp(x - 1)", "x*exp(x - 1)"),),
    ("log", 0): (("1/out", "1/log(x)"),),
    ("sqrt", 0): (("1/out", "1/sqrt(x)"), ("1/(2*x)", "1/(2*x)")),
    ("**c", 0): (("c*x**c", "c*x**c"), ("x**(c - 1)", "x**(c - 1)"), ("(c - 1)*x**(c - 1)", "(c - 1)*x**(c - 1)")),
    ("/", 1): (("x/y**2", "x/y**2"), ("-1/y**2", "-1/y**2"), ("-x/y", "-x/y")),
    ("/", 0): (("-1/y**2", "-1/y**2"),),
    ("**", 0): (("x**(y - 1)", "x**(y - 1)"),),
    ("**", 1): (("out", "x**y"), ("y*x**(y - 1)", "y*x**(y - 1)")),
}


@dataclass
class Counterexample:
    """Where a claim and the derivative differ: the inputs, both values (``claimed`` None when
    the claim is undefined there) and their difference (claim - derivative)."""

    point: dict[str, float]
    claimed: float | None
    correct: float
    difference: float | None
    entry: str | None = None  # a tensor claim: the entry that differs most, and where ("W[1, 0] at ...")


@dataclass
class Slip:
    """The likeliest mistake behind a wrong claim: ``kind`` (a short key) and a sentence."""

    kind: str
    message: str


@dataclass
class ClaimResult:
    """One claim's verdict and what supports it."""

    label: str
    written: str
    expression: str
    where: str
    verdict: str
    correct: str
    points: int = 0
    domain: str = ""
    reason: str = ""
    counterexample: Counterexample | None = None
    slip: Slip | None = None
    not_compared: str = ""  # why the given values were left out of the points compared, and both values there


@dataclass
class ClaimsReport:
    results: list[ClaimResult]
    notes: list[str] = field(default_factory=list)
    against: str = "the symbolic derivative"  # what the claims were judged against

    @property
    def verdict(self) -> str:
        verdicts = {r.verdict for r in self.results}
        for worst in (WRONG, INCONCLUSIVE, AGREES):
            if worst in verdicts:
                return worst
        return PROVED


# --- points ---------------------------------------------------------------------------------

SMALL_INTEGERS = (1.0, 2.0, -1.0, 3.0, -2.0, 0.0, -3.0, 4.0)
DOMAIN_TEXT = ("the given values, small integers and random numbers in [-3, 3], (0, 2] and [-10, 10], "
               "within the program's domain")


def _points(names: Sequence[str], given: dict[str, float], seed: int) -> list[dict[str, float]]:
    rng = random.Random(seed)
    points: list[dict[str, float]] = []
    if names and all(name in given for name in names):
        points.append({name: given[name] for name in names})
    for value in (1.0, 2.0, -1.0, 3.0, -2.0, 0.5):
        points.append({name: value for name in names})
    weights = (6, 5, 5, 3, 3, 2, 2, 1)
    for _ in range(60):
        points.append({name: rng.choices(SMALL_INTEGERS, weights)[0] for name in names})
    for _ in range(25):
        points.append({name: round(rng.uniform(-3, 3), 3) for name in names})
    for _ in range(15):
        points.append({name: round(rng.uniform(0.05, 2), 3) for name in names})
    for _ in range(10):
        points.append({name: round(rng.uniform(-10, 10), 3) for name in names})
    return points


def _cost(value: float) -> float:
    """How hard a number is to read: 0, 1, 2, -1... cheapest; halves next; the rest after."""
    if value.is_integer():
        return abs(value) + (0.5 if value < 0 else 0.0)
    if (2 * value).is_integer():
        return abs(value) + 2.0
    return abs(value) + 10.0


# --- one claim -------------------------------------------------------------------------------


class UnjudgedClaim(InputError):
    """A claim that cannot be judged as written (the claim is to change, not the program)."""


class ClaimTooLarge(UnjudgedClaim):
    """A claim (with the definitions it may use) larger than a claim's graph may be."""


class _Claim:
    """The graph of one claim: the program, the tool's derivative and the claim, side by side."""

    def __init__(self, program: Program, item: ClaimLine, definitions: dict[str, ClaimLine]) -> None:
        self.program = program
        self.item = item
        graph = Expressions(MAX_NODES)
        self.graph = graph
        try:
            self.plain = read_into_graph(program, graph, set())[0]
            wrt = list(dict.fromkeys(item.wrt))
            result = differentiate(program, wrt=wrt, order=len(item.wrt), output=item.output)
            derivative = next(d for d in result.derivatives if d.wrt == item.wrt)
            names = {v.name: self.plain[v.register] for v in program.inputs}
            self.truth = _read_expression(result.program, graph, names, derivative.name)
        except GraphTooLarge:
            raise ProgramError(f"{item.label} of this program takes more than {MAX_NODES:,} operations: too "
                               "large to check a claim against", program.variables[item.output].position,
                               program.source, "check a claim about a smaller part of the program") from None
        # The names a claim may use: the program's variables, then the definitions before it.
        known = {name: self.plain[v.register] for name, v in program.variables.items()}
        reading = item
        try:
            for name, definition in definitions.items():
                reading = definition
                known[name] = _read_expression(definition.expression, graph, known, None)
            reading = item
            self.claim = _read_expression(item.expression, graph, known, None)
        except GraphTooLarge:
            raise ClaimTooLarge(
                f"{'this definition' if reading is not item else 'this claim'} is too large to check: with the "
                f"program and its derivative it takes more than {MAX_NODES:,} operations", reading.rhs_at,
                reading.source, "a claim of this size is best checked in parts: claim the derivatives of the "
                "program's intermediate variables (dL/dh = ...) one by one") from None
        self.hints = _hints(program, self.plain)
        self.printer = Printer(graph, self.hints)
        # For the slips, reverse mode on a reading that keeps a computed variable apart (a COPY).
        self.cut_registers = read_into_graph(program, graph, set(item.wrt) if len(item.wrt) == 1 else set())[0]
        for node, name in _hints(program, self.cut_registers).items():
            self.hints.setdefault(node, name)
        self.root = self.cut_registers[program.variables[item.output].register]
        self.target = self.cut_registers[program.variables[item.wrt[0]].register]
        self.output_nodes = _needed(graph, self.plain[program.variables[item.output].register])

    @cached_property
    def sweep(self) -> Sweep:
        """Reverse mode from the output to the variable, on the reading that keeps a computed
        variable apart: the slips are this sweep again with one step changed."""
        return reverse_sweep(self.graph, self.root, [self.target])

    def proved(self) -> bool:
        graph = self.graph
        try:
            difference = graph.sub(self.claim, self.truth)
        except GraphTooLarge:
            return False
        if graph.value(difference) == 0.0:
            return True
        if len(_needed(graph, self.claim)) + len(_needed(graph, self.truth)) > MAX_EXPANDED_NODES:
            return False
        return equal_forms(graph, self.claim, self.truth)


def _read_expression(program: Program, graph: Expressions, names: Mapping[str, int], result: str | None) -> int:
    """A program read into ``graph`` with its inputs bound to ``names`` (by name)."""
    registers: list[int] = []
    for op, args, param, _ in program.instructions:
        if op == INPUT:
            node = names[param] if param in names else graph.input(param)
        elif op == CONST:
            node = graph.const(param)
        else:
            node = graph.apply(op, [registers[a] for a in args], param)
        registers.append(node)
    return registers[program.variables[result or program.result].register]


def _hints(program: Program, registers: list[int]) -> dict[int, str]:
    """The program's name for each computed node that holds one of its variables."""
    hints: dict[int, str] = {}
    for variable in program.variables.values():
        if variable.kind == INTERMEDIATE:
            hints.setdefault(registers[variable.register], variable.name)
    return hints


def _needed(graph: Expressions, root: int) -> list[int]:
    seen = {root}
    stack = [root]
    while stack:
        for operand in graph.args[stack.pop()]:
            if operand not in seen:
                seen.add(operand)
                stack.append(operand)
    return sorted(seen)


def proves_gradient_line(program: Program, output: str, variable: str, line: Program,
                         gradients: Mapping[str, str]) -> bool:
    """Whether ``line``, an expression over the program's variables and the gradient names of
    ``gradients`` (``dNAME`` -> ``NAME``, each standing for the true d``output``/d``NAME``),
    simplifies to d``output``/d``variable``: a line of a backward pass proved, as a claim is.
    False where it is not shown (not equal, too large, or a name the derivative cannot take)."""
    graph = Expressions(MAX_NODES)
    try:
        plain = read_into_graph(program, graph, set())[0]
        inputs = {v.name: plain[v.register] for v in program.inputs}
        wanted = list(dict.fromkeys([variable, *gradients.values()]))
        result = differentiate(program, wrt=wanted, order=1, output=output)
        nodes = {d.wrt[0]: _read_expression(result.program, graph, inputs, d.name) for d in result.derivatives}
        known = {name: plain[v.register] for name, v in program.variables.items()}
        known.update({gradient: nodes[name] for gradient, name in gradients.items()})
        claim = _read_expression(line, graph, known, None)
        truth = nodes[variable]
        if graph.value(graph.sub(claim, truth)) == 0.0:
            return True
        if len(_needed(graph, claim)) + len(_needed(graph, truth)) > MAX_EXPANDED_NODES:
            return False
        return equal_forms(graph, claim, truth)
    except (GraphTooLarge, InputError, ProgramError, KeyError):
        return False


# --- checking ---------------------------------------------------------------------------------


def read_program_claims(program: Program, values: Mapping[str, Any], source: Source, *,
                        latex: bool = False) -> list[ClaimLine]:
    """The claims of ``source`` about ``program`` run on ``values``: of a tensor program, a claim
    may be written in matrix form (``transpose(X) @ D``); of a scalar program, it may use the ops
    the symbolic algebra does not read (``x > y``, ``where``, ``clip``: judged by its values); a
    ParseError or InputError where wrong."""
    return read_claims(source, set(program.variables), latex=latex, tensors=True)


def is_backward_pass_of(program: Program, values: Mapping[str, Any], text: str) -> bool:
    """Whether a claims file is a backward pass (``dW = ...`` lines, ``backward_claims``) rather
    than claims: of a tensor program, any file of gradient lines; of a scalar program, one
    without a claim's ``dL/dx`` head on any line."""
    return is_backward_pass(text) and (runs_as_tensors(program, values) or not has_claim_heads(text))


def check_claims(program: Program, values: Mapping[str, Any], items: Sequence[ClaimLine], *,
                 seed: int = 0) -> ClaimsReport:
    """The verdict of every claim in ``items`` (definitions among them are used, not judged):
    proved symbolically for a scalar program; judged by its values, entry by entry, for a
    tensor program (see the end of this module)."""
    if runs_as_tensors(program, values):
        return _check_by_values(program, values, items, seed)
    results = []
    definitions: dict[str, ClaimLine] = {}
    given = {v.name: float(values[v.name]) if v.name in values else float(v.default)  # type: ignore[arg-type]
             for v in program.inputs if v.name in values or isinstance(v.default, (int, float))}
    inputs = {v.name for v in program.inputs}
    runs: list[Any] = []  # the program's runs for the claims judged by their values, made once
    for item in items:
        if item.name in inputs:  # it would hide the input's value from the claims below
            raise UnjudgedClaim(f"'{item.name}' is an input of the program: a definition needs a name of its own",
                                item.head_at, item.source,
                                hint=f"rename it (e.g. {item.name}_1) where it is defined and used")
        if item.expression.has_tensors:
            if not runs:
                runs = _scalar_runs(program, values, seed)
            results.append(_check_by_value(item, definitions, runs))
            continue
        if item.name is not None:
            definitions[item.name] = item
            continue
        results.append(_check_one(program, item, dict(definitions), given, seed))
    return ClaimsReport(results)


def _scalar_runs(program: Program, values: Mapping[str, Any], seed: int) -> list[Any]:
    from ..execute.interpreter import input_arrays, run_forward

    base = input_arrays(program, values, seed)
    first = run_forward(program, base)
    return [first, *runs_around(program, base, first, seed, spread=1.0)]


def _check_by_value(item: ClaimLine, definitions: Mapping[str, ClaimLine], runs: Sequence[Any]) -> ClaimResult:
    """A claim of a scalar program that uses an op the symbolic algebra does not read (a
    comparison, where, clip): judged by its values at the given point and around it, as a
    tensor claim is, and said so."""
    used = [v.name for v in item.expression.inputs if v.name in definitions]
    if item.name is not None or used:
        at = item.head_at if item.name is not None else item.rhs_at
        raise UnjudgedClaim("a definition cannot use (or be used by) a claim with comparisons, where or clip: "
                            "those are judged by their values, not read symbolically", at, item.source,
                            hint="write the claim whole, without the definition")
    ops = sorted({instruction.op for instruction in item.expression.instructions if instruction.op in _tensor_ops()})
    result = _check_values(item, runs)
    if result.verdict == AGREES:
        result.domain = f"the given values and random points around them, judged by value: the symbolic " \
                        f"algebra does not read {', '.join(ops)}"
    else:
        said = f"judged by its values: the symbolic algebra does not read {', '.join(ops)}"
        result.reason = f"{result.reason} ({said})" if result.reason else said
    return result


def _tensor_ops() -> Mapping[str, Any]:
    """The entries that are not elementwise (the symbolic algebra reads only elementwise ones)."""
    from ..engine.registry import ENTRIES

    return {name: entry for name, entry in ENTRIES.items() if not entry.elementwise}


def _check_one(program: Program, item: ClaimLine, definitions: dict[str, ClaimLine], given: dict[str, float],
               seed: int) -> ClaimResult:
    claim = _Claim(program, item, definitions)
    correct = _shown(claim.printer.text(claim.truth, named_root=False))
    result = ClaimResult(item.label, item.written, item.rhs, item.where, PROVED, correct)
    if claim.proved():
        result.reason = "the claim minus the derivative simplifies to 0"
        return result
    names = [v.name for v in program.inputs]
    points = _points(names, given, seed)
    evaluation = _evaluate(claim, names, points)
    usable, agree, claimed, truth = evaluation
    import numpy as np

    at_given = bool(names) and all(name in given for name in names)
    if at_given and not usable[0]:
        result.not_compared = _given_not_compared(claim, names, points[0], claimed[0], truth[0])

    if not usable.any():
        result.verdict = INCONCLUSIVE
        result.reason = _why_no_points(claim, names, points)
        return result
    disagree = usable & ~agree
    if not disagree.any():
        result.verdict = AGREES
        result.points = int(usable.sum())
        result.domain = DOMAIN_TEXT if not result.not_compared else DOMAIN_TEXT.removeprefix("the given values, ")
        result.reason = "equal at every point tried, but not shown equal symbolically"
        return result
    result.verdict = WRONG
    candidates = [points[i] for i in np.flatnonzero(disagree)]
    best = min(candidates, key=lambda p: sum(_cost(v) for v in p.values()))
    best = _shrink(claim, names, best)
    result.counterexample = _counterexample(claim, names, best)
    try:
        result.slip = _diagnose(claim, names, points, usable)
    except GraphTooLarge:  # the usual slips, built beside a claim this large, do not fit
        result.slip = Slip("unknown", "the claim is too large for its slip to be named; the derivative is "
                                      f"{item.label} = {correct}")
    return result


def _shown(text: str) -> str:
    return text if len(text) <= SHOWN_LENGTH else text[: SHOWN_LENGTH - 3] + "..."


def _evaluate(claim: _Claim, names: Sequence[str], points: Sequence[dict[str, float]],
              nodes: Sequence[int] | None = None) -> tuple[Any, Any, Any, Any]:
    """(usable, agree, claim values, derivative values) at ``points``: usable where the
    program and the derivative are finite and no kink is at 0."""
    import numpy as np

    columns = {name: np.array([p[name] for p in points], dtype=float) for name in names}
    values = Points(claim.graph, columns, len(points))
    truth = values[claim.truth]
    claimed = values[claim.claim]
    usable = np.isfinite(truth)
    for node in claim.output_nodes:
        usable &= np.isfinite(values[node])
    usable &= ~values.kinked(claim.output_nodes)
    agree = _agree(claimed, truth)
    claim.points = values  # type: ignore[attr-defined]
    return usable, agree, claimed, truth


def _given_not_compared(claim: _Claim, names: Sequence[str], point: dict[str, float], claimed: float,
                        truth: float) -> str:
    """Why the given values were not among the points compared (a kink, or no finite value),
    with what the claim and reverse mode give there."""
    from ..engine.ops import OPS

    graph, values = claim.graph, claim.points  # type: ignore[attr-defined]
    at = ", ".join(f"{name} = {short_number(point[name])}" for name in names)
    kinks = [graph.ops[node] for node in claim.output_nodes
             if getattr(OPS.get(graph.ops[node]), "kink", False) and
             values[graph.args[node][0]][0] == (0.0 if len(graph.args[node]) == 1 else values[graph.args[node][1]][0])]
    if kinks:
        why = f"are at a kink of {kinks[0]}, where {claim.item.label} has no value"
    else:
        why = "give no finite value of the program or its derivative"
    shown = "undefined" if not math.isfinite(claimed) else short_number(claimed)
    truth_shown = "undefined" if not math.isfinite(truth) else short_number(truth)
    return (f"not compared at the given values ({at}): they {why}; there the claim gives {shown} and "
            f"reverse mode (autodiff eval) {truth_shown}")


def _agree(a: Any, b: Any) -> Any:
    import numpy as np

    with np.errstate(all="ignore"):
        return np.isfinite(a) & (np.abs(a - b) <= ABSOLUTE + RELATIVE * np.maximum(np.abs(a), np.abs(b)))


def _why_no_points(claim: _Claim, names: Sequence[str], points: Sequence[dict[str, float]]) -> str:
    return (f"no point tried ({len(points)}: {DOMAIN_TEXT.split(', within')[0]}) gives finite values of the "
            "program and its derivative: they overflow, or the program's domain was not found")


def _shrink(claim: _Claim, names: Sequence[str], point: dict[str, float]) -> dict[str, float]:
    """Simpler numbers, one input at a time, while the claim still differs there."""
    order = (0.0, 1.0, -1.0, 2.0, -2.0, 3.0, -3.0, 0.5, -0.5, 4.0, 5.0)
    current = dict(point)
    for _ in range(3):
        changed = False
        for name in names:
            cost = _cost(current[name])
            trials = [dict(current, **{name: v}) for v in order if _cost(v) < cost]
            if not trials:
                continue
            usable, agree, claimed, truth = _evaluate(claim, names, trials)
            for i, trial in enumerate(trials):
                if usable[i] and not agree[i] and abs(claimed[i] - truth[i]) > 1e-6 * max(1.0, abs(truth[i])):
                    current = trial
                    changed = True
                    break
        if not changed:
            break
    return current


def _counterexample(claim: _Claim, names: Sequence[str], point: dict[str, float]) -> Counterexample:
    _, _, claimed, truth = _evaluate(claim, names, [point])
    graph = claim.graph
    relevant = {graph.params[n] for n in _needed(graph, claim.truth) + _needed(graph, claim.claim)
                + claim.output_nodes if graph.ops[n] == INPUT}
    shown = {name: point[name] for name in names if name in relevant}
    value = float(claimed[0]) if math.isfinite(claimed[0]) else None
    correct = float(truth[0])
    return Counterexample(shown, value, correct, None if value is None else value - correct)


# --- naming the slip ---------------------------------------------------------------------------


def _diagnose(claim: _Claim, names: Sequence[str], points: Sequence[dict[str, float]], usable: Any) -> Slip:
    import numpy as np

    chosen = [p for p, ok in zip(points, usable) if ok]
    values_at = _evaluate(claim, names, chosen)[2:]
    claimed = values_at[0]
    finite = np.isfinite(claimed)
    pts = claim.points  # type: ignore[attr-defined]

    def matches(node: int) -> bool:
        candidate = pts[node]
        both = finite & np.isfinite(candidate)
        if both.sum() < min(3, len(chosen)):
            return False
        return bool(_agree(claimed[both], candidate[both]).all())

    graph = claim.graph
    text = claim.printer.text
    item = claim.item
    label = item.label
    for finder in (_missing_use, _wrong_local, _factor, _flipped_contribution, _no_upstream, _term_slips):
        slip = finder(claim, matches, text, label)
        if slip is not None:
            return slip
    del graph
    return Slip("unknown", f"no usual slip explains the difference; the derivative is {label} = "
                           f"{_shown(claim.printer.text(claim.truth, named_root=False))}")


def _statement(claim: _Claim, node: int) -> str:
    """Where the program writes a node: ``line 3: e = a + b``."""
    position = claim.graph.positions[node]
    program = claim.program
    if position is None:
        return ""
    line = program.source.position(position).line
    if node in claim.hints:
        return f"line {line}: {program.source.line(line).strip()}"
    return f"{_shown(claim.printer.text(node, named_root=False))} on line {line}"


def _first_order(claim: _Claim) -> bool:
    return len(claim.item.wrt) == 1


def _missing_use(claim: _Claim, matches: Any, text: Any, label: str) -> Slip | None:
    if not _first_order(claim):
        return None
    found = claim.sweep.uses()
    tried = 0
    ordinals = ("first", "second", "third", "fourth", "fifth")
    for node in sorted(found, key=lambda n: (n != claim.target, -n)):
        edges = found[node]
        if len(edges) < 2:
            continue
        for k, edge in enumerate(edges):
            tried += 1
            if tried > MAX_CANDIDATES:
                return None
            if not matches(claim.sweep.again(dropped=edge).adjoint(claim.target)):
                continue
            name = claim.printer.text(node, named_root=True) if node != claim.target else claim.item.wrt[0]
            added = signed_term(text(claim.sweep.contribution(edge)), False)
            where = _statement(claim, edge[0])
            where = f" ({where})" if where else ""
            if node == claim.target and len(edges) == 2:
                kept = edges[1 - k]
                kept_where = _statement(claim, kept[0])
                kept_where = f" ({kept_where})" if kept_where else ""
                return Slip("missing use", f"your formula is the contribution of the {ordinals[1 - k]} use of "
                                           f"{name} only{kept_where}; the {ordinals[k]} use{where} adds {added}")
            if node == claim.target:
                return Slip("missing use", f"your formula leaves out the {ordinals[min(k, 4)]} of the {len(edges)} "
                                           f"uses of {name}{where}, which adds {added}")
            return Slip("missing use", f"the gradient of {name} counts only some of its uses: its "
                                       f"{ordinals[min(k, 4)]} use{where} is missing, which adds {added} "
                                       f"to d{claim.item.output}/d{name}")
    return None


def _wrong_local(claim: _Claim, matches: Any, text: Any, label: str) -> Slip | None:
    if not _first_order(claim):
        return None
    graph = claim.graph
    tried = 0
    for edges in claim.sweep.uses().values():
        for node, index in edges:
            op = graph.ops[node]
            for wrong, spelled in WRONG_RULES.get((op, index), ()):
                tried += 1
                if tried > MAX_CANDIDATES:
                    return None
                local = instantiate(graph, wrong, node)
                if not matches(claim.sweep.again(local={(node, index): local}).adjoint(claim.target)):
                    continue
                return Slip("local derivative", _local_message(claim, node, index, spelled))
    return None


def _local_message(claim: _Claim, node: int, index: int, spelled: str) -> str:
    """``d/dn tanh(n) written as 1 - n**2 instead of 1 - tanh(n)**2``, on the operands' names
    (``u`` for an operand the program does not name, said after)."""
    graph = claim.graph
    op = graph.ops[node]
    args = graph.args[node]
    names = []
    explained = []
    for i, operand in enumerate(args):
        written = claim.printer.text(operand)
        if graph.ops[operand] in (INPUT, COPY) or operand in claim.hints:
            names.append(written)
        else:
            placeholder = ("u", "v")[i]
            names.append(placeholder)
            explained.append(f"{placeholder} = {_shown(written)}")
    small = Expressions()
    inputs = [small.input(name) for name in names]
    local_node = small.apply(op, inputs, graph.params[node])
    wrong = instantiate(small, spelled.replace("sigmoid(x)", "out").replace("tanh(x)", "out")
                        .replace("log(x)", "out").replace("sqrt(x)", "out").replace("x**y", "out"), local_node)
    right = small.derivative(local_node, index)
    printer = Printer(small)
    where = _statement(claim, node)
    notes = [f"at {where}"] if where else []
    notes.extend(f"where {text}" for text in explained)
    return (f"d/d{names[index]} {printer.text(local_node)} written as {printer.text(wrong)} instead of "
            f"{printer.text(right)}" + (f" ({'; '.join(notes)})" if notes else ""))


def _no_upstream(claim: _Claim, matches: Any, text: Any, label: str) -> Slip | None:
    """The chain rule stopped early: a local derivative (or a gradient part-way up) given as
    the whole derivative, without the upstream gradient that multiplies it."""
    if not _first_order(claim):
        return None
    graph = claim.graph
    for node, index in claim.sweep.uses().get(claim.target, [])[:MAX_CANDIDATES]:
        local = graph.derivative(node, index)
        if not matches(local) or node == claim.root:
            continue
        user = claim.hints.get(node, text(node, named_root=False))
        upstream = text(claim.sweep.adjoint(node), named_root=False)
        return Slip("no upstream", f"your formula is the local derivative d{user}/d{claim.item.wrt[0]} = "
                                   f"{text(local, named_root=False)} alone; the chain rule multiplies it by the "
                                   f"upstream gradient d{claim.item.output}/d{user} = {upstream}")
    return None


def ratio_text(ratio: float) -> str | None:
    """A ratio as the small fraction it is (``2``, ``1/8``, ``-3/2``), or None when it is none."""
    fraction = Fraction(ratio).limit_denominator(16)
    if fraction == 0 and ratio != 0.0:  # a tiny factor is not 0
        return None
    if abs(float(fraction) - ratio) > 1e-9 * max(1.0, abs(ratio)):
        return None
    return str(fraction)


def _factor(claim: _Claim, matches: Any, text: Any, label: str) -> Slip | None:
    import numpy as np

    pts = claim.points  # type: ignore[attr-defined]
    truth, claimed = pts[claim.truth], pts[claim.claim]
    with np.errstate(all="ignore"):
        ok = np.isfinite(truth) & np.isfinite(claimed) & (np.abs(truth) > 1e-9)
        if ok.sum() < 2:
            return None
        ratios = claimed[ok] / truth[ok]
    ratio = float(np.median(ratios))
    if not np.all(np.abs(ratios - ratio) <= 1e-8 * abs(ratio)) or abs(ratio - 1.0) < 1e-9:
        return None
    graph = claim.graph
    candidate = graph.mul(graph.const(ratio), claim.truth)
    if not matches(candidate):
        return None
    if abs(ratio + 1.0) < 1e-9:
        return Slip("sign", "the sign of the whole derivative is flipped")
    if ratio == 0.0:  # a factor of 0, said as what it is
        return Slip("factor", f"your formula is 0 at every point tried, but {label} is not 0 everywhere")
    written = ratio_text(ratio) or short_number(ratio)
    return Slip("factor", f"off by a factor of {written}: your formula is {written} times {label}")


def _flipped_contribution(claim: _Claim, matches: Any, text: Any, label: str) -> Slip | None:
    if not _first_order(claim):
        return None
    tried = 0
    for node, edges in claim.sweep.uses().items():
        if len(edges) < 2:
            continue
        for edge in edges:
            tried += 1
            if tried > MAX_CANDIDATES:
                return None
            if matches(claim.sweep.again(flipped=edge).adjoint(claim.target)):
                where = _statement(claim, edge[0])
                name = claim.item.wrt[0] if node == claim.target else claim.printer.text(node)
                return Slip("sign", f"the sign of the contribution of {name}'s use"
                                    f"{f' ({where})' if where else ''} is flipped: it adds "
                                    f"{signed_term(text(claim.sweep.contribution(edge)), False)}")
    return None


def _term_slips(claim: _Claim, matches: Any, text: Any, label: str) -> Slip | None:
    """A term of a sum inside the derivative with its sign flipped, or left out."""
    graph = claim.graph
    sums = [n for n in _needed(graph, claim.truth) if graph.ops[n] in ("+", "-")]
    sums.reverse()  # the outermost first
    flips: list[tuple[int, int, str]] = []
    drops: list[tuple[int, int, str]] = []
    for node in sums[:MAX_CANDIDATES // 4]:
        a, b = graph.args[node]
        minus = graph.ops[node] == "-"
        flips.append((node, graph.add(a, b) if minus else graph.sub(a, b), signed_term(text(b), minus)))
        drops.append((node, a, signed_term(text(b), minus)))
        if graph.ops[a] not in ("+", "-"):
            flips.append((node, graph.sub(b, a) if not minus else graph.neg(graph.add(a, b)), text(a)))
            drops.append((node, graph.neg(b) if minus else b, text(a)))
    for node, replacement, term in flips:
        if matches(substitute(graph, claim.truth, {node: replacement})):
            inside = "" if node == claim.truth else f" in {text(node, named_root=False)}"
            return Slip("sign", f"the sign of the {term} term{inside} is flipped")
    for node, replacement, term in drops:
        if matches(substitute(graph, claim.truth, {node: replacement})):
            inside = "" if node == claim.truth else f" of {text(node, named_root=False)}"
            return Slip("dropped term", f"the term {term}{inside} is missing")
    return None


# --- claims about a tensor program, in matrix form: judged by their values --------------------
#
# ``dL/dW = transpose(X) @ (P - Y) * 2 / 8``: a tensor program has no symbolic derivative here,
# so a matrix-form claim is judged by its values: the claim's expression (in the language, over
# the program's variables) against the tool's reverse-mode gradient, entry by entry, at the given
# values and at random points around them (seeded).  The verdicts are ``wrong`` (with the entry
# that differs most, both values, and the slip if it is a known one: a transposed result, a
# flipped sign, a constant factor such as a missing ``2/N``, a formula that is 0, or one undefined
# where the gradient is defined), ``agrees`` at every point tried (never ``proved``), or
# ``inconclusive`` where nothing could be compared.  The program must run at the given values:
# its error there is its own, and is raised as it is.

TENSOR_POINTS = 8  # the given values and this many less one random points around them
TENSOR_DOMAIN = "the given values and random points around them (each entry moved by up to its size, at least 1)"


def _check_by_values(program: Program, values: Mapping[str, Any], items: Sequence[ClaimLine], seed: int
                     ) -> ClaimsReport:
    """The verdict of every claim in ``items`` on a tensor program (definitions are refused).
    An error of the program at the given values (a shape error, a value outside its domain) is
    raised as it is: it is the program's, and ``eval`` reports the same."""
    from ..execute.interpreter import input_arrays, run_forward

    base = input_arrays(program, values, seed)
    first = run_forward(program, base)
    runs = [first, *runs_around(program, base, first, seed, spread=1.0)]
    results = []
    for item in items:
        if item.name is not None:
            raise UnjudgedClaim(f"a definition ('{item.name} = ...') is for scalar claims; a tensor claim writes "
                                "its expression whole", item.head_at, item.source)
        results.append(_check_values(item, runs))
    return ClaimsReport(results, against="the gradient by reverse mode")


def runs_around(program: Program, base: Mapping[str, Any], first: Any, seed: int, spread: float,
                points: int = TENSOR_POINTS) -> list[Any]:
    """The program run (``TensorRun``) at up to ``points`` - 1 random points around ``base``,
    where ``first`` is its run: each entry moved by up to ``spread`` times its size (at least 1),
    one seeded stream a point, and the inputs read as labels or indices left as they are (moved,
    they would be no classes at all).  A point outside the program's domain is left out: it is
    no point to judge at.  Matrix-form claims and backward passes are judged at these points."""
    import numpy as np

    from ..execute.interpreter import run_forward
    from .check import label_inputs

    labels = label_inputs(first)
    runs = []
    for k in range(1, points):
        generator = np.random.default_rng([seed, k])  # one stream a point: each input moved its own way
        moved = {name: value if name in labels else
                 value + generator.uniform(-spread, spread, np.shape(value)) * np.maximum(1.0, np.abs(value))
                 for name, value in base.items()}
        try:
            runs.append(run_forward(program, moved))
        except AutodiffError:
            continue
    return runs


def _check_values(item: ClaimLine, runs: Sequence[Any]) -> ClaimResult:
    """One matrix-form claim against reverse mode's gradient in each of ``runs`` (``TensorRun``)."""
    import numpy as np

    from ..execute.interpreter import run_forward

    if len(item.wrt) != 1:
        raise UnjudgedClaim(f"{item.label}: second derivatives of a tensor program are not checked", item.head_at,
                            item.source, hint="claim a first derivative, dL/dW")
    output, wrt = item.output, item.wrt[0]
    result = ClaimResult(item.label, item.written, item.rhs, item.where, AGREES,
                         f"(the gradient by reverse mode: autodiff eval --wrt {wrt})")
    pairs = []
    at_given = []  # whether each pair is at the given values (runs[0]) or around them
    compared = []  # the run of each pair
    for run in runs:
        if np.ndim(run.value(output)):
            raise UnjudgedClaim(f"{item.label}: '{output}' has shape {shape_text(np.shape(run.value(output)))}; "
                                "a gradient is of a number", item.head_at, item.source,
                                hint=f"claim the derivative of sum({output}) or mean({output}) by naming it")
        truth = run.gradients(output, [wrt])[wrt]
        if not np.all(np.isfinite(truth)):
            continue  # no gradient to compare with here (a scalar claim skips such points too)
        claimed: Any  # the claim's values, or why it is undefined here
        try:
            claimed = np.asarray(run_forward(item.expression, {name: run.value(name) for name in _claim_inputs(item)})
                                 .value(item.expression.result), dtype=float)
        except ShapeError as error:  # the formula cannot be computed at all
            result.verdict = WRONG
            result.slip = Slip("shape", f"your formula cannot be computed: {error.message}")
            return result
        except AutodiffError as error:  # undefined here (a division by zero, a log of a negative)
            claimed = error
        pairs.append((truth, claimed))
        at_given.append(run is runs[0])
        compared.append(run)
    if not pairs:
        result.verdict, result.reason = INCONCLUSIVE, f"{item.label} is not finite at any point tried"
        return result
    defined = [(t, c) for t, c in pairs if not isinstance(c, AutodiffError)]
    if defined and np.shape(defined[0][1]) != np.shape(defined[0][0]):
        truth, claimed = defined[0]
        result.verdict = WRONG
        transposed = np.ndim(claimed) == 2 and np.shape(claimed) == np.shape(truth)[::-1]
        detail = "your formula is transposed" if transposed else "the shapes differ"
        result.slip = Slip("transposed" if transposed else "shape",
                           f"{detail}: it has shape {shape_text(np.shape(claimed))}, and {item.label} has the shape "
                           f"of {wrt}, {shape_text(np.shape(truth))}")
        return result
    differs = [isinstance(c, AutodiffError) or not np.all(_agree(c, t)) for t, c in pairs]
    if not any(differs) and all(at_given):
        result.verdict = INCONCLUSIVE  # one point cannot tell a claim right there only
        result.reason = (f"{item.label} agrees only at the given values: no random point around them could be "
                         "compared (the program or its gradient is undefined there), and one point cannot tell "
                         "a claim right there alone from a right one")
        return result
    if not any(differs):
        result.points, result.domain = len(pairs), TENSOR_DOMAIN
        result.reason = "equal at every point tried (a tensor claim is judged by its values, not proved)"
        return result
    result.verdict = WRONG
    first = differs.index(True)
    truth, claimed = pairs[first]
    where = " at the given values" if at_given[first] else " at a random point near the given values"
    if isinstance(claimed, AutodiffError):  # undefined where the gradient is defined, as a scalar claim
        entry = f"{wrt}[{', '.join('0' * np.ndim(truth))}]" if np.ndim(truth) else wrt
        result.counterexample = Counterexample({}, None, float(np.ravel(truth)[0]), None, entry + where)
        result.slip = Slip("undefined", f"your formula is undefined{where} ({claimed.message}), where "
                                        f"{item.label} is defined")
        return result
    gap = np.abs(claimed - truth)
    worst = np.unravel_index(int(np.argmax(gap)), np.shape(gap)) if np.ndim(gap) else ()
    entry = f"{wrt}[{', '.join(map(str, worst))}]" if worst else wrt
    result.counterexample = Counterexample({}, float(claimed[worst]), float(truth[worst]),
                                           float(claimed[worst] - truth[worst]), entry + where)
    inputs = {v.name: compared[first].value(v.name) for v in compared[first].program.inputs}
    if all(np.ndim(value) == 0 for value in inputs.values()):  # a scalar program: the point itself
        result.counterexample.point = {name: float(value) for name, value in inputs.items()}
        result.counterexample.entry = None
    result.slip = _value_slip(defined, item.label)
    return result


def _claim_inputs(item: ClaimLine) -> list[str]:
    return [variable.name for variable in item.expression.inputs]


def _value_slip(pairs: Sequence[tuple[Any, Any]], label: str) -> Slip:
    """The slip that explains the claim at every point: a transposed square matrix, a claim
    that is 0 where the gradient is not, a flipped sign or another constant factor."""
    import numpy as np

    if all(np.ndim(t) == 2 and np.shape(t)[0] == np.shape(t)[1] and np.all(_agree(c, np.transpose(t)))
           for t, c in pairs):
        return Slip("transposed", f"your formula is transposed: it is the transpose of {label} (a square "
                                  "matrix, so the shapes agree)")
    if all(np.all(c == 0.0) for _, c in pairs):
        return Slip("factor", f"your formula is 0 at every point tried, but {label} is not 0 everywhere (a term, "
                            "or the upstream gradient, is missing?)")
    ratios = []
    with np.errstate(all="ignore"):
        for truth, claimed in pairs:
            usable = np.abs(truth) > 1e-9
            ratios.extend((claimed[usable] / truth[usable]).ravel().tolist())
    if len(ratios) >= 2:
        ratio = float(np.median(ratios))
        if np.all(np.abs(np.array(ratios) - ratio) <= 1e-8 * abs(ratio)) and abs(ratio - 1.0) > 1e-9:
            if abs(ratio + 1.0) < 1e-9:
                return Slip("sign", "the sign of the whole derivative is flipped")
            written = ratio_text(ratio) or f"{ratio:g}"
            return Slip("factor", f"off by a factor of {written}: your formula is {written} times {label} (a "
                                  "mean's 1/N, or the 2 of a square?)")
    return Slip("unknown", f"no known slip explains the difference; eval --wrt shows {label} entry by entry")
